"""Correlations of end-of-training measures over a sweep's whole population (chapter 5).

The measured seeds of chapter 5 are every grokker and a sample of the others, about 40%
grokkers against the sweep's few percent, so plain statistics over them describe another
population than the study's scatter plots of all seeds. `sweep_correlations` gives training loss
against weight norm over **every** seed of the sweep (both are cheap), and every pair involving
the LLC over the measured seeds **weighted** so that each outcome group counts as often as in the
sweep (`lib.grokking.sample_weights`); each row names its population (`EVERY_SEED`,
`WEIGHTED_SAMPLE`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.grokking.end_of_training import EndOfTraining
from lib.grokking.mlp import instance_loss, parameter_norm
from lib.grokking.sample_weights import representative_weights, weighted_pearson, weighted_spearman
from lib.grokking.training import SweepResult

#: The two populations a correlation can describe (the `population` of `PopulationCorrelation`).
EVERY_SEED = "every seed of the sweep"
WEIGHTED_SAMPLE = "measured seeds weighted to the sweep's outcome shares"


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
                                  weighted_spearman(loss, norm, ones), EVERY_SEED, len(loss))]
    weights = representative_weights(groups, end.index)
    measures = end.measures()
    for first, second in (("train_loss", "llc"), ("llc", "weight_norm")):
        rows.append(PopulationCorrelation(
            first, second, weighted_pearson(measures[first], measures[second], weights),
            weighted_spearman(measures[first], measures[second], weights),
            WEIGHTED_SAMPLE, len(end.index)))
    return rows


__all__ = ["EVERY_SEED", "PopulationCorrelation", "WEIGHTED_SAMPLE", "sweep_correlations"]
