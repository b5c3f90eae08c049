"""Chapter 2's drops against their rivals (`notebooks/02_training.py`): the constant rival
(`lib.paths.constant_rival`) and the detector's settings (`lib.paths.drop_sensitivity`), for the
transition study's seeds and for the main run, as tables, sentences, findings and results.

A drop of the detector (`lib.paths.phase_transitions`) becomes a *transition* when the constant
rival is ruled out for it, and a transition *holds* when it is found at every row of the
sensitivity table. The chapter's order of learning is read off the transitions that hold, over
the lengths with at least `MIN_SHARE` of the training distribution.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence

from lib.book.tables import format_value, markdown_table
from lib.chapters.ch2_transitions import join_words, length_name, lengths_phrase
from lib.paths.constant_rival import RivalVerdict, judge_drops
from lib.paths.drop_sensitivity import Found, Sensitivity, sensitivity
from lib.paths.evaluation_curves import EvaluationCurves
from lib.paths.phase_transitions import Drop, DropOrder, DropSettings, detect_drops, drop_order
from lib.paths.transition_study import TransitionCurves

#: Lengths with at least this share of the training distribution enter the order of learning.
MIN_SHARE = 0.02
#: Fewest evaluation examples of a label in the main run for its curve to be analysed.
MIN_EVAL_COUNT = 20


@dataclasses.dataclass(frozen=True)
class Analysis:
    """One set of curves (one seed, or the main run) analysed at one choice of settings."""

    drops: dict[int, Drop]
    verdicts: dict[int, RivalVerdict]

    def found(self) -> dict[int, tuple[int | None, bool, int | None, int | None]]:
        """{length: (drop step or None, is a transition, start, end)}."""
        return {k: (d.step, self.verdicts[k].transition, d.start, d.end) for k, d in self.drops.items()}


def analyse(steps: Sequence[int], losses: Mapping[int, Sequence[float]], means: Mapping[int, Sequence[float]],
            shares: Mapping[int, float], settings: DropSettings) -> Analysis:
    """Drops of every curve and each drop against the constant rival."""
    drops = detect_drops(steps, losses, settings)
    return Analysis(drops, judge_drops(steps, drops, losses, means, shares, settings))


def study_curves(curves: TransitionCurves, index: int) -> tuple[dict, dict]:
    """({length: loss curve}, {length: mean-prediction curve}) of one seed of the study."""
    return ({k: curves.curve(index, k) for k in curves.lengths},
            {k: curves.mean_curve(index, k) for k in curves.lengths})


def analyse_study(curves: TransitionCurves, shares: Mapping[int, float], settings: DropSettings) -> list[Analysis]:
    """Every seed of the transition study analysed at `settings`."""
    return [analyse(curves.steps, *study_curves(curves, i), shares, settings) for i in range(len(curves.seeds))]


def study_sensitivity(curves: TransitionCurves, shares: Mapping[int, float], settings: DropSettings) -> Sensitivity:
    """The sensitivity table of the study: (seed index, length) keys."""
    def found(s: DropSettings) -> Found:
        return {(i, k): f for i, analysis in enumerate(analyse_study(curves, shares, s))
                for k, f in analysis.found().items()}
    return sensitivity(found, settings)


def main_curves(curves: EvaluationCurves, min_count: int = MIN_EVAL_COUNT) -> tuple[dict, dict]:
    """({label: loss curve}, {label: mean-prediction curve}) of the main run's labels with at
    least `min_count` evaluation examples."""
    kept = [k for k, n in zip(curves.labels, curves.counts) if n >= min_count]
    return {k: curves.curve(k) for k in kept}, {k: curves.mean_curve(k) for k in kept}


def main_shares(curves: EvaluationCurves) -> dict[int, float]:
    """{label: share} of the main run's evaluation batch (drawn like its training graphs)."""
    total = sum(curves.counts)
    return {k: n / total for k, n in zip(curves.labels, curves.counts)}


def analyse_main(curves: EvaluationCurves, settings: DropSettings) -> Analysis:
    return analyse(curves.steps, *main_curves(curves), main_shares(curves), settings)


def main_sensitivity(curves: EvaluationCurves, settings: DropSettings) -> Sensitivity:
    """The sensitivity table of the main run: (0, label) keys."""
    return sensitivity(lambda s: {(0, k): f for k, f in analyse_main(curves, s).found().items()}, settings)


