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

Colours, one plotly template per mode (`mode_colours`): the figure's template gets the mode's
colour sequence (`PALETTE`: Okabe-Ito's hues, each in a variant that keeps a contrast of at
least 3:1 with that mode's page and that stays apart from the others for colour-blind readers)
and marks of the mode's colours (error bars, default shape lines, arrows); every colour a
chapter set explicitly is mapped onto the mode: an Okabe-Ito colour onto its variant, a colour
sampled from Viridis for an ordered series (`lib.book.plotting.ordered_colours`) onto the part
of Viridis that reads on that page, black onto the theme's text colour, a white line or label
(drawn for a heatmap on a white page) onto the highlight colour, any other colour made just
dark (light mode) or light (dark mode) enough; a heatmap's colour scale whose low or high end
is near white is turned, in dark mode, into one whose near-white end is near the page's dark
background (and dark enough for white cell text: `TURNED_SPAN`), and one whose end is near
black is lifted off the dark page. The figure is staged in light mode, and both modes' colours
ride along in `layout.meta.bookColours` for the page script to apply.

The module runs over 400 lines because the two modes' colours (the palette, the mapping of a
chapter's colours onto each mode, the heatmap scales) must be decided together with the layout
repairs that read them, in the one pass `restyle` makes over a figure; splitting them would
spread one figure's style over two modules that each need the other.

Why at staging and not in the chapters' figure code (`lib/book/plotting.py`, `lib/chapters`):
the style is presentation, not a result. It must follow the reader's theme and width, which
only render time knows, and it must reach the outputs of chapters executed before it existed:
each chapter's committed outputs are tied to a fingerprint of the code it imports, and editing
that code would ask for every chapter to be re-executed (hours) for no change in a number. So
`tools/build_book.py` calls `restyle` on every plotly output of every chapter when it stages the
book, and no chapter imports this module. When the chapters are next re-executed anyway,
`lib.book.plotting.finish` may call the same `restyle` (on `fig.to_plotly_json()`), so that
JupyterLab shows the same style; staging it again is harmless (`restyle` is idempotent).

The four repairs, all generic (they change only what is certainly wrong):

* `fig.add_hline(..., annotation_text=...)` on a logarithmic axis puts the line at the value
  but its label at the value read as a power of ten (plotly wants log10 on log axes for
  annotations only): the label is moved to its line.
* A logarithmic axis whose explicit range holds its traces only when read as linear values (a
  secondary accuracy axis given range [0, 1.02] that inherited `type="log"` from an
  `update_yaxes` on its subplot) is made linear again.
* A heatmap's axes draw a zero line and a grid through its cells: they are removed.
* An axis whose data do not change sign draws its zero line at its edge (a second axis line
  through the first marks) or floating over the plot's floor: it is removed there.
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

# --- Colours in the theme's two modes --------------------------------------------------------

MODES = ("light", "dark")
#: The page's background in each mode of sphinx-book-theme.
BACKGROUND = {"light": "#ffffff", "dark": "#121212"}
#: The theme's text colour in each mode (what the page script gives a figure's text).
INK = {"light": TEXT_COLOUR, "dark": "#d8dde4"}
#: The least contrast of a line, marker or bar with the page (WCAG asks 3:1 of graphics).
MIN_CONTRAST = {"light": 3.2, "dark": 4.0}
#: The book's colour sequence: Okabe-Ito's hues (the colours the chapters use, key), each as
#: (light mode, dark mode). Light mode darkens the ones under 3:1 on white (orange, sky blue,
#: reddish purple) and gives yellow's place to indigo, so that orange, vermillion and yellow do
#: not merge for a protanope once darkened; dark mode lightens blue (3.6:1 on the dark page).
PALETTE = {
    "#0072b2": ("#0072B2", "#2F86C8"),   # blue
    "#d55e00": ("#D55E00", "#D55E00"),   # vermillion
    "#009e73": ("#009E73", "#009E73"),   # bluish green
    "#cc79a7": ("#B8579A", "#CC79A7"),   # reddish purple
    "#e69f00": ("#8C5A00", "#E69F00"),   # orange
    "#56b4e9": ("#3A95C8", "#7CC7F2"),   # sky blue
    "#f0e442": ("#4B3B9A", "#F0E442"),   # yellow
}
#: What a white mark (a line or label drawn white for a dark heatmap under it) becomes on the
#: page: vermillion, which stands out from white, from the dark page and from Viridis.
HIGHLIGHT = {"light": "#D55E00", "dark": "#E8743A"}
#: The part of Viridis an ordered series is drawn from in each mode (Viridis's dark end is
#: under 3:1 on the dark page, its yellow end under 3:1 on white); the chapters sample
#: [0, 0.9] of it (`lib.book.plotting.ordered_colours`), which is stretched onto this range.
VIRIDIS_RANGE = {"light": (0.0, 0.57), "dark": (0.42, 1.0)}
VIRIDIS_SAMPLED = 0.9
_NAMED = {"black": "#000000", "white": "#ffffff", "grey": "#808080", "gray": "#808080",
          "darkgrey": "#a9a9a9", "darkgray": "#a9a9a9", "lightgrey": "#d3d3d3", "lightgray": "#d3d3d3",
          "dimgrey": "#696969", "dimgray": "#696969", "silver": "#c0c0c0", "red": "#ff0000",
          "blue": "#0000ff", "green": "#008000", "orange": "#ffa500", "purple": "#800080"}
_RGB = re.compile(r"^rgba?\(\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*(?:,\s*([\d.]+)\s*)?\)$")


def parse_colour(colour: Any) -> tuple[tuple[float, float, float], float] | None:
    """(r, g, b) in [0, 1] and alpha of a CSS colour string plotly accepts, None if not one."""
    if not isinstance(colour, str):
        return None
    text = _NAMED.get(colour.strip().lower(), colour.strip().lower())
    if re.fullmatch(r"#[0-9a-f]{3}", text):
        text = "#" + "".join(c * 2 for c in text[1:])
    if re.fullmatch(r"#[0-9a-f]{6}", text):
        return tuple(int(text[i:i + 2], 16) / 255 for i in (1, 3, 5)), 1.0
    if m := _RGB.match(text):
        alpha = float(m.group(4)) if m.group(4) is not None else 1.0
        return tuple(min(255.0, float(m.group(i))) / 255 for i in (1, 2, 3)), alpha
    return None


def _hex(rgb: tuple[float, float, float], alpha: float = 1.0) -> str:
    r, g, b = (round(min(1.0, max(0.0, v)) * 255) for v in rgb)
    return f"#{r:02x}{g:02x}{b:02x}" if alpha >= 1 else f"rgba({r}, {g}, {b}, {alpha:g})"


def _linear(v: float) -> float:
    return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4


def _gamma(v: float) -> float:
    return 12.92 * v if v <= 0.0031308 else 1.055 * v ** (1 / 2.4) - 0.055


def luminance(rgb: tuple[float, float, float]) -> float:
    """WCAG's relative luminance of an sRGB colour."""
    r, g, b = (_linear(v) for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    """WCAG's contrast ratio of two colours (1 to 21)."""
    la, lb = sorted((luminance(a), luminance(b)))
    return (lb + 0.05) / (la + 0.05)


def lab(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    """CIELAB (D65) of an sRGB colour."""
    r, g, b = (_linear(v) for v in rgb)
    xyz = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
           (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    fx, fy, fz = (t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def _from_lab(lightness: float, a: float, b: float) -> tuple[float, float, float] | None:
    fy = (lightness + 16) / 116
    fx, fz = fy + a / 500, fy - b / 200
    x, y, z = ((t ** 3 if t ** 3 > 216 / 24389 else (116 * t - 16) * 27 / 24389) for t in (fx, fy, fz))
    x, z = x * 0.95047, z * 1.08883
    linear = (3.2406 * x - 1.5372 * y - 0.4986 * z, -0.9689 * x + 1.8758 * y + 0.0415 * z,
              0.0557 * x - 0.2040 * y + 1.0570 * z)
    if any(v < -1e-4 or v > 1 + 1e-4 for v in linear):
        return None
    return tuple(_gamma(min(1.0, max(0.0, v))) for v in linear)


def with_lightness(rgb: tuple[float, float, float], lightness: float) -> tuple[float, float, float]:
    """`rgb` at CIELAB lightness `lightness`, its hue kept and its chroma cut to what sRGB holds."""
    _, a, b = lab(rgb)
    for step in range(51):
        out = _from_lab(lightness, a * (1 - step / 50), b * (1 - step / 50))
        if out is not None:
            return out
    return _from_lab(lightness, 0, 0) or rgb


def _readable(rgb: tuple[float, float, float], mode: str) -> tuple[float, float, float]:
    """`rgb` made just dark enough (light mode) or light enough (dark mode) to reach the mode's
    `MIN_CONTRAST` with the page, its hue kept."""
    page = parse_colour(BACKGROUND[mode])[0]
    lightness, step = lab(rgb)[0], (-1 if mode == "light" else 1)
    out = rgb
    while contrast(out, page) < MIN_CONTRAST[mode] and 0 < lightness < 100:
        lightness += step
        out = with_lightness(rgb, lightness)
    return out


def _viridis() -> list[tuple[float, float, float]]:
    from plotly.colors import sample_colorscale, unlabel_rgb
    samples = sample_colorscale("Viridis", [i / 1000 for i in range(1001)])
    return [tuple(v / 255 for v in unlabel_rgb(c)) for c in samples]


_VIRIDIS: list[tuple[float, float, float]] = []


def viridis_position(rgb: tuple[float, float, float]) -> float | None:
    """Where on Viridis (0 to 1) colour `rgb` lies, None when it is not a Viridis colour."""
    if not _VIRIDIS:
        _VIRIDIS.extend(_viridis())
    best = min(range(len(_VIRIDIS)), key=lambda i: sum((a - b) ** 2 for a, b in zip(_VIRIDIS[i], rgb)))
    return best / 1000 if max(abs(a - b) for a, b in zip(_VIRIDIS[best], rgb)) <= 2.5 / 255 else None


def series_colour(colour: Any, mode: str, *, mark: bool = False) -> Any:
    """Colour `colour` of a line, marker, bar or mark, as the book draws it in `mode` ("light" or
    "dark"); anything that is not a colour string is returned as it is. `mark`: a shape's line or
    an annotation's text, where white (meant to stand out from a dark heatmap) becomes `HIGHLIGHT`."""
    parsed = parse_colour(colour)
    if parsed is None:
        return colour
    rgb, alpha = parsed
    key = _hex(rgb)
    if key in PALETTE:
        return _hex(parse_colour(PALETTE[key][MODES.index(mode)])[0], alpha)
    if (t := viridis_position(rgb)) is not None:
        low, high = VIRIDIS_RANGE[mode]
        if not _VIRIDIS:
            _VIRIDIS.extend(_viridis())
        position = low + (high - low) * min(1.0, t / VIRIDIS_SAMPLED)
        return _hex(_VIRIDIS[round(position * 1000)], alpha)
    lightness, a, b = lab(rgb)
    if math.hypot(a, b) < 10:                       # a grey
        if lightness < 20:
            return _hex(parse_colour(INK[mode])[0], alpha)
        if lightness > 90:
            return _hex(parse_colour(HIGHLIGHT[mode])[0], alpha) if mark else colour
        if mode == "dark":                          # greys keep their order, mirrored
            rgb = with_lightness(rgb, 100 - lightness)
    return _hex(_readable(rgb, mode), alpha)


def _scale_at(scale: list, position: float) -> tuple[float, float, float]:
    """The colour of plotly colour scale `scale` at `position` (0 to 1), interpolated in sRGB as
    plotly does."""
    stops = [(float(p), parse_colour(c)[0]) for p, c in scale]
    for (p0, c0), (p1, c1) in zip(stops, stops[1:]):
        if p0 <= position <= p1:
            w = 0 if p1 == p0 else (position - p0) / (p1 - p0)
            return tuple(a + w * (b - a) for a, b in zip(c0, c1))
    return stops[0][1] if position < stops[0][0] else stops[-1][1]


def points_scale(scale: Any, mode: str) -> Any:
    """The colour scale of markers coloured by value (points on the page, not cells of a
    heatmap) as the book draws it in `mode`: the part of the scale whose colours keep the mode's
    `MIN_CONTRAST` with the page, stretched over the whole range (Viridis loses its dark end on
    the dark page and its yellow end on white), so that no point vanishes into the page."""
    if not isinstance(scale, list) or len(scale) < 2 or not all(
            isinstance(s, (list, tuple)) and len(s) == 2 and parse_colour(s[1]) for s in scale):
        return scale
    page = parse_colour(BACKGROUND[mode])[0]
    readable = [i / 100 for i in range(101) if contrast(_scale_at(scale, i / 100), page) >= MIN_CONTRAST[mode]]
    if not readable or (readable[0] == 0 and readable[-1] == 1 and len(readable) == 101):
        return scale
    runs, run = [], [readable[0]]          # the longest run of readable positions
    for a, b in zip(readable, readable[1:]):
        if b - a > 0.015:
            runs.append(run)
            run = []
        run.append(b)
    runs.append(run)
    low, high = max(((r[0], r[-1]) for r in runs), key=lambda r: r[1] - r[0])
    return [[i / 10, _hex(_scale_at(scale, low + (high - low) * i / 10))] for i in range(11)]


def _near_white(rgb: tuple[float, float, float]) -> bool:
    lightness, a, b = lab(rgb)
    return lightness > 90 and math.hypot(a, b) < 12


#: How much of the lightness range a white-ended scale spans once turned over in dark mode: from
#: 14 (near the page) to about 50, dark enough that white cell text reads on every cell.
TURNED_SPAN = 0.45
#: A heatmap scale's end darker than this CIELAB lightness merges with the dark page (Magma's
#: and Inferno's black); in dark mode such a scale's lightness is lifted to start at DARK_FLOOR.
NEAR_BLACK, DARK_FLOOR = 10, 24


def scale_colours(scale: Any, mode: str) -> Any:
    """A heatmap's colour scale (plotly's [[position, colour], ...]) as the book draws it in
    `mode`: in dark mode a scale with a near-white end (Blues, Oranges, grey to a colour) has
    its lightness turned over, so that its white end lies near the dark page and its darkest
    colour becomes its lightest (lightness 14 to about 50, hues kept: white cell text reads on
    all of it, where plotly wrote white on pale lavender); a scale with a near-black end (Magma,
    Inferno) has its lightness lifted to start at `DARK_FLOOR`, so that its darkest cells stand
    out from the page (chapter 7's ablation map showed black cells as holes); other scales
    (Viridis) are left."""
    if mode == "light" or not isinstance(scale, list) or len(scale) < 2 \
            or not all(isinstance(s, (list, tuple)) and len(s) == 2 for s in scale):
        return scale
    ends = [parse_colour(scale[0][1]), parse_colour(scale[-1][1])]
    if any(end is None for end in ends):
        return scale
    if any(_near_white(end[0]) for end in ends):
        turn = lambda lightness: 14 + TURNED_SPAN * (100 - lightness)        # noqa: E731
    elif any(lab(end[0])[0] < NEAR_BLACK for end in ends):
        turn = lambda lightness: DARK_FLOOR + (100 - DARK_FLOOR) * lightness / 100   # noqa: E731
    else:
        return scale
    out = []
    for position, colour in scale:
        parsed = parse_colour(colour)
        if parsed is None:
            return scale
        rgb, alpha = parsed
        out.append([position, _hex(with_lightness(rgb, turn(lab(rgb)[0])), alpha)])
    return out

_AXIS = re.compile(r"^(x|y)axis(\d*)$")


#: A trace's colours that the modes map (paths into the trace), and its colour scales.
_TRACE_COLOURS = (("line", "color"), ("marker", "color"), ("marker", "line", "color"), ("error_x", "color"),
                  ("error_y", "color"), ("fillcolor",))
_TRACE_SCALES = (("colorscale",), ("marker", "colorscale"))
#: The least opacity of a trace's points in dark mode (`mode_colours`).
DARK_POINT_OPACITY = 0.9
#: Where `layout.meta` carries both modes' colours for the page script.
META_KEY = "bookColours"


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def _set(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj.setdefault(key, {})
    obj[path[-1]] = value


def _colour_value(value: Any, mode: str, mark: bool = False) -> Any:
    if isinstance(value, list):
        return [series_colour(v, mode, mark=mark) for v in value]
    return series_colour(value, mode, mark=mark)


def _template_colours(template: dict[str, Any], mode: str) -> list[tuple[tuple[Any, ...], Any]]:
    """The mode's template, as changes to the figure's own: its colour sequence, its text colour,
    the colour of marks drawn with plotly's defaults (shape lines, annotation arrows, error
    bars), and bar outlines in the page's colour."""
    changes: list[tuple[tuple[Any, ...], Any]] = [
        (("layout", "colorway"), [variants[MODES.index(mode)] for variants in PALETTE.values()]),
        (("layout", "font", "color"), INK[mode])]
    layout = template.get("layout", {})
    for path in (("shapedefaults", "line", "color"), ("annotationdefaults", "arrowcolor")):
        if isinstance(_get(layout, path), str):
            changes.append((("layout", *path), series_colour(_get(layout, path), mode)))
    for kind, entries in (template.get("data") or {}).items():
        for k, entry in enumerate(entries if isinstance(entries, list) else []):
            for path in (("error_x", "color"), ("error_y", "color")):
                if isinstance(_get(entry, path), str):
                    # the text's colour: it stands out from the page and from the bars it crosses
                    # (plotly's slate, lightened for the dark page, vanished inside blue bars)
                    changes.append((("data", kind, k, *path), INK[mode]))
            outline = _get(entry, ("marker", "line", "color"))
            if isinstance(outline, str) and parse_colour(outline) and _near_white(parse_colour(outline)[0]):
                changes.append((("data", kind, k, "marker", "line", "color"), BACKGROUND[mode]))
    return changes


def mode_colours(figure: dict[str, Any], mode: str) -> dict[str, Any]:
    """What figure JSON `figure` (its colours as the chapter set them) needs to be drawn in the
    theme's `mode`: {"template": [[path, value], ...] (changes to its template), "layout":
    {plotly attribute string: value} (for `Plotly.relayout`), "data": [[attribute, [trace
    indices], [values]], ...] (for `Plotly.restyle`)}."""
    layout = figure.get("layout", {})
    out: dict[str, Any] = {"template": [[list(path), value] for path, value in
                                        _template_colours(layout.get("template") or {}, mode)],
                           "layout": {"font.color": INK[mode]}, "data": []}
    for k, shape in enumerate(layout.get("shapes") or []):
        for path in (("line", "color"), ("fillcolor",)):
            if isinstance(_get(shape, path), str):
                out["layout"][f"shapes[{k}]." + ".".join(path)] = series_colour(_get(shape, path), mode,
                                                                                mark=path[0] == "line")
    for k, note in enumerate(layout.get("annotations") or []):
        for path, mark in ((("font", "color"), True), (("arrowcolor",), False)):
            if isinstance(_get(note, path), str):
                out["layout"][f"annotations[{k}]." + ".".join(path)] = series_colour(_get(note, path), mode, mark=mark)
    for key, value in layout.items():
        if key.startswith("coloraxis") and isinstance(value, dict) and isinstance(value.get("colorscale"), list):
            out["layout"][f"{key}.colorscale"] = scale_colours(value["colorscale"], mode)
    groups: dict[str, tuple[list[int], list[Any]]] = {}
    for i, trace in enumerate(figure.get("data", [])):
        for path in _TRACE_COLOURS:
            value = _get(trace, path)
            if isinstance(value, str) or isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                indices, values = groups.setdefault(".".join(path), ([], []))
                indices.append(i)
                values.append(_colour_value(value, mode))
        # translucent points (kept see-through where they pile up) blend into the dark page: at
        # 0.6 a colour keeps under 3:1 with it, so in dark mode they are drawn at DARK_POINT_OPACITY
        opacity = _get(trace, ("marker", "opacity"))
        if isinstance(opacity, (int, float)) and opacity < DARK_POINT_OPACITY:
            indices, values = groups.setdefault("marker.opacity", ([], []))
            indices.append(i)
            values.append(opacity if mode == "light" else DARK_POINT_OPACITY)
        for path in _TRACE_SCALES:
            value = _get(trace, path)
            if isinstance(value, list):
                indices, values = groups.setdefault(".".join(path), ([], []))
                indices.append(i)
                points = path[0] == "marker" and str(trace.get("type", "scatter")).startswith("scatter")
                values.append(points_scale(value, mode) if points else scale_colours(value, mode))
    out["data"] = [[attribute, indices, values] for attribute, (indices, values) in groups.items()]
    return out


def _apply_colours(figure: dict[str, Any], colours: dict[str, Any]) -> None:
    """Write `mode_colours`' answer into figure JSON `figure` (as the page would draw it)."""
    layout = figure.setdefault("layout", {})
    template = layout.get("template")
    for path, value in colours["template"]:
        if isinstance(template, dict):
            target: Any = template
            for key in path[:-1]:
                target = target[key] if isinstance(key, int) else target.setdefault(key, {})
            target[path[-1]] = value
    for attribute, value in colours["layout"].items():
        target = layout
        parts = re.findall(r"(\w+)(?:\[(\d+)\])?", attribute)
        for n, (key, index) in enumerate(parts):
            last = n == len(parts) - 1
            if index:
                target = target[key][int(index)]
            elif last:
                target[key] = value
            else:
                target = target.setdefault(key, {})
    for attribute, indices, values in colours["data"]:
        for i, value in zip(indices, values):
            _set(figure["data"][i], tuple(attribute.split(".")), value)


def _colours_for_modes(figure: dict[str, Any]) -> None:
    """Stage `figure` in light mode and keep both modes' colours in `layout.meta` (once: a
    figure that has them is left, so that staging twice changes nothing)."""
    layout = figure.setdefault("layout", {})
    meta = layout.get("meta")
    if meta is not None and not isinstance(meta, dict) or isinstance(meta, dict) and META_KEY in meta:
        return
    colours = {mode: mode_colours(figure, mode) for mode in MODES}
    _apply_colours(figure, colours["light"])
    layout["meta"] = {**(meta or {}), META_KEY: colours}


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


#: Traces drawn as a grid of coloured cells.
_CELL_TRACES = ("heatmap", "histogram2d")


def _heatmap_cells(figure: dict[str, Any]) -> None:
    """Heatmaps: no zero line or grid across their cells (an empty row or column at 0 showed an axis
    line through it, and empty rows a grid: chapters 2 and 3's confusion maps). Their cell text
    keeps plotly's automatic colour, dark or white by its cell, which reads on every cell once a
    turned-over scale stays dark (`TURNED_SPAN`)."""
    layout = figure.setdefault("layout", {})
    for trace in figure.get("data", []):
        if trace.get("type") not in _CELL_TRACES:
            continue
        for letter in ("x", "y"):
            axis = layout.setdefault(f"{letter}axis{str(trace.get(f'{letter}axis', letter))[1:]}", {})
            axis.update(zeroline=False, showgrid=False)


def _numbers(values: Any) -> list[float]:
    """The finite numbers in a trace's data array (nested lists for a heatmap's z; plotly's
    base64 typed arrays, {"dtype", "bdata"}, decoded), none for text or dates."""
    if isinstance(values, dict) and "bdata" in values:
        import base64

        import numpy as np
        array = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values.get("dtype", "f8"))
        return [float(v) for v in array.ravel() if np.isfinite(v)]
    if isinstance(values, (list, tuple)):
        return [v for item in values for v in _numbers(item)]
    if isinstance(values, (int, float)) and not isinstance(values, bool) and math.isfinite(values):
        return [float(values)]
    return []


#: The least share of an axis's data span on each side of 0 for its zero line to be drawn.
ZERO_LINE_SIDE = 0.05


def _zero_lines_where_signs_change(figure: dict[str, Any]) -> None:
    """An axis draws its zero line only where its data take both signs, each side at least
    `ZERO_LINE_SIDE` of their span: data that start at (or just under) 0
    put the line on top of the other axis (a second axis line, through the first marks:
    chapter 5's and 8's figures) and data that stay above 0 float it over the plot's floor."""
    layout = figure.setdefault("layout", {})
    values: dict[str, list[float]] = {}
    for trace in figure.get("data", []):
        if trace.get("type", "scatter") in _CELL_TRACES:
            continue
        counts = None                # a histogram's counts are plotly's, never below 0
        if trace.get("type") == "histogram":
            counts = "x" if trace.get("orientation") == "h" else "y"
        for letter in ("x", "y"):
            key = f"{letter}axis{str(trace.get(f'{letter}axis', letter))[1:]}"
            values.setdefault(key, []).extend([0.0, 1.0] if letter == counts else _numbers(trace.get(letter)))
    for key, numbers in values.items():
        axis = layout.setdefault(key, {})
        low, high = (min(numbers), max(numbers)) if numbers else (0.0, 0.0)
        # a sign change smaller than ZERO_LINE_SIDE of the span (a gap that dips to -0.001) puts
        # the line next to the axis as surely as no change at all
        if numbers and axis.get("type") != "log" and min(-low, high) <= ZERO_LINE_SIDE * (high - low):
            axis["zeroline"] = False


def restyle(figure: dict[str, Any]) -> dict[str, Any]:
    """The book's style applied to plotly figure JSON `figure` (not changed): a new dict."""
    figure = copy.deepcopy(figure)
    layout = figure.setdefault("layout", {})
    _linear_ranges_on_log_axes(figure)
    _hline_labels_on_log_axes(layout)
    _heatmap_cells(figure)
    _zero_lines_where_signs_change(figure)
    layout.update(paper_bgcolor=TRANSPARENT, plot_bgcolor=TRANSPARENT)
    _colours_for_modes(figure)
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


__all__ = ["MODES", "SUBPLOT_TITLE", "mode_colours", "restyle", "series_colour"]
