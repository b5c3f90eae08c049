"""The vectorized edge-token sampler against networkx and against the per-graph reference."""

from __future__ import annotations

import random

import networkx as nx
import pytest
import torch

from lib.paths.pretrain_draw import pair_tables
from lib.paths.sampler import (
    ParameterError, default_length_threshold, distance_to, distances_from, draw_vertex_counts,
    make_options, propose_graphs, random_chunks, sample_batch, sample_examples,
)
from lib.paths.reference_sampler import draw_proposal, reference_examples, reference_sample_batch


def graph_of(tokens: torch.Tensor) -> nx.Graph:
    """The graph that one example's edge rows describe (padding rows skipped)."""
    graph = nx.Graph()
    graph.add_nodes_from([1, 2])
    for a, b in tokens[:-1].tolist():
        if a:
            graph.add_edge(a, b)
    return graph


def networkx_label(tokens: torch.Tensor, unreachable: int) -> int:
    graph, target = graph_of(tokens), int(tokens[-1, 0])
    if target not in graph or not nx.has_path(graph, 1, target):
        return unreachable
    return nx.shortest_path_length(graph, 1, target)


def check_format(tokens: torch.Tensor, labels: torch.Tensor, n_max: int, max_vertex_id: int) -> None:
    batch = len(labels)
    assert tokens.shape == (batch, n_max + 1, 2) and tokens.dtype == torch.long
    assert labels.shape == (batch,) and labels.dtype == torch.float32
    edges = tokens[:, :-1]
    padding = (edges == 0).all(dim=-1)
    assert ((edges[..., 0] == 0) == padding).all(), "a pair is either (0, 0) or an edge"
    assert (edges[..., 0] < edges[..., 1])[~padding].all(), "edges are written a < b"
    assert (edges <= max_vertex_id).all()
    # Padding only after the last edge.
    assert (padding.int().diff(dim=1) >= 0).all()
    assert (tokens[:, -1, 1] == max_vertex_id + 1).all(), "last pair is (target, TARGET)"
    assert ((tokens[:, -1, 0] >= 2) & (tokens[:, -1, 0] <= max_vertex_id)).all()


@pytest.mark.parametrize("task", ["pretrain", "onpath", "any"])
@pytest.mark.parametrize("n_max", [15, 7])
def test_labels_match_networkx_and_format(task, n_max):
    generator = torch.Generator().manual_seed(1)
    tokens, labels = sample_batch(2000, task, 3, n_max, generator)
    check_format(tokens, labels, n_max, n_max)
    expected = [networkx_label(row, n_max) for row in tokens]
    assert labels.long().tolist() == expected
    if task == "pretrain":
        assert (tokens[:, -1, 0] == 2).all()
    if task == "onpath":
        assert (labels < n_max).all() and (labels >= 1).all()
        for row, label in zip(tokens[:300], labels[:300].long().tolist()):
            graph, target = graph_of(row), int(row[-1, 0])
            d12 = nx.shortest_path_length(graph, 1, 2)
            assert nx.shortest_path_length(graph, target, 2) == d12 - label, "target on a 1-2 path"


def test_relabelled_vertices_keep_1_and_2_and_labels():
    generator = torch.Generator().manual_seed(2)
    tokens, labels = sample_batch(1500, "any", 3, 8, generator, max_vertex_id=20,
                                  relabel_vertices=True, unreachable_label=30)
    check_format(tokens, labels, 8, 20)
    assert labels.long().tolist() == [networkx_label(row, 30) for row in tokens]
    assert (tokens[:, :-1] > 8).any(), "ids beyond n_max appear"
    # Each graph's ids stay distinct after relabelling: no more vertices than before.
    for row in tokens[:200]:
        assert graph_of(row).number_of_nodes() <= 8 + 1


def test_larger_graphs_use_wide_masks():
    generator = torch.Generator().manual_seed(3)
    tokens, labels = sample_batch(500, "any", 20, 40, generator)
    check_format(tokens, labels, 40, 40)
    assert labels.long().tolist() == [networkx_label(row, 40) for row in tokens]


@pytest.mark.parametrize("n_min,n_max", [(3, 20), (30, 40)])
def test_pretrain_with_wide_vertex_sets(n_min, n_max):
    """The pre-training search packs vertex sets into int32 beyond 15 vertices, int64 beyond 31."""
    tokens, labels = sample_batch(400, "pretrain", n_min, n_max, torch.Generator().manual_seed(8))
    check_format(tokens, labels, n_max, n_max)
    assert labels.long().tolist() == [networkx_label(row, n_max) for row in tokens]


