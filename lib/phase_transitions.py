"""When does the model learn each path length? Transition steps from loss curves (chapter 2).

The training loss of each path length stays on a plateau and then drops within a few dozen
steps [@wang2024shortest]. This module turns that into numbers: the transition step of a length
is the first logged step at which its loss falls below a threshold and stays below for a few
windows, computed from the log rather than read off a plot.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def first_step_below(steps: Sequence[int], values: Sequence[float], threshold: float, *,
                     patience: int = 1, must_start_above: bool = True) -> int | None:
    """The first step at which `values` falls below `threshold` and stays there.

    NaN entries (windows without data) are skipped. A crossing counts when `patience`
    consecutive valid values are below the threshold; the step returned is the first of them.

    Args:
        steps: the step of each value.
        values: a loss curve.
        threshold: the level to fall below.
        patience: how many consecutive valid values must be below.
        must_start_above: if True, a curve that is below the threshold from its first valid
            value has no transition (None): it never "fell" below.

    Returns:
        The step, or None if the curve never falls below for `patience` values.
    """
    if patience < 1:
        raise ValueError("patience must be at least 1")
    run_start, run_length, seen_above, first_valid = None, 0, False, True
    for step, value in zip(steps, values):
        if value is None or math.isnan(value):
            continue
        if value < threshold:
            if first_valid and must_start_above:
                return None
            if run_length == 0:
                run_start = step
            run_length += 1
            if run_length >= patience and (seen_above or not must_start_above):
                return run_start
        else:
            seen_above = True
            run_length = 0
        first_valid = False
    return None


def transition_steps(steps: Sequence[int], loss_by_length: torch.Tensor | Sequence[Sequence[float]],
                     threshold: float, *, lengths: Sequence[int] | None = None,
                     patience: int = 2, min_count: Sequence[Sequence[int]] | None = None,
                     ) -> dict[int, int | None]:
    """Transition step of every path length: when its loss first falls below `threshold`.

    Args:
        steps: step at the end of each logged window.
        loss_by_length: (windows, labels) mean loss of each label in each window.
        threshold: the loss level that counts as "learned" (e.g. 0.1: predictions within about
            0.3 of the truth, so rounding them gives the right length).
        lengths: which labels to report (default: every label with data).
        patience: consecutive windows below the threshold required.
        min_count: optional (windows, labels) example counts; windows with fewer than 5
            examples of a label are treated as missing for it.

    Returns:
        {length: step or None}. A length whose loss is below the threshold from the start has
        no transition (None).
    """
    losses = torch.as_tensor(loss_by_length, dtype=torch.float64).clone()
    if min_count is not None:
        losses[torch.as_tensor(min_count) < 5] = math.nan
    if lengths is None:
        lengths = [k for k in range(losses.shape[1]) if not torch.isnan(losses[:, k]).all()]
    return {int(k): first_step_below(steps, losses[:, k].tolist(), threshold, patience=patience)
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
