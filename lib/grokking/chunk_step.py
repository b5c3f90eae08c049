"""One full-batch training step of a chunk of MLP instances, gradient written by hand (chapters 4-6).

`ChunkStep` holds the parameters of B instances (see `lib.grokking.mlp`), their gradients and
Adam moments, and updates them in place: forward pass on the T training pairs, gradient of each
instance's mean cross-entropy, Adam with coupled weight decay. The loss of the chunk is the sum
of the instances' losses and Adam acts elementwise, so every instance follows the trajectory it
would follow if trained alone (`lib.grokking.reference_training.train_single`; the tests compare them).
The sweep trainer of `lib.grokking.training` runs one `ChunkStep` per chunk of a sweep; chapter
5's LLC estimator (`lib.grokking.mlp_llc`) uses the same gradient without Adam for its SGLD.

Why by hand: without an autograd graph nothing is allocated inside the epoch loop except the
gathered hidden layer, and the embedding lookups fuse with the linear maps (a lookup in E @ W
costs N rows instead of T). Layout choices, all for speed on a CPU:

* every parameter, gradient and Adam moment lives in one flat buffer (parameter-major, the bias
  last), so Adam is one fused kernel call over one tensor;
* the unembedding is stored transposed (B, N, h), which makes both of its matrix products in the
  backward pass the fast kind;
* the tables E_left @ W_left and E_right @ W_right share one (2, B, N, h) buffer, so one
  embedding_bag looks up both rows of every pair and sums them;
* logits are laid out (B, N, T): the softmax runs over a short axis with a long contiguous inner
  one, in place, with the 1/T of the mean folded into its normaliser.

Private torch kernels are called only through `lib.grokking.fused_ops`.
"""

from __future__ import annotations

import math

import torch

from lib.grokking.fused_ops import FlatAdam
from lib.grokking.mlp import PARAMETER_NAMES
from lib.grokking.sweep_config import SweepConfig


