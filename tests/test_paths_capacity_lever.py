"""The capacity lever at the book's scale (lib.paths.capacity_lever, chapter 7)."""

import dataclasses

import torch

from lib.paths.capacity_lever import diameters, matched_sets, statistics_r2, train_on_graphs
from lib.paths.finetuning import fallback_base_config
from lib.paths.token_graphs import TokenGraphs


def graph(edges: list[tuple[int, int]], slots: int = 8, target: int = 2) -> torch.Tensor:
    rows = [[a, b] for a, b in edges] + [[0, 0]] * (slots - len(edges)) + [[target, 9]]
    return torch.tensor(rows)


def test_the_diameter_is_the_longest_shortest_path():
    tokens = torch.stack([graph([(1, 2), (2, 3), (3, 4)]),             # a path of 3 edges
                          graph([(1, 2), (2, 3), (1, 3)]),             # a triangle
                          graph([(1, 2), (3, 4), (4, 5), (5, 6)]),     # two components: 1 and 3
                          graph([])])                                 # no edge
    assert diameters(TokenGraphs.from_tokens(tokens)).tolist() == [3, 1, 3, 0]


def test_the_matched_sets_hold_the_same_edge_counts_on_either_side_of_the_capacity():
    recipe = dataclasses.replace(fallback_base_config(seed=0, smoke=True), n_layers=1)
    sets = matched_sets(recipe, 3, 20_000, 0)
    within, beyond = (diameters(s.graphs) for s in (sets.within, sets.beyond))
    assert bool((within <= 3).all()) and bool((beyond > 3).all()) and len(within) == len(beyond) > 500
    counts = [torch.bincount(s.graphs.edge_count, minlength=9) for s in (sets.within, sets.beyond)]
    assert torch.equal(counts[0], counts[1])
    model = train_on_graphs(recipe, sets.beyond, steps=3, seed=0)
    with torch.no_grad():
        assert model(sets.beyond.tokens[:5]).shape == (5,)
    # The statistics explain the truth partly, and a function of the statistics wholly.
    assert 0 < statistics_r2(sets.beyond, sets.beyond.labels) < 1
    assert statistics_r2(sets.beyond, sets.beyond.graphs.edge_count.double() * 2 + 1) > 0.999
