"""Perturbation sensitivity of chosen seeds: from which checkpoint on is their outcome fixed? (chapter 6)

`perturbation_study` perturbs chosen seeds of a sweep at each of its snapshots but the last with
Gaussian noise at several scales (`lib.grokking.perturbation`), continues every noisy copy and
one noiseless copy per seed to the end of training as one batch of instances, and compares their
outcomes; `PerturbationStudy` holds the result and reads decision epochs from it. Chapter 6's
notebook runs it on seeds retrained with dense snapshots (`lib.chapters.ch6.retrain_with_snapshots`),
and its live panel on one seed at one scale (`lib.chapters.ch6_figures.rerun_perturbation`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lib.grokking.mlp import select_instances
from lib.grokking.outcomes import first_epoch_at_or_above
from lib.grokking.pairs import make_pair
from lib.grokking.perturbation import change_probability, continue_training, decision_epoch, perturbed_copies
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
        accuracy_shift: (C, B, S) how far the copies end from the reference in function: the
            absolute difference of final accuracy against each group, averaged over both
            groups and the copies (moves with the scale even where no outcome changes).
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
    accuracy_shift: torch.Tensor
    choice_epoch: torch.Tensor

    @property
    def sweep_group(self) -> torch.Tensor:
        """(B,) each seed's outcome group in the sweep (index into `lib.grokking.study_sweep.GROUPS`:
        grokked S4, grokked A4xZ2, neither)."""
        return self.sweep_outcome.clamp(max=2)

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
                       generator: torch.Generator, grok_threshold: float,
                       workers: int = 1) -> PerturbationStudy:
    """Perturb the seeds at `index` of `result` at each of its snapshots (but the last) with
    Gaussian noise of scale 2**k for every k of `log2_scales`, `copies` times each, continue all
    of them and one noiseless copy per seed to the sweep's last epoch with its schedule
    (optimizer anew, `lib.grokking.perturbation`), and compare the outcomes."""
    pair = make_pair(result.info["pair"])
    train = (result.train_left, result.train_right, result.train_labels)
    epochs = result.training_config.epochs
    schedule = dataclasses.replace(result.training_config, workers=workers)
    checkpoints = [e for e in sorted(result.checkpoints) if e < epochs]
    scales = [2.0 ** k for k in log2_scales]
    outcomes, reference, shift = [], [], []
    for epoch in checkpoints:
        params = select_instances(result.checkpoints[epoch], index)
        # One noiseless copy per seed (the reference) and the noisy ones, trained as one batch.
        copied = [perturbed_copies(params, [0.0], 1, generator),
                  perturbed_copies(params, scales, copies, generator)]
        both = {name: torch.cat([c[name] for c in copied]) for name in params}
        continued = continue_training(both, pair, train, schedule, epochs - epoch)
        codes = sweep_outcomes(continued, grok_threshold, grok_threshold)
        reference.append(codes[:len(index)])
        outcomes.append(codes[len(index):].view(len(index), len(scales), copies))
        accuracy = torch.stack([continued.final("acc_g1"), continued.final("acc_g2")]).double()   # (2, n)
        noisy = accuracy[:, len(index):].view(2, len(index), len(scales), copies)
        shift.append((noisy - accuracy[:, :len(index), None, None]).abs().mean(dim=(0, 3)))
    outcomes, reference = torch.stack(outcomes), torch.stack(reference)
    probability = torch.stack([change_probability(o, r) for o, r in zip(outcomes, reference)])
    either = torch.maximum(result.metrics["acc_g1"], result.metrics["acc_g2"])[:, index]
    return PerturbationStudy(
        index=index, sweep_outcome=sweep_outcomes(result, grok_threshold, grok_threshold)[index],
        checkpoints=torch.tensor(checkpoints), log2_scales=torch.tensor(list(log2_scales)), copies=copies,
        outcomes=outcomes, reference=reference, probability=probability,
        accuracy_shift=torch.stack(shift),
        choice_epoch=first_epoch_at_or_above(either, result.log_epochs, grok_threshold))


__all__ = ["PerturbationStudy", "perturbation_study"]