class ChunkStep:
    """Forward, backward and Adam update of a chunk of B instances, with preallocated buffers.

    Args:
        params: initial parameters with a leading instances dimension (copied, not modified);
            their device and dtype are the ones trained in.
        left, right, labels: the T training pairs and their labels.
        config: Adam's hyperparameters and the weight decay (the rest is not used here); None
            for gradients only (`step` then has no optimizer to call).
        tied_linear: the two linear maps are one (`MLPConfig.tied_linear`): both copies get the
            sum of their gradients, so they stay equal.

    Attributes:
        param, grad: name -> view into the flat parameter or gradient buffer; the unembedding
            is held transposed, as "unembed_t" (B, N, h).
    """

    def __init__(self, params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor,
                 labels: torch.Tensor, config: SweepConfig | None, tied_linear: bool = False):
        b, n, d = params["embed_left"].shape
        h = params["linear_left"].shape[2]
        t = left.numel()
        device = params["unembed"].device
        like = {"device": device, "dtype": params["unembed"].dtype}
        self.b, self.n, self.h, self.t = b, n, h, t
        self.has_bias = "unembed_bias" in params
        self.tied_linear = tied_linear

        shapes = {"embed_left": (b, n, d), "embed_right": (b, n, d), "linear_left": (b, d, h),
                  "linear_right": (b, d, h), "unembed_t": (b, n, h)}
        if self.has_bias:
            shapes["unembed_bias"] = (b, n)
        sizes = [math.prod(shape) for shape in shapes.values()]
        self.flat_param = torch.empty(sum(sizes), **like)
        self.flat_grad = torch.empty(sum(sizes), **like)
        self.param, self.grad, offset = {}, {}, 0
        for (name, shape), size in zip(shapes.items(), sizes):
            self.param[name] = self.flat_param[offset:offset + size].view(shape)
            self.grad[name] = self.flat_grad[offset:offset + size].view(shape)
            offset += size
        for name, value in params.items():
            if name == "unembed":
                self.param["unembed_t"].copy_(value.transpose(1, 2))
            else:
                self.param[name].copy_(value)
        # Left and right embeddings (and linear maps) are adjacent in the flat buffer, so one
        # batched product over 2B matrices handles both sides.
        embeds, linears = slice(0, 2 * b * n * d), slice(2 * b * n * d, 2 * b * (n * d + d * h))
        self.embeds = self.flat_param[embeds].view(2 * b, n, d)
        self.linears = self.flat_param[linears].view(2 * b, d, h)
        self.grad_embeds = self.flat_grad[embeds].view(2 * b, n, d)
        self.grad_linears = self.flat_grad[linears].view(2 * b, d, h)

        self.adam = None
        if config is not None:
            n_decayed = sum(sizes) - (b * n if self.has_bias else 0)  # the bias is stored last
            decay_regions = [(slice(0, n_decayed), config.weight_decay)]
            if self.has_bias:
                decay_regions.append((slice(n_decayed, None), 0.0))
            self.adam = FlatAdam(self.flat_param, self.flat_grad, decay_regions,
                                 config.lr, config.beta1, config.beta2, config.eps)

        left, right = left.to(device), right.to(device)
        self.left, self.right = left, right
        # Rows of the (2B N, h) tables that each pair sums: instance i's left row, then its right.
        instance_row = torch.arange(b, device=device)[:, None] * n
        self.bags = torch.stack([(left[None, :] + instance_row).flatten(),
                                 (right[None, :] + instance_row + b * n).flatten()], dim=1).flatten().int()
        # Made once, not per step; int32 indices make the lookup about 15% faster than int64.
        self.bag_offsets = torch.arange(0, 2 * b * t, 2, device=device, dtype=torch.int32)
        # Position of each pair's label in a flattened (N, T) slice, and the -1/T added there.
        self.label_index = labels.to(device) * t + torch.arange(t, device=device)
        self.label_logits = torch.empty(b, t, **like)
        self.minus_one_over_t = torch.full((b, t), -1.0 / t, **like)
        self.tables = torch.empty(2, b, n, h, **like)
        self.logits = torch.empty(b, n, t, **like)
        self.col_max = torch.empty(b, 1, t, **like)
        self.col_sum = torch.empty(b, 1, t, **like)
        self.grad_hidden = torch.empty(b, t, h, **like)
        self.grad_tables = torch.empty(2, b, n, h, **like)

    @torch.no_grad()
    def step(self) -> None:
        """One full-batch update of every instance: gradients, then Adam."""
        if self.adam is None:
            raise ValueError("this ChunkStep was made without an optimizer config (gradients only).")
        self.compute_gradients()
        self.adam.step()

    @torch.no_grad()
    def compute_gradients(self, losses: torch.Tensor | None = None) -> None:
        """Gradient of each instance's mean cross-entropy on the training pairs, into `grad`;
        the (B,) mean cross-entropies themselves into `losses` when it is given."""
        param, grad, b, n, h, t = self.param, self.grad, self.b, self.n, self.h, self.t
        # Forward: hidden = relu(E_left[a] @ W_left + E_right[b] @ W_right), via the tables E @ W.
        torch.bmm(self.embeds, self.linears, out=self.tables.view(2 * b, n, h))
        hidden = torch.nn.functional.embedding_bag(
            self.bags, self.tables.view(2 * b * n, h), self.bag_offsets, mode="sum").view(b, t, h)
        hidden.relu_()
        logits = torch.bmm(param["unembed_t"], hidden.transpose(1, 2), out=self.logits)
        if self.has_bias:
            logits += param["unembed_bias"][:, :, None]
        if losses is not None:  # kept before the logits are overwritten below
            torch.index_select(logits.view(b, -1), 1, self.label_index, out=self.label_logits)
        # Gradient w.r.t. the logits, (softmax - onehot) / T, in place: subtract the column max,
        # exponentiate, scale by 1 / (T * column sum), add -1/T at the labels.
        torch.amax(logits, dim=1, keepdim=True, out=self.col_max)
        logits.sub_(self.col_max).exp_()
        torch.sum(logits, dim=1, keepdim=True, out=self.col_sum)
        if losses is not None:  # cross-entropy = max + log(sum of exp(logit - max)) - label logit
            log_sum = self.col_sum.log().add_(self.col_max).view(b, t)
            torch.mean(log_sum.sub_(self.label_logits), dim=1, out=losses)
        grad_logits = logits.mul_(self.col_sum.mul_(t).reciprocal_())
        grad_logits.view(b, -1).index_add_(1, self.label_index, self.minus_one_over_t)
        # Backward through the unembedding, the ReLU, the lookups and the tables E @ W.
        torch.bmm(grad_logits, hidden, out=grad["unembed_t"])
        if self.has_bias:
            torch.sum(grad_logits, dim=2, out=grad["unembed_bias"])
        grad_hidden = torch.bmm(grad_logits.transpose(1, 2), param["unembed_t"], out=self.grad_hidden)
        # The ReLU passes the gradient where it was active. `hidden` is not needed any more, so
        # it becomes that 0/1 mask in place (a bool mask, `hidden > 0`, made the step 84% slower).
        grad_hidden.mul_(hidden.gt_(0))
        grad_tables = self.grad_tables.zero_()
        grad_tables[0].index_add_(1, self.left, grad_hidden)
        grad_tables[1].index_add_(1, self.right, grad_hidden)
        grad_rows = grad_tables.view(2 * b, n, h)
        torch.bmm(self.embeds.transpose(1, 2), grad_rows, out=self.grad_linears)
        torch.bmm(grad_rows, self.linears.transpose(1, 2), out=self.grad_embeds)
        if self.tied_linear:  # one map stored twice: each copy gets the whole gradient
            left_grad, right_grad = self.grad_linears[:b], self.grad_linears[b:]
            left_grad.add_(right_grad)
            right_grad.copy_(left_grad)

    def params(self) -> dict[str, torch.Tensor]:
        """Views of the current parameters in the canonical layout of `lib.grokking.mlp`."""
        out = {name: value for name, value in self.param.items() if name != "unembed_t"}
        out["unembed"] = self.param["unembed_t"].transpose(1, 2)
        return {name: out[name] for name in PARAMETER_NAMES if name in out}


__all__ = ["ChunkStep"]
