"""The study's perturb-and-recover protocol in chapter 1: summaries, the table, the judgements.

`lib.bfs.study_damage.protocol_on_draws` retrains the draws chapter 1 picks (those nearest the
study's 0.403 in the damage distribution, `lib.chapters.ch1_damage`) on the study's construction
and on the book's; this module turns its records into what the chapter prints and what the index
page's rows read: per draw, the matrix hit and the held-out MSE before and after; the
comparison with the study's one
published curve at every step where both were measured (`StudyPoint`, `RatioPoint`); and the
judgements over all draws, as counts with intervals: the study's construction at the judged step
against the study's value (`StepJudgement`), and the two constructions draw by draw
(`PairJudgement`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from lib.bfs.damage_distribution import Share, share_at_or_below
from lib.bfs.study_damage import PUBLISHED_RECOVERY
from lib.book.tables import markdown_table

#: Names of the two constructions in the records and in the prose.
CONSTRUCTIONS = {"study": "the study's construction", "book": "the book's construction"}


def mse_at(record: dict, step: int) -> float | None:
    """Held-out MSE of a draw at `step`, or None where it was not recorded."""
    return next((loss for at, loss in record["curve"] if at == step), None)


def spread_text(values: list[float]) -> str:
    """"median (min to max)" of values, "0.4" for one value, "n/a" for none."""
    if not values:
        return "n/a"
    if len(values) == 1:
        return f"{values[0]:.3g}"
    return f"{statistics.median(values):.3g} ({min(values):.3g} to {max(values):.3g})"


@dataclass(frozen=True)
class PublishedInRange:
    """The study's one published draw at one step beside the range of this run's draws that the
    damage affected: `within` says whether it lies inside (the study reports one draw, so the
    range is the interval it is read against)."""

    step: int
    published: float
    low: float
    high: float
    draws: int

    @property
    def within(self) -> bool:
        return self.low <= self.published <= self.high


@dataclass(frozen=True)
class StudyPoint(PublishedInRange):
    """The study's published loss at one step beside this run's draws on the study's construction,
    with the draws' median."""

    median: float


def study_points(records: list[dict]) -> list[StudyPoint]:
    """A `StudyPoint` at every step where both the study and this run measured the loss."""
    effective = [r for r in records if r["damage_had_effect"]]
    points = []
    for step, published in PUBLISHED_RECOVERY.items():
        values = [v for v in (mse_at(r, step) for r in effective) if v is not None]
        if values:
            points.append(StudyPoint(step, published, min(values), max(values), len(values),
                                     statistics.median(values)))
    return points


@dataclass(frozen=True)
class RatioPoint(PublishedInRange):
    """How far retraining had brought the loss by one step, relative to right after the damage:
    the study's one draw beside the range of this run's draws with effect on one construction.

    The study's draw started at 0.403 (one damage, one noise); a ratio compares the speed of
    repair without assuming that this run's draws started where the study's did.
    """


def ratio_points(records: list[dict]) -> list[RatioPoint]:
    """A `RatioPoint` at every step after 0 where both the study and this run measured the loss."""
    effective = [r for r in records if r["damage_had_effect"] and r["loss_before"] > 0]
    points = []
    for step, published in PUBLISHED_RECOVERY.items():
        if step == 0:
            continue
        values = [v / r["loss_before"] for r in effective if (v := mse_at(r, step)) is not None]
        if values:
            points.append(RatioPoint(step, published / PUBLISHED_RECOVERY[0], min(values), max(values), len(values)))
    return points


def protocol_table(records: dict[str, list[dict]]) -> str:
    """Markdown table: one row per draw, the matrix hit and each construction's MSE before and after."""
    names = list(records)
    steps = records[names[0]][0]["steps"] if records[names[0]] else 0
    header = ["draw", "matrix replaced by N(0, 1)"]
    for name in names:
        header += [f"{name}'s: MSE intact", f"{name}'s: after damage", f"{name}'s: after {steps:,} steps"]
    rows = []
    for index, first in enumerate(records[names[0]]):
        row = [index + 1, first["what"]]
        for name in names:
            record = records[name][index]
            row += [record["loss_intact"], record["loss_before"],
                    record["loss_after"] if record["damage_had_effect"] else "no effect"]
        rows.append(row)
    return markdown_table(header, rows)


