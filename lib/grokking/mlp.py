"""The one-hidden-layer MLP of the ambiguous-grokking study, batched over many seeds (chapters 4-6).

The model maps a pair of group elements (a, b) to logits over the N elements:

    hidden = relu(E_left[a] @ W_left + E_right[b] @ W_right)
    logits = hidden @ U (+ c)

with separate left and right embeddings E (N x d), two linear maps W (d x h) whose outputs are
summed, and an unembedding U (h x N) with an optional bias c (no weight decay on it). Parameters live in a plain dict of
tensors; with a leading instances dimension (B, ...) the same dict holds B independent models,
and `instance_logits` evaluates all of them at once. Being plain tensors, the parameters are easy
to checkpoint, slice by instance, perturb (chapter 6) or sample around (chapter 5).

Initialisation follows the authors' code: embeddings N(0, 1); the linear maps kaiming-uniform
with the fan-in of the concatenated input (bound 1/sqrt(2d)); the unembedding and its bias
uniform with bound 1/sqrt(h).

With `tied_linear` the two linear maps are one map W applied to the sum of the embeddings,
hidden = relu((E_left[a] + E_right[b]) @ W): the authors' "MLP3", the model of their Z48 and Z35
runs (chapter 4), initialised with bound 1/sqrt(d). It is stored as two equal copies,
`linear_left` and `linear_right`, which the trainer keeps equal by giving both the summed
gradient (Adam acts elementwise, so equal gradients and equal moments keep them equal); a
model's parameter norm then counts W twice. A model seeded with `seed` draws its tensors from
`torch.Generator().manual_seed(seed)` in the order of `PARAMETER_NAMES`, and `init_instances`
stacks exactly those draws, so instance i starts where training seed i alone would start.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

#: Parameter names in the order their initial values are drawn.
PARAMETER_NAMES: tuple[str, ...] = (
    "embed_left", "embed_right", "linear_left", "linear_right", "unembed", "unembed_bias",
)

#: Parameters without weight decay (the authors exclude every parameter named "bias").
NO_DECAY: frozenset[str] = frozenset({"unembed_bias"})


@dataclass(frozen=True)
class MLPConfig:
    """Shape of the MLP.

    Attributes:
        n_elements: N, the group order (vocabulary in and out).
        embed_dim: d, width of each embedding.
        hidden_dim: h, width of the hidden layer.
        unembed_bias: whether the unembedding has a bias (on in every published S4 and S5 run of
            the study, the authors' `--unembed_bias`; off in their Z48 and Z35 runs).
        tied_linear: one linear map on the summed embeddings (the authors' "MLP3", their Z48 and
            Z35 runs) instead of two whose outputs are summed.
    """

    n_elements: int
    embed_dim: int = 32
    hidden_dim: int = 32
    unembed_bias: bool = False
    tied_linear: bool = False

    def parameter_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shape of each parameter of one model (no instances dimension)."""
        n, d, h = self.n_elements, self.embed_dim, self.hidden_dim
        shapes = {"embed_left": (n, d), "embed_right": (n, d), "linear_left": (d, h),
                  "linear_right": (d, h), "unembed": (h, n)}
        if self.unembed_bias:
            shapes["unembed_bias"] = (n,)
        return shapes

    def n_parameters(self) -> int:
        """Number of scalar parameters of one model."""
        return sum(math.prod(shape) for shape in self.parameter_shapes().values())


def init_single(seed: int, config: MLPConfig, device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """Initial parameters of one model seeded with `seed` (no instances dimension).

    Draws on a CPU generator so that the values do not depend on the device.
    """
    generator = torch.Generator().manual_seed(int(seed))
    d, h = config.embed_dim, config.hidden_dim
    params = {}
    for name, shape in config.parameter_shapes().items():
        if name.startswith("embed"):
            value = torch.randn(shape, generator=generator)
        elif name == "linear_right" and config.tied_linear:
            value = params["linear_left"].clone()   # one map, stored twice (see the module doc)
        else:
            if name.startswith("linear"):
                bound = 1.0 / math.sqrt(d if config.tied_linear else 2 * d)
            else:
                bound = 1.0 / math.sqrt(h)
            value = (torch.rand(shape, generator=generator) * 2.0 - 1.0) * bound
        params[name] = value
    return {name: value.to(device) for name, value in params.items()}


def init_instances(
    seeds: Sequence[int] | torch.Tensor, config: MLPConfig, device: torch.device | str = "cpu",
) -> dict[str, torch.Tensor]:
    """Initial parameters of len(seeds) models stacked along a leading instances dimension.

    Instance i holds exactly `init_single(seeds[i], config)`.
    """
    seeds = [int(s) for s in (seeds.tolist() if isinstance(seeds, torch.Tensor) else seeds)]
    if not seeds:
        raise ValueError("init_instances needs at least one seed.")
    singles = [init_single(seed, config) for seed in seeds]
    return {name: torch.stack([p[name] for p in singles]).to(device) for name in singles[0]}


def n_instances(params: dict[str, torch.Tensor]) -> int:
    """Size of the leading instances dimension."""
    return int(params["unembed"].shape[0])


def select_instances(params: dict[str, torch.Tensor], index) -> dict[str, torch.Tensor]:
    """The parameters of a subset of instances (index: int, slice, list or tensor); keeps the dim."""
    if isinstance(index, int):
        index = [index]
    return {name: value[index] for name, value in params.items()}


def single_logits(
    params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor,
) -> torch.Tensor:
    """Logits (T, N) of one model on the pairs (left[t], right[t]), written as in the definition.

    This is the reference the batched code is tested against.
    """
    hidden = params["embed_left"][left] @ params["linear_left"] \
        + params["embed_right"][right] @ params["linear_right"]
    logits = torch.relu(hidden) @ params["unembed"]
    if "unembed_bias" in params:
        logits = logits + params["unembed_bias"]
    return logits


def instance_logits(
    params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor,
) -> torch.Tensor:
    """Logits (B, T, N) of every instance on the pairs (left[t], right[t]); differentiable.

    Uses that an embedding lookup followed by a linear map equals a lookup in the product
    E @ W (N x h), so the linear maps cost N rows per instance instead of T.
    """
    left_rows = torch.bmm(params["embed_left"], params["linear_left"])      # (B, N, h)
    right_rows = torch.bmm(params["embed_right"], params["linear_right"])
    hidden = left_rows[:, left] + right_rows[:, right]                      # (B, T, h)
    logits = torch.bmm(torch.relu(hidden), params["unembed"])               # (B, T, N)
    if "unembed_bias" in params:
        logits = logits + params["unembed_bias"][:, None, :]
    return logits


def all_pairs_logits(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """Logits (B, N*N, N) of every instance on all pairs, pair (a, b) at row a*N + b.

    The hidden layer of all pairs is a broadcast sum of the two (N, h) tables, so no gather is
    needed; this is what the trainer calls at every logged epoch.
    """
    left_rows = torch.bmm(params["embed_left"], params["linear_left"])      # (B, N, h)
    right_rows = torch.bmm(params["embed_right"], params["linear_right"])
    b, n, h = left_rows.shape
    hidden = torch.relu(left_rows[:, :, None, :] + right_rows[:, None, :, :]).view(b, n * n, h)
    logits = torch.bmm(hidden, params["unembed"])
    if "unembed_bias" in params:
        logits = logits + params["unembed_bias"][:, None, :]
    return logits


def instance_loss(
    params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor, labels: torch.Tensor,
) -> torch.Tensor:
    """Mean cross-entropy of each instance over the given pairs, shape (B,); differentiable."""
    logits = instance_logits(params, left, right)
    log_probs = torch.log_softmax(logits, dim=-1)
    picked = log_probs.gather(2, labels.to(logits.device)[None, :, None].expand(logits.shape[0], -1, 1))
    return -picked.squeeze(2).mean(dim=1)


def parameter_norm(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """L2 norm of all parameters of each instance, shape (B,)."""
    return torch.sqrt(sum(value.flatten(1).pow(2).sum(dim=1) for value in params.values()))
