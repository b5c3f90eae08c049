"""The graph facts behind each token of a batch, for probing and reading attention (chapter 7).

A batch of the model's input (`lib.paths.sampler`: edge rows (a, b), padding (0, 0), last the
query row (t, TARGET)) is turned back into what breadth-first search knows about it: for every
edge token, how far its nearer endpoint is from vertex 1 and from the target t; which edge
tokens share an endpoint; which edges lie on a shortest 1-t path; the degrees of 1 and t. These
are the labels of chapter 7's probes and the categories of its attention fractions. Distances
come from `lib.paths.graph_search` (the sampler's own batched BFS).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.paths.graph_search import distances_from_source, edge_vertex_sets

#: Stand-in distance for "not reachable" in the distance tensors below (larger than any path).
UNREACHABLE = 10_000


def _vertex_distances(low: torch.Tensor, high: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """(B, V + 1) distances from each graph's own `source` vertex, UNREACHABLE where none."""
    sets = edge_vertex_sets(low, high)
    distance = torch.full((low.shape[0], low.shape[1] + 1), UNREACHABLE, dtype=torch.int64)
    for vertex in source.unique().tolist():  # one batched BFS per distinct source (one in pre-training)
        rows = source == vertex
        found = distances_from_source(sets[:, rows], vertex)
        distance[rows] = torch.where(found < 0, UNREACHABLE, found)
    return distance


@dataclass(frozen=True)
class TokenGraphs:
    """Per-token facts of a batch of graphs (B graphs, S = n_max + 1 tokens, the last the query).

    Attributes:
        low, high: (B, n_max) endpoints of each edge slot (0 in padding slots).
        is_edge: (B, n_max) the slot holds an edge.
        target: (B,) the query's target vertex t.
        from_source, from_target: (B, n_max + 1) BFS distance of each vertex id from vertex 1
            and from t (UNREACHABLE where there is no path).
    """

    low: torch.Tensor
    high: torch.Tensor
    is_edge: torch.Tensor
    target: torch.Tensor
    from_source: torch.Tensor
    from_target: torch.Tensor

    @classmethod
    def from_tokens(cls, tokens: torch.Tensor) -> TokenGraphs:
        """Read the graphs back from the model's input tokens (B, n_max + 1, 2)."""
        tokens = tokens.cpu()
        low, high = tokens[:, :-1, 0].int(), tokens[:, :-1, 1].int()
        target = tokens[:, -1, 0]
        source = torch.ones_like(target)
        return cls(low, high, low < high, target, _vertex_distances(low, high, source),
                   _vertex_distances(low, high, target))

    @property
    def distance(self) -> torch.Tensor:
        """(B,) BFS distance from 1 to t (UNREACHABLE where none)."""
        return self.from_source.gather(1, self.target.unsqueeze(1)).squeeze(1)

    def _edge_distance(self, by_vertex: torch.Tensor) -> torch.Tensor:
        nearer = torch.minimum(by_vertex.gather(1, self.low.long()), by_vertex.gather(1, self.high.long()))
        return torch.where(self.is_edge, nearer, UNREACHABLE)

    @property
    def edge_from_source(self) -> torch.Tensor:
        """(B, n_max) distance from vertex 1 to the nearer endpoint of each edge (0: an edge at 1)."""
        return self._edge_distance(self.from_source)

    @property
    def edge_from_target(self) -> torch.Tensor:
        """(B, n_max) distance from t to the nearer endpoint of each edge."""
        return self._edge_distance(self.from_target)

    @property
    def shares_endpoint(self) -> torch.Tensor:
        """(B, n_max, n_max) edges i and j (i != j) have an endpoint in common."""
        ends = torch.stack([self.low, self.high], dim=-1)  # (B, E, 2)
        same = (ends.unsqueeze(2).unsqueeze(-1) == ends.unsqueeze(1).unsqueeze(-2)).flatten(-2).any(-1)
        both = self.is_edge.unsqueeze(2) & self.is_edge.unsqueeze(1)
        return same & both & ~torch.eye(self.low.shape[1], dtype=torch.bool)

    @property
    def on_shortest_path(self) -> torch.Tensor:
        """(B, n_max) the edge lies on some shortest 1-t path (never, when t is unreachable)."""
        d = self.distance.unsqueeze(1)
        a_src, b_src = self.from_source.gather(1, self.low.long()), self.from_source.gather(1, self.high.long())
        a_tgt, b_tgt = self.from_target.gather(1, self.low.long()), self.from_target.gather(1, self.high.long())
        forward = a_src + 1 + b_tgt == d
        backward = b_src + 1 + a_tgt == d
        return self.is_edge & (d < UNREACHABLE) & (forward | backward)

    def touches(self, vertex: torch.Tensor) -> torch.Tensor:
        """(B, n_max) the edge has `vertex` (one per graph) as an endpoint."""
        vertex = vertex.unsqueeze(1).int()
        return self.is_edge & ((self.low == vertex) | (self.high == vertex))

    def degree(self, vertex: torch.Tensor) -> torch.Tensor:
        """(B,) number of edges at `vertex` (one per graph; duplicate edges count twice)."""
        return self.touches(vertex).sum(dim=1)

    @property
    def edge_count(self) -> torch.Tensor:
        """(B,) edges in each graph."""
        return self.is_edge.sum(dim=1)


def format_example(tokens: torch.Tensor, label: float) -> str:
    """One edge-token example as text: its edges, its query pair and its label (chapters 2 and 3)."""
    edges = [f"({a},{b})" for a, b in tokens[:-1].tolist() if a]
    target, target_token = tokens[-1].tolist()
    padding = len(tokens) - 1 - len(edges)
    return (f"edges: {' '.join(edges)}  + {padding} padding pairs (0,0)\n"
            f"query pair: ({target},{target_token})  -> label {int(label)}")


__all__ = ["UNREACHABLE", "TokenGraphs", "format_example"]