def judged_step(records: list[dict]) -> int:
    """The step the retrained draws are judged at: the last step of the study's published curve
    that every draw recorded (100 at the chapter's defaults), else the run's last step."""
    recorded = set.intersection(*({step for step, _ in r["curve"]} for r in records)) if records else {0}
    published = [step for step in PUBLISHED_RECOVERY if step > 0 and step in recorded]
    return max(published) if published else max(recorded)


def _ratio(record: dict, step: int) -> float | None:
    value = mse_at(record, step)
    return None if value is None or record["loss_before"] <= 0 else value / record["loss_before"]


def _spread(values) -> dict:
    values = list(values)
    if not values:
        return {"values": [], "median": None, "min": None, "max": None}
    return {"values": values, "median": statistics.median(values), "min": min(values), "max": max(values)}


@dataclass(frozen=True)
class StepJudgement:
    """The retrained draws on the study's construction at one step against the study's one draw:
    the MSE (`values`) and the MSE relative to right after the damage (`ratios`), each with how
    many draws are at or below the study's value (the study's value's percentile among them).
    `published` is None where the study printed no loss at `step`."""

    step: int
    published: float | None
    values: tuple[float, ...]
    ratios: tuple[float, ...]

    @property
    def published_ratio(self) -> float | None:
        return None if self.published is None else self.published / PUBLISHED_RECOVERY[0]

    @property
    def within(self) -> bool | None:
        return None if self.published is None else min(self.values) <= self.published <= max(self.values)

    @property
    def reaching(self) -> Share | None:
        return None if self.published is None else share_at_or_below(self.values, self.published)

    @property
    def ratio_reaching(self) -> Share | None:
        return None if self.published is None else share_at_or_below(self.ratios, self.published_ratio)

    def sentence(self) -> str:
        if not self.values:
            return "No retrained draw changed the study's construction's MSE, so nothing compares with the study."
        text = (f"After {self.step:,} steps on the study's construction the {len(self.values)} draws stand at "
                f"{spread_text(list(self.values))} (median, then range)")
        if self.published is None:
            return text + f"; the study printed no loss at step {self.step:,}."
        median, ratio_median = statistics.median(self.values), statistics.median(self.ratios)
        text += (f"; the study's {self.published:.3g} lies {'inside' if self.within else 'outside'} that range: "
                 f"{self.reaching.text('draws')} are at or below it, and their median is "
                 f"{_relative(median, self.published)} the study's. Relative to the MSE right after the damage the "
                 f"study's draw stood at {self.published_ratio:.3f}; these draws at {spread_text(list(self.ratios))}, "
                 f"{self.ratio_reaching.text('draws')} at or below it (repaired at least as fast as the study's draw). "
                 f"Their median MSE fell by {100 * (1 - ratio_median):.1f}% in {self.step:,} steps, the study's "
                 f"draw by {100 * (1 - self.published_ratio):.1f}%: "
                 f"{_times(1 - ratio_median, 1 - self.published_ratio)}.")
        return text

    def as_dict(self) -> dict:
        return {"step": self.step, "published": self.published, "published_ratio": self.published_ratio,
                "within": self.within, "mse": _spread(self.values), "ratio": _spread(self.ratios),
                "at_or_below": self.reaching.as_dict() if self.reaching else None,
                "ratio_at_or_below": self.ratio_reaching.as_dict() if self.ratio_reaching else None}


def _relative(value: float, reference: float) -> str:
    """"12% above" / "5% below" / "equal to": `value` against `reference`."""
    if value == reference:
        return "equal to"
    change = value / reference - 1
    return f"{100 * abs(change):.0f}% {'above' if change > 0 else 'below'}"


def _times(value: float, reference: float) -> str:
    """How `value` compares with `reference` as a factor: "3.1 times less", "1.2 times more", "as much"."""
    if value <= 0 or reference <= 0:
        return "no factor (one of them did not fall)"
    factor = value / reference
    if abs(factor - 1) < 0.05:
        return "about as much"
    return f"{1 / factor:.1f} times less" if factor < 1 else f"{factor:.1f} times more"


def judge_at_step(records: list[dict], step: int) -> StepJudgement:
    """The draws of the study's construction that the damage changed, at `step` (`StepJudgement`)."""
    effective = [r for r in records if r["damage_had_effect"] and mse_at(r, step) is not None]
    return StepJudgement(step, PUBLISHED_RECOVERY.get(step) if step > 0 else None,
                         tuple(mse_at(r, step) for r in effective), tuple(_ratio(r, step) for r in effective))


