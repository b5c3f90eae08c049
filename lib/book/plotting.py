"""Plotly conventions shared by every chapter, and the static slider used by the rendered book.

Chapters build their figures with functions in the chapter modules; those functions use the
helpers here so that all figures look alike and render in JupyterLab, in the MyST site and in
the offline HTML book. Figures are emitted as the plotly JSON mimetype only (no 4 MB copy of
plotly.js inside every notebook); each renderer supplies plotly.js itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import sample_colorscale

#: Colours used across the book: one per outcome or series, colour-blind safe (Okabe-Ito).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]

#: Axis and colour-bar numbers in exponent notation (1e-6 as 10^-6), never SI prefixes: a loss
#: of "1µ" reads as a unit, not a number.
pio.templates["book_numbers"] = go.layout.Template(layout={
    "xaxis": {"exponentformat": "power"},
    "yaxis": {"exponentformat": "power"},
    "coloraxis": {"colorbar": {"exponentformat": "power"}},
}, data={
    "heatmap": [go.Heatmap(colorbar={"exponentformat": "power"})],
    "scatter": [go.Scatter(marker={"colorbar": {"exponentformat": "power"}})],
})

#: The book's template: plotly's white background with the number format above.
TEMPLATE = "plotly_white+book_numbers"


def configure_notebook_rendering() -> None:
    """Make `fig.show()` emit only the plotly JSON mimetype (every chapter calls this first)."""
    pio.renderers.default = "plotly_mimetype"
    pio.templates.default = TEMPLATE


def ordered_colours(count: int) -> list[str]:
    """`count` distinct colours along a sequential scale, for ordered series (distances, sizes).

    The palette above has eight colours and would repeat one for the ninth series; an ordered
    quantity also reads better as a gradient (chapter 3's lines per distance and per size).
    """
    if count <= 1:
        return sample_colorscale("Viridis", [0.0])[:count]
    return sample_colorscale("Viridis", [0.9 * i / (count - 1) for i in range(count)])


def finish(fig: go.Figure, title: str, *, height: int = 420, width: int | None = None) -> go.Figure:
    """Apply the book's common layout (title, margins, template) to `fig` and return it."""
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left"},
        height=height,
        width=width,
        template=TEMPLATE,
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
        font={"size": 13},
    )
    return fig


def slider_over_steps(
    traces_per_step: Sequence[Sequence[go.BaseTraceType]],
    step_labels: Sequence[str],
    *,
    slider_prefix: str,
    active: int = 0,
    figure: go.Figure | None = None,
    row: int | None = None,
    col: int | None = None,
) -> go.Figure:
    """A static figure whose slider shows one precomputed group of traces per step.

    Every step's traces are added to one figure; moving the slider toggles which group is
    visible. This works in a static HTML page with no Python kernel, which is what the
    rendered book needs (chapter 1 uses it for layers and perturbation scales, chapter 2 for
    checkpoints). In a live kernel the chapters offer an ipywidgets slider instead.

    Args:
        traces_per_step: for each slider step, the traces shown at that step.
        step_labels: the label under each slider step.
        slider_prefix: text before the current step's label, e.g. "layer: ".
        active: the step shown first.
        figure: a figure to add the steps to (for example subplots whose other panels do
            not change); its own traces stay visible at every step. A new figure if None.
        row, col: the subplot of `figure` that the steps' traces go to (chapter 6).
    """
    if len(traces_per_step) != len(step_labels) or not traces_per_step:
        raise ValueError("need one non-empty list of step labels matching traces_per_step")
    fig = go.Figure() if figure is None else figure
    fixed = len(fig.data)  # traces already there, shown at every step
    owner: list[int] = []
    for step, traces in enumerate(traces_per_step):
        for trace in traces:
            trace.visible = step == active
            fig.add_trace(trace, row=row, col=col)
            owner.append(step)
    steps = [
        {
            "method": "update",
            "label": label,
            "args": [{"visible": [True] * fixed + [o == step for o in owner]}],
        }
        for step, label in enumerate(step_labels)
    ]
    fig.update_layout(
        sliders=[{
            "active": active,
            "currentvalue": {"prefix": slider_prefix},
            "pad": {"t": 40},
            "steps": steps,
        }]
    )
    return fig
