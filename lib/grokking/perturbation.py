"""Perturbation sensitivity: from which epoch on does a seed keep its choice of group? (chapter 6)

The ambiguous-grokking study asks when a model "decides" which group it will grok: at evenly
spaced checkpoints it adds small noise to the weights and continues training anew from the
perturbed weights; once no small perturbation changes the final outcome, the model has decided
[@wu2025ambiguous]. Here:

* `perturbed_copies`: `copies` noisy copies per scale of every instance, as new instances of
  the batched MLP (leading dimension B * S * K, instance-major: instance b, scale s, copy k is
  row (b * S + s) * K + k). Two noise shapes (`NOISE_SHAPES`), at scale s:
  - "init", the authors' (their `perturb.ipynb`): shaped like the initialization, N(0, s^2) on
    the embeddings, uniform on [-s / sqrt(fan_in), s / sqrt(fan_in)] on the linear maps
    (fan_in = d, the rows of each d x h map: their noise calls their kaiming-uniform helper
    without the 1 / sqrt(2) that their initialization applies, so the noise bound is
    s / sqrt(d) while the initialization's is 1 / sqrt(2d), `lib.grokking.mlp`) and on the
    unembedding (fan_in = h), and uniform with bound s / sqrt(h) on the unembedding bias;
  - "gaussian", the book's first choice: N(0, s^2) on every entry, about sqrt(3 d) (about 10)
    times larger on the linear maps than "init" at the same nominal scale.
  With `relative=True` the noise is further scaled by each parameter tensor's root mean square.
* `continue_training`: train such copies for the remaining epochs with the sweep trainer. The
  optimizer starts anew (fresh Adam moments and step count), as the study continued "anew";
  everything else (learning rate, betas, weight decay, full batch) as in the original run.
* `retrain_with_snapshots`: seeds of a sweep trained again along the same trajectories, with
  the snapshots the sweep did not keep.
* `perturbation_study` and `PerturbationStudy`: perturbed continuations of chosen seeds from
  each snapshot, the share of copies whose outcome changes (`change_probability`) and the
  decision epochs (`decision_epoch`: the first checkpoint from which the change probability
  stays at or below a tolerance at every later checkpoint).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lib.book.params import ParameterError
from lib.grokking.mlp import init_instances, select_instances
from lib.grokking.outcomes import classify_outcomes, first_epoch_at_or_above
from lib.grokking.pairs import GroupPair, make_pair
from lib.grokking.sweeps import pair_evaluations, sweep_outcomes
from lib.grokking.training import SweepConfig, SweepResult, train_instances

#: The noise shapes of `perturbed_copies`: the authors' (shaped like the initialization) first.
NOISE_SHAPES = ("init", "gaussian")


def noise_sizes(params: dict[str, torch.Tensor], shape: str) -> dict[str, tuple[str, float]]:
    """Per parameter: the distribution ("normal" or "uniform") and its size at scale 1 (the
    standard deviation of a normal, the bound of a uniform) of the noise shape `shape`."""
    if shape not in NOISE_SHAPES:
        raise ParameterError(f"Parameter `noise_shape` must be one of {list(NOISE_SHAPES)}; got {shape!r}.")
    sizes = {}
    for name, value in params.items():
        if shape == "gaussian" or name.startswith("embed"):
            sizes[name] = ("normal", 1.0)
        elif name.startswith("linear") or name == "unembed":
            sizes[name] = ("uniform", 1.0 / math.sqrt(value.shape[-2]))      # fan_in: d or h
        elif name == "unembed_bias":
            sizes[name] = ("uniform", 1.0 / math.sqrt(params["unembed"].shape[-2]))   # 1 / sqrt(h)
        else:
            raise ValueError(f"no noise shape is defined for the parameter {name!r}.")
    return sizes


def perturbed_copies(params: dict[str, torch.Tensor], scales: Sequence[float], copies: int,
                     generator: torch.Generator, relative: bool = False,
                     shape: str = "gaussian") -> dict[str, torch.Tensor]:
    """`copies` copies of every instance at every scale, each with its own noise of `shape`
    (`NOISE_SHAPES`; see the module docstring).

    Returns parameters with B * S * K instances (see the module docstring for the order). A
    scale of 0 gives exact copies. Noise is drawn on the generator's device, one tensor per
    parameter in dict order.
    """
    if copies < 1:
        raise ParameterError(f"Parameter `copies` must be an integer of at least 1; got {copies!r}.")
    if any(not scale >= 0 for scale in scales):
        raise ParameterError(f"Parameter `scales` must be a list of numbers of at least 0; "
                             f"got {list(scales)!r}.")
    # sizes are read from one instance's shapes (the leading instances dimension dropped)
    sizes = noise_sizes({name: value[0] for name, value in params.items()}, shape)
    b, s, k = next(iter(params.values())).shape[0], len(scales), copies
    scale = torch.tensor(scales, dtype=torch.float64)
    out = {}
    for name, value in params.items():
        dims = value.shape[1:]
        repeated = value[:, None, None].expand(b, s, k, *dims)
        size = scale.to(value.dtype).to(value.device).view(1, s, 1, *([1] * len(dims)))
        if relative:
            rms = value.pow(2).flatten(1).mean(dim=1).sqrt().view(b, 1, 1, *([1] * len(dims)))
            size = size * rms
        kind, unit = sizes[name]
        if kind == "normal":
            noise = torch.randn((b, s, k, *dims), generator=generator, device=generator.device, dtype=value.dtype)
        else:
            noise = torch.rand((b, s, k, *dims), generator=generator, device=generator.device,
                               dtype=value.dtype) * 2.0 - 1.0
        out[name] = (repeated + size * unit * noise.to(value.device)).reshape(b * s * k, *dims)
    return out


def continue_training(params: dict[str, torch.Tensor], pair: GroupPair, train: tuple[torch.Tensor, ...],
                      schedule: SweepConfig, epochs: int) -> SweepResult:
    """Train `params` (e.g. perturbed copies) for `epochs` more epochs on the training pairs
    `train` (left, right, labels) with `schedule`'s optimizer settings, the optimizer anew."""
    config = dataclasses.replace(schedule, epochs=epochs, checkpoint_epochs=(),
                                 log_every=min(schedule.log_every, epochs))
    return train_instances(params, *train, pair_evaluations(pair), config, info={
        "pair": pair.name, "g1": pair.g1.name, "g2": pair.g2.name})