def test_distances_from_matches_networkx():
    generator = torch.Generator().manual_seed(4)
    n_vertices = draw_vertex_counts(random_chunks(1000, 1, generator)[:, 0], 3, 11)
    graphs = propose_graphs(n_vertices, 11, generator)
    from_2 = distances_from(graphs, 2)
    to_5 = distance_to(graphs, 5, source=2)
    targets = torch.randint(1, 12, (1000,), generator=generator)
    to_targets = distance_to(graphs, targets)  # one target per graph
    for i in range(1000):
        graph = nx.Graph()
        graph.add_nodes_from(range(1, int(n_vertices[i]) + 1))
        for a, b in zip(graphs.low[i].tolist(), graphs.high[i].tolist()):
            if a and a != b:
                graph.add_edge(a, b)
        lengths = nx.single_source_shortest_path_length(graph, 2)
        expected = [lengths.get(v, -1) for v in range(13)]
        assert from_2[i, :13].tolist() == expected
        assert int(to_5[i]) == expected[5]
        from_1 = nx.single_source_shortest_path_length(graph, 1)
        target = int(targets[i])
        assert int(to_targets[i]) == (-1 if target == 1 else from_1.get(target, -1))


def test_same_seed_same_batch():
    first = sample_batch(300, "pretrain", generator=torch.Generator().manual_seed(5))
    second = sample_batch(300, "pretrain", generator=torch.Generator().manual_seed(5))
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])


def chi_square_same_distribution(counts_a: torch.Tensor, counts_b: torch.Tensor) -> float:
    """p-value of the two-sample chi-square test that two histograms share a distribution.

    Bins with fewer than 20 examples in the two samples together are merged into one.
    """
    counts_a, counts_b = counts_a.double(), counts_b.double()
    small = (counts_a + counts_b) < 20
    a = torch.cat([counts_a[~small], counts_a[small].sum().view(1)])
    b = torch.cat([counts_b[~small], counts_b[small].sum().view(1)])
    keep = (a + b) > 0
    a, b = a[keep], b[keep]
    total_a, total_b = a.sum(), b.sum()
    statistic = (((total_b / total_a).sqrt() * a - (total_a / total_b).sqrt() * b) ** 2 / (a + b)).sum()
    dof = len(a) - 1
    return float(torch.special.gammaincc(torch.tensor(dof / 2.0), statistic / 2))


@pytest.mark.parametrize("task,n_max,options", [
    ("pretrain", 15, {}),
    ("pretrain", 8, {}),
    ("onpath", 7, {}),
    ("onpath", 15, {}),
    ("onpath", 15, {"target_max": 7}),
    ("any", 7, {}),
])
def test_label_histogram_matches_reference_generator(task, n_max, options):
    n_reference = 4000 if task == "pretrain" else 3000
    _, labels = sample_batch(20_000, task, 3, n_max, torch.Generator().manual_seed(6), **options)
    _, reference = reference_sample_batch(n_reference, task, 3, n_max, random.Random(6), **options)
    bins = n_max + 1
    p_value = chi_square_same_distribution(torch.bincount(labels.long(), minlength=bins),
                                           torch.bincount(reference.long(), minlength=bins))
    assert p_value > 1e-3, f"label histograms differ (p = {p_value:.2e})"


def chi_square_uniform(counts: torch.Tensor) -> float:
    """p-value of the chi-square goodness-of-fit test of a histogram against the uniform one."""
    counts = counts.double()
    expected = counts.sum() / len(counts)
    statistic = ((counts - expected) ** 2 / expected).sum()
    return float(torch.special.gammaincc(torch.tensor((len(counts) - 1) / 2.0), statistic / 2))


def size_label_cells(n_vertices: torch.Tensor, labels: torch.Tensor, n_max: int) -> torch.Tensor:
    """Joint (size, label) histogram, flattened."""
    return torch.bincount(n_vertices.long() * (n_max + 1) + labels.long(), minlength=(n_max + 1) ** 2)


@pytest.mark.parametrize("task,n_max,options", [
    ("pretrain", 15, {}), ("onpath", 7, {}), ("onpath", 15, {"target_max": 7}),
])
def test_size_is_drawn_before_rejection(task, n_max, options):
    """The authors draw n once per example and redraw only the graph until it is kept: the
    sizes of kept examples are uniform, and within each size the labels are those of the
    per-graph generator (a joint (size, label) test)."""
    spec = make_options(task, 3, n_max, **options)
    kept = sample_examples(20_000, spec, torch.Generator().manual_seed(10))
    sizes = kept.graphs.n_vertices
    assert chi_square_uniform(torch.bincount(sizes, minlength=n_max + 1)[3:]) > 1e-3
    labels = torch.where(kept.distance < 0, spec.unreachable_label, kept.distance)
    reference = list(reference_examples(4000, spec, random.Random(10)))
    reference_sizes = torch.tensor([n for n, *_ in reference])
    reference_labels = torch.tensor([spec.unreachable_label if d is None else d for *_, d in reference])
    p_joint = chi_square_same_distribution(size_label_cells(sizes, labels, n_max),
                                           size_label_cells(reference_sizes, reference_labels, n_max))
    assert p_joint > 1e-3, f"joint (size, label) histograms differ (p = {p_joint:.2e})"


