"""Measures ranked by how closely they track the generalization gap over time, and the study's
claim against that ranking (chapter 5).

The study compared each measure followed along one run with the generalization gap by Spearman
over the checkpoints and found that the LLC tracks it best [@wu2025ambiguous]
(`lib.grokking.study.S5_MEASURES_CLAIM`). `tracking_rows` ranks the measures of a
`lib.grokking.measures_over_time.MeasuresOverTime` by their rank correlation with the gap over
common checkpoints, on the dense grid (the cheap measures) and on the sparse one (every measure);
`claim_comparison` says where the LLC ranks on the sparse grid (`ClaimComparison.reproduced`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.grokking.measures_over_time import MeasuresOverTime, spearman_over_common
from lib.grokking.study import S5_MEASURES_CLAIM


@dataclass(frozen=True)
class TrackingRow:
    """One measure on one grid: its rank correlation with the gap over the grid's common
    checkpoints, how many there are, and how many of its values there are infinite."""

    measure: str
    grid: str
    spearman: float
    checkpoints: int
    infinite: int


def _ranked(correlations: dict[str, float], values: dict[str, torch.Tensor], keep: torch.Tensor,
            grid: str) -> list[TrackingRow]:
    rows = [TrackingRow(name, grid, rho, int(keep.sum()), int(torch.isinf(values[name][keep]).sum()))
            for name, rho in correlations.items()]
    return sorted(rows, key=lambda r: -r.spearman if r.spearman == r.spearman else float("inf"))


def tracking_rows(run: MeasuresOverTime) -> dict[str, list[TrackingRow]]:
    """grid -> its rows, best tracker (largest Spearman with the gap) first: "dense", every
    cheap measure over every checkpoint; "sparse", every measure (PAC-Bayes sharpness and LLC
    included) over the sparse checkpoints. Each grid compares its measures over the same
    checkpoints, infinite values kept as tied top ranks."""
    dense, keep = spearman_over_common(run.measures, run.gap)
    sparse, keep_sparse = spearman_over_common(run.sparse_measures, run.gap[run.sparse])
    return {"dense": _ranked(dense, run.measures, keep, "dense"),
            "sparse": _ranked(sparse, run.sparse_measures, keep_sparse, "sparse")}


@dataclass(frozen=True)
class ClaimComparison:
    """The study's claim (the LLC tracks the gap best) against this run's sparse-grid ranking."""

    best: str
    best_spearman: float
    llc_rank: int
    llc_spearman: float
    n_measures: int
    checkpoints: int

    @property
    def reproduced(self) -> bool:
        """Whether the LLC follows the gap at least as closely as every other measure (a tie for
        the first place counts)."""
        return self.llc_rank == 1


def claim_comparison(rows: dict[str, list[TrackingRow]]) -> ClaimComparison:
    """Where the LLC ranks on the sparse grid (1 + the number of measures with a strictly larger
    Spearman; NaN ranks last), beside the best tracker there (the LLC where it ties for first)."""
    sparse = rows["sparse"]
    llc = next(r for r in sparse if r.measure == S5_MEASURES_CLAIM["best"])
    if llc.spearman == llc.spearman:
        rank = 1 + sum(r.spearman > llc.spearman for r in sparse)
    else:
        rank = len(sparse)
    best = llc if rank == 1 else sparse[0]
    return ClaimComparison(best.measure, best.spearman, rank, llc.spearman, len(sparse), sparse[0].checkpoints)


__all__ = ["ClaimComparison", "TrackingRow", "claim_comparison", "tracking_rows"]
