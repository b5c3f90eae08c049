"""Graphs of a model's training distribution with everything a probe or an intervention needs
(chapter 7): tokens, labels and the breadth-first-search facts of every token
(`lib.paths.token_graphs.TokenGraphs`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.paths.sampler import sample_with_options
from lib.paths.token_graphs import UNREACHABLE, TokenGraphs
from lib.paths.training import PathTrainingConfig


@dataclass(frozen=True)
class GraphSet:
    """Graphs of a model's training distribution: tokens, labels (the distance, or the
    unreachable label) and the BFS facts of each token."""

    tokens: torch.Tensor
    labels: torch.Tensor
    graphs: TokenGraphs
    unreachable_label: int

    @classmethod
    def draw(cls, config: PathTrainingConfig, count: int, seed: int) -> GraphSet:
        """`count` fresh graphs from `config`'s sampler, seeded by `seed` alone."""
        tokens, labels = sample_with_options(count, config.sampler, torch.Generator().manual_seed(seed))
        return cls(tokens, labels, TokenGraphs.from_tokens(tokens), config.sampler.unreachable_label)

    @property
    def reachable(self) -> torch.Tensor:
        """(B,) the target can be reached from vertex 1."""
        return self.graphs.distance < UNREACHABLE

    def select(self, rows: torch.Tensor) -> GraphSet:
        """The graphs at `rows` (a bool mask or indices)."""
        tokens = self.tokens[rows]
        return GraphSet(tokens, self.labels[rows], TokenGraphs.from_tokens(tokens), self.unreachable_label)


__all__ = ["GraphSet"]