def retrain_with_snapshots(result: SweepResult, index: torch.Tensor, marks: Sequence[int],
                           workers: int = 1, epochs: int | None = None) -> SweepResult:
    """The seeds at `index` of `result` trained again from their initial weights with the same
    code, seeds and schedule (so along the same trajectories), keeping snapshots at `marks`;
    for `epochs` epochs when given (longer runs extend the same trajectories)."""
    schedule = dataclasses.replace(result.training_config, checkpoint_epochs=tuple(marks), workers=workers,
                                   epochs=epochs or result.training_config.epochs)
    pair = make_pair(result.info["pair"])
    initial = init_instances(result.seeds[index].tolist(), result.model_config)
    return train_instances(initial, result.train_left, result.train_right, result.train_labels,
                           pair_evaluations(pair), schedule, seeds=result.seeds[index],
                           model_config=result.model_config, info=dict(result.info))


def outcomes_at(result: SweepResult, epoch: int, grok_threshold: float) -> torch.Tensor:
    """(B,) outcome code of every seed of `result` at logged epoch `epoch`."""
    logged = result.log_epochs.tolist()
    if epoch not in logged:
        raise ValueError(f"epoch {epoch} was not logged; logged epochs run {logged[0]}..{logged[-1]} "
                         f"every {result.training_config.log_every}.")
    row = logged.index(epoch)
    metrics = result.metrics
    return classify_outcomes(metrics["acc_g1"][row], metrics["acc_g2"][row], metrics["train_acc"][row],
                             grok_threshold, grok_threshold)


def final_outcomes(result: SweepResult, n_scales: int, copies: int, grok_threshold: float) -> torch.Tensor:
    """The outcome code of every continued copy, shaped (B, S, K)."""
    return sweep_outcomes(result, grok_threshold, grok_threshold).view(-1, n_scales, copies)


def change_probability(outcomes: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """(B, S) share of the K copies whose outcome differs from each instance's reference (B,)."""
    return (outcomes != reference[:, None, None]).double().mean(dim=2)


def decision_epoch(probability: torch.Tensor, epochs: Sequence[int], tolerance: float = 0.0) -> torch.Tensor:
    """First checkpoint epoch from which the change probability, (C, B) over checkpoints in the
    order of `epochs`, stays at or below `tolerance` at every later checkpoint; -1 if even the
    last checkpoint is above it."""
    settled = probability <= tolerance
    # settled from checkpoint c on: all of c, c+1, ..., C-1 are settled
    from_here = settled.int().flip(0).cummin(dim=0).values.flip(0).bool()
    first = torch.where(from_here.any(dim=0), from_here.double().argmax(dim=0), torch.tensor(-1))
    table = torch.tensor(list(epochs))
    return torch.where(first >= 0, table[first.clamp(min=0)], torch.tensor(-1))


@dataclass
class PerturbationStudy:
    """Perturbed continuations of chosen seeds of a sweep, from each of its snapshots.

    Attributes:
        index: (B,) the seeds' positions in the sweep; sweep_outcome: (B,) their outcome codes
            there (`lib.grokking.outcomes`).
        checkpoints: (C,) the snapshot epochs perturbed (every snapshot before the last epoch).
        log2_scales: (S,) the noise scales, as powers of two.
        copies: K, noisy copies per seed, snapshot and scale.
        noise_shape: the noise's shape (`NOISE_SHAPES`).
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
    noise_shape: str
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
                       workers: int = 1, noise_shape: str = "init") -> PerturbationStudy:
    """Perturb the seeds at `index` of `result` at each of its snapshots (but the last) with
    noise of `noise_shape` at scale 2**k for every k of `log2_scales`, `copies` times each,
    continue all of them and one noiseless copy per seed to the sweep's last epoch with its
    schedule (optimizer anew), and compare the outcomes."""
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
        copied = [perturbed_copies(params, [0.0], 1, generator, shape=noise_shape),
                  perturbed_copies(params, scales, copies, generator, shape=noise_shape)]
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
        noise_shape=noise_shape, outcomes=outcomes, reference=reference, probability=probability,
        accuracy_shift=torch.stack(shift),
        choice_epoch=first_epoch_at_or_above(either, result.log_epochs, grok_threshold))


__all__ = ["NOISE_SHAPES", "PerturbationStudy", "change_probability", "continue_training", "decision_epoch",
           "final_outcomes", "noise_sizes", "outcomes_at", "perturbation_study", "perturbed_copies",
           "retrain_with_snapshots"]
