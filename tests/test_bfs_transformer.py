"""The hand-built BFS transformer against plain BFS (networkx-checked) on many graphs."""

import itertools

import networkx as nx
import pytest
import torch

from lib.bfs.graphs import SAMPLER_NAMES, bfs_distance_batch, sample_graphs
from lib.bfs.transformer import MAX_VERTICES, HiddenLayout, bfs_transformer
from lib.chapters.ch1 import sharpness_sweep


def predict(model, adjacency):
    with torch.no_grad():
        return torch.cat([model(part) for part in adjacency.split(2048)])


@pytest.mark.parametrize("n", [4, 8, 12, 16])
def test_exact_on_ten_thousand_graphs_from_five_distributions(n):
    generator = torch.Generator().manual_seed(100 + n)
    adjacency = torch.cat([sample_graphs(name, 2000, n, generator) for name in SAMPLER_NAMES])
    error = predict(bfs_transformer(n), adjacency) - bfs_distance_batch(adjacency)
    assert len(error) == 10_000
    assert float((error ** 2).mean()) < 1e-6
    assert float(error.abs().max()) < 0.01


@pytest.mark.parametrize("n", range(2, 17))
def test_exact_for_every_size_on_random_graphs(n):
    generator = torch.Generator().manual_seed(n)
    adjacency = torch.cat([sample_graphs(name, 60, n, generator) for name in SAMPLER_NAMES])
    distance = bfs_distance_batch(adjacency)
    assert distance.max() <= n and distance.min() >= 1
    assert float((predict(bfs_transformer(n), adjacency) - distance).abs().max()) < 0.01


def all_graphs(n):
    """Every simple graph on n labelled vertices, as a (2^(n choose 2), n, n) bool tensor."""
    pairs = list(itertools.combinations(range(n), 2))
    masks = torch.tensor(list(itertools.product([False, True], repeat=len(pairs))))
    adjacency = torch.zeros(len(masks), n, n, dtype=torch.bool)
    for index, (a, b) in enumerate(pairs):
        adjacency[:, a, b] = masks[:, index]
        adjacency[:, b, a] = masks[:, index]
    return adjacency


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_exact_on_every_graph_of_small_size(n):
    adjacency = all_graphs(n)
    expected = []
    for graph in adjacency:
        g = nx.from_numpy_array(graph.numpy().astype(int))
        expected.append(nx.shortest_path_length(g, 0, 1) if nx.has_path(g, 0, 1) else n)
    error = predict(bfs_transformer(n), adjacency) - torch.tensor(expected, dtype=torch.float32)
    assert float(error.abs().max()) < 0.01


def test_shapes_follow_the_construction():
    n = 6
    model = bfs_transformer(n)
    assert HiddenLayout(n).width == 4 * n + 2
    # n layers, n reach heads + 1 answer head in every layer, stacked for one batched einsum.
    assert model.query.shape == (n, n + 1, 2, 4 * n + 2)
    assert model.value.shape == (n, n + 1, n, 4 * n + 2)
    trace = model.run(sample_graphs("seed", 3, n), keep_trace=True)
    assert trace["attention"].shape == (n, 3, n + 1, n + 1, n + 1)
    assert trace["hidden"].shape == (n + 1, 3, n + 1, 4 * n + 2)


def test_reach_after_layer_l_is_the_ball_of_radius_l():
    n = 9
    adjacency = sample_graphs("sparse", 20, n, torch.Generator().manual_seed(3))
    model = bfs_transformer(n)
    with torch.no_grad():
        reach = model.run(adjacency, keep_trace=True)["hidden"][:, :, 1:, model.layout.reach]
    for index, graph in enumerate(adjacency):
        lengths = dict(nx.all_pairs_shortest_path_length(nx.from_numpy_array(graph.numpy().astype(int))))
        for layer in range(n):
            ball = torch.tensor([[float(w in lengths[v] and lengths[v][w] <= layer) for w in range(n)]
                                 for v in range(n)])
            assert torch.allclose(reach[layer, index], ball, atol=1e-3)


def test_errors_vanish_as_constants_grow():
    rows = sharpness_sweep(8, 300, seed=0, gaps=[1, 30], slopes_per_vertex=[1, 80])
    by = {(r["knob"], r["value"]): r["mse"] for r in rows}
    assert by[("attention gap", 1.0)] > 1e-3 > 1e-9 >= by[("attention gap", 30.0)]
    assert by[("squash slope / n", 1.0)] > 1e-3 > 1e-9 >= by[("squash slope / n", 80.0)]


@pytest.mark.parametrize("bad, message", [
    (torch.zeros(2, 5, 5, dtype=torch.bool), "exactly 6 vertices"),
    (torch.zeros(2, 6, 6), "bool"),
    (torch.zeros(2, 6, 5, dtype=torch.bool), "shape"),
    (torch.eye(6, dtype=torch.bool).unsqueeze(0), "self-loops"),
    (torch.triu(torch.ones(6, 6, dtype=torch.bool), 1).unsqueeze(0), "symmetric"),
])
def test_bad_graphs_get_one_clear_error(bad, message):
    with pytest.raises(ValueError, match=message):
        bfs_transformer(6)(bad)


@pytest.mark.parametrize("n", [1, MAX_VERTICES + 1, 3.0, True])
def test_sizes_the_model_cannot_hold_are_refused(n):
    with pytest.raises(ValueError, match="n_vertices must be an integer between 2"):
        bfs_transformer(n)
