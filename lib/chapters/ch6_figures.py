"""Figures of chapter 6 (determination), as plotly figures, and its live perturbation panel."""

from __future__ import annotations

import math

import ipywidgets as widgets
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib.book.live import SliderRange, manual_panel
from lib.book.ordered_series import DISTINCT, MOST_ORDERED, REST_COLOUR, evenly_spaced
from lib.book.plotting import PALETTE, finish, slider_over_steps
from lib.grokking.study_sweep import GROUPS
from lib.grokking.authors_scale_jacobian import SketchRun
from lib.grokking.early_prediction import EarlyPrediction
from lib.grokking.perturbation import PerturbationStudy, perturbation_study
from lib.grokking.total_variation import TotalVariationStudy
from lib.grokking.training import SweepResult
from lib.grokking.training_jacobian import JacobianStudy
from lib.grokking.transplant_both_ways import TransplantStudy

#: Colour of each outcome group (as chapter 5).
GROUP_COLOURS = dict(zip(GROUPS, (PALETTE[0], PALETTE[1], PALETTE[7])))
#: The live panel's slider: the noise scale as a power of two (the study's grid, -25 .. 5).
SCALE_SLIDER = SliderRange(low=-25, high=5, step=1, start=-10)


def seed_labels(study: PerturbationStudy, seeds: torch.Tensor) -> list[str]:
    """The label 'seed S (outcome)' of every seed of the study."""
    return [f"seed {int(s)} ({GROUPS[int(g)]})" for s, g in zip(seeds, study.sweep_group)]


def _accuracy_traces(result: SweepResult, position: int, label: str, colour: str, legend: bool):
    """Accuracy against S4 (solid) and A4xZ2 (dotted) of one seed of `result` over training."""
    epochs = result.log_epochs.tolist()
    for metric, dash, group in (("acc_g1", "solid", "S4"), ("acc_g2", "dot", "A4xZ2")):
        yield go.Scatter(x=epochs, y=result.metrics[metric][:, position].tolist(), mode="lines",
                         name=label, legendgroup=label, showlegend=legend and metric == "acc_g1",
                         line={"color": colour, "dash": dash, "width": 1.5},
                         hovertemplate=f"{label}<br>epoch %{{x}}: accuracy against {group} "
                                       "%{y:.3f}<extra></extra>")


