"""Probe sets stratified by the distance d(1, t), so that every threshold has enough graphs of its
rarer answer (chapter 7).

Under chapter 2's sampler long distances are rare (on graphs of up to 8 vertices about 1 graph
in 100 has d(1, t) = 5 and 1 in 800 has 6), so a probe set of a few thousand graphs holds a few
dozen of them and an AUC at those thresholds has a standard error as large as the margins it is
meant to decide. Graphs are cheap: `draw_stratified` draws from the sampler in chunks and keeps
up to `per_stratum` graphs of every stratum (each distance 1, 2, ...; an unreachable target
where 1 and t both have an edge; and one where they do not), until every stratum is full or
`pool` graphs were drawn; with edge-count bins, up to `per_stratum` of every stratum within every
bin of the edge count (a distance needs at least as many edges, so some cells stay empty), so that
each bin holds enough of every answer too. A set is drawn three times with different seeds (the probes' training,
validation and held-out sets). The strata are not the sampler's proportions: every probe score
is a score on this balanced mixture, which the chapter states.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.paths.graph_set import GraphSet
from lib.paths.layer_probes import bin_of
from lib.paths.sampler import sample_with_options
from lib.paths.token_graphs import UNREACHABLE, TokenGraphs
from lib.paths.training import PathTrainingConfig

#: The two strata of unreachable targets (distances are strata of their own, by value).
UNREACHABLE_WITH_EDGES, UNREACHABLE_OTHERWISE = "unreachable, 1 and t with an edge", "unreachable, otherwise"


def strata(graphs: TokenGraphs) -> torch.Tensor:
    """(B,) the stratum of each graph: d(1, t) where the target is reachable, UNREACHABLE where it
    is not and 1 and t both have an edge, UNREACHABLE + 1 where it is not and one of them has none."""
    one = torch.ones_like(graphs.target)
    both = (graphs.degree(one) > 0) & (graphs.degree(graphs.target) > 0)
    unreachable = graphs.distance >= UNREACHABLE
    return torch.where(unreachable, torch.where(both, UNREACHABLE, UNREACHABLE + 1), graphs.distance)


def stratum_name(stratum: int) -> str:
    """A stratum as the chapter names it ("d = 3", or one of the two unreachable strata)."""
    if stratum == UNREACHABLE:
        return UNREACHABLE_WITH_EDGES
    if stratum == UNREACHABLE + 1:
        return UNREACHABLE_OTHERWISE
    return f"d = {stratum}"


@dataclass(frozen=True)
class StratifiedSet:
    """A probe set: the graphs (`GraphSet`), how many of each stratum it holds (stratum -> count)
    and how many graphs were drawn to fill it."""

    graphs: GraphSet
    counts: dict[int, int]
    drawn: int
    by_bin: dict[tuple[int, int], int] | None = None


def draw_stratified(config: PathTrainingConfig, per_stratum: int, seed: int, *, pool: int,
                    chunk: int = 100_000, edge_bins: tuple[float, ...] = ()) -> StratifiedSet:
    """Up to `per_stratum` graphs of every stratum (`strata`) of `config`'s sampler (with
    `edge_bins`, the inner boundaries of `lib.paths.layer_probes.bin_of`: of every stratum in every
    edge-count bin), drawn in chunks of `chunk` from a generator seeded by `seed` alone until every
    cell is full or `pool` graphs were drawn (a cell rarer than that holds fewer; one never seen,
    or impossible, is absent). The graphs keep the order in which they were drawn."""
    generator = torch.Generator().manual_seed(seed)
    kept_tokens, kept_labels, counts, drawn = [], [], {}, 0
    cells = len(edge_bins) + 1
    possible = {s * cells + b for s in set(range(1, config.n_max)) | {UNREACHABLE, UNREACHABLE + 1}
                for b in range(cells)}
    while drawn < pool and not all(counts.get(s, 0) >= per_stratum for s in possible):
        size = min(chunk, pool - drawn)
        tokens, labels = sample_with_options(size, config.sampler, generator)
        drawn += size
        graphs = TokenGraphs.from_tokens(tokens)
        stratum = strata(graphs) * cells + (bin_of(graphs, edge_bins) if edge_bins else 0)
        keep = torch.zeros(size, dtype=torch.bool)
        for value in torch.unique(stratum).tolist():
            rows = (stratum == value).nonzero(as_tuple=True)[0]
            room = per_stratum - counts.get(value, 0)
            if room > 0:
                keep[rows[:room]] = True
                counts[value] = counts.get(value, 0) + min(room, len(rows))
        kept_tokens.append(tokens[keep])
        kept_labels.append(labels[keep])
    tokens, labels = torch.cat(kept_tokens), torch.cat(kept_labels)
    graphs = GraphSet(tokens, labels, TokenGraphs.from_tokens(tokens), config.sampler.unreachable_label)
    by_stratum: dict[int, int] = {}
    for cell, count in counts.items():
        by_stratum[cell // cells] = by_stratum.get(cell // cells, 0) + count
    by_bin = {(cell // cells, cell % cells): count for cell, count in sorted(counts.items())} if edge_bins else None
    return StratifiedSet(graphs, dict(sorted(by_stratum.items())), drawn, by_bin)


__all__ = ["StratifiedSet", "UNREACHABLE_OTHERWISE", "UNREACHABLE_WITH_EDGES", "draw_stratified", "stratum_name",
           "strata"]
