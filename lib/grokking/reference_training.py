"""One model trained alone, written plainly with autograd and torch.optim.Adam: the reference the
instance-batched trainer (`lib.grokking.training`, `lib.grokking.chunk_step`) is tested against,
and a small trainer for tests that need one trained model (chapters 4-6's tests)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lib.grokking.mlp import NO_DECAY, MLPConfig, init_single, single_logits
from lib.grokking.training import SweepConfig


def train_single(
    seed: int,
    model_config: MLPConfig,
    train_left: torch.Tensor,
    train_right: torch.Tensor,
    train_labels: torch.Tensor,
    config: SweepConfig,
    record_epochs: Sequence[int] = (),
    dtype: torch.dtype = torch.float32,
) -> tuple[dict[str, torch.Tensor], dict[int, dict[str, torch.Tensor]], list[float]]:
    """Train one model alone, written plainly with autograd and torch.optim.Adam (the reference).

    Returns the final parameters, the parameters at `record_epochs`, and the training loss at
    every epoch (before that epoch's update).
    """
    params = {k: v.to(dtype).requires_grad_() for k, v in init_single(seed, model_config).items()}
    trained = dict(params)
    if model_config.tied_linear:  # one map: the right one is the left one, trained once
        params["linear_right"] = params["linear_left"]
        del trained["linear_right"]
    groups = [{"params": [v for k, v in trained.items() if k not in NO_DECAY],
               "weight_decay": config.weight_decay}]
    if any(k in NO_DECAY for k in trained):
        groups.append({"params": [v for k, v in trained.items() if k in NO_DECAY], "weight_decay": 0.0})
    optimizer = torch.optim.Adam(groups, lr=config.lr, betas=(config.beta1, config.beta2), eps=config.eps)
    recorded, losses = {}, []
    for epoch in range(config.epochs + 1):
        if epoch in record_epochs:
            recorded[epoch] = {k: v.detach().clone() for k, v in params.items()}
        if epoch == config.epochs:
            break
        loss = torch.nn.functional.cross_entropy(single_logits(params, train_left, train_right),
                                                 train_labels)
        losses.append(float(loss.detach()))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {k: v.detach() for k, v in params.items()}, recorded, losses


__all__ = ["train_single"]
