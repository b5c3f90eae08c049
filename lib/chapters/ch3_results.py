"""Chapter 3's results as typed objects: what the prose of the chapter reads (chapter 3).

Each part of the chapter ends in one frozen summary built from the run's outputs:

* `FinetuningSummary` (`summarize_finetuning`, `summarize_finetuning_run`): the held-out
  on-path loss before and after fine-tuning, the pre-training task's loss, AdamW's weight
  shrink, and the errors by kind of target before and after.
* `GeneralizationSummary` (`summarize_generalization`): the five tests before and after
  fine-tuning, one named field per test, with their errors by kind of target and the verdicts
  the text states.
* `LengthSummary` (`lib.chapters.ch3_length`): the length-generalization study.

A kind of target that did not occur among a test's graphs is a `KindScore` with count 0 and NaN
for every mean (`KindScore.absent`); a length-study group without cells is a `GroupScore` with
count 0 and NaN MSE and accuracy. NaN reads "n/a" in the prose (`lib.book.record`) and in tables.
Every builder is deterministic and draws no random numbers: the chapter's draws all happen
before, in the notebook's calls to the samplers and training code.

The module runs over 400 lines because it also holds the chapter's results checks
(`check_results`, and `check_recorded` for the numbers and words its prose cites), which the
notebook calls before writing its results and the notebook tests find here by the chapter's number;
the newer summaries (baselines, seeds, graph sizes) live in `lib.chapters.ch3_baselines`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import torch

from lib.paths.finetuning import PUBLISHED_FINETUNING, loss_on, weight_shrink_factor
from lib.paths.generalization_tests import (
    TARGET_KINDS, TESTS, GeneralizationResult, GeneralizationTest, Scale, by_target_kind, distance_1_to_2,
    target_kinds,
)
from lib.book.record import direction, verdict
from lib.paths.model import PathTransformer
from lib.paths.training import TrainingRun

from lib.chapters.ch3_baselines import SeedSpread, position_against
from lib.chapters.ch3_length import LengthSummary


def share_with_target(tokens: torch.Tensor, vertex: int) -> float:
    """Share of examples whose target token is `vertex` (chapter 3: how often vertex 2 is the
    fine-tuning target)."""
    return float((tokens[:, -1, 0] == vertex).float().mean())


# --- Errors by kind of target ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class KindScore:
    """A model's errors on the examples whose target is of one kind (see `TARGET_KINDS`).

    Attributes:
        count: number of such examples; 0 when the kind did not occur (then every other field
            is NaN).
        mse: mean squared error of the prediction.
        accuracy: share of rounded predictions equal to the label.
        mean_label, mean_prediction: means of the true and predicted distances.
        answers_1_2_distance: share of rounded predictions equal to the graph's 1-2 distance
            (the pre-training answer).
    """

    count: int
    mse: float
    accuracy: float
    mean_label: float
    mean_prediction: float
    answers_1_2_distance: float

    @classmethod
    def absent(cls) -> KindScore:
        """The score of a kind that did not occur: count 0, every mean NaN."""
        return cls(0, math.nan, math.nan, math.nan, math.nan, math.nan)

    @property
    def present(self) -> bool:
        return self.count > 0


#: Field of `TargetKindScores` for each name of `TARGET_KINDS`, in that order.
KIND_FIELDS = dict(zip(TARGET_KINDS, ("vertex_2", "on_path", "off_path", "unreachable"), strict=True))


@dataclasses.dataclass(frozen=True)
class TargetKindScores:
    """`KindScore` of each kind of target, for one model on one set of graphs.

    Attributes:
        vertex_2: the target is vertex 2 (the pre-training target).
        on_path: another vertex on a shortest 1-2 path (the fine-tuning targets).
        off_path: reachable from vertex 1 but on no shortest 1-2 path.
        unreachable: no path from vertex 1 (or not a vertex of the graph).
    """

    vertex_2: KindScore
    on_path: KindScore
    off_path: KindScore
    unreachable: KindScore

    @classmethod
    def from_by_kind(cls, by_kind: Mapping[str, Mapping[str, float]]) -> TargetKindScores:
        """From `lib.paths.generalization_tests.by_target_kind`'s dict; missing kinds are absent."""
        return cls(**{field: KindScore(**by_kind[name]) if name in by_kind else KindScore.absent()
                      for name, field in KIND_FIELDS.items()})

    def in_order(self) -> tuple[KindScore, ...]:
        """The four scores in the order of `TARGET_KINDS`."""
        return tuple(getattr(self, field) for field in KIND_FIELDS.values())

    def record(self) -> dict[str, dict[str, float]]:
        """The results-JSON form: `by_target_kind`'s dict, the kinds that occurred only."""
        return {name: dataclasses.asdict(score)
                for name, score in zip(TARGET_KINDS, self.in_order()) if score.present}


