"""Model-free baselines of the five generalization tests, at any scale (chapter 3).

Two predictors that need no model, scored on the same held-out graphs as a model
(`lib.paths.generalization_tests.sample_test`):

* "distance 1-2": answer the distance from vertex 1 to vertex 2 (the pre-training label, with
  the unreachable label where 2 cannot be reached), whatever the target. A model that ignores
  the target token and answers its pre-training question scores exactly this.
* "mean label": the test's own mean label, a constant; its MSE is the variance of the labels,
  the lowest MSE any constant can reach.

Both depend only on the graphs, so they can be computed at the study's scale (graphs of up to
15 vertices, unreachable label 15) on a CPU in seconds, beside the book's reduced scale: the
ratio of a test's MSE to its baseline's is the number that compares across the two scales.
`onpath_by_graph_size` scores a model on on-path targets other than vertex 2, one graph size at
a time, to see whether the fine-tuned answer stays right as graphs grow.
"""

from __future__ import annotations

import dataclasses

import torch

from lib.paths.generalization_tests import (
    TESTS, GeneralizationTest, Scale, distance_1_to_2, held_out_generator, sample_test, target_kinds,
)
from lib.paths.model import PathTransformer
from lib.paths.sampler import make_options, sample_with_options
from lib.paths.prediction import predict

#: The two baselines, by name.
BASELINES = ("distance 1-2", "mean label")


@dataclasses.dataclass(frozen=True)
class BaselineScore:
    """The two baselines on one test at one scale.

    Attributes:
        test: the test's name.
        n_graphs: held-out graphs scored.
        mse_distance_1_2: MSE of answering the 1-2 distance whatever the target.
        mse_mean_label: MSE of the test's mean label (the labels' variance).
        mean_label: that mean.
        share_unreachable: share of targets that are unreachable.
        share_vertex_2: share of targets that are vertex 2.
        share_vertex_2_of_on_path: among targets on a shortest 1-2 path (vertex 2 included),
            the share that are vertex 2 (NaN when there are none).
    """

    test: str
    n_graphs: int
    mse_distance_1_2: float
    mse_mean_label: float
    mean_label: float
    share_unreachable: float
    share_vertex_2: float
    share_vertex_2_of_on_path: float


def vertex_2_share_of_on_path(kinds: torch.Tensor) -> float:
    """Among examples whose target is on a shortest 1-2 path (kinds 0 and 1 of `target_kinds`),
    the share whose target is vertex 2 itself; NaN when there are none."""
    on_path = (kinds == 0) | (kinds == 1)
    return float((kinds[on_path] == 0).double().mean()) if bool(on_path.any()) else float("nan")


def score_baselines(tokens: torch.Tensor, labels: torch.Tensor, unreachable_label: int, test: str) -> BaselineScore:
    """Both baselines on given held-out examples (tokens as the sampler writes them)."""
    labels = labels.double().cpu()
    answer = distance_1_to_2(tokens, unreachable_label).double().cpu()
    kinds = target_kinds(tokens).cpu()
    return BaselineScore(
        test=test, n_graphs=len(labels),
        mse_distance_1_2=float(((answer - labels) ** 2).mean()),
        mse_mean_label=float(((labels - labels.mean()) ** 2).mean()),
        mean_label=float(labels.mean()),
        share_unreachable=float((labels == unreachable_label).double().mean()),
        share_vertex_2=float((kinds == 0).double().mean()),
        share_vertex_2_of_on_path=vertex_2_share_of_on_path(kinds))


def test_baselines(scale: Scale, n_graphs: int, seed: int, device: torch.device | str = "cpu") -> list[BaselineScore]:
    """Both baselines on every test of `TESTS` at `scale`, on the tests' own held-out graphs."""
    scores = []
    for test in TESTS.values():
        tokens, labels = sample_test(test, scale, n_graphs, seed, device)
        scores.append(score_baselines(tokens, labels, scale.unreachable_label, test.name))
    return scores


test_baselines.__test__ = False  # not a pytest test, despite its name


def _scores(predictions: torch.Tensor, labels: torch.Tensor) -> tuple[int, float, float]:
    """Count, MSE and accuracy (share of rounded predictions equal to the label); NaN when empty."""
    count = len(labels)
    if not count:
        return 0, float("nan"), float("nan")
    return (count, float(((predictions - labels) ** 2).mean()),
            float((predictions.round() == labels).double().mean()))


def onpath_by_graph_size(model: PathTransformer, test: GeneralizationTest, scale: Scale, n_graphs: int,
                         seed: int) -> list[dict]:
    """The model on `test`'s on-path targets other than vertex 2, one graph size at a time.

    For each size n from `scale.n_min` to `scale.large_n_max`, `n_graphs` graphs of exactly n
    vertices are drawn with the test's targets; the rows hold n, the count of targets that are
    not vertex 2, their MSE and accuracy (NaN without any), and the same split by the target's
    vertex id: `small_id` for ids up to `scale.small_n_max` (ids that fine-tuning used as
    targets), `large_id` for larger ids (which only graphs of more than `small_n_max` vertices
    have), each a dict of count, mse and accuracy.
    """
    if test.task != "onpath":
        raise ValueError(f"onpath_by_graph_size needs an on-path test; {test.name!r} is not one.")
    device = next(model.parameters()).device
    rows = []
    for n in range(scale.n_min, scale.large_n_max + 1):
        target_max = min(scale.small_n_max if test.targets == "small" else n, n)
        options = make_options("onpath", n, n, target_max=target_max, max_vertex_id=scale.max_vertex_id,
                               unreachable_label=scale.unreachable_label)
        generator = held_out_generator(seed + 1000 * n, test, device)
        tokens, labels = sample_with_options(n_graphs, options, generator)
        targets = tokens[:, -1, 0].cpu()
        other = targets != 2
        predictions = predict(model, tokens).double().cpu()[other]
        chosen, targets = labels.double().cpu()[other], targets[other]
        count, mse, accuracy = _scores(predictions, chosen)
        row = {"n_vertices": n, "count": count, "mse": mse, "accuracy": accuracy}
        for name, ids in (("small_id", targets <= scale.small_n_max), ("large_id", targets > scale.small_n_max)):
            part_count, part_mse, part_accuracy = _scores(predictions[ids], chosen[ids])
            row[name] = {"count": part_count, "mse": part_mse, "accuracy": part_accuracy}
        rows.append(row)
    return rows


__all__ = ["BASELINES", "BaselineScore", "onpath_by_graph_size", "score_baselines", "test_baselines",
           "vertex_2_share_of_on_path"]
