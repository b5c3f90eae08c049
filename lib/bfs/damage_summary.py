"""Where the study's one damage falls among all of its kind, and which draws are retrained (chapter 1).

`lib.bfs.damage_distribution.damage_distribution` measures the MSE right after the study's damage
for every matrix of the six weight lists and several noise draws each; this module turns those
records into the numbers chapter 1 cites and writes: the quantiles of the distribution, the
percentile of the study's 0.403 with its Wilson interval, which matrices reach it
(`DistributionSummary`), and the draws nearest it that the chapter retrains (`Selection`).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass

from lib.bfs.damage_distribution import Share, quantile_summary, share_at_or_below
from lib.bfs.study_damage import STUDY_BATCH_SIZE, WEIGHT_LISTS


#: The study's draw was damaged in one of these; "answer-head key or query" groups them.
ANSWER_KEY_QUERY = ("answer key", "answer query")


@dataclass(frozen=True)
class ListSummary:
    """The draws that hit one weight list: their MSE and which of its matrices reach the target."""

    weight_list: str
    mse: tuple[float, ...]
    reaching: Share
    #: (matrix index, draws of it at or below the target, draws of it) for every matrix with one.
    matrices: tuple[tuple[int, int, int], ...]


def summarize_list(weight_list: str, records: list[dict], target: float) -> ListSummary:
    mine = [r for r in records if r["weight_list"] == weight_list]
    by_matrix = {}
    for record in mine:
        k, n = by_matrix.get(record["index"], (0, 0))
        by_matrix[record["index"]] = (k + (record["mse"] <= target), n + 1)
    return ListSummary(weight_list, tuple(r["mse"] for r in mine), share_at_or_below((r["mse"] for r in mine), target),
                       tuple((index, k, n) for index, (k, n) in sorted(by_matrix.items()) if k))


@dataclass(frozen=True)
class DistributionSummary:
    """The MSE right after the damage over every matrix and noise draw, against the study's value."""

    target: float
    noise_draws: int
    quantiles: dict[str, float]
    reaching: Share
    reaching_answer_key_query: Share
    reaching_other: Share
    lists: tuple[ListSummary, ...]

    @property
    def draws(self) -> int:
        return self.reaching.n

    @property
    def matrices(self) -> int:
        return self.draws // self.noise_draws

    @property
    def reaching_matrices(self) -> int:
        """How many matrices have at least one noise draw at or below the target."""
        return sum(len(summary.matrices) for summary in self.lists)

    @property
    def reaching_lists(self) -> int:
        """How many of the six weight lists have a matrix with a draw at or below the target."""
        return sum(bool(summary.matrices) for summary in self.lists)

    def as_dict(self) -> dict:
        return {"target": self.target, "draws": self.draws, "matrices": self.matrices,
                "noise_draws": self.noise_draws, "quantiles": self.quantiles,
                "percentile": self.reaching.as_dict(),
                "answer_key_query": self.reaching_answer_key_query.as_dict(),
                "other": self.reaching_other.as_dict(),
                "by_list": [{"weight_list": s.weight_list, **s.reaching.as_dict(),
                             "median": statistics.median(s.mse),
                             "matrices": [{"index": i, "k": k, "n": n} for i, k, n in s.matrices]}
                            for s in self.lists]}


def summarize_distribution(records: list[dict], target: float) -> DistributionSummary:
    """Quantiles, the target's percentile and which matrices reach it, from `damage_distribution` records."""
    noise_draws = max(r["noise_draw"] for r in records) + 1
    answer = [r["mse"] for r in records if r["weight_list"] in ANSWER_KEY_QUERY]
    other = [r["mse"] for r in records if r["weight_list"] not in ANSWER_KEY_QUERY]
    return DistributionSummary(
        target, noise_draws, quantile_summary(r["mse"] for r in records),
        share_at_or_below((r["mse"] for r in records), target), share_at_or_below(answer, target),
        share_at_or_below(other, target),
        tuple(summarize_list(name, records, target) for name in WEIGHT_LISTS))


@dataclass(frozen=True)
class Selection:
    """The draws retrained: those nearest the target on a log scale, their band and what they hit."""

    target: float
    low: float
    high: float
    #: Median over the picked draws of the standard error of their held-out MSE, relative to it.
    relative_standard_error: float
    n_held_out: int
    hits: dict[str, int]
    #: Per weight list, how many of its matrices the picked draws hit (several noise draws can hit one).
    matrices: dict[str, int]

    @property
    def count(self) -> int:
        return sum(self.hits.values())

    @property
    def half_width(self) -> float:
        """Largest relative distance of a picked draw from the target, |MSE / target - 1|."""
        return max(abs(self.low / self.target - 1), abs(self.high / self.target - 1))

    @property
    def study_standard_error(self) -> float:
        """The same relative standard error over the study's batch of 512 graphs."""
        return self.relative_standard_error * math.sqrt(self.n_held_out / STUDY_BATCH_SIZE)

    @property
    def widths(self) -> float:
        """The band's half-width in standard errors of one draw's MSE over the study's batch."""
        return self.half_width / self.study_standard_error

    @property
    def within_two(self) -> bool:
        """The band reaches at most two standard errors from the target: the study's own measurement
        could not tell these draws from its value."""
        return self.widths <= 2

    def as_dict(self) -> dict:
        return {"target": self.target, "count": self.count, "low": self.low, "high": self.high,
                "half_width": self.half_width, "relative_standard_error": self.relative_standard_error,
                "study_standard_error": self.study_standard_error,
                "n_held_out": self.n_held_out, "hits": self.hits, "matrices": self.matrices}


def summarize_selection(selected: list[dict], target: float, n_held_out: int) -> Selection:
    """What `lib.bfs.damage_distribution.nearest_draws` picked, for the prose and the results."""
    values = [r["mse"] for r in selected]
    hits = Counter(r["weight_list"] for r in selected)
    matrices = Counter(weight_list for weight_list, _ in {(r["weight_list"], r["index"]) for r in selected})
    return Selection(target, min(values), max(values),
                     statistics.median(r["standard_error"] / r["mse"] for r in selected), n_held_out,
                     {name: hits[name] for name in WEIGHT_LISTS if hits[name]},
                     {name: matrices[name] for name in WEIGHT_LISTS if hits[name]})


__all__ = [
    "ANSWER_KEY_QUERY", "DistributionSummary", "ListSummary", "Selection", "summarize_distribution",
    "summarize_list", "summarize_selection",
]
