"""The length-generalization study summarized: the error by group of (graph size, true distance)
cells, by short distance, the depth check on chapter 2's model (`LengthSummary`), and its
headline numbers over the seeds of the study's model (`LengthSeeds`) (chapter 3).

`summarize_length_study` turns the scored cells of `lib.paths.length_generalization` into a
`LengthSummary`; a group without cells is a `GroupScore` with count 0 and NaN MSE and accuracy.
The builder draws no random numbers; `length_study_of_seed` trains and scores the study's model
again from another seed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import torch

from lib.paths.length_generalization import GROUPS, Cell, LengthSplit, evaluate_cells, summarize_cells
from lib.paths.seed_spread import SeedSpread
from lib.paths.training import PathTrainingConfig, start_training, train


@dataclasses.dataclass(frozen=True)
class GroupScore:
    """MSE and accuracy over one group of (size, distance) cells, every graph weighted equally.

    `count` is 0 and `mse`, `accuracy` are NaN when the group has no cell.
    """

    mse: float
    accuracy: float
    count: int

    @property
    def present(self) -> bool:
        return self.count > 0


#: Field of `LengthSummary` for each group of `lib.paths.length_generalization.GROUPS`.
GROUP_FIELDS = {"training sizes": "training_sizes",
                "larger graphs, distances seen in training": "larger_graphs_seen_distances",
                "larger graphs, longer distances": "longer_distances"}


@dataclasses.dataclass(frozen=True)
class ShortDistanceRow:
    """The MSE at one short true distance, on the largest training size and the largest test size.

    An MSE is None when its cell was not measured (too few graphs of that distance).
    """

    distance: int
    training_size: int
    largest_size: int
    mse_at_training_size: float | None
    mse_at_largest_size: float | None

    @property
    def measured(self) -> bool:
        return self.mse_at_training_size is not None and self.mse_at_largest_size is not None


@dataclasses.dataclass(frozen=True)
class LengthSummary:
    """The length-generalization study and its depth check, as the chapter's text reads them.

    Attributes:
        split: training and test sizes of the study.
        cells: the length-study model's (size, distance) cells.
        depth_cells: chapter 2's model on its own largest graphs, one cell per distance.
        training_sizes, larger_graphs_seen_distances, longer_distances: the three groups of
            `GROUPS` (training sizes; larger graphs at distances seen in training; longer
            distances than any training path).
        largest_size: the largest graph size with a measured cell (0 when there is none).
        short_distance_rows: distances 1, 2 and 3 at the largest training size and at
            `largest_size`.
        top_prediction: the highest mean prediction of any cell (NaN without cells).
        longest_training_cells: cells of training sizes at the longest training distance.
        share_longest_training_distance: share of that distance among the training labels.
        depth_n_layers, depth_n_max: layers and largest graph size of chapter 2's model.
        depth_top_prediction: its highest mean prediction (NaN without cells).
        depth_reaches_further: it predicts more than half a hop beyond `top_prediction`.
    """

    split: LengthSplit
    cells: tuple[Cell, ...]
    depth_cells: tuple[Cell, ...]
    training_sizes: GroupScore
    larger_graphs_seen_distances: GroupScore
    longer_distances: GroupScore
    largest_size: int
    short_distance_rows: tuple[ShortDistanceRow, ...]
    top_prediction: float
    longest_training_cells: tuple[Cell, ...]
    share_longest_training_distance: float
    depth_n_layers: int
    depth_n_max: int
    depth_top_prediction: float
    depth_reaches_further: bool

    def groups(self) -> list[tuple[str, GroupScore]]:
        """(name, score) of each group that has cells, in the order of `GROUPS`."""
        return [(name, getattr(self, GROUP_FIELDS[name])) for name, _ in GROUPS
                if getattr(self, GROUP_FIELDS[name]).present]

    def record(self) -> dict:
        """The length-study entries of chapter 3's results JSON."""
        return {
            "length_generalization": [c.record() for c in self.cells],
            "length_generalization_summary": {
                name: {"mse": score.mse, "accuracy": score.accuracy, "count": score.count}
                for name, score in self.groups()},
            "length_split": dataclasses.asdict(self.split),
            "length_depth_check": [c.record() for c in self.depth_cells],
        }


#: Distances whose loss the chapter follows from the training sizes to the largest graphs.
SHORT_DISTANCES = (1, 2, 3)


