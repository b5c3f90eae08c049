"""Private torch kernels of the instance trainer, each beside its public-op fallback (chapters 4-6).

A private kernel is one outside torch's documented API (a name with a leading underscore,
`torch.ops.aten.*`); it may change or vanish in another release of torch. The hand-written
training step (`lib.grokking.chunk_step`) calls none itself: the ones worth keeping live here,
used when `PRIVATE_OPS` is true and the installed torch has them, with public operations
otherwise. tests/test_grokking_fused_ops.py checks that both give the same numbers up to rounding.

Fenced here, and why: `FlatAdam` updates with `torch._fused_adam_`, one pass over the
parameters, gradients and moments instead of eight elementwise operations. Timed step by step
on the S4 pair (chunks of 84 instances, one thread, paired with the fused version on a shared
2-core machine), the public version made the whole training step 7-11% slower.

The rest of the step needs no private kernel. Its ReLU backward multiplies the gradient by the
0/1 mask `hidden.gt_(0)`: the same numbers as `aten.threshold_backward`, and within about 1% of
its speed (a bool mask `hidden > 0` instead made the step 84% slower: comparisons into bool and
float-by-bool products are slow on a CPU).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

#: Use torch's private kernels where the installed torch has them; False runs public ops only.
PRIVATE_OPS: bool = True

#: torch's fused Adam kernel for CPU and GPU (private; present in the pinned torch 2.x).
_FUSED_ADAM = getattr(torch, "_fused_adam_", None)


class FlatAdam:
    """Adam with coupled L2 weight decay (torch.optim.Adam's rule) on one flat parameter buffer.

    The trainer keeps all parameters of a chunk of instances in one flat tensor and their
    gradients in another of the same layout, so one call updates every instance. Adam acts
    elementwise, so each instance follows its own trajectory.

    Args:
        param, grad: the flat parameters (updated in place) and their gradients (the plain
            version adds the weight decay term to `grad` in place).
        decay_regions: (slice of the flat buffers, weight decay) pairs that cover them; the
            unembedding bias, stored last, has no weight decay.
        lr, beta1, beta2, eps: Adam's hyperparameters.
    """

    def __init__(self, param: torch.Tensor, grad: torch.Tensor,
                 decay_regions: Sequence[tuple[slice, float]],
                 lr: float, beta1: float, beta2: float, eps: float):
        self.param, self.grad = param, grad
        self.decay_regions = list(decay_regions)
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.exp_avg = torch.zeros_like(param)
        self.exp_avg_sq = torch.zeros_like(param)
        self.steps = 0
        self._step_tensor = torch.zeros((), dtype=param.dtype, device=param.device)  # the fused kernel's
        self._denominator: torch.Tensor | None = None                              # the plain version's

    def step(self) -> None:
        """One Adam update of `param` from the current `grad`."""
        self.steps += 1
        if PRIVATE_OPS and _FUSED_ADAM is not None:
            self._fused_step()
        else:
            self._plain_step()

    def _fused_step(self) -> None:
        self._step_tensor.fill_(self.steps)
        for region, decay in self.decay_regions:
            _FUSED_ADAM([self.param[region]], [self.grad[region]], [self.exp_avg[region]],
                        [self.exp_avg_sq[region]], [], [self._step_tensor], lr=self.lr,
                        beta1=self.beta1, beta2=self.beta2, weight_decay=decay, eps=self.eps,
                        amsgrad=False, maximize=False)

    def _plain_step(self) -> None:
        for region, decay in self.decay_regions:
            if decay != 0:
                self.grad[region].add_(self.param[region], alpha=decay)
        self.exp_avg.lerp_(self.grad, 1 - self.beta1)
        self.exp_avg_sq.mul_(self.beta2).addcmul_(self.grad, self.grad, value=1 - self.beta2)
        bias_correction1 = 1 - self.beta1 ** self.steps
        bias_correction2 = 1 - self.beta2 ** self.steps
        if self._denominator is None:
            self._denominator = torch.empty_like(self.param)
        denominator = torch.sqrt(self.exp_avg_sq, out=self._denominator)
        denominator.div_(bias_correction2 ** 0.5).add_(self.eps)
        self.param.addcdiv_(self.exp_avg, denominator, value=-self.lr / bias_correction1)


__all__ = ["PRIVATE_OPS", "FlatAdam"]
