"""Random graphs as edge tokens, with shortest-path labels, sampled in batches (chapters 2 and 3).

A graph on n vertices (n uniform in [n_min, n_max]) is drawn the way the shortest-paths study
draws it [@wang2024shortest]: 2n endpoints uniform in [1, n] are paired into n edges, self-loops
are dropped and duplicate edges are kept. The model sees the graph as a sequence of n_max + 1
token pairs: the edges (a, b) with a < b in the order they were drawn, padding pairs (0, 0) up to
n_max slots, and last the pair (target, TARGET) where TARGET = max_vertex_id + 1 is a token that
is never a vertex. The label is the breadth-first-search distance from vertex 1 to the target.

Everything runs as tensor operations over a whole batch of graphs, on the CPU or a GPU: no
Python loop ever visits one graph. The breadth-first search expands all frontiers at once, with
vertex sets held as bitmasks (`distance_to`, `distances_from`), and the rejection filters that
balance path lengths are applied by drawing more proposals than needed, keeping those that
pass, and repeating in rounds until the batch is full. `lib.paths.reference_sampler` is the per-graph Python generator of the same distribution; the
benchmark `benchmarks/bench_graph_sampler.py` compares the two and the tests compare their
label histograms.

Tasks (what the target is, and which proposals are kept) live in the `TASKS` registry so that
chapters can add their own with `register_task`.

Where the published description leaves a choice open, this module decides as follows (each is
repeated where it is implemented):

- Edges keep their drawing order with self-loops removed, and padding comes after the edges.
- The unreachable label defaults to n_max (15, the published MAX_VTXS, at n_max = 15).
- Pre-training filter for n_max != 15: threshold round(6 n_max / 15) (at least 2), unreachable
  kept with probability 1 / n_max; both reduce to the published 6 and 1/15 at n_max = 15.
- On-path targets: the position k runs over 1..d inclusive (k = d makes vertex 2 the target);
  with several shortest paths the target is uniform among the on-path vertices at distance k;
  a label above 7 without `large_targets` rejects the whole proposal; the small-graph filter is
  on by default when n_max <= 7.
- "Any" targets are uniform on [2, target_max] whatever the graph's size, so a target above n is
  unreachable.
- Uniform integers come from 21-bit slices of 64-bit random words (see `random_chunks`), except
  in the pre-training task, whose edges are pair indices drawn from one 31- or 32-bit word each
  (closer to uniform than two 21-bit ends), whose numbers of proposals of
  each size and coin range are Poisson counts, and whose proposals with a coin that rules out
  distance 1 are drawn without a 1-2 edge (see `pretrain_task`).
- The pre-training task returns its kept proposals shuffled, so `sample_batch` may keep the first
  ones of its last round.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from collections.abc import Callable, Iterator
from typing import NamedTuple

import torch

from lib.book.params import ParameterError, check_bool, check_choice, check_int

#: The largest number of vertices in the published run; the thresholds below are its values.
PUBLISHED_N_MAX = 15
#: Pre-training filter of the published run: paths of length >= 6 are always kept.
PUBLISHED_LENGTH_THRESHOLD = 6
#: Without "large targets", on-path labels are at most 7 (the published small-graph size).
SMALL_LABEL_MAX = 7
#: The on-path small-graph filter is on by default when graphs have at most this many vertices.
SMALL_GRAPH_FILTER_N_MAX = 7
#: Random bits per uniform integer: two 21-bit values are cut from each 64-bit random word.
CHUNK_BITS = 21
_CHUNK_MASK = (1 << CHUNK_BITS) - 1
#: On a CPU, graphs are searched in blocks of this many so that the working set stays in cache.
_CPU_BLOCK = 8192
#: Search rounds done block by block before the unfinished graphs are pooled.
_HEAD_ROUNDS = 3


@dataclasses.dataclass(frozen=True)
class SamplerOptions:
    """Everything that defines one data distribution (see `sample_batch` for the meanings)."""

    task: str
    n_min: int
    n_max: int
    target_max: int
    large_targets: bool
    small_graph_filter: bool
    length_threshold: int
    max_vertex_id: int
    relabel_vertices: bool
    unreachable_label: int

    @property
    def target_token(self) -> int:
        """The token paired with the target vertex in the last row."""
        return self.max_vertex_id + 1

    @property
    def vocabulary_size(self) -> int:
        """Number of distinct token ids: padding 0, vertices 1..max_vertex_id, TARGET."""
        return self.max_vertex_id + 2


def default_length_threshold(n_max: int) -> int:
    """Pre-training filter threshold for graphs of up to `n_max` vertices.

    The published run (n_max = 15) keeps every example with path length >= 6. For other sizes
    the threshold scales with n_max, round(6 n_max / 15), and is at least 2 so that the filter
    still thins out the most common length 1; at n_max = 15 it is exactly 6.
    """
    return max(2, round(PUBLISHED_LENGTH_THRESHOLD * n_max / PUBLISHED_N_MAX))


def make_options(
    task: str, n_min: int = 3, n_max: int = 15, *, target_max: int | None = None,
    large_targets: bool = False, small_graph_filter: bool | None = None,
    length_threshold: int | None = None, max_vertex_id: int | None = None,
    relabel_vertices: bool = False, unreachable_label: int | None = None,
) -> SamplerOptions:
    """Validate the sampler's arguments and fill in defaults (see `sample_batch`)."""
    check_choice("task", task, sorted(TASKS))
    check_int("n_max", n_max, 2, 62)
    check_int("n_min", n_min, 2, n_max)
    target_max = n_max if target_max is None else check_int("target_max", target_max, 2, n_max)
    check_bool("large_targets", large_targets)
    if small_graph_filter is None:
        small_graph_filter = n_max <= SMALL_GRAPH_FILTER_N_MAX
    check_bool("small_graph_filter", small_graph_filter)
    if length_threshold is None:
        length_threshold = default_length_threshold(n_max)
    check_int("length_threshold", length_threshold, 1, n_max)
    max_vertex_id = n_max if max_vertex_id is None else check_int(
        "max_vertex_id", max_vertex_id, n_max, 10_000)
    check_bool("relabel_vertices", relabel_vertices)
    unreachable_label = n_max if unreachable_label is None else check_int(
        "unreachable_label", unreachable_label, 1)
    return SamplerOptions(task, n_min, n_max, target_max, large_targets, small_graph_filter,
                          length_threshold, max_vertex_id, relabel_vertices, unreachable_label)