def _mse(predictions: torch.Tensor, labels: torch.Tensor) -> float:
    # The same operations as `lib.paths.finetuning.held_out_loss`, so the numbers are identical.
    return float(((predictions.double() - labels.cpu().double()) ** 2).mean())


def _mean_or_nan(values: torch.Tensor) -> float:
    return float(values.mean()) if len(values) else math.nan


# --- Fine-tuning ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class FinetuningSummary:
    """What fine-tuning did, on the held-out on-path graphs and on the pre-training task.

    Attributes:
        steps: fine-tuning steps taken.
        loss_before, loss_after: held-out on-path MSE of the pre-trained and fine-tuned model.
        published_loss_before, published_loss_after: the post's values (at its own scale).
        pretrain_task_loss_before, pretrain_task_loss_after: MSE on the pre-training task
            (target 2, the base model's graphs) before and after fine-tuning.
        weight_shrink: factor by which AdamW's decay alone scales every weight over this run.
        published_weight_shrink: the same at the post's stated settings.
        kinds_before, kinds_after: the held-out errors by kind of target.
    """

    steps: int
    loss_before: float
    loss_after: float
    published_loss_before: float
    published_loss_after: float
    pretrain_task_loss_before: float
    pretrain_task_loss_after: float
    weight_shrink: float
    published_weight_shrink: float
    kinds_before: TargetKindScores
    kinds_after: TargetKindScores

    def record(self) -> dict:
        """The fine-tuning entries of chapter 3's results JSON."""
        return {
            "finetune_loss_before": self.loss_before,
            "finetune_loss_after": self.loss_after,
            "published_finetune_loss_before": self.published_loss_before,
            "published_finetune_loss_after": self.published_loss_after,
            "finetune_by_target_kind_before": self.kinds_before.record(),
            "finetune_by_target_kind": self.kinds_after.record(),
            "pretrain_task_loss_before_finetune": self.pretrain_task_loss_before,
            "pretrain_task_loss_after_finetune": self.pretrain_task_loss_after,
        }


def summarize_finetuning(*, labels: torch.Tensor, predictions_before: torch.Tensor,
                         predictions_after: torch.Tensor, kinds: torch.Tensor, distance_12: torch.Tensor,
                         steps: int, pretrain_task_loss_before: float, pretrain_task_loss_after: float,
                         learning_rate: float, weight_decay: float) -> FinetuningSummary:
    """The `FinetuningSummary` of held-out predictions before and after fine-tuning (chapter 3).

    Args:
        labels: (B,) true distances of the held-out on-path examples.
        predictions_before, predictions_after: (B,) predictions of the two models on them.
        kinds, distance_12: `target_kinds` and `distance_1_to_2` of the examples.
        steps, learning_rate, weight_decay: the fine-tuning run's AdamW settings.
        pretrain_task_loss_before, pretrain_task_loss_after: the two models' MSE on the
            pre-training task (measured by the caller on the same graphs).
    """
    return FinetuningSummary(
        steps=steps,
        loss_before=_mse(predictions_before, labels),
        loss_after=_mse(predictions_after, labels),
        published_loss_before=PUBLISHED_FINETUNING["loss_before"],
        published_loss_after=PUBLISHED_FINETUNING["loss_after"],
        pretrain_task_loss_before=pretrain_task_loss_before,
        pretrain_task_loss_after=pretrain_task_loss_after,
        weight_shrink=weight_shrink_factor(learning_rate, weight_decay, steps),
        published_weight_shrink=weight_shrink_factor(PUBLISHED_FINETUNING["learning_rate"],
                                                     PUBLISHED_FINETUNING["weight_decay"],
                                                     PUBLISHED_FINETUNING["steps"]),
        kinds_before=TargetKindScores.from_by_kind(
            by_target_kind(predictions_before, labels, kinds, distance_12)),
        kinds_after=TargetKindScores.from_by_kind(
            by_target_kind(predictions_after, labels, kinds, distance_12)),
    )


