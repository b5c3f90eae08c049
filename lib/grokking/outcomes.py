"""What each trained instance ended up computing, and how often (chapters 4-6).

An instance trained on the intersection of two groups' tables ends in one of four outcomes:
it grokked G1 (accuracy on all N^2 pairs against G1 at least the threshold), grokked G2,
fitted the training set without grokking either group ("memorized": it learned only the
intersection), or failed to fit the training set. Fractions of a sweep come with binomial
confidence intervals (Wilson's, `lib.book.statistics.wilson_interval`, by default;
Clopper-Pearson on request).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lib.book.statistics import wilson_interval

#: Outcome labels; the integer code of an outcome is its position here.
OUTCOMES: tuple[str, ...] = ("grokked_g1", "grokked_g2", "memorized", "failed")
GROKKED_G1, GROKKED_G2, MEMORIZED, FAILED = range(4)


def classify_outcomes(
    acc_g1: torch.Tensor,
    acc_g2: torch.Tensor,
    train_acc: torch.Tensor,
    grok_threshold: float = 0.999,
    fit_threshold: float = 0.999,
) -> torch.Tensor:
    """Outcome code (index into `OUTCOMES`) of every instance from its final accuracies.

    Args:
        acc_g1, acc_g2: (B,) accuracy on all N^2 pairs against each group.
        train_acc: (B,) accuracy on the training pairs.
        grok_threshold: accuracy on a group's full table that counts as grokking it.
        fit_threshold: training accuracy that counts as fitting the training set.

    An instance above the threshold on both groups (possible only when the tables differ on
    fewer than a (1 - threshold) share of pairs) is credited to the group it fits better,
    G1 on ties.
    """
    acc_g1, acc_g2, train_acc = (torch.as_tensor(x, dtype=torch.float64) for x in (acc_g1, acc_g2, train_acc))
    codes = torch.full(acc_g1.shape, FAILED, dtype=torch.long)
    codes[train_acc >= fit_threshold] = MEMORIZED
    g1 = acc_g1 >= grok_threshold
    g2 = acc_g2 >= grok_threshold
    codes[g2 & ~(g1 & (acc_g1 >= acc_g2))] = GROKKED_G2
    codes[g1 & ~(g2 & (acc_g2 > acc_g1))] = GROKKED_G1
    return codes


def clopper_pearson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval, found by bisection on the binomial tail probabilities."""
    _check_counts(successes, trials)
    alpha = 1 - confidence
    low = 0.0 if successes == 0 else _bisect(
        lambda p: _binomial_upper_tail(successes, trials, p) - alpha / 2)
    high = 1.0 if successes == trials else _bisect(
        lambda p: alpha / 2 - _binomial_lower_tail(successes, trials, p))
    return low, high


@dataclass(frozen=True)
class OutcomeFraction:
    """Count, fraction and confidence interval of one outcome in a sweep."""

    outcome: str
    count: int
    n_instances: int
    fraction: float
    low: float
    high: float


def outcome_fractions(
    codes: torch.Tensor, confidence: float = 0.95, method: str = "wilson",
) -> dict[str, OutcomeFraction]:
    """Fraction of instances with each outcome, with a binomial confidence interval."""
    interval = {"wilson": wilson_interval, "clopper_pearson": clopper_pearson_interval}[method]
    n = int(codes.numel())
    out = {}
    for code, name in enumerate(OUTCOMES):
        count = int((codes == code).sum())
        low, high = interval(count, n, confidence)
        out[name] = OutcomeFraction(name, count, n, count / n, low, high)
    return out


def first_epoch_at_or_above(curves: torch.Tensor, epochs: torch.Tensor, threshold: float) -> torch.Tensor:
    """For each instance, the first logged epoch whose value reaches `threshold` (-1 if never).

    Args:
        curves: (E, B) metric over logged epochs.
        epochs: (E,) the logged epochs.
    """
    reached = curves >= threshold
    first = reached.float().argmax(dim=0)
    return torch.where(reached.any(dim=0), epochs[first], torch.full_like(first, -1))


def typical_instances(codes: torch.Tensor, score: torch.Tensor) -> dict[str, int]:
    """One representative instance per outcome present: the one with the median `score`.

    Chapter 4 passes the epoch at which each instance fitted its training set, so the
    representative of each outcome is neither its fastest nor its slowest member.
    """
    out = {}
    for code, name in enumerate(OUTCOMES):
        members = (codes == code).nonzero().flatten()
        if members.numel():
            order = score[members].argsort()
            out[name] = int(members[order[(members.numel() - 1) // 2]])
    return out


# --- Helpers -------------------------------------------------------------------------------


def _check_counts(successes: int, trials: int) -> None:
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0; got {successes}, {trials}.")


def _bisect(f, low: float = 0.0, high: float = 1.0, iterations: int = 80) -> float:
    """Root of an increasing function f on [low, high]."""
    for _ in range(iterations):
        mid = 0.5 * (low + high)
        if f(mid) < 0:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


def _log_binomial_pmf(k: int, n: int, p: float) -> float:
    if p <= 0.0:
        return 0.0 if k == 0 else -math.inf
    if p >= 1.0:
        return 0.0 if k == n else -math.inf
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + k * math.log(p) + (n - k) * math.log1p(-p))


def _binomial_upper_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p); increasing in p."""
    return 1.0 - _binomial_lower_tail(k - 1, n, p) if k > 0 else 1.0


def _binomial_lower_tail(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p); decreasing in p. Sums the shorter side."""
    if k >= n:
        return 1.0
    if k < n - k:
        return min(1.0, sum(math.exp(_log_binomial_pmf(j, n, p)) for j in range(0, k + 1)))
    return max(0.0, 1.0 - sum(math.exp(_log_binomial_pmf(j, n, p)) for j in range(k + 1, n + 1)))
