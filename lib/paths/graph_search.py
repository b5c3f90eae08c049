"""Breadth-first search in many small graphs at once, with vertex sets as bitmasks (chapters 2, 3).

The sampler of `lib.paths.sampler` labels each graph with a BFS distance, and chapter 3 reads
distances back from tokens; both search whole batches with this module, never one graph at a
time. A set of vertices is one integer per graph, vertex v on bit v - 1 (so 15 vertices fit an
int16 with the sign bit free). A batch of graphs is given by its edges' vertex sets,
`edge_sets` of shape (slots, graphs): entry (e, g) is the set {a, b} of edge slot e of graph g,
0 for an empty slot. Slots come first so that an OR over the slots folds contiguous memory.

One search round maps every graph's frontier to its neighbours: an edge that touches the
frontier contributes both of its ends, and an OR over the slots collects them (`neighbours`).
A graph leaves the search when its target is found or its frontier is empty. The first
`HEAD_ROUNDS` rounds run block by block, so that a block's edges stay in cache on a CPU; the
graphs still searching are then pooled and gathered into smaller tensors whenever half of them
have finished, so the cost follows each graph's own depth rather than the deepest graph's.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

#: On a CPU, graphs are searched in blocks of this many, so that a block stays in cache.
CPU_BLOCK_GRAPHS = 16384
#: Search rounds done block by block before the graphs still searching are pooled.
HEAD_ROUNDS = 4


def vertex_set_dtype(n_vertices: int) -> torch.dtype:
    """Smallest integer type holding vertices 1..n_vertices (bits 0..n - 1) with the sign bit free."""
    return torch.int16 if n_vertices <= 15 else torch.int32 if n_vertices <= 31 else torch.int64


def edge_vertex_sets(low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
    """(slots, graphs) vertex sets of edges given as (graphs, slots) endpoint ids, 0 for no edge.

    A self-loop becomes the set of its one vertex, which never adds anything to a search.
    """
    dtype = vertex_set_dtype(low.shape[1])
    low, high = low.t().to(dtype), high.t().to(dtype)
    both_ends = (1 << (low - 1)) | (1 << (high - 1))
    return torch.where(low > 0, both_ends, 0)


def _or_over_slots(values: torch.Tensor) -> torch.Tensor:
    """Bitwise OR over the rows of a 2-D tensor, folding it in place (torch has no OR reduction)."""
    rows = values.shape[0]
    while rows > 1:
        half = rows // 2
        values[:half] |= values[half: 2 * half]
        if rows % 2:
            values[0] |= values[2 * half]
        rows = half
    return values[0]


def neighbours(edge_sets: torch.Tensor, frontier: torch.Tensor) -> torch.Tensor:
    """(graphs,) set of the vertices adjacent to each graph's `frontier` (its own ones included)."""
    touching = edge_sets & frontier
    touching.clamp_(max=1)  # 1 where the edge touches the frontier (sets are never negative)
    touching *= edge_sets
    return _or_over_slots(touching)


def distance_to_target(edge_sets: torch.Tensor | list[torch.Tensor], target: torch.Tensor | int,
                       source: int = 1) -> torch.Tensor:
    """BFS distance from vertex `source` to `target` in every graph (see the module docstring).

    Args:
        edge_sets: (slots, graphs) vertex sets of the edges, or a list of such blocks of
            consecutive graphs; a block may have fewer slots than another (the rest are empty).
            A tensor is cut into blocks of `CPU_BLOCK_GRAPHS` graphs on a CPU.
        target: a vertex id, or a (graphs,) tensor of them.
        source: the start vertex.

    Returns:
        (graphs,) int64 distances, -1 where the target is unreachable (or is the source).
    """
    if isinstance(edge_sets, torch.Tensor):
        on_cpu = edge_sets.device.type == "cpu"
        edge_sets = list(edge_sets.split(CPU_BLOCK_GRAPHS if on_cpu else max(edge_sets.shape[1], 1), dim=1))
    widths = [block.shape[1] for block in edge_sets]
    slots = max(len(block) for block in edge_sets)
    device, dtype = edge_sets[0].device, edge_sets[0].dtype
    target_bit = (torch.as_tensor(target, device=device) - 1).to(dtype)
    target_bits = target_bit.split(widths) if target_bit.dim() else [target_bit] * len(widths)
    distance = torch.empty(sum(widths), dtype=dtype, device=device)
    still_searching, start = [], 0
    for block, bit in zip(edge_sets, target_bits):
        state = _start_search(block, bit, source, start)
        for depth in range(1, HEAD_ROUNDS + 1):
            state = _search_round(state, depth)
        state = _drop_finished(state, distance)
        if state is not None:
            still_searching.append(state)
        start += block.shape[1]
    state = _pool(still_searching, slots) if still_searching else None
    for depth in range(HEAD_ROUNDS + 1, slots + 1):
        if state is None:
            break
        state = _search_round(state, depth)
        if int(state.frontier.count_nonzero()) * 2 <= len(state.frontier):
            state = _drop_finished(state, distance)
    if state is not None:
        distance[state.columns] = state.distance
    return distance.long()