def common_lengths(lengths: Sequence[int], shares: Mapping[int, float], min_share: float = MIN_SHARE) -> list[int]:
    """The labels among `lengths` with at least `min_share` of the distribution `shares`."""
    return [k for k in lengths if shares.get(k, 0.0) >= min_share]


def main_lengths(curves: EvaluationCurves) -> list[int]:
    """The main run's labels with at least `MIN_SHARE` of its evaluation batch and at least
    `MIN_EVAL_COUNT` examples there (the labels its sentences are about)."""
    kept = main_curves(curves)[0]
    return [k for k in common_lengths(curves.labels, main_shares(curves)) if k in kept]


def held_steps(sens: Sensitivity, n_seeds: int, lengths: Sequence[int]) -> list[dict[int, int | None]]:
    """Per seed, {length: step of its transition if it holds across the table, else None}."""
    return [{k: sens.holds.get((i, k)) for k in lengths} for i in range(n_seeds)]


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


def order_text(order: DropOrder, n_seeds: int, unreachable_label: int) -> str:
    """The order of the transitions that hold, as far as it holds in every seed, in words."""
    if not order.groups:
        text = f"No length has a transition that holds in all {n_seeds} seeds"
    elif len(order.groups) == 1:
        group = order.groups[0]
        text = (f"In all {n_seeds} seeds only {lengths_phrase(group, unreachable_label)} "
                f"{'has a transition that holds' if len(group) == 1 else 'have transitions that hold'}"
                + ("" if len(group) == 1 else ", in an order that changes between seeds"))
    else:
        parts = [lengths_phrase(g, unreachable_label) + (" (in an order that changes between seeds)" if len(g) > 1 else "")
                 for g in order.groups]
        text = f"In every one of the {n_seeds} seeds, " + ", then ".join(parts) + " have transitions that hold, in this order"
    extras = []
    if order.sometimes:
        extras.append(f"{lengths_phrase(order.sometimes, unreachable_label)}: in some seeds only")
    if order.never:
        extras.append(f"{lengths_phrase(order.never, unreachable_label)}: in none")
    return text + ("; " + "; ".join(extras) if extras else "") + "."


def length_verdicts(analyses: Sequence[Analysis], sens: Sensitivity, lengths: Sequence[int],
                    unreachable_label: int) -> str:
    """Per length, one sentence: seeds with a drop, with the constant rival ruled out, with a
    transition that holds across the table, and why the others are not."""
    n = len(analyses)
    lines = []
    for k in lengths:
        name = "Unreachable targets" if k == unreachable_label else f"Length {k}"
        dropped = [i for i, a in enumerate(analyses) if a.drops[k].dropped]
        ruled = [i for i in dropped if analyses[i].verdicts[k].transition]
        held = [i for i in range(n) if (i, k) in sens.holds]
        text = f"{name}: a drop in {len(dropped)} of {n} seeds"
        if dropped:
            text += f", the constant rival ruled out in {len(ruled)}"
            not_ruled = [i for i in dropped if i not in ruled]
            if not_ruled:
                v = analyses[not_ruled[0]].verdicts[k]
                text += f" (not in seed {not_ruled[0]}: {v.reason})"
        text += f"; a transition that holds across the table in {len(held)} of {n}"
        if held:
            text += " (steps " + ", ".join(str(sens.holds[(i, k)]) for i in held) + ")"
        if not dropped:
            first = analyses[0].drops[k]
            text += f" (seed 0: {first.reason}, largest fall {first.decades:.2f} decades)"
        lines.append(text + ".")
    return "\n".join(f"- {line}" for line in lines)


def analyses_results(analyses: Sequence[Analysis], lengths: Sequence[int]) -> dict:
    """Per length, the verdict of every seed (JSON)."""
    return {k: [a.verdicts[k].to_dict() for a in analyses] for k in lengths}


