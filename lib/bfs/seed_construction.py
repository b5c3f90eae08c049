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

from lib.bfs.softmax import underflow_free_softmax

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


class StudyConstruction(torch.nn.Module):
    """The study's construction as a trainable model, weight lists as in the authors' notebook.

    Chapter 1 damages and retrains it exactly as the authors did (`lib.bfs.study_damage`), so it
    keeps their six weight lists, each a tensor with a leading index:

    * `reach_query`, `reach_key` (n, 2, 4n + 2) and `reach_value` (n, n, 4n + 2): the n reach
      heads, one set shared by every layer (head j of the list serves vertex j + 1);
    * `answer_query`, `answer_key` (n, 3, 4n + 2) and `answer_value` (n, n, 4n + 2): one answer
      head per layer.

    Every head reads the whole hidden state; the reach heads' summed outputs are added to the
    reach section, the answer head's output to the out section (fixed output maps, as in the
    authors' code), and the reach section is squashed with 2 sigmoid(slope x) - 1 after each
    layer. With intact weights it computes what `seed_construction_distance` computes (a test
    checks it); damaged weights also read the sections the intact ones ignore.
    """

    LISTS = ("reach_key", "reach_query", "reach_value", "answer_key", "answer_query", "answer_value")

    def __init__(self, n_vertices: int = 8, big: float = 12.0, super: float = 30.0, medium: float = 7.0,
                 squash_slope: float = 5.0):
        super_ = super
        torch.nn.Module.__init__(self)
        n = self.n_vertices = n_vertices
        self.squash_slope = squash_slope
        width = 4 * n + 2
        answer, not_answer, source = 0, 4 * n + 1, 3 * n + 1     # flags; source = self bit of vertex 1
        heads = torch.arange(n)
        reach_query = torch.zeros(n, 2, width)
        reach_query[heads, 0, n + 1 + heads] = super_            # query: v reaches vertex j + 1
        reach_query[:, 1, not_answer] = 1.0
        reach_key = torch.zeros(n, 2, width)
        reach_key[heads, 0, 1 + heads] = 1.0                     # key: w neighbours vertex j + 1
        reach_key[:, 1, answer] = big
        reach_value = torch.zeros(n, n, width)
        reach_value[:, heads, 3 * n + 1 + heads] = 1.0           # value: w's one-hot
        answer_key = torch.zeros(n, 3, width)
        answer_key[:, 0, not_answer] = -big
        answer_key[:, 0, source] = big + super_
        answer_key[:, 1, not_answer] = -super_
        answer_key[:, 1, n + 2] = big + super_                   # reach bit of vertex 2
        answer_key[:, 1, answer] = -big - super_
        answer_key[:, 2, answer] = medium
        answer_query = torch.zeros(n, 3, width)
        answer_query[:, :, answer] = 1.0
        answer_value = torch.zeros(n, n, width)
        answer_value[heads, heads, source] = 1.0                 # layer l writes out[l]
        for name, tensor in zip(self.LISTS, (reach_key, reach_query, reach_value, answer_key, answer_query,
                                             answer_value)):
            setattr(self, name, torch.nn.Parameter(tensor))

    def embed(self, adjacency: torch.Tensor) -> torch.Tensor:
        """Tokens (batch, n + 1, 4n + 2) as the authors' `random_graph` writes them."""
        batch, n, _ = adjacency.shape
        rows = adjacency.to(self.reach_key.dtype)
        tokens = torch.zeros(batch, n + 1, 4 * n + 2, dtype=rows.dtype, device=adjacency.device)
        tokens[:, 0, 0] = 1.0
        tokens[:, 0, n + 1: 2 * n + 1] = 1.0                     # the answer token reaches everything
        tokens[:, 1:, 1: n + 1] = rows                            # neighbours
        tokens[:, 1:, n + 1: 2 * n + 1] = rows                    # reach starts at radius 1
        tokens[:, 1:, 3 * n + 1: 4 * n + 1] = torch.eye(n, dtype=rows.dtype, device=adjacency.device)
        tokens[:, 1:, 4 * n + 1] = 1.0
        return tokens

    def forward(self, adjacency: torch.Tensor) -> torch.Tensor:
        """(batch,) distance from vertex 1 to vertex 2, n + 1 for unreachable."""
        n = self.n_vertices
        hidden = self.embed(adjacency.to(self.reach_key.device))
        batch, tokens, width = hidden.shape
        reach_maps = torch.cat([self.reach_query.reshape(-1, width), self.reach_key.reshape(-1, width),
                                self.reach_value.reshape(-1, width)])
        for layer in range(n):
            # All n reach heads at once, one (batch, head) block each: queries and keys
            # (batch, head, token, 2), values (batch, head, token, n).
            q, k, v = (
                part.view(batch, tokens, n, -1).transpose(1, 2)
                for part in (hidden @ reach_maps.T).split([2 * n, 2 * n, n * n], dim=-1)
            )
            attention = underflow_free_softmax(q @ k.transpose(-1, -2))
            # The heads' outputs are summed: one product per graph over (head, key) pairs.
            new_reach = attention.transpose(1, 2).reshape(batch, tokens, n * tokens) @ v.reshape(batch, n * tokens, n)
            qa = hidden @ self.answer_query[layer].T
            ka = hidden @ self.answer_key[layer].T
            va = hidden @ self.answer_value[layer].T
            out = underflow_free_softmax(qa @ ka.transpose(-1, -2)) @ va
            # The reach heads write the reach section, the answer head the out section.
            hidden = hidden + torch.nn.functional.pad(torch.cat([new_reach, out], dim=-1), (n + 1, n + 1))
            hidden[..., n + 1: 2 * n + 1] = 2 * torch.sigmoid(self.squash_slope * hidden[..., n + 1: 2 * n + 1]) - 1
        return 1 + (1 - hidden[:, 0, 2 * n + 1: 3 * n + 1]).sum(dim=-1)