class GraphProposals(NamedTuple):
    """A batch of random graphs before any filter.

    Attributes:
        n_vertices: (B,) int64 number of vertices of each graph.
        low, high: (B, S) int32 endpoints of edge slot e, low <= high, in drawing order, where
            S is n_max rounded up to an even number (so that slots pair into 64-bit words).
            Slots from n on hold (0, 0); a dropped self-loop holds low == high.
    """

    n_vertices: torch.Tensor
    low: torch.Tensor
    high: torch.Tensor

    @property
    def is_edge(self) -> torch.Tensor:
        """(B, S) bool: slot e holds an edge of the graph (not padding, not a self-loop)."""
        return (self.low > 0) & (self.low != self.high)

    def select(self, rows: torch.Tensor) -> GraphProposals:
        """The proposals at `rows`."""
        return GraphProposals(self.n_vertices[rows], self.low[rows], self.high[rows])


class TaskDraw(NamedTuple):
    """A task's proposals and its decision for each: target vertex, its distance, keep or not.

    `distance` is the BFS distance from vertex 1 to `target` as int64, -1 where unreachable.
    A task may lay out the tokens itself (`tokens`, as `assemble_tokens` would, before any
    relabelling); `graphs` is then None.
    """

    graphs: GraphProposals | None
    target: torch.Tensor
    distance: torch.Tensor
    keep: torch.Tensor
    tokens: torch.Tensor | None = None


TaskFunction = Callable[[int, SamplerOptions, torch.Generator], TaskDraw]
#: Registered tasks by name; `sample_batch(task=name)` looks them up here.
TASKS: dict[str, TaskFunction] = {}
#: Rough share of proposals each task keeps, used to size the first round of proposals.
EXPECTED_ACCEPTANCE: dict[str, float] = {}


def register_task(name: str, expected_acceptance: float = 0.1) -> Callable[[TaskFunction], TaskFunction]:
    """Decorator that adds a task to `TASKS` under `name`.

    A task is a function `(count, options, generator) -> TaskDraw` that draws `count`
    proposals (usually with `draw_vertex_counts` and `propose_graphs`), labels them (usually with
    `distance_to`) and says which to keep; `sample_batch` repeats it until the batch is full.
    `expected_acceptance` only sizes the first round; later rounds use the observed rate.
    """
    def add(function: TaskFunction) -> TaskFunction:
        TASKS[name] = function
        EXPECTED_ACCEPTANCE[name] = expected_acceptance
        return function
    return add


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


def _mask_dtype(n_max: int) -> torch.dtype:
    return torch.int32 if n_max <= 30 else torch.int64


def _edge_masks(low: torch.Tensor, high: torch.Tensor, dtype: torch.dtype):
    """Per slot: bit of the low end, bit of the high end, and their distance in bits."""
    low, high = low.to(dtype), high.to(dtype)
    low_bit = torch.ones_like(low) << low
    gap = high - low
    return low_bit, low_bit << gap, gap


def _or_over_slots(values: torch.Tensor) -> torch.Tensor:
    """Bitwise OR along the last dimension (torch has no OR reduction).

    int32 slots are paired into int64 words and the words folded in halves, which takes fewer
    and larger operations than folding the int32 values themselves.
    """
    paired = values.dtype == torch.int32 and values.shape[-1] % 2 == 0
    if paired:
        values = values.view(torch.int64)
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        folded = values[..., :half] | values[..., half: 2 * half]
        if values.shape[-1] % 2:
            folded[..., 0] |= values[..., -1]
        values = folded
    values = values[..., 0]
    if paired:
        values = (values | (values >> 32)).to(torch.int32)
    return values


def _neighbours(frontier: torch.Tensor, low_bit: torch.Tensor, high_bit: torch.Tensor,
                gap: torch.Tensor) -> torch.Tensor:
    """Bitmask of the vertices adjacent to the bitmask `frontier`, for every graph at once.

    An edge slot moves the bit of its low end to its high end (shift left by the gap) and the
    bit of its high end to its low end; padding slots sit on bit 0, which no frontier holds.
    """
    frontier = frontier.unsqueeze(1)
    moved = frontier & low_bit
    moved <<= gap
    back = frontier & high_bit
    back >>= gap
    moved |= back
    return _or_over_slots(moved)


def _search_rounds(masks, target, first_depth, last_depth, frontier, reached, distance):
    """Expand every frontier by rounds first_depth..last_depth (see `distance_to`).

    `distance` starts at -1 and becomes the depth at which the target joins the frontier; the
    frontier of a graph that reached its target is cleared, so "still searching" is
    `frontier != 0`.
    """
    for depth in range(first_depth, last_depth + 1):
        new = _neighbours(frontier, *masks) & ~reached
        reached = reached | new
        hit = (new >> target) & 1
        distance = distance + hit * (depth + 1)
        frontier = new & (hit - 1)
    return frontier, reached, distance


