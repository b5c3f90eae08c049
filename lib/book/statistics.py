"""Small statistics the chapters report: ROC AUC, rank and linear correlation, bootstrap intervals
(chapter 5, and any chapter that compares measures across seeds).

Everything takes 1-D tensors and returns Python floats, computed in float64. Randomness (the
bootstrap) comes from an explicit `torch.Generator`, so the same seed gives the same interval.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


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


__all__ = ["Estimate", "average_ranks", "bootstrap", "mean_estimate", "pearson", "roc_auc", "spearman"]
