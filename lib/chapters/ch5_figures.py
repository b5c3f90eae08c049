"""Figures of chapter 5 (complexity of the grokked solution), as plotly figures."""

from __future__ import annotations

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib.book.plotting import PALETTE, finish
from lib.chapters.ch5_results import MEASURE_LABELS, MEASURE_NAMES
from lib.grokking.end_of_training import EndOfTraining
from lib.grokking.llc_trajectory import Trajectory
from lib.grokking.measures_over_time import MeasuresOverTime
from lib.grokking.study_sweep import GROUPS

#: Colour of each outcome group.
GROUP_COLOURS = dict(zip(GROUPS, (PALETTE[0], PALETTE[1], PALETTE[7])))

#: Subplot titles of the measures' grid: each fits one line of a panel a quarter of the figure
#: wide (a two-line title of the first row runs into the figure's title).
PANEL_TITLES = {
    "generalization gap": "generalization gap", "l2_norm": "L2 norm", "distance_from_init": "distance from init",
    "inverse_margin": "inverse margin", "spectral_product": "spectral product",
    "frobenius_product": "Frobenius product", "path_norm": "path norm", "train_loss": "training loss",
    "pac_bayes_sharpness": "sharpness", "llc": "LLC",
}


def measure_scatter_figure(end: EndOfTraining) -> go.Figure:
    """Three scatter plots of the measured seeds, coloured by outcome: training loss against
    LLC, training loss against weight norm, and LLC against weight norm."""
    pairs = (("llc", "train_loss"), ("weight_norm", "train_loss"), ("weight_norm", "llc"))
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.08)
    values = end.measures()
    for col, (x, y) in enumerate(pairs, start=1):
        for code, name in enumerate(GROUPS):
            members = end.group == code
            if not members.any():
                continue
            fig.add_trace(go.Scatter(
                x=values[x][members].tolist(), y=values[y][members].tolist(), mode="markers",
                name=name, legendgroup=name, showlegend=col == 1,
                marker={"color": GROUP_COLOURS[name], "size": 6, "opacity": 0.75},
                customdata=end.index[members].tolist(),
                hovertemplate=f"seed %{{customdata}}<br>{MEASURE_NAMES[x]} %{{x:.4g}}<br>"
                              f"{MEASURE_NAMES[y]} %{{y:.4g}}<extra>{name}</extra>"), row=1, col=col)
        fig.update_xaxes(title_text=MEASURE_NAMES[x], row=1, col=col)
        fig.update_yaxes(title_text=MEASURE_NAMES[y], row=1, col=col,
                         type="log" if y == "train_loss" else None)
    return finish(fig, "End of training: loss, LLC and weight norm of each seed", height=420)


def llc_spread_figure(end: EndOfTraining) -> go.Figure:
    """Each seed's LLC estimate (mean over chains, with its standard error; filled dots) and its
    chains' individual estimates (open rings), seeds sorted by estimate and coloured by outcome."""
    order = end.llc.mean.argsort()
    fig = go.Figure()
    for code, name in enumerate(GROUPS):
        chosen = [int(i) for i in order if int(end.group[i]) == code]
        if not chosen:
            continue
        rank = [int((order == i).nonzero()) for i in chosen]
        chains = end.llc.per_chain.shape[1]
        fig.add_trace(go.Scatter(
            x=[r for r in rank for _ in range(chains)],
            y=end.llc.per_chain[chosen].flatten().tolist(), mode="markers", name=f"{name}: chains",
            legendgroup=name, hoverinfo="skip",
            # open rings at 0.7 read on a white page; the means are filled dots, larger, with bars
            marker={"color": GROUP_COLOURS[name], "size": 5, "opacity": 0.7, "symbol": "circle-open"}))
        fig.add_trace(go.Scatter(
            x=rank, y=end.llc.mean[chosen].tolist(), mode="markers", name=f"{name}: mean",
            legendgroup=name, marker={"color": GROUP_COLOURS[name], "size": 7, "symbol": "circle"},
            error_y={"type": "data", "array": end.llc.sem[chosen].tolist()},
            customdata=end.index[chosen].tolist(),
            hovertemplate="seed %{customdata}<br>LLC %{y:.4g}<extra></extra>"))
    fig.update_xaxes(title_text="seeds, by estimated LLC")
    fig.update_yaxes(title_text="LLC estimate")
    return finish(fig, "How much the LLC estimate varies between chains: each chain, and each seed's mean "
                       "+- standard error", height=420)


