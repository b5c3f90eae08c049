"""The edge-token transformer that learns shortest paths (chapters 2 and 3).

The architecture of the shortest-paths study [@wang2024shortest]: a standard post-LN encoder
(d_model 64, 2 heads, feed-forward 256, ReLU, dropout 0) without positional encodings, because
the order of the edges carries no information. Each token is a pair of vertex ids; one shared
vertex embedding of width d_model / 2 embeds both ids and the two halves are concatenated, so
the edge (a, b) becomes [emb(a), emb(b)] and the query pair (t, TARGET) becomes
[emb(t), emb(TARGET)]. Padding pairs (0, 0) are masked out of attention, and a linear head
reads the predicted distance off the last (target) token. With 11 layers and vertex ids up to
15 this is 550,433 parameters, the published count.

Without positional encodings the model accepts any number of edge slots, so a model trained on
graphs of up to n vertices can be run on larger graphs (chapter 3) as long as their vertex ids
are in its vocabulary.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn


@dataclasses.dataclass(frozen=True)
class PathTransformerConfig:
    """Shape of a `PathTransformer`; the defaults are the published model.

    Attributes:
        n_layers: encoder layers (11 in the published run; more than the graph diameter).
        max_vertex_id: largest vertex id; the vocabulary is 0 (padding), 1..max_vertex_id and
            TARGET = max_vertex_id + 1.
        d_model, n_heads, d_feedforward: encoder widths.
    """

    n_layers: int = 11
    max_vertex_id: int = 15
    d_model: int = 64
    n_heads: int = 2
    d_feedforward: int = 256

    @property
    def target_token(self) -> int:
        return self.max_vertex_id + 1


class PathTransformer(nn.Module):
    """Predicts the distance from vertex 1 to the target from (B, S, 2) edge tokens."""

    def __init__(self, config: PathTransformerConfig = PathTransformerConfig()):
        super().__init__()
        if config.d_model % 2:
            raise ValueError("d_model must be even: each token is two half-width embeddings")
        self.config = config
        self.vertex_embedding = nn.Embedding(config.max_vertex_id + 2, config.d_model // 2)
        layer = nn.TransformerEncoderLayer(
            config.d_model, config.n_heads, config.d_feedforward, dropout=0.0,
            activation="relu", batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, config.n_layers, enable_nested_tensor=False)
        self.readout = nn.Linear(config.d_model, 1)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Predicted distances, shape (B,), for tokens whose last pair is (target, TARGET)."""
        embedded = self.vertex_embedding(tokens).flatten(start_dim=2)  # (B, S, d_model)
        padding = (tokens == 0).all(dim=-1)
        hidden = self.encoder(embedded, src_key_padding_mask=padding)
        return self.readout(hidden[:, -1]).squeeze(-1)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(parameter.numel() for parameter in model.parameters() if parameter.requires_grad)


def build_model(config: PathTransformerConfig, *, seed: int, device: torch.device | str = "cpu") -> PathTransformer:
    """A freshly initialised model whose weights depend only on `seed` (not on global RNG state)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = PathTransformer(config)
    return model.to(device)