def distance_to(graphs: GraphProposals, target: torch.Tensor | int, source: int = 1) -> torch.Tensor:
    """BFS distance from `source` to `target` in every graph of a batch at once.

    Vertex sets are bitmasks (bit v for vertex v), and one round maps the frontier of every
    graph to its neighbours with a few integer operations per edge slot. A graph leaves the
    search when it reaches its target or when its frontier is empty (unreachable). On a CPU the
    first rounds run block by block so that each block stays in cache; the graphs still
    searching are then pooled, and the pool is compacted whenever half of it has finished, so
    the cost follows each graph's own depth rather than the deepest graph of the batch.

    Args:
        graphs: the proposals.
        target: a vertex id, or a (B,) tensor of them.
        source: the start vertex.

    Returns:
        (B,) int64 distances, -1 where the target is unreachable.
    """
    count, slots = graphs.low.shape  # slots >= the largest vertex id
    device = graphs.low.device
    dtype = _mask_dtype(slots)
    target = (torch.full((count,), target, device=device) if isinstance(target, int) else target).to(dtype)
    distance = torch.empty(count, dtype=dtype, device=device)
    on_cpu = device.type == "cpu"
    block = _CPU_BLOCK if on_cpu else max(count, 1)
    head_rounds = _HEAD_ROUNDS if on_cpu else slots
    pool = []
    for start in range(0, count, block):
        rows = slice(start, start + block)
        size = len(graphs.low[rows])
        masks = _edge_masks(graphs.low[rows], graphs.high[rows], dtype)
        frontier = torch.full((size,), 1 << source, dtype=dtype, device=device)
        state = _search_rounds(masks, target[rows], 1, head_rounds, frontier, frontier,
                               torch.full((size,), -1, dtype=dtype, device=device))
        distance[rows] = state[2]
        searching = state[0].nonzero().squeeze(1)
        if len(searching):
            pool.append((searching + start, *(m[searching] for m in masks), target[rows][searching],
                         state[0][searching], state[1][searching]))
    if not pool:
        return distance.long()
    rows, low_bit, high_bit, gap, target, frontier, reached = (torch.cat(part) for part in zip(*pool))
    pooled_distance = torch.full_like(rows, -1, dtype=dtype)
    for depth in range(head_rounds + 1, slots + 1):
        frontier, reached, pooled_distance = _search_rounds(
            (low_bit, high_bit, gap), target, depth, depth, frontier, reached, pooled_distance)
        searching = frontier != 0
        n_searching = int(searching.sum())
        if n_searching * 2 <= len(rows):
            done = (~searching).nonzero().squeeze(1)
            distance[rows[done]] = pooled_distance[done]
            keep = searching.nonzero().squeeze(1)
            rows, low_bit, high_bit, gap, target, frontier, reached, pooled_distance = (
                part[keep] for part in
                (rows, low_bit, high_bit, gap, target, frontier, reached, pooled_distance))
        if n_searching == 0:
            break
    distance[rows] = pooled_distance
    return distance.long()


def distances_from(graphs: GraphProposals, source: int) -> torch.Tensor:
    """All BFS distances from `source`, for every graph of a batch at once.

    Same bitmask rounds as `distance_to`, run until every frontier is empty; each round's new
    layer is unpacked into the per-vertex distances.

    Returns:
        (B, S + 1) int64, S the number of slots (n_max rounded up to even): entry v is the
        distance from `source` to vertex v, -1 where unreachable (column 0, the padding id, is
        always -1, as is any id above the graph's size).
    """
    count, slots = graphs.low.shape  # slots >= the largest vertex id
    device = graphs.low.device
    dtype = _mask_dtype(slots)
    masks = _edge_masks(graphs.low, graphs.high, dtype)
    vertices = torch.arange(slots + 1, dtype=dtype, device=device)
    distance = torch.full((count, slots + 1), -1, dtype=torch.int64, device=device)
    distance[:, source] = 0
    frontier = reached = torch.full((count,), 1 << source, dtype=dtype, device=device)
    for depth in range(1, slots + 1):
        frontier = _neighbours(frontier, *masks) & ~reached
        if not bool(frontier.any()):
            break
        reached = reached | frontier
        distance.masked_fill_(((frontier.unsqueeze(1) >> vertices) & 1).bool(), depth)
    return distance


def pretrain_keep_probability(distance: int, options: SamplerOptions) -> float:
    """Probability that the pre-training filter keeps a proposal at this 1-2 distance (-1: none).

    With threshold T (6 at n_max = 15, see `default_length_threshold`): d >= T is always kept,
    d < T with probability 1 / (2 (T - d)), an unreachable vertex 2 with probability 1 / n_max
    (1/15 in the published run).
    """
    if distance < 0:
        return 1.0 / options.n_max
    if distance >= options.length_threshold:
        return 1.0
    return 1.0 / (2 * (options.length_threshold - distance))


#: Pre-training proposals are built in units of at least this many graphs (one group of equal-sized
#: graphs, or several small groups together; see `pretrain_task`).
_UNIT_GRAPHS = 16384
#: Search rounds done unit by unit, while the unit's edges are still in cache.
_PRETRAIN_HEAD_ROUNDS = 4


def _vertex_set_dtype(n_max: int) -> torch.dtype:
    """Smallest integer type whose bits 0..n_max-1 (vertex v on bit v - 1) leave the sign bit free."""
    return torch.int16 if n_max <= 15 else torch.int32 if n_max <= 31 else torch.int64