def perturbation_figure(study: PerturbationStudy, result: SweepResult, labels: list[str]) -> go.Figure:
    """Top: each seed's probability that a perturbation changes its outcome, against the
    checkpoint perturbed, one scale at a time (static slider). Bottom: the same seeds' accuracy
    against each group over training (`result` holds them, in the order of the study)."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1, row_heights=[0.5, 0.5])
    # the default two seeds of each outcome: six, each its own distinct colour (more repeat them)
    colours = [DISTINCT[i % len(DISTINCT)] for i in range(len(labels))]
    for b, (label, colour) in enumerate(zip(labels, colours)):
        for trace in _accuracy_traces(result, b, label, colour, legend=True):
            fig.add_trace(trace, row=2, col=1)
    steps = []
    for s, k in enumerate(study.log2_scales.tolist()):
        steps.append([go.Scatter(
            x=study.checkpoints.tolist(), y=study.probability[:, b, s].tolist(), mode="lines+markers",
            name=label, legendgroup=label, showlegend=False, line={"color": colour},
            hovertemplate=f"{label}<br>perturbed at epoch %{{x}} by 2^{k}: outcome changed in "
                          f"%{{y:.0%}} of {study.copies} copies<extra></extra>")
            for b, (label, colour) in enumerate(zip(labels, colours))])
    fig = slider_over_steps(steps, [f"2^{k}" for k in study.log2_scales.tolist()],
                            slider_prefix="noise scale: ", active=len(steps) // 2, figure=fig, row=1, col=1)
    fig.update_yaxes(title_text="P(outcome changes)", range=[-0.05, 1.05], row=1, col=1)
    fig.update_yaxes(title_text="accuracy (solid S4, dotted A4xZ2)", range=[0, 1.02], row=2, col=1)
    fig.update_xaxes(title_text="epoch", row=2, col=1)
    return finish(fig, "Perturbation sensitivity: does noise at this epoch change the final outcome?",
                  height=640)


def perturbation_heatmaps(study: PerturbationStudy, labels: list[str]) -> go.Figure:
    """One heatmap per seed: probability that the outcome changes, over (checkpoint, scale)."""
    n = len(labels)
    fig = make_subplots(rows=1, cols=n, subplot_titles=labels, horizontal_spacing=0.03, shared_yaxes=True)
    for b in range(n):
        fig.add_trace(go.Heatmap(
            x=study.checkpoints.tolist(), y=study.log2_scales.tolist(), z=study.probability[:, b, :].T.tolist(),
            zmin=0, zmax=1, colorscale="Viridis", showscale=b == n - 1,
            colorbar={"title": "P(change)"},
            hovertemplate="epoch %{x}, scale 2^%{y}: %{z:.0%} changed<extra></extra>"), row=1, col=b + 1)
        fig.update_xaxes(title_text="epoch", row=1, col=b + 1)
    fig.update_yaxes(title_text="log2 noise scale", row=1, col=1)
    fig.update_annotations(font_size=11)
    return finish(fig, "Where each seed's fate is still open: P(outcome changes) by epoch and scale",
                  height=360)


def rerun_perturbation(result: SweepResult, position: int, log2_scale: int, copies: int, seed: int,
                       grok_threshold: float, workers: int = 1, noise_shape: str = "init") -> go.Figure:
    """The perturbation study of the live panel: seed `position` of `result` perturbed at each
    of its snapshots by 2**`log2_scale` (noise of `noise_shape`), `copies` times, continued to
    the end; its change probability and accuracy shift over the checkpoints, above its accuracy
    over training."""
    study = perturbation_study(result, torch.tensor([position]), [int(log2_scale)], copies,
                               torch.Generator().manual_seed(seed), grok_threshold, workers, noise_shape)
    label = f"seed {int(result.seeds[position])} ({GROUPS[int(study.sweep_group[0])]})"
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1)
    fig.add_trace(go.Scatter(x=study.checkpoints.tolist(), y=study.probability[:, 0, 0].tolist(),
                             mode="lines+markers", name="P(outcome changes)", line={"color": PALETTE[1]}),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=study.checkpoints.tolist(), y=study.accuracy_shift[:, 0, 0].tolist(),
                             mode="lines+markers", name="mean |change of final accuracy|",
                             line={"color": PALETTE[4], "dash": "dash"}), row=1, col=1)
    for trace in _accuracy_traces(result, position, label, PALETTE[0], legend=True):
        fig.add_trace(trace, row=2, col=1)
    fig.update_yaxes(title_text="change", range=[-0.05, 1.05], row=1, col=1)
    fig.update_yaxes(title_text="accuracy", range=[0, 1.02], row=2, col=1)
    fig.update_xaxes(title_text="epoch", row=2, col=1)
    return finish(fig, f"{label}, noise 2^{int(log2_scale)}, {copies} copies per checkpoint", height=520)


def perturbation_panel(result: SweepResult, labels: list[str], copies: int, seed: int,
                       grok_threshold: float, workers: int = 1, noise_shape: str = "init") -> widgets.interactive:
    """Live panel: a menu of the seeds of `result`, the scale slider (`SCALE_SLIDER`) and a
    run button that reruns `rerun_perturbation` for that seed and scale."""
    def view(position: int, log2_scale: int) -> go.Figure:
        return rerun_perturbation(result, position, log2_scale, copies, seed, grok_threshold, workers, noise_shape)

    menu = widgets.Dropdown(options=[(label, b) for b, label in enumerate(labels)], description="seed")
    return manual_panel(view, position=menu, log2_scale=SCALE_SLIDER.int_slider("log2 scale"))


def total_variation_figure(study: TotalVariationStudy) -> go.Figure:
    """Histograms, per outcome, of each seed's argmax-flip rate by the authors' definition (all
    pairs, their snapshot spacing), by the book's (pairs outside the training set, its window)
    and of its test-set total variation over the book's window; the outcomes' bars stacked
    (opaque: translucent bars laid over each other read dim on a dark page)."""
    fig = make_subplots(rows=1, cols=3, subplot_titles=("argmax flips, the authors' definition",
                                                        "argmax flips, the book's", "total variation (book's window)"))
    for code, name in enumerate(GROUPS):
        members = study.group == code
        if not members.any():
            continue
        for col, values in ((1, study.authors_flips), (2, study.test_flips), (3, study.test_tv)):
            fig.add_trace(go.Histogram(x=values[members].tolist(), name=name, legendgroup=name,
                                       showlegend=col == 1, marker={"color": GROUP_COLOURS[name]},
                                       nbinsx=30), row=1, col=col)
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title_text="seeds", row=1, col=1)
    epochs, authors = study.epochs.tolist(), study.authors_epochs.tolist()
    return finish(fig, f"Late instability by outcome: epochs {authors[0]}-{authors[-1]} (authors'), "
                       f"{epochs[0]}-{epochs[-1]} (book's)", height=400)


#: The seeds that ungrokked: distinct colours other than blue (the kept seeds are grey).
LOST_COLOURS = [c for c in DISTINCT if c not in (PALETTE[0], PALETTE[7])]


def transplant_figure(study: TransplantStudy, threshold: float, shown: int = 4) -> go.Figure:
    """For each direction, accuracy on the group grokked first over the epochs on the
    intersection: up to `shown` seeds that ungrokked it (coloured) and as many that kept it
    (grey); dotted, their training accuracy on the intersection."""
    groups = list(study.runs)
    titles = [f"{getattr(study.runs[g].pair, g).name} first, then the intersection" for g in groups]
    fig = make_subplots(rows=1, cols=len(groups), subplot_titles=titles, shared_yaxes=True)
    for col, group in enumerate(groups, start=1):
        run, fates = study.runs[group], study.fates[group]
        epochs = run.second.log_epochs.tolist()
        ungrokked = fates.ungrokked.nonzero().squeeze(1)[:shown].tolist()
        kept = (fates.grokked & ~fates.ungrokked).nonzero().squeeze(1)[:shown].tolist()
        for rank, b in enumerate(ungrokked + kept):
            lost = b in ungrokked
            colour = LOST_COLOURS[rank % len(LOST_COLOURS)] if lost else "#999999"
            label = f"seed {int(run.first.seeds[b])}: " + ("ungrokked" if lost else "kept it")
            fig.add_trace(go.Scatter(x=epochs, y=run.second.metrics[f"acc_{group}"][:, b].tolist(),
                                     mode="lines", name=label, line={"color": colour}), row=1, col=col)
            fig.add_trace(go.Scatter(x=epochs, y=run.second.metrics["train_acc"][:, b].tolist(),
                                     mode="lines", name=label, showlegend=False,
                                     line={"color": colour, "dash": "dot", "width": 1}), row=1, col=col)
        fig.add_hline(y=threshold, line={"color": "#444444", "width": 0.5}, row=1, col=col)
        fig.update_xaxes(title_text="epoch on the intersection", row=1, col=col)
    fig.update_yaxes(title_text="accuracy on the group's table", row=1, col=1)
    return finish(fig, "Transplant: does a grokked group survive training on the intersection?", height=420)


def jacobian_figure(study: JacobianStudy) -> go.Figure:
    """Left: the singular values of d theta_t / d theta_0 in decreasing order (float64), one
    line per segment boundary t (at most five, spread evenly). Right: the largest singular value
    (float64 and float32) and the accuracy on the whole table against the step."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("spectrum at each segment boundary",
                                                        "largest singular value and accuracy"),
                        specs=[[{}, {"secondary_y": True}]])
    steps = study.boundaries.tolist()
    # at most five boundaries' spectra, in distinct colours other than the accuracy's green
    drawn = evenly_spaced(range(len(steps)), MOST_ORDERED)
    colours = [c for c in DISTINCT if c != PALETTE[2]]
    for i, colour in zip(drawn, colours):
        values = study.singular_values["float64"][i]
        fig.add_trace(go.Scatter(x=list(range(1, len(values) + 1)), y=values.clamp_min(1e-12).tolist(), mode="lines",
                                 name=f"step {steps[i]}", line={"color": colour}), row=1, col=1)
    for dtype, dash in (("float64", "solid"), ("float32", "dot")):
        if dtype in study.singular_values:
            fig.add_trace(go.Scatter(x=steps, y=study.singular_values[dtype][:, 0].tolist(), mode="lines+markers",
                                     name=f"largest, {dtype}", line={"color": REST_COLOUR, "dash": dash}),
                          row=1, col=2)
    fig.add_trace(go.Scatter(x=steps, y=study.test_accuracy.tolist(), mode="lines+markers",
                             name="accuracy on the whole table", line={"color": PALETTE[2]}),
                  row=1, col=2, secondary_y=True)
    fig.update_xaxes(title_text="rank", row=1, col=1)
    fig.update_xaxes(title_text="training step", row=1, col=2)
    fig.update_yaxes(title_text="singular value", type="log", row=1, col=1)
    # secondary_y=False: without it the update reaches the accuracy axis too and makes it logarithmic.
    fig.update_yaxes(title_text="largest singular value", type="log", row=1, col=2, secondary_y=False)
    fig.update_yaxes(title_text="accuracy", type="linear", range=[0, 1.02], row=1, col=2, secondary_y=True)
    return finish(fig, f"Training Jacobian ({study.n_parameters} x {study.n_parameters}), composed over "
                       f"segments of {study.segment} steps", height=440)