def summarize_finetuning_run(run: TrainingRun, base_model: PathTransformer, pretrain_tokens: torch.Tensor,
                             pretrain_labels: torch.Tensor, *, unreachable_label: int,
                             learning_rate: float, weight_decay: float) -> FinetuningSummary:
    """`summarize_finetuning` of a finished fine-tuning run (chapter 3).

    The run's first and last snapshots are the predictions before and after fine-tuning on its
    held-out batch; the pre-training task's loss is measured on `pretrain_tokens` with the base
    model and the fine-tuned one.
    """
    return summarize_finetuning(
        labels=run.eval_labels, predictions_before=run.snapshot_predictions[0],
        predictions_after=run.snapshot_predictions[-1], kinds=target_kinds(run.eval_tokens),
        distance_12=distance_1_to_2(run.eval_tokens, unreachable_label), steps=run.step,
        pretrain_task_loss_before=loss_on(base_model, pretrain_tokens, pretrain_labels),
        pretrain_task_loss_after=loss_on(run.model, pretrain_tokens, pretrain_labels),
        learning_rate=learning_rate, weight_decay=weight_decay)


# --- The five generalization tests -------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TestComparison:
    """One generalization test, scored on the pre-trained and on the fine-tuned model.

    Attributes:
        test: the test.
        scale: the run's scale, at which the test drew its graphs (`n_min`..`n_max`) and its
            targets (ids 2..`target_id_max`).
        before, after: the two models' raw scores (with predictions, for the figures).
        kinds_before, kinds_after: their errors by kind of target.
    """

    __test__ = False  # not a pytest test class, despite its name

    test: GeneralizationTest
    scale: Scale
    before: GeneralizationResult
    after: GeneralizationResult
    kinds_before: TargetKindScores
    kinds_after: TargetKindScores

    @property
    def mse_before(self) -> float:
        return self.before.mse

    @property
    def mse_after(self) -> float:
        return self.after.mse

    @property
    def accuracy_before(self) -> float:
        return self.before.accuracy

    @property
    def accuracy_after(self) -> float:
        return self.after.accuracy

    @property
    def n_max(self) -> int:
        """Most vertices of the test's graphs (the fewest: `scale.n_min`)."""
        return self.test.n_max(self.scale)

    @property
    def target_id_max(self) -> int:
        """Largest vertex id of the test's targets (ids 2..this)."""
        return self.test.target_id_max(self.scale)

    @property
    def share_unreachable(self) -> float:
        """Share of the test's graphs whose target is unreachable."""
        return self.after.share_unreachable

    def record(self) -> dict:
        """The test's entry in chapter 3's results JSON: the fine-tuned score and the pre-trained MSE."""
        return {**self.after.record(), "n_min": self.scale.n_min, "n_max": self.n_max,
                "target_id_max": self.target_id_max,
                "mse_pretrained": self.before.mse, "accuracy_pretrained": self.before.accuracy}


@dataclasses.dataclass(frozen=True)
class MseGap:
    """One test's MSE minus another's, with a 95% interval.

    The two tests draw independent graphs, so the standard error of the difference is
    sqrt(var_a / n_a + var_b / n_b), var the variance of a test's squared errors (normal
    approximation to the difference of two means).
    """

    difference: float
    low: float
    high: float

    @classmethod
    def between(cls, higher: GeneralizationResult, lower: GeneralizationResult) -> MseGap:
        """MSE of `higher` minus MSE of `lower`."""
        a, b = higher.squared_errors, lower.squared_errors
        difference = float(a.mean() - b.mean())
        error = math.sqrt(float(a.var()) / len(a) + float(b.var()) / len(b))
        return cls(difference, difference - 1.96 * error, difference + 1.96 * error)

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


@dataclasses.dataclass(frozen=True)
class TargetIdSplit:
    """A test's examples split by the target's vertex id: up to `id_max` or above.

    Attributes:
        id_max: the largest id of a "small" target (the cap of fine-tuning targets).
        count_small, mse_small: examples with target id <= id_max, and their MSE.
        count_large, mse_large: the others (NaN MSE when there are none).
    """

    id_max: int
    count_small: int
    mse_small: float
    count_large: int
    mse_large: float

    @classmethod
    def of(cls, result: GeneralizationResult, id_max: int) -> TargetIdSplit:
        squared, small = result.squared_errors, result.targets <= id_max
        return cls(id_max, int(small.sum()), _mean_or_nan(squared[small]), int((~small).sum()),
                   _mean_or_nan(squared[~small]))


