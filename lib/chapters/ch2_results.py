"""The tables of chapter 2 (`notebooks/02_training.py`) and the checks of its results.

Tables: the transition study's drops per length and seed (`drop_table`), the drops against the
constant rival (`rival_table`) and across the detector's settings (`sensitivity_table`), each
length's verdict over the seeds (`length_verdict_table`), the main run's labels
(`main_run_table`); `length_name` and `group_names` name lengths and the order's groups. The
numbers come from `lib.paths.transition_drops` and `lib.paths.transition_verdicts`.
The notebook calls `check_results` on its results (the recorded numbers among them) right
before it writes `results_dir/02_training.json`; the notebook tests call it again on the JSON
they read back. Which keys the JSON must hold is what `book/reproduced/02_training.yaml` reads.
"""


from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from lib.book.record import verdict
from lib.book.results import to_jsonable
from lib.book.tables import format_value, markdown_table
from lib.paths.drop_sensitivity import Sensitivity
from lib.paths.phase_transitions import Drop, DropOrder
from lib.paths.transition_drops import spread
from lib.paths.transition_study import TransitionCurves
from lib.paths.transition_verdicts import Analysis, LengthCounts


def check_results(results: dict) -> None:
    """Assert what chapter 2's results must satisfy: the shapes and counts of its records, and
    that the recorded numbers and words agree with the results they were recorded from. Takes
    the results as written or as read back (`to_jsonable` makes the two the same: JSON keys are
    strings)."""
    results = to_jsonable(results)
    assert results["n_parameters"] > 0 and results["steps"] > 0 and results["examples_per_second"] > 0
    assert isinstance(results["loss_by_length"], dict) and isinstance(results["drop_by_length"], dict)
    study = results["transition_study"]
    seeds = len(study["seeds"])
    assert seeds >= 1 and study["n_max"] >= 3
    for length in study["lengths"]:
        # JSON keys are strings; every length has one drop step and one plateau level per seed.
        key = str(length)
        assert len(study["drop_step"][key]) == seeds and len(study["plateau"][key]) == seeds
        assert all((step is None) == (plateau is None)
                   for step, plateau in zip(study["drop_step"][key], study["plateau"][key]))
    assert len(study["loss"]) == seeds and len(study["loss"][0]) == len(study["steps"])
    assert {"groups", "sometimes", "never", "holds_over_seeds"} <= study["order"].keys()
    # Beside each loss, the mean prediction on the same graphs (seeds, steps, lengths).
    assert len(study["mean_prediction"]) == seeds and len(study["mean_prediction"][0]) == len(study["steps"])
    assert len(study["mean_prediction"][0][0]) == len(study["lengths"])
    for length in study["lengths"]:
        key = str(length)
        assert len(study["rival"][key]) == seeds and len(study["held_step"][key]) == seeds
        # A transition that holds is a transition at the defaults, which is a drop there.
        for held, transition, drop in zip(study["held_step"][key], study["transition_step"][key],
                                          study["drop_step"][key]):
            assert held is None or (transition is not None and drop is not None)
    for table in (study["sensitivity"], results["main_run"]["sensitivity"]):
        ranges = table["ranges"]
        assert len(table["rows"]) == sum(len(values) for values in ranges.values())
        assert all(row["transitions"] <= row["drops"] for row in table["rows"])
    curves = results["main_run"]["evaluation_curves"]
    assert len(curves["loss"]) == len(curves["steps"]) == len(curves["mean_prediction"])
    # Findings are reported with their counts, never asserted.
    for found in results["findings"].values():
        assert isinstance(found["holds"], bool) and 0 <= found["events"] and found["seeds"] >= 1
    # The numbers the prose cites (lib.book.record): each with its format and text, and each
    # agreeing with the result it was recorded from.
    recorded = results["recorded"]
    assert all(entry.keys() == {"value", "format", "text"} for entry in recorded.values())
    assert recorded["main.final_loss"]["value"] == results["final_loss"]
    assert recorded["study.seeds"]["value"] == seeds
    unreachable = study["n_max"]
    assert recorded["study.common_lengths"]["value"] == ", ".join(length_name(k, unreachable)
                                                                  for k in study["common_lengths"])
    assert recorded["order.groups"]["value"] == len(study["order"]["groups"])
    assert recorded["order.one_at_a_time"]["value"] == verdict(results["findings"]["one_length_at_a_time"]["holds"],
                                                               yes="holds", no="does not hold")
    assert recorded["main.beats_baseline"]["value"] == verdict(
        results["findings"]["beats_baseline_tenfold"]["holds"],
        yes="it computes distances rather than guessing", no="it does not beat that guess tenfold")
    hardest = recorded["main.hardest"]["value"]
    assert results["loss_by_length"][str(hardest)] == max(results["loss_by_length"].values())


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
            why = f"{drop.reason} (largest fall {drop.decades:.2f} decades)"
        elif not rival.transition:
            why = f"{rival.reason} (loss after {rival.loss_after:.3g})"
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


