"""Causal edits of a path transformer's forward pass: ablate heads and blocks, patch directions
(chapter 7).

Each edit is a context manager that changes the model only inside its block and puts it back
after, so the same model serves the clean and the edited run:

* `heads_replaced`: head h of layer l outputs a fixed vector for every query. Its value
  projection is set to that constant (weights zero, bias the constant); attention weights sum
  to one, so the head's output is exactly the constant whatever it attends to. With the head's
  mean output (`mean_head_outputs`) this is mean ablation.
* `mlp_replaced`: the feed-forward block of layer l outputs a fixed vector (a hook on its last
  linear map), for mean ablation of the block.
* `residual_edited`: the residual stream at index r (0: embeddings, l: after layer l, as in
  `lib.paths.activations`) is replaced by a function of itself, e.g. `patch_along`, which moves
  the target token's components in a subspace (or along one direction) to a donor graph's, or
  `patch_token`, which gives the target token the donor's whole vector.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping

import torch

from lib.paths.activations import Activations, unfused_attention
from lib.paths.model import PathTransformer


def _value_rows(model: PathTransformer, head: int) -> slice:
    """Rows of `in_proj_weight` (queries, keys, values stacked) that make head `head`'s values."""
    width, heads = model.config.d_model, model.config.n_heads
    size = width // heads
    return slice(2 * width + head * size, 2 * width + (head + 1) * size)


@torch.no_grad()
def mean_head_outputs(model: PathTransformer, activations: Activations) -> torch.Tensor:
    """(L, heads, d_head) each head's output averaged over every non-padding query of the batch.

    A head's output at query q is sum_k attention[q, k] * value[k], with the values computed
    from the layer's input (the residual stream before it) by the head's value projection.
    """
    outputs = []
    keep = ~activations.padding
    heads = model.config.n_heads
    for layer_index, layer in enumerate(model.encoder.layers):
        attention = layer.self_attn
        rows = slice(2 * model.config.d_model, 3 * model.config.d_model)
        values = activations.residual[layer_index] @ attention.in_proj_weight[rows].T.cpu() \
            + attention.in_proj_bias[rows].cpu()
        values = values.unflatten(-1, (heads, -1))  # (B, S, heads, d_head)
        mixed = torch.einsum("bhqk,bkhe->bqhe", activations.attention[layer_index], values)
        outputs.append(mixed[keep].mean(dim=0))
    return torch.stack(outputs)


@contextlib.contextmanager
def heads_replaced(model: PathTransformer, constants: Mapping[tuple[int, int], torch.Tensor]) -> Iterator[None]:
    """Inside the block, head h of layer l outputs constants[(l, h)] (d_head) at every query."""
    saved = []
    try:
        with torch.no_grad():
            for (layer, head), constant in constants.items():
                attention = model.encoder.layers[layer].self_attn
                rows = _value_rows(model, head)
                saved.append((attention, rows, attention.in_proj_weight[rows].clone(),
                              attention.in_proj_bias[rows].clone()))
                attention.in_proj_weight[rows] = 0.0
                attention.in_proj_bias[rows] = constant.to(attention.in_proj_bias)
        with unfused_attention():
            yield
    finally:
        with torch.no_grad():
            for attention, rows, weight, bias in reversed(saved):
                attention.in_proj_weight[rows] = weight
                attention.in_proj_bias[rows] = bias


@torch.no_grad()
def mean_module_output(model: PathTransformer, module: torch.nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """The output of `module` (a submodule of `model`) averaged over the non-padding tokens of
    `tokens`; chapter 7 uses it for the mean of each feed-forward block."""
    tokens = tokens.to(next(model.parameters()).device)
    kept: list[torch.Tensor] = []
    handle = module.register_forward_hook(lambda m, args, out: kept.append(out))
    try:
        with unfused_attention():
            model(tokens)
    finally:
        handle.remove()
    return kept[0][~(tokens == 0).all(dim=-1)].mean(dim=0)


@contextlib.contextmanager
def mlp_replaced(model: PathTransformer, constants: Mapping[int, torch.Tensor]) -> Iterator[None]:
    """Inside the block, the feed-forward block of layer l outputs constants[l] at every token."""
    handles = [model.encoder.layers[layer].linear2.register_forward_hook(
        lambda m, args, out, value=value: value.to(out).expand_as(out))
        for layer, value in constants.items()]
    try:
        with unfused_attention():
            yield
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def residual_edited(model: PathTransformer, index: int,
                    edit: Callable[[torch.Tensor], torch.Tensor]) -> Iterator[None]:
    """Inside the block, the residual stream at `index` (0..L) is replaced by edit(stream)."""
    layers = model.encoder.layers
    if not 0 <= index <= len(layers):
        raise ValueError(f"Residual index must be between 0 and {len(layers)}; got {index}.")
    if index == 0:
        handle = layers[0].register_forward_pre_hook(lambda m, args: (edit(args[0]), *args[1:]))
    else:
        handle = layers[index - 1].register_forward_hook(lambda m, args, out: edit(out))
    try:
        with unfused_attention():
            yield
    finally:
        handle.remove()


def patch_along(donor: torch.Tensor, basis: torch.Tensor, position: int = -1
                ) -> Callable[[torch.Tensor], torch.Tensor]:
    """An edit for `residual_edited`: at token `position`, set the stream's components in the
    subspace spanned by the orthonormal rows of `basis` (m, d), or along one unit vector (d,),
    to the donor's (donor: (B, d), one per graph), leaving every other component and token as
    it was."""
    def edit(stream: torch.Tensor) -> torch.Tensor:
        here = stream[:, position]
        rows = basis.to(here).reshape(-1, here.shape[-1])
        edited = stream.clone()
        edited[:, position] = here + (donor.to(here) - here) @ rows.T @ rows
        return edited
    return edit


def patch_token(donor: torch.Tensor, position: int = -1) -> Callable[[torch.Tensor], torch.Tensor]:
    """An edit for `residual_edited`: token `position` takes the donor's whole vector (B, d)."""
    def edit(stream: torch.Tensor) -> torch.Tensor:
        edited = stream.clone()
        edited[:, position] = donor.to(stream)
        return edited
    return edit


__all__ = ["heads_replaced", "mean_head_outputs", "mean_module_output", "mlp_replaced",
           "patch_along", "patch_token", "residual_edited"]
