"""The study's own hand-built BFS transformer, with its constants, to measure its error (chapter 1).

The shortest-paths study printed a construction in its appendix [@wang2024shortest] and claimed an
MSE below 1e-6; chapter 1 measures what that construction really scores, next to the book's own
(`lib.bfs.transformer`). This module re-implements the appendix's forward pass from its
description, batched over graphs and with all heads of a layer in one einsum; it is a measuring
instrument, not a model to train. What it computes:

* Tokens: the answer token, then vertex 1..n. A vertex token holds its adjacency row twice, as
  "neighbours" and as its initial "reach" (so reach starts at radius 1, without the vertex
  itself), its one-hot "self" and a not-answer flag; the answer token has the answer flag and
  reaches every vertex. The source flag is the self bit of vertex 1.
* Reach head j of every layer: score(v, w) = C_super * reach_v[j] * neighbour_w[j]
  + C_big * not_answer_v * answer_w; the value is w's one-hot, added to v's reach.
* Answer head of layer l: only the answer token queries, with key
  (C_big + C_super) * source_w - C_big * not_answer_w - C_super * not_answer_w
  + (C_big + C_super) * (reach_w[2] - answer_w) + C_med * answer_w, so it looks at vertex 1
  when vertex 1 reaches vertex 2 and at itself otherwise; the value is the source flag, written
  into out[l].
* After each layer the reach is squashed with 2 sigmoid(C_curse x) - 1.
* Output: 1 + sum_l (1 - out[l]), the distance from vertex 1 to vertex 2 with n + 1 for
  unreachable.

The appendix's constants are (C_big, C_super, C_med, C_curse) = (12, 30, 7, 5).
"""

from __future__ import annotations

import torch

#: The appendix's constants: attention margins 12, 30 and 7, squash slope 5.
SEED_CONSTANTS = {"big": 12.0, "super": 30.0, "medium": 7.0, "squash_slope": 5.0}


def seed_construction_distance(adjacency: torch.Tensor, big: float = 12.0, super: float = 30.0,
                               medium: float = 7.0, squash_slope: float = 5.0) -> torch.Tensor:
    """Distance from vertex 1 to vertex 2 that the study's construction outputs, per graph.

    Args:
        adjacency: (batch, n, n) symmetric 0/1 adjacency, vertex v at index v - 1.
        big, super, medium, squash_slope: the construction's constants (the appendix's by default).

    Returns:
        (batch,) float32 outputs; the exact answer is the BFS distance with n + 1 for unreachable.
    """
    batch, n, _ = adjacency.shape
    a = adjacency.float()
    tokens = n + 1
    answer = torch.zeros(batch, tokens)
    answer[:, 0] = 1.0
    not_answer = 1.0 - answer
    neighbours = torch.cat([torch.zeros(batch, 1, n), a], dim=1)            # (batch, token, vertex)
    reach = neighbours.clone()
    reach[:, 0] = 1.0                                                        # the answer token reaches all
    one_hot = torch.cat([torch.zeros(1, n), torch.eye(n)]).expand(batch, tokens, n)
    source = one_hot[..., 0]                                                 # self bit of vertex 1
    out = torch.zeros(batch, n)
    for layer in range(n):
        # All n reach heads at once: scores (batch, head j, query v, key w).
        scores = super * torch.einsum("bvj,bwj->bjvw", reach, neighbours) \
            + big * not_answer[:, None, :, None] * answer[:, None, None, :]
        new_reach = torch.einsum("bjvw,bwi->bvi", torch.softmax(scores, dim=-1), one_hot)
        # The answer head reads the reach of the previous layer, like the reach heads.
        key = (big + super) * source - (big + super) * not_answer \
            + (big + super) * (reach[..., 1] - answer) + medium * answer
        weights = torch.softmax(key, dim=-1)                                  # the answer token's query
        out[:, layer] = (weights * source).sum(dim=-1)
        reach = 2 * torch.sigmoid(squash_slope * (reach + new_reach)) - 1
    return 1 + (1 - out).sum(dim=-1)
