"""Plotly figures of chapter 4 (ambiguous grokking); chapters 5 and 6 reuse the outcome colours.

Every function returns a `plotly.graph_objects.Figure` finished with `lib.book.plotting.finish`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib.grokking.pairs import GroupPair
from lib.grokking.outcomes import OUTCOMES
from lib.grokking.training import SweepResult
from lib.book.plotting import PALETTE, finish
from lib.book.tables import short_scientific

#: One colour per outcome, used by every figure of the ambiguous-grokking chapters.
OUTCOME_COLOURS = {"grokked_g1": PALETTE[0], "grokked_g2": PALETTE[1],
                   "memorized": PALETTE[7], "failed": PALETTE[3]}


def outcome_label(outcome: str, g1: str, g2: str) -> str:
    """Readable name of an outcome for a given pair, e.g. "grokked S4"."""
    return {"grokked_g1": f"grokked {g1}", "grokked_g2": f"grokked {g2}",
            "memorized": "memorized (intersection only)", "failed": "did not fit"}[outcome]


def cayley_tables_figure(pair: GroupPair) -> go.Figure:
    """The two multiplication tables side by side, and the pairs where they agree.

    Cell (a, b) of a table is coloured by the index of a*b; the third panel is pale where the
    two products agree (the training set) and vermillion where they differ, its title says so.
    """
    g1, g2, mask = pair.g1, pair.g2, pair.mask
    n = pair.n_elements
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.06, subplot_titles=(
        f"{g1.name}: index of a*b", f"{g2.name}: index of a*b",
        f"agree on {pair.intersection_size} of {n * n} pairs<br>(pale: agree; vermillion: differ)"))
    hover = "a=%{y}<br>b=%{x}<br>a*b=%{z}<extra></extra>"
    for col, table in ((1, g1.table), (2, g2.table)):
        fig.add_trace(go.Heatmap(z=table.tolist(), colorscale="Viridis", showscale=False,
                                 hovertemplate=hover), row=1, col=col)
    fig.add_trace(go.Heatmap(z=mask.int().tolist(), colorscale=[[0, "#D55E00"], [1, "#F0F0F0"]],
                             showscale=False, zmin=0, zmax=1,
                             hovertemplate="a=%{y}<br>b=%{x}<br>agree=%{z}<extra></extra>"),
                  row=1, col=3)
    for col in (1, 2, 3):
        # square cells that fill the panel's box: the axes shrink to the table (constrain), not
        # the table padded with empty rows to the box's shape
        fig.update_yaxes(autorange="reversed", scaleanchor=f"x{col if col > 1 else ''}", constrain="domain",
                         title_text="a (left)" if col == 1 else None, row=1, col=col)
        fig.update_xaxes(title_text="b (right)", constrain="domain", row=1, col=col)
    return finish(fig, f"{pair.name}: two products on one labelled set of {n} elements", height=430)


def final_accuracy_scatter(result: SweepResult, codes: torch.Tensor, g1: str, g2: str,
                           title: str | None = None) -> go.Figure:
    """Per-instance final accuracy on all N^2 pairs against G1 (x) and G2 (y), coloured by outcome."""
    x, y = result.final("acc_g1"), result.final("acc_g2")
    fig = go.Figure()
    for code, outcome in enumerate(OUTCOMES):
        members = (codes == code).nonzero().flatten()
        if not members.numel():
            continue
        fig.add_trace(go.Scattergl(
            x=x[members].tolist(), y=y[members].tolist(), mode="markers",
            name=f"{outcome_label(outcome, g1, g2)} ({members.numel()})",
            marker={"color": OUTCOME_COLOURS[outcome], "size": 6, "opacity": 0.6},
            customdata=result.seeds[members].tolist(),
            hovertemplate=f"seed %{{customdata}}<br>{g1}: %{{x:.4f}}<br>{g2}: %{{y:.4f}}<extra></extra>"))
    fig.update_xaxes(title_text=f"final accuracy against {g1} (all pairs)")
    fig.update_yaxes(title_text=f"final accuracy against {g2} (all pairs)")
    default = f"{result.info.get('pair', '')}: {result.n_instances} instances after {result.training_config.epochs} epochs"
    return finish(fig, title or default, height=460)


def sweep_label(summary: Mapping) -> str:
    """A short tick label for a sweep (keeps the bar chart wide at phone width): the first group's
    cyclic or symmetric part ("S4", "Z48") and what sets the experiment apart from its pair's
    first one ("no bias", "wd 2e-4", "lr 0.01", "recipe")."""
    pair = summary["name"].split("_")[0].split("x")[0]
    rest = summary["experiment"].split("_", 1)[1] if "_" in summary["experiment"] else ""
    rest = {"second_decay": f"wd {short_scientific(summary['weight_decay'])}", "no_bias": "no bias",
            "book": "recipe"}.get(rest, rest.replace("lr", "lr "))
    return f"{pair}, {rest}" if rest else pair


def outcome_fractions_figure(summaries: Sequence[Mapping], published: Mapping[str, Mapping[str, float]]
                             | None = None) -> go.Figure:
    """Horizontal bars of the fraction of instances that grokked G1 or G2, per sweep, with 95% CIs.

    One row per sweep, first sweep at the top, every sweep's name drawn as a tick label (horizontal
    bars keep all of them readable at phone width, where vertical bars lost most of their labels).

    Args:
        summaries: one dict per sweep as written by `lib.grokking.sweeps.sweep_summary`, with
            the sweep's experiment key under "experiment".
        published: optional experiment key -> {"fraction_g1": ..., "fraction_g2": ...} drawn
            as diamonds next to the measured bars.
    """
    published = published or {}
    names = [sweep_label(s) for s in summaries]
    keys = [s.get("experiment") for s in summaries]
    fig = go.Figure()
    series = [("fraction_g1", "grokked G1", "grokked_g1", PALETTE[0]),
              ("fraction_g2", "grokked G2", "grokked_g2", PALETTE[1])]
    for key, label, outcome, colour in series:
        values = [s[key] for s in summaries]
        lows = [s[key] - s[f"ci_{outcome}"][0] for s in summaries]
        highs = [s[f"ci_{outcome}"][1] - s[key] for s in summaries]
        fig.add_trace(go.Bar(
            y=names, x=values, name=label, marker_color=colour, orientation="h",
            error_x={"type": "data", "symmetric": False, "array": highs, "arrayminus": lows},
            customdata=[[s["g1"], s["g2"], s["n_instances"], short_scientific(s["weight_decay"])] for s in summaries],
            hovertemplate="%{y}<br>" + label + ": %{x:.4f}<br>G1=%{customdata[0]}, "
                          "G2=%{customdata[1]}<br>%{customdata[2]} instances, wd %{customdata[3]}<extra></extra>"))
        pub = [published.get(k, {}).get(key) for k in keys]
        if any(v is not None for v in pub):
            fig.add_trace(go.Scatter(y=names, x=pub, mode="markers", name=f"{label}, published",
                                     marker={"symbol": "diamond", "size": 11, "color": colour,
                                             "line": {"color": "black", "width": 1}}))
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="fraction of instances (95% Wilson interval)", rangemode="tozero")
    # every sweep named, in the order given, the first at the top
    fig.update_yaxes(tickmode="array", tickvals=names, ticktext=names, autorange="reversed",
                     categoryorder="array", categoryarray=names)
    return finish(fig, "Which group do the instances grok?", height=max(300, 120 + 44 * len(names)))


def training_curves_figure(result: SweepResult, instances: Mapping[str, int], g1: str, g2: str) -> go.Figure:
    """Training curves of chosen instances: accuracies (top) and training loss (bottom).

    Args:
        result: the sweep.
        instances: panel title -> instance index, e.g. one typical instance per outcome.
        g1, g2: group names for the legend.
    """
    titles = list(instances)
    fig = make_subplots(rows=2, cols=len(titles), shared_xaxes=True, row_heights=[0.65, 0.35],
                        vertical_spacing=0.08, horizontal_spacing=0.07, subplot_titles=titles)
    epochs = result.log_epochs.tolist()
    lines = [("train_acc", "train (intersection)", PALETTE[2], "solid"),
             ("acc_g1", f"all pairs vs {g1}", PALETTE[0], "solid"),
             ("acc_g2", f"all pairs vs {g2}", PALETTE[1], "dash")]
    for col, title in enumerate(titles, start=1):
        i = instances[title]
        for key, label, colour, dash in lines:
            fig.add_trace(go.Scatter(x=epochs, y=result.metrics[key][:, i].tolist(), name=label,
                                     legendgroup=label, showlegend=col == 1,
                                     line={"color": colour, "dash": dash}), row=1, col=col)
        fig.add_trace(go.Scatter(x=epochs, y=result.metrics["train_loss"][:, i].tolist(),
                                 name="training loss", legendgroup="loss", showlegend=col == 1,
                                 line={"color": PALETTE[7]}), row=2, col=col)
        # every panel names its quantity: on a phone the panels stand one under another
        fig.update_yaxes(range=[0, 1.02], row=1, col=col, title_text="accuracy")
        fig.update_yaxes(type="log", row=2, col=col, title_text="loss")
        fig.update_xaxes(title_text="epoch", row=2, col=col)
    return finish(fig, f"{result.info.get('pair', '')}: typical instances of each outcome", height=520)


def class_balance_figure(counts: Mapping[str, torch.Tensor], pair_name: str) -> go.Figure:
    """Share of pairs whose product is each element: on the intersection versus the full table.

    Every group's full table holds each element equally often, so the two full tables' lines
    coincide: they are drawn as one line, named for both, rather than one hidden under the other."""
    fig = go.Figure()
    styles = {"intersection": ("training set (intersection)", PALETTE[1]),
              "g1_full": ("full table of G1", PALETTE[0]), "g2_full": ("full table of G2", PALETTE[2])}
    shares = {key: (values.double() / values.sum()) for key, values in counts.items()}
    if {"g1_full", "g2_full"} <= shares.keys() and torch.allclose(shares["g1_full"], shares["g2_full"]):
        del shares["g2_full"]
        styles["g1_full"] = ("full tables of G1 and G2 (equal)", PALETTE[0])
    for key, share in shares.items():
        label, colour = styles.get(key, (key, PALETTE[4]))
        fig.add_trace(go.Scatter(x=list(range(len(share))), y=share.tolist(), name=label,
                                 mode="lines+markers", marker={"size": 4}, line={"color": colour},
                                 hovertemplate="label %{x}: %{y:.4f}<extra></extra>"))
    fig.update_xaxes(title_text="label (index of the product)")
    fig.update_yaxes(title_text="share of pairs with this label", rangemode="tozero")
    return finish(fig, f"{pair_name}: class balance of the training set", height=380)