@dataclasses.dataclass(frozen=True)
class GeneralizationSummary:
    """The five tests before and after fine-tuning, and what the chapter's text concludes.

    Attributes:
        onpath_small_target, onpath_target, any_target_small_graphs,
        any_small_target_large_graphs, any_target_large_graphs: the five tests of `TESTS`.
        on_path_small_graphs: the fine-tuned model on on-path targets other than vertex 2 in the
            small fine-tuning graphs (`FinetuningSummary.kinds_after.on_path`), beside which
            `onpath_target.kinds_after.on_path` is the same on large graphs.
        on_path_loss_grows: the on-path MSE (vertex 2 excluded) is higher on large graphs than
            on the small fine-tuning graphs; False when it is not or either was not measured.
        onpath_gap: MSE of the on-path test with any target minus that of the test with small
            target ids, with a 95% interval (the post: 0.1451 - 0.1020).
        onpath_target_ids: the on-path test with any target, split by whether the target's
            vertex id is small (a fine-tuning target id) or not.
        any_target_large_mse_rose: fine-tuning raised the MSE of "any target in large graphs".
    """

    onpath_small_target: TestComparison
    onpath_target: TestComparison
    any_target_small_graphs: TestComparison
    any_small_target_large_graphs: TestComparison
    any_target_large_graphs: TestComparison
    on_path_small_graphs: KindScore
    on_path_loss_grows: bool
    onpath_gap: MseGap
    onpath_target_ids: TargetIdSplit
    any_target_large_mse_rose: bool

    @property
    def tests(self) -> tuple[TestComparison, ...]:
        """The five tests in the order of `TESTS`."""
        return tuple(getattr(self, name) for name in TESTS)

    def record(self) -> list[dict]:
        """The "generalization" entry of chapter 3's results JSON."""
        return [test.record() for test in self.tests]


def summarize_generalization(before: Sequence[GeneralizationResult], after: Sequence[GeneralizationResult],
                             scale: Scale, *, on_path_small_graphs: KindScore) -> GeneralizationSummary:
    """The `GeneralizationSummary` of the five tests' scores (chapter 3).

    Args:
        before, after: the pre-trained and fine-tuned model's results, in the order of `TESTS`.
        scale: the run's scale (the tests' graph sizes and target ids, and the small-target bound).
        on_path_small_graphs: the fine-tuned model's on-path score on the fine-tuning graphs.

    Raises:
        ValueError: if `before` or `after` is not one result per test in the order of `TESTS`.
    """
    for results in (before, after):
        if [r.test.name for r in results] != list(TESTS):
            raise ValueError(f"Expected one result per test in the order {list(TESTS)}; "
                             f"got {[r.test.name for r in results]}.")
    tests = {b.test.name: TestComparison(
        b.test, scale, b, a, TargetKindScores.from_by_kind(b.by_kind),
        TargetKindScores.from_by_kind(a.by_kind)) for b, a in zip(before, after)}
    on_path_large = tests["onpath_target"].kinds_after.on_path
    return GeneralizationSummary(
        **tests,
        on_path_small_graphs=on_path_small_graphs,
        on_path_loss_grows=bool(on_path_large.mse > on_path_small_graphs.mse),  # False if either is NaN
        onpath_gap=MseGap.between(tests["onpath_target"].after, tests["onpath_small_target"].after),
        onpath_target_ids=TargetIdSplit.of(tests["onpath_target"].after, scale.small_n_max),
        any_target_large_mse_rose=(tests["any_target_large_graphs"].mse_after
                                   > tests["any_target_large_graphs"].mse_before),
    )


# --- Length generalization ---------------------------------------------------------------------

