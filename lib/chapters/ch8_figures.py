"""Figures of chapter 8 (representations), as plotly figures."""

from __future__ import annotations

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib.book.plotting import PALETTE, finish
from lib.chapters.ch8_results import OUTCOMES
from lib.grokking.early_prediction import EarlyPrediction

#: Colour of each row of `OUTCOMES` (chapter 6's colours for the three outcome groups, grey for
#: the untrained seeds).
OUTCOME_COLOURS = dict(zip(OUTCOMES, (PALETTE[0], PALETTE[1], PALETTE[7], "#9e9e9e")))


def profiles_figure(rows: dict[str, torch.Tensor], names: dict[str, tuple[str, ...]]) -> go.Figure:
    """One panel per group: the mean share of the pooled embeddings in each of its components, one
    bar per outcome (`rows[group]`: (4, K) in the order of `OUTCOMES`)."""
    groups = list(rows)
    fig = make_subplots(rows=1, cols=len(groups), subplot_titles=[f"read with {g}'s irreps" for g in groups],
                        horizontal_spacing=0.08)
    for col, group in enumerate(groups, start=1):
        for outcome, values in zip(OUTCOMES, rows[group]):
            fig.add_trace(go.Bar(x=list(names[group]), y=values.tolist(), name=outcome, legendgroup=outcome,
                                 showlegend=col == 1, marker_color=OUTCOME_COLOURS[outcome],
                                 hovertemplate=f"{outcome}: %{{y:.3f}} in %{{x}}<extra></extra>"), row=1, col=col)
        fig.update_xaxes(title_text="component", row=1, col=col)
    fig.update_yaxes(title_text="share of embedding norm", range=[0, 1], row=1, col=1)
    fig.update_layout(barmode="group")
    return finish(fig, "Where each outcome's embeddings live: shares in each group's isotypic components")


def neuron_cells_figure(top: torch.Tensor, cell_names: list[str], purity: torch.Tensor) -> go.Figure:
    """Per outcome (rows of `OUTCOMES`), the weight of the neurons whose largest cell is each cell
    (stacked; `top` (4, C)), with each outcome's purity in its label."""
    fig = go.Figure()
    labels = [f"{o} (purity {float(p):.2f})" for o, p in zip(OUTCOMES, purity)]
    for c, name in enumerate(cell_names):
        fig.add_trace(go.Bar(x=labels, y=top[:, c].tolist(), name=name, marker_color=PALETTE[c % len(PALETTE)],
                             hovertemplate=f"%{{x}}: %{{y:.3f}} of the neuron weight in {name}<extra></extra>"))
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title_text="share of neuron weight", range=[0, 1.001])
    return finish(fig, "Where the neurons sit: each neuron's largest cell (S4 component & A4xZ2 component)",
                  height=460)


def over_training_figure(epochs: torch.Tensor, cells: list[torch.Tensor], cell_names: list[str]) -> go.Figure:
    """One panel per outcome group: the mean share of the pooled embeddings in each cell at every
    snapshot (`cells[o]`: (C_t, C) for outcome o of the first three `OUTCOMES`)."""
    fig = make_subplots(rows=1, cols=3, subplot_titles=list(OUTCOMES[:3]), shared_yaxes=True,
                        horizontal_spacing=0.04)
    for col, (outcome, shares) in enumerate(zip(OUTCOMES[:3], cells), start=1):
        for c, name in enumerate(cell_names):
            fig.add_trace(go.Scatter(x=epochs.tolist(), y=shares[:, c].tolist(), mode="lines", name=name,
                                     legendgroup=name, showlegend=col == 1,
                                     line={"color": PALETTE[c % len(PALETTE)]},
                                     hovertemplate=f"{outcome}, epoch %{{x}}: %{{y:.3f}} in {name}<extra></extra>"),
                          row=1, col=col)
        fig.update_xaxes(title_text="epoch", row=1, col=col)
    fig.update_yaxes(title_text="share of embedding norm", row=1, col=1)
    return finish(fig, "The embeddings' shares in the cells along training, mean over the retrained seeds",
                  height=460)


def prediction_figure(irreps: EarlyPrediction, accuracies: EarlyPrediction) -> go.Figure:
    """Held-out AUC against epoch, from the irrep profile (solid) and from chapter 6's accuracies
    and loss (dotted), for grokked-either against neither and S4 against A4xZ2."""
    fig = go.Figure()
    for prediction, dash, source in ((irreps, "solid", "irrep profile"), (accuracies, "dot", "accuracies and loss")):
        for values, colour, question in ((prediction.auc_either, PALETTE[0], "grokked either vs neither"),
                                         (prediction.auc_group, PALETTE[1], "S4 vs A4xZ2")):
            name = f"{question}, from the {source}"
            fig.add_trace(go.Scatter(x=prediction.epochs.tolist(), y=values.tolist(), mode="lines", name=name,
                                     line={"color": colour, "dash": dash},
                                     hovertemplate=f"{name}<br>epoch %{{x}}: AUC %{{y:.3f}}<extra></extra>"))
    fig.add_hline(y=0.5, line={"color": "#9e9e9e", "dash": "dash"})
    fig.update_xaxes(title_text="epoch")
    fig.update_yaxes(title_text="held-out ROC AUC", range=[0.3, 1.02])
    return finish(fig, "How early the outcome can be read: from the irrep profile and from accuracies")


def settle_figure(settle: torch.Tensor, moved: torch.Tensor, outcome: list[str]) -> go.Figure:
    """Each grokker: the epoch its irrep profile settled (x) against the epoch its accuracy on its
    group left the memorizing plateau (y); above the diagonal, the profile settled first."""
    fig = go.Figure()
    for name in dict.fromkeys(outcome):
        rows = [i for i, o in enumerate(outcome) if o == name]
        fig.add_trace(go.Scatter(x=settle[rows].tolist(), y=moved[rows].tolist(), mode="markers", name=name,
                                 marker={"color": OUTCOME_COLOURS[name], "size": 7},
                                 hovertemplate=f"{name}: profile settled at %{{x}}, accuracy moved at %{{y}}"
                                               "<extra></extra>"))
    top = float(max(settle.max(), moved.max())) if len(settle) else 1.0
    fig.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="same epoch",
                             line={"color": "#9e9e9e", "dash": "dash"}, hoverinfo="skip"))
    fig.update_xaxes(title_text="epoch the irrep profile settled")
    fig.update_yaxes(title_text="epoch the accuracy moved")
    return finish(fig, "Does the representation settle before the accuracy moves?")


def coset_figure(labels: list[str], observed: list[float], matched: list[float]) -> go.Figure:
    """Share of neuron variance in coset neurons, per set of models, against random functions with
    the same isotypic profile (the irreps account alone)."""
    fig = go.Figure()
    fig.add_trace(go.Bar(x=labels, y=observed, name="the models' neurons", marker_color=PALETTE[0],
                         hovertemplate="%{x}: %{y:.3f} in coset neurons<extra></extra>"))
    fig.add_trace(go.Bar(x=labels, y=matched, name="random functions with the same irrep profile",
                         marker_color="#9e9e9e",
                         hovertemplate="%{x}: %{y:.3f} (irreps alone)<extra></extra>"))
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text="share of neuron variance in coset neurons", range=[0, 1.001])
    return finish(fig, "Coset neurons beyond what the irreps imply?")


__all__ = ["OUTCOME_COLOURS", "coset_figure", "neuron_cells_figure", "over_training_figure", "prediction_figure",
           "profiles_figure", "settle_figure"]
