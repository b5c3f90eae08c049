"""Figures of chapter 2: loss curves, the transition study's figure, confusion histograms, schedule.

Each function takes the numbers a `lib.paths.training.TrainingRun` logged and returns a plotly
figure in the book's style (`lib.book.plotting.finish`). The confusion and label histograms that
chapter 3 draws too are in `lib.book.confusion`.
"""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib.book.confusion import confusion_figure, length_name
from lib.book.live import SliderRange, manual_panel
from lib.book.ordered_series import MOST_ORDERED, REST_COLOUR, evenly_spaced, series_colours
from lib.book.plotting import PALETTE, finish, slider_over_steps
from lib.paths.phase_transitions import Drop
from lib.paths.training import TrainingLog
from lib.paths.transition_study import TransitionCurves


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def total_loss_figure(log: TrainingLog, *, published_final_loss: float | None = None) -> go.Figure:
    """Training loss (mean over each logging window) against steps, log scale."""
    fig = go.Figure(go.Scatter(x=log.steps, y=log.loss, mode="lines", name="this run",
                               line={"color": _colour(0)}))
    if published_final_loss is not None:
        # A trace rather than add_hline: hline annotations land in the wrong place on log axes.
        fig.add_trace(go.Scatter(x=[log.steps[0], log.steps[-1]], y=[published_final_loss] * 2,
                                 mode="lines", line={"color": _colour(7), "dash": "dot"},
                                 name=f"published final loss ({published_final_loss})"))
    fig.update_yaxes(type="log", title="training loss (MSE)")
    fig.update_xaxes(title="step")
    return finish(fig, "Training loss")


def loss_by_length_figure(log: TrainingLog, drops: dict[int, Drop], *, unreachable_label: int,
                          lengths: Sequence[int] | None = None, log_steps: bool = True) -> go.Figure:
    """The main run's loss of each path length over steps (at most `MOST_ORDERED` lengths, spread
    evenly), detected drops marked.

    Args:
        log: the run's log.
        drops: {length: its drop} from `lib.paths.phase_transitions.detect_drops`.
        unreachable_label: label of unreachable targets (named in the legend).
        lengths: which labels to draw (default: the keys of `drops`).
        log_steps: logarithmic step axis, which spreads out the early steps.
    """
    losses = log.loss_by_length_tensor()
    lengths = evenly_spaced(sorted(drops) if lengths is None else list(lengths), MOST_ORDERED)
    fig = go.Figure()
    for length, colour in zip(lengths, series_colours(len(lengths))):
        curve = losses[:, length].tolist()
        fig.add_trace(go.Scatter(x=log.steps, y=curve, mode="lines", connectgaps=True,
                                 name=length_name(length, unreachable_label),
                                 legendgroup=str(length), line={"color": colour, "width": 1.6}))
        drop = drops.get(length)
        if drop is not None and drop.dropped:
            fig.add_trace(_drop_marker(drop, curve[log.steps.index(drop.step)], colour, length, unreachable_label))
    fig.update_yaxes(type="log", title="training loss of examples of this length")
    fig.update_xaxes(title="step" + (" (log scale)" if log_steps else ""),
                     type="log" if log_steps else "linear")
    return finish(fig, _with_diamonds(fig, "Loss by true path length", "detected drops", "no drop detected"), height=480)


def _with_diamonds(fig: go.Figure, title: str, meaning: str, none: str) -> str:
    """`title` with "(diamonds: `meaning`)" when the figure draws a diamond, else with "(`none`)":
    a title never promises a mark that is not drawn."""
    drawn = any(getattr(trace.marker, "symbol", None) == "diamond" for trace in fig.data
                if trace.type == "scatter")
    return f"{title} ({'diamonds: ' + meaning if drawn else none})"


def _drop_marker(drop: Drop, value: float, colour: str, length: int, unreachable_label: int,
                 name: str = "") -> go.Scatter:
    return go.Scatter(
        x=[drop.step], y=[value], mode="markers", legendgroup=str(length), showlegend=False,
        marker={"symbol": "diamond", "size": 11, "color": colour, "line": {"color": "black", "width": 1}},
        hovertemplate=f"{length_name(length, unreachable_label)}{name}: drop at step {drop.step}, "
                      f"{drop.decades:.1f} decades in {drop.width} steps<extra></extra>")


