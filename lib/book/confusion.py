"""Predicted-against-true histograms and label histograms of distance models (chapters 2, 3).

Shared by the chapters that train and fine-tune the shortest-path transformer, so that no
chapter module imports another's: `confusion_matrix` computes P(rounded prediction | true
label), `confusion_figure` draws it, `label_histogram_figure` draws the share of examples at
each distance, and `length_name` names a label in legends.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
import torch

from lib.book.plotting import PALETTE, finish


def length_name(length: int, unreachable_label: int) -> str:
    """Legend name of a label: the path length, or "unreachable"."""
    return f"unreachable ({length})" if length == unreachable_label else f"length {length}"


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


def confusion_figure(predictions: torch.Tensor, labels: torch.Tensor, n_labels: int, *,
                     title: str = "Predicted against true distance",
                     unreachable_label: int | None = None) -> go.Figure:
    """2D histogram of rounded prediction against true label, each row normalized."""
    matrix = confusion_matrix(predictions, labels, n_labels)
    text = [["" if math.isnan(v) or v < 0.005 else f"{v:.2f}" for v in row] for row in matrix.tolist()]
    fig = go.Figure(go.Heatmap(
        z=matrix.tolist(), x=list(range(n_labels)), y=list(range(n_labels)), text=text,
        texttemplate="%{text}", colorscale="Blues", zmin=0, zmax=1,
        colorbar={"title": "P(pred | true)"},
        hovertemplate="true %{y}, predicted %{x}: %{z:.3f}<extra></extra>"))
    ticks = {"tickmode": "array", "tickvals": list(range(n_labels)),
             "ticktext": [("unreach." if k == unreachable_label else str(k)) for k in range(n_labels)],
             "range": [-0.5, n_labels - 0.5]}
    fig.update_xaxes(title="predicted distance (rounded)", **ticks)
    fig.update_yaxes(title="true distance", **ticks)
    return finish(fig, title, height=520, width=620)


def label_histogram_figure(labels: torch.Tensor, unreachable_label: int, *,
                           title: str = "Labels of the training distribution") -> go.Figure:
    """Share of examples at each distance."""
    counts = torch.bincount(labels.long(), minlength=unreachable_label + 1).double()
    share = (counts / counts.sum()).tolist()
    names = [("unreachable" if k == unreachable_label else str(k)) for k in range(len(share))]
    fig = go.Figure(go.Bar(x=names, y=share, marker_color=PALETTE[0],
                           hovertemplate="distance %{x}: %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title="distance from vertex 1 to the target", type="category")
    fig.update_yaxes(title="share of examples")
    return finish(fig, title, height=340)


__all__ = ["confusion_figure", "confusion_matrix", "label_histogram_figure", "length_name"]
