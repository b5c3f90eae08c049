"""What a trained path transformer computes inside, read with forward hooks (chapter 7).

`lib.paths.model.PathTransformer` is a stack of post-LN `torch.nn.TransformerEncoderLayer`s.
Nothing here copies its computation: a forward pre-hook on the first layer records the token
embeddings, forward hooks on every layer record the residual stream after it, and a pre-hook on
each layer's attention module asks it for its per-head attention weights, which a forward hook
then keeps. PyTorch's fused inference path for encoder layers would skip the attention module
and its hooks, so capturing turns it off (`torch.backends.mha`) for the duration.

Residual index r runs over 0..L: r = 0 is the embedding, r = l the output of layer l.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from lib.paths.model import PathTransformer


@contextlib.contextmanager
def unfused_attention() -> Iterator[None]:
    """Inside the block, encoder layers run through their submodules (so hooks on them fire)."""
    enabled = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(enabled)


@dataclass(frozen=True)
class Activations:
    """One forward pass of a batch, opened up.

    Attributes:
        residual: (L + 1, B, S, d_model) residual stream, embeddings first, then after each layer.
        attention: (L, B, heads, S, S) attention weights; [l, b, h, q, k] is how much query
            token q attends to key token k in head h of layer l (rows sum to one; padding keys
            get zero).
        prediction: (B,) the model's predicted distances.
        padding: (B, S) True at padding tokens (0, 0).
    """

    residual: torch.Tensor
    attention: torch.Tensor
    prediction: torch.Tensor
    padding: torch.Tensor

    @property
    def n_layers(self) -> int:
        return self.attention.shape[0]


def _keep_weights(module, args, kwargs):
    kwargs["need_weights"] = True
    kwargs["average_attn_weights"] = False
    return args, kwargs


@torch.no_grad()
def capture(model: PathTransformer, tokens: torch.Tensor, *, chunk: int = 2048) -> Activations:
    """Run `model` on `tokens` (B, S, 2) and keep its residual stream and attention weights.

    The batch runs in chunks of `chunk` graphs; the result is on the CPU.
    """
    layers = model.encoder.layers
    parts: dict[str, list[torch.Tensor]] = {"residual": [], "attention": [], "prediction": []}
    device = next(model.parameters()).device
    for start in range(0, len(tokens), chunk):
        residual: list[torch.Tensor] = []
        attention: list[torch.Tensor] = []
        handles = [layers[0].register_forward_pre_hook(lambda m, args: residual.append(args[0]))]
        for layer in layers:
            handles.append(layer.register_forward_hook(lambda m, args, out: residual.append(out)))
            handles.append(layer.self_attn.register_forward_pre_hook(_keep_weights, with_kwargs=True))
            handles.append(layer.self_attn.register_forward_hook(
                lambda m, args, out: attention.append(out[1])))
        try:
            with unfused_attention():
                prediction = model(tokens[start:start + chunk].to(device))
        finally:
            for handle in handles:
                handle.remove()
        parts["residual"].append(torch.stack(residual).cpu())
        parts["attention"].append(torch.stack(attention).cpu())
        parts["prediction"].append(prediction.cpu())
    return Activations(torch.cat(parts["residual"], dim=1), torch.cat(parts["attention"], dim=1),
                       torch.cat(parts["prediction"]), (tokens == 0).all(dim=-1).cpu())


__all__ = ["Activations", "capture", "unfused_attention"]
