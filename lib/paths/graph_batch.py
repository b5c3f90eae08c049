"""A batch of random graphs: drawn, searched and laid out as edge tokens (chapters 2 and 3).

The pieces that every task of `lib.paths.sampler` is built from, and that chapter 3 reuses
directly: `GraphProposals` holds the edges of a batch of graphs, `propose_graphs` draws them the
way the shortest-paths study does (n edges, 2n endpoints uniform on [1, n]), `distance_to` and
`distances_from` label them by breadth-first search (`lib.paths.graph_search`), and
`assemble_tokens` lays the kept ones out as the model's input.

Uniform integers come from 21-bit slices of 64-bit random words (`random_chunks`): random-number
generation, not the search, dominates the sampler's cost on a CPU.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from lib.paths.graph_search import distance_to_target, distances_from_source, edge_vertex_sets
from lib.paths.sampler_options import SamplerOptions

#: Random bits per uniform integer: two 21-bit values are cut from each 64-bit random word.
CHUNK_BITS = 21
_CHUNK_MASK = (1 << CHUNK_BITS) - 1


class GraphProposals(NamedTuple):
    """A batch of random graphs before any filter.

    Attributes:
        n_vertices: (B,) int64 number of vertices of each graph.
        low, high: (B, S) int32 endpoints of edge slot e, low <= high, in drawing order, with
            S >= n_max slots (`propose_graphs` rounds n_max up to an even number, as each
            64-bit random word gives endpoints of two slots). Slots from n on hold (0, 0); a
            dropped self-loop holds low == high (or (0, 0) in pre-training graphs).
    """

    n_vertices: torch.Tensor
    low: torch.Tensor
    high: torch.Tensor

    @property
    def is_edge(self) -> torch.Tensor:
        """(B, S) bool: slot e holds an edge of the graph (not padding, not a self-loop)."""
        return self.low < self.high

    def select(self, rows: torch.Tensor) -> GraphProposals:
        """The proposals at `rows`."""
        return GraphProposals(*(part.index_select(0, rows) for part in self))


def random_chunks(count: int, n_per_row: int, generator: torch.Generator) -> torch.Tensor:
    """(count, n_per_row) int32 values uniform on [0, 2^21), two cut from each random word.

    Random-number generation, not the search, dominates the sampler's cost on a CPU, so every
    64-bit word from the generator gives two values. A value in [0, k) is then
    `(u * k) >> 21` (`uniform_below`), whose probabilities differ from 1/k by less than
    k / 2^21 (below 1e-5 for k <= 15): as exact as flooring float32 uniforms would be.
    """
    words = torch.empty(count, (n_per_row + 1) // 2, dtype=torch.int64, device=generator.device)
    words.random_(generator=generator)
    return (words.view(torch.int32) & _CHUNK_MASK)[:, :n_per_row]


def uniform_below(chunks: torch.Tensor, bound: torch.Tensor | int) -> torch.Tensor:
    """Map values uniform on [0, 2^21) (from `random_chunks`) to integers uniform on [0, bound)."""
    return (chunks * bound) >> CHUNK_BITS


def draw_vertex_counts(chunks: torch.Tensor, n_min: int, n_max: int) -> torch.Tensor:
    """Numbers of vertices uniform on [n_min, n_max] from a column of `random_chunks`."""
    return (n_min + uniform_below(chunks, n_max - n_min + 1)).long()


def propose_graphs(n_vertices: torch.Tensor, n_max: int, generator: torch.Generator) -> GraphProposals:
    """Draw the edges of graphs with the given numbers of vertices (at most n_max).

    Graph i gets n_i edges, each a pair of endpoints uniform on [1, n_i], written low <= high in
    the first n_i slots; self-loops stay in their slot (low == high) and are dropped when tokens
    are assembled, duplicates are kept.
    """
    count = len(n_vertices)
    slots = n_max + n_max % 2
    words = torch.empty(2, count, slots // 2, dtype=torch.int64, device=generator.device)
    words.random_(generator=generator)
    # Two 21-bit uniforms per word: first endpoints in words[0], second ones in words[1].
    n = n_vertices.to(torch.int32).view(1, count, 1)
    ends = uniform_below(words.view(torch.int32) & _CHUNK_MASK, n)
    low = torch.minimum(ends[0], ends[1]).add_(1)
    high = torch.maximum(ends[0], ends[1]).add_(1)
    # -1 (all bits set) in the first n slots, 0 after: masks without a bool round trip.
    in_graph = (torch.arange(slots, dtype=torch.int32, device=n.device) - n[0]) >> 31
    low &= in_graph
    high &= in_graph
    return GraphProposals(n_vertices, low, high)


def distance_to(graphs: GraphProposals, target: torch.Tensor | int, source: int = 1) -> torch.Tensor:
    """(B,) int64 BFS distances from `source` to `target` (a vertex id, or a (B,) tensor of
    them) in every graph of a batch at once, -1 where the target is unreachable
    (`lib.paths.graph_search.distance_to_target`)."""
    return distance_to_target(edge_vertex_sets(graphs.low, graphs.high), target, source)


def distances_from(graphs: GraphProposals, source: int) -> torch.Tensor:
    """All BFS distances from `source`, for every graph of a batch at once: (B, S + 1) int64,
    S the number of slots, entry v the distance to vertex v, -1 where unreachable (column 0,
    the padding id, is always -1, as is any id above the graph's size)
    (`lib.paths.graph_search.distances_from_source`)."""
    return distances_from_source(edge_vertex_sets(graphs.low, graphs.high), source)


def assemble_tokens(graphs: GraphProposals, target: torch.Tensor, options: SamplerOptions,
                    generator: torch.Generator) -> torch.Tensor:
    """Lay kept proposals out as (B, n_max + 1, 2) tokens: edges first, then padding, then target.

    Edges keep the order in which they were drawn (self-loops removed). With
    `relabel_vertices`, vertex ids 3..n_max are sent by a random injective map (one per graph)
    into 3..max_vertex_id, vertices 1 and 2 keep their ids, and each edge is re-sorted.
    """
    count, n_max = len(target), options.n_max
    # Each edge moves, as one int64 word holding its two int32 ends, to the number of edges
    # before it in its row; other slots go to the last column, which then receives the target
    # row. The column arithmetic is int32, several times faster than int64 on a CPU.
    is_edge = graphs.is_edge
    column = is_edge.cumsum(dim=1, dtype=torch.int32)
    column -= n_max + 1
    column *= is_edge
    column += n_max
    words = torch.stack([graphs.low, graphs.high], dim=-1).view(torch.int64).squeeze(-1)
    rows = torch.zeros(count, n_max + 1, dtype=torch.int64, device=words.device)
    rows.scatter_(1, column.long(), words)
    pairs = rows.view(torch.int32).view(count, n_max + 1, 2)
    pairs[:, n_max, 0] = target
    pairs[:, n_max, 1] = options.target_token
    tokens = pairs.long()
    return relabel_tokens(tokens, options, generator) if options.relabel_vertices else tokens


def relabel_tokens(tokens: torch.Tensor, options: SamplerOptions, generator: torch.Generator) -> torch.Tensor:
    """Send vertex ids 3..n_max of each example to distinct random ids in 3..max_vertex_id.

    One uniformly random injective map per example; vertices 1 and 2, padding and the TARGET
    token keep their ids, and each edge is re-sorted so that it still reads a < b.
    """
    count, n_max = len(tokens), options.n_max
    device = tokens.device
    ranks = torch.rand(count, options.max_vertex_id - 2, generator=generator, device=device).argsort(dim=1)
    fixed = torch.arange(3, device=device).expand(count, 3)
    new_id = torch.cat([fixed, 3 + ranks[:, : n_max - 2]], dim=1)  # new_id[old id]
    edges = new_id.gather(1, tokens[:, :n_max].reshape(count, -1)).view(count, n_max, 2)
    target_row = torch.cat([new_id.gather(1, tokens[:, n_max, :1]), tokens[:, n_max, 1:]], dim=1)
    return torch.cat([torch.sort(edges, dim=-1).values, target_row.unsqueeze(1)], dim=1)


__all__ = [
    "CHUNK_BITS", "GraphProposals", "assemble_tokens", "distance_to", "distances_from", "draw_vertex_counts",
    "propose_graphs", "random_chunks", "relabel_tokens", "uniform_below",
]
