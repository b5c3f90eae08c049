"""The book's figure style (lib.book.figure_style.restyle), applied to figure JSON at staging."""

import json
import math
import sys
from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.book.code_fingerprint import dependencies
from lib.book.figure_style import SUBPLOT_TITLE, TRANSPARENT, restyle

ROOT = Path(__file__).resolve().parents[1]


def as_json(fig: go.Figure) -> dict:
    return json.loads(fig.to_json())


def test_no_chapter_imports_the_style_so_changing_it_reexecutes_nothing():
    for source in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")):
        assert ROOT / "lib" / "book" / "figure_style.py" not in dependencies(source, ROOT), source.name


def test_backgrounds_are_transparent_and_the_input_is_not_changed():
    figure = as_json(go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="a"), layout={"title": "t"}))
    before = json.dumps(figure, sort_keys=True)
    styled = restyle(figure)
    assert json.dumps(figure, sort_keys=True) == before
    assert styled["layout"]["paper_bgcolor"] == styled["layout"]["plot_bgcolor"] == TRANSPARENT
    assert styled["layout"]["legend"]["orientation"] == "h"
    assert styled["layout"]["xaxis"]["automargin"] and styled["layout"]["yaxis"]["automargin"]
    assert restyle(styled) == styled   # staging twice is harmless


def test_a_repeated_legend_name_is_listed_once_and_toggles_with_the_first():
    fig = make_subplots(rows=1, cols=3)
    for col in (1, 2, 3):
        fig.add_trace(go.Scatter(x=[1], y=[1], name="gaussian"), row=1, col=col)
    fig.add_trace(go.Scatter(x=[1], y=[1], name="replace", legendgroup="r"), row=1, col=1)
    fig.add_trace(go.Scatter(x=[1], y=[1], name="replace"), row=1, col=2)
    data = restyle(as_json(fig))["data"]
    shown = [t["name"] for t in data if t.get("showlegend", True)]
    assert shown == ["gaussian", "replace"]
    assert len({t["legendgroup"] for t in data[:3]}) == 1
    assert data[4]["legendgroup"] == "r"


def test_slider_steps_that_show_one_name_at_a_time_keep_their_entries():
    fig = go.Figure([go.Scatter(x=[1], y=[1], name="gaussian", visible=True),
                     go.Scatter(x=[1], y=[2], name="gaussian", visible=False)])
    fig.update_layout(sliders=[{"steps": [{"method": "update", "args": [{"visible": [True, False]}]},
                                          {"method": "update", "args": [{"visible": [False, True]}]}]}])
    data = restyle(as_json(fig))["data"]
    assert all(t.get("showlegend", True) for t in data)


def test_an_hline_label_on_a_log_axis_sits_on_its_line():
    fig = go.Figure(go.Scatter(x=[1, 2], y=[1e-8, 1]))
    fig.update_yaxes(type="log")
    fig.add_hline(y=1e-6, annotation_text="1e-6")
    note = restyle(as_json(fig))["layout"]["annotations"][0]
    assert math.isclose(note["y"], -6)


def test_a_secondary_axis_given_a_linear_range_is_linear():
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=[1, 2], y=[10, 1e5]))
    fig.add_trace(go.Scatter(x=[1, 2], y=[0.2, 0.9]), secondary_y=True)
    fig.update_yaxes(type="log")                                   # both axes, as update_yaxes does
    fig.update_yaxes(range=[0, 1.02], secondary_y=True)
    layout = restyle(as_json(fig))["layout"]
    assert layout["yaxis"]["type"] == "log" and layout["yaxis2"]["type"] == "linear"
    assert layout["yaxis2"]["tickmode"] == "auto" and layout["yaxis2"]["showgrid"] is False


def test_subplot_titles_are_marked_and_colour_bar_titles_stand_beside_their_bars():
    fig = make_subplots(rows=1, cols=2, subplot_titles=("left", "right"))
    fig.add_trace(go.Heatmap(z=[[1, 2]], colorbar={"title": {"text": "weight"}}), row=1, col=1)
    fig.add_annotation(x=1, y=1, text="a point", showarrow=True)
    styled = restyle(as_json(fig))
    names = [note.get("name") for note in styled["layout"]["annotations"]]
    assert names == [SUBPLOT_TITLE, SUBPLOT_TITLE, None]
    assert styled["data"][0]["colorbar"]["title"]["side"] == "right"


