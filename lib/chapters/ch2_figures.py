"""Figures of chapter 2: loss curves, the transition study's figure, confusion histograms, schedule.

Each function takes the numbers a `lib.paths.training.TrainingRun` logged and returns a plotly
figure in the book's style (`lib.book.plotting.finish`). Chapter 3 reuses `confusion_figure` for its
fine-tuned model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import ipywidgets as widgets
import plotly.graph_objects as go
import torch

from lib.book.live import SliderRange, manual_panel
from lib.book.plotting import PALETTE, finish, ordered_colours, slider_over_steps
from lib.paths.phase_transitions import Drop
from lib.paths.training import TrainingLog
from lib.paths.transition_study import TransitionCurves


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def length_name(length: int, unreachable_label: int) -> str:
    """Legend name of a label: the path length, or "unreachable"."""
    return f"unreachable ({length})" if length == unreachable_label else f"length {length}"


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
    """The main run's loss of each path length over steps, detected drops marked.

    Args:
        log: the run's log.
        drops: {length: its drop} from `lib.paths.phase_transitions.detect_drops`.
        unreachable_label: label of unreachable targets (named in the legend).
        lengths: which labels to draw (default: the keys of `drops`).
        log_steps: logarithmic step axis, which spreads out the early steps.
    """
    losses = log.loss_by_length_tensor()
    lengths = sorted(drops) if lengths is None else list(lengths)
    fig = go.Figure()
    for length, colour in zip(lengths, ordered_colours(len(lengths))):
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
    return finish(fig, "Loss by true path length (diamonds: detected drops)", height=480)


def _drop_marker(drop: Drop, value: float, colour: str, length: int, unreachable_label: int,
                 name: str = "") -> go.Scatter:
    return go.Scatter(
        x=[drop.step], y=[value], mode="markers", legendgroup=str(length), showlegend=False,
        marker={"symbol": "diamond", "size": 11, "color": colour, "line": {"color": "black", "width": 1}},
        hovertemplate=f"{length_name(length, unreachable_label)}{name}: drop at step {drop.step}, "
                      f"{drop.decades:.1f} decades in {drop.width} steps<extra></extra>")


#: Line styles of the transition study's seeds, in order.
SEED_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def transition_study_figure(curves: TransitionCurves, drops: Sequence[dict[int, Drop]], *,
                            unreachable_label: int, lengths: Sequence[int] | None = None) -> go.Figure:
    """The transition study as the authors plotted theirs: log MSE of each length on the
    balanced evaluation set against a linear step axis, one line per seed (dash style), the
    detected drops as diamonds."""
    lengths = list(curves.lengths if lengths is None else lengths)
    fig = go.Figure()
    for length, colour in zip(lengths, ordered_colours(len(lengths))):
        for index, seed in enumerate(curves.seeds):
            curve = curves.curve(index, length)
            fig.add_trace(go.Scatter(
                x=list(curves.steps), y=curve, mode="lines", legendgroup=str(length),
                name=f"{length_name(length, unreachable_label)}, seed {seed}", showlegend=True,
                line={"color": colour, "width": 1.4, "dash": SEED_DASHES[index % len(SEED_DASHES)]}))
            drop = drops[index][length]
            if drop.dropped:
                fig.add_trace(_drop_marker(drop, curve[curves.steps.index(drop.step)], colour, length,
                                           unreachable_label, f", seed {seed}"))
    fig.update_yaxes(type="log", title="MSE on the balanced evaluation set")
    fig.update_xaxes(title="step", type="linear", range=[0, curves.steps[-1]])
    return finish(fig, f"Loss by path length, graphs of up to {curves.config.n_max} vertices "
                       f"(diamonds: detected drops)", height=520)


def confusion_matrix(predictions: torch.Tensor, labels: torch.Tensor, n_labels: int) -> torch.Tensor:
    """P(rounded prediction = j | true label = i) as an (n_labels, n_labels) tensor.

    Predictions are rounded to the nearest integer and clipped to [0, n_labels - 1]; rows of
    labels that do not occur are NaN.
    """
    predicted = predictions.detach().float().round().clamp(0, n_labels - 1).long().cpu()
    true = labels.detach().long().cpu()
    counts = torch.zeros(n_labels, n_labels, dtype=torch.float64)
    counts.index_put_((true, predicted), torch.ones(len(true), dtype=torch.float64), accumulate=True)
    totals = counts.sum(dim=1, keepdim=True)
    return torch.where(totals > 0, counts / totals.clamp(min=1), torch.tensor(math.nan))


def _confusion_trace(predictions: torch.Tensor, labels: torch.Tensor, n_labels: int) -> go.Heatmap:
    matrix = confusion_matrix(predictions, labels, n_labels)
    text = [["" if math.isnan(v) or v < 0.005 else f"{v:.2f}" for v in row] for row in matrix.tolist()]
    return go.Heatmap(
        z=matrix.tolist(), x=list(range(n_labels)), y=list(range(n_labels)), text=text,
        texttemplate="%{text}", colorscale="Blues", zmin=0, zmax=1,
        colorbar={"title": "P(pred | true)"},
        hovertemplate="true %{y}, predicted %{x}: %{z:.3f}<extra></extra>")


def _confusion_layout(fig: go.Figure, n_labels: int, title: str,
                      unreachable_label: int | None) -> go.Figure:
    ticks = {"tickmode": "array", "tickvals": list(range(n_labels)),
             "ticktext": [("unreach." if k == unreachable_label else str(k)) for k in range(n_labels)],
             "range": [-0.5, n_labels - 0.5]}
    fig.update_xaxes(title="predicted distance (rounded)", **ticks)
    fig.update_yaxes(title="true distance", **ticks)
    return finish(fig, title, height=520, width=620)


def confusion_figure(predictions: torch.Tensor, labels: torch.Tensor, n_labels: int, *,
                     title: str = "Predicted against true distance",
                     unreachable_label: int | None = None) -> go.Figure:
    """2D histogram of rounded prediction against true label, each row normalized.

    Chapters 2 and 3 use it; `unreachable_label` names that label on the axes.
    """
    fig = go.Figure(_confusion_trace(predictions, labels, n_labels))
    return _confusion_layout(fig, n_labels, title, unreachable_label)


def confusion_slider_figure(steps: Sequence[int], predictions: Sequence[torch.Tensor],
                            labels: torch.Tensor, n_labels: int, *,
                            unreachable_label: int | None = None) -> go.Figure:
    """`confusion_figure` at several checkpoints, with a slider over the steps."""
    traces = [[_confusion_trace(p, labels, n_labels)] for p in predictions]
    fig = slider_over_steps(traces, [str(s) for s in steps], slider_prefix="step: ",
                            active=len(traces) - 1)
    return _confusion_layout(fig, n_labels, "Predicted against true distance during training",
                             unreachable_label)


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


def label_histogram_figure(labels: torch.Tensor, unreachable_label: int, *,
                           title: str = "Labels of the training distribution") -> go.Figure:
    """Share of examples at each distance (the rejection filter's balance, chapter 2)."""
    counts = torch.bincount(labels.long(), minlength=unreachable_label + 1).double()
    share = (counts / counts.sum()).tolist()
    names = [("unreachable" if k == unreachable_label else str(k)) for k in range(len(share))]
    fig = go.Figure(go.Bar(x=names, y=share, marker_color=_colour(0),
                           hovertemplate="distance %{x}: %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title="distance from vertex 1 to the target", type="category")
    fig.update_yaxes(title="share of examples")
    return finish(fig, title, height=340)


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
