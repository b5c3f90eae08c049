"""The study's one S5 model whose measures are followed over training: its run and what it reached (chapter 5).

The study trained ONE S5 model (d = h = 128, no bias, 40% of the S5 table, weight decay 2e-5,
2,000 epochs) and computed Jiang et al.'s measures, the training loss and the LLC at a checkpoint
every 3 epochs (`lib.grokking.study.S5_MEASURES_PROTOCOL`). `train_s5_measures_model` trains that
model at a chosen width and length with a checkpoint (and logged metrics) every `every` epochs,
for `lib.grokking.measures_over_time`; `run_summary` says how far the run got.
"""

from __future__ import annotations

import dataclasses

import torch

from lib.grokking.groups import symmetric
from lib.grokking.outcomes import first_epoch_at_or_above
from lib.grokking.study import S5_MEASURES_MODEL, S5_MEASURES_PROTOCOL
from lib.grokking.sweeps import run_group_sweep
from lib.grokking.training import SweepConfig, SweepResult, snapshot_epochs


def train_s5_measures_model(seeds: list[int], epochs: int, every: int, dim: int, train_fraction: float,
                            generator: torch.Generator, *, device: str, progress: bool = True) -> SweepResult:
    """The study's one S5 model without the bias (width `dim`; `seeds`: its seed, one), trained
    `epochs` epochs on a random `train_fraction` of the S5 table (drawn from `generator`), with a
    checkpoint (and logged metrics) every `every` epochs."""
    schedule = SweepConfig(epochs=epochs, log_every=every,
                           weight_decay=S5_MEASURES_PROTOCOL["weight_decay"],
                           checkpoint_epochs=snapshot_epochs(epochs, every), workers=1)
    model = dataclasses.replace(S5_MEASURES_MODEL, embed_dim=dim, hidden_dim=dim)
    return run_group_sweep(symmetric(5), seeds, model, schedule, train_fraction=train_fraction,
                           generator=generator, device=device, progress=progress)


def run_summary(result: SweepResult, threshold: float) -> dict:
    """Training accuracy and accuracy on the whole table at the end, and the first epochs at
    which the model fits its training set and groks S5 (-1: never), from the logged metrics."""
    logged = result.log_epochs
    return {"final_train_accuracy": float(result.final("train_acc")[0]),
            "final_test_accuracy": float(result.final("acc_test")[0]),
            "fitted_epoch": int(first_epoch_at_or_above(result.metrics["train_acc"], logged, threshold)[0]),
            "grok_epoch": int(first_epoch_at_or_above(result.metrics["acc_test"], logged, threshold)[0])}


__all__ = ["run_summary", "train_s5_measures_model"]
