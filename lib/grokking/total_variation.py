"""Total variation of a model's outputs over a stretch of training, and its argmax flips (chapter 6).

The study found that seeds which grok either group "lock in" their function late in training,
while many that grok neither keep oscillating; it reported how often the predicted class flips
(about 5.4e-5 for seeds that grokked S4, 4e-4 for A4 x Z2, 6.5e-3 for neither)
[@wu2025ambiguous]. Its code (`total_variation.ipynb`) took a snapshot every 5 epochs over
3,000 epochs and, for each seed, the share of ALL N^2 pairs whose argmax changes between
consecutive snapshots, averaged over the last 100 intervals; seeds are grouped by their
accuracy at the end (> 0.999). Two definitions are kept here, side by side:

* the authors' (`authors_flip_rate`): all N^2 pairs, the last `intervals` intervals of
  snapshots `every` epochs apart;
* the book's (`argmax_flip_rate`, `total_variation`): the pairs outside the training set (and,
  apart, the training pairs), over a late window of snapshots; the total variation is the sum
  over consecutive snapshots of the mean over pairs of the Euclidean distance between the two
  logit vectors.

`total_variation_study` retrains chosen seeds of a sweep along the same trajectories (the same
code and seeds) with the snapshots both definitions need, and measures both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lib.grokking.mlp import all_pairs_logits, instance_logits
from lib.grokking.pairs import make_pair, pairs_in_mask
from lib.grokking.perturbation import outcomes_at, retrain_with_snapshots
from lib.grokking.sweeps import sweep_outcomes
from lib.grokking.training import SweepResult, snapshot_epochs

#: The authors' protocol: a snapshot every 5 epochs, the last 100 intervals, 3,000 epochs.
AUTHORS_EVERY, AUTHORS_INTERVALS, AUTHORS_EPOCHS = 5, 100, 3000


def snapshot_logits(snapshots: Sequence[dict[str, torch.Tensor]], left: torch.Tensor,
                    right: torch.Tensor) -> torch.Tensor:
    """(E, B, P, N) logits of the B models of every snapshot on the P pairs (left, right)."""
    with torch.no_grad():
        return torch.stack([instance_logits(params, left, right) for params in snapshots])


def _check(logits: torch.Tensor) -> None:
    if logits.dim() != 4 or logits.shape[0] < 2:
        raise ValueError(f"logits must be (snapshots >= 2, models, pairs, classes); "
                         f"got shape {tuple(logits.shape)}.")


def total_variation(logits: torch.Tensor) -> torch.Tensor:
    """(B,) sum over consecutive snapshots of the mean over pairs of |z_{e+1}(p) - z_e(p)|_2."""
    _check(logits)
    steps = (logits[1:] - logits[:-1]).double().norm(dim=3)        # (E - 1, B, P)
    return steps.mean(dim=2).sum(dim=0)


def argmax_flip_rate(logits: torch.Tensor) -> torch.Tensor:
    """(B,) share of (consecutive snapshots, pair) at which the argmax of the logits changes."""
    _check(logits)
    return flip_rate_of_predictions(logits.argmax(dim=3))


def flip_rate_of_predictions(predicted: torch.Tensor) -> torch.Tensor:
    """(B,) share of (consecutive snapshots, pair) at which the prediction changes, from the
    predictions (E, B, P) of every snapshot."""
    if predicted.dim() != 3 or predicted.shape[0] < 2:
        raise ValueError(f"predictions must be (snapshots >= 2, models, pairs); got {tuple(predicted.shape)}.")
    return (predicted[1:] != predicted[:-1]).double().mean(dim=(0, 2))


def all_pairs_predictions(snapshots: Sequence[dict[str, torch.Tensor]]) -> torch.Tensor:
    """(E, B, N^2) argmax of every model of every snapshot on all N^2 pairs (kept as indices
    only, so that hundreds of snapshots of many seeds fit in memory)."""
    with torch.no_grad():
        return torch.stack([all_pairs_logits(params).argmax(dim=2) for params in snapshots])


def authors_flip_rate(predicted: torch.Tensor, intervals: int = AUTHORS_INTERVALS) -> torch.Tensor:
    """(B,) the authors' flip rate: of the predictions (E, B, N^2) on all pairs at snapshots
    equally spaced in time, the share of pairs whose prediction changes between consecutive
    snapshots, averaged over the last `intervals` intervals."""
    if predicted.shape[0] < intervals + 1:
        raise ValueError(f"{intervals} intervals need {intervals + 1} snapshots; got {predicted.shape[0]}.")
    return flip_rate_of_predictions(predicted[-(intervals + 1):])


@dataclass
class TotalVariationStudy:
    """Late instability of chosen seeds' functions, by the book's and the authors' definitions.

    Attributes:
        index: (B,) the seeds' positions in the sweep; outcome: (B,) their outcome codes at the
            end of the retraining; same_outcome: whether the retraining's outcomes at the
            sweep's last epoch equal the sweep's (it retraced the same trajectories).
        epochs: (E,) the snapshot epochs of the book's window.
        test_tv, test_flips: (B,) total variation and argmax flip rate on the pairs outside the
            training set over that window; train_tv, train_flips: the same on the training pairs.
        train_accuracy: (B,) training accuracy at the start of the window.
        authors_epochs: the snapshot epochs of the authors' definition (every `AUTHORS_EVERY`
            epochs, `AUTHORS_INTERVALS` intervals ending at the last epoch).
        authors_flips: (B,) the authors' flip rate (all N^2 pairs).
    """

    index: torch.Tensor
    outcome: torch.Tensor
    same_outcome: bool
    epochs: torch.Tensor
    test_tv: torch.Tensor
    test_flips: torch.Tensor
    train_tv: torch.Tensor
    train_flips: torch.Tensor
    train_accuracy: torch.Tensor
    authors_epochs: torch.Tensor
    authors_flips: torch.Tensor

    @property
    def group(self) -> torch.Tensor:
        """(B,) each seed's outcome group in the retraining (index into `lib.grokking.study_sweep.GROUPS`)."""
        return self.outcome.clamp(max=2)


