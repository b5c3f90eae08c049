"""The hand-built BFS transformer against plain BFS (networkx-checked) on many graphs."""

import itertools

import networkx as nx
import pytest
import torch

from lib.bfs.graphs import SAMPLER_NAMES, bfs_distance_batch, sample_graphs
from lib.bfs.transformer import MAX_VERTICES, HiddenLayout, bfs_transformer

# On two busy cores, two torch threads wait for each other: one thread runs this file ~3x faster.
pytestmark = pytest.mark.usefixtures("one_thread")


def predict(model, adjacency):
    with torch.no_grad():
        return torch.cat([model(part) for part in adjacency.split(2048)])


# Ten thousand graphs where a forward pass is cheap; fewer at 12 and 16 vertices, where the
# construction's n^4 work per graph makes ten thousand take minutes on two cores.
@pytest.mark.parametrize("n, per_sampler", [(4, 2000), (8, 2000), (12, 400), (16, 200)])
def test_exact_on_thousands_of_graphs_from_five_distributions(n, per_sampler):
    generator = torch.Generator().manual_seed(100 + n)
    adjacency = torch.cat([sample_graphs(name, per_sampler, n, generator) for name in SAMPLER_NAMES])
    distance = bfs_distance_batch(adjacency)
    error = predict(bfs_transformer(n), adjacency) - distance
    assert len(error) == 5 * per_sampler
    assert set(distance.tolist()) >= set(range(1, min(n, 8))) | {n}, "short, long and unreachable pairs"
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


def test_answer_token_records_in_layer_l_whether_the_distance_is_at_most_l():
    n = 7
    adjacency = torch.cat([sample_graphs(name, 20, n, torch.Generator().manual_seed(5)) for name in SAMPLER_NAMES])
    model = bfs_transformer(n)
    with torch.no_grad():
        trace = model.run(adjacency, keep_trace=True)
    distance = bfs_distance_batch(adjacency)
    out = trace["hidden"][-1, :, 0, model.layout.out]
    expected = (distance[:, None] <= torch.arange(n)[None, :]).float()
    assert torch.allclose(out, expected, atol=1e-4)
    assert torch.equal(trace["distance"], model(adjacency))
    # The answer head of every layer reads the token of vertex 1 (position 1) only.
    answer_rows = trace["attention"][:, :, n, 0, :]
    assert torch.allclose(answer_rows[..., 1], torch.ones(n, len(adjacency)), atol=1e-6)


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
    n = 8
    adjacency = sample_graphs("seed", 300, n, torch.Generator().manual_seed(0))
    distance = bfs_distance_batch(adjacency)

    def mse(**constants):
        return float(((predict(bfs_transformer(n, **constants), adjacency) - distance) ** 2).mean())

    by_gap = [mse(attention_gap=gap) for gap in (1, 4, 8, 16, 30)]
    by_slope = [mse(squash_slope=slope * n) for slope in (1, 4, 8, 20, 80)]
    for errors in (by_gap, by_slope):
        assert errors == sorted(errors, reverse=True), errors
        assert errors[0] > 1e-3 > 1e-9 >= errors[-1]


@pytest.mark.parametrize("constants, message", [
    ({"attention_gap": 0.0}, "attention_gap must be positive"),
    ({"squash_slope": -1.0}, "squash_slope must be positive"),
])
def test_constants_must_be_positive(constants, message):
    with pytest.raises(ValueError, match=message):
        bfs_transformer(5, **constants)


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
