"""Drops judged against their rivals: which are transitions, which hold at every setting of the
detector, and what that says over the seeds and in the main run (chapter 2).

A drop of the detector (`lib.paths.phase_transitions`) becomes a *transition* when the constant
rival (`lib.paths.constant_rival`) is ruled out for it, and a transition *holds* when it is
found at every row of the sensitivity table (`lib.paths.drop_sensitivity`). This module
analyses the transition study's seeds (`lib.paths.transition_study`) and the main run's
evaluation curves (`lib.paths.evaluation_curves`) so, counts the outcomes per length
(`LengthCounts`) and over the study (`StudyCounts`), and states the chapter's findings as
booleans with their counts (`study_findings`, `chapter_findings`). The order of learning is read
off the transitions that hold, over the lengths with at least `MIN_SHARE` of the training
distribution.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from lib.paths.constant_rival import RivalVerdict, judge_drops
from lib.paths.drop_sensitivity import Found, Sensitivity, sensitivity
from lib.paths.evaluation_curves import EvaluationCurves
from lib.paths.phase_transitions import Drop, DropOrder, DropSettings, detect_drops
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


def one_length_at_a_time(order: DropOrder) -> bool:
    """Whether "the loss falls one path length at a time" holds over the seeds: at least two
    groups of lengths with transitions that hold in every seed, in one order, and no length
    that holds in some seeds only."""
    return len(order.groups) >= 2 and order.holds_over_seeds and not order.sometimes


@dataclasses.dataclass(frozen=True)
class LengthCounts:
    """One length over the seeds: how many have a drop at the detector's defaults, how many of
    those rule out the constant rival, and in which the transition holds across the table."""

    length: int
    seeds: int
    dropped: int
    ruled_out: int
    held_steps: tuple[int, ...]          # step of each seed whose transition holds
    first_not_ruled: int | None          # first seed with a drop whose rival is not ruled out
    first_not_ruled_reason: str          # its verdict's reason ("" if none)
    first_seed_reason: str               # the first seed's drop reason when no seed has a drop
    first_seed_decades: float            # the first seed's largest fall (decades)

    @property
    def held(self) -> int:
        return len(self.held_steps)


def length_counts(analyses: Sequence[Analysis], sens: Sensitivity, lengths: Sequence[int]) -> list[LengthCounts]:
    """Per length, its `LengthCounts` over the seeds of `analyses`."""
    n = len(analyses)
    counts = []
    for k in lengths:
        dropped = [i for i, a in enumerate(analyses) if a.drops[k].dropped]
        ruled = [i for i in dropped if analyses[i].verdicts[k].transition]
        not_ruled = [i for i in dropped if i not in ruled]
        first = analyses[0].drops[k]
        counts.append(LengthCounts(
            k, n, len(dropped), len(ruled), tuple(sens.holds[(i, k)] for i in range(n) if (i, k) in sens.holds),
            not_ruled[0] if not_ruled else None,
            analyses[not_ruled[0]].verdicts[k].reason if not_ruled else "",
            "" if dropped else first.reason, first.decades))
    return counts


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
        "holds": one_length_at_a_time(order),
        "events": len(order.groups), "seeds": n}
    return results


def held_only(analyses: Sequence[Analysis], sens: Sensitivity) -> list[dict[int, Drop]]:
    """Per seed, {length: its drop if its transition holds across the table, else "no drop"}
    (what the figures mark)."""
    none = Drop(False, None, None, None, 0.0, None, None, None, "does not hold")
    return [{k: (d if (i, k) in sens.holds else none) for k, d in a.drops.items()} for i, a in enumerate(analyses)]


@dataclasses.dataclass(frozen=True)
class StudyCounts:
    """The transition study over its seeds and the common lengths: drops at the detector's
    defaults, of which transitions (the constant rival ruled out), of which hold across the
    sensitivity table; the same counts beyond length 1; and length 1's held steps per seed."""

    seeds: int
    lengths: int
    drops: int
    transitions: int
    held: int
    drops_beyond_1: int
    transitions_beyond_1: int
    held_beyond_1: int
    length_1_held_steps: tuple[int, ...]


def study_counts(analyses: Sequence[Analysis], sens: Sensitivity, lengths: Sequence[int]) -> StudyCounts:
    """The `StudyCounts` of `analyses` over `lengths`."""
    n = len(analyses)
    beyond = [k for k in lengths if k != 1]
    return StudyCounts(
        n, len(lengths),
        sum(a.drops[k].dropped for a in analyses for k in lengths),
        sum(a.verdicts[k].transition for a in analyses for k in lengths),
        sum(1 for (_, k) in sens.holds if k in lengths),
        sum(a.drops[k].dropped for a in analyses for k in beyond),
        sum(a.verdicts[k].transition for a in analyses for k in beyond),
        sum(1 for (_, k) in sens.holds if k in beyond),
        tuple(s for s in (sens.holds.get((i, 1)) for i in range(n)) if s is not None))


def chapter_findings(summary: dict, analyses: Sequence[Analysis], sens: Sensitivity, order: DropOrder,
                     lengths: Sequence[int], unreachable_label: int, main_sens: Sensitivity) -> dict[str, dict]:
    """The chapter's findings, each {"holds", "events", "seeds"}: whether the main run beats the
    mean-label baseline tenfold, the study's (`study_findings`) and whether the main run's length 2
    has a transition that holds. Reported, never asserted."""
    beats = summary["final_loss"] * 10 < summary["constant_prediction_loss"]
    return {
        "beats_baseline_tenfold": {"holds": beats, "events": int(beats), "seeds": 1},
        **study_findings(analyses, sens, order, lengths, unreachable_label),
        "main_run_length_2_transition_holds": {"holds": (0, 2) in main_sens.holds,
                                               "events": int((0, 2) in main_sens.holds), "seeds": 1},
    }


__all__ = [
    "analyse", "analyse_main", "analyse_study", "analyses_results", "Analysis", "chapter_findings",
    "common_lengths", "held_only", "held_steps", "length_counts", "LengthCounts", "main_curves",
    "main_lengths", "main_sensitivity", "main_shares", "MIN_EVAL_COUNT", "MIN_SHARE", "one_length_at_a_time",
    "study_counts", "study_curves", "study_findings", "study_sensitivity", "StudyCounts",
]