def total_variation_study(result: SweepResult, index: torch.Tensor, epochs: int, window: int, every: int,
                          grok_threshold: float, workers: int = 1, authors_every: int = AUTHORS_EVERY,
                          authors_intervals: int = AUTHORS_INTERVALS) -> TotalVariationStudy:
    """Retrain the seeds at `index` of `result` (same code, seeds and schedule) for `epochs`
    epochs (the sweep's or more), with a snapshot every `every` epochs over the last `window`
    (the book's definition) and every `authors_every` epochs over the last `authors_intervals`
    intervals (the authors'), and measure both. Outcomes are those at `epochs`; `same_outcome`
    checks the retraining against the sweep at the sweep's last epoch."""
    swept = result.training_config.epochs
    if epochs < swept or not 0 < window <= epochs or not 0 < every <= window:
        raise ValueError(f"need 0 < every <= window <= epochs and epochs at least the sweep's {swept}; "
                         f"got every={every}, window={window}, epochs={epochs}.")
    if authors_every * authors_intervals > epochs:
        raise ValueError(f"{authors_intervals} intervals of {authors_every} epochs do not fit in {epochs} epochs.")
    marks = snapshot_epochs(epochs, every, start=epochs - window)
    authors_marks = tuple(range(epochs - authors_every * authors_intervals, epochs + 1, authors_every))
    retrained = retrain_with_snapshots(result, index, sorted(set(marks) | set(authors_marks)), workers, epochs)
    pair = make_pair(result.info["pair"])
    trained = torch.zeros(pair.n_elements, pair.n_elements, dtype=torch.bool)
    trained[result.train_left, result.train_right] = True
    snapshots = [retrained.checkpoints[e] for e in marks]
    test_logits = snapshot_logits(snapshots, *pairs_in_mask(~trained))
    train_logits = snapshot_logits(snapshots, result.train_left, result.train_right)
    authors = authors_flip_rate(all_pairs_predictions([retrained.checkpoints[e] for e in authors_marks]),
                                authors_intervals)
    in_sweep = sweep_outcomes(result, grok_threshold, grok_threshold)[index]
    logged = retrained.log_epochs.tolist()
    start = logged.index(marks[0]) if marks[0] in logged else None
    accuracy = (retrained.metrics["train_acc"][start] if start is not None
                else torch.full((len(index),), float("nan")))
    return TotalVariationStudy(
        index=index, outcome=sweep_outcomes(retrained, grok_threshold, grok_threshold),
        same_outcome=bool(torch.equal(outcomes_at(retrained, swept, grok_threshold), in_sweep)),
        epochs=torch.tensor(marks),
        test_tv=total_variation(test_logits), test_flips=argmax_flip_rate(test_logits),
        train_tv=total_variation(train_logits), train_flips=argmax_flip_rate(train_logits),
        train_accuracy=accuracy, authors_epochs=torch.tensor(authors_marks), authors_flips=authors)


__all__ = ["AUTHORS_EPOCHS", "AUTHORS_EVERY", "AUTHORS_INTERVALS", "TotalVariationStudy", "all_pairs_predictions",
           "argmax_flip_rate", "authors_flip_rate", "flip_rate_of_predictions", "snapshot_logits",
           "total_variation", "total_variation_study"]
