"""Chapter 5's end-of-training numbers for the sweep as a whole, and the study's circuit efficiency.

The measured seeds of chapter 5 are every grokker and a sample of the others, about 40%
grokkers against the sweep's few percent, so plain statistics over them describe another
population than the study's scatter plots of all seeds. Here:

* `sweep_correlations`: training loss against weight norm over **every** seed of the sweep
  (both are cheap), and every pair involving the LLC over the measured seeds **weighted** so
  that each outcome group counts as often as in the sweep (`lib.grokking.sample_weights`);
* `study_efficiency`: the study's circuit efficiency, the training objective (cross-entropy
  plus (wd / 2) ||theta||^2) along each seed's rescaling curve, for up to `per_outcome` seeds of
  each outcome (the study: 20), and `efficiency_summaries` per outcome with intervals. Every
  seed sits at the minimum of its own curve (training with weight decay lands there), so the
  outcomes are compared by that minimum objective (`efficiency_auc`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from lib.book.statistics import Estimate, bootstrap, mean_estimate, roc_auc
from lib.chapters.ch5 import EndOfTraining
from lib.grokking.circuit_efficiency import STUDY_ALPHAS, RescalingOptimum, rescaling_optimum
from lib.grokking.mlp import instance_loss, parameter_norm, select_instances
from lib.grokking.sample_weights import representative_weights, weighted_pearson, weighted_spearman
from lib.grokking.study_sweep import GROUPS
from lib.grokking.training import SweepResult


@dataclass(frozen=True)
class PopulationCorrelation:
    """A correlation of two end-of-training measures and the population it describes."""

    first: str
    second: str
    pearson: float
    spearman: float
    population: str
    n_seeds: int


def sweep_correlations(result: SweepResult, groups: torch.Tensor, end: EndOfTraining) -> list[PopulationCorrelation]:
    """Training loss vs weight norm over all seeds of the sweep; training loss vs LLC and LLC vs
    weight norm over the measured seeds, weighted to the sweep's outcome shares."""
    params = result.final_params
    with torch.no_grad():
        loss = instance_loss(params, result.train_left, result.train_right, result.train_labels).double()
        norm = parameter_norm(params).double()
    ones = torch.ones_like(loss)
    rows = [PopulationCorrelation("train_loss", "weight_norm", weighted_pearson(loss, norm, ones),
                                  weighted_spearman(loss, norm, ones), "every seed of the sweep", len(loss))]
    weights = representative_weights(groups, end.index)
    measures = end.measures()
    for first, second in (("train_loss", "llc"), ("llc", "weight_norm")):
        rows.append(PopulationCorrelation(
            first, second, weighted_pearson(measures[first], measures[second], weights),
            weighted_spearman(measures[first], measures[second], weights),
            "measured seeds weighted to the sweep's outcome shares", len(end.index)))
    return rows


def efficiency_seeds(groups: torch.Tensor, per_outcome: int) -> torch.Tensor:
    """The first `per_outcome` seeds (by sweep index) of each outcome group, sorted."""
    chosen = [(groups == code).nonzero().squeeze(1)[:per_outcome] for code in range(len(GROUPS))]
    return torch.cat(chosen).sort().values


@dataclass
class StudyEfficiency:
    """The study's circuit efficiency of chosen seeds: `index` into the sweep, their outcome
    `group`, and where the objective is lowest along each one's rescaling curve."""

    index: torch.Tensor
    group: torch.Tensor
    optimum: RescalingOptimum
    weight_decay: float


def study_efficiency(result: SweepResult, groups: torch.Tensor, per_outcome: int) -> StudyEfficiency:
    """`rescaling_optimum` of `efficiency_seeds` at the sweep's own weight decay."""
    index = efficiency_seeds(groups, per_outcome)
    params = select_instances(result.final_params, index)
    decay = result.training_config.weight_decay
    optimum = rescaling_optimum(params, result.train_left, result.train_right, result.train_labels, decay)
    return StudyEfficiency(index, groups[index], optimum, decay)


@dataclass(frozen=True)
class EfficiencySummary:
    """One outcome: seeds, mean best factor alpha, mean objective as trained, its mean excess over
    the lowest objective of its rescaling curve, and that lowest objective (mean with a bootstrap
    interval, and median)."""

    group: str
    count: int
    alpha: Estimate
    own: Estimate
    excess: Estimate
    lowest: Estimate
    lowest_median: float


#: Fewer seeds than this in an outcome are flagged where the outcomes are compared.
FEW_SEEDS = 10


def efficiency_summaries(study: StudyEfficiency, *, resamples: int,
                         generator: torch.Generator) -> list[EfficiencySummary]:
    """Per outcome group present, the means of `StudyEfficiency` with intervals."""
    rows = []
    for code, name in enumerate(GROUPS):
        members = study.group == code
        if members.any():
            rows.append(EfficiencySummary(name, int(members.sum()), *(
                mean_estimate(values[members], resamples=resamples, generator=generator)
                for values in (study.optimum.alpha, study.optimum.own, study.optimum.excess,
                               study.optimum.lowest)),
                float(study.optimum.lowest[members].median())))
    return rows


def efficiency_auc(study: StudyEfficiency, *, resamples: int, generator: torch.Generator) -> Estimate:
    """ROC AUC of a high minimum objective for the seeds that grokked S4 against the other
    chosen seeds (below 0.5: the S4 grokkers reach lower objectives), with a bootstrap
    interval resampling within each class."""
    positive = study.group == 0
    return bootstrap(roc_auc, study.optimum.lowest, positive, resamples=resamples, generator=generator,
                     strata=positive.long())


def grid_step(alphas: torch.Tensor = STUDY_ALPHAS) -> float:
    """The relative step between neighbouring factors of the rescaling grid (its resolution)."""
    return float((alphas[1:] / alphas[:-1]).max() - 1)


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


__all__ = ["EfficiencySummary", "FEW_SEEDS", "PopulationCorrelation", "StudyEfficiency", "efficiency_auc",
           "efficiency_seeds", "grid_step", "efficiency_summaries", "efficiency_table", "population_results",
           "study_efficiency", "sweep_correlations"]