@functools.lru_cache(maxsize=16)
def _pair_tables(n_min: int, n_max: int, device: torch.device):
    """Lookup tables for the pre-training task's edges, drawn as pair indices (`_draw_pair_index`).

    For each size n there are two blocks of entries: all n^2 endpoint pairs (a, b), and the
    n^2 - 2 pairs other than (1, 2) and (2, 1) (for graphs drawn without a 1-2 edge). An entry
    holds the pair's vertex set (bits a - 1 and b - 1) and its token pair (min, max). A self-loop
    a = b, like entry 0 (an empty slot), has no vertices and the pair (0, 0): it is dropped.

    Returns:
        (offset, vertex_set, ends): offset[(n, without_1_2)] is the first entry of a block; ends
        is an (entries, 2) int64 tensor.
    """
    offset, vertex_set, ends = {}, [0], [(0, 0)]
    for n in range(n_min, n_max + 1):
        for without_1_2 in (False, True):
            offset[(n, without_1_2)] = len(vertex_set)
            for a in range(1, n + 1):
                for b in range(1, n + 1):
                    if without_1_2 and {a, b} == {1, 2}:
                        continue
                    vertex_set.append(0 if a == b else (1 << (a - 1)) | (1 << (b - 1)))
                    ends.append((0, 0) if a == b else (min(a, b), max(a, b)))
    return (offset, torch.tensor(vertex_set, dtype=_vertex_set_dtype(n_max), device=device),
            torch.tensor(ends, dtype=torch.int64, device=device))


def _draw_pair_index(words: torch.Tensor, pairs, offset) -> torch.Tensor:
    """Table index offset + floor(u pairs / 2^31) for int32 words u uniform on [0, 2^31), in place.

    One 31-bit word gives both ends of an edge: the pair index is uniform on [0, pairs) up to
    |P - 1/pairs| < 2^-31 (relative error below 1.1e-7 at n = 15, 225 pairs). The product is
    split into 16-bit halves so that it stays exact in int32 (pairs < 2^15).
    """
    low_half = words & 0xFFFF
    low_half *= pairs
    low_half >>= 16
    words >>= 16
    words *= pairs
    words += low_half
    words >>= 15
    words += offset
    return words


def _or_rows(values: torch.Tensor) -> torch.Tensor:
    """Bitwise OR over the rows of a 2-D tensor, folding it in place (torch has no OR reduction)."""
    rows = values.shape[0]
    while rows > 1:
        half = rows // 2
        folded = values[:half]
        folded |= values[half: 2 * half]
        if rows % 2:
            first = values[0]
            first |= values[2 * half]
        rows = half
    return values[0]


def _expand_to_vertex_2(vertex_sets: torch.Tensor, frontier: torch.Tensor | None,
                        unreached: torch.Tensor, distance: torch.Tensor) -> torch.Tensor:
    """One search round from the frontiers (None: vertex 1 alone); returns the new frontiers.

    `vertex_sets` is (slots, graphs): the two ends of each edge as one bitmask (vertex v on bit
    v - 1), 0 for an empty slot. An edge joins the frontier's neighbours when it touches the
    frontier: `min(edge & frontier, 1) * edge` is the edge or 0, and OR over the slots gives the
    neighbours. `unreached` (the vertices not yet found) and `distance` are updated in place;
    `distance` grows by one each round while vertex 2 (bit 1) is unreached, and a graph's
    frontier is cleared when it finds vertex 2.
    """
    sign = torch.iinfo(vertex_sets.dtype).bits - 1
    if frontier is None:
        touching = vertex_sets & 1  # already 0 or 1
    else:
        touching = vertex_sets & frontier
        touching.clamp_(max=1)
    touching *= vertex_sets
    new = _or_rows(touching)
    new &= unreached
    unreached ^= new
    # -1 where vertex 2 is still unreached, 0 once it is found: bit 1 moved onto the sign bit.
    searching = unreached << (sign - 1)
    searching >>= sign
    new &= searching
    distance -= searching
    return new


def _search_to_vertex_2(vertex_sets: torch.Tensor, frontier: torch.Tensor | None,
                        unreached: torch.Tensor, distance: torch.Tensor, rounds: int):
    """Up to `rounds` search rounds (see `_expand_to_vertex_2`), dropping finished graphs.

    The graphs still searching are gathered into smaller tensors whenever half of them have
    finished, so each round costs what the unfinished graphs need. Finished graphs' results are
    written into `unreached` and `distance` (in place).

    When the search starts (`frontier` None), a graph in which no edge touches vertex 2 leaves
    it after the first round: 2 is unreachable there, and such graphs would otherwise keep
    searching until the component of vertex 1 is exhausted (about a quarter of all search
    rounds of pre-training proposals, measured here).

    Returns:
        None if every graph finished, else (vertex sets, frontiers, columns into `unreached`,
        their unreached sets, their distances) of the graphs still searching.
    """
    columns, own_unreached, own_distance = None, unreached, distance
    touches_2 = None
    if frontier is None:
        touches_2 = _or_rows(vertex_sets & 2)  # bit 1 set where some edge touches vertex 2
        touches_2 >>= 1
        touches_2.neg_()  # -1 (all bits) where vertex 2 has an edge, 0 where it is isolated
    for done in range(1, rounds + 1):
        frontier = _expand_to_vertex_2(vertex_sets, frontier, own_unreached, own_distance)
        if touches_2 is not None:
            frontier &= touches_2
            touches_2 = None
        searching = frontier != 0
        n_searching = int(searching.sum())
        if n_searching * 2 > len(frontier) and done < rounds:
            continue
        if columns is not None:
            unreached[columns] = own_unreached
            distance[columns] = own_distance
        if n_searching == 0:
            return None
        keep = searching.nonzero().squeeze(1)
        vertex_sets = torch.gather(vertex_sets, 1, keep.expand(len(vertex_sets), n_searching))
        frontier = frontier.index_select(0, keep)
        columns = keep if columns is None else columns.index_select(0, keep)
        own_unreached, own_distance = own_unreached.index_select(0, keep), own_distance.index_select(0, keep)
    return vertex_sets, frontier, columns, own_unreached, own_distance


