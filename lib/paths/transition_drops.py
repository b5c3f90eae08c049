"""The drops of every length in every seed of the transition study: their steps and spread, the
mean-label loss beside them, the study's results entry and the chance of its order (chapter 2).

The study itself runs in `lib.paths.transition_study` and the drops are dated by
`lib.paths.phase_transitions`; this module reads them over the seeds (`study_drops`,
`drop_steps`, `spread`), gives the loss of predicting the mean label at each length
(`mean_label_loss`, `mean_label_from`), gathers the results JSON's entry of the study
(`study_results`) and the probability of the order of learning by chance (`chance_of_order`).
"""

from __future__ import annotations

import math

import torch

from lib.paths.phase_transitions import Drop, DropOrder, DropSettings, detect_drops
from lib.paths.transition_study import TransitionCurves


def study_drops(curves: TransitionCurves, settings: DropSettings) -> list[dict[int, Drop]]:
    """Per seed, {length: its drop}."""
    return [detect_drops(curves.steps, {length: curves.curve(index, length) for length in curves.lengths}, settings)
            for index in range(len(curves.seeds))]


def drop_steps(drops: list[dict[int, Drop]], lengths=None) -> list[dict[int, int | None]]:
    """Per seed, {length: drop step or None} (only `lengths`, when given)."""
    return [{length: drop.step for length, drop in by_length.items() if lengths is None or length in lengths}
            for by_length in drops]


def plotted_lengths(lengths: tuple[int, ...], unreachable_label: int) -> list[int]:
    """The labels the authors plotted and read the order of learning from: lengths 1, 2 and 3
    and unreachable targets (among `lengths`)."""
    return [k for k in lengths if k <= 3 or k == unreachable_label]


def spread(steps: list[int | None]) -> int | None:
    """Largest minus smallest drop step over the seeds (None unless every seed dropped)."""
    return None if any(step is None for step in steps) else max(steps) - min(steps)


def mean_label_from(mean_loss: dict[int, float]) -> float:
    """The mean label behind a `mean_label_loss` dict (from its first two lengths)."""
    (a, la), (b, lb) = list(mean_loss.items())[:2]
    # (a - m)^2 - (b - m)^2 = (a - b)(a + b - 2m)
    return ((a + b) - (la - lb) / (a - b)) / 2


def mean_label_loss(labels: torch.Tensor, lengths: tuple[int, ...]) -> dict[int, float]:
    """{length: (length - mean label)^2}: each length's loss while the model predicts the mean
    label of the training distribution (`labels`: a sample of it) for every graph."""
    mean = float(labels.double().mean())
    return {length: (length - mean) ** 2 for length in lengths}


def study_results(curves: TransitionCurves, drops: list[dict[int, Drop]], order: DropOrder,
                  settings: DropSettings, mean_loss: dict[int, float], per_length: int) -> dict:
    """The transition study's entry of the results JSON: its recipe, the curves, and per length
    the drops of every seed (step, plateau, fall, width) and their spread."""
    config = curves.config
    return {
        "n_min": config.n_min, "n_max": config.n_max, "n_layers": config.n_layers,
        "batch_size": config.batch_size, "learning_rate": config.lr_schedule[0][1],
        "steps_trained": config.total_steps, "seeds": list(curves.seeds), "eval_per_length": per_length,
        "drop_settings": {"smoothing": settings.smoothing, "window": settings.window,
                          "min_decades": settings.min_decades, "max_width": settings.max_width,
                          "min_plateau": settings.min_plateau},
        "lengths": list(curves.lengths), "steps": list(curves.steps), "loss": curves.loss.tolist(),
        "seconds": list(curves.seconds),
        "drop_step": {length: [d[length].step for d in drops] for length in curves.lengths},
        "plateau": {length: [d[length].plateau for d in drops] for length in curves.lengths},
        "drops": {length: [d[length].to_dict() for d in drops] for length in curves.lengths},
        "spread": {length: spread([d[length].step for d in drops]) for length in curves.lengths},
        "mean_label_loss": mean_loss, "mean_label": mean_label_from(mean_loss),
        "order": {"groups": [list(g) for g in order.groups], "sometimes": list(order.sometimes),
                  "never": list(order.never), "holds_over_seeds": order.holds_over_seeds},
    }


def chance_of_order(order: DropOrder, n_seeds: int) -> float:
    """Probability that lengths dropping in a uniformly random order (independently per seed)
    put every group of `order.groups` before the next in all `n_seeds` seeds."""
    sizes = [len(group) for group in order.groups]
    per_seed = math.prod(math.factorial(size) for size in sizes) / math.factorial(sum(sizes))
    return per_seed ** n_seeds


__all__ = [
    "chance_of_order", "drop_steps", "mean_label_from", "mean_label_loss", "plotted_lengths", "spread",
    "study_drops", "study_results",
]
