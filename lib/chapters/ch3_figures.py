"""Figures of chapter 3: fine-tuning curves, the five-test comparison, length generalization.

Confusion histograms come from `lib.book.confusion` (shared with chapter 2); the functions
here add what chapter 3 needs on top: the fine-tuning loss by label, the test table as bars
beside the published values, the error by kind of target, buttons over the five tests, and the
(size, distance) views of the length-generalization study.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.paths.generalization_tests import TARGET_KINDS, GeneralizationResult
from lib.paths.length_generalization import Cell, LengthSplit
from lib.paths.training import TrainingLog
from lib.book.ordered_series import MOST_ORDERED, evenly_spaced, series_colours
from lib.book.plotting import PALETTE, finish, slider_over_steps
from lib.book.confusion import confusion_figure, length_name
from lib.paths.target_kind_scores import TargetKindScores


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _tests_down_the_side(fig: go.Figure, titles: Sequence[str], width: int = 16) -> None:
    """The tests as rows, top to bottom in the book's order, each name on short lines beside its
    bars: every name stays readable at a phone's width, where names under vertical bars collide
    (and plotly then drops some)."""
    fig.update_yaxes(tickmode="array", tickvals=list(titles), autorange="reversed", automargin=True,
                     ticktext=["<br>".join(textwrap.wrap(title, width)) for title in titles])


def finetune_loss_figure(log: TrainingLog, unreachable_label: int, *, loss_before: float,
                         loss_after: float, published_before: float, published_after: float) -> go.Figure:
    """Fine-tuning loss over steps, overall and by true label (at most four labels, spread
    evenly: `lib.book.ordered_series`), with the held-out losses marked.

    Args:
        log: the fine-tuning run's log (`lib.paths.training.TrainingLog`).
        unreachable_label: the label of unreachable targets (for legend names).
        loss_before, loss_after: held-out MSE before and after fine-tuning (this run).
        published_before, published_after: the post's values, drawn as dotted lines.
    """
    fig = go.Figure()
    losses = log.loss_by_length_tensor()
    counts = [sum(row[k] for row in log.count_by_length) for k in range(losses.shape[1])]
    # at most four labels: the fifth colour (black) is the overall line's
    labels = evenly_spaced([k for k in range(losses.shape[1]) if counts[k] > 0], MOST_ORDERED - 1)
    for label, colour in zip(labels, series_colours(len(labels))):
        fig.add_trace(go.Scatter(x=log.steps, y=losses[:, label].tolist(), mode="lines", connectgaps=True,
                                 name=length_name(label, unreachable_label),
                                 line={"color": colour, "width": 1.2}))
    fig.add_trace(go.Scatter(x=log.steps, y=log.loss, mode="lines", name="all labels",
                             line={"color": "black", "width": 3}))
    # What the marks and lines are is said in the legend, with their values: no note over the curves.
    fig.add_trace(go.Scatter(x=[0, log.steps[-1]], y=[loss_before, loss_after], mode="markers",
                             name=f"held-out MSE (this run): before {loss_before:.3g}, after {loss_after:.3g}",
                             text=[f"before {loss_before:.3g}", f"after {loss_after:.3g}"],
                             hovertemplate="%{text}<extra></extra>",
                             marker={"symbol": "diamond", "size": 11, "color": "black"}))
    for value, text, dash in ((published_before, "before", "dot"), (published_after, "after", "dash")):
        fig.add_trace(go.Scatter(x=[0, log.steps[-1]], y=[value, value], mode="lines",
                                 name=f"published, {text} fine-tuning: {value} (other scale)",
                                 line={"color": "grey", "dash": dash, "width": 1.5}))
    fig.update_yaxes(type="log", title="training loss (MSE)")
    fig.update_xaxes(title="fine-tuning step")
    return finish(fig, "Fine-tuning on on-path targets in small graphs", height=460)


def generalization_bars_figure(before: Sequence[GeneralizationResult], after: Sequence[GeneralizationResult],
                               scale_text: str) -> go.Figure:
    """MSE of the five tests: this run before and after fine-tuning, and the published values.

    The published MSEs come from another scale (graphs up to 15 vertices, unreachable label
    15), so they sit in their own panel: compare the pattern across tests, not the heights.
    """
    titles = [test.test.title for test in after]
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.16,
                        subplot_titles=[f"this run ({scale_text})", "published (graphs up to 15 vertices)"])
    for row, (name, values, colour) in [
            (1, ("pre-trained model", [r.mse for r in before], _colour(1))),
            (1, ("fine-tuned model", [r.mse for r in after], _colour(0))),
            (2, ("published in the post", [r.test.published_mse for r in after], _colour(2))),
            # reddish purple, not orange: orange lies beside the vermillion above on a dark page
            (2, ("authors' 11-layer rerun", [r.test.authors_11_layer_mse for r in after], _colour(3)))]:
        fig.add_trace(go.Bar(y=titles, x=values, name=name, orientation="h", marker_color=colour,
                             hovertemplate="%{y}: MSE %{x:.3g}<extra>" + name + "</extra>"), row=row, col=1)
    fig.update_xaxes(type="log", title="MSE", row=2, col=1)
    fig.update_xaxes(type="log", row=1, col=1)
    _tests_down_the_side(fig, titles)
    fig.update_layout(barmode="group")
    return finish(fig, "The five generalization tests", height=720)


def error_by_target_kind_figure(results: Sequence[GeneralizationResult]) -> go.Figure:
    """MSE of each test split by where the target sits (vertex 2, on the 1-2 path, off it, unreachable)."""
    fig = go.Figure()
    titles = [r.test.title for r in results]
    scores = [TargetKindScores.from_by_kind(r.by_kind).in_order() for r in results]
    for index, kind in enumerate(TARGET_KINDS):
        # An absent kind has MSE NaN (no bar) and count 0.
        values = [kinds[index].mse for kinds in scores]
        counts = [kinds[index].count for kinds in scores]
        fig.add_trace(go.Bar(y=titles, x=values, name=kind, orientation="h", marker_color=_colour(index),
                             customdata=counts,
                             hovertemplate="%{y}<br>" + kind + ": MSE %{x:.3g} on %{customdata} graphs"
                                           "<extra></extra>"))
    fig.update_xaxes(type="log", title="MSE of the fine-tuned model")
    _tests_down_the_side(fig, titles)
    fig.update_layout(barmode="group")
    return finish(fig, "Where the fine-tuned model fails: error by kind of target", height=560)


#: Px a button of `confusion_by_test_figure` takes, one under another above the plot; its colours,
#: the same in both of the page's modes (dark text on grey; plotly draws the shown test's button
#: near white), since the book's colour modes do not reach buttons.
BUTTON_PX = 34
BUTTON_STYLE = {"bgcolor": "#d5dbe3", "bordercolor": "#8a96a6", "font": {"color": "#222832", "size": 12}}


def confusion_by_test_figure(results: Sequence[GeneralizationResult], n_labels: int) -> go.Figure:
    """The confusion histogram (`lib.book.confusion`) of each test, one button per test above the
    plot, each with the test's whole name: a slider's rail showed only the first and last of the
    five names (plotly thins colliding step labels), the buttons show every one at any width."""
    traces = [[confusion_figure(r.predictions, r.labels, n_labels).data[0]] for r in results]
    fig = slider_over_steps(traces, [r.test.title for r in results], slider_prefix="test: ")
    steps = fig.layout.sliders[0].steps
    fig.layout.sliders = ()
    fig.update_layout(updatemenus=[{
        "type": "buttons", "direction": "down", "active": 0, "showactive": True,
        "x": 0, "xanchor": "left", "y": 1, "yanchor": "bottom", "pad": {"b": 12, "t": 0, "l": 0, "r": 0},
        **BUTTON_STYLE,
        "buttons": [{"label": step.label, "method": step.method, "args": step.args} for step in steps]}])
    fig.update_xaxes(title="predicted distance (rounded)", dtick=1, range=[-0.5, n_labels - 0.5])
    fig.update_yaxes(title="true distance", dtick=1, range=[-0.5, n_labels - 0.5])
    above = BUTTON_PX * len(steps) + 12
    fig = finish(fig, "Predicted against true distance on each test (fine-tuned model)",
                 height=600 + above, width=640)
    fig.update_layout(margin={"t": 60 + above})
    return fig


#: The training range's outline and its label: vermilion, which Viridis never takes and which reads
#: on the page's white (white did not: the label sits above the cells, on the page).
OUTLINE = PALETTE[1]


def length_heatmap_figure(cells: Sequence[Cell], split: LengthSplit) -> go.Figure:
    """log10 MSE in every (graph size, true distance) cell, written in the cell to one decimal at
    10 px (four characters fit a phone's cells, where plotly shrank "7.4e-05" to 5 px); the MSE
    itself on hover; the training region is outlined."""
    sizes = list(range(split.n_min, split.n_test_max + 1))
    distances = list(range(1, max(c.distance for c in cells) + 1))
    grid = [[None] * len(sizes) for _ in distances]
    mse = [[""] * len(sizes) for _ in distances]
    for c in cells:
        grid[c.distance - 1][c.n_vertices - split.n_min] = math.log10(max(c.mse, 1e-6))
        mse[c.distance - 1][c.n_vertices - split.n_min] = f"{c.mse:.2g}"
    fig = go.Figure(go.Heatmap(
        z=grid, x=sizes, y=distances, customdata=mse, texttemplate="%{z:.1f}", textfont={"size": 10},
        colorscale="Viridis",
        colorbar={"title": "log10 MSE"},
        hovertemplate="n = %{x}, distance %{y}: MSE %{customdata} (log10 %{z:.2f})<extra></extra>"))
    fig.add_shape(type="rect", x0=split.n_min - 0.5, x1=split.n_train_max + 0.5, y0=0.5,
                  y1=split.distance_train_max + 0.5, line={"color": OUTLINE, "width": 3})
    fig.add_annotation(x=split.n_min - 0.4, y=split.distance_train_max + 0.5, text="training sizes",
                       showarrow=False, xanchor="left", yanchor="bottom", font={"color": OUTLINE})
    fig.update_xaxes(title="vertices in the graph", dtick=1)
    fig.update_yaxes(title="true distance from 1 to 2", dtick=1)
    return finish(fig, "log10 MSE by graph size and true distance (outlined: the training range)",
                  height=520, width=720)


def loss_by_size_figure(cells: Sequence[Cell], split: LengthSplit) -> go.Figure:
    """MSE against graph size, one line per true distance for at most `MOST_ORDERED` distances
    spread evenly from the shortest to the longest, the longest training distance among them
    (every distance is in `length_heatmap_figure`); the largest training size is marked."""
    every = sorted({c.distance for c in cells})
    distances = evenly_spaced(every, MOST_ORDERED, keep=[split.distance_train_max])
    fig = go.Figure()
    for distance, colour in zip(distances, series_colours(len(distances))):
        row = sorted((c for c in cells if c.distance == distance), key=lambda c: c.n_vertices)
        dash = "solid" if split.distance_seen(distance) else "dash"
        fig.add_trace(go.Scatter(x=[c.n_vertices for c in row], y=[c.mse for c in row],
                                 mode="lines+markers", name=f"distance {distance}",
                                 line={"color": colour, "dash": dash},
                                 customdata=[c.count for c in row],
                                 hovertemplate="n = %{x}: MSE %{y:.3g} on %{customdata} graphs<extra></extra>"))
    fig.add_vline(x=split.n_train_max + 0.5, line_dash="dot", line_color="grey",
                  annotation_text="largest training graph", annotation_position="top left")
    fig.update_yaxes(type="log", title="MSE")
    fig.update_xaxes(title="vertices in the graph", dtick=1)
    which = "" if distances == every else f"distances {', '.join(map(str, distances))} of {every[0]} to {every[-1]}; "
    return finish(fig, f"Loss against graph size, one line per true distance ({which}dashed: longer than "
                       "any training path)", height=460)


def loss_by_distance_figure(cells: Sequence[Cell], split: LengthSplit) -> go.Figure:
    """MSE and mean prediction against true distance, one line per graph size for at most
    `MOST_ORDERED` sizes spread evenly from the smallest to the largest, the largest training
    size among them (every size is in `length_heatmap_figure`)."""
    every = sorted({c.n_vertices for c in cells})
    sizes = evenly_spaced(every, MOST_ORDERED, keep=[split.n_train_max])
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=["MSE", "mean prediction"])
    for n, colour in zip(sizes, series_colours(len(sizes))):
        row = sorted((c for c in cells if c.n_vertices == n), key=lambda c: c.distance)
        seen = split.size_seen(n)
        style = {"color": colour, "dash": "solid" if seen else "dash"}
        name = f"n = {n}" + ("" if seen else " (larger)")
        fig.add_trace(go.Scatter(x=[c.distance for c in row], y=[c.mse for c in row], mode="lines+markers",
                                 name=name, legendgroup=str(n), line=style), row=1, col=1)
        fig.add_trace(go.Scatter(x=[c.distance for c in row], y=[c.mean_prediction for c in row],
                                 mode="lines+markers", name=name, legendgroup=str(n), showlegend=False,
                                 line=style), row=1, col=2)
    largest = max(c.distance for c in cells)
    fig.add_trace(go.Scatter(x=[1, largest], y=[1, largest], mode="lines", name="prediction = truth",
                             line={"color": "black", "dash": "dot"}), row=1, col=2)
    for col in (1, 2):
        fig.add_vline(x=split.distance_train_max + 0.5, line_dash="dot", line_color="grey", row=1, col=col)
        fig.update_xaxes(title="true distance", dtick=1, row=1, col=col)
    fig.update_yaxes(type="log", title="MSE", row=1, col=1)
    fig.update_yaxes(title="mean predicted distance", row=1, col=2)
    which = "" if sizes == every else f"n = {', '.join(map(str, sizes))} of {every[0]} to {every[-1]}; "
    return finish(fig, f"Loss and prediction against true distance ({which}dotted line: longest training path)",
                  height=480)


__all__ = [
    "confusion_by_test_figure", "error_by_target_kind_figure", "finetune_loss_figure",
    "generalization_bars_figure", "length_heatmap_figure", "loss_by_distance_figure",
    "loss_by_size_figure",
]
