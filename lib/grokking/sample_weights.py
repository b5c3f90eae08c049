"""Weights that make a sample of a sweep's seeds stand for the whole sweep, and weighted
correlations (chapter 5).

Chapter 5 measures the LLC of every grokker but only a sample of the seeds that grokked
neither, so its measured seeds hold far more grokkers than the sweep. Weighting each measured
seed by how many seeds of its outcome group in the sweep it stands for (`representative_weights`)
turns statistics over the sample into estimates for the sweep: `weighted_pearson` and
`weighted_spearman` (the weighted Pearson correlation of weighted mid-ranks). With integer
weights both equal the plain correlations of the sample with each seed repeated that many times.
"""

from __future__ import annotations

import torch


def representative_weights(groups: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """(len(chosen),) float64 weights: a chosen seed of outcome group g weighs (seeds of g in the
    sweep) / (chosen seeds of g), so the weights of each group add up to its size in the sweep.

    Args:
        groups: (B,) outcome group of every seed of the sweep.
        chosen: indices into the sweep of the measured seeds.
    """
    picked = groups[chosen]
    weights = torch.empty(len(chosen), dtype=torch.float64)
    for group in picked.unique():
        members = picked == group
        weights[members] = float((groups == group).sum()) / float(members.sum())
    return weights


def weighted_pearson(x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor) -> float:
    """Pearson correlation of x and y with each point weighted (NaN when either is constant)."""
    x, y, w = x.double().flatten(), y.double().flatten(), weights.double().flatten()
    w = w / w.sum()
    x, y = x - (w * x).sum(), y - (w * y).sum()
    denominator = ((w * x * x).sum() * (w * y * y).sum()).sqrt()
    return float((w * x * y).sum() / denominator) if denominator > 0 else float("nan")


def weighted_ranks(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Weighted mid-ranks: the total weight of the smaller values plus half the weight of the
    values equal to this one (with unit weights: the average rank minus one half)."""
    values, weights = values.double().flatten(), weights.double().flatten()
    smaller = (weights[None, :] * (values[None, :] < values[:, None])).sum(dim=1)
    equal = (weights[None, :] * (values[None, :] == values[:, None])).sum(dim=1)
    return smaller + equal / 2


def weighted_spearman(x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor) -> float:
    """Spearman correlation with weights: the weighted Pearson correlation of the weighted ranks."""
    return weighted_pearson(weighted_ranks(x, weights), weighted_ranks(y, weights), weights)


__all__ = ["representative_weights", "weighted_pearson", "weighted_ranks", "weighted_spearman"]
