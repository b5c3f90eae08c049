"""The study's circuit efficiency per outcome: the training objective along rescaling curves (chapter 5).

The study followed the training objective (cross-entropy plus (wd / 2) ||theta||^2) along each
seed's rescaling curve for 20 seeds of each outcome [@wu2025ambiguous]. Here `study_efficiency`
does so for up to `per_outcome` seeds of each outcome (`efficiency_seeds`) through
`lib.grokking.circuit_efficiency.rescaling_optimum`, and `efficiency_summaries` gives per outcome
the means with bootstrap intervals. Every seed sits at the minimum of its own curve (training with
weight decay lands there), so the outcomes are compared by that minimum objective
(`efficiency_auc`); `grid_step` is the resolution of the rescaling grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.book.statistics import Estimate, bootstrap, mean_estimate, roc_auc
from lib.grokking.circuit_efficiency import STUDY_ALPHAS, RescalingOptimum, rescaling_optimum
from lib.grokking.mlp import select_instances
from lib.grokking.study_sweep import GROUPS
from lib.grokking.training import SweepResult


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


__all__ = ["EfficiencySummary", "FEW_SEEDS", "StudyEfficiency", "efficiency_auc", "efficiency_seeds",
           "efficiency_summaries", "grid_step", "study_efficiency"]