def test_the_build_stages_every_figure_in_the_style(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    import build_book

    notebook = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))[0]
    build_book.staged_chapter(notebook, tmp_path / notebook.name)
    outputs = [output["data"]["application/vnd.plotly.v1+json"]
               for cell in json.loads((tmp_path / notebook.name).read_text())["cells"]
               for output in cell.get("outputs", []) if "application/vnd.plotly.v1+json" in output.get("data", {})]
    assert outputs and all(figure["layout"]["paper_bgcolor"] == TRANSPARENT for figure in outputs)


def test_a_legend_of_many_grouped_series_lists_one_entry_per_group_and_keeps_each_name_on_hover():
    from lib.book.figure_style import MAX_LEGEND_ENTRIES, restyle
    data = [{"type": "scatter", "name": f"length {n}, seed {s}", "legendgroup": str(n), "x": [0], "y": [1]}
            for n in (1, 2, 3) for s in range(10)]
    assert len(data) > MAX_LEGEND_ENTRIES
    styled = restyle({"data": data, "layout": {}})["data"]
    shown = [t["name"] for t in styled if t.get("showlegend") is not False]
    assert shown == ["length 1", "length 2", "length 3"]
    assert styled[1]["hovertemplate"].startswith("length 1, seed 1<br>")
    few = restyle({"data": data[:5], "layout": {}})["data"]              # a short legend is left as it is
    assert [t["name"] for t in few] == [t["name"] for t in data[:5]]


# --- Colours in the theme's two modes --------------------------------------------------------

from lib.book import figure_style as style  # noqa: E402

#: Machado, Oliveira and Fernandes (2009), severity 1, on linear RGB: how a protanope and a
#: deuteranope see a colour.
CVD = {"protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216),
                      (-0.003882, -0.048116, 1.051998)),
       "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413),
                        (-0.011820, 0.042940, 0.968881))}


def seen_by(rgb, kind):
    linear = [style._linear(v) for v in rgb]
    return tuple(style._gamma(min(1.0, max(0.0, sum(m * v for m, v in zip(row, linear))))) for row in CVD[kind])


def delta_e(a, b):
    return math.dist(style.lab(a), style.lab(b))


def rgb(colour):
    return style.parse_colour(colour)[0]


def test_each_modes_colour_sequence_reads_on_its_page_and_stays_apart_for_colour_blind_readers():
    for k, mode in enumerate(style.MODES):
        page = rgb(style.BACKGROUND[mode])
        colours = [rgb(variants[k]) for variants in style.PALETTE.values()] + [rgb(style.INK[mode])]
        assert all(style.contrast(c, page) >= 3 for c in colours), mode
        for i in range(len(colours)):
            for j in range(i + 1, len(colours)):
                assert delta_e(colours[i], colours[j]) >= 15, (mode, i, j)
                for kind in CVD:
                    assert delta_e(seen_by(colours[i], kind), seen_by(colours[j], kind)) >= 9, (mode, kind, i, j)


