"""Chapter 3's figures plot the numbers they are built from (hand-made results, cells and logs)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lib.book.confusion import confusion_matrix
from lib.chapters.ch3_figures import (
    confusion_by_test_figure, error_by_target_kind_figure, finetune_loss_figure,
    generalization_bars_figure, length_heatmap_figure, loss_by_distance_figure, loss_by_size_figure,
)
from lib.paths.generalization_tests import TARGET_KINDS, TESTS, GeneralizationResult, score
from lib.paths.length_generalization import Cell, LengthSplit
from lib.paths.training import TrainingLog

NAN = math.nan


def same(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def visible_at(fig, step: int) -> list[bool]:
    return list(fig.layout.sliders[0].steps[step].args[0]["visible"])


def result(name: str, predictions: list[float], labels: list[int], kinds: list[int]) -> GeneralizationResult:
    """`score` of hand-made predictions (unreachable label 4; the 1-2 distance is taken as 1)."""
    return score(TESTS[name], torch.tensor(predictions), torch.tensor(labels), 4, torch.tensor(kinds),
                 torch.ones(len(labels)), torch.full((len(labels),), 2))


BEFORE = [result("onpath_small_target", [0.0, 0.0], [1, 3], [0, 1]),
          result("any_target_large_graphs", [0.0, 2.0], [4, 4], [3, 3])]
# Kinds by index: 0 vertex 2, 1 on the path, 2 off the path, 3 unreachable.
AFTER = [result("onpath_small_target", [1.0, 2.2, 2.6, 4.0], [1, 2, 2, 4], [0, 0, 1, 1]),
         result("any_target_large_graphs", [0.4, 3.7, 3.2, 1.1], [1, 4, 4, 1], [0, 3, 3, 0])]


def test_finetune_loss_figure_draws_each_label_seen_the_total_and_the_held_out_losses():
    log = TrainingLog(steps=[10, 20, 30], loss=[0.5, 0.2, 0.1],
                      loss_by_length=[[NAN, 0.4, 0.6, NAN], [NAN, 0.1, 0.3, 0.9], [NAN, 0.05, 0.2, 0.8]],
                      count_by_length=[[0, 5, 5, 0], [0, 4, 6, 1], [0, 5, 5, 2]], learning_rate=[1e-4] * 3)
    fig = finetune_loss_figure(log, 3, loss_before=0.6, loss_after=0.05, published_before=0.5531,
                               published_after=0.01472)
    names = [t.name for t in fig.data]
    assert names == ["length 1", "length 2", "unreachable (3)", "all labels",
                     "held-out MSE (this run): before 0.6, after 0.05",
                     "published, before fine-tuning: 0.5531 (other scale)",
                     "published, after fine-tuning: 0.01472 (other scale)"]
    for trace, label in zip(fig.data[:3], [1, 2, 3]):
        assert same(trace.x, [10, 20, 30]) and same(trace.y, [row[label] for row in log.loss_by_length])
    assert same(fig.data[3].x, [10, 20, 30]) and same(fig.data[3].y, [0.5, 0.2, 0.1])
    held_out = fig.data[4]
    assert same(held_out.x, [0, 30]) and same(held_out.y, [0.6, 0.05])
    assert list(held_out.text) == ["before 0.6", "after 0.05"] and held_out.mode == "markers"
    assert same(fig.data[5].y, [0.5531, 0.5531]) and same(fig.data[6].y, [0.01472, 0.01472])
    # Nothing is written over the curves: the values are in the legend, none as notes or text marks.
    assert not fig.layout.annotations and not fig.layout.shapes
    assert all("text" not in (t.mode or "") for t in fig.data)


def test_generalization_bars_put_this_run_and_the_published_values_in_their_panels():
    fig = generalization_bars_figure(BEFORE, AFTER, "small")
    titles = ["On-path small target", "Any target in large graphs"]
    before, after, post, rerun = fig.data
    for trace in fig.data:
        assert list(trace.y) == titles and trace.orientation == "h"
    assert before.x == pytest.approx([(1 + 9) / 2, (16 + 4) / 2])
    assert after.x == pytest.approx([(0.2 ** 2 + 0.6 ** 2) / 4, (0.6 ** 2 + 0.3 ** 2 + 0.8 ** 2 + 0.1 ** 2) / 4])
    assert same(post.x, [0.1020, 72.87]) and same(rerun.x, [0.0969, 81.48])
    assert [t.yaxis for t in fig.data] == ["y", "y", "y2", "y2"]
    assert fig.layout.annotations[0].text == "this run (small)"
    # Every test's name is shown beside its bars, on short lines, top to bottom in the tests' order.
    for axis in (fig.layout.yaxis, fig.layout.yaxis2):
        assert list(axis.tickvals) == titles and axis.autorange == "reversed"
        assert list(axis.ticktext) == ["On-path small<br>target", "Any target in<br>large graphs"]


def test_error_by_target_kind_has_one_series_per_kind_with_gaps_where_absent():
    fig = error_by_target_kind_figure(AFTER)
    assert [t.name for t in fig.data] == list(TARGET_KINDS)
    by_name = {t.name: t for t in fig.data}
    assert all(t.orientation == "h" and list(t.y) == ["On-path small target", "Any target in large graphs"]
               for t in fig.data)
    # MSE of each kind recomputed by hand from the predictions above; NaN (no bar) where absent.
    assert by_name["vertex 2"].x == pytest.approx([0.2 ** 2 / 2, (0.6 ** 2 + 0.1 ** 2) / 2])
    assert list(by_name["vertex 2"].customdata) == [2, 2]
    assert same(by_name["on a shortest 1-2 path"].x[1:], [NAN])
    assert by_name["on a shortest 1-2 path"].x[0] == pytest.approx(0.6 ** 2 / 2)
    assert list(by_name["on a shortest 1-2 path"].customdata) == [2, 0]
    assert same(by_name["reachable, off the path"].x, [NAN, NAN])
    assert list(by_name["reachable, off the path"].customdata) == [0, 0]
    assert math.isnan(by_name["unreachable"].x[0])
    assert by_name["unreachable"].x[1] == pytest.approx((0.3 ** 2 + 0.8 ** 2) / 2)
    assert list(by_name["unreachable"].customdata) == [0, 2]


def test_confusion_by_test_shows_one_test_per_button_each_named_whole():
    fig = confusion_by_test_figure(AFTER, 5)
    assert len(fig.data) == 2
    for trace, r in zip(fig.data, AFTER):
        assert same(trace.z, confusion_matrix(r.predictions, r.labels, 5))
    assert same(fig.data[1].z[4], [0, 0, 0, 0.5, 0.5]) and same(fig.data[1].z[1], [0.5, 0.5, 0, 0, 0])
    # Buttons, one under another, each with its test's whole name (a slider's rail dropped 3 of 5).
    assert not fig.layout.sliders
    (menu,) = fig.layout.updatemenus
    assert menu.type == "buttons" and menu.direction == "down"
    assert [b.label for b in menu.buttons] == [r.test.title for r in AFTER]
    assert [list(b.args[0]["visible"]) for b in menu.buttons] == [[True, False], [False, True]]
    assert [t.visible for t in fig.data] == [True, False] and menu.active == 0
    # The buttons get room above the plot; the plot keeps its height.
    assert fig.layout.margin.t >= 60 + 34 * 2 and fig.layout.height - fig.layout.margin.t == 600 - 60


SPLIT = LengthSplit(3, 4, 6)
# Hand-made cells: MSE 10^-(distance) on seen sizes, 10^(n - 5) beyond; n = 5 lacks distance 4.
CELLS = [Cell(n, d, 10 * n + d, 10.0 ** (-d) if n <= 4 else 10.0 ** (n - 5), d + 0.1 * n, 1.0,
              SPLIT.size_seen(n), SPLIT.distance_seen(d))
         for n in range(3, 7) for d in range(1, n) if (n, d) != (5, 4)]


def test_length_heatmap_puts_each_cell_at_its_size_and_distance():
    fig = length_heatmap_figure(CELLS, SPLIT)
    (heatmap,) = fig.data
    assert list(heatmap.x) == [3, 4, 5, 6] and list(heatmap.y) == [1, 2, 3, 4, 5]
    z = [list(row) for row in heatmap.z]
    for c in CELLS:
        assert z[c.distance - 1][c.n_vertices - 3] == pytest.approx(math.log10(c.mse))
    assert z[3][2] is None and z[2][0] is None, "no cell: (5, 4) and (3, 3)"
    # Each cell writes its log10 MSE to one decimal (legible on a phone); the MSE rides along for hover.
    assert heatmap.texttemplate == "%{z:.1f}" and heatmap.customdata[0][1] == "0.1"
    (outline,) = fig.layout.shapes
    assert (outline.x0, outline.x1, outline.y0, outline.y1) == (2.5, 4.5, 0.5, 3.5)


def test_length_heatmap_floors_a_zero_mse():
    fig = length_heatmap_figure([Cell(3, 1, 5, 0.0, 1.0, 1.0, True, True)], SPLIT)
    assert fig.data[0].z[0][0] == pytest.approx(-6.0)


def test_loss_by_size_draws_one_line_per_distance_dashed_beyond_training():
    fig = loss_by_size_figure(CELLS, SPLIT)
    assert [t.name for t in fig.data] == [f"distance {d}" for d in range(1, 6)]
    for trace, distance in zip(fig.data, range(1, 6)):
        row = sorted((c for c in CELLS if c.distance == distance), key=lambda c: c.n_vertices)
        assert same(trace.x, [c.n_vertices for c in row]) and same(trace.y, [c.mse for c in row])
        assert list(trace.customdata) == [c.count for c in row]
        assert trace.line.dash == ("solid" if distance <= 3 else "dash")
    assert same(fig.data[3].x, [6]), "distance 4 exists only at n = 6 here"
    assert [shape.x0 for shape in fig.layout.shapes] == [4.5]


def test_loss_by_distance_draws_mse_and_mean_prediction_per_size():
    fig = loss_by_distance_figure(CELLS, SPLIT)
    assert len(fig.data) == 2 * 4 + 1
    for index, n in enumerate(range(3, 7)):
        mse, mean = fig.data[2 * index], fig.data[2 * index + 1]
        row = sorted((c for c in CELLS if c.n_vertices == n), key=lambda c: c.distance)
        assert mse.name == mean.name == f"n = {n}" + ("" if n <= 4 else " (larger)")
        assert same(mse.x, [c.distance for c in row]) and same(mse.y, [c.mse for c in row])
        assert same(mean.x, [c.distance for c in row]) and same(mean.y, [c.mean_prediction for c in row])
        assert (mse.xaxis, mean.xaxis) == ("x", "x2")
        assert mse.line.dash == mean.line.dash == ("solid" if n <= 4 else "dash")
    diagonal = fig.data[-1]
    assert same(diagonal.x, [1, 5]) and same(diagonal.y, [1, 5]) and diagonal.xaxis == "x2"
    assert [shape.x0 for shape in fig.layout.shapes] == [3.5, 3.5]


def test_size_and_distance_lines_keep_at_most_five_evenly_spread_with_the_training_edge():
    """Nine distances and ten sizes (chapter 3's length study): five lines each, the first and
    last and the longest training distance / largest training size among them."""
    split = LengthSplit(3, 6, 12)
    cells = [Cell(n, d, 10, 0.1 * d, float(d), 1.0, split.size_seen(n), split.distance_seen(d))
             for n in range(3, 13) for d in range(1, min(n, 10))]
    by_size = loss_by_size_figure(cells, split)
    assert [t.name for t in by_size.data] == [f"distance {d}" for d in (1, 3, 5, 7, 9)]
    assert "distances 1, 3, 5, 7, 9 of 1 to 9" in by_size.layout.title.text
    by_distance = loss_by_distance_figure(cells, split)
    names = [t.name for t in by_distance.data if t.showlegend is not False]
    assert names[:-1] == ["n = 3", "n = 6", "n = 8 (larger)", "n = 10 (larger)", "n = 12 (larger)"]
    assert len({t.line.color for t in by_size.data}) == 5
