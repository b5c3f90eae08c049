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


def test_seed_sampler_has_at_most_n_edges_and_average_degree_near_two():
    adjacency = sample_graphs("seed", 2000, 8, torch.Generator().manual_seed(2))
    edges = adjacency.sum(dim=(1, 2)) / 2
    assert edges.max() <= 8
    # n pairs of uniform endpoints: self-loops (prob 1/n) and duplicates are dropped.
    assert 1.5 < float(2 * edges.mean() / 8) < 2.0


def test_erdos_renyi_edge_density_matches_p():
    adjacency = sample_erdos_renyi(4000, 6, 0.3, torch.Generator().manual_seed(3))
    density = float(adjacency.sum() / (4000 * 6 * 5))
    assert abs(density - 0.3) < 0.01  # standard error ~0.002


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


def test_unknown_sampler_is_named():
    with pytest.raises(ValueError, match="Unknown graph sampler 'cycle'"):
        sample_graphs("cycle", 1, 4)


def test_same_seed_same_graphs():
    a = sample_graphs("tree", 50, 7, torch.Generator().manual_seed(5))
    b = sample_graphs("tree", 50, 7, torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
