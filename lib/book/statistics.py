"""Small statistics the chapters report: binomial intervals (Wilson's, the one every chapter and
the index use), ROC AUC, rank and linear correlation, bootstrap intervals (chapter 5, and any
chapter that compares measures across seeds).

Everything takes 1-D tensors and returns Python floats, computed in float64. Randomness (the
bootstrap) comes from an explicit `torch.Generator`, so the same seed gives the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import torch


def normal_quantile(confidence: float = 0.95) -> float:
    """The z of a two-sided interval at `confidence` (1.959964 at 0.95)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a binomial share `successes / trials` (chapters 1, 4, 6, 8 and
    the index). Exact at both ends: the lower end is 0 with no success and the upper end 1 when
    every trial succeeds (the closed form leaves rounding residue there, e.g. 3e-17), so the share
    always lies inside its own interval; (0, 1) for no trial, which says nothing."""
    if trials < 0 or not 0 <= successes <= max(trials, 0):
        raise ValueError(f"need 0 <= successes <= trials; got {successes} of {trials}.")
    if trials == 0:
        return 0.0, 1.0
    z = normal_quantile(confidence)
    share = successes / trials
    denominator = 1 + z * z / trials
    centre = (share + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def zero_event_upper(trials: int, confidence: float = 0.95) -> float:
    """The upper end of Wilson's interval with no event in `trials`: how high a rate nobody saw
    may still be (the index's "consistent" rows)."""
    return wilson_interval(0, trials, confidence)[1]


def trials_to_bound(rate: float, confidence: float = 0.95) -> int:
    """The fewest trials with no event whose Wilson interval lies below `rate` (how many seeds
    would turn a "consistent" never into a bound)."""
    z = normal_quantile(confidence)
    return int(z * z * (1 - rate) / rate) + 1


def average_ranks(values: torch.Tensor) -> torch.Tensor:
    """Ranks 1..n of `values` (float64), tied values sharing the mean of their ranks."""
    values = values.double().flatten()
    order = torch.argsort(values, stable=True)
    sorted_values = values[order]
    # Each run of equal values gets the mean of the positions it spans.
    distinct, inverse, counts = torch.unique_consecutive(sorted_values, return_inverse=True,
                                                         return_counts=True)
    ends = counts.cumsum(0).double()
    mean_rank = ends - (counts.double() - 1) / 2
    ranks = torch.empty_like(values)
    ranks[order] = mean_rank[inverse]
    return ranks


def pearson(x: torch.Tensor, y: torch.Tensor) -> float:
    """Pearson correlation of two equally long samples (NaN when either is constant)."""
    x, y = x.double().flatten(), y.double().flatten()
    x, y = x - x.mean(), y - y.mean()
    denominator = (x.pow(2).sum() * y.pow(2).sum()).sqrt()
    return float((x * y).sum() / denominator) if denominator > 0 else float("nan")


def spearman(x: torch.Tensor, y: torch.Tensor) -> float:
    """Spearman rank correlation: the Pearson correlation of the average ranks."""
    return pearson(average_ranks(x), average_ranks(y))


def roc_auc(scores: torch.Tensor, positive: torch.Tensor) -> float:
    """Area under the ROC curve of `scores` for telling `positive` (bool) examples from the rest.

    The Mann-Whitney form: the probability that a random positive scores higher than a random
    negative, ties counting one half. 1: the score separates perfectly, high for positives;
    0: perfectly, low for positives; 0.5: no better than chance. NaN without both classes.
    """
    positive = positive.bool().flatten()
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = average_ranks(scores)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@dataclass(frozen=True)
class Estimate:
    """A statistic and its bootstrap interval (percentile method)."""

    value: float
    low: float
    high: float
    confidence: float


def bootstrap(statistic: Callable[..., float], *samples: torch.Tensor, resamples: int,
              generator: torch.Generator, confidence: float = 0.95,
              strata: torch.Tensor | None = None) -> Estimate:
    """`statistic(*samples)` and its percentile bootstrap interval.

    The rows of all `samples` (equally long) are resampled together with replacement,
    `resamples` times. With `strata` (an integer label per row), rows are resampled within each
    stratum, so every resample keeps each stratum's size: for an AUC, pass the classes, so no
    resample lacks a class. Resamples whose statistic is NaN are dropped.
    """
    n = len(samples[0])
    if any(len(sample) != n for sample in samples):
        raise ValueError("bootstrap: every sample must have the same length.")
    groups = [torch.arange(n)] if strata is None else [
        (strata == label).nonzero().squeeze(1) for label in torch.unique(strata)]
    values = []
    for _ in range(resamples if n else 0):
        rows = torch.cat([group[torch.randint(len(group), (len(group),), generator=generator)]
                          for group in groups])
        values.append(statistic(*(sample[rows] for sample in samples)))
    values = torch.tensor(values, dtype=torch.float64)
    values = values[~values.isnan()]
    tail = (1 - confidence) / 2
    low, high = (torch.quantile(values, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
                 if len(values) else (float("nan"), float("nan")))
    return Estimate(statistic(*samples), low, high, confidence)


def mean_estimate(values: torch.Tensor, *, resamples: int, generator: torch.Generator,
                  confidence: float = 0.95) -> Estimate:
    """The mean of `values` and its percentile bootstrap interval (NaN interval below 2 values)."""
    values = values.double().flatten()
    if len(values) < 2:
        value = float(values.mean()) if len(values) else float("nan")
        return Estimate(value, float("nan"), float("nan"), confidence)
    return bootstrap(lambda sample: float(sample.mean()), values, resamples=resamples,
                     generator=generator, confidence=confidence)


__all__ = ["Estimate", "average_ranks", "bootstrap", "mean_estimate", "normal_quantile", "pearson", "roc_auc",
           "spearman", "trials_to_bound", "wilson_interval", "zero_event_upper"]


@dataclass(frozen=True)
class AucDifference:
    """AUC(a) - AUC(b) on one sample and its standard error (paired bootstrap)."""

    difference: float
    standard_error: float
    resamples: int

    @property
    def z(self) -> float:
        """The difference in standard errors (+-inf where the error is 0 and the difference not;
        NaN where both are 0)."""
        if self.standard_error > 0:
            return self.difference / self.standard_error
        if self.difference == 0:
            return float("nan")
        return float("inf") if self.difference > 0 else float("-inf")


def weighted_roc_aucs(scores: torch.Tensor, positive: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """(R,) ROC AUC of one score vector (N,) for `positive` (N,) under R weightings (R, N) of the
    examples (a bootstrap resample is a weighting by how often each example was drawn): the
    weighted Mann-Whitney form, ties counting one half; NaN where a class has no weight. With unit
    weights it is `roc_auc`."""
    scores, positive = scores.double().flatten(), positive.bool().flatten()
    order = torch.argsort(scores)
    group = torch.unique_consecutive(scores[order], return_inverse=True)[1]
    pos, w = positive[order], weights.double()[:, order]
    negative_weight = torch.zeros(w.shape[0], int(group.max()) + 1 if len(group) else 0, dtype=torch.float64)
    negative_weight.index_add_(1, group, w * (~pos))
    below = negative_weight.cumsum(1) - negative_weight
    positive_weight = w * pos
    pairs = (positive_weight * (below[:, group] + 0.5 * negative_weight[:, group])).sum(1)
    total = positive_weight.sum(1) * (w * ~pos).sum(1)
    return torch.where(total > 0, pairs / total.clamp_min(1e-300), torch.nan)


def auc_difference(scores_a: torch.Tensor, scores_b: torch.Tensor, positive: torch.Tensor, *, resamples: int,
                   generator: torch.Generator, clusters: torch.Tensor | None = None,
                   chunk: int = 32) -> AucDifference:
    """AUC(scores_a) - AUC(scores_b) for telling `positive` examples from the rest, with the
    standard error of that difference by a paired bootstrap: each resample draws the examples (or,
    with `clusters`, an integer label per example such as the graph it came from, whole clusters)
    with replacement and scores both on the same draw, so what the two share cancels. Resamples
    that lack a class are dropped; the error is the standard deviation of the resampled
    differences (0 below two usable resamples). `chunk` resamples are scored at once."""
    scores_a, scores_b, positive = scores_a.double().flatten(), scores_b.double().flatten(), positive.bool().flatten()
    if not len(scores_a) == len(scores_b) == len(positive):
        raise ValueError("auc_difference: scores_a, scores_b and positive must have the same length.")
    ones = torch.ones(1, len(positive), dtype=torch.float64)
    difference = float(weighted_roc_aucs(scores_a, positive, ones)[0] - weighted_roc_aucs(scores_b, positive, ones)[0])
    if clusters is None:
        members = torch.arange(len(positive))
    else:
        members = torch.unique(clusters.flatten(), return_inverse=True)[1]
    count = int(members.max()) + 1 if len(members) else 0
    differences = []
    for start in range(0, resamples if count else 0, chunk):
        size = min(chunk, resamples - start)
        drawn = torch.randint(count, (size, count), generator=generator)
        times = torch.zeros(size, count, dtype=torch.float64).scatter_add_(
            1, drawn, torch.ones(size, count, dtype=torch.float64))
        weights = times[:, members]
        differences.append(weighted_roc_aucs(scores_a, positive, weights) - weighted_roc_aucs(scores_b, positive, weights))
    values = torch.cat(differences) if differences else torch.empty(0, dtype=torch.float64)
    values = values[~values.isnan()]
    error = float(values.std()) if len(values) > 1 else 0.0
    return AucDifference(difference, error, len(values))


__all__ += ["AucDifference", "auc_difference", "weighted_roc_aucs"]
