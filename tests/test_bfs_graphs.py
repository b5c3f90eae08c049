"""Graph samplers of chapter 1 and the plain-BFS oracle, checked against networkx."""

import networkx as nx
import pytest
import torch

from lib.bfs.graphs import (
    SAMPLER_NAMES, bfs_distance, bfs_distance_batch, sample_erdos_renyi, sample_graphs,
)


def to_networkx(graph):
    return nx.from_numpy_array(graph.numpy().astype(int))


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_samplers_give_simple_undirected_graphs(name):
    adjacency = sample_graphs(name, 200, 9, torch.Generator().manual_seed(0))
    assert adjacency.dtype == torch.bool and adjacency.shape == (200, 9, 9)
    assert torch.equal(adjacency, adjacency.transpose(1, 2))
    assert not adjacency.diagonal(dim1=1, dim2=2).any()


def test_trees_and_paths_are_what_they_claim():
    generator = torch.Generator().manual_seed(1)
    for graph in sample_graphs("tree", 100, 10, generator):
        assert nx.is_tree(to_networkx(graph))
    for graph in sample_graphs("path", 100, 10, generator):
        g = to_networkx(graph)
        assert nx.is_connected(g) and g.number_of_edges() == 9 and max(d for _, d in g.degree) <= 2


def test_seed_sampler_edge_count_and_pair_frequencies_match_the_definition():
    # n edges between uniform endpoints, self-loops dropped, duplicates merged: a given pair
    # {a, b} is an edge with probability 1 - (1 - 2 / n^2)^n, the same for every pair.
    n, batch = 8, 4000
    adjacency = sample_graphs("seed", batch, n, torch.Generator().manual_seed(2))
    edges = adjacency.sum(dim=(1, 2)) / 2
    assert edges.max() <= n
    p_edge = 1 - (1 - 2 / n ** 2) ** n
    assert abs(float(edges.mean()) - n * (n - 1) / 2 * p_edge) < 0.1       # standard error ~0.02
    frequency = adjacency.double().mean(dim=0)[torch.triu(torch.ones(n, n, dtype=torch.bool), 1)]
    assert float((frequency - p_edge).abs().max()) < 0.03                   # standard error ~0.007


def test_erdos_renyi_edge_density_matches_p():
    adjacency = sample_erdos_renyi(4000, 6, 0.3, torch.Generator().manual_seed(3))
    density = float(adjacency.sum() / (4000 * 6 * 5))
    assert abs(density - 0.3) < 0.01  # standard error ~0.002


@pytest.mark.parametrize("name, n, p", [("sparse", 7, 1.5 / 6), ("dense", 7, 0.5), ("sparse", 2, 1.0)])
def test_named_erdos_renyi_samplers_use_their_edge_probability(name, n, p):
    adjacency = sample_graphs(name, 3000, n, torch.Generator().manual_seed(4))
    density = float(adjacency.sum() / (3000 * n * (n - 1)))
    assert abs(density - p) < 0.015


def test_random_paths_put_vertices_1_and_2_at_a_uniformly_random_pair_of_positions():
    # On a path of n vertices in random order, P(distance = k) = 2 (n - k) / (n (n - 1)).
    n, batch = 6, 6000
    distance = bfs_distance_batch(sample_graphs("path", batch, n, torch.Generator().manual_seed(6)))
    for k in range(1, n):
        share = float((distance == k).double().mean())
        assert abs(share - 2 * (n - k) / (n * (n - 1))) < 0.02, k      # standard error <= 0.006
    assert not (distance == n).any()


def test_tree_labels_are_shuffled():
    # Without the shuffle vertex 1 would be the root of the recursive tree, of mean degree
    # H_(n-1) ~ 2.83 for n = 10; with it, its mean degree is that of any vertex, 2 (n - 1) / n.
    n = 10
    adjacency = sample_graphs("tree", 3000, n, torch.Generator().manual_seed(7))
    assert abs(float(adjacency[:, 0].sum(dim=1).double().mean()) - 2 * (n - 1) / n) < 0.1


def test_bfs_oracle_matches_networkx_on_thousands_of_graphs():
    generator = torch.Generator().manual_seed(4)
    for name in SAMPLER_NAMES:
        adjacency = sample_graphs(name, 400, 10, generator)
        ours = bfs_distance_batch(adjacency)
        for graph, distance in zip(adjacency, ours):
            g = to_networkx(graph)
            expected = nx.shortest_path_length(g, 0, 1) if nx.has_path(g, 0, 1) else 10
            assert distance == expected


def test_bfs_distance_to_other_targets_and_custom_unreachable():
    graph = torch.zeros(4, 4, dtype=torch.bool)
    graph[0, 2] = graph[2, 0] = graph[2, 3] = graph[3, 2] = True
    assert bfs_distance(graph, 0, 3) == 2
    assert bfs_distance(graph, 0, 1) == 4
    assert bfs_distance(graph, 0, 1, unreachable=99) == 99
    assert bfs_distance(graph, 3, 3) == 0


def test_bfs_distance_between_every_pair_matches_networkx():
    for graph in sample_graphs("sparse", 40, 7, torch.Generator().manual_seed(8)):
        lengths = dict(nx.all_pairs_shortest_path_length(to_networkx(graph)))
        for source in range(7):
            for target in range(7):
                assert bfs_distance(graph, source, target) == lengths[source].get(target, 7)


def test_unknown_sampler_is_named():
    with pytest.raises(ValueError, match="Unknown graph sampler 'cycle'"):
        sample_graphs("cycle", 1, 4)


def test_same_seed_same_graphs():
    a = sample_graphs("tree", 50, 7, torch.Generator().manual_seed(5))
    b = sample_graphs("tree", 50, 7, torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
