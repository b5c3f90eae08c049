"""Figures of chapter 7 (the learned circuit): probes, reach radii, attention, ablation, patching."""

from __future__ import annotations

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib.book.ordered_series import MOST_ORDERED, REST_COLOUR, evenly_spaced, series_colours
from lib.book.plotting import PALETTE, finish, ordered_colours, slider_over_steps
from lib.paths.causal import Ablation, Patching
from lib.paths.layer_probes import FACTS, doubling_radii, one_hop_radii
from lib.paths.powered_probes import PoweredGrid
from lib.paths.radius_laws import LAWS, RadiusPoint, law_radius
from lib.paths.activations import Activations
from lib.paths.attention_fractions import EDGE_QUERY_CATEGORIES, TARGET_QUERY_CATEGORIES, AttentionFractions
from lib.paths.token_graphs import TokenGraphs


def _wrapped(fact: str) -> str:
    """A fact's name on two or three short lines (a subplot title that fits a phone's width)."""
    return fact.replace(" (", "<br>(").replace(", 1 and t", ",<br>1 and t")


def _index_labels(count: int) -> list[str]:
    return ["embedding"] + [f"after layer {layer}" for layer in range(1, count)]


def probe_auc_figure(grids: dict[str, PoweredGrid], random_init: dict[str, PoweredGrid]) -> go.Figure:
    """Held-out AUC against the residual index, one panel per fact (one above the other, so that
    every label reads on a phone) and one line per threshold k; the statistics probe's AUC at the
    same k as a dotted line of the same colour, the randomly initialised model's best AUC over its
    indices as a cross at its right. At most five thresholds, spread evenly over those probed
    (`lib.book.ordered_series`: more colours merge), named in the title; the legend lists them in
    order of k, and the rival's and the random model's marks in grey (each drawn in its k's colour)."""
    facts = [fact for fact in FACTS if fact in grids]
    fig = make_subplots(rows=len(facts), cols=1, subplot_titles=[_wrapped(fact) for fact in facts], vertical_spacing=0.06)
    every_k = sorted({k for grid in grids.values() for k in grid.ks})
    drawn = evenly_spaced(every_k, MOST_ORDERED)
    colours = dict(zip(drawn, series_colours(len(drawn))))
    shown: set[int] = set()
    for row, fact in enumerate(facts, start=1):
        grid = grids[fact]
        indices = [str(index) for index in range(grid.auc.shape[0])]
        for column, k in enumerate(grid.ks):
            if k not in colours:
                continue
            colour = colours[k]
            fig.add_trace(go.Scatter(x=indices, y=grid.auc[:, column].tolist(), mode="lines+markers",
                                     name=f"k = {k}", legendgroup=f"k = {k}", showlegend=k not in shown,
                                     legendrank=100 + k,
                                     line={"color": colour},
                                     hovertemplate=f"k = {k}, index %{{x}}: AUC %{{y:.3f}}<extra></extra>"),
                          row=row, col=1)
            shown.add(k)
            fig.add_trace(go.Scatter(x=[indices[0], indices[-1]], y=[float(grid.rival_auc[column])] * 2,
                                     mode="lines", name="statistics probe", legendgroup="rival", showlegend=False,
                                     line={"color": colour, "dash": "dot", "width": 1},
                                     hovertemplate=f"statistics probe, k = {k}: AUC %{{y:.3f}}<extra></extra>"),
                          row=row, col=1)
            if fact in random_init and k in random_init[fact].ks:
                best = float(random_init[fact].auc[:, random_init[fact].ks.index(k)].nan_to_num(0).max())
                fig.add_trace(go.Scatter(x=[indices[-1]], y=[best], mode="markers", name="random init",
                                         legendgroup="random", showlegend=False,
                                         marker={"color": colour, "symbol": "x", "size": 9},
                                         hovertemplate=f"random init, k = {k}: best AUC %{{y:.3f}}<extra></extra>"),
                              row=row, col=1)
        lowest = min(float(grid.auc.nan_to_num(1.0).min()), float(grid.rival_auc.nan_to_num(1.0).min()))
        fig.update_yaxes(title_text="AUC", range=[min(0.45, lowest - 0.03), 1.02], row=row, col=1)
        fig.update_xaxes(type="category", row=row, col=1)
    # what the dotted lines and crosses are, in the legend in grey: each is drawn in its k's colour
    for name, group, style in (
            ("statistics probe at each k (dotted)", "rival", {"mode": "lines", "line": {"dash": "dot"}}),
            ("random init, best index (x)", "random", {"mode": "markers", "marker": {"symbol": "x"}})):
        fig.add_trace(go.Scatter(
            x=[None], y=[None], name=name, legendgroup=group, legendrank=1000, hoverinfo="skip",
            **{key: {**value, "color": REST_COLOUR} for key, value in style.items() if key != "mode"},
            mode=style["mode"]), row=1, col=1)
    fig.update_xaxes(title_text="residual index (0: embedding, l: after layer l)", row=len(facts), col=1)
    fig.update_annotations(font_size=12)
    which = "" if drawn == every_k else f" (k = {', '.join(map(str, drawn))} of {every_k[0]} to {every_k[-1]})"
    return finish(fig, f"What a linear probe reads after each layer (held-out AUC){which}", height=330 * len(facts))


