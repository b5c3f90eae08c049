"""Total variation of a model's outputs over a stretch of training, and its argmax flips (chapter 6).

The study found that seeds which grok either group "lock in" their function late in training,
while many that grok neither keep oscillating on the pairs outside the training set; it measured
the total variation of the test-set logits over a fixed late interval and reported how often the
predicted class flips (argmax flips: about 5.4e-5 for seeds that grokked S4, 4e-4 for A4 x Z2,
6.5e-3 for neither) [@wu2025ambiguous]. Here, from the logits of B models at E snapshots on P
pairs, (E, B, P, N):

* `total_variation`: the sum over consecutive snapshots of the mean over pairs of the Euclidean
  distance between the two logit vectors, (B,);
* `argmax_flip_rate`: the share of (consecutive snapshot pair, pair) at which the predicted class
  changes, (B,);
* `snapshot_logits`: the logits of every snapshot on chosen pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lib.grokking.mlp import instance_logits


def snapshot_logits(snapshots: Sequence[dict[str, torch.Tensor]], left: torch.Tensor,
                    right: torch.Tensor) -> torch.Tensor:
    """(E, B, P, N) logits of the B models of every snapshot on the P pairs (left, right)."""
    with torch.no_grad():
        return torch.stack([instance_logits(params, left, right) for params in snapshots])


def _check(logits: torch.Tensor) -> None:
    if logits.dim() != 4 or logits.shape[0] < 2:
        raise ValueError(f"logits must be (snapshots >= 2, models, pairs, classes); "
                         f"got shape {tuple(logits.shape)}.")


def total_variation(logits: torch.Tensor) -> torch.Tensor:
    """(B,) sum over consecutive snapshots of the mean over pairs of |z_{e+1}(p) - z_e(p)|_2."""
    _check(logits)
    steps = (logits[1:] - logits[:-1]).double().norm(dim=3)        # (E - 1, B, P)
    return steps.mean(dim=2).sum(dim=0)


def argmax_flip_rate(logits: torch.Tensor) -> torch.Tensor:
    """(B,) share of (consecutive snapshots, pair) at which the argmax of the logits changes."""
    _check(logits)
    predicted = logits.argmax(dim=3)                                # (E, B, P)
    return (predicted[1:] != predicted[:-1]).double().mean(dim=(0, 2))


__all__ = ["argmax_flip_rate", "snapshot_logits", "total_variation"]
