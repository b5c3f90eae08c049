"""Prediction against training frequency, one path length at a time (chapter 3).

Chapter 3's length study finds that a model's predictions level off for long paths. Two
explanations compete. "The data stopped": the model never saw a path that long, so it cannot
output its length. "The data got rare": the longest paths a model was trained on are so rare
(under 1% of the training paths) that it never learned them either, and the levelling starts
inside the training range. They make different predictions about *where* the under-prediction
begins: at the first length past the training range, or at a length inside the range whose
share of the training paths is small.

`rows_by_distance` pools a model's (size, distance) cells (`lib.paths.length_generalization.Cell`)
into one row per true distance, beside that distance's share of the training labels
(`label_shares`); `UnderPrediction` finds the first distance whose mean prediction falls short
by more than a tolerance (half a hop: the rounded answer is then wrong on average), and
`compare_frequency` reads several models (or seeds) at once: whether the under-prediction starts
inside the training range in each, and whether one training share separates the distances
predicted within the tolerance from those that are not.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

import torch

from lib.paths.length_generalization import Cell

#: How far (in hops) a mean prediction may fall short of the true distance and still count as right.
SHORTFALL_TOLERANCE = 0.5


def label_shares(labels: torch.Tensor, distances: Iterable[int]) -> dict[int, float]:
    """Share of `labels` equal to each of `distances` (0.0 for a distance that never occurs)."""
    labels = labels.detach().long().cpu()
    total = len(labels)
    return {int(d): (float((labels == d).sum()) / total if total else math.nan) for d in distances}


@dataclasses.dataclass(frozen=True)
class DistanceRow:
    """A model's predictions at one true distance, pooled over graph sizes, beside its training share.

    Attributes:
        distance: the true 1-2 distance.
        training_share: share of the model's training paths with this distance (0 outside the
            training range).
        in_training_range: whether a training graph can have this distance.
        count: test graphs at this distance.
        mean_prediction: their mean prediction.
        mse: their mean squared error.
    """

    distance: int
    training_share: float
    in_training_range: bool
    count: int
    mean_prediction: float
    mse: float

    @property
    def shortfall(self) -> float:
        """True distance minus mean prediction: how many hops the model under-predicts by."""
        return self.distance - self.mean_prediction

    def record(self) -> dict:
        return {**dataclasses.asdict(self), "shortfall": self.shortfall}


def rows_by_distance(cells: Sequence[Cell], shares: Mapping[int, float], distance_train_max: int
                     ) -> tuple[DistanceRow, ...]:
    """One `DistanceRow` per distance of `cells`, pooling its cells with every graph weighted equally.

    Args:
        cells: scored (size, distance) cells of one model.
        shares: training share of each distance (`label_shares`); a distance missing from it
            has share 0.
        distance_train_max: the longest distance a training graph can have.
    """
    rows = []
    for distance in sorted({c.distance for c in cells}):
        members = [c for c in cells if c.distance == distance]
        count = sum(c.count for c in members)
        rows.append(DistanceRow(
            distance, float(shares.get(distance, 0.0)), distance <= distance_train_max, count,
            sum(c.mean_prediction * c.count for c in members) / count,
            sum(c.mse * c.count for c in members) / count))
    return tuple(rows)


@dataclasses.dataclass(frozen=True)
class UnderPrediction:
    """Where one model's predictions start to fall short of the true distance.

    Attributes:
        model: a name for the model (for tables and the results JSON).
        rows: its `DistanceRow`s in order of distance.
        distance_train_max: the longest training distance.
        tolerance: the shortfall (hops) beyond which a distance counts as under-predicted.
    """

    model: str
    rows: tuple[DistanceRow, ...]
    distance_train_max: int
    tolerance: float = SHORTFALL_TOLERANCE

    def short(self, row: DistanceRow) -> bool:
        return row.shortfall > self.tolerance

    @property
    def onset(self) -> DistanceRow | None:
        """The shortest distance whose mean prediction falls short by more than the tolerance."""
        return next((row for row in self.rows if self.short(row)), None)

    @property
    def starts_inside_range(self) -> bool:
        """The under-prediction begins at a distance that training graphs have (False without one)."""
        return self.onset is not None and self.onset.in_training_range

    @property
    def starts_at_range_end(self) -> bool:
        """The under-prediction begins exactly at the first distance past the training range."""
        return self.onset is not None and self.onset.distance == self.distance_train_max + 1

    @property
    def lowest_share_predicted(self) -> float:
        """The smallest training share among distances predicted within the tolerance (NaN if none)."""
        return min((r.training_share for r in self.rows if not self.short(r)), default=math.nan)

    @property
    def highest_share_short(self) -> float:
        """The largest training share among under-predicted distances (NaN if none)."""
        return max((r.training_share for r in self.rows if self.short(r)), default=math.nan)

    def record(self) -> dict:
        onset = self.onset
        return {"model": self.model, "distance_train_max": self.distance_train_max, "tolerance": self.tolerance,
                "rows": [r.record() for r in self.rows],
                "onset_distance": None if onset is None else onset.distance,
                "onset_training_share": None if onset is None else onset.training_share,
                "starts_inside_range": self.starts_inside_range, "starts_at_range_end": self.starts_at_range_end,
                "lowest_share_predicted": self.lowest_share_predicted,
                "highest_share_short": self.highest_share_short}


@dataclasses.dataclass(frozen=True)
class FrequencyComparison:
    """`UnderPrediction` of several models (or seeds) read together.

    Attributes:
        models: one `UnderPrediction` per model.
    """

    models: tuple[UnderPrediction, ...]

    @property
    def inside_range_count(self) -> int:
        """Models whose under-prediction starts inside their training range."""
        return sum(m.starts_inside_range for m in self.models)

    @property
    def at_range_end_count(self) -> int:
        """Models whose under-prediction starts at the first distance past their training range."""
        return sum(m.starts_at_range_end for m in self.models)

    @property
    def lowest_share_predicted(self) -> float:
        return min((m.lowest_share_predicted for m in self.models), default=math.nan)

    @property
    def highest_share_short(self) -> float:
        return max((m.highest_share_short for m in self.models), default=math.nan)

    @property
    def share_separates(self) -> bool:
        """Every under-predicted distance, in every model, is rarer in training than every distance
        predicted within the tolerance: one training share splits the two, whatever the range."""
        return self.highest_share_short < self.lowest_share_predicted

    @property
    def supports(self) -> str:
        """Which explanation the numbers support: "rare data" when the under-prediction starts inside
        the training range in every model and one training share separates the distances predicted
        within the tolerance from the under-predicted ones; "data stopped" when it starts at the
        range's end in every model; "mixed" otherwise (or without any under-prediction)."""
        n = len(self.models)
        if n and self.inside_range_count == n and self.share_separates:
            return "rare data"
        if n and self.at_range_end_count == n:
            return "data stopped"
        return "mixed"

    def record(self) -> dict:
        return {"models": [m.record() for m in self.models], "inside_range_count": self.inside_range_count,
                "at_range_end_count": self.at_range_end_count,
                "lowest_share_predicted": self.lowest_share_predicted,
                "highest_share_short": self.highest_share_short, "share_separates": self.share_separates,
                "supports": self.supports}


def compare_frequency(models: Sequence[UnderPrediction]) -> FrequencyComparison:
    """The `FrequencyComparison` of `models`."""
    return FrequencyComparison(tuple(models))


__all__ = [
    "DistanceRow", "FrequencyComparison", "SHORTFALL_TOLERANCE", "UnderPrediction", "compare_frequency",
    "label_shares", "rows_by_distance",
]