def law_figure(points: list[RadiusPoint], caps: dict[str, int]) -> go.Figure:
    """Measured reach radii against the layer they were read after (one panel per fact; jittered
    markers per model depth), beside the three laws of `lib.paths.radius_laws` (capped at the
    largest k probed)."""
    facts = [fact for fact in FACTS if any(p.fact == fact for p in points)]
    fig = make_subplots(rows=len(facts), cols=1, subplot_titles=[_wrapped(fact) for fact in facts], vertical_spacing=0.08)
    depths = sorted({p.depth for p in points})
    colours = dict(zip(depths, PALETTE))
    dashes = dict(zip(LAWS, ("solid", "dash", "dot")))
    for row, fact in enumerate(facts, start=1):
        mine = [p for p in points if p.fact == fact]
        top = max(p.layer for p in mine)
        for law in LAWS:
            layers = list(range(top + 1))
            fig.add_trace(go.Scatter(x=layers, y=[law_radius(law, layer, caps[fact]) for layer in layers],
                                     mode="lines", name=law, legendgroup=law, showlegend=row == 1,
                                     line={"color": PALETTE[7], "dash": dashes[law], "width": 1.5}),
                          row=row, col=1)
        for depth in depths:
            chosen = [p for p in mine if p.depth == depth]
            offset = (depths.index(depth) - (len(depths) - 1) / 2) * 0.12
            fig.add_trace(go.Scatter(x=[p.layer + offset for p in chosen], y=[p.radius for p in chosen],
                                     mode="markers", name=f"{depth} layers", legendgroup=f"{depth} layers",
                                     showlegend=row == 1, marker={"color": colours[depth], "size": 8},
                                     customdata=[p.seed for p in chosen],
                                     hovertemplate=f"{depth} layers, seed %{{customdata}}: radius %{{y}} after "
                                                   "layer %{x:.0f}<extra></extra>"), row=row, col=1)
        fig.update_yaxes(title_text="radius", row=row, col=1)
    fig.update_xaxes(title_text="layer l", row=len(facts), col=1)
    fig.update_annotations(font_size=12)
    return finish(fig, "Reach radius after each layer against three laws", height=330 * len(facts))


