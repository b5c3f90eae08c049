"""The book's one figure style, applied to a plotly figure's JSON when the HTML book is staged.

`restyle(figure)` takes the `application/vnd.plotly.v1+json` output of a notebook cell (a dict
with "data" and "layout") and returns a restyled copy: one font, transparent backgrounds with
grid and axis lines that read on a light and a dark page, axes that make room for their labels
(automargin), colour-bar titles beside their bars (a title on top runs into the top tick
label), the legend horizontal below the plot, subplot titles marked so that the page can wrap
them, no legend entry listed twice, and two generic repairs of what plotly's Python helpers
leave wrong (below). What depends on the reader's screen is left to the page:
`tools/sphinx/_static/plotly-figures.js` wraps titles to the width the figure gets, moves the
legend below the plot and grows the figure (and its box) by the legend's and the wrapped
titles' height, widens the gaps between subplots until their labels no longer overlap, and
sets the text colour of the theme's light or dark mode (pydata-sphinx-theme's
`html[data-theme]`), again each time the reader resizes the window or toggles the theme.

Why at staging and not in the chapters' figure code (`lib/book/plotting.py`, `lib/chapters`):
the style is presentation, not a result. It must follow the reader's theme and width, which
only render time knows, and it must reach the outputs of chapters executed before it existed:
each chapter's committed outputs are tied to a fingerprint of the code it imports, and editing
that code would ask for every chapter to be re-executed (hours) for no change in a number. So
`tools/build_book.py` calls `restyle` on every plotly output of every chapter when it stages the
book, and no chapter imports this module. When the chapters are next re-executed anyway,
`lib.book.plotting.finish` may call the same `restyle` (on `fig.to_plotly_json()`), so that
JupyterLab shows the same style; staging it again is harmless (`restyle` is idempotent).

The two repairs, both generic (they change only what is certainly wrong):

* `fig.add_hline(..., annotation_text=...)` on a logarithmic axis puts the line at the value
  but its label at the value read as a power of ten (plotly wants log10 on log axes for
  annotations only): the label is moved to its line.
* A logarithmic axis whose explicit range holds its traces only when read as linear values (a
  secondary accuracy axis given range [0, 1.02] that inherited `type="log"` from an
  `update_yaxes` on its subplot) is made linear again.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

#: The font of the book's figures: the system's sans-serif, as the theme's text.
FONT_FAMILY = ('-apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, '
               '"Noto Sans", "Liberation Sans", sans-serif')
FONT_SIZE = 13
TITLE_SIZE = 16
SUBPLOT_TITLE_SIZE = 13
#: The text colour before the page sets the theme's (the light theme's text colour).
TEXT_COLOUR = "#222832"
#: Grid and axis lines: a grey with transparency reads on a white and on a near-black page.
GRID_COLOUR = "rgba(128, 128, 128, 0.22)"
LINE_COLOUR = "rgba(128, 128, 128, 0.55)"
TRANSPARENT = "rgba(0, 0, 0, 0)"
#: The `name` that marks an annotation as a subplot title (the page wraps it to its subplot).
SUBPLOT_TITLE = "book-subplot-title"

_AXIS = re.compile(r"^(x|y)axis(\d*)$")


def _axes(layout: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The layout's cartesian axes by plotly id ("x", "y2", ...)."""
    return {f"{m.group(1)}{m.group(2)}": axis for key, axis in layout.items()
            if (m := _AXIS.match(key)) and isinstance(axis, dict)}


def _axis_style(axis: dict[str, Any], letter: str) -> None:
    axis.update(automargin=True, gridcolor=GRID_COLOUR, linecolor=LINE_COLOUR, zerolinecolor=LINE_COLOUR,
                showline=True, ticklabelstandoff=4 if letter == "y" else 2)
    if axis.get("overlaying"):
        # a second axis over a plot: its own ticks (not ticks at the first axis's grid lines,
        # which crowd where the two scales differ) and no second grid
        axis["showgrid"] = False
        if "tickvals" not in axis:
            axis["tickmode"] = "auto"
    axis.setdefault("title", {})
    if isinstance(axis["title"], str):
        axis["title"] = {"text": axis["title"]}
    axis["title"].setdefault("standoff", 8)


def _colour_bar_style(bar: dict[str, Any]) -> None:
    title = bar.setdefault("title", {})
    if isinstance(title, str):
        bar["title"] = title = {"text": title}
    title["side"] = "right"
    bar.update(outlinewidth=0, exponentformat=bar.get("exponentformat", "power"))


