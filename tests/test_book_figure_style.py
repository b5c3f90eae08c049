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
