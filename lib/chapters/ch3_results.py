"""Chapter 3's tables, claims and the checks of its results (`notebooks/03_finetuning_generalization.py`).

The chapter's summaries are built in the study's package: `lib.paths.finetuning_summary`
(`FinetuningSummary`), `lib.paths.generalization_summary` (`GeneralizationSummary`),
`lib.paths.length_summary` (`LengthSummary`), `lib.paths.target_kind_scores`,
`lib.paths.baseline_comparison`, `lib.paths.size_trend`. This module shows them as tables (the
tests against model-free baselines `baseline_table`, vertex 2's share `vertex_2_table`,
prediction against training frequency `frequency_table`, errors by kind of target over the
seeds `kind_spread_table`), reads them as the claims of the chapter's text, in one model
(`chapter_claims`) and over the seeds (`seed_claims`), name -> holds, and holds the chapter's
results checks (`check_results`, and `check_recorded` for the numbers and words its prose
cites), which the notebook calls before writing its results and the notebook tests find here
by the chapter's number.
"""


from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from lib.book.record import direction, verdict
from lib.book.tables import markdown_table
from lib.paths.baseline_comparison import BaselineComparison
from lib.paths.finetuning_summary import FinetuningSummary
from lib.paths.generalization_summary import GeneralizationSummary
from lib.paths.generalization_tests import TARGET_KINDS, TESTS
from lib.paths.length_frequency import FrequencyComparison, UnderPrediction
from lib.paths.length_summary import LengthSeeds, LengthSummary
from lib.paths.seed_spread import SeedSpread, position_against
from lib.paths.size_trend import SizeTrendSeeds
from lib.paths.target_kind_scores import KindContrast, kind_spread


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
        "finetuning_lowers_onpath_loss": finetuning.loss_after < finetuning.loss_before,
        "finetuning_improves_both_onpath_tests": all(t.mse_after < t.mse_before for t in on_path),
        "any_target_tests_10x_worse_than_onpath":
            min(t.mse_after for t in any_target) > 10 * max(t.mse_after for t in on_path),
        "longer_distances_10x_worse_than_training_sizes":
            length.longer_distances.mse > 10 * length.training_sizes.mse,
        "predictions_stop_within_a_hop_of_longest_training_path":
            length.top_prediction < length.split.distance_train_max + 1,
    }


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
    # Whether fine-tuning lowered the loss is an outcome of training (claims.finetuning_lowers_onpath_loss),
    # reported and not asserted; only that both losses are numbers is.
    assert all(math.isfinite(results[key]) for key in ("finetune_loss_before", "finetune_loss_after"))
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
    assert len(results["finetune_loss_before_over_seeds"]["values"]) == seeds
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


def baseline_table(comparisons: Sequence[BaselineComparison]) -> str:
    """Markdown table: the model over seeds, both baselines at both scales, and the study."""
    return markdown_table(
        ["test", "fine-tuned model, mean (min to max) over seeds", "answer d(1,2): here", "mean label: here",
         "model / d(1,2) here", "answer d(1,2): study's scale", "mean label: study's scale",
         "d(1,2), book's graphs, label 15", "the study's MSE", "study / d(1,2) at its scale"],
        [[c.title, f"{c.model.mean:.3g} ({c.model.low:.3g} to {c.model.high:.3g})", c.book.mse_distance_1_2,
          c.book.mse_mean_label, f"{c.ratio_to_baseline.low:.2f} to {c.ratio_to_baseline.high:.2f}",
          c.study.mse_distance_1_2, c.study.mse_mean_label, c.book_graphs_study_label.mse_distance_1_2,
          c.published, f"{c.study_ratio_to_baseline:.2f}"] for c in comparisons])


def vertex_2_table(finetuning_share: float, comparisons: Sequence[BaselineComparison]) -> str:
    """Markdown table: among on-path targets (vertex 2 included), the share that are vertex 2."""
    rows = [["fine-tuning data", finetuning_share, "n/a"]]
    rows += [[c.title, c.book.share_vertex_2_of_on_path, c.study.share_vertex_2_of_on_path] for c in comparisons]
    return markdown_table(["data", "share of on-path targets that are vertex 2: here",
                           "at the study's scale"], rows)