def test_a_chapters_colours_are_mapped_onto_each_mode_and_series_stay_apart():
    from plotly.colors import sample_colorscale
    ordered = sample_colorscale("Viridis", [0.9 * i / 4 for i in range(5)])     # lib.book.plotting.ordered_colours
    data = [{"type": "scatter", "name": f"length {i + 1}", "x": [0], "y": [i], "line": {"color": c}}
            for i, c in enumerate(ordered)]
    data += [{"type": "scatter", "name": "all labels", "x": [0], "y": [9], "line": {"color": "black"}},
             {"type": "bar", "name": "rerun", "x": [0], "y": [1], "marker": {"color": "#E69F00"}}]
    figure = {"data": data, "layout": {"shapes": [{"type": "rect", "line": {"color": "white"}}],
                                       "annotations": [{"text": "training sizes", "font": {"color": "white"}}]}}
    styled = restyle(figure)
    colours = styled["layout"]["meta"][style.META_KEY]
    for mode in style.MODES:
        page = rgb(style.BACKGROUND[mode])
        drawn = {}
        for attribute, indices, values in colours[mode]["data"]:
            drawn.update({i: v for i, v in zip(indices, values)})
        assert len(drawn) == len(data)
        assert all(style.contrast(rgb(c), page) >= 3 for c in drawn.values()), (mode, drawn)
        assert min(delta_e(rgb(a), rgb(b)) for i, a in drawn.items() for j, b in drawn.items() if i < j) >= 12
        assert colours[mode]["layout"]["font.color"] == style.INK[mode]
        assert colours[mode]["layout"]["shapes[0].line.color"] == style.series_colour(style.HIGHLIGHT[mode], mode)
        assert style.contrast(rgb(colours[mode]["layout"]["annotations[0].font.color"]), page) >= 3
    # black is the theme's text colour; the figure itself is staged in light mode
    assert colours["dark"]["data"][0][2][5] == style.INK["dark"] and styled["data"][5]["line"]["color"] == style.INK["light"]
    assert styled["data"][0]["line"]["color"] == colours["light"]["data"][0][2][0]
    assert restyle(styled) == styled


def test_the_dark_template_recolours_plotlys_navy_marks_and_white_bar_outlines():
    template = {"layout": {"shapedefaults": {"line": {"color": "#2a3f5f"}}, "colorway": ["#636efa"]},
                "data": {"bar": [{"error_y": {"color": "#2a3f5f"}, "marker": {"line": {"color": "white"}}}]}}
    changes = dict((tuple(path), value) for path, value in
                   style.mode_colours({"data": [], "layout": {"template": template}}, "dark")["template"])
    page = rgb(style.BACKGROUND["dark"])
    assert style.contrast(rgb(changes[("layout", "shapedefaults", "line", "color")]), page) >= 3
    assert style.contrast(rgb(changes[("data", "bar", 0, "error_y", "color")]), page) >= 3
    assert changes[("data", "bar", 0, "marker", "line", "color")] == style.BACKGROUND["dark"]
    assert changes[("layout", "colorway")][0] == style.PALETTE["#0072b2"][1]


def test_a_colour_scale_with_a_white_end_turns_dark_in_dark_mode_and_others_are_left():
    blues = [[0.0, "rgb(247,251,255)"], [0.5, "rgb(107,174,214)"], [1.0, "rgb(8,48,107)"]]
    dark = style.scale_colours(blues, "dark")
    assert [s[0] for s in dark] == [0.0, 0.5, 1.0]
    assert style.contrast(rgb(dark[0][1]), rgb(style.BACKGROUND["dark"])) < 1.6        # zero: near the page
    assert 40 < style.lab(rgb(dark[-1][1]))[0] < 55           # the most: lighter, but white text reads on it
    assert style.scale_colours(blues, "light") == blues
    viridis = [[0.0, "#440154"], [1.0, "#fde725"]]
    assert style.scale_colours(viridis, "dark") == viridis
    figure = restyle({"data": [{"type": "heatmap", "z": [[0, 1]], "colorscale": blues}], "layout": {}})
    assert figure["layout"]["meta"][style.META_KEY]["dark"]["data"] == [["colorscale", [0], [dark]]]


def test_a_colour_scale_with_a_black_end_is_lifted_off_the_dark_page_in_dark_mode_only():
    """Magma's black end (chapter 7's ablation map, reversed) read as holes in the dark page: in
    dark mode its lightness starts at DARK_FLOOR, in order, hues kept; light mode keeps it."""
    magma = [[0.0, "#000004"], [0.5, "#b73779"], [1.0, "#fcfdbf"]]
    dark = style.scale_colours(magma, "dark")
    lightness = [style.lab(rgb(colour))[0] for _, colour in dark]
    assert lightness[0] >= style.DARK_FLOOR - 1 and lightness == sorted(lightness)
    assert style.contrast(rgb(dark[0][1]), rgb(style.BACKGROUND["dark"])) > 1.5
    assert style.scale_colours(magma, "light") == magma


