"""When does the model learn each path length? Transition steps from loss curves (chapter 2).

The training loss of each path length stays on a plateau and then drops within a few dozen
steps [@wang2024shortest]. This module turns that into numbers: the transition step of a length
is the first logged step from which its (lightly smoothed) loss is below a threshold and stays
below, computed from the training log rather than read off a plot.

"Stays below" matters. Early in training the model learns to predict roughly the mean label;
a length close to the mean then has a small loss for a while without the model knowing anything
about it, and its loss rises again once the predictions start to spread. Taking the first dip
below the threshold would call that a transition; requiring the loss to stay below does not.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import torch


def running_median(values: Sequence[float], window: int) -> list[float]:
    """Centred running median over the valid (non-NaN) values; NaN entries stay NaN.

    Windows are taken over valid values only, so a gap (a logging window without examples of
    this length) does not shorten the median around it.
    """
    if window < 1:
        raise ValueError("window must be at least 1")
    positions = [i for i, v in enumerate(values) if v is not None and not math.isnan(v)]
    valid = [values[i] for i in positions]
    half = window // 2
    smoothed = [math.nan] * len(values)
    for rank, position in enumerate(positions):
        neighbourhood = valid[max(0, rank - half): rank + half + 1]
        smoothed[position] = statistics.median(neighbourhood)
    return smoothed


def transition_step(steps: Sequence[int], values: Sequence[float], threshold: float, *,
                    smoothing: int = 3, hold: int | None = None, min_run: int = 10) -> int | None:
    """The first step from which a loss curve is below `threshold` and stays below.

    Args:
        steps: the step of each value.
        values: a loss curve; NaN marks windows without data, which are skipped.
        threshold: the level to fall below.
        smoothing: width of the running median applied first (1: none).
        hold: how many consecutive valid values must be below; None: all the remaining ones.
        min_run: with hold=None, the final stretch below the threshold must span at least this
            many valid values: a curve that only dips in the last few windows (for example
            when the learning rate drops near the end) has not shown that it settled.

    Returns:
        The step, or None if the curve never settles below the threshold, or if it is below
        from its first valid value on (it never fell, so there is no transition to date).
    """
    smoothed = running_median(values, smoothing)
    valid = [(step, value) for step, value in zip(steps, smoothed) if not math.isnan(value)]
    if not valid:
        return None
    needed = len(valid) if hold is None else hold
    run_start, run_length, seen_above = None, 0, False
    for step, value in valid:
        if value < threshold:
            if run_length == 0:
                run_start = step
            run_length += 1
            if hold is not None and run_length >= needed and seen_above:
                return run_start
        else:
            seen_above = True
            run_length = 0
    if hold is None and run_length >= min_run and seen_above:
        return run_start
    return None


def transition_steps(steps: Sequence[int], loss_by_length: torch.Tensor | Sequence[Sequence[float]],
                     threshold: float, *, lengths: Sequence[int] | None = None,
                     smoothing: int = 3, hold: int | None = None, min_run: int = 10,
                     min_count: Sequence[Sequence[int]] | None = None) -> dict[int, int | None]:
    """Transition step of every path length (see `transition_step`).

    Args:
        steps: step at the end of each logged window.
        loss_by_length: (windows, labels) mean loss of each label in each window.
        threshold: the loss level that counts as "learned" (0.1 in chapter 2: predictions within
            about 0.3 of the truth, so rounding them gives the right length).
        lengths: which labels to report (default: every label with data).
        smoothing, hold, min_run: as in `transition_step`.
        min_count: optional (windows, labels) example counts; windows with fewer than 5
            examples of a label are treated as missing for it.

    Returns:
        {length: step or None}.
    """
    losses = torch.as_tensor(loss_by_length, dtype=torch.float64).clone()
    if min_count is not None:
        losses[torch.as_tensor(min_count) < 5] = math.nan
    if lengths is None:
        lengths = [k for k in range(losses.shape[1]) if not torch.isnan(losses[:, k]).all()]
    return {int(k): transition_step(steps, losses[:, k].tolist(), threshold,
                                    smoothing=smoothing, hold=hold, min_run=min_run)
            for k in lengths}


def order_of_learning(transitions: dict[int, int | None]) -> list[list[int]]:
    """Lengths grouped by transition step, earliest first (lengths with None left out).

    Lengths whose steps coincide form one group, which is how "2 and 3 were learned together"
    shows up.
    """
    by_step: dict[int, list[int]] = {}
    for length, step in sorted(transitions.items()):
        if step is not None:
            by_step.setdefault(step, []).append(length)
    return [by_step[step] for step in sorted(by_step)]