class _SearchState(NamedTuple):
    """Graphs being searched: their edge sets, target bits, frontiers, the sets of vertices not
    reached yet, distances (-1 until the target is found) and columns in the batch."""

    edge_sets: torch.Tensor
    target_bit: torch.Tensor
    frontier: torch.Tensor
    unreached: torch.Tensor
    distance: torch.Tensor
    columns: torch.Tensor


def _start_search(edge_sets: torch.Tensor, target_bit: torch.Tensor, source: int,
                  first_column: int) -> _SearchState:
    """The state before the first round: the frontier is the source, every other vertex unreached."""
    width, dtype, device = edge_sets.shape[1], edge_sets.dtype, edge_sets.device
    return _SearchState(edge_sets, target_bit,
                        frontier=torch.full((width,), 1 << (source - 1), dtype=dtype, device=device),
                        unreached=torch.full((width,), ~(1 << (source - 1)), dtype=dtype, device=device),
                        distance=torch.full((width,), -1, dtype=dtype, device=device),
                        columns=torch.arange(first_column, first_column + width, device=device))


def _search_round(state: _SearchState, depth: int) -> _SearchState:
    """Move every frontier to the vertices first reached at `depth`; where that includes the
    target, its distance becomes `depth` and the search stops (the frontier is emptied)."""
    frontier = neighbours(state.edge_sets, state.frontier)
    frontier &= state.unreached
    state.unreached.bitwise_xor_(frontier)
    found = (frontier >> state.target_bit) & 1
    state.distance.add_(found, alpha=depth + 1)  # from -1 to depth
    frontier &= found - 1
    return state._replace(frontier=frontier)


def _drop_finished(state: _SearchState, distance_out: torch.Tensor) -> _SearchState | None:
    """Write the distances into `distance_out`; the state of the graphs still searching, or None."""
    distance_out[state.columns] = state.distance
    keep = state.frontier.nonzero().squeeze(1)
    if len(keep) == 0:
        return None
    edge_sets = torch.gather(state.edge_sets, 1, keep.expand(len(state.edge_sets), len(keep)))
    return _SearchState(edge_sets, *(part if part.dim() == 0 else part.index_select(0, keep)
                                     for part in state[1:]))


def _pool(states: list[_SearchState], slots: int) -> _SearchState:
    """One search state holding all of `states` (edge sets padded with empty slots)."""
    width = sum(len(state.frontier) for state in states)
    edge_sets = torch.zeros(slots, width, dtype=states[0].edge_sets.dtype, device=states[0].edge_sets.device)
    start = 0
    for state in states:
        edge_sets[: len(state.edge_sets), start: start + len(state.frontier)] = state.edge_sets
        start += len(state.frontier)
    target_bit = states[0].target_bit
    if target_bit.dim():
        target_bit = torch.cat([state.target_bit for state in states])
    rest = (torch.cat([state[i] for state in states]) for i in range(2, len(_SearchState._fields)))
    return _SearchState(edge_sets, target_bit, *rest)


def distances_from_source(edge_sets: torch.Tensor, source: int) -> torch.Tensor:
    """All BFS distances from vertex `source`, for every graph at once.

    Returns:
        (graphs, slots + 1) int64: entry v is the distance from `source` to vertex v, -1 where
        unreachable (column 0, the padding id, is always -1).
    """
    slots, count = edge_sets.shape
    device, dtype = edge_sets.device, edge_sets.dtype
    bit_of_vertex = torch.arange(slots, dtype=dtype, device=device)  # vertices 1..slots
    distance = torch.full((count, slots + 1), -1, dtype=torch.int64, device=device)
    distance[:, source] = 0
    frontier = reached = torch.full((count,), 1 << (source - 1), dtype=dtype, device=device)
    for depth in range(1, slots + 1):
        frontier = neighbours(edge_sets, frontier) & ~reached
        if not bool(frontier.any()):
            break
        reached = reached | frontier
        distance[:, 1:].masked_fill_(((frontier.unsqueeze(1) >> bit_of_vertex) & 1).bool(), depth)
    return distance


__all__ = ["CPU_BLOCK_GRAPHS", "HEAD_ROUNDS", "distance_to_target", "distances_from_source",
           "edge_vertex_sets", "neighbours", "vertex_set_dtype"]