def transition_study_figure(curves: TransitionCurves, drops: Sequence[dict[int, Drop]], *,
                            unreachable_label: int, lengths: Sequence[int] | None = None,
                            marked: tuple[str, str] = ("detected drops", "no drop detected")) -> go.Figure:
    """The transition study: log MSE of each length on the balanced evaluation set against a
    linear step axis (the authors' axes), one panel per length (one under another) and one thin
    line per seed in it, the drops given as diamonds; `marked`: what the diamonds are and what
    the title says when there is none (chapter 2 passes only the transitions that hold).

    The authors drew every length in one panel; here one panel per length, because ten seeds of
    five lengths in one panel are fifty lines whose colours merge."""
    lengths = list(curves.lengths if lengths is None else lengths)
    names = [length_name(length, unreachable_label) for length in lengths]
    fig = make_subplots(rows=len(lengths), cols=1, shared_xaxes=True, vertical_spacing=0.05, subplot_titles=names)
    colour = PALETTE[0]    # a panel is one length: its colour tells nothing the panel's title does not
    for row, length in enumerate(lengths, start=1):
        for index, seed in enumerate(curves.seeds):
            curve = curves.curve(index, length)
            fig.add_trace(go.Scatter(
                x=list(curves.steps), y=curve, mode="lines", showlegend=False,
                name=f"{names[row - 1]}, seed {seed}", line={"color": colour, "width": 1.2},
                hovertemplate=f"{names[row - 1]}, seed {seed}, step %{{x}}: MSE %{{y:.3g}}<extra></extra>"),
                row=row, col=1)
            drop = drops[index][length]
            if drop.dropped:
                fig.add_trace(_drop_marker(drop, curve[curves.steps.index(drop.step)], colour, length,
                                           unreachable_label, f", seed {seed}"), row=row, col=1)
        # every panel names its quantity: the panels stand one under another on any screen
        fig.update_yaxes(type="log", title_text="MSE", row=row, col=1)
    fig.update_xaxes(type="linear", range=[0, curves.steps[-1]])
    fig.update_xaxes(title_text="step", row=len(lengths), col=1)
    title = _with_diamonds(fig, f"Loss by path length on the balanced evaluation set, graphs of up to "
                                f"{curves.config.n_max} vertices, one line per seed", *marked)
    return finish(fig, title, height=150 + 170 * len(lengths))


def confusion_slider_figure(steps: Sequence[int], predictions: Sequence[torch.Tensor],
                            labels: torch.Tensor, n_labels: int, *,
                            unreachable_label: int | None = None) -> go.Figure:
    """`confusion_figure` at several checkpoints, with a slider over the steps."""
    figures = [confusion_figure(p, labels, n_labels, title="Predicted against true distance during training",
                                unreachable_label=unreachable_label) for p in predictions]
    frame = go.Figure(layout=figures[-1].layout)   # axes, title and size of one checkpoint's figure
    fig = slider_over_steps([list(figure.data) for figure in figures], [str(s) for s in steps],
                            slider_prefix="step: ", active=len(figures) - 1, figure=frame)
    # The slider below the x axis's title even where a narrow screen stands the tick labels upright
    # ("unreach." read downwards pushes the title about 7 px a character lower).
    longest = max((len(str(t)) for t in frame.layout.xaxis.ticktext or ()), default=1)
    below = SLIDER_GAP + 7 * longest
    fig.layout.sliders[0].pad = {"t": below}
    grown = below + SLIDER_HEIGHT - (frame.layout.margin.b or 0)    # the plot keeps its height
    fig.update_layout(margin={"b": below + SLIDER_HEIGHT}, height=(frame.layout.height or 450) + max(grown, 0))
    return fig


#: Px between the plot's bottom and a slider under it besides its tick labels (axis title and a
#: gap), and the height of the slider itself (its current value, rail and step labels).
SLIDER_GAP, SLIDER_HEIGHT = 50, 80


def learning_rate_figure(schedule: Sequence[tuple[int, float]]) -> go.Figure:
    """The learning-rate schedule as a step function of the training step."""
    total = sum(steps for steps, _ in schedule)
    steps, rates, start = [], [], 0
    for length, lr in schedule:
        steps += [start, start + length]
        rates += [lr, lr]
        start += length
    fig = go.Figure(go.Scatter(x=steps, y=rates, mode="lines", line={"color": _colour(1)},
                               name="learning rate"))
    fig.update_xaxes(title="step", range=[0, total])
    fig.update_yaxes(title="learning rate", exponentformat="power",
                     range=[0, 1.15 * max(lr for _, lr in schedule)])
    return finish(fig, "Learning-rate schedule", height=320)


