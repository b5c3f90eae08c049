"""A number over replicate seeds: its values, mean, spread, and which side of a published value
every seed lies on (chapter 3).

`SeedSpread` holds one number of every seed (a test's MSE, a ratio); `position_against` states
an ordering with the study's value only when every seed agrees, `count_higher` counts the seeds
in which one test scored higher than another, and `spread_by_test` gathers each test's MSE over
the records of `lib.paths.seed_replicates`.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

from lib.paths.generalization_tests import TESTS


@dataclasses.dataclass(frozen=True)
class SeedSpread:
    """One test's MSE over the seeds: the values in seed order, mean, sample SD, min, max.

    Chapter 3 cites a spread through `lib.book.record.Record.spread(key, spread.values)`."""

    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def sd(self) -> float:
        if len(self.values) < 2 or any(math.isnan(v) for v in self.values):
            return math.nan
        return statistics.stdev(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def record(self) -> dict:
        return {"values": list(self.values), "mean": self.mean, "sd": self.sd, "min": self.low, "max": self.high}


def position_against(spread: SeedSpread, published: float) -> bool | None:
    """Where the seeds sit against the study's value: True above it in every seed, False below it
    in every seed, None on both sides (no ordering can be stated)."""
    if spread.low > published:
        return True
    if spread.high < published:
        return False
    return None


@dataclasses.dataclass(frozen=True)
class OrderCount:
    """In how many of `seeds` seeds one test's MSE was higher than another's."""

    higher: int
    seeds: int


def count_higher(spreads: dict[str, SeedSpread], higher: str, lower: str) -> OrderCount:
    """Seeds (paired by position) in which test `higher` scored a higher MSE than test `lower`."""
    pairs = list(zip(spreads[higher].values, spreads[lower].values))
    return OrderCount(sum(a > b for a, b in pairs), len(pairs))


def spread_by_test(seed_runs: Sequence[dict]) -> dict[str, SeedSpread]:
    """Each test's `SeedSpread` over the records of `lib.paths.seed_replicates.SeedRun`."""
    return {name: SeedSpread(tuple(run["test_mse"][name] for run in seed_runs)) for name in TESTS}


__all__ = ["count_higher", "OrderCount", "position_against", "SeedSpread", "spread_by_test"]
