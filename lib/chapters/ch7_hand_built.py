"""Chapter 1's hand-built BFS transformer on chapter 7's graphs (chapter 7).

Glue between the two halves of the first study (`lib.bfs` and `lib.paths` never import each
other): the learned model's graphs, with vertex t relabelled 2 (the target the construction
reads), are run through the construction, whose layer l knows exactly the radius-l balls: the
reference against which the learned reach radii are read. The relabelling and the comparison
with the trained model's answers are in `lib.paths.hand_built_comparison`.
"""

from __future__ import annotations

import torch

from lib.bfs.transformer import bfs_transformer
from lib.paths.hand_built_comparison import HandBuilt, hand_built_adjacency
from lib.paths.token_graphs import TokenGraphs


@torch.no_grad()
def hand_built_distances(graphs: TokenGraphs, n_vertices: int) -> HandBuilt:
    """Run chapter 1's construction for `n_vertices` vertices on the graphs."""
    model = bfs_transformer(n_vertices)
    trace = model.run(hand_built_adjacency(graphs, n_vertices), keep_trace=True)
    vertex_one, t_bit = 1, model.layout.reach.start + 1   # token of vertex 1; reach bit of vertex 2
    return HandBuilt(trace["distance"], trace["hidden"][1:, :, vertex_one, t_bit])


__all__ = ["hand_built_distances"]