def test_redrawing_the_size_on_rejection_is_detected():
    """Power check: redrawing n with the graph (the book's earlier sampler) skews kept
    pre-training graphs towards large n (n = 15: about 10.2% instead of 1/13), which the
    uniformity test above rejects."""
    spec = make_options("pretrain", 3, 15)
    rng = random.Random(11)
    sizes = []
    while len(sizes) < 20_000:
        n_vertices = rng.randint(3, 15)
        if draw_proposal(n_vertices, spec, rng) is not None:
            sizes.append(n_vertices)
    counts = torch.bincount(torch.tensor(sizes), minlength=16)[3:]
    assert chi_square_uniform(counts) < 1e-6
    assert 0.095 < float(counts[-1]) / len(sizes) < 0.11


def edge_count_histogram(tokens: torch.Tensor, n_max: int) -> torch.Tensor:
    """How many examples have 0, 1, ..., n_max edges (self-loops dropped, so often fewer than n)."""
    return torch.bincount((tokens[:, :-1, 0] > 0).sum(dim=1), minlength=n_max + 1)


@pytest.mark.parametrize("n_max", [15, 6])
def test_pretrain_edge_counts_and_joint_labels_match_reference(n_max):
    """The pre-training task draws graphs without a 1-2 edge directly for high coins and never
    stores self-loops: the numbers of edges, and labels within each edge count, must still be
    those of the plain per-graph generator."""
    tokens, labels = sample_batch(20_000, "pretrain", 3, n_max, torch.Generator().manual_seed(9))
    reference_tokens, reference_labels = reference_sample_batch(4000, "pretrain", 3, n_max, random.Random(9))
    p_edges = chi_square_same_distribution(edge_count_histogram(tokens, n_max),
                                           edge_count_histogram(reference_tokens, n_max))
    assert p_edges > 1e-3, f"edge-count histograms differ (p = {p_edges:.2e})"
    # Joint (edge count, label) cells, flattened into one histogram.
    def joint(tokens, labels):
        cell = (tokens[:, :-1, 0] > 0).sum(dim=1) * (n_max + 1) + labels.long()
        return torch.bincount(cell, minlength=(n_max + 1) ** 2)
    p_joint = chi_square_same_distribution(joint(tokens, labels), joint(reference_tokens, reference_labels))
    assert p_joint > 1e-3, f"joint (edges, label) histograms differ (p = {p_joint:.2e})"
    has_edge_1_2 = (tokens[:, :-1] == torch.tensor([1, 2])).all(dim=-1).any(dim=1)
    assert (labels[has_edge_1_2] == 1).all(), "a 1-2 edge means distance 1"


def test_pair_tables_blocks():
    offset, vertex_set, low, high = pair_tables(3, 6, torch.device("cpu"))
    ends = torch.stack([low, high], dim=1).long()
    for n in range(3, 7):
        full = slice(offset[(n, False)], offset[(n, False)] + n * n)
        without = slice(offset[(n, True)], offset[(n, True)] + n * n - 2)
        assert int((ends[full] == torch.tensor([1, 2])).all(dim=1).sum()) == 2  # (1, 2) and (2, 1)
        assert not (ends[without] == torch.tensor([1, 2])).all(dim=1).any()
        loops = (ends[full] == 0).all(dim=1)
        assert int(loops.sum()) == n and (vertex_set[full][loops] == 0).all()
        # Each vertex set has exactly the two ends' bits.
        edges = ~loops
        low, high = ends[full][edges, 0], ends[full][edges, 1]
        assert torch.equal(vertex_set[full][edges].long(), (1 << (low - 1)) | (1 << (high - 1)))


def test_chi_square_detects_a_different_filter():
    """The statistical test has power: a different length threshold is caught."""
    _, labels = sample_batch(20_000, "pretrain", 3, 15, torch.Generator().manual_seed(7))
    _, other = reference_sample_batch(4000, "pretrain", 3, 15, random.Random(7), length_threshold=4)
    p_value = chi_square_same_distribution(torch.bincount(labels.long(), minlength=16),
                                           torch.bincount(other.long(), minlength=16))
    assert p_value < 1e-6


def test_length_threshold_reduces_to_published_value():
    assert default_length_threshold(15) == 6
    assert make_options("pretrain").length_threshold == 6


@pytest.mark.parametrize("kwargs", [
    {"task": "nope"}, {"n_max": 1}, {"n_min": 9, "n_max": 8}, {"target_max": 40},
    {"max_vertex_id": 3}, {"small_graph_filter": 1}, {"task": "onpath", "target_max": 1},
])
def test_bad_arguments_raise_parameter_error(kwargs):
    arguments = {"batch_size": 4, "task": "any", **kwargs}
    with pytest.raises(ParameterError):
        sample_batch(**arguments)
