"""Seeds of a sweep measured at the end of training: training loss, weight norm, LLC, circuit
efficiency (chapter 5).

Chapter 5 measures the chosen seeds of chapter 4's S4 sweep (every grokker and a sample of the
others) at the end of training: the mean training cross-entropy, the L2 norm of all parameters,
the local learning coefficient (`lib.grokking.mlp_llc`) and the training loss after rescaling the
weights to a common norm, the median of theirs (`lib.grokking.circuit_efficiency.loss_at_norm`).
`EndOfTraining` holds them per seed; `first_seed_per_outcome` picks the seed of each outcome whose
rescaling curve the chapter draws.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from lib.grokking.circuit_efficiency import loss_at_norm
from lib.grokking.llc import LLCEstimate, SGLDConfig
from lib.grokking.mlp import instance_loss, parameter_norm, select_instances
from lib.grokking.mlp_llc import mlp_llc_in_chunks
from lib.grokking.study_sweep import GROUPS
from lib.grokking.training import SweepResult


@dataclass
class EndOfTraining:
    """The measured seeds at the end of training, one entry per seed (all (K,) tensors).

    Attributes:
        index: the seeds' positions in the sweep; group: their `GROUPS` index.
        train_loss: mean training cross-entropy; weight_norm: L2 norm of all parameters.
        llc: the LLC estimates (mean, spread over chains, per chain).
        efficiency_norm: the common norm at which efficiency is read (median of weight_norm).
        efficiency_loss: training loss after rescaling the weights to `efficiency_norm`
            (circuit efficiency: lower = more efficient).
        llc_seconds: wall-clock time of the LLC estimates.
    """

    index: torch.Tensor
    group: torch.Tensor
    train_loss: torch.Tensor
    weight_norm: torch.Tensor
    llc: LLCEstimate
    efficiency_norm: float
    efficiency_loss: torch.Tensor
    llc_seconds: float

    def measures(self) -> dict[str, torch.Tensor]:
        """The per-seed numbers compared across outcomes, by name."""
        return {"train_loss": self.train_loss, "weight_norm": self.weight_norm,
                "llc": self.llc.mean, "efficiency_loss": self.efficiency_loss}


def first_seed_per_outcome(end: EndOfTraining) -> dict[str, int]:
    """Outcome name -> position in `end` of its first measured seed (outcomes present only);
    the seeds whose rescaling curves chapter 5 draws."""
    return {name: int((end.group == code).nonzero()[0]) for code, name in enumerate(GROUPS)
            if (end.group == code).any()}


def measure_end_of_training(result: SweepResult, index: torch.Tensor, groups: torch.Tensor, sgld: SGLDConfig,
                            generator: torch.Generator, *, device: str, workers: int) -> EndOfTraining:
    """Training loss, weight norm, LLC (`sgld`, over `workers` worker processes) and circuit
    efficiency of the seeds at `index` (`groups`: every seed's outcome), on `device`."""
    device = torch.device(device)
    params = {k: v.to(device) for k, v in select_instances(result.final_params, index).items()}
    train = (result.train_left, result.train_right, result.train_labels)
    with torch.no_grad():
        train_loss = instance_loss(params, *(t.to(device) for t in train)).double().cpu()
        norm = parameter_norm(params).double().cpu()
    started = time.perf_counter()
    llc = mlp_llc_in_chunks(params, *train, sgld, generator, workers=workers)
    seconds = time.perf_counter() - started
    common = float(norm.median())
    with torch.no_grad():
        efficiency = loss_at_norm(params, *(t.to(device) for t in train), common).double().cpu()
    return EndOfTraining(index, groups[index], train_loss, norm, llc, common, efficiency, seconds)


__all__ = ["EndOfTraining", "first_seed_per_outcome", "measure_end_of_training"]
