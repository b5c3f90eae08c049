"""Chapter 1's figures plot the numbers they are built from (hand-made inputs, networkx as the oracle)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import torch

from lib.bfs.transformer import bfs_transformer, reach_by_layer
from lib.chapters.ch1_figures import (
    attention_figure, damage_distribution_figure, graph_figure, graph_layout, reach_slider_figure, recovery_slider_figure,
    recovery_summary_figure, sharpness_figure, study_protocol_figure,
)


def graph(n: int, edges: list[tuple[int, int]]) -> torch.Tensor:
    adjacency = torch.zeros(n, n, dtype=torch.bool)
    for a, b in edges:
        adjacency[a, b] = adjacency[b, a] = True
    return adjacency


# Indices 0..5 are vertices 1..6: a path 1-3-4-2, a pendant 5 on 3, and 6 isolated.
EDGES = [(0, 2), (2, 3), (3, 1), (2, 4)]
GRAPH = graph(6, EDGES)


def same(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def visible_at(fig, step: int) -> list[bool]:
    return list(fig.layout.sliders[0].steps[step].args[0]["visible"])


def distances(adjacency: torch.Tensor) -> list[float]:
    """Distance from index 0 to every index by networkx, n where unreachable."""
    n = adjacency.shape[0]
    lengths = nx.single_source_shortest_path_length(nx.from_numpy_array(adjacency.numpy().astype(int)), 0)
    return [float(lengths.get(v, n)) for v in range(n)]


def test_graph_figure_draws_exactly_the_edges_and_colours_by_distance():
    distance = distances(GRAPH)
    assert distance == [0, 3, 1, 2, 2, 6]
    fig = graph_figure(GRAPH, distance, seed=3)
    edges, reachable, unreachable = fig.data
    vertices = {text: (x, y) for trace in (reachable, unreachable) for text, x, y in zip(trace.text, trace.x, trace.y)}
    position = {xy: int(text) - 1 for text, xy in vertices.items()}
    assert len(position) == 6, "every vertex has its own position"
    drawn = set()
    for start in range(0, len(edges.x), 3):
        a = position[(edges.x[start], edges.y[start])]
        b = position[(edges.x[start + 1], edges.y[start + 1])]
        assert edges.x[start + 2] is None and edges.y[start + 2] is None, "segments are separated"
        drawn.add(frozenset((a, b)))
    assert drawn == {frozenset(e) for e in EDGES}
    # Colour = distance for the reachable vertices; the unreachable one is grey, named in the legend;
    # only the source and the target are ringed.
    assert list(reachable.text) == ["1", "2", "3", "4", "5"] and list(reachable.marker.color) == [0, 3, 1, 2, 2]
    assert reachable.marker.cmin == 0 and reachable.marker.cmax == 3 and not reachable.showlegend
    assert list(unreachable.text) == ["6"] and unreachable.name == "unreachable from 1" and unreachable.showlegend
    assert list(reachable.marker.line.width) == [4, 4, 0, 0, 0] and list(unreachable.marker.line.width) == [0]
    assert reachable.hovertext[1].startswith("vertex 2: distance 3")
    assert unreachable.hovertext[0] == "vertex 6: unreachable"


def test_graph_layout_keeps_vertices_apart_and_sets_an_isolated_one_beside_the_rest():
    """Edges of mean length 1 and no two vertices closer than half of that, the component's
    longest extent up the page; vertex 6, isolated, one unit to the right of the rest (a spring
    layout of the whole graph pushed it far off and squeezed the rest onto each other)."""
    graph = nx.from_numpy_array(GRAPH.numpy().astype(int))
    position = graph_layout(graph, seed=3)
    main = [position[v] for v in range(5)]
    edges = [math.dist(position[a], position[b]) for a, b in EDGES]
    assert sum(edges) / len(edges) == pytest.approx(1.0)
    assert min(math.dist(a, b) for i, a in enumerate(main) for b in main[i + 1:]) > 0.5
    assert position[5][0] == pytest.approx(max(x for x, _ in main) + 1.0)
    width, height = (max(p[k] for p in main) - min(p[k] for p in main) for k in (0, 1))
    assert height >= width


def test_reach_by_layer_is_the_ball_of_radius_layer_around_each_vertex():
    model = bfs_transformer(6)
    reach = reach_by_layer(model, GRAPH)
    assert reach.shape == (7, 6, 6)
    lengths = dict(nx.all_pairs_shortest_path_length(nx.from_numpy_array(GRAPH.numpy().astype(int))))
    for layer in range(7):
        ball = torch.tensor([[float(w in lengths[v] and lengths[v][w] <= layer) for w in range(6)]
                             for v in range(6)])
        assert torch.allclose(reach[layer], ball, atol=1e-3), f"layer {layer}"


def test_reach_slider_shows_one_layer_per_step():
    reach = torch.rand(4, 3, 3, generator=torch.Generator().manual_seed(0))
    fig = reach_slider_figure(reach)
    assert len(fig.data) == 4
    for layer, trace in enumerate(fig.data):
        assert same(trace.z, reach[layer])
        assert list(trace.x) == ["1", "2", "3"] == list(trace.y)
    slider = fig.layout.sliders[0]
    assert [s.label for s in slider.steps] == ["input", "1", "2", "3"]
    assert slider.active == 0 and [t.visible for t in fig.data] == [True, False, False, False]
    for step in range(4):
        assert visible_at(fig, step) == [i == step for i in range(4)]


def test_attention_figure_shows_the_chosen_head():
    model = bfs_transformer(6)
    with torch.no_grad():
        attention = model.run(GRAPH.unsqueeze(0), keep_trace=True)["attention"]
    answer = attention_figure(model, GRAPH, 2, 6)
    assert same(answer.data[0].z, attention[2, 0, 6])
    assert list(answer.data[0].x) == ["answer", "1", "2", "3", "4", "5", "6"]
    assert answer.layout.title.text == "Attention of the answer head in layer 3"
    # The answer token (row 0) reads the token of vertex 1 (column 1).
    assert answer.data[0].z[0, 1] == pytest.approx(1.0, abs=1e-6)
    reach = attention_figure(model, GRAPH, 0, 2)
    assert same(reach.data[0].z, attention[0, 0, 2])
    assert reach.layout.title.text == "Attention of the reach head of vertex 3 in layer 1"
    # In layer 1 only vertex 3 reaches vertex 3; it attends evenly to 3's neighbours 1, 4 and 5.
    row = reach.data[0].z[3]
    neighbours = sorted(nx.from_numpy_array(GRAPH.numpy().astype(int)).neighbors(2))
    assert neighbours == [0, 3, 4]
    assert row == pytest.approx([0.0] + [1 / 3 if v in neighbours else 0.0 for v in range(6)], abs=1e-6)


RECORDS = [
    {"mode": "replace", "scale": 1.0, "curve": [[0, 2.0], [5, 0.5], [10, 0.0]], "loss_before": 2.0, "loss_after": 0.0},
    {"mode": "gaussian", "scale": 0.1, "curve": [[0, 0.3], [10, 0.01]], "loss_before": 0.3, "loss_after": 0.01},
    {"mode": "gaussian", "scale": 1.0, "curve": [[0, 4.0], [10, 1.0]], "loss_before": 4.0, "loss_after": 1.0},
    {"mode": "replace", "scale": 0.1, "curve": [[0, 0.2], [10, 0.02]], "loss_before": 0.2, "loss_after": 0.02},
]


def test_recovery_slider_shows_the_curves_of_one_scale_per_step():
    fig = recovery_slider_figure(RECORDS)
    # Step 0 (scale 0.1): gaussian then replace; step 1 (scale 1): gaussian then replace.
    expected = [RECORDS[1], RECORDS[3], RECORDS[2], RECORDS[0]]
    assert [t.name for t in fig.data] == ["gaussian", "replace", "gaussian", "replace"]
    for trace, record in zip(fig.data, expected):
        assert same(trace.x, [s for s, _ in record["curve"]])
        assert same(trace.y, [max(loss, 1e-12) for _, loss in record["curve"]])
    assert fig.data[3].y[-1] == 1e-12, "a zero loss is floored for the log axis"
    assert fig.data[0].line.color == fig.data[2].line.color != fig.data[1].line.color
    slider = fig.layout.sliders[0]
    assert [s.label for s in slider.steps] == ["0.1", "1"]
    assert visible_at(fig, 0) == [True, True, False, False]
    assert visible_at(fig, 1) == [False, False, True, True]
    assert [t.visible for t in fig.data] == visible_at(fig, slider.active)


def test_recovery_summary_plots_before_and_after_against_scale():
    fig = recovery_summary_figure(RECORDS)
    assert [t.name for t in fig.data] == ["gaussian: after damage", "gaussian: after retraining",
                                          "replace: after damage", "replace: after retraining"]
    for trace in fig.data:
        assert same(trace.x, [0.1, 1.0])
    assert same(fig.data[0].y, [0.3, 4.0]) and same(fig.data[1].y, [0.01, 1.0])
    assert same(fig.data[2].y, [0.2, 2.0]) and same(fig.data[3].y, [0.02, 1e-12])


def test_sharpness_figure_plots_each_constant_sorted_and_floored():
    rows = [{"knob": "gap", "value": 30.0, "mse": 0.0}, {"knob": "gap", "value": 1.0, "mse": 0.4},
            {"knob": "slope", "value": 80.0, "mse": 1e-9}, {"knob": "slope", "value": 2.0, "mse": 0.2},
            {"knob": "gap", "value": 4.0, "mse": 0.01}]
    fig = sharpness_figure(rows)
    assert [t.name for t in fig.data] == ["gap", "slope"]
    assert same(fig.data[0].x, [1.0, 4.0, 30.0]) and same(fig.data[0].y, [0.4, 0.01, 1e-16])
    assert same(fig.data[1].x, [2.0, 80.0]) and same(fig.data[1].y, [0.2, 1e-9])
    assert [shape.y0 for shape in fig.layout.shapes] == [1e-6]
    # The claim's label sits at the left end of its line, where no curve comes near it.
    (label,) = fig.layout.annotations
    assert (label.x, label.xref, label.xanchor, label.y) == (0, "x domain", "left", -6)


def test_damage_distribution_figure_plots_the_share_at_or_below_and_every_draw_by_matrix():
    lists = ("reach key", "reach query", "reach value", "answer key", "answer query", "answer value")
    records = [{"weight_list": name, "index": index, "noise_draw": 0, "matrix": f"matrix {index + 1}", "mse": mse}
               for name, mse in zip(lists, (10.0, 0.0, 20.0, 0.3, 0.5, 40.0)) for index in range(2)]
    fig = damage_distribution_figure(records, 0.403)
    everything = fig.data[0]
    assert everything.name == "all draws" and len(everything.x) == 12 and everything.y[-1] == 1.0
    assert everything.x[0] == 1e-6                                       # an MSE of 0 is floored for the log axis
    strip = [trace for trace in fig.data if trace.mode == "markers"]
    assert [trace.name for trace in strip] == list(lists)
    assert list(strip[3].y) == ["answer key L1", "answer key L2"] and list(strip[0].y) == ["reach key v1", "reach key v2"]
    assert same(strip[1].x, [1e-6, 1e-6]) and same(strip[5].x, [40.0, 40.0])
    # Every matrix is a tick of its own, in the order of the weight lists (none thinned out).
    matrices = [f"{name} {'v' if name.startswith('reach') else 'L'}{i}" for name in lists for i in (1, 2)]
    assert fig.layout.yaxis2.tickmode == "array" and list(fig.layout.yaxis2.tickvals) == matrices
    # The study's value is named in the legend, with its percentile (4 of 12 draws at or below 0.403);
    # the only annotations are the two subplot titles (nothing written over the data).
    study = [trace for trace in fig.data if trace.name.startswith("the study")]
    assert [trace.name for trace in study] == ["the study: 0.403 (percentile 33.3)"]
    assert [a.text for a in fig.layout.annotations] == ["share of draws at or below an MSE",
                                                        "every draw, by the matrix it hit"]
    assert strip[3].hovertext[1].startswith("answer key, matrix 2,")   # the list and the matrix hit


def test_study_protocol_figure_shows_each_draw_absolute_and_relative_with_the_studys_points():
    def record(name, curve):
        return {"weight_list": name, "matrix": "layer 1", "damage_had_effect": True, "curve": curve}
    records = {"study": [record("answer key", [[0, 0.4], [100, 0.3]])],
               "book": [record("answer key", [[0, 0.2], [100, 0.19]])]}
    fig = study_protocol_figure(records)
    lines = [trace for trace in fig.data if trace.mode == "lines"]
    assert same(lines[0].y, [0.4, 0.3]) and np.allclose(lines[1].y, [1.0, 0.75])
    assert np.allclose(lines[3].y, [1.0, 0.95])
    study = [trace for trace in fig.data if trace.mode == "markers"]
    assert same(study[0].y, [0.403, 0.335]) and len(study) == 3        # absolute on the study's panel only
    # Every panel has its own short y title (a phone loses a title shared with the panel beside it).
    assert [fig.layout[k].title.text for k in ("yaxis", "yaxis2", "yaxis3", "yaxis4")] == [
        "held-out MSE", "held-out MSE", "MSE / MSE after damage", "MSE / MSE after damage"]
