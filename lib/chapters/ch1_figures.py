"""Figures of chapter 1: the example graph, reach sets per layer, attention, recovery curves, the
study's damage distribution."""

from __future__ import annotations

import math
from collections.abc import Sequence

import ipywidgets as widgets
import networkx as nx
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
import torch

from lib.bfs.study_damage import PUBLISHED_RECOVERY, WEIGHT_LISTS
from lib.bfs.transformer import BFSTransformer
from lib.book.live import SliderRange, manual_panel
from lib.book.plotting import PALETTE, finish, slider_over_steps
from lib.chapters.ch1 import damage_label, head_name


def vertex_label(index: int) -> str:
    """The study's name of the vertex at tensor index `index` (vertex v sits at index v - 1)."""
    return str(index + 1)


def graph_layout(graph: nx.Graph, seed: int = 0) -> dict[int, tuple[float, float]]:
    """Positions of `graph`'s vertices: each connected component laid out on its own (spring
    layout, `seed`), turned so that its longest extent runs up the page and scaled to edges of
    mean length 1, the components side by side from the largest, one unit apart. The figure's
    height then sets the scale on any screen (chapter 1's example graph, nearly a chain, lay
    across the page, and an isolated vertex pushed the rest into a corner, so that a phone's
    width squeezed seven vertices onto each other)."""
    position: dict[int, tuple[float, float]] = {}
    left = 0.0
    for nodes in sorted(nx.connected_components(graph), key=lambda c: (-len(c), min(c))):
        component = graph.subgraph(nodes)
        local = nx.spring_layout(component, seed=seed) if len(nodes) > 1 else {next(iter(nodes)): (0.0, 0.0)}
        names = list(local)
        xy = np.array([local[v] for v in names], dtype=float)
        xy -= xy.mean(axis=0)
        if len(names) > 1:
            (c, s), _ = np.linalg.svd(xy, full_matrices=False)[2]      # the longest extent's direction
            xy = xy @ np.array([[s, -c], [c, s]]).T                      # turned to point up the page
        lengths = [math.dist(xy[names.index(a)], xy[names.index(b)]) for a, b in component.edges]
        xy /= sum(lengths) / len(lengths) if lengths else 1.0
        xy[:, 0] += left - xy[:, 0].min()
        position.update({v: (float(x), float(y)) for v, (x, y) in zip(names, xy)})
        left = xy[:, 0].max() + 1.0
    return position


#: A vertex's marker in px: vertices a layout unit apart (`graph_layout`) stay apart on a phone,
#: where the example graph's unit is about 30 px.
VERTEX_SIZE = 24