def _subplot_titles(layout: dict[str, Any]) -> None:
    """Mark the annotations make_subplots writes as subplot (column, row) titles: on paper
    coordinates, no arrow, centred on a subplot's x domain and just above its top (or, turned,
    beside a row)."""
    axes = _axes(layout)
    centres = {round((a["domain"][0] + a["domain"][1]) / 2, 6) for k, a in axes.items()
               if k[0] == "x" and "domain" in a}
    tops = {round(a["domain"][1], 6) for k, a in axes.items() if k[0] == "y" and "domain" in a}
    for note in layout.get("annotations", []):
        if note.get("xref") == "paper" and note.get("yref") == "paper" and note.get("showarrow") is False \
                and note.get("yanchor") == "bottom" and note.get("xanchor", "center") == "center" \
                and not note.get("textangle") \
                and round(note.get("x", -1), 6) in centres and round(note.get("y", -1), 6) in tops:
            note["name"] = SUBPLOT_TITLE
            note.setdefault("font", {}).setdefault("size", SUBPLOT_TITLE_SIZE)


def _visibility_states(figure: dict[str, Any]) -> list[list[bool]]:
    """For each trace, whether it shows in each state the reader can reach: as loaded and at
    each step of each slider or button that sets `visible`."""
    data = figure.get("data", [])
    initial = [trace.get("visible", True) is not False for trace in data]
    states = [initial]
    layout = figure.get("layout", {})
    for control in [*layout.get("sliders", []), *layout.get("updatemenus", [])]:
        for step in control.get("steps", control.get("buttons", [])):
            args = step.get("args") or [{}]
            visible = args[0].get("visible") if isinstance(args[0], dict) else None
            if isinstance(visible, list) and len(visible) == len(data):
                states.append([v is not False for v in visible])
    return [[state[i] for state in states] for i in range(len(data))]


def _one_legend_entry_per_name(figure: dict[str, Any]) -> None:
    """A trace whose legend entry repeats an earlier one's name (and legend) and that shows only
    where that earlier one shows leaves the legend; the two share a legend group, so one click
    hides both."""
    data = figure.get("data", [])
    states = _visibility_states(figure)
    shown: dict[tuple[str, str], list[int]] = {}
    for i, trace in enumerate(data):
        if trace.get("showlegend") is False or not trace.get("name"):
            continue
        key = (str(trace["name"]), trace.get("legend", "legend"))
        for j in shown.get(key, []):
            if all(earlier or not mine for earlier, mine in zip(states[j], states[i])):
                group = data[j].get("legendgroup") or trace.get("legendgroup") or f"book: {trace['name']}"
                data[j].setdefault("legendgroup", group)
                trace.setdefault("legendgroup", group)
                trace["showlegend"] = False
                break
        else:
            shown.setdefault(key, []).append(i)


#: A legend with more entries than this lists one entry per legend group instead (chapter 2's
#: loss per length over ten seeds has about fifty): below the plot it would leave the plot no room.
MAX_LEGEND_ENTRIES = 24


def _one_legend_entry_per_group(figure: dict[str, Any]) -> None:
    """When the legend would list more than `MAX_LEGEND_ENTRIES` entries and the traces carry
    legend groups, each group keeps one entry, named by what its members' names share up to the
    last comma ("length 1, seed 0" ... "length 1, seed 9" -> "length 1"); every trace keeps its
    own name on hover."""
    shown = [t for t in figure.get("data", []) if t.get("showlegend") is not False and t.get("name")]
    if len(shown) <= MAX_LEGEND_ENTRIES or not all(t.get("legendgroup") for t in shown):
        return
    groups: dict[str, list[dict[str, Any]]] = {}
    for trace in shown:
        groups.setdefault(str(trace["legendgroup"]), []).append(trace)
    for group, members in groups.items():
        names = [str(t["name"]) for t in members]
        shared = names[0]
        for name in names[1:]:
            while not name.startswith(shared):
                shared = shared[:-1]
        label = shared[:shared.rfind(",")] if len(members) > 1 and "," in shared else shared.rstrip(" ,")
        for k, trace in enumerate(members):
            trace.setdefault("hovertemplate", f"{trace['name']}<br>%{{x}}, %{{y}}<extra></extra>")
            if k == 0:
                trace["name"] = label or group
            else:
                trace["showlegend"] = False


