"""Runs of chapter 6 (determination): when does a seed decide which group it groks?

This module holds the chapter's perturbation study on a sweep with snapshots (chapter 4's S4
sweep): for chosen seeds, at every snapshot but the last, noisy copies at every scale
(`lib.grokking.perturbation`) are continued to the end of training as one batch of instances,
and their outcomes compared with the unperturbed continuation. The notebook, its parameters and
the other studies of the chapter (total variation, transplant, training Jacobian, early
prediction; each in its `lib.grokking` module) join it in `notebooks/06_determination.py`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lib.grokking.mlp import select_instances
from lib.grokking.outcomes import first_epoch_at_or_above
from lib.grokking.pairs import make_pair
from lib.grokking.perturbation import (
    change_probability, continue_training, decision_epoch, final_outcomes, perturbed_copies,
)
from lib.grokking.sweeps import sweep_outcomes
from lib.grokking.training import SweepResult


@dataclass
class PerturbationStudy:
    """Perturbed continuations of chosen seeds of a sweep, from each of its snapshots.

    Attributes:
        index: (B,) the seeds' positions in the sweep; sweep_outcome: (B,) their outcome codes
            there (`lib.grokking.outcomes`).
        checkpoints: (C,) the snapshot epochs perturbed (every snapshot before the last epoch).
        log2_scales: (S,) the noise scales, as powers of two.
        copies: K, noisy copies per seed, snapshot and scale.
        outcomes: (C, B, S, K) outcome code of every continued copy.
        reference: (C, B) outcome of the unperturbed continuation from each snapshot.
        probability: (C, B, S) share of copies whose outcome differs from the reference.
        choice_epoch: (B,) first logged epoch at which the seed's accuracy on all pairs against
            either group reaches the threshold (when its choice shows), -1 if never.
    """

    index: torch.Tensor
    sweep_outcome: torch.Tensor
    checkpoints: torch.Tensor
    log2_scales: torch.Tensor
    copies: int
    outcomes: torch.Tensor
    reference: torch.Tensor
    probability: torch.Tensor
    choice_epoch: torch.Tensor

    def decision_epochs(self, up_to_scale: int, tolerance: float = 0.0) -> torch.Tensor:
        """(B,) first snapshot from which no perturbation up to 2**up_to_scale changes the
        outcome more often than `tolerance`; -1 if some does even at the last snapshot."""
        kept = self.log2_scales <= up_to_scale
        if not kept.any():
            raise ValueError(f"no perturbation scale is at most 2**{up_to_scale}; the scales are "
                             f"2**{self.log2_scales.tolist()}.")
        worst = self.probability[:, :, kept].amax(dim=2)              # (C, B)
        return decision_epoch(worst, self.checkpoints.tolist(), tolerance)


def perturbation_study(result: SweepResult, index: torch.Tensor, log2_scales: Sequence[int], copies: int,
                       generator: torch.Generator, grok_threshold: float, workers: int = 1) -> PerturbationStudy:
    """Perturb the seeds at `index` of `result` at each of its snapshots (but the last) with
    Gaussian noise of scale 2**k for every k of `log2_scales`, `copies` times each, continue all
    of them to the sweep's last epoch with its schedule (optimizer anew), and compare outcomes."""
    pair = make_pair(result.info["pair"])
    train = (result.train_left, result.train_right, result.train_labels)
    epochs = result.training_config.epochs
    schedule = dataclasses.replace(result.training_config, workers=workers)
    checkpoints = [e for e in sorted(result.checkpoints) if e < epochs]
    scales = [0.0] + [2.0 ** k for k in log2_scales]                # scale 0: the reference
    outcomes, reference = [], []
    for epoch in checkpoints:
        params = select_instances(result.checkpoints[epoch], index)
        copied = perturbed_copies(params, scales, copies, generator)
        continued = continue_training(copied, pair, train, schedule, epochs - epoch)
        codes = final_outcomes(continued, len(scales), copies, grok_threshold)   # (B, 1 + S, K)
        reference.append(codes[:, 0, 0])
        outcomes.append(codes[:, 1:])
    outcomes, reference = torch.stack(outcomes), torch.stack(reference)
    probability = torch.stack([change_probability(o, r) for o, r in zip(outcomes, reference)])
    either = torch.maximum(result.metrics["acc_g1"], result.metrics["acc_g2"])[:, index]
    return PerturbationStudy(
        index=index, sweep_outcome=sweep_outcomes(result, grok_threshold, grok_threshold)[index],
        checkpoints=torch.tensor(checkpoints), log2_scales=torch.tensor(list(log2_scales)), copies=copies,
        outcomes=outcomes, reference=reference, probability=probability,
        choice_epoch=first_epoch_at_or_above(either, result.log_epochs, grok_threshold))


__all__ = ["PerturbationStudy", "perturbation_study"]
