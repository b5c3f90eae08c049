"""The five off-distribution tests of the shortest-paths study, at any scale (chapter 3).

After fine-tuning on on-path targets in small graphs, the study ran its model on five tasks it
was not trained on [@wang2024shortest]. Each test here is a named entry of `TESTS` that says
which graphs and which targets it draws, and carries the published MSE and the authors' 11-layer
rerun. The sizes are not fixed numbers but roles on a `Scale`:

- "small" graphs have `n_min`..`small_n_max` vertices (the fine-tuning graphs; 3..7 published),
  and a "small" target is a vertex whose id is at most `small_n_max` (the authors' cap on
  fine-tuning targets, MAX_TUNE_VTXS = 7: a vertex id, not a label);
- "large" graphs have `n_min`..`large_n_max` vertices (the pre-training graphs; 3..15
  published).

`PUBLISHED_SCALE` gives exactly the published tests. A model trained at a reduced scale (the
book's CPU defaults) is tested on the same roles at its own scale (`scale_for`), which is the
same experiment in shape but not in numbers: its MSEs must not be read against the published
ones as if they were.

`evaluate_test` draws each test's held-out graphs from its own seed, so a test's numbers depend
only on the model, the test, the number of graphs and the seed.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from lib.paths.sampler import GraphProposals, SamplerOptions, distances_from, make_options, sample_with_options
from lib.book.params import ParameterError
from lib.paths.prediction import predict
from lib.paths.training import PathTrainingConfig
from lib.paths.model import PathTransformer


@dataclasses.dataclass(frozen=True)
class Scale:
    """Graph sizes and token conventions that the tests' roles refer to.

    Attributes:
        n_min: fewest vertices of any graph.
        small_n_max: most vertices of a small graph; also the largest vertex id of a small target.
        large_n_max: most vertices of a large graph.
        max_vertex_id: the model's largest vertex id (TARGET is max_vertex_id + 1).
        unreachable_label: the label of an unreachable target, as in pre-training.
    """

    n_min: int
    small_n_max: int
    large_n_max: int
    max_vertex_id: int
    unreachable_label: int


#: The published tests: small graphs 3..7, large graphs 3..15, unreachable label 15.
PUBLISHED_SCALE = Scale(n_min=3, small_n_max=7, large_n_max=15, max_vertex_id=15, unreachable_label=15)


def scale_for(base: PathTrainingConfig, small_n_max: int) -> Scale:
    """The scale of a model pre-trained as `base` and fine-tuned on graphs up to `small_n_max`.

    Large graphs are the pre-training graphs; the vocabulary and unreachable label are the
    base model's.
    """
    sampler = base.sampler
    if not sampler.n_min <= small_n_max <= sampler.n_max:
        raise ParameterError(
            f"Parameter `small_n_max` must be between {sampler.n_min} and {sampler.n_max} (the "
            f"base model's graph sizes); got {small_n_max!r}.")
    return Scale(sampler.n_min, small_n_max, sampler.n_max, sampler.max_vertex_id,
                 sampler.unreachable_label)


@dataclasses.dataclass(frozen=True)
class GeneralizationTest:
    """One off-distribution test.

    Attributes:
        name: short identifier (used in the results JSON).
        title: the study's name for it.
        task: "onpath" or "any" (see `lib.paths.sampler`).
        graphs: "small" or "large".
        targets: "small" (vertex ids 2..small_n_max) or "all" (2..n_max of the graphs); "any"
            draws its target uniformly among them, "onpath" redraws a graph whose on-path
            target is not among them.
        published_mse: the post's MSE of its fine-tuned 6-layer model.
        authors_11_layer_mse: the authors' rerun with an 11-layer model.
        stream: a fixed number that separates this test's seed from the others'.
    """

    name: str
    title: str
    task: str
    graphs: str
    targets: str
    published_mse: float
    authors_11_layer_mse: float
    stream: int

    def n_max(self, scale: Scale) -> int:
        """Most vertices of this test's graphs at `scale` (the fewest: `scale.n_min`)."""
        return scale.small_n_max if self.graphs == "small" else scale.large_n_max

    def target_id_max(self, scale: Scale) -> int:
        """Largest vertex id of this test's targets at `scale` (the targets are ids 2..this)."""
        return scale.small_n_max if self.targets == "small" else self.n_max(scale)

    def sampler(self, scale: Scale) -> SamplerOptions:
        """The `lib.paths.sampler` options of this test at `scale`."""
        n_max = self.n_max(scale)
        common = {"target_max": self.target_id_max(scale), "max_vertex_id": scale.max_vertex_id,
                  "unreachable_label": scale.unreachable_label}
        if self.task == "onpath":
            return make_options("onpath", scale.n_min, n_max, small_graph_filter=self.graphs == "small",
                                **common)
        return make_options("any", scale.n_min, n_max, **common)