@dataclass(frozen=True)
class PairJudgement:
    """The same draws on both constructions: per pair, the MSE at `step` relative to right after
    the damage; the book's construction repairs more slowly in a pair where its ratio is higher.
    Pairs in which either damage changed nothing are left out (`left_out`)."""

    step: int
    study_ratios: tuple[float, ...]
    book_ratios: tuple[float, ...]
    book_before: tuple[float, ...]
    left_out: int

    @property
    def book_slower(self) -> Share:
        return Share(sum(b > s for s, b in zip(self.study_ratios, self.book_ratios)), len(self.book_ratios))

    @property
    def book_slower_than_published(self) -> Share | None:
        published = PUBLISHED_RECOVERY.get(self.step)
        if published is None or self.step == 0:
            return None
        return Share(sum(b > published / PUBLISHED_RECOVERY[0] for b in self.book_ratios), len(self.book_ratios))

    def sentence(self) -> str:
        if not self.book_ratios:
            return "No draw changed the MSE of both constructions, so no pair compares their repair."
        study_fall = 1 - statistics.median(self.study_ratios)
        book_fall = 1 - statistics.median(self.book_ratios)
        text = (f"The same draws on the book's construction (same matrix, same noise seed) started at "
                f"{spread_text(list(self.book_before))} and after {self.step:,} steps stood at "
                f"{spread_text(list(self.book_ratios))} of that, against {spread_text(list(self.study_ratios))} on "
                f"the study's construction (median, then range): the book's construction repaired more slowly in "
                f"{self.book_slower.text('pairs')}; its median MSE fell by {100 * book_fall:.1f}% against "
                f"{100 * study_fall:.1f}% ({_times(book_fall, study_fall)})")
        against = self.book_slower_than_published
        if against is not None:
            text += (f", and it fell less than the study's one draw (ratio "
                     f"{PUBLISHED_RECOVERY[self.step] / PUBLISHED_RECOVERY[0]:.3f}) in {against.text('draws')}")
        text += "." + (f" {self.left_out} pair{'s' if self.left_out != 1 else ''} in which a damage changed "
                       f"nothing {'are' if self.left_out != 1 else 'is'} left out." if self.left_out else "")
        return text

    def as_dict(self) -> dict:
        against = self.book_slower_than_published
        return {"step": self.step, "pairs": len(self.book_ratios), "left_out": self.left_out,
                "study_ratio": _spread(self.study_ratios), "book_ratio": _spread(self.book_ratios),
                "book_before": _spread(self.book_before), "book_slower": self.book_slower.as_dict(),
                "book_slower_than_published": against.as_dict() if against else None}


def judge_pairs(records: dict[str, list[dict]], step: int) -> PairJudgement:
    """Pair draw i of the study's construction with draw i of the book's (`PairJudgement`)."""
    pairs = [(s, b) for s, b in zip(records["study"], records["book"])]
    kept = [(s, b) for s, b in pairs if s["damage_had_effect"] and b["damage_had_effect"]
            and _ratio(s, step) is not None and _ratio(b, step) is not None]
    return PairJudgement(step, tuple(_ratio(s, step) for s, _ in kept), tuple(_ratio(b, step) for _, b in kept),
                         tuple(b["loss_before"] for _, b in kept), len(pairs) - len(kept))


def index_row_numbers(records: dict[str, list[dict]], steps: int) -> dict:
    """What the index page's rows of chapter 1 read: the step count, the study's construction's
    losses against the study's (`points`), each construction's ratios (`ratios`), the judgement of
    the study's construction at the judged step (`at_step`) and of the pairs (`pairs`)."""
    points = study_points(records["study"])
    step = judged_step(records["study"])
    return {"steps": steps,
            "points": [{"step": p.step, "published": p.published, "low": p.low, "high": p.high,
                        "median": p.median, "draws": p.draws, "within": p.within} for p in points],
            "ratios": {name: [{"step": p.step, "published": p.published, "low": p.low, "high": p.high,
                               "draws": p.draws, "within": p.within} for p in ratio_points(runs)]
                       for name, runs in records.items()},
            "at_step": judge_at_step(records["study"], step).as_dict(),
            "pairs": judge_pairs(records, step).as_dict() if "book" in records else None}


__all__ = [
    "CONSTRUCTIONS", "PairJudgement", "RatioPoint", "StepJudgement", "StudyPoint",
    "index_row_numbers", "judge_at_step", "judge_pairs", "judged_step", "mse_at", "protocol_table", "ratio_points",
    "spread_text", "study_points",
]
