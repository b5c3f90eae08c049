"""Pre-training graphs, drawn only where the length filter can keep them (chapter 2).

The pre-training task of `lib.paths.sampler` keeps a random graph with a probability that
depends on its 1-2 distance d (`lib.paths.sampler.pretrain_keep_probability`): one coin per
proposal, uniform on [0, 1), and the graph is kept when the coin falls below keep(d). Most
proposals are rejected, so this module draws the coin first and spends work only on
proposals that the coin leaves a chance:

- A graph on n vertices has d <= n - 1, so a coin at or above q_n, the largest keep
  probability possible on n vertices, always rejects: such proposals are not drawn at all.
- A coin at or above keep(1) rejects every graph with a 1-2 edge, so for coins in
  [keep(1), q_n) the graph is drawn without one: every edge slot uniform on the n^2 - 2 endpoint
  pairs other than (1, 2) and (2, 1), and the number of such proposals is thinned by the
  probability (1 - 2/n^2)^n that n slots avoid them.

The caller says how many proposals of each size n to make (`lib.paths.sampler` draws each
example's n first and redraws only the graph until the filter keeps it, as the authors' code
does). How many of them fall in each coin range is decided in one place, `proposal_groups`; the
numbers are independent Poisson counts: given their total, the proposals of one size are
independent draws of the per-graph distribution (Poisson splitting), so drawing a random number
of them per call changes nothing.

Each edge is one index into a table of endpoint pairs (`pair_tables`), in which a self-loop is
an empty slot; the index comes from one random word (both ends at once, uniform within 2^-31).
Graphs of the same size are drawn together in units (`_units`), so that every edge slot drawn
is used, and each unit is one block of the breadth-first search (`lib.paths.graph_search`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch

from lib.paths.graph_batch import GraphProposals
from lib.paths.graph_search import distance_to_target, vertex_set_dtype

#: Graphs are drawn in units of at least this many (one size, or several small groups together).
UNIT_GRAPHS = 16384


class ProposalGroup(NamedTuple):
    """Proposals of one size and coin range, and how many of them to expect."""

    n_vertices: int
    without_edge_1_2: bool
    coin_low: float
    coin_high: float
    expected_count: float


def proposal_groups(proposals_per_size: list[int], n_min: int,
                    keep_probability: list[float]) -> list[ProposalGroup]:
    """The groups of proposals that the coin can keep, `proposals_per_size[i]` of size n_min + i.

    `keep_probability[d]` is the probability of keeping 1-2 distance d (d = 1..n_max - 1), and
    `keep_probability[0]` that of an unreachable vertex 2. Per size n: proposals with a coin in
    [keep(1), q_n) are drawn without a 1-2 edge, those with a coin below keep(1) are drawn plainly.
    The groups without a 1-2 edge (the many) come first, largest size first, then the others.
    """
    keep_1 = keep_probability[1]
    without_1_2, plain = [], []
    for n in range(n_min + len(proposals_per_size) - 1, n_min - 1, -1):
        count = proposals_per_size[n - n_min]
        if not count:
            continue
        q_n = max(keep_probability[:n])  # unreachable, or d = 1..n - 1
        low = min(keep_1, q_n)
        plain.append(ProposalGroup(n, False, 0.0, low, count * low))
        if q_n > low:
            avoid_1_2 = (1 - 2 / n**2) ** n
            without_1_2.append(ProposalGroup(n, True, low, q_n, count * (q_n - low) * avoid_1_2))
    return without_1_2 + plain


@functools.lru_cache(maxsize=16)
def pair_tables(n_min: int, n_max: int, device: torch.device):
    """Tables of the endpoint pairs that a pre-training edge index points at.

    For each size n there are two blocks of entries: all n^2 endpoint pairs (a, b), and the
    n^2 - 2 pairs other than (1, 2) and (2, 1) (for graphs drawn without a 1-2 edge). Entry 0,
    like every self-loop a = b, is an empty slot: vertex set 0 and ends (0, 0).

    Returns:
        offset: {(n, without_edge_1_2): first entry of the block};
        vertex_set: (entries,) the pair's vertex set, bits a - 1 and b - 1 (`lib.paths.graph_search`);
        low, high: (entries,) int32 min(a, b) and max(a, b).
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
    ends = torch.tensor(ends, dtype=torch.int32, device=device)
    return (offset, torch.tensor(vertex_set, dtype=vertex_set_dtype(n_max), device=device),
            ends[:, 0].contiguous(), ends[:, 1].contiguous())


