"""Figures of chapter 8 (representations), as plotly figures."""

from __future__ import annotations

import math
import textwrap

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib.book.ordered_series import MOST_ORDERED, REST_COLOUR, series_colours
from lib.book.plotting import PALETTE, finish
from lib.chapters.ch8_results import OUTCOMES
from lib.grokking.early_prediction import EarlyPrediction

#: Colour of each row of `OUTCOMES` (chapter 6's colours for the three outcome groups, grey for
#: the untrained seeds).
OUTCOME_COLOURS = dict(zip(OUTCOMES, (PALETTE[0], PALETTE[1], PALETTE[7], "#9e9e9e")))


def _every_category(fig: go.Figure, axis: str, names: list[str], ticktext: list[str] | None = None,
                    **where) -> None:
    """Name every category of `axis` ("x" or "y") by a tick of its own, in the order given: plotly
    thins category names that it finds too close (at a phone's width), explicit ticks it keeps."""
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    update(type="category", tickmode="array", tickvals=list(names), ticktext=list(ticktext or names), dtick=1,
           categoryorder="array", categoryarray=list(names), automargin=True, **where)


def _wrapped(label: str, width: int = 14) -> str:
    """`label` on short lines (plotly's <br>), so that a category name beside horizontal bars keeps
    the plot its width on a phone."""
    return "<br>".join(textwrap.wrap(label, width)) or label


#: The name of the cells drawn as one grey group.
OTHER_CELLS = "other pairs"


def _largest_cells(totals: torch.Tensor, count: int = MOST_ORDERED) -> list[int]:
    """The `count` cells with the largest `totals` (NaN counting as 0), in their own order."""
    largest = totals.nan_to_num(0.0).argsort(descending=True, stable=True)[:count]
    return sorted(int(c) for c in largest)


def _cell_groups(values: torch.Tensor, cell_names: list[str]) -> list[tuple[str, str, torch.Tensor, list[int]]]:
    """The cells of `values` (..., C) a panel colours apart: the `MOST_ORDERED` largest overall, each
    as (name, colour, values (...), [its index]), then the rest summed as one grey `OTHER_CELLS`
    group with the indices of its cells (none when there are at most `MOST_ORDERED` cells)."""
    kept = _largest_cells(values.reshape(-1, values.shape[-1]).nan_to_num(0.0).sum(dim=0))
    groups = [(cell_names[c], colour, values[..., c], [c]) for c, colour in zip(kept, series_colours(len(kept)))]
    rest = [c for c in range(len(cell_names)) if c not in kept]
    if rest:
        groups.append((OTHER_CELLS, REST_COLOUR, values[..., rest].sum(dim=-1), rest))
    return groups


def _parts(values: torch.Tensor, cells: list[int], cell_names: list[str]) -> list[str]:
    """For each row of `values` (R, C), the value of each of `cells` by name: the hover of a grey
    group says which cells it holds and what each brings."""
    return [", ".join(f"{cell_names[c]} {float(row[c]):.3f}" for c in cells) for row in values]


def profiles_figure(rows: dict[str, torch.Tensor], names: dict[str, tuple[str, ...]]) -> go.Figure:
    """One panel per group, one above the other: the mean share of the pooled embeddings in each of
    its components, one bar per outcome (`rows[group]`: (4, K) in the order of `OUTCOMES`)."""
    groups = list(rows)
    fig = make_subplots(rows=len(groups), cols=1, subplot_titles=[f"read with {g}'s irreps" for g in groups],
                        vertical_spacing=0.16)
    for row, group in enumerate(groups, start=1):
        for outcome, values in zip(OUTCOMES, rows[group]):
            fig.add_trace(go.Bar(x=list(names[group]), y=values.tolist(), name=outcome, legendgroup=outcome,
                                 showlegend=row == 1, marker_color=OUTCOME_COLOURS[outcome],
                                 hovertemplate=f"{outcome}: %{{y:.3f}} in %{{x}}<extra></extra>"), row=row, col=1)
        _every_category(fig, "x", list(names[group]), row=row, col=1)
        fig.update_yaxes(title_text="share of norm", range=[0, 1], row=row, col=1)
    fig.update_xaxes(title_text="component", row=len(groups), col=1)
    fig.update_layout(barmode="group")
    return finish(fig, "Where each outcome's embeddings live: shares in each group's isotypic components",
                  height=180 + 260 * len(groups))