def test_a_heatmap_draws_no_zero_line_or_grid_through_its_cells():
    """A confusion map's empty row at 0 showed the axis's zero line and the grid through it."""
    fig = make_subplots(rows=1, cols=2)
    fig.add_trace(go.Scatter(x=[-1, 1], y=[-1, 1]), row=1, col=1)
    fig.add_trace(go.Heatmap(z=[[0, 1], [1, 0]], text=[["a", "b"], ["c", "d"]], texttemplate="%{text}"), row=1, col=2)
    figure = restyle(as_json(fig))
    layout = figure["layout"]
    assert layout["xaxis2"]["zeroline"] is False and layout["yaxis2"]["zeroline"] is False
    assert layout["xaxis2"]["showgrid"] is False and layout["yaxis2"]["showgrid"] is False
    assert "zeroline" not in layout["xaxis"], "a scatter's axes keep their zero line"
    assert restyle(figure) == figure, "staging twice changes nothing"


def test_points_coloured_by_a_scale_keep_their_contrast_with_the_page_in_both_modes():
    from plotly.colors import get_colorscale
    viridis = get_colorscale("Viridis")
    for mode in style.MODES:
        scale = style.points_scale(viridis, mode)
        assert scale[0][0] == 0 and scale[-1][0] == 1
        assert all(style.contrast(rgb(c), rgb(style.BACKGROUND[mode])) >= style.MIN_CONTRAST[mode] - 0.05
                   for _, c in scale), mode
    trace = {"type": "scatter", "x": [0, 1], "y": [0, 1], "marker": {"color": [0, 1], "colorscale": viridis}}
    dark = style.mode_colours({"data": [trace], "layout": {}}, "dark")["data"]
    assert dark == [["marker.colorscale", [0], [style.points_scale(viridis, "dark")]]]


def test_translucent_points_keep_their_opacity_in_light_mode_and_stand_out_in_dark_mode():
    points = {"type": "scattergl", "x": [0], "y": [1], "marker": {"color": "#D55E00", "opacity": 0.6}}
    solid = {"type": "scatter", "x": [0], "y": [1], "marker": {"color": "#0072B2"}}
    for mode, wanted in (("light", 0.6), ("dark", style.DARK_POINT_OPACITY)):
        data = style.mode_colours({"data": [points, solid], "layout": {}}, mode)["data"]
        assert ["marker.opacity", [0], [wanted]] in data, mode
    staged = restyle({"data": [points], "layout": {}})
    assert staged["data"][0]["marker"]["opacity"] == 0.6 and restyle(staged) == staged


def test_an_axis_keeps_its_zero_line_only_where_its_data_change_sign():
    """Data from 0 upward drew the zero line over the other axis (chapter 5's panels, chapter 8's
    scatter): removed there; a panel whose values cross 0 keeps it."""
    fig = make_subplots(rows=1, cols=2)
    fig.add_trace(go.Scatter(x=[0, 500, 1000], y=[0.0, 0.6, 0.1]), row=1, col=1)
    fig.add_trace(go.Scatter(x=[1, 2, 3], y=[-1.0, 0.5, None]), row=1, col=2)
    fig.add_trace(go.Scatter(x=[1, 2], y=[-0.001, 0.6]), row=1, col=1)        # a gap that dips just under 0
    layout = restyle(as_json(fig))["layout"]
    assert layout["xaxis"]["zeroline"] is False and layout["yaxis"]["zeroline"] is False
    assert layout["xaxis2"]["zeroline"] is False and "zeroline" not in layout["yaxis2"]
    bars = restyle(as_json(go.Figure(go.Bar(x=["a", "b"], y=[3, 4]))))["layout"]
    assert bars["yaxis"]["zeroline"] is False and "zeroline" not in bars.get("xaxis", {}), "categories: left"
    counts = restyle(as_json(go.Figure(go.Histogram(x=[-1.0, 0.5, 2.0]))))["layout"]
    assert counts["yaxis"]["zeroline"] is False and "zeroline" not in counts["xaxis"], "a histogram's counts start at 0"