#: The five tests, in the study's order, with the post's MSEs and the 11-layer rerun's.
TESTS: dict[str, GeneralizationTest] = {test.name: test for test in [
    GeneralizationTest("onpath_small_target", "On-path small target", "onpath", "large", "small",
                       0.1020, 0.0969, stream=1),
    GeneralizationTest("onpath_target", "On-path target", "onpath", "large", "all",
                       0.1451, 0.1302, stream=2),
    GeneralizationTest("any_target_small_graphs", "Any target in small graphs", "any", "small",
                       "small", 61.44, 65.93, stream=3),
    GeneralizationTest("any_small_target_large_graphs", "Any small target in large graphs", "any",
                       "large", "small", 47.06, 52.19, stream=4),
    GeneralizationTest("any_target_large_graphs", "Any target in large graphs", "any", "large",
                       "all", 72.87, 81.48, stream=5),
]}


def held_out_generator(seed: int, test: GeneralizationTest, device: torch.device | str = "cpu") -> torch.Generator:
    """The held-out data generator of `test` for `seed` (independent of every other stream)."""
    return torch.Generator(device=device).manual_seed(seed * 1_000_033 + 104_729 * test.stream + 17)


def sample_test(test: GeneralizationTest, scale: Scale, n_graphs: int, seed: int,
                device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """The held-out graphs of `test`: tokens (n_graphs, n_max + 1, 2) and labels (n_graphs,)."""
    generator = held_out_generator(seed, test, device)
    return sample_with_options(n_graphs, test.sampler(scale), generator)


#: Kinds of target, by where the target sits relative to vertices 1 and 2 (`target_kinds`).
TARGET_KINDS = ("vertex 2", "on a shortest 1-2 path", "reachable, off the path", "unreachable")


def _graphs_of(tokens: torch.Tensor) -> tuple[GraphProposals, torch.Tensor]:
    """The edges of each example as `GraphProposals`, and the target ids.

    The search needs at least as many edge slots as the largest id (edge or target), so the
    slots are padded up to it.
    """
    edges, target = tokens[:, :-1], tokens[:, -1, 0]
    width = max(edges.shape[1], int(tokens[:, :, 0].max()), int(edges.max()) if edges.numel() else 1)
    padded = torch.zeros(len(tokens), width, 2, dtype=torch.int32, device=tokens.device)
    padded[:, : edges.shape[1]] = edges.to(torch.int32)
    graphs = GraphProposals(torch.full((len(tokens),), width, device=tokens.device),
                            padded[..., 0].contiguous(), padded[..., 1].contiguous())
    return graphs, target


def target_kinds(tokens: torch.Tensor) -> torch.Tensor:
    """Where each example's target sits: an index into `TARGET_KINDS` per example.

    0: the target is vertex 2 (the pre-training target); 1: another vertex on a shortest 1-2
    path (the fine-tuning targets); 2: reachable from 1 but on no shortest 1-2 path;
    3: unreachable from 1 (or not a vertex of the graph). Distances come from the same
    vectorized search as the sampler, run on the edges read back from the tokens.
    """
    graphs, target = _graphs_of(tokens)
    from_1, from_2 = distances_from(graphs, 1), distances_from(graphs, 2)
    d_target = from_1.gather(1, target.unsqueeze(1)).squeeze(1)
    d_target_2 = from_2.gather(1, target.unsqueeze(1)).squeeze(1)
    d_12 = from_1[:, 2]
    on_path = (d_12 >= 0) & (d_target >= 0) & (d_target_2 >= 0) & (d_target + d_target_2 == d_12)
    kinds = torch.full_like(d_target, 2)
    kinds[on_path] = 1
    kinds[target == 2] = 0
    kinds[d_target < 0] = 3
    return kinds


def distance_1_to_2(tokens: torch.Tensor, unreachable_label: int) -> torch.Tensor:
    """The pre-training label of each example's graph: the 1-2 distance, whatever the target.

    Comparing a model's answers with it shows when the model answers the old question
    (distance to vertex 2) instead of the one asked.
    """
    graphs, _ = _graphs_of(tokens)
    d_12 = distances_from(graphs, 1)[:, 2]
    return torch.where(d_12 < 0, unreachable_label, d_12)


@dataclasses.dataclass
class GeneralizationResult:
    """A model's score on one test.

    Attributes:
        test: the test.
        mse: mean squared error of the prediction.
        accuracy: share of examples whose rounded prediction equals the label.
        mse_reachable, mse_unreachable: the MSE restricted to reachable / unreachable targets
            (NaN when there are none).
        share_unreachable: share of examples whose target is unreachable.
        by_kind: `by_target_kind` of the examples.
        predictions, labels: the raw numbers (for the confusion histogram).
        targets: the target vertex id of each example.
    """

    test: GeneralizationTest
    mse: float
    accuracy: float
    mse_reachable: float
    mse_unreachable: float
    share_unreachable: float
    by_kind: dict[str, dict[str, float]]
    predictions: torch.Tensor
    labels: torch.Tensor
    targets: torch.Tensor

    @property
    def squared_errors(self) -> torch.Tensor:
        """(B,) float64 squared error of each prediction."""
        return (self.predictions.double() - self.labels.double()) ** 2

    def record(self) -> dict:
        """The JSON record of the chapter's results (no tensors)."""
        return {"test": self.test.name, "title": self.test.title, "mse": self.mse,
                "accuracy": self.accuracy, "mse_reachable": self.mse_reachable,
                "mse_unreachable": self.mse_unreachable, "share_unreachable": self.share_unreachable,
                "by_target_kind": self.by_kind,
                "published_mse": self.test.published_mse,
                "authors_11_layer_mse": self.test.authors_11_layer_mse}


def _mean(values: torch.Tensor) -> float:
    return float(values.mean()) if len(values) else math.nan


def by_target_kind(predictions: torch.Tensor, labels: torch.Tensor, kinds: torch.Tensor,
                   distance_12: torch.Tensor) -> dict[str, dict]:
    """Per kind of target present: count, MSE, accuracy, mean label and mean prediction, and
    `answers_1_2_distance`, the share of rounded predictions equal to the 1-2 distance.

    Args:
        predictions, labels: (B,) model outputs and true distances.
        kinds: (B,) indices into `TARGET_KINDS` (from `target_kinds`).
        distance_12: (B,) the 1-2 distance of each graph (from `distance_1_to_2`).
    """
    predictions, labels = predictions.detach().double().cpu(), labels.double().cpu()
    kinds, distance_12 = kinds.cpu(), distance_12.double().cpu()
    squared = (predictions - labels) ** 2
    correct = (predictions.round() == labels).double()
    old_answer = (predictions.round() == distance_12).double()
    summary = {}
    for index, name in enumerate(TARGET_KINDS):
        chosen = kinds == index
        if bool(chosen.any()):
            summary[name] = {"count": int(chosen.sum()), "mse": _mean(squared[chosen]),
                             "accuracy": _mean(correct[chosen]), "mean_label": _mean(labels[chosen]),
                             "mean_prediction": _mean(predictions[chosen]),
                             "answers_1_2_distance": _mean(old_answer[chosen])}
    return summary


def score(test: GeneralizationTest, predictions: torch.Tensor, labels: torch.Tensor,
          unreachable_label: int, kinds: torch.Tensor, distance_12: torch.Tensor,
          targets: torch.Tensor) -> GeneralizationResult:
    """MSE and accuracy of predictions against labels, overall and split by target kind.

    Args:
        kinds, distance_12: the `target_kinds` and `distance_1_to_2` of the examples.
        targets: the examples' target vertex ids.
    """
    predictions, labels = predictions.detach().double().cpu(), labels.double().cpu()
    squared = (predictions - labels) ** 2
    unreachable = labels == unreachable_label
    return GeneralizationResult(
        test, _mean(squared), _mean((predictions.round() == labels).double()), _mean(squared[~unreachable]),
        _mean(squared[unreachable]), float(unreachable.double().mean()),
        by_target_kind(predictions, labels, kinds, distance_12), predictions.float(), labels.float(),
        targets.cpu())


def evaluate_test(model: PathTransformer, test: GeneralizationTest | str, scale: Scale, n_graphs: int,
                  seed: int) -> GeneralizationResult:
    """Score `model` on `n_graphs` held-out graphs of `test`, drawn from `seed`.

    Deterministic: the graphs depend only on (test, scale, n_graphs, seed) and the model is
    run in eval mode without gradients.
    """
    test = TESTS[test] if isinstance(test, str) else test
    device = next(model.parameters()).device
    tokens, labels = sample_test(test, scale, n_graphs, seed, device)
    return score(test, predict(model, tokens), labels, scale.unreachable_label, target_kinds(tokens),
                 distance_1_to_2(tokens, scale.unreachable_label), tokens[:, -1, 0])


def evaluate_all(model: PathTransformer, scale: Scale, n_graphs: int, seed: int) -> list[GeneralizationResult]:
    """`evaluate_test` for every test of `TESTS`, in order."""
    return [evaluate_test(model, test, scale, n_graphs, seed) for test in TESTS.values()]


__all__ = [
    "GeneralizationResult", "GeneralizationTest", "PUBLISHED_SCALE", "Scale", "TARGET_KINDS", "TESTS",
    "by_target_kind", "distance_1_to_2", "evaluate_all", "evaluate_test", "held_out_generator", "sample_test", "scale_for",
    "score", "target_kinds",
]
