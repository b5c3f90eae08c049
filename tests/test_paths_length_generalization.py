"""Length generalization (lib.paths.length_generalization): samplers against networkx, cells, split."""

from __future__ import annotations

import networkx as nx
import pytest
import torch

from lib.paths.sampler import make_options, sample_with_options
from lib.paths.length_generalization import (
    Cell, LengthSplit, evaluate_cells, sample_cells, summarize_cells, training_config,
    vertex_id_coverage,
)
from lib.book.params import ParameterError
from lib.paths.model import build_model

SPLIT = LengthSplit(n_min=3, n_train_max=5, n_test_max=10)


def graph_of(tokens: torch.Tensor) -> nx.Graph:
    graph = nx.Graph()
    graph.add_nodes_from([1, 2])
    graph.add_edges_from((a, b) for a, b in tokens[:-1].tolist() if a)
    return graph


def test_training_graphs_are_small_relabelled_and_reachable():
    config = training_config(SPLIT, n_layers=1, batch_size=8, lr_schedule=((1, 1e-3),), seed=0, device="cpu")
    tokens, labels = sample_with_options(2000, config.sampler, torch.Generator().manual_seed(0))
    assert tokens.shape[1] == SPLIT.n_train_max + 1
    assert (tokens[:, -1] == torch.tensor([2, SPLIT.vertex_ids + 1])).all(), "target 2, shared TARGET token"
    for row, label in zip(tokens, labels.long().tolist()):
        graph = graph_of(row)
        assert nx.has_path(graph, 1, 2), "unreachable targets are left out"
        assert label == nx.shortest_path_length(graph, 1, 2)
        assert graph.number_of_nodes() <= SPLIT.n_train_max
        assert max(graph.nodes) <= SPLIT.vertex_ids
    assert int(labels.max()) <= SPLIT.distance_train_max
    # The length filter at threshold n_train_max - 1 keeps long paths: every length occurs.
    assert set(labels.long().tolist()) == set(range(1, SPLIT.n_train_max))


def test_every_vertex_id_and_the_target_token_occur_in_training():
    config = training_config(SPLIT, n_layers=1, batch_size=8, lr_schedule=((1, 1e-3),), seed=0, device="cpu")
    ids = vertex_id_coverage(config, 500, torch.Generator().manual_seed(1))
    assert ids == list(range(1, SPLIT.vertex_ids + 2))
    assert config.model_config.max_vertex_id == SPLIT.vertex_ids


def test_reachable_filter_is_the_pretraining_filter_conditioned_on_reachability():
    options = dict(max_vertex_id=8, length_threshold=4)
    _, plain = sample_with_options(40_000, make_options("pretrain", 3, 6, unreachable_label=99, **options),
                                   torch.Generator().manual_seed(2))
    _, reachable = sample_with_options(40_000, make_options("pretrain_reachable", 3, 6, **options),
                                       torch.Generator().manual_seed(3))
    plain = plain[plain < 99]
    p = torch.bincount(plain.long(), minlength=6).double() / len(plain)
    q = torch.bincount(reachable.long(), minlength=6).double() / len(reachable)
    assert 0.5 * float((p - q).abs().sum()) < 0.015


@pytest.mark.parametrize("n_vertices", [4, 9])
def test_cells_hold_graphs_of_one_size_sorted_by_true_distance(n_vertices):
    tokens, labels = sample_cells(SPLIT, n_vertices, 40, torch.Generator().manual_seed(n_vertices),
                                  max_proposals=1 << 15, round_size=1 << 12)
    assert tokens.shape[1] == n_vertices + 1 and (tokens[:, -1, 0] == 2).all()
    counts = torch.bincount(labels.long(), minlength=n_vertices)
    assert counts[0] == 0 and (counts <= 40).all()
    assert (counts[1:4] == 40).all(), "short distances are common: their cells fill up"
    for row, label in zip(tokens, labels.long().tolist()):
        graph = graph_of(row)
        assert label == nx.shortest_path_length(graph, 1, 2)
        assert max(graph.nodes) <= SPLIT.vertex_ids
        assert graph.number_of_nodes() <= n_vertices


def test_cells_follow_the_natural_distance_distribution_until_full():
    # With cells too large to fill, the counts are just the natural distance histogram of the
    # proposals, which networkx can compute on graphs drawn the plain way.
    generator = torch.Generator().manual_seed(4)
    _, labels = sample_cells(SPLIT, 6, 10**6, generator, max_proposals=20_000, round_size=5_000)
    share = torch.bincount(labels.long(), minlength=6).double() / 20_000
    rng = torch.Generator().manual_seed(5)
    reference = torch.zeros(6, dtype=torch.float64)
    for _ in range(4000):
        ends = torch.randint(1, 7, (6, 2), generator=rng).tolist()
        graph = nx.Graph()
        graph.add_nodes_from([1, 2])
        graph.add_edges_from((a, b) for a, b in ends if a != b)
        if nx.has_path(graph, 1, 2):
            reference[nx.shortest_path_length(graph, 1, 2)] += 1
    reference /= 4000
    assert (share - reference).abs().max() < 0.03, (share, reference)


def test_split_rejects_a_test_range_that_is_not_larger():
    with pytest.raises(ParameterError, match="length_test_n_max"):
        LengthSplit(3, 8, 8)


def test_evaluate_cells_is_deterministic_and_marks_the_training_range():
    model = build_model(training_config(SPLIT, n_layers=1, batch_size=8, lr_schedule=((1, 1e-3),),
                                        seed=0, device="cpu").model_config, seed=0).eval()
    first = evaluate_cells(model, SPLIT, per_cell=16, seed=3, min_count=4, max_proposals=1 << 13)
    again = evaluate_cells(model, SPLIT, per_cell=16, seed=3, min_count=4, max_proposals=1 << 13)
    assert first == again
    assert {c.n_vertices for c in first} == set(range(3, 11))
    for cell in first:
        assert cell.seen_size == (cell.n_vertices <= 5)
        assert cell.seen_distance == (cell.distance <= 4)
        assert 1 <= cell.distance < cell.n_vertices and cell.count >= 4


def test_summary_weights_every_graph_equally():
    cells = [Cell(4, 1, 10, 1.0, 1.0, 1.0, True, True), Cell(7, 2, 30, 3.0, 2.0, 0.0, False, True),
             Cell(7, 2, 10, 7.0, 2.0, 1.0, False, True), Cell(8, 6, 5, 20.0, 4.0, 0.0, False, False)]
    summary = summarize_cells(cells)
    assert summary["training sizes"] == {"mse": 1.0, "accuracy": 1.0, "count": 10}
    assert summary["larger graphs, distances seen in training"]["mse"] == pytest.approx(4.0)
    assert summary["larger graphs, distances seen in training"]["accuracy"] == pytest.approx(0.25)
    assert summary["larger graphs, longer distances"]["count"] == 5
