"""Chapter 2's figures plot the numbers they are built from; the confusion matrix is a conditional distribution."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lib.paths.phase_transitions import Drop
from lib.paths.training import PathTrainingConfig, TrainingLog
from lib.paths.transition_study import TransitionCurves
from lib.book.confusion import confusion_figure, confusion_matrix, label_histogram_figure
from lib.chapters.ch2_figures import (
    confusion_slider_figure, evaluation_loss_figure, learning_rate_figure, loss_by_length_figure,
    mean_prediction_figure, total_loss_figure, transition_study_figure,
)

NAN = math.nan
LOG = TrainingLog(steps=[10, 20, 30], loss=[3.0, 1.0, 0.1],
                  loss_by_length=[[NAN, 2.0, 3.0, NAN], [NAN, 0.05, 2.0, 4.0], [NAN, 0.01, 0.05, 0.5]],
                  count_by_length=[[0, 5, 5, 0], [0, 5, 5, 2], [0, 5, 5, 2]], learning_rate=[1e-3] * 3)


def same(a, b) -> bool:
    """Equal numbers, NaN equal to NaN (plotly stores lists as tuples, arrays as arrays)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def visible_at(fig, step: int) -> list[bool]:
    """The visibility the slider's `step` sets on every trace."""
    (arguments,) = fig.layout.sliders[0].steps[step].args[:1]
    return list(arguments["visible"])


def test_confusion_matrix_rows_are_distributions():
    labels = torch.tensor([1, 1, 2, 2, 2, 4])
    predictions = torch.tensor([0.9, 2.2, 2.0, 2.4, 6.0, 3.6])
    matrix = confusion_matrix(predictions, labels, 5)
    assert matrix[1].tolist() == [0, 0.5, 0.5, 0, 0]
    assert torch.allclose(matrix[2], torch.tensor([0, 0, 2 / 3, 0, 1 / 3], dtype=torch.float64))
    assert matrix[4, 4] == 1 and all(math.isnan(v) for v in matrix[3].tolist())


def test_confusion_matrix_clips_negative_predictions_to_zero():
    matrix = confusion_matrix(torch.tensor([-3.0, 0.4, 1.6]), torch.tensor([0, 0, 2]), 3)
    assert matrix[0].tolist() == [1.0, 0.0, 0.0] and matrix[2].tolist() == [0.0, 0.0, 1.0]


def test_total_loss_figure_plots_the_log_and_the_published_level():
    fig = total_loss_figure(LOG, published_final_loss=0.001623)
    run, published = fig.data
    assert same(run.x, [10, 20, 30]) and same(run.y, [3.0, 1.0, 0.1]) and run.name == "this run"
    assert same(published.x, [10, 30]) and same(published.y, [0.001623, 0.001623])
    assert "0.001623" in published.name
    assert fig.layout.yaxis.type == "log" and fig.layout.title.text == "Training loss"
    assert len(total_loss_figure(LOG).data) == 1


def drop_at(step):
    return Drop(step is not None, step, 2.0 if step else None, 0.05 if step else None, 1.6, 10 if step else None,
                step, step, "" if step else "the curve does not fall")


def test_loss_by_length_figure_draws_each_length_and_its_drop():
    fig = loss_by_length_figure(LOG, {1: drop_at(20), 2: drop_at(30), 3: drop_at(None)}, unreachable_label=3)
    names = [t.name for t in fig.data]
    assert names == ["length 1", None, "length 2", None, "unreachable (3)"]
    curve_1, marker_1, curve_2, marker_2, curve_3 = fig.data
    for curve, column in ((curve_1, 1), (curve_2, 2), (curve_3, 3)):
        assert same(curve.x, LOG.steps)
        assert same(curve.y, [row[column] for row in LOG.loss_by_length])
    # The diamond sits on its curve at the drop step; length 3 has no drop: no diamond.
    assert same(marker_1.x, [20]) and same(marker_1.y, [0.05]) and marker_1.legendgroup == "1"
    assert same(marker_2.x, [30]) and same(marker_2.y, [0.05]) and marker_2.legendgroup == "2"
    assert marker_1.marker.color == curve_1.line.color != curve_2.line.color == marker_2.marker.color
    assert fig.layout.xaxis.type == "log"


