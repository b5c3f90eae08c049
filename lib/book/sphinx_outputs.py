"""How the Sphinx book (MyST-NB) shows the chapters' plotly figures and ipywidgets panels.

MyST-NB renders a notebook output by its mime type and lets a project add renderers as
`myst_nb.mime_renderers` entry points (pyproject.toml registers the two classes below). The
notebooks never import this module; only `tools/build_book.py`'s Sphinx build uses it.

* `PlotlyFigure` draws `application/vnd.plotly.v1+json` outputs with plotly's own HTML export
  (`plotly.io.to_html`, figure JSON in, a div and a `Plotly.newPlot` call out) and the
  plotly.js that ships inside the plotly package, so figures, hovers and the static sliders
  over precomputed steps work with no network and without re-executing anything.
* `WidgetNote` replaces an ipywidgets panel, which needs a live kernel, by one sentence saying
  so, and drops tqdm's progress bars (frozen at their first state in a static page).
"""

from __future__ import annotations

from typing import Any, ClassVar

import plotly.io
from docutils import nodes

PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"

#: The sentence a static page shows where a chapter has a live ipywidgets panel.
WIDGET_NOTE = ("An interactive ipywidgets control appears here when the chapter runs in a live "
               "Jupyter kernel.")
#: The static file (in the build's _static) a page with figures loads: plotly.js itself.
PLOTLY_JS = "plotly.min.js"
#: Height of a figure whose layout sets none (plotly's own default).
DEFAULT_HEIGHT_PX = 450


def figure_html(figure: dict[str, Any]) -> str:
    """The HTML of one plotly figure: plotly's div and `Plotly.newPlot` call, filling the
    column's width up to the figure's own `layout.width` (so a figure drawn for a wide screen
    shrinks on a narrow one instead of running past the column)."""
    layout = dict(figure.get("layout", {}))
    width = layout.pop("width", None)
    height = layout.get("height") or DEFAULT_HEIGHT_PX
    body = plotly.io.to_html({"data": figure.get("data", []), "layout": layout, "frames": figure.get("frames", [])},
                             include_plotlyjs=False, full_html=False, validate=False, auto_play=False,
                             config={"responsive": True, "displaylogo": False},
                             default_width="100%", default_height=f"{height}px")
    style = f' style="max-width: {int(width)}px"' if width else ""
    return f'<div class="plotly-figure"{style}>{body}</div>'


class PlotlyFigure:
    """MyST-NB mime renderer of plotly figures (HTML builders only; others fall back to the
    output's next mime type)."""

    mime_priority_overrides: ClassVar = [("html", PLOTLY_MIME, 1), ("dirhtml", PLOTLY_MIME, 1),
                                         ("singlehtml", PLOTLY_MIME, 1)]

    @staticmethod
    def handle_mime(renderer, data, inline) -> list[nodes.Element] | None:
        if data.mime_type != PLOTLY_MIME:
            return None
        renderer.add_js_file("plotly", PLOTLY_JS, {})
        return [nodes.raw(text=figure_html(data.content), format="html", classes=["output", "plotly"])]


def widget_model(renderer, model_id: str) -> dict[str, Any]:
    """The saved state of widget `model_id` in the notebook's metadata ({} when not saved)."""
    widgets = renderer.renderer.nb_client.nb_metadata.get("widgets", {})
    return widgets.get(WIDGET_STATE_MIME, {}).get("state", {}).get(model_id, {})


def is_progress_bar(renderer, model_id: str) -> bool:
    """True for tqdm's notebook bar: a box one of whose children is a FloatProgress."""
    children = widget_model(renderer, model_id).get("state", {}).get("children", [])
    return any(widget_model(renderer, child.removeprefix("IPY_MODEL_")).get("model_name") == "FloatProgressModel"
               for child in children)


class WidgetNote:
    """MyST-NB mime renderer of ipywidgets views: a note for a panel, nothing for a progress bar."""

    mime_priority_overrides: ClassVar = ()

    @staticmethod
    def handle_mime(renderer, data, inline) -> list[nodes.Element] | None:
        if data.mime_type != WIDGET_VIEW_MIME:
            return None
        if is_progress_bar(renderer, data.content.get("model_id", "")):
            # Not []: MyST-NB would then show the bar's text form instead.
            return [nodes.comment(text="a progress bar, left out of the static book")]
        return [nodes.paragraph(text=WIDGET_NOTE, classes=["output", "widget-note"])]
