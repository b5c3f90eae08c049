"""The softmax of both hand-built BFS transformers: torch's softmax, written out (chapter 1).

The constructions' attention rows are short (n + 1 = 9 keys at n = 8). On a CPU, `torch.softmax`
over such a last dimension costs about 6x what the same softmax written as whole-tensor
operations (subtract the row maximum, exp, divide by the row sum) costs, on any scores
(`benchmarks/bench_chapter_1_2_steps.py`), and it was the largest single cost of a retraining
step. The written-out form also clamps the shifted scores at `log(smallest normal) + 1` before
`exp`: `exp` of an argument whose result would be a denormal float (for float32 between about
-103 and -87) takes a slow path, about 35x slower than in the normal range even with denormals
flushed, and a damaged construction's stiff attention puts about 0.7% of its weights there
(none in the intact ones). Such a weight becomes about 3e-38 (float32) instead of a denormal or
zero, so each row differs from `torch.softmax` by less than that, far below what any loss,
distance or gradient of the book resolves. The backward is the softmax's own
(`p * (g - sum(p * g))` at the returned probabilities).

Chapter 1 retrains 40 damaged copies of the two constructions with it; chapter 7 reads the
book's construction through it.
"""

from __future__ import annotations

import math

import torch


def smallest_normal_log(dtype: torch.dtype) -> float:
    """One plus the log of the smallest normal number of `dtype`: below it `exp` gives denormals."""
    return math.log(torch.finfo(dtype).tiny) + 1.0


class _UnderflowFreeSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores: torch.Tensor) -> torch.Tensor:
        shifted = scores - scores.amax(dim=-1, keepdim=True)
        weights = shifted.clamp_(min=smallest_normal_log(scores.dtype)).exp_()
        probabilities = weights.div_(weights.sum(dim=-1, keepdim=True))
        ctx.save_for_backward(probabilities)
        return probabilities

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (probabilities,) = ctx.saved_tensors
        return probabilities * (grad - (grad * probabilities).sum(dim=-1, keepdim=True))


def underflow_free_softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension whose weights are never denormal (see the module docstring)."""
    return _UnderflowFreeSoftmax.apply(scores)


__all__ = ["smallest_normal_log", "underflow_free_softmax"]