@register_task("pretrain", expected_acceptance=0.12)
def pretrain_task(count: int, options: SamplerOptions, generator: torch.Generator) -> TaskDraw:
    """Target 2, thinned by `pretrain_keep_probability` so that path lengths are balanced.

    Returns only the kept proposals (`keep` is all true), in random order, as tokens. Equivalent
    to drawing `count` proposals one by one and keeping a proposal when its coin, uniform on
    [0, 1), falls below the keep probability of its 1-2 distance, but organised for speed:

    - The coin is drawn before the edges, and only coins that can still lead to a kept graph
      are drawn. A graph on n vertices has a 1-2 distance of at most n - 1, so a coin at or above
      q_n, the largest keep probability of a distance possible on n vertices, always rejects. A
      coin at or above p_1, the keep probability of distance 1, rejects every graph with a 1-2
      edge; so for coins in [p_1, q_n) the graph is drawn without one: every edge slot uniform
      on the n^2 - 2 endpoint pairs other than (1, 2) and (2, 1), and the number of such
      proposals is thinned by the probability (1 - 2/n^2)^n that n slots avoid them. The
      numbers of proposals of each size and coin range are independent Poisson counts
      (Poisson splitting: given their total, the proposals are independent draws of the same
      distribution, so the number drawn per call being random changes nothing).
    - Graphs are laid out by size, so every edge slot of a unit of equal-sized graphs is used;
      each edge is one index into `_pair_tables`, where a self-loop is an empty slot, drawn
      from one random word: offset + w % pairs for a 32-bit w in units of one group (torch's
      `random_(from, to)`), `_draw_pair_index` in units that mix groups. Either way each pair's
      probability is within 2^-31 of uniform. Only the kept graphs' edges are moved to the
      front of their rows and looked up (`_pretrain_tokens`).
    - The search from vertex 1 runs on bitmasks, `_PRETRAIN_HEAD_ROUNDS` rounds per unit while it
      is in cache, then on the pooled graphs still searching, which are compacted whenever half
      of them have finished.
    - The kept graphs are shuffled, so that keeping only the first few of them (as `sample_batch`
      does in its last round) is a uniform choice.
    """
    device = generator.device
    n_min, n_max = options.n_min, options.n_max
    keep_probability = [pretrain_keep_probability(d, options) for d in range(-1, n_max)]
    offset, vertex_set_table, ends_table = _pair_tables(n_min, n_max, device)
    dtype = vertex_set_table.dtype
    sizes = range(n_max, n_min - 1, -1)  # largest first: shorter graphs pad the last rows
    p_1 = keep_probability[2]
    # (n, pairs, table offset, lowest coin, highest coin, expected proposals). The many graphs
    # drawn without a 1-2 edge come first, one unit per size; the few with low coins after.
    groups, low_coin_groups = [], []
    for n in sizes:
        q_n = max(keep_probability[: n + 1])  # d = -1 (unreachable) .. n - 1
        low = min(p_1, q_n)
        low_coin_groups.append((n, n * n, offset[(n, False)], 0.0, low, count * low / len(sizes)))
        if q_n > low:
            without_1_2 = (1 - 2 / n**2) ** n
            groups.append((n, n * n - 2, offset[(n, True)], low, q_n,
                           count * (q_n - low) * without_1_2 / len(sizes)))
    groups += low_coin_groups
    means = torch.tensor([g[5] for g in groups], dtype=torch.float64, device=device)
    counts = [int(c) for c in torch.poisson(means, generator=generator).tolist()]
    total = sum(counts)
    group_of = torch.repeat_interleave(torch.arange(len(groups), device=device),
                                       torch.tensor(counts, device=device), output_size=total)
    coin_range = torch.tensor([[g[3], g[4] - g[3]] for g in groups], dtype=torch.float64, device=device)
    coin = torch.rand(total, dtype=torch.float64, device=device, generator=generator)
    coin = torch.addcmul(coin_range[:, 0].index_select(0, group_of), coin,
                         coin_range[:, 1].index_select(0, group_of))
    unreached = torch.full((total,), -2, dtype=dtype, device=device)  # every vertex but 1
    distance = torch.ones(total, dtype=dtype, device=device)
    pool, unit_indices = [], []
    start = 0
    for unit in _units(groups, counts):
        rows, width = max(group[0] for group, _ in unit), sum(c for _, c in unit)
        columns = slice(start, start + width)
        index = torch.empty(rows, width, dtype=torch.int32, device=device)
        if len(unit) == 1:  # torch draws a 32-bit word w per entry and returns offset + w % pairs
            _, pairs, first = unit[0][0][:3]
            index.random_(first, first + pairs, generator=generator)
        else:  # several groups: per-graph pairs and offset, and empty slots (entry 0) from n on
            words = index.random_(generator=generator)
            per_graph = torch.repeat_interleave(
                torch.tensor([group[:3] for group, _ in unit], dtype=torch.int32, device=device),
                torch.tensor([c for _, c in unit], device=device), dim=0, output_size=width).t()
            index = _draw_pair_index(words, per_graph[1:2], per_graph[2:3])
            slot = torch.arange(rows, dtype=torch.int32, device=device).unsqueeze(1)
            index &= (slot - per_graph[0:1]) >> 31
        unit_indices.append((start, index))
        vertex_sets = vertex_set_table.index_select(0, index.view(-1)).view(rows, width)
        searching = _search_to_vertex_2(vertex_sets, None, unreached[columns], distance[columns],
                                        _PRETRAIN_HEAD_ROUNDS)
        if searching is not None:
            pool.append((searching[0], searching[1], searching[2] + start, searching[3], searching[4]))
        start += width
    if pool:
        _finish_search(pool, n_max, unreached, distance)
    # level: the 1-2 distance, or 0 where vertex 2 is unreachable, which indexes the keep table.
    level = ((unreached >> 1) & 1) ^ 1
    level *= distance
    keep_table = torch.tensor(keep_probability[:1] + keep_probability[2:], dtype=torch.float64, device=device)
    kept = (coin < keep_table.index_select(0, level.int())).nonzero().squeeze(1)
    # Table indices of the kept graphs' edges, unit by unit (kept columns are in increasing order).
    bounds = torch.searchsorted(kept, torch.tensor([s for s, _ in unit_indices[1:]] + [total], device=device))
    kept_index = torch.zeros(len(kept), n_max, dtype=torch.int32, device=device)
    first = 0
    for (start, index), last in zip(unit_indices, bounds.tolist()):
        if last > first:
            kept_index[first:last, : len(index)] = index.index_select(1, kept[first:last] - start).t()
        first = last
    # Shuffled, so that the first kept graphs are a uniform choice among them.
    order = torch.randperm(len(kept), generator=generator, device=device)
    tokens = _pretrain_tokens(kept_index.index_select(0, order), vertex_set_table, ends_table, options)
    distance = level.index_select(0, kept.index_select(0, order)).long()
    distance[distance == 0] = -1
    target = torch.full_like(distance, 2)
    return TaskDraw(None, target, distance, torch.ones_like(distance, dtype=torch.bool), tokens)