def sketched_jacobian_figure(run: SketchRun) -> go.Figure:
    """Left: the lower bound on the largest singular value of d theta_t / d theta_0 (float64 and
    float32) and the root-mean-square singular value, with the accuracy on the whole table,
    against the step. Right: the K largest singular values (randomized SVD) at the boundaries
    read (at most four, spread evenly), against the line at 1 where a bulk would sit."""
    study = run.study
    fig = make_subplots(rows=1, cols=2, subplot_titles=("largest and typical singular value",
                                                        f"the {study.sketch_size} largest singular values"),
                        specs=[[{"secondary_y": True}, {}]], horizontal_spacing=0.2)
    steps = study.boundaries.tolist()
    for dtype, dash in (("float64", "solid"), ("float32", "dot")):
        # a float32 run whose tangents overflowed has no bound there: a gap in its line
        bound = [value if math.isfinite(value) else None for value in study.norm_lower_bound[dtype].tolist()]
        fig.add_trace(go.Scatter(x=steps, y=bound, mode="lines+markers",
                                 name=f"largest (lower bound), {dtype}", line={"color": REST_COLOUR, "dash": dash}),
                      row=1, col=1)
    rms = (study.frobenius_squared / study.n_parameters).sqrt()
    fig.add_trace(go.Scatter(x=steps, y=rms.tolist(), mode="lines+markers", name="root-mean-square",
                             line={"color": PALETTE[1]}), row=1, col=1)
    fig.add_trace(go.Scatter(x=steps, y=study.test_accuracy.tolist(), mode="lines", name="accuracy on the whole table",
                             line={"color": PALETTE[2]}), row=1, col=1, secondary_y=True)
    # at most four spectra, in distinct colours other than the root-mean-square's and the accuracy's
    colours = [c for c in DISTINCT if c not in (PALETTE[1], PALETTE[2])]
    for spectrum, colour in zip(evenly_spaced(study.spectra, len(colours)), colours):
        fig.add_trace(go.Scatter(x=list(range(1, spectrum.top.numel() + 1)), y=spectrum.top.clamp_min(1e-12).tolist(),
                                 mode="lines", name=f"step {spectrum.step}", line={"color": colour}),
                      row=1, col=2)
    fig.add_hline(y=1.0, line={"color": "#999999", "dash": "dot", "width": 1}, row=1, col=2)
    fig.update_xaxes(title_text="training step", row=1, col=1)
    fig.update_xaxes(title_text="rank", row=1, col=2)
    # secondary_y=False: without it the update reaches the accuracy axis too and makes it logarithmic.
    fig.update_yaxes(title_text="singular value", type="log", row=1, col=1, secondary_y=False)
    fig.update_yaxes(title_text="accuracy", type="linear", range=[0, 1.02], row=1, col=1, secondary_y=True)
    fig.update_yaxes(title_text="singular value (estimate)", type="log", row=1, col=2)
    return finish(fig, f"Training Jacobian at P = {study.n_parameters:,}, read through {study.sketch_size} "
                       "directions", height=440)


