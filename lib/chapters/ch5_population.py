"""Chapter 5's end-of-training numbers for the sweep as a whole, and the study's circuit
efficiency: the table and the results-JSON entry.

The correlations over the sweep's population are computed by `lib.grokking.sweep_correlations`,
the study's circuit efficiency per outcome by `lib.grokking.efficiency_by_outcome`.
"""

from __future__ import annotations

from dataclasses import asdict

from lib.book.statistics import Estimate
from lib.grokking.efficiency_by_outcome import EfficiencySummary, StudyEfficiency, grid_step
from lib.grokking.sweep_correlations import PopulationCorrelation


def efficiency_table(rows: list[EfficiencySummary]) -> tuple[list[str], list[list]]:
    """Header and rows of the study's circuit-efficiency table."""
    def text(estimate: Estimate) -> str:
        return f"{estimate.value:.4g} ({estimate.low:.4g} to {estimate.high:.4g})"

    return (["outcome", "seeds", "best factor alpha", "objective as trained", "above the curve's minimum",
             "minimum objective: mean", "median"],
            [[r.group, r.count, text(r.alpha), text(r.own), text(r.excess), text(r.lowest),
              f"{r.lowest_median:.4g}"] for r in rows])


def population_results(correlations: list[PopulationCorrelation], study: StudyEfficiency,
                       summaries: list[EfficiencySummary], auc: Estimate) -> dict:
    """The correlations and the study's circuit efficiency, for the results JSON."""
    return {"sweep_correlations": [asdict(c) for c in correlations],
            "study_efficiency": {"weight_decay": study.weight_decay, "alphas": "2^linspace(-6, 3, 500)",
                                 "seeds": study.index.tolist(),
                                 "by_outcome": [asdict(r) for r in summaries],
                                 "largest_excess": float(study.optimum.excess.max()),
                                 "grid_step": grid_step(),
                                 "auc_s4_vs_others": asdict(auc)}}


__all__ = ["efficiency_table", "population_results"]