def _pretrain_tokens(index: torch.Tensor, vertex_set_table: torch.Tensor, ends_table: torch.Tensor,
                     options: SamplerOptions) -> torch.Tensor:
    """(B, n_max + 1, 2) int64 tokens from (B, n_max) `_pair_tables` indices of kept graphs.

    The indices are compacted first, in int32: each edge moves to the number of edges before it
    in its row (so edges keep their drawing order and padding comes after them), self-loops and
    empty slots (vertex set 0) land on column n_max, which then points at an extra table row
    holding (2, TARGET). One lookup then writes the whole int64 output, each (a, b) pair moved
    as one 16-byte complex128 element: a quarter of the memory traffic of laying out int64
    words and widening them.
    """
    count, n_max = index.shape
    is_edge = vertex_set_table.index_select(0, index.view(-1)).view(count, n_max) != 0
    compact = torch.zeros(count, n_max + 1, dtype=torch.int32, device=index.device)
    compact.scatter_(1, _edges_first_columns(is_edge, spare=n_max), index)
    compact[:, n_max] = len(ends_table)
    target_row = torch.tensor([[2, options.target_token]], dtype=torch.int64, device=index.device)
    table = torch.cat([ends_table, target_row]).view(torch.complex128).view(-1)
    return table.index_select(0, compact.view(-1)).view(torch.int64).view(count, n_max + 1, 2)


def _units(groups: list[tuple], counts: list[int]) -> list[list[tuple[tuple, int]]]:
    """Consecutive (group, count) pairs merged until each unit holds `_UNIT_GRAPHS` graphs.

    Large groups get a unit each (no empty slots); small ones share mixed units, so that the
    number of tensor operations stays small.
    """
    units, current = [], []
    for group, c in zip(groups, counts):
        if c:
            current.append((group, c))
        if current and sum(c for _, c in current) >= _UNIT_GRAPHS:
            units.append(current)
            current = []
    if current:
        units.append(current)
    return units


def _finish_search(pool, slots, unreached, distance):
    """Search the pooled graphs that are still searching until every frontier is empty.

    `pool` holds, per unit, what `_search_to_vertex_2` returned (with columns made global); the
    results are written into `unreached` and `distance` at those columns.
    """
    width = sum(len(part[1]) for part in pool)
    vertex_sets = torch.zeros(slots, width, dtype=unreached.dtype, device=unreached.device)
    start = 0
    for sets, frontier, *_ in pool:
        vertex_sets[: len(sets), start: start + len(frontier)] = sets
        start += len(frontier)
    frontier, columns, pooled_unreached, pooled_distance = (
        torch.cat([part[i] for part in pool]) for i in range(1, 5))
    _search_to_vertex_2(vertex_sets, frontier, pooled_unreached, pooled_distance, slots)
    unreached[columns] = pooled_unreached
    distance[columns] = pooled_distance