def neuron_cells_figure(top: torch.Tensor, cell_names: list[str], purity: torch.Tensor) -> go.Figure:
    """Per outcome (rows of `OUTCOMES`, top to bottom), the weight of the neurons whose largest cell
    is each cell (stacked horizontal bars; `top` (4, C)), with each outcome's purity in its label.
    The five cells with the most weight overall have a colour each; the others are stacked as one
    grey "other pairs" segment per bar, whose hover lists its cells."""
    fig = go.Figure()
    labels = [f"{o} (purity {float(p):.2f})" for o, p in zip(OUTCOMES, purity)]
    for name, colour, values, cells in _cell_groups(top, cell_names):
        where = name if name != OTHER_CELLS else f"{name} (%{{customdata}})"
        fig.add_trace(go.Bar(y=labels, x=values.tolist(), name=name, orientation="h", marker_color=colour,
                             customdata=_parts(top, cells, cell_names) if name == OTHER_CELLS else None,
                             hovertemplate=f"%{{y}}: %{{x:.3f}} of the neuron weight in {where}<extra></extra>"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="share of neuron weight", range=[0, 1.001])
    _every_category(fig, "y", labels, [_wrapped(label) for label in labels])
    fig.update_yaxes(autorange="reversed")
    return finish(fig, "Where the neurons sit: each neuron's largest cell (S4 component & A4xZ2 component)",
                  height=460)


def over_training_figure(epochs: torch.Tensor, cells: list[torch.Tensor], cell_names: list[str]) -> go.Figure:
    """One panel per outcome group, one above the other: the mean share of the pooled embeddings in
    each cell at every snapshot (`cells[o]`: (C_t, C) for outcome o of the first three `OUTCOMES`).
    The five cells with the largest share over all panels and snapshots have a colour each (the
    same in every panel); the others are summed into one grey "other pairs" line."""
    fig = make_subplots(rows=3, cols=1, subplot_titles=list(OUTCOMES[:3]), shared_xaxes=True,
                        vertical_spacing=0.09)
    groups = _cell_groups(torch.stack(list(cells[:3])), cell_names)
    for row, (outcome, shares) in enumerate(zip(OUTCOMES[:3], cells), start=1):
        for name, colour, values, members in groups:
            where = name if name != OTHER_CELLS else f"{name} (%{{customdata}})"
            fig.add_trace(go.Scatter(x=epochs.tolist(), y=values[row - 1].tolist(), mode="lines", name=name,
                                     legendgroup=name, showlegend=row == 1, line={"color": colour},
                                     customdata=_parts(shares, members, cell_names) if name == OTHER_CELLS else None,
                                     hovertemplate=f"{outcome}, epoch %{{x}}: %{{y:.3f}} in {where}<extra></extra>"),
                          row=row, col=1)
    fig.update_xaxes(title_text="epoch", row=3, col=1)
    fig.update_yaxes(title_text="share of embedding norm", row=2, col=1)
    return finish(fig, "The embeddings' shares in the cells along training, mean over the retrained seeds",
                  height=640)


def _auc_range(fig: go.Figure, margin: float = 0.03) -> list[float]:
    """A y range that holds every finite point of `fig`'s traces and the chance line at 0.5, with
    `margin` either side (an AUC may dip well below chance on a few held-out seeds)."""
    values = [float(y) for trace in fig.data for y in trace.y if y is not None and math.isfinite(y)]
    low, high = min(values + [0.5]), max(values + [0.5])
    return [low - margin, high + margin]


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
    fig.update_yaxes(title_text="held-out ROC AUC", range=_auc_range(fig))
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
    """Share of neuron variance in coset neurons, per set of models (a row each, top to bottom),
    against random functions with the same isotypic profile (the irreps account alone). A row
    whose two shares are both 0 (or missing) would be empty: it says so in a label."""
    fig = go.Figure()
    fig.add_trace(go.Bar(y=labels, x=observed, name="the models' neurons", marker_color=PALETTE[0], orientation="h",
                         hovertemplate="%{y}: %{x:.3f} in coset neurons<extra></extra>"))
    fig.add_trace(go.Bar(y=labels, x=matched, name="random functions with the same irrep profile",
                         marker_color="#9e9e9e", orientation="h",
                         hovertemplate="%{y}: %{x:.3f} (irreps alone)<extra></extra>"))
    for label, text in _empty_rows(labels, observed, matched).items():
        fig.add_annotation(x=0, y=label, text=text, showarrow=False, xanchor="left", xshift=4)
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="share of variance in coset neurons", range=[0, 1.001])
    _every_category(fig, "y", labels, [_wrapped(label) for label in labels])
    fig.update_yaxes(autorange="reversed")
    return finish(fig, "Coset neurons beyond what the irreps imply?", height=max(320, 140 + 48 * len(labels)))


def _empty_rows(labels: list[str], observed: list[float], matched: list[float]) -> dict[str, str]:
    """The rows with no bar to draw, each with what it holds instead: "0" for two shares of 0
    (no coset neuron, in the models or in the matched random functions), "no value" when missing."""
    def missing(v) -> bool:
        return v is None or math.isnan(v)

    empty = {}
    for label, o, m in zip(labels, observed, matched):
        if missing(o) and missing(m):
            empty[label] = "no value"
        elif (missing(o) or o == 0) and (missing(m) or m == 0):
            empty[label] = "0: no coset neurons"
    return empty


__all__ = ["OTHER_CELLS", "OUTCOME_COLOURS", "coset_figure", "neuron_cells_figure",
           "over_training_figure", "prediction_figure", "profiles_figure", "settle_figure"]
