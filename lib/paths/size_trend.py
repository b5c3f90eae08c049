"""Does the fine-tuned answer on on-path targets other than vertex 2 stay right as graphs grow?
The per-size rows pooled into fine-tuning sizes and larger ones, split by target id, in one
seed (`SizeTrend`) and in every seed (`SizeTrendSeeds`) (chapter 3).

The rows are those of `lib.paths.baselines.onpath_by_graph_size`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from lib.paths.seed_spread import SeedSpread


@dataclasses.dataclass(frozen=True)
class SizeTrend:
    """The fine-tuned model's MSE on on-path targets other than vertex 2, by graph size.

    Graphs larger than the fine-tuning graphs also bring target ids that fine-tuning never used
    (above `small_n_max`), so the larger sizes are also read with the ids held to the fine-tuning
    ones: `mse_large_small_ids` against `mse_small` changes the graph size alone.

    Attributes:
        rows: `onpath_by_graph_size` rows (n_vertices, count, mse, accuracy, and the split by
            target id, `small_id` and `large_id`).
        small_n_max: the largest fine-tuning graph (and target id).
        mse_small, mse_large: pooled MSE over sizes up to small_n_max and above it.
        count_small, count_large: the targets behind each.
        mse_large_small_ids, count_large_small_ids: sizes above small_n_max, target ids up to it.
        mse_large_large_ids, count_large_large_ids: sizes above small_n_max, larger target ids.
    """

    rows: tuple[dict, ...]
    small_n_max: int
    mse_small: float
    mse_large: float
    count_small: int
    count_large: int
    mse_large_small_ids: float = math.nan
    count_large_small_ids: int = 0
    mse_large_large_ids: float = math.nan
    count_large_large_ids: int = 0

    @property
    def stays_right(self) -> bool:
        """The MSE on sizes beyond fine-tuning is at most twice that on the fine-tuning sizes."""
        return self.mse_large <= 2 * self.mse_small

    @property
    def stays_right_small_ids(self) -> bool:
        """The same with the larger sizes' target ids held to the fine-tuning ones."""
        return self.mse_large_small_ids <= 2 * self.mse_small

    @property
    def growth_small_ids(self) -> float:
        """MSE on larger sizes (fine-tuning ids) over MSE on the fine-tuning sizes."""
        return self.mse_large_small_ids / self.mse_small if self.mse_small > 0 else math.nan

    def record(self) -> dict:
        return {"rows": list(self.rows), "small_n_max": self.small_n_max, "mse_small": self.mse_small,
                "mse_large": self.mse_large, "count_small": self.count_small, "count_large": self.count_large,
                "mse_large_small_ids": self.mse_large_small_ids, "count_large_small_ids": self.count_large_small_ids,
                "mse_large_large_ids": self.mse_large_large_ids, "count_large_large_ids": self.count_large_large_ids,
                "stays_right": self.stays_right, "stays_right_small_ids": self.stays_right_small_ids,
                "growth_small_ids": self.growth_small_ids}


def _pooled(parts: Sequence[dict]) -> tuple[float, int]:
    count = sum(p["count"] for p in parts)
    return (sum(p["mse"] * p["count"] for p in parts if p["count"]) / count if count else math.nan), count


def size_trend(rows: Sequence[dict], small_n_max: int) -> SizeTrend:
    """Pool `onpath_by_graph_size` rows into fine-tuning sizes and larger sizes, and the larger
    sizes by target id (rows without the id split count as ids up to `small_n_max`)."""
    small, large = ([r for r in rows if r["n_vertices"] <= small_n_max],
                    [r for r in rows if r["n_vertices"] > small_n_max])
    (mse_small, count_small), (mse_large, count_large) = _pooled(small), _pooled(large)
    empty = {"count": 0, "mse": math.nan}
    mse_small_ids, count_small_ids = _pooled([r.get("small_id", r) for r in large])
    mse_large_ids, count_large_ids = _pooled([r.get("large_id", empty) for r in large])
    return SizeTrend(tuple(rows), small_n_max, mse_small, mse_large, count_small, count_large,
                     mse_small_ids, count_small_ids, mse_large_ids, count_large_ids)


@dataclasses.dataclass(frozen=True)
class SizeTrendSeeds:
    """The per-size check of on-path targets other than vertex 2 in every seed.

    Attributes:
        trends: one `SizeTrend` per seed, in seed order.
    """

    trends: tuple[SizeTrend, ...]

    @property
    def seeds(self) -> int:
        return len(self.trends)

    @property
    def mse_small(self) -> SeedSpread:
        """MSE on the fine-tuning sizes over the seeds."""
        return SeedSpread(tuple(t.mse_small for t in self.trends))

    @property
    def mse_large_small_ids(self) -> SeedSpread:
        """MSE on larger sizes with the fine-tuning target ids, over the seeds."""
        return SeedSpread(tuple(t.mse_large_small_ids for t in self.trends))

    @property
    def mse_large_large_ids(self) -> SeedSpread:
        """MSE on larger sizes with target ids fine-tuning never used, over the seeds."""
        return SeedSpread(tuple(t.mse_large_large_ids for t in self.trends))

    @property
    def growth_small_ids(self) -> SeedSpread:
        """MSE on larger sizes (fine-tuning ids) over MSE on the fine-tuning sizes, per seed."""
        return SeedSpread(tuple(t.growth_small_ids for t in self.trends))

    @property
    def seeds_not_staying_right(self) -> int:
        """Seeds in which the MSE with fine-tuning ids is more than twice as high on larger graphs."""
        return sum(not t.stays_right_small_ids for t in self.trends)

    @property
    def seeds_new_ids_worse(self) -> int:
        """Seeds in which targets with new ids score a higher MSE than those with fine-tuning ids."""
        return sum(t.mse_large_large_ids > t.mse_large_small_ids for t in self.trends)

    def record(self) -> dict:
        return {"per_seed": [t.record() for t in self.trends], "mse_small": self.mse_small.record(),
                "mse_large_small_ids": self.mse_large_small_ids.record(),
                "mse_large_large_ids": self.mse_large_large_ids.record(),
                "growth_small_ids": self.growth_small_ids.record(),
                "seeds_not_staying_right": self.seeds_not_staying_right,
                "seeds_new_ids_worse": self.seeds_new_ids_worse, "seeds": self.seeds}


def size_trends_over_seeds(seed_runs: Sequence[dict], small_n_max: int,
                           key: str = "onpath_by_graph_size") -> SizeTrendSeeds:
    """`SizeTrendSeeds` from the per-size rows each seed's analysis recorded under `key`."""
    return SizeTrendSeeds(tuple(size_trend(run["analysis"][key], small_n_max) for run in seed_runs))


__all__ = ["size_trend", "size_trends_over_seeds", "SizeTrend", "SizeTrendSeeds"]