def _hline_labels_on_log_axes(layout: dict[str, Any]) -> None:
    """Move the label of a horizontal (vertical) line on a log axis to the line: an annotation
    at the line's own value on that axis, where a line shape sits, is given log10 of it."""
    axes = _axes(layout)
    for note in layout.get("annotations", []):
        for letter, other in (("y", "x"), ("x", "y")):
            ref = str(note.get(f"{letter}ref", ""))
            axis_id = ref.split(" ")[0]
            value = note.get(letter)
            if axis_id not in axes or axes[axis_id].get("type") != "log" or not isinstance(value, (int, float)) \
                    or value <= 0:
                continue
            if any(shape.get(f"{letter}ref") == ref and shape.get(f"{letter}0") == value == shape.get(f"{letter}1")
                   and shape.get(f"{other}0") != shape.get(f"{other}1") for shape in layout.get("shapes", [])):
                note[letter] = math.log10(value)


def _linear_ranges_on_log_axes(figure: dict[str, Any]) -> None:
    """Make linear a log axis whose explicit range holds its traces' values only when read as
    linear values (the range of a log axis is in powers of ten)."""
    layout = figure["layout"]
    for axis_id, axis in _axes(layout).items():
        limits = axis.get("range")
        if axis.get("type") != "log" or not isinstance(limits, list) or len(limits) != 2 \
                or not all(isinstance(v, (int, float)) for v in limits):
            continue
        letter = axis_id[0]
        values = [v for trace in figure.get("data", []) if trace.get(f"{letter}axis", letter) == axis_id
                  for v in (trace.get(letter) or []) if isinstance(v, (int, float))]
        low, high = min(limits), max(limits)
        if values and all(low <= v <= high for v in values) \
                and not all(v > 0 and low <= math.log10(v) <= high for v in values):
            axis["type"] = "linear"


def restyle(figure: dict[str, Any]) -> dict[str, Any]:
    """The book's style applied to plotly figure JSON `figure` (not changed): a new dict."""
    figure = copy.deepcopy(figure)
    layout = figure.setdefault("layout", {})
    _linear_ranges_on_log_axes(figure)
    _hline_labels_on_log_axes(layout)
    layout.update(paper_bgcolor=TRANSPARENT, plot_bgcolor=TRANSPARENT)
    layout["font"] = {**layout.get("font", {}), "family": FONT_FAMILY, "size": FONT_SIZE, "color": TEXT_COLOUR}
    title = layout.get("title", {})
    if isinstance(title, str):
        title = {"text": title}
    if title.get("text"):
        layout["title"] = {**title, "x": 0, "xref": "container", "xanchor": "left", "pad": {"l": 8, "t": 10},
                           "y": 1, "yref": "container", "yanchor": "top",
                           "font": {**title.get("font", {}), "size": TITLE_SIZE}}
    template = layout.get("template", {}).get("layout", {})
    for letter in ("x", "y"):       # every axis, also those the layout does not name
        if isinstance(template.get(f"{letter}axis"), dict):
            template[f"{letter}axis"].update(gridcolor=GRID_COLOUR, linecolor=LINE_COLOUR, zerolinecolor=LINE_COLOUR)
        if any(trace.get(letter) is not None for trace in figure.get("data", [])):
            layout.setdefault(f"{letter}axis", {})
    for axis_id, axis in _axes(layout).items():
        _axis_style(axis, axis_id[0])
    for key, value in layout.items():
        if key.startswith("coloraxis") and isinstance(value, dict):
            _colour_bar_style(value.setdefault("colorbar", {}))
    for trace in figure.get("data", []):
        if "colorbar" in trace or trace.get("type") in ("heatmap", "contour", "histogram2d") and trace.get("showscale", True):
            _colour_bar_style(trace.setdefault("colorbar", {}))
        marker = trace.get("marker")
        if isinstance(marker, dict) and "colorbar" in marker:
            _colour_bar_style(marker["colorbar"])
    for frame in figure.get("frames", []) or []:
        for trace in frame.get("data", []):
            if "colorbar" in trace:
                _colour_bar_style(trace["colorbar"])
    _subplot_titles(layout)
    _one_legend_entry_per_name(figure)
    _one_legend_entry_per_group(figure)
    layout["legend"] = {**layout.get("legend", {}), "orientation": "h", "x": 0, "xanchor": "left", "y": -0.2,
                        "yanchor": "top", "bgcolor": TRANSPARENT, "font": {"size": 12}}
    layout["hoverlabel"] = {**layout.get("hoverlabel", {}), "font": {"family": FONT_FAMILY}}
    margin = layout.get("margin", {})
    layout["margin"] = {**margin, "l": min(margin.get("l", 60), 60), "r": min(margin.get("r", 20), 20),
                        "t": max(margin.get("t", 60), 50), "b": max(margin.get("b", 50), 40)}
    return figure


__all__ = ["SUBPLOT_TITLE", "restyle"]