def study_findings(analyses: Sequence[Analysis], sens: Sensitivity, order: DropOrder,
                   lengths: Sequence[int], unreachable_label: int) -> dict[str, dict]:
    """Whether each of the chapter's claims about the study holds in this run, with its counts:
    name -> {"holds": bool, "events": seeds (or groups) behind it, "seeds": seeds read}.
    Reported, never asserted (an outcome of training can change with the CPU)."""
    n = len(analyses)
    held = held_steps(sens, n, lengths)
    reachable = [k for k in lengths if k != unreachable_label]

    def first(per_seed: dict) -> bool:
        found = {k: s for k, s in per_seed.items() if s is not None}
        return 1 in found and all(found[1] < s for k, s in found.items() if k != 1)

    found = {
        "length_1_transition_holds_in_every_seed": sens.held_count(1) if 1 in lengths else 0,
        "length_1_first_in_every_seed": sum(first(h) for h in held),
        "length_2_transition_holds_in_every_seed": sens.held_count(2) if 2 in lengths else 0,
        "constant_rival_ruled_out_for_length_2_in_every_seed": sum(
            a.verdicts[2].transition for a in analyses) if 2 in lengths else 0,
        "a_second_length_holds_in_every_seed": sum(
            any(s is not None for k, s in h.items() if k in reachable and k != 1) for h in held),
    }
    results = {name: {"holds": events == n, "events": events, "seeds": n} for name, events in found.items()}
    results["one_length_at_a_time"] = {
        "holds": len(order.groups) >= 2 and order.holds_over_seeds and not order.sometimes,
        "events": len(order.groups), "seeds": n}
    return results


def held_only(analyses: Sequence[Analysis], sens: Sensitivity) -> list[dict[int, Drop]]:
    """Per seed, {length: its drop if its transition holds across the table, else "no drop"}
    (what the figures mark)."""
    none = Drop(False, None, None, None, 0.0, None, None, None, "does not hold")
    return [{k: (d if (i, k) in sens.holds else none) for k, d in a.drops.items()} for i, a in enumerate(analyses)]


def study_text(analyses: Sequence[Analysis], sens: Sensitivity, order: DropOrder, lengths: Sequence[int],
               shares: Mapping[int, float], unreachable_label: int, chance: float | None) -> str:
    """The study's findings about drops, rival and order, each from the run's numbers (markdown)."""
    n = len(analyses)
    drops = sum(a.drops[k].dropped for a in analyses for k in lengths)
    transitions = sum(a.verdicts[k].transition for a in analyses for k in lengths)
    held = sum(1 for (_, k) in sens.holds if k in lengths)
    lines = [f"**Over {n} seeds and the {len(lengths)} labels with at least {100 * MIN_SHARE:.0f}% of the training "
             f"graphs** ({lengths_phrase(lengths, unreachable_label)}), the detector at its defaults finds {drops} drops; "
             f"the constant rival is ruled out for {transitions} of them, and {held} of those transitions hold at "
             f"every row of the sensitivity table. {order_text(order, n, unreachable_label)}"]
    if chance is not None and len(order.groups) > 1:
        lines[0] += (f" If the lengths with such transitions had them in a random order, this order would hold in all "
                     f"{n} seeds with probability {chance:.3g}.")
    lines.append(length_verdicts(analyses, sens, lengths, unreachable_label))
    return "\n\n".join(lines)


def main_run_text(analysis: Analysis, sens: Sensitivity, lengths: Sequence[int], unreachable_label: int,
                  n_max: int) -> str:
    """What the detector and the rival find in the main run's evaluation curves, in words."""
    parts = []
    for k in lengths:
        drop, verdict = analysis.drops[k], analysis.verdicts[k]
        name = "unreachable" if k == unreachable_label else f"length {k}"
        if not drop.dropped:
            parts.append(f"{name}: no drop ({drop.reason})")
        elif not verdict.transition:
            parts.append(f"{name}: a drop at step {drop.step}, but not a transition ({verdict.reason})")
        elif (0, k) not in sens.holds:
            lost = [f"{setting} = {format_value(value, 3)}" + (" (none)" if step is None else f" (step {step})")
                    for setting, value, step in sens.lost_at((0, k))]
            parts.append(f"{name}: a transition at step {drop.step} ({drop.decades:.1f} decades in {drop.width} steps) "
                         f"that does not hold across the table (missing or dated elsewhere at {', '.join(lost[:4])}"
                         + (", ..." if len(lost) > 4 else "") + ")")
        else:
            low, high = sens.step_range[(0, k)]
            parts.append(f"{name}: a transition at step {drop.step} ({drop.decades:.1f} decades in {drop.width} steps, "
                         f"steps {low} to {high} across the table) that holds")
    held = [k for k in lengths if (0, k) in sens.holds]
    return (f"**Main run (graphs of up to {n_max} vertices).** Among the labels with at least "
            f"{100 * MIN_SHARE:.0f}% of the evaluation examples, "
            + (f"{lengths_phrase(held, unreachable_label)} {'has a transition that holds' if len(held) == 1 else 'have transitions that hold'}"
               if held else "none has a transition that holds")
            + ": " + "; ".join(parts) + ".")