def test_a_title_names_diamonds_only_when_some_are_drawn():
    drawn = evaluation_loss_figure([10, 20, 30], {1: [3.0, 1.0, 0.1]}, {1: drop_at(20)}, unreachable_label=3)
    assert drawn.layout.title.text == "Loss by true path length (diamonds: transitions that hold)"
    none = evaluation_loss_figure([10, 20, 30], {1: [3.0, 1.0, 0.1]}, {}, unreachable_label=3)
    assert all(t.mode == "lines" for t in none.data)
    assert none.layout.title.text == "Loss by true path length (no transition holds)"
    flat = loss_by_length_figure(LOG, {3: drop_at(None)}, unreachable_label=3)
    assert flat.layout.title.text == "Loss by true path length (no drop detected)"


def test_loss_by_length_figure_draws_only_the_chosen_lengths():
    fig = loss_by_length_figure(LOG, {1: drop_at(20), 2: drop_at(30)}, unreachable_label=3,
                                lengths=[2], log_steps=False)
    assert [t.name for t in fig.data] == ["length 2", None]
    assert same(fig.data[0].y, [3.0, 2.0, 0.05]) and fig.layout.xaxis.type == "linear"


def test_the_transition_study_figure_has_a_panel_per_length_and_a_line_per_seed_on_a_linear_axis():
    steps = (0, 5, 10)
    loss = torch.tensor([[[9.0, 4.0], [8.0, 4.0], [0.1, 4.0]], [[9.0, 4.0], [9.0, 4.0], [0.2, 4.0]]],
                        dtype=torch.float64)
    curves = TransitionCurves((0, 1), steps, (1, 15), loss, (1.0, 1.0), PathTrainingConfig(n_max=15))
    drops = [{1: drop_at(10), 15: drop_at(None)}, {1: drop_at(None), 15: drop_at(None)}]
    fig = transition_study_figure(curves, drops, unreachable_label=15)
    names = [t.name for t in fig.data]
    assert names == ["length 1, seed 0", None, "length 1, seed 1", "unreachable (15), seed 0",
                     "unreachable (15), seed 1"]
    assert same(fig.data[0].y, [9.0, 8.0, 0.1]) and same(fig.data[1].x, [10]) and same(fig.data[1].y, [0.1])
    # One panel per length, titled by it; one colour throughout (the panel names the length), no legend.
    assert [t.yaxis for t in fig.data] == ["y", "y", "y", "y2", "y2"]
    assert [a.text for a in fig.layout.annotations] == ["length 1", "unreachable (15)"]
    assert fig.data[0].line.color == fig.data[2].line.color == fig.data[3].line.color
    assert not any(t.showlegend for t in fig.data)
    assert fig.layout.xaxis.type == "linear" and fig.layout.yaxis.type == "log" == fig.layout.yaxis2.type


def test_mean_prediction_figure_colours_at_most_five_labels_and_greys_the_middle_lengths():
    from lib.book.ordered_series import MOST_ORDERED, REST_COLOUR
    means = {length: [float(length)] * 2 for length in [*range(1, 11), 15]}
    fig = mean_prediction_figure([0, 10], means, unreachable_label=15, title="t")
    lines = fig.data[::2]     # each label's line, then its dotted true value
    shown = [t.name for t in lines if t.showlegend]
    assert shown == ["length 1", "length 2", "length 3", "length 4", "lengths 5 to 10 (grey)", "unreachable (15)"]
    assert len({t.line.color for t in lines if t.line.color != REST_COLOUR}) == MOST_ORDERED
    assert [t.line.color == REST_COLOUR for t in lines] == [False] * 4 + [True] * 6 + [False]
    # Five labels or fewer: each its own colour, none grey.
    few = mean_prediction_figure([0, 10], {k: means[k] for k in (1, 2, 3, 15)}, unreachable_label=15, title="t")
    assert len({t.line.color for t in few.data[::2]}) == 4 and REST_COLOUR not in {t.line.color for t in few.data}


