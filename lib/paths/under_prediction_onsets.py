"""Where each model first under-predicts, against how often its training paths had that length:
one model's rows (`under_prediction`) and the onsets of a family of models (`onsets`) (chapter 3).

The rows and the onset of one model come from `lib.paths.length_frequency`; does the
under-prediction begin where the training data stops, or where it gets rare?
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from lib.paths.length_frequency import UnderPrediction, label_shares, rows_by_distance
from lib.paths.length_generalization import Cell


def under_prediction(name: str, cells: Sequence[Cell], training_labels: torch.Tensor,
                     distance_train_max: int) -> UnderPrediction:
    """`UnderPrediction` of one model's cells, with the training shares of `training_labels`."""
    distances = sorted({c.distance for c in cells})
    return UnderPrediction(name, rows_by_distance(cells, label_shares(training_labels, distances),
                                                   distance_train_max), distance_train_max)


@dataclasses.dataclass(frozen=True)
class Onsets:
    """Where a family of models (seeds) first under-predicts: the distinct onsets, sorted, as
    (distance, training share, inside the training range), and how many models have none."""

    onsets: tuple[tuple[int, float, bool], ...]
    missing: int
    models: int


def onsets(models: Sequence[UnderPrediction]) -> Onsets:
    """The `Onsets` of `models`."""
    found = [m.onset for m in models]
    return Onsets(tuple(sorted({(o.distance, o.training_share, o.in_training_range) for o in found if o is not None})),
                  sum(o is None for o in found), len(found))


__all__ = ["Onsets", "onsets", "under_prediction"]