def reach_radius_figure(radii: dict[int, dict[str, list[int | None]]], largest: dict[str, int],
                        random_init: dict[str, list[int | None]] | None = None) -> go.Figure:
    """Per fact, the stated radius after each layer (a gap where it is disputed), for models of
    several depths (and a randomly initialised one), beside one hop per layer (the hand-built
    model) and doubling per layer; `largest` caps each fact's lines at its largest k probed."""
    fig = make_subplots(rows=1, cols=len(FACTS), subplot_titles=[fact.replace(" (", "<br>(") for fact in FACTS],
                        shared_yaxes=True, horizontal_spacing=0.04)
    colours = ordered_colours(len(radii))
    widest = max(radii)
    for col, fact in enumerate(FACTS, start=1):
        layers = list(range(widest + 1))
        fig.add_trace(go.Scatter(x=layers, y=one_hop_radii(widest, largest[fact]), mode="lines",
                                 line={"color": "grey", "dash": "dot"}, name="one hop per layer (hand-built)",
                                 legendgroup="hop", showlegend=col == 1), row=1, col=col)
        fig.add_trace(go.Scatter(x=layers, y=doubling_radii(widest, largest[fact]), mode="lines",
                                 line={"color": "grey", "dash": "dash"}, name="doubling per layer",
                                 legendgroup="double", showlegend=col == 1), row=1, col=col)
        if random_init is not None:
            fig.add_trace(go.Scatter(x=list(range(len(random_init[fact]))), y=random_init[fact], mode="lines+markers",
                                     line={"color": "black", "width": 1}, marker={"symbol": "x"},
                                     name="random initialisation", legendgroup="random", showlegend=col == 1),
                          row=1, col=col)
        for colour, (depth, by_fact) in zip(colours, sorted(radii.items())):
            fig.add_trace(go.Scatter(x=list(range(depth + 1)), y=by_fact[fact], mode="lines+markers",
                                     line={"color": colour}, name=f"{depth}-layer model", legendgroup=str(depth),
                                     showlegend=col == 1), row=1, col=col)
    fig.update_xaxes(title_text="residual index", dtick=1)
    fig.update_yaxes(title_text="reach radius", row=1, col=1)
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    fig.update_annotations(font_size=11)
    return finish(fig, "How far each layer has searched, by model depth", height=480)


def _head_names(fractions: torch.Tensor) -> list[str]:
    layers, heads = fractions.shape[:2]
    return [f"L{layer + 1}H{head + 1}" for layer in range(layers) for head in range(heads)]


def attention_fraction_figure(fractions: AttentionFractions) -> go.Figure:
    """Share of attention by key category for every head, from edge tokens (left) and from the
    target token (right); the black marks are what uniform attention would give."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("queries at edge tokens", "query at the target token"),
                        horizontal_spacing=0.08)
    panels = ((fractions.from_edges, fractions.edge_chance, EDGE_QUERY_CATEGORIES),
              (fractions.from_target, fractions.target_chance, TARGET_QUERY_CATEGORIES))
    # One colour and one legend entry per category, whichever panel shows it ("itself" is in both).
    categories = list(dict.fromkeys(EDGE_QUERY_CATEGORIES + TARGET_QUERY_CATEGORIES))
    colours = dict(zip(categories, series_colours(len(categories), most=len(categories))))
    shown = set()
    for col, (shares, chance, categories) in enumerate(panels, start=1):
        heads = _head_names(shares)
        for index, category in enumerate(categories):
            fig.add_trace(go.Bar(x=heads, y=shares[..., index].flatten().tolist(), name=category,
                                 marker_color=colours[category], legendgroup=category,
                                 showlegend=category not in shown,
                                 hovertemplate=f"{category}: %{{y:.3f}}<extra>%{{x}}</extra>"), row=1, col=col)
            fig.add_trace(go.Scatter(x=heads, y=[float(chance[index])] * len(heads), mode="markers",
                                     marker={"symbol": "line-ew-open", "size": 14, "color": "black"},
                                     name="uniform attention", legendgroup="chance",
                                     showlegend=col == 1 and index == 0,
                                     hovertemplate=f"uniform: %{{y:.3f}}<extra>{category}</extra>"), row=1, col=col)
            shown.add(category)
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": -0.25})
    fig.update_yaxes(title_text="share of attention", range=[0, 1], row=1, col=1)
    fig.update_yaxes(range=[0, 1], row=1, col=2)
    return finish(fig, "Where each head looks (L = layer, H = head)", height=480)


def token_names(graphs: TokenGraphs, row: int) -> list[str]:
    """Names of one graph's non-padding tokens: "a-b" for edges, "t=v" for the query."""
    edges = [f"{a}-{b}" for a, b, real in zip(graphs.low[row].tolist(), graphs.high[row].tolist(),
                                             graphs.is_edge[row].tolist()) if real]
    return edges + [f"t={int(graphs.target[row])}"]