def early_prediction_figure(prediction: EarlyPrediction, decision_epochs: list[int],
                            choice_epochs: list[int]) -> go.Figure:
    """Held-out AUC of the outcome predicted from epoch t, against t, with the perturbed seeds'
    decision epochs and the epochs at which their choice shows (ticks at the bottom)."""
    fig = go.Figure()
    epochs = prediction.epochs.tolist()
    fig.add_trace(go.Scatter(x=epochs, y=prediction.auc_either.tolist(), mode="lines",
                             name="grokked either vs neither", line={"color": PALETTE[2]}))
    fig.add_trace(go.Scatter(x=epochs, y=prediction.auc_group.tolist(), mode="lines",
                             name="S4 vs A4xZ2 (grokkers)", line={"color": PALETTE[0]}))
    marks = ((decision_epochs, 0.03, "decision epochs (perturbation)", "triangle-up", PALETTE[1]),
             (choice_epochs, 0.08, "choice shows in test accuracy", "circle", PALETTE[7]))
    for epochs_, y, name, symbol, colour in marks:
        shown = [e for e in epochs_ if e >= 0]
        fig.add_trace(go.Scatter(x=shown, y=[y] * len(shown), mode="markers", name=name,
                                 marker={"symbol": symbol, "size": 9, "color": colour}))
    fig.add_hline(y=0.5, line={"color": "#999999", "dash": "dot", "width": 1})
    fig.update_yaxes(title_text="held-out ROC AUC", range=[0, 1.02])
    fig.update_xaxes(title_text="epoch t of the features")
    return finish(fig, "How early is the outcome readable?", height=420)


__all__ = [
    "GROUP_COLOURS", "SCALE_SLIDER", "early_prediction_figure", "jacobian_figure", "perturbation_figure",
    "perturbation_heatmaps", "perturbation_panel", "rerun_perturbation", "seed_labels", "sketched_jacobian_figure",
    "total_variation_figure", "transplant_figure",
]