def llc_trajectory_figure(trajectory: Trajectory, title: str) -> go.Figure:
    """The LLC of each seed of `trajectory` along training (top, from the epoch the seed fits
    its training set), coloured by outcome, and its accuracy on all pairs against each of the
    pair's groups (bottom).

    With more than two snapshots each seed's estimates are joined by a line; with two or fewer
    (the S5 seeds at the defaults) they are markers with their error bars only, and the title
    names the snapshots, so that two estimates do not read as a course. The axis titles are
    short and the detail is in the subplot titles, so that the two stacked y-axis titles fit
    their rows. Where the LLC is markers only, the legend also lists each seed's two accuracy
    lines (solid and dotted), so that every mark drawn has an entry that looks like it; where
    some outcomes have no seed, the title names those drawn."""
    g1, g2 = trajectory.group_names
    few = len(trajectory.epochs) <= 2
    snapshots = " and ".join(str(int(e)) for e in trajectory.epochs)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.55, 0.45], vertical_spacing=0.1,
                        subplot_titles=(
                            f"LLC at epochs {snapshots} only (two snapshots, not a course)" if few
                            else "LLC, from the epoch each seed fits its training set",
                            f"accuracy on all pairs: solid against {g1}, dotted against {g2}"))
    metrics, logged = trajectory.result.metrics, trajectory.result.log_epochs.tolist()
    for label, k in trajectory.labels.items():
        colour = GROUP_COLOURS[GROUPS[int(trajectory.outcome[k])]]
        # Before the seed fits its training set the estimate is meaningless (not a minimum).
        epochs, llc = trajectory.after_fitting(k)
        shown = (trajectory.epochs[:, None] == epochs[None, :]).any(dim=1)
        fig.add_trace(go.Scatter(x=epochs.tolist(), y=llc.tolist(), mode="markers" if few else "lines+markers",
                                 name=label, legendgroup=label, line={"color": colour},
                                 marker={"color": colour, "size": 10 if few else 6},
                                 error_y={"type": "data", "array": trajectory.llc_sem[shown, k].tolist()}),
                      row=1, col=1)
        for metric, dash, group in (("acc_g1", "solid", g1), ("acc_g2", "dot", g2)):
            fig.add_trace(go.Scatter(x=logged, y=metrics[metric][:, k].tolist(), mode="lines",
                                     name=f"{label}: accuracy vs {group}", legendgroup=label,
                                     showlegend=few, line={"color": colour, "dash": dash},
                                     hovertemplate=f"accuracy vs {group}: %{{y:.3f}}<extra>{label}</extra>"),
                          row=2, col=1)
    fig.update_yaxes(title_text="LLC", row=1, col=1)
    fig.update_yaxes(title_text="accuracy", range=[0, 1.02], row=2, col=1)
    fig.update_xaxes(title_text="epoch", row=2, col=1)
    return finish(fig, _outcomes_drawn(title, trajectory), height=560)


def _outcomes_drawn(title: str, trajectory: Trajectory) -> str:
    """`title`, followed by the outcomes of the seeds drawn when some outcome has none (the S5
    seeds at the defaults are one seed that grokked neither), so that the title promises no more
    series than the figure draws."""
    g1, g2 = trajectory.group_names
    outcomes = (f"grokked {g1}", f"grokked {g2}", "neither")  # GROUPS, named for this pair
    present = [outcomes[c] for c in sorted({int(trajectory.outcome[k]) for k in trajectory.labels.values()})]
    if len(present) == len(outcomes):
        return title
    seeds = len(trajectory.labels)
    return f"{title}: {seeds} seed{'s' if seeds != 1 else ''}, outcome {' and '.join(present)} only"


def _positive_points(x: torch.Tensor, y: torch.Tensor) -> tuple[list[float], list[float]]:
    """The points of one curve whose y is above 0: a loss that underflows to 0 (float32
    cross-entropy at large norms) has no place on a log axis and is left out, not drawn as a plunge."""
    kept = y > 0
    return x[kept].tolist(), y[kept].tolist()


