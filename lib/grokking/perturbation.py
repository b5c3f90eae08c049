"""Perturbation sensitivity: from which epoch on does a seed keep its choice of group? (chapter 6)

The ambiguous-grokking study asks when a model "decides" which group it will grok: at evenly
spaced checkpoints it adds small Gaussian noise to all weights and continues training anew from
the perturbed weights; once no small perturbation changes the final outcome, the model has
decided [@wu2025ambiguous]. Here:

* `perturbed_copies`: `copies` noisy copies per scale of every instance, as new instances of
  the batched MLP (leading dimension B * S * K, instance-major: instance b, scale s, copy k is
  row (b * S + s) * K + k). The noise is scale * N(0, 1) on every parameter (absolute, the
  study's 2^k), or, with `relative=True`, scale times each parameter tensor's root mean square
  for that instance.
* `continue_training`: train such copies for the remaining epochs with the sweep trainer. The
  optimizer starts anew (fresh Adam moments and step count), as the study continued "anew";
  everything else (learning rate, betas, weight decay, full batch) as in the original run.
* `change_probability`: per instance and scale, the share of copies whose final outcome differs
  from the unperturbed continuation (the scale-0 copy continued under the same rules, so that
  only the noise differs).
* `decision_epoch`: the first checkpoint from which the change probability stays at or below a
  tolerance at every later checkpoint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from lib.book.params import ParameterError
from lib.grokking.pairs import GroupPair
from lib.grokking.sweeps import pair_evaluations, sweep_outcomes
from lib.grokking.training import SweepConfig, SweepResult, train_instances


def perturbed_copies(params: dict[str, torch.Tensor], scales: Sequence[float], copies: int,
                     generator: torch.Generator, relative: bool = False) -> dict[str, torch.Tensor]:
    """`copies` copies of every instance at every scale, each with its own Gaussian noise.

    Returns parameters with B * S * K instances (see the module docstring for the order). A
    scale of 0 gives exact copies. Noise is drawn on the generator's device, one tensor per
    parameter in dict order.
    """
    if copies < 1:
        raise ParameterError(f"Parameter `copies` must be an integer of at least 1; got {copies!r}.")
    if any(not scale >= 0 for scale in scales):
        raise ParameterError(f"Parameter `scales` must be a list of numbers of at least 0; "
                             f"got {list(scales)!r}.")
    b, s, k = next(iter(params.values())).shape[0], len(scales), copies
    scale = torch.tensor(scales, dtype=torch.float64)
    out = {}
    for name, value in params.items():
        shape = value.shape[1:]
        repeated = value[:, None, None].expand(b, s, k, *shape)
        size = scale.to(value.dtype).to(value.device).view(1, s, 1, *([1] * len(shape)))
        if relative:
            rms = value.pow(2).flatten(1).mean(dim=1).sqrt().view(b, 1, 1, *([1] * len(shape)))
            size = size * rms
        noise = torch.randn((b, s, k, *shape), generator=generator, device=generator.device,
                            dtype=value.dtype).to(value.device)
        out[name] = (repeated + size * noise).reshape(b * s * k, *shape)
    return out


def continue_training(params: dict[str, torch.Tensor], pair: GroupPair, train: tuple[torch.Tensor, ...],
                      schedule: SweepConfig, epochs: int) -> SweepResult:
    """Train `params` (e.g. perturbed copies) for `epochs` more epochs on the training pairs
    `train` (left, right, labels) with `schedule`'s optimizer settings, the optimizer anew."""
    config = dataclasses.replace(schedule, epochs=epochs, checkpoint_epochs=(),
                                 log_every=min(schedule.log_every, epochs))
    return train_instances(params, *train, pair_evaluations(pair), config, info={
        "pair": pair.name, "g1": pair.g1.name, "g2": pair.g2.name})


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


__all__ = ["change_probability", "continue_training", "decision_epoch", "final_outcomes",
           "perturbed_copies"]