def graph_figure(adjacency: torch.Tensor, distance_from_source: list[int], seed: int = 0) -> go.Figure:
    """Draw one graph; vertices reachable from vertex 1 are coloured by their BFS distance from it,
    the others grey (named in the legend), source and target ringed."""
    n = adjacency.shape[0]
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(torch.nonzero(torch.triu(adjacency, 1)).tolist())
    position = graph_layout(graph, seed)
    edge_x, edge_y = [], []
    for a, b in graph.edges:
        edge_x += [position[a][0], position[b][0], None]
        edge_y += [position[a][1], position[b][1], None]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=edge_x, y=edge_y, mode="lines", line={"color": "#999", "width": 2},
                             hoverinfo="skip", showlegend=False))
    reachable = [v for v in range(n) if distance_from_source[v] < n]
    unreachable = [v for v in range(n) if distance_from_source[v] >= n]
    ring = {"width": [4 if v in (0, 1) else 0 for v in range(n)], "color": PALETTE[1]}
    for vertices, colours, name in ((reachable, [distance_from_source[v] for v in reachable], None),
                                    (unreachable, "#8a8f98", "unreachable from 1")):
        if not vertices:
            continue
        marker = {"size": VERTEX_SIZE, "color": colours, "line": {"width": [ring["width"][v] for v in vertices],
                                                         "color": ring["color"]}}
        if name is None:
            marker.update(colorscale="Viridis", cmin=0, cmax=max(1, max(colours)),
                          colorbar={"title": {"text": "distance<br>from 1"}, "dtick": 1})
        fig.add_trace(go.Scatter(
            x=[position[v][0] for v in vertices], y=[position[v][1] for v in vertices],
            mode="markers+text", text=[vertex_label(v) for v in vertices],
            textfont={"color": "white", "size": 11, "shadow": "auto"},
            marker=marker, name=name or "reachable", showlegend=name is not None,
            hovertext=[f"vertex {vertex_label(v)}: " + (f"distance {distance_from_source[v]}" if name is None
                                                         else "unreachable") for v in vertices],
            hoverinfo="text"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x")
    return finish(fig, "Example graph (source 1 and target 2 ringed; colour = BFS distance from 1)", height=420)


def reach_slider_figure(reach: torch.Tensor) -> go.Figure:
    """Heatmap of which vertex reaches which after each layer, with a slider over layers."""
    labels = [vertex_label(v) for v in range(reach.shape[1])]
    traces = [
        [go.Heatmap(z=reach[layer].numpy(), x=labels, y=labels, zmin=0, zmax=1, colorscale="Blues",
                    colorbar={"title": {"text": "reach"}},
                    hovertemplate="vertex %{y} reaches %{x}: %{z:.3f}<extra></extra>")]
        for layer in range(reach.shape[0])
    ]
    step_labels = ["input"] + [str(layer + 1) for layer in range(reach.shape[0] - 1)]
    fig = slider_over_steps(traces, step_labels, slider_prefix="after layer: ")
    fig.update_xaxes(title_text="reached vertex", type="category")
    fig.update_yaxes(title_text="vertex token", type="category", autorange="reversed")
    return finish(fig, "Reach sets grow by one hop per layer", height=520)


def attention_figure(model: BFSTransformer, adjacency: torch.Tensor, layer: int, head: int) -> go.Figure:
    """Attention pattern (query token x key token) of one head of one layer on one graph."""
    with torch.no_grad():
        attention = model.run(adjacency.unsqueeze(0), keep_trace=True)["attention"][layer, 0, head]
    tokens = ["answer"] + [vertex_label(v) for v in range(adjacency.shape[0])]
    fig = go.Figure(go.Heatmap(z=attention.cpu().numpy(), x=tokens, y=tokens, zmin=0, zmax=1,
                               colorscale="Oranges", colorbar={"title": {"text": "weight"}},
                               hovertemplate="query %{y} -> key %{x}: %{z:.3f}<extra></extra>"))
    fig.update_xaxes(title_text="key token", type="category")
    fig.update_yaxes(title_text="query token", type="category", autorange="reversed")
    name = head_name(head, head == model.n_vertices)
    return finish(fig, f"Attention of {name} in layer {layer + 1}", height=460)


def recovery_slider_figure(records: list[dict]) -> go.Figure:
    """Recovery curves (held-out MSE vs retraining step), one slider step per perturbation scale."""
    scales = sorted({r["scale"] for r in records})
    modes = sorted({r["mode"] for r in records})
    traces_per_step = []
    for scale in scales:
        traces = []
        for index, mode in enumerate(modes):
            for draw, record in enumerate(r for r in records if r["scale"] == scale and r["mode"] == mode):
                steps, losses = zip(*record["curve"])
                # One legend entry per mode: its draws share the entry and toggle together.
                traces.append(go.Scatter(x=steps, y=[max(loss, 1e-12) for loss in losses], mode="lines+markers",
                                         name=mode, legendgroup=mode, showlegend=draw == 0,
                                         line={"color": PALETTE[index]},
                                         hovertemplate=f"{mode}: step %{{x}}, MSE %{{y:.3g}}<extra></extra>"))
        traces_per_step.append(traces)
    fig = slider_over_steps(traces_per_step, [f"{s:g}" for s in scales], slider_prefix="perturbation scale: ")
    fig.update_xaxes(title_text="retraining step")
    fig.update_yaxes(title_text="held-out MSE", type="log")
    return finish(fig, "Recovery after perturbation (move the slider to change the scale)", height=480)


#: The live slider of chapter 1: log10 of the perturbation scale.
SCALE_SLIDER = SliderRange(low=-4.0, high=1.0, step=0.25, start=-2.0)


def rerun_figure(rerun, log10_scale: float, mode: str, seed: int) -> go.Figure:
    """The live slider's view (chapter 1): perturb the model at scale 10**log10_scale in `mode`,
    retrain it (`lib.chapters.ch1.PerturbationRerun`), and draw its recovery curve; the title
    gives the held-out MSE right after the damage and after retraining."""
    record = rerun(log10_scale, mode, seed=seed)
    fig = recovery_slider_figure([record])
    fig.update_layout(title_text=f"{damage_label(record)}: held-out MSE {record['loss_before']:.3g} after "
                                 f"the damage, {record['loss_after']:.3g} after retraining")
    return fig


def scale_panel(rerun, modes: Sequence[str], seed: int) -> widgets.interactive:
    """Chapter 1's live panel: the scale slider, a menu of damage modes and the run button."""
    return manual_panel(lambda log10_scale, mode: rerun_figure(rerun, log10_scale, mode, seed),
                        log10_scale=SCALE_SLIDER.float_slider("log10 scale"),
                        mode=widgets.Dropdown(options=list(modes), description="damage"))


def recovery_summary_figure(records: list[dict]) -> go.Figure:
    """Held-out MSE right after damage and after retraining of every draw, against the perturbation scale."""
    fig = go.Figure()
    for index, mode in enumerate(sorted({r["mode"] for r in records})):
        runs = sorted((r for r in records if r["mode"] == mode), key=lambda r: r["scale"])
        scales = [r["scale"] for r in runs]
        # One marker per draw (several draws per scale), after damage hollow, after retraining filled.
        fig.add_trace(go.Scatter(x=scales, y=[max(r["loss_before"], 1e-12) for r in runs], name=f"{mode}: after damage",
                                 mode="markers", marker={"color": PALETTE[index], "symbol": "circle-open", "size": 9}))
        fig.add_trace(go.Scatter(x=scales, y=[max(r["loss_after"], 1e-12) for r in runs], name=f"{mode}: after retraining",
                                 mode="markers", marker={"color": PALETTE[index], "size": 7}))
    fig.update_xaxes(title_text="perturbation scale", type="log")
    fig.update_yaxes(title_text="held-out MSE", type="log")
    return finish(fig, "Loss before and after recovery, by perturbation scale", height=440)


def sharpness_figure(rows: list[dict]) -> go.Figure:
    """MSE against the construction's constants: the construction is exact in the limit."""
    fig = go.Figure()
    for index, knob in enumerate(sorted({r["knob"] for r in rows})):
        runs = sorted((r for r in rows if r["knob"] == knob), key=lambda r: r["value"])
        fig.add_trace(go.Scatter(x=[r["value"] for r in runs], y=[max(r["mse"], 1e-16) for r in runs],
                                 name=knob, mode="lines+markers", line={"color": PALETTE[index]}))
    fig.add_hline(y=1e-6, line_dash="dash")
    # On a log axis an annotation's y is log10 of the value: the label sits on its line, at the
    # left, where the curves are still far above it (at the right they cross it).
    fig.add_annotation(x=0, xref="x domain", y=-6, yref="y", text="the study's claim: 1e-6", showarrow=False,
                       xanchor="left", yanchor="bottom")
    fig.update_xaxes(title_text="value of the constant (the other kept at its default)", type="log")
    fig.update_yaxes(title_text="MSE against BFS (floored at 1e-16)", type="log")
    return finish(fig, "Errors vanish as the constants grow", height=420)


def study_protocol_figure(records: dict[str, list[dict]]) -> go.Figure:
    """The study's protocol (chapter 1): held-out MSE against Adam step for every retrained draw
    (top) and the same relative to right after the damage (bottom), one column per construction,
    each draw coloured by the weight list it hit, with the study's published curve."""
    names = list(records)
    fig = make_subplots(rows=2, cols=len(names), shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=[f"{name}'s construction" for name in names] + ["", ""][:len(names)])
    colours = dict(zip(WEIGHT_LISTS, PALETTE))
    shown_lists = set()
    for column, name in enumerate(names, start=1):
        for index, record in enumerate(records[name]):
            steps, losses = zip(*record["curve"])
            start = losses[0] if losses[0] > 0 else 1.0
            first = record["weight_list"] not in shown_lists
            shown_lists.add(record["weight_list"])
            label = (f"draw {index + 1}: {record['weight_list']}, {record['matrix']}"
                     + ("" if record["damage_had_effect"] else " (no effect)"))
            for row, values in ((1, [max(v, 1e-12) for v in losses]), (2, [v / start for v in losses])):
                fig.add_trace(go.Scatter(x=steps, y=values, mode="lines", name=record["weight_list"],
                                         legendgroup=record["weight_list"], showlegend=first and row == 1,
                                         hovertext=label, line={"color": colours[record["weight_list"]], "width": 1.5},
                                         opacity=0.8), row=row, col=column)
        last = max(step for record in records[name] for step, _ in record["curve"])
        shown = {s: v for s, v in PUBLISHED_RECOVERY.items() if s <= last}
        for row, values in ((1, list(shown.values())), (2, [v / PUBLISHED_RECOVERY[0] for v in shown.values()])):
            if row == 1 and name != "study":
                continue
            fig.add_trace(go.Scatter(x=list(shown), y=values, mode="markers",
                                     marker={"symbol": "x", "size": 11, "color": "black"},
                                     name="the study (one draw, training-batch loss)", legendgroup="study",
                                     showlegend=column == 1 and row == 1), row=row, col=column)
        fig.update_xaxes(title_text="Adam step (lr 1e-6, batch 512)", row=2, col=column)
        # every panel names its quantity, briefly: on a phone a panel's neighbour may not be beside it
        fig.update_yaxes(title_text="held-out MSE", type="log", row=1, col=column)
        fig.update_yaxes(title_text="MSE / MSE after damage", row=2, col=column)
    return finish(fig, "The study's damage and retraining on both constructions", height=720)


def damage_distribution_figure(records: list[dict], target: float) -> go.Figure:
    """The study's damage over every matrix (chapter 1): top, the share of draws at or below each
    MSE right after the damage (all draws, and per weight list); below, on the same MSE axis, every
    draw in the row of the matrix it hit (every matrix named by a tick of its own), so one sees
    which matrices reach the study's value. The study's value is a dashed line through both,
    named with its percentile in the legend (no note over the data)."""
    matrices = []      # the rows of the lower panel, one per matrix, in the order of the weight lists
    for name in WEIGHT_LISTS:
        for index in sorted({r["index"] for r in records if r["weight_list"] == name}):
            matrices.append(f"{name} {'v' if name.startswith('reach') else 'L'}{index + 1}")
    row_px, top_px, gap_px = 14, 260, 80
    plot_px = top_px + gap_px + row_px * max(len(matrices), 1)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[top_px, row_px * max(len(matrices), 1)],
                        vertical_spacing=gap_px / plot_px,
                        subplot_titles=["share of draws at or below an MSE", "every draw, by the matrix it hit"])
    floor = 1e-6

    def ecdf(values):
        ordered = sorted(max(v, floor) for v in values)
        return ordered, [(i + 1) / len(ordered) for i in range(len(ordered))]

    x, y = ecdf(r["mse"] for r in records)
    fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line={"color": "black", "width": 3, "shape": "hv"},
                             name="all draws", legendgroup="all"), row=1, col=1)
    for colour, name in zip(PALETTE, WEIGHT_LISTS):
        mine = [r for r in records if r["weight_list"] == name]
        x, y = ecdf(r["mse"] for r in mine)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line={"color": colour, "shape": "hv"}, name=name,
                                 legendgroup=name), row=1, col=1)
        labels = [f"{name} {'v' if name.startswith('reach') else 'L'}{r['index'] + 1}" for r in mine]
        fig.add_trace(go.Scatter(
            x=[max(r["mse"], floor) for r in mine], y=labels, mode="markers",
            marker={"color": colour, "size": 6, "opacity": 0.7}, name=name, legendgroup=name, showlegend=False,
            hovertext=[f"{r['weight_list']}, {r['matrix']}, noise draw {r['noise_draw'] + 1}: MSE {r['mse']:.3g}"
                       for r in mine],
            hoverinfo="text"), row=2, col=1)
    share = sum(r["mse"] <= target for r in records) / len(records)
    # the study's value: a dashed line through both panels, named in the legend
    fig.add_trace(go.Scatter(x=[target, target], y=[0, 1.02], mode="lines", line={"color": "grey", "dash": "dash"},
                             name=f"the study: {target:g} (percentile {100 * share:.1f})", legendgroup="study",
                             hoverinfo="skip"), row=1, col=1)
    fig.add_vline(x=target, line={"color": "grey", "dash": "dash"}, row=2, col=1)
    fig.update_xaxes(type="log")
    fig.update_xaxes(title_text="held-out MSE right after the damage", row=2, col=1)
    fig.update_yaxes(title_text="share of draws", range=[0, 1.02], row=1, col=1)
    fig.update_yaxes(title_text="matrix hit", type="category", tickmode="array", tickvals=matrices,
                     ticktext=matrices, categoryorder="array", categoryarray=matrices,
                     range=[len(matrices) - 0.5, -0.5],     # the first matrix at the top, no empty rows
                     tickfont={"size": 10}, row=2, col=1)
    return finish(fig, "The study's damage over every matrix: MSE right after the damage", height=plot_px + 110)
