"""`TokenGraphs` reads back from the model's tokens what networkx computes on the same graphs."""

import networkx as nx
import pytest
import torch

from lib.paths.sampler import sample_batch
from lib.paths.token_graphs import UNREACHABLE, TokenGraphs


@pytest.fixture(scope="module", params=["pretrain", "any"])
def batch(request):
    """Graphs of chapter 2's distribution (target 2) and with targets anywhere (chapter 3)."""
    tokens, labels = sample_batch(120, request.param, 3, 8, torch.Generator().manual_seed(5))
    return tokens, labels, TokenGraphs.from_tokens(tokens)


def networkx_graph(graphs: TokenGraphs, row: int, kind=nx.Graph) -> nx.Graph:
    """One graph of the batch; a MultiGraph keeps the sampler's repeated edges (they count twice)."""
    graph = kind()
    graph.add_nodes_from(range(1, graphs.low.shape[1] + 1))
    graph.add_edges_from((int(a), int(b)) for a, b, real in
                         zip(graphs.low[row], graphs.high[row], graphs.is_edge[row]) if real)
    return graph


def nx_distance(graph: nx.Graph, a: int, b: int) -> int:
    try:
        return nx.shortest_path_length(graph, a, b)
    except nx.NetworkXNoPath:
        return UNREACHABLE


def test_distances_match_networkx_and_the_sampler_labels(batch):
    tokens, labels, graphs = batch
    unreachable_label = 8
    for row in range(len(tokens)):
        graph, target = networkx_graph(graphs, row), int(graphs.target[row])
        expected = nx_distance(graph, 1, target)
        assert int(graphs.distance[row]) == expected
        assert int(labels[row]) == (unreachable_label if expected == UNREACHABLE else expected)
        for slot in range(graphs.low.shape[1]):
            if not graphs.is_edge[row, slot]:
                assert graphs.edge_from_source[row, slot] == UNREACHABLE
                continue
            a, b = int(graphs.low[row, slot]), int(graphs.high[row, slot])
            assert graphs.edge_from_source[row, slot] == min(nx_distance(graph, 1, a), nx_distance(graph, 1, b))
            assert graphs.edge_from_target[row, slot] == min(nx_distance(graph, target, a),
                                                             nx_distance(graph, target, b))


def test_shortest_path_edges_shared_endpoints_and_degrees_match_networkx(batch):
    tokens, _, graphs = batch
    for row in range(len(tokens)):
        graph, target = networkx_graph(graphs, row), int(graphs.target[row])
        on_path = set()
        if nx.has_path(graph, 1, target):
            for path in nx.all_shortest_paths(graph, 1, target):
                on_path |= {frozenset(pair) for pair in zip(path, path[1:])}
        edges = [(int(a), int(b)) if real else None
                 for a, b, real in zip(graphs.low[row], graphs.high[row], graphs.is_edge[row])]
        for i, edge in enumerate(edges):
            assert bool(graphs.on_shortest_path[row, i]) == (edge is not None and frozenset(edge) in on_path)
            for j, other in enumerate(edges):
                shares = edge is not None and other is not None and i != j and bool(set(edge) & set(other))
                assert bool(graphs.shares_endpoint[row, i, j]) == shares
        multigraph = networkx_graph(graphs, row, nx.MultiGraph)
        assert int(graphs.degree(torch.ones_like(graphs.target))[row]) == multigraph.degree(1)
        assert int(graphs.degree(graphs.target)[row]) == multigraph.degree(target)
        assert int(graphs.edge_count[row]) == multigraph.number_of_edges()