def example_figure(activations: Activations, graphs: TokenGraphs, row: int, hand_built_reach: torch.Tensor
                   ) -> go.Figure:
    """One graph, one slider step per layer: each head's attention among the graph's tokens,
    beside the hand-built model's reach sets after the same layer (`hand_built_reach`:
    (layers + 1, n, n), `lib.bfs.transformer.reach_by_layer` on the graph with t relabelled 2)."""
    keep = torch.cat([graphs.is_edge[row], torch.tensor([True])])
    names = token_names(graphs, row)
    target = int(graphs.target[row])
    # Undo the relabelling (vertex 2 of the hand-built graph is t, and t is 2) for the labels.
    vertex_names = [str(target if v == 2 else 2 if v == target else v) for v in range(1, hand_built_reach.shape[1] + 1)]
    layers, heads = activations.attention.shape[0], activations.attention.shape[2]
    titles = [f"head {head + 1}: query (row) to key (column)" for head in range(heads)] + \
        ["hand-built: vertex (row) reaches (column)"]
    fig = make_subplots(rows=1, cols=heads + 1, subplot_titles=titles, horizontal_spacing=0.09)
    steps = []
    for layer in range(layers):
        traces = []
        for head in range(heads):
            weights = activations.attention[layer, row, head][keep][:, keep]
            traces.append(go.Heatmap(z=weights.numpy(), x=names, y=names, zmin=0, zmax=1, colorscale="Oranges",
                                     showscale=False, xaxis=f"x{head + 1 if head else ''}",
                                     yaxis=f"y{head + 1 if head else ''}",
                                     hovertemplate="%{y} attends to %{x}: %{z:.3f}<extra></extra>"))
        traces.append(go.Heatmap(z=hand_built_reach[layer + 1].numpy(), x=vertex_names, y=vertex_names,
                                 zmin=0, zmax=1, colorscale="Blues", showscale=False,
                                 xaxis=f"x{heads + 1}", yaxis=f"y{heads + 1}",
                                 hovertemplate="vertex %{y} reaches %{x}: %{z:.2f}<extra></extra>"))
        steps.append(traces)
    slider_over_steps(steps, [str(layer + 1) for layer in range(layers)], slider_prefix="layer: ", figure=fig)
    fig.update_xaxes(type="category", tickangle=-60)
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_annotations(font_size=12)
    return finish(fig, f"Attention of the trained model and reach of the hand-built one on one graph "
                       f"(d(1, {target}) = {int(graphs.distance[row])})", height=520)


def ablation_figure(ablation: Ablation, unreachable_label: int) -> go.Figure:
    """MSE per true distance with each component replaced by its mean output (log colour)."""
    columns = [("unreachable" if label == unreachable_label else f"d = {label}") for label in ablation.labels]
    fig = go.Figure(go.Heatmap(
        z=torch.log10(ablation.loss.clamp_min(1e-6)).numpy(), x=columns, y=list(ablation.components),
        customdata=ablation.loss.numpy(), colorscale="Magma", reversescale=True,
        colorbar={"title": {"text": "log10 MSE"}},
        hovertemplate="%{y}, %{x}: MSE %{customdata:.3g}<extra></extra>"))
    fig.update_xaxes(title_text="true distance", type="category")
    fig.update_yaxes(type="category", autorange="reversed")
    return finish(fig, "Loss per distance with one component mean-ablated", height=max(360, 24 * len(ablation.components)))


