"""The numbers of a finished training run: its loss overall and per path length, the drops of
each length, and the order in which the lengths were learned (chapter 2's main run).

`summarize_run` scores the final model on the run's fixed evaluation batch and dates each
length's drop, on that batch's curves (`evaluation_drops`, over `lib.paths.evaluation_curves`)
or on the logged training loss (`main_run_drops`); `learning_order` reads the order of the
drops and the hardest label off its result.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from lib.paths.evaluation_curves import EvaluationCurves
from lib.paths.phase_transitions import Drop, DropSettings, detect_drops
from lib.paths.prediction import predict
from lib.paths.training import TrainingRun, constant_prediction_loss


#: Fewest examples of a length in a logging window of the main run for the window to count.
MIN_WINDOW_COUNT = 5


def main_run_drops(run: TrainingRun, settings: DropSettings) -> dict[int, Drop]:
    """Drops of every length in the main run's logged training loss (windows with fewer than
    `MIN_WINDOW_COUNT` examples of a length are missing points of its curve)."""
    losses = run.log.loss_by_length_tensor().clone()
    losses[torch.tensor(run.log.count_by_length) < MIN_WINDOW_COUNT] = math.nan
    curves = {k: losses[:, k].tolist() for k in range(losses.shape[1]) if not torch.isnan(losses[:, k]).all()}
    return detect_drops(run.log.steps, curves, settings)


def evaluation_drops(curves: EvaluationCurves, settings: DropSettings, min_count: int = 20) -> dict[int, Drop]:
    """Drops of every label with at least `min_count` examples in the main run's loss on its
    fixed evaluation batch (`lib.paths.evaluation_curves`)."""
    kept = [k for k, n in zip(curves.labels, curves.counts) if n >= min_count]
    return detect_drops(curves.steps, {k: curves.curve(k) for k in kept}, settings)


def summarize_run(run: TrainingRun, settings: DropSettings, curves: EvaluationCurves | None = None) -> dict:
    """The chapter's key numbers for a finished run.

    Returns:
        A dict with final_loss (MSE of the final model on the fixed evaluation batch),
        loss_by_length ({length: that MSE restricted to the length}), count_by_length,
        constant_prediction_loss (MSE of always predicting the mean label on that batch),
        final_training_loss (last logging window), drop_by_length ({length: `Drop.to_dict()` of
        its loss on the evaluation batch over `curves`, `evaluation_drops`; without `curves`, of
        its logged training loss, `main_run_drops`}), n_parameters,
        steps, examples_per_second, seconds and sampling_share (fraction of the time spent
        drawing graphs).
    """
    predictions = predict(run.model, run.eval_tokens).double()
    labels = run.eval_labels.double()
    squared_error = (predictions - labels) ** 2
    loss_by_length, count_by_length = {}, {}
    for length in sorted(set(labels.long().tolist())):
        chosen = labels.long() == length
        loss_by_length[length] = float(squared_error[chosen].mean())
        count_by_length[length] = int(chosen.sum())
    drops = main_run_drops(run, settings) if curves is None else evaluation_drops(curves, settings)
    return {
        "final_loss": float(squared_error.mean()),
        "loss_by_length": loss_by_length,
        "count_by_length": count_by_length,
        "constant_prediction_loss": constant_prediction_loss(run.eval_labels),
        "final_training_loss": run.log.loss[-1],
        "drop_by_length": {length: drop.to_dict() for length, drop in drops.items()},
        "n_parameters": run.n_parameters,
        "steps": run.step,
        "examples_per_second": run.examples_per_second,
        "seconds": run.seconds,
        "sampling_share": run.seconds_sampling / run.seconds if run.seconds else math.nan,
    }


@dataclasses.dataclass(frozen=True)
class LearningOrder:
    """What chapter 2's summary says about the order in which path lengths were learned."""

    common_lengths: tuple[int, ...]   # lengths with at least `min_share` of the evaluation batch
    in_length_order: bool             # lengths with a drop dropped shortest first (unreachable excluded)
    hardest_length: int               # the label with the largest final loss
    hardest_unreachable: bool         # that label is the one of unreachable targets
    hardest_loss: float
    hardest_count: int                # evaluation examples with that label


def learning_order(summary: dict, unreachable_label: int, min_share: float = 0.02) -> LearningOrder:
    """Read the order of the drops and the hardest label off a `summarize_run` dict."""
    drops = summary["drop_by_length"]
    eval_size = sum(summary["count_by_length"].values())
    common = tuple(length for length, count in summary["count_by_length"].items()
                   if count >= min_share * eval_size and length in drops)
    dropped = sorted((drop["step"], length) for length, drop in drops.items()
                     if drop["dropped"] and length != unreachable_label)
    in_order = [length for _, length in dropped] == sorted(length for _, length in dropped)
    hardest = max(summary["loss_by_length"], key=summary["loss_by_length"].get)
    return LearningOrder(common, in_order, hardest, hardest == unreachable_label,
                         summary["loss_by_length"][hardest], summary["count_by_length"][hardest])


__all__ = [
    "evaluation_drops", "learning_order", "LearningOrder", "main_run_drops", "MIN_WINDOW_COUNT",
    "summarize_run",
]