def checkpoint_slider(n_checkpoints: int) -> SliderRange:
    """The live slider of chapter 2: the index of a stored checkpoint, starting at the last."""
    return SliderRange(low=0, high=n_checkpoints - 1, step=1, start=n_checkpoints - 1)


def checkpoint_figure(steps: Sequence[int], predictions: Sequence[torch.Tensor], labels: torch.Tensor,
                      n_labels: int, checkpoint_index: int,
                      unreachable_label: int | None = None) -> go.Figure:
    """The live slider's view (chapter 2): the confusion histogram at one stored checkpoint."""
    return confusion_figure(predictions[checkpoint_index], labels, n_labels,
                            title=f"Predicted against true distance at step {steps[checkpoint_index]}",
                            unreachable_label=unreachable_label)


def checkpoint_panel(steps: Sequence[int], predictions: Sequence[torch.Tensor], labels: torch.Tensor,
                     n_labels: int, unreachable_label: int | None = None) -> widgets.interactive:
    """Chapter 2's live panel: the checkpoint slider and the run button."""
    slider = checkpoint_slider(len(steps)).int_slider("checkpoint")
    return manual_panel(lambda checkpoint_index: checkpoint_figure(
        steps, predictions, labels, n_labels, checkpoint_index, unreachable_label), checkpoint_index=slider)


def evaluation_loss_figure(steps: Sequence[int], curves: dict[int, list[float]], drops: dict[int, Drop], *,
                           unreachable_label: int, log_steps: bool = True) -> go.Figure:
    """The main run's loss of each label on its fixed evaluation batch over steps
    (`lib.paths.evaluation_curves`; at most `MOST_ORDERED` labels, spread evenly from the first to
    the last), the drops given marked (chapter 2 passes those that hold)."""
    fig = go.Figure()
    lengths = evenly_spaced(list(curves), MOST_ORDERED)
    for length, colour in zip(lengths, series_colours(len(lengths))):
        curve = curves[length]
        fig.add_trace(go.Scatter(x=list(steps), y=curve, mode="lines", name=length_name(length, unreachable_label),
                                 legendgroup=str(length), line={"color": colour, "width": 1.6}))
        drop = drops.get(length)
        if drop is not None and drop.dropped:
            fig.add_trace(_drop_marker(drop, curve[list(steps).index(drop.step)], colour, length, unreachable_label))
    fig.update_yaxes(type="log", title="loss on the evaluation batch")
    fig.update_xaxes(title="step" + (" (log scale)" if log_steps else ""), type="log" if log_steps else "linear")
    return finish(fig, _with_diamonds(fig, "Loss by true path length", "transitions that hold",
                                      "no transition holds"), height=480)


def mean_prediction_figure(steps: Sequence[int], means: dict[int, list[float]], *, unreachable_label: int,
                           title: str, log_steps: bool = False) -> go.Figure:
    """The model's mean prediction on the graphs of each label over steps, each label's value as
    a dotted line of its colour: while one constant stands in for many labels, their lines lie
    on top of each other.

    At most `MOST_ORDERED` labels get a colour of their own: the shortest lengths and the
    unreachable label; the lengths between them are drawn in one grey, named together."""
    fig = go.Figure()
    lengths = list(means)
    coloured = lengths if len(lengths) <= MOST_ORDERED else lengths[:MOST_ORDERED - 1] + lengths[-1:]
    rest = [length for length in lengths if length not in coloured]
    colours = dict(zip(coloured, series_colours(len(coloured))))
    rest_name = f"lengths {rest[0]} to {rest[-1]} (grey)" if rest else ""
    for length in lengths:
        colour = colours.get(length, REST_COLOUR)
        name = length_name(length, unreachable_label) if length in colours else rest_name
        first = length in colours or length == rest[0]
        fig.add_trace(go.Scatter(x=list(steps), y=means[length], mode="lines", legendgroup=name, showlegend=first,
                                 name=name, line={"color": colour, "width": 1.6 if length in colours else 1.2},
                                 hovertemplate=f"{length_name(length, unreachable_label)}, step %{{x}}: "
                                               "mean prediction %{y:.2f}<extra></extra>"))
        fig.add_trace(go.Scatter(x=[steps[0], steps[-1]], y=[length, length], mode="lines", legendgroup=name,
                                 showlegend=False, hoverinfo="skip",
                                 line={"color": colour, "width": 1, "dash": "dot"}))
    fig.update_yaxes(title="mean prediction (dotted: the true value)")
    fig.update_xaxes(title="step" + (" (log scale)" if log_steps else ""), type="log" if log_steps else "linear")
    return finish(fig, title, height=480)