def patching_figure(patching: Patching) -> go.Figure:
    """Slope of the prediction's shift on the donor-recipient label difference, per residual
    index: the distance probes' subspace, random subspaces of its dimension, the whole token."""
    count = len(patching.probe)
    # Short tick labels keep the plot wide at phone width; the axis title says what they mean.
    indices = [str(layer) + ("*" if layer == count else "") for layer in range(1, count + 1)]
    random = patching.random
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=indices, y=patching.token.tolist(), mode="lines+markers", name="whole target token",
                             line={"color": PALETTE[7]}))
    fig.add_trace(go.Scatter(x=indices, y=patching.probe.tolist(), mode="lines+markers",
                             name=f"distance probes' subspace ({patching.dimension} dimensions)",
                             line={"color": PALETTE[1]}))
    fig.add_trace(go.Scatter(x=indices, y=random.mean(dim=1).tolist(), mode="lines+markers",
                             name=f"random subspaces (mean of {random.shape[1]}, bars: min to max)",
                             line={"color": PALETTE[0]},
                             error_y={"type": "data", "symmetric": False,
                                      "array": (random.max(dim=1).values - random.mean(dim=1)).tolist(),
                                      "arrayminus": (random.mean(dim=1) - random.min(dim=1).values).tolist()}))
    fig.update_xaxes(title_text="patched after layer (* the last: read by the readout)", type="category")
    fig.update_yaxes(title_text="shift of prediction per unit of label difference")
    fig.update_layout(legend={"orientation": "h", "y": -0.3})
    return finish(fig, f"Patching a donor's distance into another graph ({patching.pairs:,} pairs)", height=440)


def confusion_figure(prediction: torch.Tensor, labels: torch.Tensor, hand_built: torch.Tensor,
                     unreachable_label: int) -> go.Figure:
    """Rounded predictions against true labels for the trained and the hand-built model."""
    values = sorted({int(v) for v in labels.unique()})
    names = ["unreachable" if v == unreachable_label else str(v) for v in values]
    top = max(values)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("trained model", "hand-built model"),
                        horizontal_spacing=0.12)
    for col, predicted in enumerate((prediction, hand_built), start=1):
        rounded = predicted.round().clamp(0, top).long()
        columns = list(range(top + 1))
        counts = torch.zeros(len(values), len(columns))
        for i, value in enumerate(values):
            counts[i] = torch.bincount(rounded[labels == value], minlength=top + 1)[:top + 1].float()
        share = counts / counts.sum(dim=1, keepdim=True)
        fig.add_trace(go.Heatmap(z=share.numpy(), x=[str(c) for c in columns], y=names, zmin=0, zmax=1,
                                 colorscale="Blues", coloraxis="coloraxis", customdata=counts.numpy(),
                                 hovertemplate="true %{y}, predicted %{x}: %{customdata:.0f} graphs<extra></extra>"),
                      row=1, col=col)
    fig.update_layout(coloraxis={"colorscale": "Blues", "cmin": 0, "cmax": 1,
                                 "colorbar": {"title": {"text": "share<br>of row"}}})
    fig.update_xaxes(title_text="rounded prediction", type="category")
    fig.update_yaxes(title_text="true distance", type="category", autorange="reversed", row=1, col=1)
    fig.update_yaxes(type="category", autorange="reversed", row=1, col=2)
    return finish(fig, "Predictions by true distance", height=400)


__all__ = ["ablation_figure", "attention_fraction_figure", "confusion_figure", "example_figure",
           "law_figure", "patching_figure", "probe_auc_figure", "reach_radius_figure", "token_names"]
