"""Random graphs as adjacency matrices, and plain BFS as the reference (chapter 1).

The hand-built transformer of chapter 1 reads a graph as a symmetric boolean adjacency matrix
with no self-loops; as everywhere in `lib.bfs`, vertex v of the study sits at index v - 1, so the
source (vertex 1) is row 0 and the target (vertex 2) is row 1. Its exactness is measured against `bfs_distance_batch` on graphs drawn
from several distributions, so that a construction tuned to one sampler cannot pass by luck.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import torch

#: Samplers offered by name; each returns a bool tensor (batch, n, n).
SAMPLER_NAMES = ("seed", "sparse", "dense", "tree", "path")


def _symmetrize(upper: torch.Tensor) -> torch.Tensor:
    """Keep the strict upper triangle of a (batch, n, n) bool tensor and mirror it."""
    upper = torch.triu(upper, diagonal=1)
    return upper | upper.transpose(1, 2)


def sample_seed_graphs(batch: int, n_vertices: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """The study's sampler: 2n random endpoints in [0, n) paired into n edges, self-loops dropped.

    Duplicate edges collapse (an adjacency matrix cannot hold them), as in the study's
    appendix, whose average degree is about 2.
    """
    ends = torch.randint(0, n_vertices, (batch, n_vertices, 2), generator=generator)
    adjacency = torch.zeros(batch, n_vertices, n_vertices, dtype=torch.bool)
    rows = torch.arange(batch).unsqueeze(1).expand(-1, n_vertices)
    adjacency[rows, ends[..., 0], ends[..., 1]] = True
    adjacency[rows, ends[..., 1], ends[..., 0]] = True
    adjacency &= ~torch.eye(n_vertices, dtype=torch.bool)
    return adjacency


def sample_erdos_renyi(batch: int, n_vertices: int, edge_probability: float,
                       generator: torch.Generator | None = None) -> torch.Tensor:
    """G(n, p): every pair of distinct vertices is an edge independently with probability p."""
    coins = torch.rand(batch, n_vertices, n_vertices, generator=generator) < edge_probability
    return _symmetrize(coins)


def sample_random_trees(batch: int, n_vertices: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Random recursive trees: vertex k > 0 attaches to a uniform earlier vertex, then labels are shuffled.

    Trees are connected, so every distance is finite and long distances are common.
    """
    adjacency = torch.zeros(batch, n_vertices, n_vertices, dtype=torch.bool)
    if n_vertices > 1:
        child = torch.arange(1, n_vertices)
        parent = (torch.rand(batch, n_vertices - 1, generator=generator) * child).long()
        rows = torch.arange(batch).unsqueeze(1)
        adjacency[rows, child, parent] = True
        adjacency[rows, parent, child] = True
    return _relabel(adjacency, generator)


def sample_random_paths(batch: int, n_vertices: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A Hamiltonian path through the vertices in random order: distances up to n - 1."""
    adjacency = torch.zeros(batch, n_vertices, n_vertices, dtype=torch.bool)
    if n_vertices > 1:
        i = torch.arange(n_vertices - 1)
        adjacency[:, i, i + 1] = True
        adjacency[:, i + 1, i] = True
    return _relabel(adjacency, generator)


def _relabel(adjacency: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Apply an independent uniform random vertex permutation to each graph."""
    batch, n, _ = adjacency.shape
    perm = torch.argsort(torch.rand(batch, n, generator=generator), dim=1)
    rows = torch.arange(batch)[:, None, None]
    return adjacency[rows, perm[:, :, None], perm[:, None, :]]


def sample_graphs(name: str, batch: int, n_vertices: int,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw `batch` graphs on `n_vertices` vertices from the sampler called `name`.

    "seed" is the study's sampler; "sparse" and "dense" are G(n, p) with expected degree about
    1.5 and n/2; "tree" and "path" are connected graphs with long shortest paths.
    """
    samplers: dict[str, Callable[[], torch.Tensor]] = {
        "seed": lambda: sample_seed_graphs(batch, n_vertices, generator),
        "sparse": lambda: sample_erdos_renyi(batch, n_vertices, min(1.0, 1.5 / max(n_vertices - 1, 1)), generator),
        "dense": lambda: sample_erdos_renyi(batch, n_vertices, 0.5, generator),
        "tree": lambda: sample_random_trees(batch, n_vertices, generator),
        "path": lambda: sample_random_paths(batch, n_vertices, generator),
    }
    if name not in samplers:
        raise ValueError(f"Unknown graph sampler {name!r}; choose one of {', '.join(SAMPLER_NAMES)}.")
    return samplers[name]()


def bfs_distance(adjacency: torch.Tensor, source_index: int = 0, target_index: int = 1,
                 unreachable: int | None = None) -> int:
    """Plain breadth-first search on one (n, n) adjacency matrix: the reference of chapter 1.

    Returns the number of edges on a shortest path between the vertices at rows `source_index`
    and `target_index` (by default vertex 1 and vertex 2), or `unreachable` (default n) when
    there is none.
    """
    n = adjacency.shape[0]
    neighbours = [torch.nonzero(row).flatten().tolist() for row in adjacency]
    distance = {source_index: 0}
    frontier = deque([source_index])
    while frontier:
        vertex = frontier.popleft()
        if vertex == target_index:
            return distance[vertex]
        for other in neighbours[vertex]:
            if other not in distance:
                distance[other] = distance[vertex] + 1
                frontier.append(other)
    return n if unreachable is None else unreachable


def bfs_distance_batch(adjacency: torch.Tensor) -> torch.Tensor:
    """`bfs_distance` from vertex 1 to vertex 2 for every graph of a (batch, n, n) tensor."""
    return torch.tensor([bfs_distance(graph) for graph in adjacency.cpu()], dtype=torch.float32)


def frontier_distance_batch(adjacency: torch.Tensor, unreachable: int | None = None) -> torch.Tensor:
    """The distance from vertex 1 to vertex 2 of every graph, all graphs at once (chapter 1).

    The same numbers as `bfs_distance_batch` (tested against it), computed by growing the set of
    vertices within k hops of vertex 1 with one boolean matrix product per hop, so that the
    perturb-and-recover protocol can label a fresh batch of graphs at every step.

    Args:
        adjacency: (batch, n, n) bool adjacency, vertex v at index v - 1.
        unreachable: the label where there is no path (default n; the study's appendix: n + 1).

    Returns:
        (batch,) float32 distances.
    """
    batch, n, _ = adjacency.shape
    edges = adjacency.float()
    reached = torch.zeros(batch, n, dtype=torch.bool, device=adjacency.device)
    reached[:, 0] = True
    distance = torch.full((batch,), float(n if unreachable is None else unreachable), device=adjacency.device)
    for hops in range(n):
        newly = reached[:, 1] & (distance == float(n if unreachable is None else unreachable))
        distance[newly] = float(hops)
        reached = reached | (torch.einsum("bv,bvw->bw", reached.float(), edges) > 0)
    return distance
