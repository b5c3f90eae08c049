"""Probe sets stratified by distance (lib.paths.stratified_graphs, chapter 7)."""

import torch

from lib.paths.finetuning import fallback_base_config
from lib.paths.stratified_graphs import draw_stratified, stratum_name, strata
from lib.paths.token_graphs import UNREACHABLE


def test_every_stratum_the_pool_holds_fills_up_and_the_draw_is_seeded():
    recipe = fallback_base_config(seed=0)
    drawn = draw_stratified(recipe, 120, 5, pool=300_000, chunk=50_000)
    values = strata(drawn.graphs.graphs)
    # Distances 1..5 and both kinds of unreachable target are common enough for 120 each.
    for stratum in (1, 2, 3, 4, 5, UNREACHABLE, UNREACHABLE + 1):
        assert drawn.counts[stratum] == int((values == stratum).sum()) == 120
    assert all(count <= 120 for count in drawn.counts.values())
    assert len(drawn.graphs.labels) == sum(drawn.counts.values())
    # d = 7 (a path through all 8 vertices) is rarer than the pool allows: fewer than asked, and
    # the whole pool was drawn for it.
    assert drawn.counts.get(7, 0) < 120 and drawn.drawn == 300_000
    again = draw_stratified(recipe, 120, 5, pool=300_000, chunk=50_000)
    assert torch.equal(again.graphs.tokens, drawn.graphs.tokens)
    # The labels are the sampler's: the distance, or the unreachable label.
    reachable = drawn.graphs.graphs.distance < UNREACHABLE
    assert torch.equal(drawn.graphs.labels[reachable].long(), drawn.graphs.graphs.distance[reachable].long())
    assert stratum_name(3) == "d = 3" and "edge" in stratum_name(UNREACHABLE)


def test_a_small_quota_stops_drawing_early():
    recipe = fallback_base_config(seed=0)
    drawn = draw_stratified(recipe, 10, 1, pool=10_000_000, chunk=20_000)
    assert drawn.drawn < 10_000_000 and all(count <= 10 for count in drawn.counts.values())


def test_with_edge_count_bins_every_stratum_fills_every_bin_it_can_occur_in():
    recipe = fallback_base_config(seed=0)
    drawn = draw_stratified(recipe, 40, 2, pool=400_000, chunk=100_000, edge_bins=(5.0, 7.0))
    from lib.paths.layer_probes import bin_of
    cells = strata(drawn.graphs.graphs) * 3 + bin_of(drawn.graphs.graphs, (5.0, 7.0))
    for (stratum, edge_bin), count in drawn.by_bin.items():
        assert count == int((cells == stratum * 3 + edge_bin).sum()) <= 40
    # Short distances and unreachable targets occur at every edge count: 40 in each bin.
    for stratum in (1, 2, UNREACHABLE, UNREACHABLE + 1):
        assert [drawn.by_bin[(stratum, b)] for b in range(3)] == [40, 40, 40]
    # A path of 6 edges needs 6 edges: none in the bin of at most 5.
    assert (6, 0) not in drawn.by_bin and drawn.by_bin[(6, 2)] == 40
    assert drawn.counts[1] == 120