def summary_text(summary: dict, training, curves: TransitionCurves, analyses: Sequence[Analysis], sens: Sensitivity,
                 order: DropOrder, lengths: Sequence[int], unreachable_label: int, published: dict, main_order,
                 main_sens: Sensitivity, main_lengths: Sequence[int], main_unreachable_label: int) -> str:
    """The chapter's closing bullets, every number from the run (`unreachable_label`: the
    transition study's, `main_unreachable_label`: the main run's; `main_order`: the main run's
    `lib.chapters.ch2.LearningOrder`)."""
    n = len(analyses)
    examples = summary["steps"] * training.batch_size
    first = [sens.holds.get((i, 1)) for i in range(n)]
    length_one = (f"length 1 has a transition that holds in {sum(s is not None for s in first)} of {n} seeds"
                  + (" (steps " + ", ".join(str(s) for s in first if s is not None) + "; the published run: about "
                     "step 50)" if any(s is not None for s in first) else ""))
    rival = "; ".join(
        f"{'unreachable' if k == unreachable_label else f'length {k}'}: {sum(a.drops[k].dropped for a in analyses)} drops, "
        f"{sum(a.verdicts[k].transition for a in analyses)} ruled out, {sens.held_count(k)} hold"
        for k in lengths if k != 1)
    one_at_a_time = len(order.groups) >= 2 and order.holds_over_seeds and not order.sometimes
    main_held = [k for k in main_lengths if (0, k) in main_sens.holds]
    return "\n".join([
        f"- The main run, a {training.n_layers}-layer transformer trained on {examples:,} fresh graphs of up to "
        f"{training.n_max} vertices (the model chapters 3 and 7 build on), reaches a mean squared error of "
        f"{summary['final_loss']:.4f} on held-out graphs, against {summary['constant_prediction_loss']:.3f} for "
        f"always predicting the mean: it computes distances rather than guessing. The published model, larger "
        f"and trained on about {3.14e8 / examples:,.0f} times more examples, reached {published['final_loss']} "
        f"{{cite:p}}`wang2024shortest`.",
        f"- At the study's graph size (up to {curves.config.n_max} vertices, {n} models of "
        f"{curves.config.n_layers} layers, {curves.steps[-1]} steps each), {length_one}. {order_text(order, n, unreachable_label)}",
        f"- Beyond length 1, per length over the {n} seeds (drops at the detector's defaults, of which the constant "
        f"rival is ruled out, of which hold across the sensitivity table): {rival}. \"The loss falls one path "
        f"length at a time\" {'holds' if one_at_a_time else 'does not hold'} over these seeds: "
        + (f"{len(order.groups)} lengths have transitions that hold, each in its own place in every seed." if one_at_a_time
           else "it would need at least two lengths with transitions that hold in every seed, in one order."),
        f"- In the main run, on graphs of up to {training.n_max} vertices, "
        + (f"{lengths_phrase(main_held, main_unreachable_label)} {'has a transition that holds' if len(main_held) == 1 else 'have transitions that hold'}"
           if main_held else "no length has a transition that holds") + ".",
        f"- At the end of the main run the largest remaining loss is on {main_order.hardest_name} "
        f"({main_order.hardest_loss:.3f}, on {main_order.hardest_count} of {training.eval_size} evaluation "
        f"examples, which are drawn like the training graphs): at that share about "
        f"{main_order.hardest_count / training.eval_size * examples:,.0f} of the {examples:,} training graphs "
        f"had that length.",
    ])


__all__ = ["Analysis", "MIN_EVAL_COUNT", "MIN_SHARE", "analyse", "analyse_main", "analyse_study", "analyses_results",
           "common_lengths", "held_only", "held_steps", "main_run_text", "study_text", "summary_text", "length_verdicts", "main_curves", "main_lengths", "main_sensitivity", "main_shares",
           "order_text", "rival_table", "sensitivity_table", "study_curves", "study_findings", "study_sensitivity"]