def chapter_claims(finetuning: FinetuningSummary, generalization: GeneralizationSummary,
                   length: LengthSummary) -> dict[str, bool]:
    """Whether each claim of chapter 3's text holds in this run: claim -> holds. Chapter 3 records
    and prints these and asserts none of them: each is an outcome of training, which can change
    with the CPU and the seed (and a smoke run is too short for most of them).

    The claims: fine-tuning lowers the held-out on-path loss and improves both on-path tests,
    every any-target test stays more than 10 times worse than both on-path tests, distances
    longer than any training path are more than 10 times worse than the training sizes, and no
    cell's mean prediction reaches a hop past the longest training path.
    """
    on_path = (generalization.onpath_small_target, generalization.onpath_target)
    any_target = generalization.tests[2:]
    return {
        "fine-tuning lowers the on-path loss": finetuning.loss_after < finetuning.loss_before,
        "fine-tuning improves both on-path tests": all(t.mse_after < t.mse_before for t in on_path),
        "any-target tests are more than 10 times worse than on-path ones":
            min(t.mse_after for t in any_target) > 10 * max(t.mse_after for t in on_path),
        "longer distances are more than 10 times worse than the training sizes":
            length.longer_distances.mse > 10 * length.training_sizes.mse,
        "predictions stop within a hop of the longest training path":
            length.top_prediction < length.split.distance_train_max + 1,
    }


__all__ = [
    "FinetuningSummary", "GeneralizationSummary", "KindScore", "MseGap",
    "TargetIdSplit", "TargetKindScores", "TestComparison", "chapter_claims", "check_recorded", "check_results",
    "share_with_target", "summarize_finetuning", "summarize_finetuning_run", "summarize_generalization",
]


# --- What the notebook and its tests check (tests/test_notebooks.py finds these by chapter number) ---

#: The kind of target whose scores the chapter reads on and off the fine-tuning graphs.
ON_PATH = TARGET_KINDS[1]


def _same(recorded: float | None, value: float | None) -> bool:
    """A recorded number equals the result it was recorded from (NaN and None, JSON's NaN, alike)."""
    missing = [v is None or (isinstance(v, float) and math.isnan(v)) for v in (recorded, value)]
    if any(missing):
        return all(missing)
    return math.isclose(recorded, value, rel_tol=1e-12, abs_tol=0.0)


def _kind_mse(by_kind: Mapping[str, Mapping[str, float]], kind: str = ON_PATH) -> float:
    """The MSE of one kind of target in a results-JSON `by_target_kind` (NaN when it did not occur)."""
    mse = by_kind.get(kind, {}).get("mse")
    return math.nan if mse is None else mse


def check_recorded(results: dict) -> None:
    """Assert that the numbers chapter 3's prose cites (`results["recorded"]`, `lib.book.record`)
    are the results they were recorded from, and that each word a rule chose agrees with them."""
    recorded = {key: entry["value"] for key, entry in results["recorded"].items()}
    assert all(entry.keys() == {"value", "format", "text"} for entry in results["recorded"].values())
    assert _same(recorded["finetune.loss_before"], results["finetune_loss_before"])
    assert _same(recorded["finetune.loss_after"], results["finetune_loss_after"])
    assert recorded["summary.finetune_effect"] == direction(
        results["finetune_loss_after"], results["finetune_loss_before"], above="raises", below="lowers",
        equal="does not change")
    assert recorded["base_model.origin"].startswith("Loaded") == (results["base_model"]["source"] == "checkpoint")
    for key in ("n_min", "small_n_max", "large_n_max", "unreachable_label"):
        assert recorded[f"scale.{key}"] == results["scale"][key]
        assert recorded[f"published_scale.{key}"] == results["published_scale"][key]
    # Each test's MSE over the seeds, and where the seeds lie against the study's MSE.
    for test in results["generalization"]:
        name, spread = test["test"], results["test_mse_over_seeds"][test["test"]]
        assert _same(recorded[f"tests.{name}.mse_after"], test["mse"])
        assert _same(recorded[f"seeds.{name}.mse.mean"], spread["mean"])
        assert recorded[f"seeds.{name}.mse.n"] == len(spread["values"]) == len(results["seed_runs"])
        position = position_against(SeedSpread(tuple(spread["values"])), test["published_mse"])
        assert recorded[f"seeds.{name}.side"] == verdict(position, yes="above", no="below",
                                                         undefined="on both sides of")
    first, any_large = results["generalization"][1], results["generalization"][-1]
    assert recorded["read.loss_grows"] == verdict(
        _kind_mse(first["by_target_kind"]) > _kind_mse(results["finetune_by_target_kind"]),
        yes="grows", no="does not grow")
    assert recorded["read.any_target_large_graphs.rose"] == verdict(any_large["mse"] > any_large["mse_pretrained"],
                                                                    yes="higher", no="lower")
    on_path, small_ids = (results["test_mse_over_seeds"][name]["values"] for name in ("onpath_target",
                                                                                      "onpath_small_target"))
    assert recorded["read.onpath_order.higher"] == sum(a > b for a, b in zip(on_path, small_ids))
    assert recorded["read.onpath_order.seeds"] == len(on_path)
    # The per-size check and the baselines.
    sizes = results["onpath_by_graph_size"]
    assert _same(recorded["sizes.mse_small"], sizes["mse_small"])
    assert _same(recorded["sizes.mse_large_small_ids"], sizes["mse_large_small_ids"])
    assert recorded["size_seeds.not_staying_right"] == results["onpath_by_graph_size_over_seeds"][
        "seeds_not_staying_right"]
    any_tests = [c for c in results["baseline_comparison"] if c["test"].startswith("any")]
    assert recorded["base.any_accounted"] == sum(c["scale_accounts"] for c in any_tests)
    for c in results["baseline_comparison"]:
        assert _same(recorded[f"base.{c['test']}.ratio.min"], c["ratio_to_baseline"]["min"])
        assert _same(recorded[f"base.{c['test']}.ratio.max"], c["ratio_to_baseline"]["max"])
    # The length study over its seeds, and which explanation of the levelling off the runs favour.
    length_seeds = results["length_over_seeds"]
    assert recorded["length_seeds.seeds"] == len(length_seeds["seeds"])
    assert _same(recorded["length_seeds.longer_distances_mse.mean"], length_seeds["longer_distances_mse"]["mean"])
    frequency = results["length_frequency"]
    assert recorded["freq.models"] == len(frequency["models"])
    assert recorded["summary.favours_over"] == {"rare data": "over the data stopping", "data stopped": "over rare data",
                                                "mixed": ""}[frequency["supports"]]