def draw_pretrain_graphs(proposals_per_size: list[int], n_min: int, keep_probability: list[float],
                         generator: torch.Generator) -> tuple[GraphProposals, torch.Tensor]:
    """The kept graphs among `proposals_per_size[i]` proposals of size n_min + i, in random order.

    Equivalent to drawing the proposals one by one and keeping each with probability
    `keep_probability[d]` (index 0: vertex 2 unreachable); see the module docstring. The order
    is random so that keeping only the first few kept graphs of a size is a uniform choice.

    Returns:
        the kept graphs (n_max slots each, self-loops already empty) and their 1-2 distances,
        int64, -1 where vertex 2 is unreachable.
    """
    device = generator.device
    n_max = n_min + len(proposals_per_size) - 1
    groups = proposal_groups(proposals_per_size, n_min, keep_probability)
    expected = torch.tensor([g.expected_count for g in groups], dtype=torch.float64, device=device)
    counts = [int(c) for c in torch.poisson(expected, generator=generator).tolist()]
    group_of = torch.repeat_interleave(torch.arange(len(groups), device=device),
                                       torch.tensor(counts, device=device), output_size=sum(counts))
    coin_low = torch.tensor([g.coin_low for g in groups], dtype=torch.float64, device=device)
    coin_width = torch.tensor([g.coin_high - g.coin_low for g in groups], dtype=torch.float64, device=device)
    coin = torch.rand(len(group_of), dtype=torch.float64, device=device, generator=generator)
    coin = torch.addcmul(coin_low.index_select(0, group_of), coin, coin_width.index_select(0, group_of))

    unit_indices = _draw_pair_indices(groups, counts, group_of, n_min, n_max, generator)
    _, vertex_set_table, low_table, high_table = pair_tables(n_min, n_max, device)
    edge_sets = [vertex_set_table.index_select(0, index.view(-1)).view(index.shape) for index in unit_indices]
    distance = distance_to_target(edge_sets, 2) if edge_sets else group_of.new_empty(0)
    keep_table = torch.tensor(keep_probability, dtype=torch.float64, device=device)
    keep = coin < keep_table.index_select(0, distance.clamp(min=0))  # unreachable (-1) reads entry 0

    order = torch.randperm(int(keep.sum()), generator=generator, device=device)
    kept = keep.nonzero().squeeze(1).index_select(0, order)
    kept_index = _kept_pair_indices(unit_indices, keep, n_max).index_select(0, order).view(-1)
    sizes = torch.tensor([g.n_vertices for g in groups], device=device)
    graphs = GraphProposals(sizes.index_select(0, group_of.index_select(0, kept)),
                            low_table.index_select(0, kept_index).view(len(kept), n_max),
                            high_table.index_select(0, kept_index).view(len(kept), n_max))
    return graphs, distance.index_select(0, kept)


def _units(counts: list[int]) -> list[list[int]]:
    """Consecutive non-empty groups merged until each unit holds `UNIT_GRAPHS` graphs.

    Large groups get a unit each (no empty slots); small ones share units, so that the number
    of tensor operations stays small.
    """
    units, current, size = [], [], 0
    for i, c in enumerate(counts):
        if c:
            current.append(i)
            size += c
        if current and size >= UNIT_GRAPHS:
            units.append(current)
            current, size = [], 0
    if current:
        units.append(current)
    return units


def _draw_pair_indices(groups: list[ProposalGroup], counts: list[int], group_of: torch.Tensor,
                       n_min: int, n_max: int, generator: torch.Generator) -> list[torch.Tensor]:
    """The edges of every proposal as `pair_tables` indices, one (slots, graphs) int32 tensor per
    unit of consecutive groups (`_units`); a unit has as many slots as its largest graphs.

    A slot of a graph on n vertices gets first + (its pair, uniform on [0, pairs)), where
    `first` is the first entry of the graph's block; slots from n on get entry 0 (empty).
    """
    device = generator.device
    offset = pair_tables(n_min, n_max, device)[0]
    size = [g.n_vertices for g in groups]
    pairs = [g.n_vertices**2 - 2 * g.without_edge_1_2 for g in groups]
    first = [offset[(g.n_vertices, g.without_edge_1_2)] for g in groups]
    unit_indices, start = [], 0
    for unit in _units(counts):
        width, rows = sum(counts[i] for i in unit), max(size[i] for i in unit)
        index = torch.empty(rows, width, dtype=torch.int32, device=device)
        if len(unit) == 1:  # torch draws a 32-bit word w per slot and returns first + w % pairs
            (i,) = unit
            unit_indices.append(index.random_(first[i], first[i] + pairs[i], generator=generator))
        else:  # a word u uniform on [0, 2^31) per slot gives the pair floor(u pairs / 2^31)
            in_unit = group_of[start: start + width]
            words = index.random_(generator=generator).long()
            words *= torch.tensor(pairs, device=device).index_select(0, in_unit)
            words >>= 31
            words += torch.tensor(first, device=device).index_select(0, in_unit)
            slot = torch.arange(rows, device=device).unsqueeze(1)
            words *= slot < torch.tensor(size, device=device).index_select(0, in_unit)
            unit_indices.append(words.int())
        start += width
    return unit_indices


def _kept_pair_indices(unit_indices: list[torch.Tensor], keep: torch.Tensor, n_max: int) -> torch.Tensor:
    """(kept graphs, n_max) pair indices of the graphs where `keep` is true, in batch order."""
    kept_rows, start = [], 0
    for index in unit_indices:
        rows, width = index.shape
        kept = keep[start: start + width].nonzero().squeeze(1)
        kept_rows.append(torch.nn.functional.pad(index.index_select(1, kept).t(), (0, n_max - rows)))
        start += width
    return torch.cat(kept_rows) if kept_rows else keep.new_zeros(0, n_max, dtype=torch.int32)


__all__ = ["ProposalGroup", "UNIT_GRAPHS", "draw_pretrain_graphs", "pair_tables",
           "proposal_groups"]