def _family_cell(models: Sequence[UnderPrediction], distance: int, field: str) -> str:
    rows = [r for m in models for r in m.rows if r.distance == distance]
    if not rows:
        return "n/a"
    values = [getattr(r, field) for r in rows]
    if field == "training_share":
        share = values[0]
        return "0 (outside)" if not rows[0].in_training_range else f"{100 * share:.2g}%"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{sum(values) / len(values):.2f} ({min(values):.2f} to {max(values):.2f})"


def frequency_table(length_models: Sequence[UnderPrediction], depth_models: Sequence[UnderPrediction]) -> str:
    """Markdown table: per true distance, each model family's training share and mean prediction
    (mean, min to max over its seeds)."""
    distances = sorted({r.distance for m in (*length_models, *depth_models) for r in m.rows})
    return markdown_table(
        ["true distance", "length study: share of training paths", "length study: mean prediction",
         "chapter 2's model: share of training paths", "chapter 2's model: mean prediction"],
        [[d, _family_cell(length_models, d, "training_share"), _family_cell(length_models, d, "mean_prediction"),
          _family_cell(depth_models, d, "training_share"), _family_cell(depth_models, d, "mean_prediction")]
         for d in distances])


def _spread_cell(spread: SeedSpread | None) -> str:
    if spread is None:
        return "n/a"
    if len(spread.values) == 1:
        return f"{spread.values[0]:.3g}"
    return f"{spread.mean:.3g} ({spread.low:.3g} to {spread.high:.3g})"


def kind_spread_table(seed_runs: Sequence[dict]) -> str:
    """Markdown table: each test's MSE by kind of target, mean (min to max) over the seeds."""
    rows = [[test.title, *(kind_spread(seed_runs, name, kind) for kind in TARGET_KINDS)]
            for name, test in TESTS.items()]
    return markdown_table(["test", *TARGET_KINDS], rows,
                          formats={column: _spread_cell for column in range(1, len(TARGET_KINDS) + 1)})


def all_seeds(count: int, total: int) -> bool:
    """Whether a count of seeds is every seed (and there is at least one)."""
    return total > 0 and count == total


def seed_claims(size_seeds: SizeTrendSeeds, contrast: KindContrast, length_seeds: LengthSeeds,
                frequency: FrequencyComparison) -> dict[str, bool]:
    """Whether each over-seeds claim of chapter 3's text holds in this run: claim -> holds.

    Recorded beside `lib.chapters.ch3_results.chapter_claims` and asserted nowhere (each is an
    outcome of training). The evidence of each is in the results JSON (`onpath_by_graph_size_over_seeds`,
    `kind_contrast_over_seeds`, `length_over_seeds`, `length_frequency`).
    """
    return {
        "onpath_finetuning_ids_over_2x_worse_on_larger_graphs_every_seed":
            all_seeds(size_seeds.seeds_not_staying_right, size_seeds.seeds),
        "onpath_10x_better_than_offpath_on_large_any_target_every_seed":
            all_seeds(contrast.seeds_far_better, contrast.seeds),
        "longer_distances_10x_worse_every_length_seed":
            all_seeds(length_seeds.seeds_longer_ten_times_worse, len(length_seeds.seeds)),
        "predictions_stop_within_a_hop_every_length_seed":
            all_seeds(length_seeds.seeds_stopping_within_a_hop, len(length_seeds.seeds)),
        "under_prediction_starts_inside_training_range_every_model":
            all_seeds(frequency.inside_range_count, len(frequency.models)),
        "one_training_share_separates_predicted_from_under_predicted":
            frequency.share_separates,
    }


__all__ = [
    "all_seeds", "baseline_table", "chapter_claims", "check_recorded", "check_results", "frequency_table",
    "kind_spread_table", "seed_claims", "vertex_2_table",
]
