"""End-of-training measures compared across outcomes: means per outcome, comparisons,
correlations and AUCs (chapter 5).

From the measured seeds of a sweep (`lib.grokking.end_of_training.EndOfTraining`):

* `outcome_summaries`: per outcome (grokked S4, grokked A4 x Z2, neither) the number of seeds and
  the mean of each measure with a bootstrap interval; `outcome_comparison` compares two outcomes
  (which is lower, whether the intervals are apart);
* `measure_correlations`: Pearson and Spearman correlations of `CORRELATED_PAIRS` over the seeds;
* `outcome_aucs`: how well each measure tells the outcomes apart (ROC AUC with a bootstrap
  interval): grokked either group against neither, and S4 against A4 x Z2 among the grokkers;
  `strongest_separator` picks the measure farthest from chance.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.book.statistics import Estimate, bootstrap, mean_estimate, pearson, roc_auc, spearman
from lib.grokking.end_of_training import EndOfTraining
from lib.grokking.study_sweep import GROUPS

#: The pairs of measures whose correlation the study comments on [@wu2025ambiguous].
CORRELATED_PAIRS = (("train_loss", "llc"), ("train_loss", "weight_norm"), ("llc", "weight_norm"))


@dataclass(frozen=True)
class OutcomeSummary:
    """One outcome group: how many seeds, and each measure's mean with its bootstrap interval."""

    group: str
    count: int
    means: dict[str, Estimate]


def outcome_summaries(end: EndOfTraining, *, resamples: int,
                      generator: torch.Generator) -> list[OutcomeSummary]:
    """Per outcome group present among the measured seeds, the mean of every measure."""
    summaries = []
    for code, name in enumerate(GROUPS):
        members = end.group == code
        if members.any():
            summaries.append(OutcomeSummary(name, int(members.sum()), {
                key: mean_estimate(values[members], resamples=resamples, generator=generator)
                for key, values in end.measures().items()}))
    return summaries


@dataclass(frozen=True)
class OutcomeComparison:
    """The mean of one measure in two outcome groups, with intervals and counts (NaN means and
    zero counts where a group was not measured).

    Attributes:
        first_lower: whether the first group's mean is the lower (None: a group is absent).
        apart: whether the two 95% intervals do not overlap (None: a group is absent).
    """

    measure: str
    first: Estimate
    second: Estimate
    first_count: int
    second_count: int
    first_lower: bool | None
    apart: bool | None


def outcome_comparison(summaries: list[OutcomeSummary], measure: str, first: str, second: str) -> OutcomeComparison:
    """`measure` in outcome groups `first` and `second`: which mean is lower, and whether the
    95% intervals are apart."""
    by_group = {s.group: s for s in summaries}
    missing = Estimate(float("nan"), float("nan"), float("nan"), 0.95)
    a = by_group[first].means[measure] if first in by_group else missing
    b = by_group[second].means[measure] if second in by_group else missing
    counts = [by_group[g].count if g in by_group else 0 for g in (first, second)]
    if first not in by_group or second not in by_group:
        return OutcomeComparison(measure, a, b, *counts, None, None)
    return OutcomeComparison(measure, a, b, *counts, a.value < b.value, a.high < b.low or b.high < a.low)


@dataclass(frozen=True)
class Correlation:
    """Linear (Pearson) and rank (Spearman) correlation of two measures over the seeds."""

    first: str
    second: str
    pearson: float
    spearman: float


def measure_correlations(end: EndOfTraining) -> list[Correlation]:
    """The correlations of `CORRELATED_PAIRS` over all measured seeds."""
    values = end.measures()
    return [Correlation(a, b, pearson(values[a], values[b]), spearman(values[a], values[b]))
            for a, b in CORRELATED_PAIRS]


@dataclass(frozen=True)
class MeasureAuc:
    """How well one measure separates outcomes: ROC AUC of "high value" for the first class.

    `either_vs_neither`: grokked either group (positive) against neither; `s4_vs_a4`: grokked
    S4 (positive) against grokked A4 x Z2. 0.5 is chance; below 0.5, low values mark the
    positive class.
    """

    measure: str
    either_vs_neither: Estimate
    s4_vs_a4: Estimate


def outcome_aucs(end: EndOfTraining, *, resamples: int, generator: torch.Generator) -> list[MeasureAuc]:
    """`MeasureAuc` of every measure, with stratified bootstrap intervals."""
    grokked = end.group < 2
    among = grokked.nonzero().squeeze(1)
    is_s4 = end.group[among] == 0
    rows = []
    for key, values in end.measures().items():
        either = bootstrap(roc_auc, values, grokked, resamples=resamples, generator=generator,
                           strata=grokked.long())
        s4 = bootstrap(roc_auc, values[among], is_s4, resamples=resamples, generator=generator,
                       strata=is_s4.long())
        rows.append(MeasureAuc(key, either, s4))
    return rows


def strongest_separator(rows: list[MeasureAuc]) -> MeasureAuc:
    """The measure whose grokked-vs-neither AUC lies farthest from chance (0.5), in either
    direction; measures whose AUC is undefined (NaN: a class is empty) come last."""
    def distance(row: MeasureAuc) -> float:
        value = row.either_vs_neither.value
        return abs(value - 0.5) if value == value else -1.0
    return max(rows, key=distance)


__all__ = ["CORRELATED_PAIRS", "Correlation", "MeasureAuc", "OutcomeComparison", "OutcomeSummary",
           "measure_correlations", "outcome_aucs", "outcome_comparison", "outcome_summaries",
           "strongest_separator"]
