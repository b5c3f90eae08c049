"""Chapter 2's table of its transition study (`notebooks/02_training.py`): the drops of every
length in every seed and their spread (`drop_table`), and the name of a label in tables
(`length_name`, also for `ch2_rival`). The study itself runs in `lib.paths.transition_study`,
the drops are dated by `lib.paths.phase_transitions` and read over the seeds by
`lib.paths.transition_drops`."""

from __future__ import annotations

import statistics

from lib.book.tables import format_value, markdown_table
from lib.paths.phase_transitions import Drop
from lib.paths.transition_drops import spread
from lib.paths.transition_study import TransitionCurves


def length_name(length: int, unreachable_label: int) -> str:
    """The name of a label in tables, figures and recorded lists: the path length ("3"), or
    "unreachable" for the label of unreachable targets."""
    return "unreachable" if length == unreachable_label else str(length)


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


__all__ = ["drop_table", "length_name"]
