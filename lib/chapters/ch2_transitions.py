"""What chapter 2 says about its transition study (`notebooks/02_training.py`): the drops of
every length in every seed, their spread, the order of learning over the seeds, as a table
and the results JSON entry, and the name of a label in tables (`length_name`, also for
`ch2_rival`). The study itself runs in `lib.paths.transition_study`, the drops are dated by
`lib.paths.phase_transitions`."""

from __future__ import annotations

import math
import statistics

import torch

from lib.book.tables import format_value, markdown_table
from lib.paths.phase_transitions import Drop, DropOrder, DropSettings, detect_drops, drop_order
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


def length_name(length: int, unreachable_label: int) -> str:
    """The name of a label in tables, figures and recorded lists: the path length ("3"), or
    "unreachable" for the label of unreachable targets."""
    return "unreachable" if length == unreachable_label else str(length)


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


def drop_table(curves: TransitionCurves, drops: list[dict[int, Drop]], unreachable_label: int,
               mean_loss: dict[int, float]) -> str:
    """Markdown table: per length, every seed's drop step, their spread, plateau and after
    levels (median over the seeds that dropped), the fall and width, and the mean-label loss."""
    rows = []
    for length in curves.lengths:
        per_seed = [by_length[length] for by_length in drops]
        dropped = [d for d in per_seed if d.dropped]
        steps = [d.step for d in per_seed]
        median = (lambda values: format_value(statistics.median(values), 3) if values else "–")
        rows.append([
            length_name(length, unreachable_label),
            ", ".join("no drop" if s is None else str(s) for s in steps),
            "–" if spread(steps) is None else str(spread(steps)),
            median([d.plateau for d in dropped]), format_value(mean_loss[length], 3),
            median([d.after for d in dropped]), median([d.decades for d in dropped]),
            median([d.width for d in dropped])])
    seeds = ", ".join(str(s) for s in curves.seeds)
    return markdown_table(
        ["length", f"drop step (seeds {seeds})", "spread (steps)", "plateau loss", "(length - mean label)²",
         "loss after", "fall (decades)", "width (steps)"], rows)


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


__all__ = ["chance_of_order", "drop_order", "drop_steps", "drop_table", "mean_label_from", "plotted_lengths",
           "length_name", "mean_label_loss", "spread", "study_drops", "study_results"]
