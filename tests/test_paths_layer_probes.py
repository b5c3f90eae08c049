"""Probed facts, reach radii and the statistics probe as the rival (lib.paths.layer_probes)."""

import torch

from lib.paths.finetuning import fallback_base_config
from lib.paths.graph_set import GraphSet
from lib.paths.layer_probes import (
    DISTANCE, FROM_SOURCE, GRAPH_STATISTICS, MIN_CLASS_COUNT, REACHABLE, ReadCriteria, fact_values, radius_of,
    read_radii, statistic_features, usable_ks,
)
from lib.paths.probes import LogisticScores, fit_probes, score_logistic
from lib.paths.token_graphs import UNREACHABLE


def test_distance_probes_see_reachable_targets_only_and_need_both_answers():
    recipe = fallback_base_config(seed=0)
    train_set, test_set = GraphSet.draw(recipe, 1500, 1), GraphSet.draw(recipe, 1500, 2)
    ks = usable_ks(train_set, test_set, DISTANCE)
    distances = [fact_values(g.graphs, DISTANCE) for g in (train_set, test_set)]
    assert all(bool((d < UNREACHABLE).all()) for d in distances)   # no unreachable "no" answers
    assert len(distances[0]) == int(train_set.reachable.sum()) < len(train_set.labels)
    largest = max(int(d.max()) for d in distances)
    assert ks and max(ks) < largest and min(ks) >= 1
    for k in ks:
        assert all(MIN_CLASS_COUNT <= int((d <= k).sum()) <= len(d) - MIN_CLASS_COUNT for d in distances)
    reach_ks = usable_ks(train_set, test_set, REACHABLE)
    everything = [fact_values(g.graphs, REACHABLE) for g in (train_set, test_set)]
    assert reach_ks[0] == 1 and all(int((d == k).sum()) >= MIN_CLASS_COUNT for d in everything for k in reach_ks)
    assert all(bool((fact_values(g.graphs, FROM_SOURCE) < UNREACHABLE).all()) for g in (train_set, test_set))


def test_reach_radius_is_the_last_k_of_an_unbroken_run_above_the_threshold():
    accuracy = torch.tensor([[0.5, 0.5, 0.5], [0.95, 0.8, 0.99], [0.95, 0.92, 0.91], [float("nan"), 1.0, 1.0]])
    assert radius_of(accuracy, (1, 2, 3), 0.9) == [0, 1, 3, 0]   # a NaN score (one class only) stops the run


def test_a_fact_carried_by_the_edge_count_is_not_read_beyond_the_statistics_probe():
    """A "layer" that holds the graph's edge count (and noise) reads a fact that is a (noisy)
    function of the edge count, "at most k edges" with a tenth of the answers flipped, as well
    as the statistics probe does and no better: it does not read it beyond the statistics; it
    does beat a rival without the edge count and the vertices with an edge."""
    recipe = fallback_base_config(seed=0)
    train_set, test_set = GraphSet.draw(recipe, 1500, 1), GraphSet.draw(recipe, 1500, 2)
    ks = (4, 5, 6)

    def labels(graphs: GraphSet, seed: int) -> torch.Tensor:
        exact = graphs.graphs.edge_count.unsqueeze(0) <= torch.tensor(ks).unsqueeze(1)
        flips = torch.rand(exact.shape, generator=torch.Generator().manual_seed(seed)) < 0.1
        return (exact ^ flips).double()

    answers = labels(train_set, 0), labels(test_set, 1)

    def layer(graphs: GraphSet, seed: int) -> torch.Tensor:
        noise = torch.randn(len(graphs.labels), 6, generator=torch.Generator().manual_seed(seed))
        return torch.cat([graphs.graphs.edge_count.double().unsqueeze(1), noise.double()], dim=1)

    def fitted(train_x: torch.Tensor, test_x: torch.Tensor) -> LogisticScores:
        probes = fit_probes(train_x, answers[0], kind="logistic")
        result = score_logistic(probes.scores(train_x), answers[0], probes.scores(test_x), answers[1])
        return LogisticScores(*(value.unsqueeze(0) for value in (result.auc, result.tuned, result.untuned)))

    own = fitted(layer(train_set, 2), layer(test_set, 3))
    statistics = [statistic_features(g.graphs, REACHABLE) for g in (train_set, test_set)]
    rival = fitted(*statistics)
    assert float(own.auc.min()) > 0.8 and float((own.auc - rival.auc).abs().max()) < 0.02
    assert read_radii(own, ks, ReadCriteria(0.8, 0.8), rival)["beyond_statistics"] == [3]
    assert read_radii(own, ks, ReadCriteria(0.8, 0.8), rival)["stated"] == [3]
    weaker = fitted(*(x[:, 3:] for x in statistics))
    assert read_radii(own, ks, ReadCriteria(0.8, 0.8), weaker)["beyond_statistics"] == [6]
    assert GRAPH_STATISTICS[0] == "edges in the graph" and statistics[1].shape == (len(test_set.labels),
                                                                                   len(GRAPH_STATISTICS))