def check_results(results: dict) -> None:
    """Assert what chapter 3's results JSON must satisfy (the notebook calls it before writing its
    results, and the notebook tests on what it wrote)."""
    assert results["finetune_loss_after"] < results["finetune_loss_before"]
    assert len(results["generalization"]) == 5
    assert all({"test", "mse", "accuracy", "published_mse", "n_min", "n_max", "target_id_max"} <= r.keys()
               for r in results["generalization"])
    assert all({"n_vertices", "distance", "mse"} <= r.keys() for r in results["length_generalization"])
    # Both baselines at the book's scale and at the study's, for every test.
    for scale in ("book", "study", "book_graphs_study_label"):
        scores = results["baselines"][scale]
        assert [b["test"] for b in scores] == [r["test"] for r in results["generalization"]]
        assert all({"mse_distance_1_2", "mse_mean_label", "share_vertex_2_of_on_path"} <= b.keys() for b in scores)
    assert results["published_scale"]["unreachable_label"] == 15
    # Every test's MSE over the seeds, with its spread; the first seed is the run's own model.
    seeds = len(results["seed_runs"])
    assert seeds >= 1 and len(results["test_mse_over_seeds"]) == 5
    for name, spread in results["test_mse_over_seeds"].items():
        assert len(spread["values"]) == seeds and spread["min"] <= spread["mean"] <= spread["max"]
    assert len(results["finetune_loss_over_seeds"]["values"]) == seeds
    first = {r["test"]: r["mse"] for r in results["generalization"]}
    assert all(results["seed_runs"][0]["test_mse"][name] == mse for name, mse in first.items())
    assert 0.0 <= results["vertex_2_share_of_on_path"]["finetuning"] <= 1.0
    assert results["onpath_by_graph_size"]["rows"]
    # The per-size check split by target id, in every seed.
    assert all({"small_id", "large_id"} <= row.keys() for row in results["onpath_by_graph_size"]["rows"])
    assert len(results["onpath_by_graph_size_over_seeds"]["per_seed"]) == seeds
    assert all("test_by_kind" in run and "analysis" in run for run in results["seed_runs"])
    # Prediction against training frequency: one entry per model (length-study seeds, then chapter 2's seeds).
    length_seeds = len(results["length_over_seeds"]["seeds"])
    assert len(results["length_frequency"]["models"]) == length_seeds + seeds
    assert results["length_frequency"]["supports"] in ("rare data", "data stopped", "mixed")
    assert all(isinstance(holds, bool) for holds in results["claims"].values())
    check_recorded(results)
