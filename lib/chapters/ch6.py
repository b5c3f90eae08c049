"""Runs of chapter 6 (determination): when does a seed decide which group it groks?

This module holds three of the chapter's studies, two of them on a sweep (chapter 4's S4 sweep):

* `perturbation_study`: for chosen seeds, at every snapshot but the last, noisy copies at every
  scale (`lib.grokking.perturbation`) are continued to the end of training as one batch of
  instances, and their outcomes compared with the unperturbed continuation;
* `total_variation_study`: chosen seeds retrained with the same code and seeds, with dense
  snapshots over the last epochs, and the total variation and argmax flips of their logits
  there (`lib.grokking.total_variation`), on the pairs outside the training set and on it;
* `jacobian_spectra`: the singular values of the training Jacobian of one small MLP on a pair's
  intersection (`lib.grokking.training_jacobian`) after several training lengths, with and
  without weight decay, in float64 and float32.

The notebook, its parameters and the chapter's other studies (transplant, early prediction; each
in its `lib.grokking` module) join them in `notebooks/06_determination.py`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lib.grokking.mlp import MLPConfig, init_single, init_instances, select_instances
from lib.grokking.outcomes import first_epoch_at_or_above
from lib.grokking.pairs import make_pair, pairs_in_mask
from lib.grokking.perturbation import (
    change_probability, continue_training, decision_epoch, final_outcomes, perturbed_copies,
)
from lib.grokking.sweeps import intersection_training_set, pair_evaluations, sweep_outcomes
from lib.grokking.total_variation import argmax_flip_rate, snapshot_logits, total_variation
from lib.grokking.training import SweepConfig, SweepResult, snapshot_epochs, train_instances
from lib.grokking.training_jacobian import (
    adam, adam_start, finite_difference_error, flatten, mlp_loss, training_jacobian, training_map,
)


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
                       generator: torch.Generator, grok_threshold: float,
                       workers: int = 1) -> PerturbationStudy:
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


@dataclass
class TotalVariationStudy:
    """Total variation of chosen seeds' logits over the last epochs of training.

    Attributes:
        index: (B,) the seeds' positions in the sweep; outcome: (B,) their outcome codes in the
            retraining; same_outcome: whether those equal the sweep's.
        epochs: (E,) the snapshot epochs of the window.
        test_tv, test_flips: (B,) total variation and argmax flip rate on the pairs outside the
            training set; train_tv, train_flips: the same on the training pairs.
        train_accuracy: (B,) training accuracy at the start of the window.
    """

    index: torch.Tensor
    outcome: torch.Tensor
    same_outcome: bool
    epochs: torch.Tensor
    test_tv: torch.Tensor
    test_flips: torch.Tensor
    train_tv: torch.Tensor
    train_flips: torch.Tensor
    train_accuracy: torch.Tensor


def total_variation_study(result: SweepResult, index: torch.Tensor, window: int, every: int,
                          grok_threshold: float, workers: int = 1) -> TotalVariationStudy:
    """Retrain the seeds at `index` of `result` (same code, seeds and schedule) with a snapshot
    every `every` epochs over the last `window` epochs, and measure their logits' total
    variation and argmax flips there, off and on the training set."""
    epochs = result.training_config.epochs
    if not 0 < window <= epochs or not 0 < every <= window:
        raise ValueError(f"need 0 < every <= window <= the sweep's {epochs} epochs; got every={every}, "
                         f"window={window}.")
    marks = snapshot_epochs(epochs, every, start=epochs - window)
    schedule = dataclasses.replace(result.training_config, checkpoint_epochs=marks, workers=workers)
    pair = make_pair(result.info["pair"])
    initial = init_instances(result.seeds[index].tolist(), result.model_config)
    retrained = train_instances(initial, result.train_left, result.train_right, result.train_labels,
                                pair_evaluations(pair), schedule, seeds=result.seeds[index],
                                model_config=result.model_config, info=dict(result.info))
    trained = torch.zeros(pair.n_elements, pair.n_elements, dtype=torch.bool)
    trained[result.train_left, result.train_right] = True
    snapshots = [retrained.checkpoints[e] for e in marks]
    test_logits = snapshot_logits(snapshots, *pairs_in_mask(~trained))
    train_logits = snapshot_logits(snapshots, result.train_left, result.train_right)
    outcome = sweep_outcomes(retrained, grok_threshold, grok_threshold)
    in_sweep = sweep_outcomes(result, grok_threshold, grok_threshold)[index]
    logged = retrained.log_epochs.tolist()
    start = logged.index(marks[0]) if marks[0] in logged else None
    accuracy = (retrained.metrics["train_acc"][start] if start is not None
                else torch.full((len(index),), float("nan")))
    return TotalVariationStudy(
        index=index, outcome=outcome,
        same_outcome=bool(torch.equal(outcome, in_sweep)), epochs=torch.tensor(marks),
        test_tv=total_variation(test_logits), test_flips=argmax_flip_rate(test_logits),
        train_tv=total_variation(train_logits), train_flips=argmax_flip_rate(train_logits),
        train_accuracy=accuracy)


@dataclass
class JacobianSpectra:
    """Singular values of the training Jacobian of one MLP after several training lengths.

    Attributes:
        n_parameters: P, the size of the (P, P) Jacobians.
        lengths: the numbers of training steps (full-batch epochs), ascending.
        singular_values: (weight decay, dtype name) -> (len(lengths), P), descending per row.
        finite_difference_error: the largest relative error of the first setting's Jacobian
            at the shortest nonzero length against central differences (float64 only).
    """

    n_parameters: int
    lengths: list[int]
    singular_values: dict[tuple[float, str], torch.Tensor]
    finite_difference_error: float

    def near_one(self, key: tuple[float, str], tolerance: float = 0.1) -> torch.Tensor:
        """(len(lengths),) share of singular values within `tolerance` of 1 (the "bulk")."""
        return ((self.singular_values[key] - 1).abs() <= tolerance).double().mean(dim=1)


def jacobian_spectra(pair_name: str, model: MLPConfig, seed: int, schedule: SweepConfig,
                     lengths: Sequence[int], weight_decays: Sequence[float],
                     dtypes: Sequence[torch.dtype], generator: torch.Generator) -> JacobianSpectra:
    """The training Jacobian of seed `seed`'s MLP trained on the intersection of `pair_name`
    with `schedule`'s Adam settings, for `lengths` steps, each weight decay and dtype; its
    singular values, and a finite-difference check of the first float64 setting."""
    left, right, labels = intersection_training_set(make_pair(pair_name))
    params = init_single(seed, model)
    shapes = {name: tuple(value.shape) for name, value in params.items()}
    loss, mask = mlp_loss(shapes, left, right, labels)
    spectra, error = {}, float("nan")
    for decay in weight_decays:
        for dtype in dtypes:
            theta0 = flatten(params).to(dtype)
            step = adam(loss, schedule.lr, (schedule.beta1, schedule.beta2), schedule.eps, decay,
                        mask.to(dtype))
            rows = []
            for length in lengths:
                train = training_map(step, adam_start, length)
                jacobian = training_jacobian(train, theta0)
                rows.append(torch.linalg.svdvals(jacobian.double()))
                if error != error and dtype == torch.float64 and length > 0:
                    error = finite_difference_error(train, theta0, jacobian, 3, 1e-6, generator)
            spectra[decay, str(dtype).removeprefix("torch.")] = torch.stack(rows)
    return JacobianSpectra(int(flatten(params).numel()), list(lengths), spectra, error)


__all__ = ["JacobianSpectra", "PerturbationStudy", "TotalVariationStudy", "jacobian_spectra",
           "perturbation_study", "total_variation_study"]
