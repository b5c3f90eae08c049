"""The study's perturb-and-recover protocol judged against the study's published curve (chapter 1).

`lib.bfs.study_damage.protocol_on_draws` retrains the draws chapter 1 picks (those nearest the
study's 0.403 in the damage distribution, `lib.bfs.damage_summary`) on the study's construction
and on the book's; this module compares its records with the study's one published curve at
every step where both were measured (`StudyPoint`, `RatioPoint`) and judges all draws, as counts
with intervals: the study's construction at the judged step against the study's value
(`StepJudgement`), and the two constructions draw by draw (`PairJudgement`); `index_row_numbers`
gathers what the index page's rows of chapter 1 read.

The draws nearest the study's value are not independent events: several hit the same matrix
(with other noise), and a matrix's draws tend to end alike. A `StepJudgement` therefore also
counts by matrix (one median per matrix, `matrix_values`), and says which draws repaired almost
completely (`REPAIRED_BELOW`): at the chapter's defaults the outcome is bimodal, a few draws
collapse to near zero while the rest barely move.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from lib.bfs.damage_distribution import Share, share_at_or_below
from lib.bfs.study_damage import PUBLISHED_RECOVERY


#: A draw "repaired" when its MSE fell below this share of its value right after the damage.
REPAIRED_BELOW = 0.1


def mse_at(record: dict, step: int) -> float | None:
    """Held-out MSE of a draw at `step`, or None where it was not recorded."""
    return next((loss for at, loss in record["curve"] if at == step), None)


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
    matrices: tuple[str, ...] = ()

    def _by_matrix(self, values) -> dict[str, list[float]]:
        grouped: dict[str, list[float]] = {}
        for matrix, value in zip(self.matrices, values):
            grouped.setdefault(matrix, []).append(value)
        return grouped

    @property
    def matrix_values(self) -> dict[str, float]:
        """Per matrix hit, the median MSE of its draws at `step`: one value per independent unit."""
        return {m: statistics.median(v) for m, v in sorted(self._by_matrix(self.values).items())}

    @property
    def matrix_ratios(self) -> dict[str, float]:
        """Per matrix hit, the median of its draws' MSE at `step` relative to right after the damage."""
        return {m: statistics.median(v) for m, v in sorted(self._by_matrix(self.ratios).items())}

    @property
    def matrix_within(self) -> bool | None:
        """Whether the study's value lies inside the range of the matrices' medians."""
        medians = list(self.matrix_values.values())
        return None if self.published is None or not medians else min(medians) <= self.published <= max(medians)

    @property
    def repaired(self) -> tuple[str, ...]:
        """The matrix of each draw that repaired almost completely (`REPAIRED_BELOW`), in draw order."""
        return tuple(m for m, r in zip(self.matrices, self.ratios) if r < REPAIRED_BELOW)

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

    @property
    def median(self) -> float | None:
        """Median MSE of the draws at `step` (None without draws)."""
        return statistics.median(self.values) if self.values else None

    @property
    def ratio_median(self) -> float | None:
        """Median of the draws' MSE at `step` relative to right after the damage (None without draws)."""
        return statistics.median(self.ratios) if self.ratios else None

    @property
    def median_change(self) -> float | None:
        """The median MSE relative to the study's value, minus 1 (0.07: 7% above it)."""
        if self.median is None or not self.published:
            return None
        return self.median / self.published - 1

    @property
    def fall(self) -> float | None:
        """How much the draws' median MSE fell by `step`, as a share of the MSE right after the damage."""
        return None if self.ratio_median is None else 1 - self.ratio_median

    @property
    def published_fall(self) -> float | None:
        """The same for the study's one draw (None where it printed no loss at `step`)."""
        return None if self.published_ratio is None else 1 - self.published_ratio

    def as_dict(self) -> dict:
        return {"step": self.step, "published": self.published, "published_ratio": self.published_ratio,
                "within": self.within, "mse": _spread(self.values), "ratio": _spread(self.ratios),
                "matrices": {"count": len(self.matrix_values), "within": self.matrix_within,
                             "draws": {m: len(v) for m, v in sorted(self._by_matrix(self.values).items())},
                             "mse": _spread(self.matrix_values.values()),
                             "ratio": _spread(self.matrix_ratios.values()),
                             "repaired_below": REPAIRED_BELOW, "repaired_draws": len(self.repaired),
                             "repaired_matrices": sorted(set(self.repaired)),
                             "unrepaired_mse": _spread(v for m, v in self.matrix_values.items()
                                                       if self.matrix_ratios[m] >= REPAIRED_BELOW),
                             "unrepaired_ratio": _spread(r for r in self.matrix_ratios.values()
                                                         if r >= REPAIRED_BELOW)},
                "at_or_below": self.reaching.as_dict() if self.reaching else None,
                "ratio_at_or_below": self.ratio_reaching.as_dict() if self.ratio_reaching else None}


def fall_factor(value: float | None, reference: float | None) -> float | None:
    """`value / reference`, how many times one fall is another; None where either is missing or
    did not fall (0 or below)."""
    if value is None or reference is None or value <= 0 or reference <= 0:
        return None
    return value / reference


def judge_at_step(records: list[dict], step: int) -> StepJudgement:
    """The draws of the study's construction that the damage changed, at `step` (`StepJudgement`)."""
    effective = [r for r in records if r["damage_had_effect"] and mse_at(r, step) is not None]
    return StepJudgement(step, PUBLISHED_RECOVERY.get(step) if step > 0 else None,
                         tuple(mse_at(r, step) for r in effective), tuple(_ratio(r, step) for r in effective),
                         tuple(f"{r['weight_list']}, {r['matrix']}" for r in effective))


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

    @property
    def study_fall(self) -> float | None:
        """How much the median MSE of the study's construction fell, relative to right after the damage."""
        return 1 - statistics.median(self.study_ratios) if self.study_ratios else None

    @property
    def book_fall(self) -> float | None:
        """The same for the book's construction."""
        return 1 - statistics.median(self.book_ratios) if self.book_ratios else None

    @property
    def published_ratio(self) -> float | None:
        """The study's one draw at `step` relative to right after the damage (None where it printed none)."""
        published = PUBLISHED_RECOVERY.get(self.step)
        return None if published is None or self.step == 0 else published / PUBLISHED_RECOVERY[0]

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
    "REPAIRED_BELOW", "fall_factor", "index_row_numbers", "judge_at_step", "judge_pairs", "judged_step", "mse_at",
    "PairJudgement", "PublishedInRange", "ratio_points", "RatioPoint", "StepJudgement", "study_points",
    "StudyPoint",
]
