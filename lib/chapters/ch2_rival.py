"""Chapter 2's tables of its drops against their rivals (`notebooks/02_training.py`), and the
names of the groups of its order of learning.

The analyses, counts and findings they show (a drop is a *transition* when the constant rival is
ruled out for it, and *holds* when it is found at every row of the sensitivity table) are
computed in `lib.paths.transition_verdicts`, for the transition study's seeds and for the main
run.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from lib.book.tables import format_value, markdown_table
from lib.chapters.ch2_transitions import length_name
from lib.paths.drop_sensitivity import Sensitivity
from lib.paths.phase_transitions import DropOrder
from lib.paths.transition_verdicts import Analysis, LengthCounts


def _median(values, digits: int = 3) -> str:
    values = [v for v in values if v is not None]
    return format_value(statistics.median(values), digits) if values else "–"


def rival_table(analyses: Sequence[Analysis], sens: Sensitivity, lengths: Sequence[int],
                shares: Mapping[int, float], unreachable_label: int) -> str:
    """Markdown table, one row per length: its share, in how many seeds it has a drop, a
    transition (the constant rival ruled out) and a transition that holds across the
    sensitivity table, the median step of those, and (medians over the seeds with a drop) the
    loss after the drop beside the two rival losses and the mean prediction."""
    n = len(analyses)
    rows = []
    for k in lengths:
        dropped = [a.verdicts[k] for a in analyses if a.drops[k].dropped]
        held = [sens.holds[(i, k)] for i in range(n) if (i, k) in sens.holds]
        rows.append([
            length_name(k, unreachable_label), f"{100 * shares.get(k, 0.0):.1f}%",
            f"{len(dropped)} of {n}", f"{sum(v.transition for v in dropped)} of {n}", f"{len(held)} of {n}",
            _median(held, 3), _median([v.loss_after for v in dropped]), _median([v.mean_after for v in dropped]),
            _median([v.best_constant_loss for v in dropped]), _median([v.model_constant_loss for v in dropped])])
    return markdown_table(
        ["length", "share of training graphs", "seeds with a drop", "rival ruled out", "holds across the table",
         "median step (holds)", "loss after the drop", "mean prediction after", "(c_U - d)², best constant",
         "(c - d)², model's constant"], rows)


def sensitivity_table(sens: Sensitivity) -> str:
    """Markdown table, one row per setting value: the drops and transitions found and how many of
    the default transitions that row loses."""
    rows = [[row["setting"], format_value(row["value"], 3), str(row["drops"]), str(row["transitions"]),
             str(row["default_transitions_lost"])] for row in sens.table_rows()]
    return markdown_table(["setting", "value", "drops", "transitions", "default transitions lost"], rows)


def group_names(order: DropOrder, unreachable_label: int) -> list[list[str]]:
    """The names (`length_name`) of the lengths of each group of `order.groups`, the groups in the
    order of their transitions: [["1"], ["2", "3"]]."""
    return [[length_name(k, unreachable_label) for k in group] for group in order.groups]


def length_verdict_table(counts: Sequence[LengthCounts], unreachable_label: int) -> str:
    """Markdown table, one row per length (`length_counts`): seeds with a drop, with the constant
    rival ruled out, with a transition that holds across the table (and their steps), and why
    not in the first seed that falls short."""
    rows = []
    for c in counts:
        if c.first_not_ruled is not None:
            why = f"seed {c.first_not_ruled}: {c.first_not_ruled_reason}"
        elif not c.dropped:
            why = f"seed 0: {c.first_seed_reason}, largest fall {c.first_seed_decades:.2f} decades"
        else:
            why = "–"
        rows.append([length_name(c.length, unreachable_label), f"{c.dropped} of {c.seeds}",
                     f"{c.ruled_out} of {c.dropped}" if c.dropped else "–", f"{c.held} of {c.seeds}",
                     ", ".join(str(s) for s in c.held_steps) or "–", why])
    return markdown_table(["length", "seeds with a drop", "rival ruled out", "holds across the table",
                           "steps (holds)", "why not (first seed that falls short)"], rows)


def main_run_table(analysis: Analysis, sens: Sensitivity, lengths: Sequence[int], unreachable_label: int) -> str:
    """Markdown table, one row per label of the main run: its drop (step, fall, width), whether
    it is a transition and holds across the table (steps across the table), and why not."""
    rows = []
    for k in lengths:
        drop, rival = analysis.drops[k], analysis.verdicts[k]
        transition = drop.dropped and rival.transition
        holds = (0, k) in sens.holds
        if not drop.dropped:
            why = drop.reason
        elif not rival.transition:
            why = rival.reason
        elif not holds:
            lost = [f"{setting} = {format_value(value, 3)}" + (" (none)" if step is None else f" (step {step})")
                    for setting, value, step in sens.lost_at((0, k))]
            why = "missing or dated elsewhere at " + (", ".join(lost[:4]) + (", ..." if len(lost) > 4 else "")
                                                       if lost else "–")
        else:
            why = "–"
        low_high = sens.step_range.get((0, k))
        rows.append([length_name(k, unreachable_label), "no drop" if not drop.dropped else str(drop.step),
                     f"{drop.decades:.1f}" if drop.dropped else "–", str(drop.width) if drop.dropped else "–",
                     ("yes" if transition else "no") if drop.dropped else "–", "yes" if holds else "no",
                     f"{low_high[0]} to {low_high[1]}" if low_high else "–", why])
    return markdown_table(["label", "drop step", "fall (decades)", "width (steps)", "transition", "holds across the table",
                           "steps across the table", "why not"], rows)


__all__ = [
    "group_names", "length_verdict_table", "main_run_table", "rival_table", "sensitivity_table",
]