def rescaling_figure(norms: torch.Tensor, losses: torch.Tensor, end: EndOfTraining,
                     seeds: dict[str, int]) -> go.Figure:
    """Training loss against weight norm as the weights of chosen seeds are rescaled, on a log
    axis: each line ends where its loss underflows to 0 (the title says so when one does), and
    the x axis spans the norms drawn.

    Args:
        norms, losses: (K, S) from `lib.grokking.circuit_efficiency.loss_along_rescaling` for
            the S seeds of `seeds` (outcome name -> position among the measured seeds).
    """
    fig = go.Figure()
    drawn = []
    for s, (name, position) in enumerate(seeds.items()):
        x, y = _positive_points(norms[:, s], losses[:, s])
        drawn += x
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=f"{name} (seed {int(end.index[position])})",
                                 line={"color": GROUP_COLOURS[name]}))
    fig.add_vline(x=end.efficiency_norm, line={"dash": "dash", "color": "grey"},
                  annotation_text="common norm")
    if drawn:
        marks = drawn + [float(end.efficiency_norm)]
        fig.update_xaxes(range=[min(marks), max(marks)])
    fig.update_xaxes(title_text="weight norm after rescaling")
    fig.update_yaxes(title_text="training loss", type="log")
    title = "Circuit efficiency: training loss along each seed's rescaling"
    if bool((losses <= 0).any()):
        title += " (lines end where the loss underflows to 0)"
    return finish(fig, title, height=420)


def measures_over_time_figure(over_time: MeasuresOverTime) -> go.Figure:
    """The generalization gap and every measure along the training of one model: the cheap
    measures at every checkpoint (lines), the PAC-Bayes sharpness and the LLC at the sparse grid
    (markers); log scale where a measure is positive. Infinite values are left out of the plot.
    Every panel spans the same epochs, so that all get the same x ticks (a sparse panel's markers
    would otherwise widen its range and thin its ticks), and the subplot titles are short
    (`PANEL_TITLES`; the PAC-Bayes sharpness is "sharpness") so that each fits one line."""
    names = ["generalization gap", *over_time.sparse_measures]
    cols = 4
    rows = -(-len(names) // cols)
    titles = {**MEASURE_LABELS, **PANEL_TITLES}
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[titles[n] for n in names],
                        vertical_spacing=0.12, horizontal_spacing=0.06)
    epochs, sparse_epochs = over_time.epochs.tolist(), over_time.sparse_epochs.tolist()
    for i, name in enumerate(names):
        row, col = divmod(i, cols)
        dense = over_time.gap if i == 0 else over_time.measures.get(name)
        if dense is not None:
            values = torch.where(torch.isfinite(dense), dense, torch.nan)
            fig.add_trace(go.Scatter(x=epochs, y=values.tolist(), mode="lines", name="every checkpoint",
                                     legendgroup="dense", showlegend=i == 0,
                                     line={"color": PALETTE[0], "width": 1}), row=row + 1, col=col + 1)
        else:
            values = over_time.sparse_measures[name]
            values = torch.where(torch.isfinite(values), values, torch.nan)
            fig.add_trace(go.Scatter(x=sparse_epochs, y=values.tolist(), mode="lines+markers",
                                     name="sparse grid", legendgroup="sparse", showlegend=name == "llc",
                                     line={"color": PALETTE[1], "width": 1}, cliponaxis=False),
                          row=row + 1, col=col + 1)
        finite = values[~values.isnan()]
        positive = i > 0 and len(finite) > 0 and bool((finite > 0).all())
        fig.update_yaxes(type="log" if positive else None, row=row + 1, col=col + 1)
    fig.update_xaxes(range=[min(epochs + sparse_epochs), max(epochs + sparse_epochs)])
    return finish(fig, "Measures along the training of one S5 model (40% of its table)", height=260 * rows)


__all__ = [
    "GROUP_COLOURS", "llc_spread_figure", "llc_trajectory_figure", "measure_scatter_figure",
    "measures_over_time_figure", "rescaling_figure",
]