def test_confusion_figure_shows_the_row_normalized_matrix():
    labels = torch.tensor([1, 2, 2, 2])
    predictions = torch.tensor([1.0, 2.0, 1.2, 2.3])
    fig = confusion_figure(predictions, labels, 3, unreachable_label=2)
    (heatmap,) = fig.data
    assert same(heatmap.z, confusion_matrix(predictions, labels, 3))
    assert same(heatmap.z, [[NAN] * 3, [0, 1, 0], [0, 1 / 3, 2 / 3]])
    assert list(heatmap.x) == [0, 1, 2] and list(heatmap.y) == [0, 1, 2]
    assert [list(row) for row in heatmap.text] == [["", "", ""], ["", "1.00", ""], ["", "0.33", "0.67"]]
    assert list(fig.layout.xaxis.ticktext) == ["0", "1", "unreach."] == list(fig.layout.yaxis.ticktext)


def test_confusion_slider_shows_one_checkpoint_per_step():
    labels = torch.tensor([1, 2, 2])
    predictions = [torch.tensor([0.0, 0.0, 0.0]), torch.tensor([1.0, 2.0, 1.0]), torch.tensor([1.0, 2.0, 2.0])]
    fig = confusion_slider_figure([0, 10, 20], predictions, labels, 3)
    assert len(fig.data) == 3
    for trace, p in zip(fig.data, predictions):
        assert same(trace.z, confusion_matrix(p, labels, 3))
    slider = fig.layout.sliders[0]
    assert [s.label for s in slider.steps] == ["0", "10", "20"]
    # The last checkpoint is shown first; each step shows exactly its own checkpoint.
    assert slider.active == 2 and [t.visible for t in fig.data] == [False, False, True]
    for step in range(3):
        assert visible_at(fig, step) == [i == step for i in range(3)]
    # The slider sits below the x axis's title even with "unreach." stood upright by a phone
    # (7 px a character), inside the figure, and the plot keeps the height of one checkpoint's figure.
    unreachable = confusion_slider_figure([0, 10, 20], predictions, labels, 3, unreachable_label=2)
    assert unreachable.layout.sliders[0].pad.t >= 50 + 7 * len("unreach.")
    assert unreachable.layout.margin.b >= unreachable.layout.sliders[0].pad.t + 80
    single = confusion_figure(predictions[0], labels, 3, unreachable_label=2)
    assert (unreachable.layout.height - unreachable.layout.margin.b
            == single.layout.height - single.layout.margin.b)


def test_learning_rate_figure_is_a_step_function():
    fig = learning_rate_figure(((5, 1e-3), (3, 1e-4), (2, 2e-3)))
    (trace,) = fig.data
    assert same(trace.x, [0, 5, 5, 8, 8, 10])
    assert same(trace.y, [1e-3, 1e-3, 1e-4, 1e-4, 2e-3, 2e-3])
    assert list(fig.layout.xaxis.range) == [0, 10]
    assert list(fig.layout.yaxis.range) == pytest.approx([0, 1.15 * 2e-3])


def test_label_histogram_shows_the_share_of_each_label():
    fig = label_histogram_figure(torch.tensor([1, 1, 2, 4, 4, 4, 1, 2]), unreachable_label=4)
    (bars,) = fig.data
    assert list(bars.x) == ["0", "1", "2", "3", "unreachable"]
    assert same(bars.y, [0, 3 / 8, 2 / 8, 0, 3 / 8])