def _draw_index(weights: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One index per row, drawn with probability proportional to the row's weights.

    Inverse-CDF sampling on the cumulative weights (torch.multinomial does a slow loop per row
    on the CPU). Weights are small integers here, so float64 sums are exact.
    """
    cumulative = weights.cumsum(dim=1)
    level = torch.rand(len(weights), 1, generator=generator, device=weights.device,
                       dtype=torch.float64) * cumulative[:, -1:]
    return (cumulative <= level).sum(dim=1)


@register_task("onpath", expected_acceptance=0.3)
def onpath_task(count: int, options: SamplerOptions, generator: torch.Generator) -> TaskDraw:
    """Target on a shortest path from 1 to 2; the label is its distance from 1.

    Graphs where 2 is unreachable from 1 are rejected. With the small-graph filter (on by
    default when n_max <= 7, the published "small graphs"), a 1-2 distance d < 4 is kept with
    probability 1 / (3 (4 - d)). The position k on the path is drawn from {1, ..., d} with
    probability proportional to k, so k = d (the target is vertex 2 itself) is allowed. Where
    several shortest paths exist, the target is uniform among the vertices at distance k from 1
    that lie on some shortest 1-2 path (d(1, v) + d(v, 2) = d). Without `large_targets` the
    label k must be at most 7, otherwise the proposal is rejected (the whole graph is redrawn).
    """
    device = generator.device
    n_vertices = draw_vertex_counts(random_chunks(count, 1, generator)[:, 0], options.n_min, options.n_max)
    graphs = propose_graphs(n_vertices, options.n_max, generator)
    from_1 = distances_from(graphs, 1)
    path_length = from_1[:, 2]
    keep = path_length > 0
    if options.small_graph_filter:
        coin = torch.rand(count, generator=generator, device=device)
        keep &= (path_length >= 4) | (coin < 1.0 / (3.0 * (4 - path_length).clamp(min=1)))
    from_2 = distances_from(graphs, 2)
    d = path_length.clamp(min=1).unsqueeze(1)
    positions = torch.arange(from_1.shape[1], device=device)
    weights = torch.where((positions >= 1) & (positions <= d), positions, 0).double()
    k = _draw_index(weights, generator).unsqueeze(1)
    on_layer = (from_1 == k) & (from_2 >= 0) & (from_1 + from_2 == d)
    on_layer[:, 2] |= ~on_layer.any(dim=1)  # rows rejected anyway still need something to draw
    target = _draw_index(on_layer.double(), generator)
    k = k.squeeze(1)
    if not options.large_targets:
        keep &= k <= SMALL_LABEL_MAX
    return TaskDraw(graphs, target, torch.where(keep, k, path_length), keep)


@register_task("any", expected_acceptance=1.0)
def any_target_task(count: int, options: SamplerOptions, generator: torch.Generator) -> TaskDraw:
    """Target uniform on [2, target_max], every proposal kept.

    As in the published sampler the target is drawn without looking at the graph's size, so a
    target above n is not a vertex of the graph and gets the unreachable label.
    """
    head = random_chunks(count, 2, generator)
    n_vertices = draw_vertex_counts(head[:, 0], options.n_min, options.n_max)
    target = (2 + uniform_below(head[:, 1], options.target_max - 1)).long()
    graphs = propose_graphs(n_vertices, options.n_max, generator)
    distance = distance_to(graphs, target)
    return TaskDraw(graphs, target, distance, torch.ones_like(target, dtype=torch.bool))


def assemble_tokens(graphs: GraphProposals, target: torch.Tensor, options: SamplerOptions,
                    generator: torch.Generator) -> torch.Tensor:
    """Lay kept proposals out as (B, n_max + 1, 2) tokens: edges first, then padding, then target.

    Edges keep the order in which they were drawn (self-loops removed). With
    `relabel_vertices`, vertex ids 3..n_max are sent by a random injective map (one per graph)
    into 3..max_vertex_id, vertices 1 and 2 keep their ids, and each edge is re-sorted.
    """
    words = torch.stack([graphs.low, graphs.high], dim=-1).view(torch.int64).squeeze(-1)
    words *= graphs.is_edge  # a self-loop becomes an empty slot
    tokens = _edge_words_to_tokens(words, target, options)
    return relabel_tokens(tokens, options, generator) if options.relabel_vertices else tokens


def _edges_first_columns(is_edge: torch.Tensor, spare: int) -> torch.Tensor:
    """Column of each slot once a row's edges move to its front: the number of edges before it,
    or `spare` for a slot that is not an edge. Computed in int32, whose arithmetic is several
    times faster than int64's on a CPU; returned as the int64 index `scatter_` takes."""
    column = is_edge.cumsum(dim=1, dtype=torch.int32)
    column -= spare + 1
    column *= is_edge
    column += spare
    return column.long()


def _edge_words_to_tokens(words: torch.Tensor, target: torch.Tensor, options: SamplerOptions) -> torch.Tensor:
    """(B, n_max + 1, 2) int64 tokens from (B, S) edge words, S >= n_max, at most n_max edges a row.

    An edge travels as one int64 word holding its two int32 ends (low, high); 0 is an empty
    slot. Each edge moves to the number of edges before it in its row (so edges keep their
    drawing order and padding comes after them); empty slots go to a spare column n_max + 1
    that is cut off, and column n_max receives the target row (target, TARGET).
    """
    count, n_max = len(words), options.n_max
    is_edge = words != 0
    rows = torch.zeros(count, n_max + 2, dtype=torch.int64, device=words.device)
    rows.scatter_(1, _edges_first_columns(is_edge, spare=n_max + 1), words)
    pairs = rows.view(torch.int32).view(count, n_max + 2, 2)
    pairs[:, n_max, 0] = target
    pairs[:, n_max, 1] = options.target_token
    return pairs[:, : n_max + 1].long()


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


def sample_batch(
    batch_size: int, task: str, n_min: int = 3, n_max: int = 15,
    generator: torch.Generator | None = None, *, device: torch.device | str | None = None,
    **options,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of edge-token graphs with shortest-path labels (chapter 2 trains on it).

    Proposals are drawn in rounds of oversized batches; each task's filter keeps some; rounds
    repeat until `batch_size` examples are kept (a loop over rounds, never over graphs). The
    computation runs on the generator's device.

    Args:
        batch_size: number of examples.
        task: a name in `TASKS`: "pretrain" (target 2, length-balancing filter), "onpath"
            (target on a shortest 1-2 path) or "any" (target uniform on [2, target_max]).
        n_min, n_max: the number of vertices is uniform in [n_min, n_max]; n_max is also the
            number of edge slots.
        generator: torch.Generator; the batch is computed on its device. If None, a generator
            on `device` (default CPU) seeded from torch's global generator.
        device: where to compute when no generator is given.
        **options: keyword options, all defaulting to the published setting:
            target_max (int, default n_max): largest target of the "any" task.
            large_targets (bool, default False): "onpath" keeps labels above 7.
            small_graph_filter (bool, default n_max <= 7): "onpath" thins out d < 4.
            length_threshold (int, default `default_length_threshold(n_max)`): "pretrain" keeps
                every length >= threshold.
            max_vertex_id (int, default n_max): largest vertex id; TARGET = max_vertex_id + 1.
            relabel_vertices (bool, default False): send vertex ids 3..n_max to random distinct
                ids in 3..max_vertex_id (1 and 2 fixed), independently per graph.
            unreachable_label (int, default n_max): the label when the target is unreachable.

    Returns:
        tokens: (batch_size, n_max + 1, 2) int64; rows 0..n_max-1 are edges (a < b) then
            (0, 0) padding, the last row is (target, TARGET).
        labels: (batch_size,) float32 distances from vertex 1 to the target.
    """
    check_int("batch_size", batch_size, 1)
    spec = make_options(task, n_min, n_max, **options)
    if generator is None:
        # Seeded from torch's global generator, so torch.manual_seed makes it reproducible.
        seed = int(torch.randint(0, 2**62, (), dtype=torch.int64))
        generator = torch.Generator(device=device or "cpu").manual_seed(seed)
    elif device is not None and torch.device(device) != generator.device:
        raise ParameterError(f"Parameter `device` must match the generator's device "
                             f"{generator.device}; got {device!r}.")
    return sample_with_options(batch_size, spec, generator)


@contextlib.contextmanager
def _one_cpu_thread(device: torch.device) -> Iterator[None]:
    """Run CPU tensor operations on one thread inside the block.

    The sampler's operations are many and small; splitting each across threads costs more in
    synchronisation than it saves, and on a shared machine it made sampling up to 30 times
    slower in wall-clock time (measured here with 2 threads on 2 busy cores).
    """
    if device.type != "cpu":
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def sample_with_options(batch_size: int, spec: SamplerOptions,
                        generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """`sample_batch` for already validated options."""
    with _one_cpu_thread(generator.device):
        return _sample_rounds(batch_size, spec, generator)


def _sample_rounds(batch_size: int, spec: SamplerOptions,
                   generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    # Rounds of proposals: sized from the acceptance rate seen so far (5% to spare, as a round
    # that falls short costs only a small extra round), capped for memory.
    max_round = 1 << 19 if generator.device.type == "cpu" else 1 << 21
    task = TASKS[spec.task]
    kept_tokens, kept_labels = [], []
    n_kept, n_proposed, n_accepted = 0, 0, 0
    while n_kept < batch_size:
        missing = batch_size - n_kept
        rate = max(n_accepted / n_proposed if n_proposed else EXPECTED_ACCEPTANCE[spec.task], 0.005)
        count = min(max_round, max(1024, math.ceil(1.05 * missing / rate)))
        draw = task(count, spec, generator)
        n_proposed += count
        if bool(draw.keep.all()):  # the task returned only kept proposals: take the first ones
            n_accepted += len(draw.keep)
            accepted = slice(0, missing)
        else:
            accepted = draw.keep.nonzero().squeeze(1)
            n_accepted += len(accepted)
            accepted = accepted[:missing]
        distance = draw.distance[accepted]
        if len(distance) == 0:
            continue
        if draw.tokens is None:
            graphs = GraphProposals(*(part[accepted] for part in draw.graphs))
            kept_tokens.append(assemble_tokens(graphs, draw.target[accepted], spec, generator))
        elif spec.relabel_vertices:
            kept_tokens.append(relabel_tokens(draw.tokens[accepted], spec, generator))
        else:
            kept_tokens.append(draw.tokens[accepted])
        kept_labels.append(torch.where(distance < 0, spec.unreachable_label, distance).float())
        n_kept += len(distance)
    if len(kept_tokens) == 1:
        return kept_tokens[0], kept_labels[0]
    return torch.cat(kept_tokens), torch.cat(kept_labels)


def describe_filter(options: SamplerOptions) -> str:
    """One sentence saying which filter a sampler applies (chapters print it)."""
    if options.task == "pretrain":
        return (f"target 2; paths of length >= {options.length_threshold} always kept, shorter "
                f"ones with probability 1/(2({options.length_threshold} - d)), unreachable "
                f"with probability 1/{options.n_max}")
    if options.task == "onpath":
        rule = "" if options.large_targets else f", labels <= {SMALL_LABEL_MAX}"
        small = ", d < 4 thinned" if options.small_graph_filter else ""
        return f"target on a shortest 1-2 path, position weighted by k{rule}{small}"
    if options.task == "any":
        return f"target uniform on [2, {options.target_max}], no filter"
    return options.task


__all__ = [
    "CHUNK_BITS", "EXPECTED_ACCEPTANCE", "GraphProposals", "PUBLISHED_LENGTH_THRESHOLD", "PUBLISHED_N_MAX",
    "ParameterError", "SMALL_GRAPH_FILTER_N_MAX", "SMALL_LABEL_MAX", "SamplerOptions", "TASKS",
    "TaskDraw", "assemble_tokens", "default_length_threshold", "describe_filter", "distance_to",
    "distances_from", "draw_vertex_counts", "make_options", "pretrain_keep_probability",
    "propose_graphs", "random_chunks", "register_task", "relabel_tokens", "sample_batch",
    "sample_with_options", "uniform_below",
]