def summarize_length_study(cells: Sequence[Cell], split: LengthSplit, training_labels: torch.Tensor,
                           depth_cells: Sequence[Cell], depth_config: PathTrainingConfig) -> LengthSummary:
    """The `LengthSummary` of the length-study cells and the depth check (chapter 3).

    Args:
        cells: `evaluate_cells` of the length-study model.
        split: the study's sizes.
        training_labels: a sample of the study's training labels (for the share of the longest
            training distance).
        depth_cells: `own_graphs_by_distance` of chapter 2's model.
        depth_config: chapter 2's model's training configuration.
    """
    groups = summarize_cells(list(cells))
    scores = {field: GroupScore(**groups[name]) if name in groups else GroupScore(math.nan, math.nan, 0)
              for name, field in GROUP_FIELDS.items()}
    largest = max((c.n_vertices for c in cells), default=0)
    rows = []
    for distance in SHORT_DISTANCES:
        by_size = {c.n_vertices: c.mse for c in cells if c.distance == distance}
        rows.append(ShortDistanceRow(distance, split.n_train_max, largest,
                                     by_size.get(split.n_train_max), by_size.get(largest)))
    top_prediction = max((c.mean_prediction for c in cells), default=math.nan)
    depth_top = max((c.mean_prediction for c in depth_cells), default=math.nan)
    return LengthSummary(
        split=split, cells=tuple(cells), depth_cells=tuple(depth_cells), **scores,
        largest_size=largest, short_distance_rows=tuple(rows), top_prediction=top_prediction,
        longest_training_cells=tuple(c for c in cells
                                     if c.seen_size and c.distance == split.distance_train_max),
        share_longest_training_distance=float(
            (training_labels == split.distance_train_max).float().mean()),
        depth_n_layers=depth_config.n_layers, depth_n_max=depth_config.sampler.n_max,
        depth_top_prediction=depth_top,
        depth_reaches_further=bool(depth_top > top_prediction + 0.5),
    )


def length_study_of_seed(seed: int, config: PathTrainingConfig, split: LengthSplit, *, per_cell: int,
                         test_seed: int, max_proposals: int, training_labels: torch.Tensor,
                         depth_cells: Sequence[Cell], depth_config: PathTrainingConfig) -> LengthSummary:
    """The length study again from another seed (chapter 3 runs it for each further seed).

    Trains the length-study model of `config` with `seed` in its place, scores it on the same
    (size, distance) cells as the first seed (`evaluate_cells`, graphs drawn from `test_seed`) and
    returns their `summarize_length_study` beside the depth check (`depth_cells`, `depth_config`)
    and the training labels of the first seed.
    """
    run = train(start_training(dataclasses.replace(config, seed=seed)), progress=False)
    run.model.eval()
    cells = evaluate_cells(run.model, split, per_cell=per_cell, seed=test_seed, max_proposals=max_proposals)
    return summarize_length_study(cells, split, training_labels, depth_cells, depth_config)


@dataclasses.dataclass(frozen=True)
class LengthSeeds:
    """The length study's headline numbers over the seeds of its model.

    Attributes:
        seeds: the seeds, in order (the first is the model the chapter's figures show).
        summaries: one `LengthSummary` per seed.
    """

    seeds: tuple[int, ...]
    summaries: tuple[LengthSummary, ...]

    @property
    def top_prediction(self) -> SeedSpread:
        """The highest mean prediction of any cell, over the seeds."""
        return SeedSpread(tuple(s.top_prediction for s in self.summaries))

    @property
    def training_sizes_mse(self) -> SeedSpread:
        return SeedSpread(tuple(s.training_sizes.mse for s in self.summaries))

    @property
    def larger_graphs_seen_distances_mse(self) -> SeedSpread:
        return SeedSpread(tuple(s.larger_graphs_seen_distances.mse for s in self.summaries))

    @property
    def longer_distances_mse(self) -> SeedSpread:
        return SeedSpread(tuple(s.longer_distances.mse for s in self.summaries))

    @property
    def seeds_stopping_within_a_hop(self) -> int:
        """Seeds whose highest mean prediction stays below the longest training distance + 1."""
        return sum(s.top_prediction < s.split.distance_train_max + 1 for s in self.summaries)

    @property
    def seeds_longer_ten_times_worse(self) -> int:
        """Seeds whose MSE on longer distances is more than 10 times that on the training sizes."""
        return sum(s.longer_distances.mse > 10 * s.training_sizes.mse for s in self.summaries)

    def record(self) -> dict:
        return {"seeds": list(self.seeds), "top_prediction": self.top_prediction.record(),
                "training_sizes_mse": self.training_sizes_mse.record(),
                "larger_graphs_seen_distances_mse": self.larger_graphs_seen_distances_mse.record(),
                "longer_distances_mse": self.longer_distances_mse.record(),
                "seeds_stopping_within_a_hop": self.seeds_stopping_within_a_hop,
                "seeds_longer_ten_times_worse": self.seeds_longer_ten_times_worse}


__all__ = [
    "GROUP_FIELDS", "GroupScore", "length_study_of_seed", "LengthSeeds", "LengthSummary", "SHORT_DISTANCES",
    "ShortDistanceRow", "summarize_length_study",
]
