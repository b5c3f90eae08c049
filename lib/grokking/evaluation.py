"""Scoring many MLP instances at once on all N^2 pairs of a group (chapters 4-6).

`evaluate_instances` computes, for every instance of a parameter dict with a leading instances
dimension, the training loss and accuracy and the accuracy against each `Evaluation` (a label
table, optionally restricted to a mask of pairs). The sweep trainer (`lib.grokking.training`)
calls it at every logged epoch; it takes any parameters, e.g. perturbed ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lib.grokking.mlp import n_instances


@dataclass(frozen=True)
class Evaluation:
    """A set of pairs and the labels a model is scored against on them.

    Attributes:
        name: key of the metric ("acc_<name>" in `SweepResult.metrics`).
        labels: (N, N) LongTensor of correct outputs, e.g. a group's table.
        mask: (N, N) BoolTensor of the pairs scored; None scores all N^2 pairs.
    """

    name: str
    labels: torch.Tensor
    mask: torch.Tensor | None = None


@torch.no_grad()
def evaluate_instances(
    params: dict[str, torch.Tensor],
    evaluations: Sequence[Evaluation],
    train_left: torch.Tensor,
    train_right: torch.Tensor,
    train_labels: torch.Tensor,
    max_logits: int = 2 ** 24,
) -> dict[str, torch.Tensor]:
    """Per-instance training loss and accuracy, and accuracy on each evaluation, each (B,).

    One forward pass over all N^2 pairs serves every metric; instances are processed in groups
    of at most `max_logits` logits to bound memory. Logits are laid out (B, N, N^2) so that
    the reductions over classes run along a short axis with a long contiguous inner one.
    """
    n = params["unembed"].shape[-1]
    device = params["unembed"].device
    train_index = (train_left * n + train_right).to(device)
    train_labels = train_labels.to(device)
    # Accuracy on an evaluation = (number correct inside the mask) / (mask size), exact counts.
    targets = []
    for e in evaluations:
        mask = torch.ones(n * n, device=device) if e.mask is None else e.mask.flatten().to(device).float()
        targets.append((e.labels.flatten().to(device), mask, float(mask.sum())))
    # Class c weighs n - c: among the classes with the maximal logit, the first weighs most.
    first_weight = (n - torch.arange(n, device=device)).to(torch.uint8 if n < 256 else torch.int16)
    first_weight = first_weight[None, :, None]
    b_total = n_instances(params)
    step = max(1, max_logits // (n * n * n))
    out = {key: torch.empty(b_total, device=device)
           for key in ["train_loss", "train_acc"] + [f"acc_{e.name}" for e in evaluations]}
    for start in range(0, b_total, step):
        part = {k: v[start:start + step] for k, v in params.items()}
        b = part["unembed"].shape[0]
        left_rows = torch.bmm(part["embed_left"], part["linear_left"])
        right_rows = torch.bmm(part["embed_right"], part["linear_right"])
        hidden = (left_rows[:, :, None, :] + right_rows[:, None, :, :]).relu_().view(b, n * n, -1)
        logits = torch.bmm(part["unembed"].transpose(1, 2), hidden.transpose(1, 2))   # (b, N, N^2)
        if "unembed_bias" in part:
            logits += part["unembed_bias"][:, :, None]
        col_max = logits.amax(dim=1)                                                # (b, N^2)
        # argmax over classes (first maximum, as torch.argmax) via a max over small integers,
        # several times faster on a CPU than torch.argmax or a where/amin over dim 1.
        is_max = (logits == col_max[:, None, :]).view(torch.uint8)
        predictions = n - (is_max * first_weight).amax(dim=1).int()
        log_sum_exp = (logits - col_max[:, None, :]).exp_().sum(dim=1).log_().add_(col_max)
        train_label_logit = logits.view(b, -1).index_select(1, train_labels * (n * n) + train_index)
        rows = slice(start, start + b)
        out["train_loss"][rows] = (log_sum_exp.index_select(1, train_index) - train_label_logit).mean(1)
        out["train_acc"][rows] = (predictions.index_select(1, train_index) == train_labels).float().mean(1)
        for e, (labels, mask, size) in zip(evaluations, targets):
            out[f"acc_{e.name}"][rows] = ((predictions == labels).float() @ mask) / size
    return out


__all__ = ["Evaluation", "evaluate_instances"]
