"""Prediction against training frequency, per path length (lib.paths.length_frequency)."""

import math

import torch

from lib.paths.length_frequency import (
    DistanceRow, UnderPrediction, compare_frequency, label_shares, rows_by_distance,
)
from lib.paths.length_generalization import Cell


def cell(n, d, count, mean_prediction, mse=0.0):
    return Cell(n, d, count, mse, mean_prediction, 1.0, True, True)


def test_label_shares_count_each_distance_and_give_zero_to_absent_ones():
    shares = label_shares(torch.tensor([1, 1, 2, 3]), [1, 2, 3, 4])
    assert shares == {1: 0.5, 2: 0.25, 3: 0.25, 4: 0.0}


def test_rows_pool_cells_of_one_distance_with_every_graph_weighted_equally():
    cells = [cell(4, 2, 10, 2.0, 0.0), cell(8, 2, 30, 1.0, 1.0), cell(8, 7, 5, 4.0, 9.0)]
    rows = rows_by_distance(cells, {2: 0.3}, distance_train_max=5)
    assert [r.distance for r in rows] == [2, 7]
    assert rows[0].count == 40 and math.isclose(rows[0].mean_prediction, 1.25) and math.isclose(rows[0].mse, 0.75)
    assert rows[0].training_share == 0.3 and rows[0].in_training_range
    assert rows[1].training_share == 0.0 and not rows[1].in_training_range and rows[1].shortfall == 3.0


def model(name, predictions, shares, distance_train_max):
    rows = tuple(DistanceRow(d, shares.get(d, 0.0), d <= distance_train_max, 10, p, 0.0)
                 for d, p in predictions.items())
    return UnderPrediction(name, rows, distance_train_max)


def test_the_onset_is_the_first_distance_more_than_half_a_hop_short():
    # Range ends at 5; distance 5 (0.5% of paths) is predicted at 4.1: short inside the range.
    rare = model("a", {3: 3.0, 4: 3.9, 5: 4.1, 6: 4.2}, {3: 0.2, 4: 0.04, 5: 0.005}, 5)
    assert rare.onset.distance == 5 and rare.starts_inside_range and not rare.starts_at_range_end
    assert rare.lowest_share_predicted == 0.04 and rare.highest_share_short == 0.005
    # Distance 5 right, 6 (outside) short: the under-prediction starts at the range's end.
    stopped = model("b", {4: 4.0, 5: 4.8, 6: 5.0}, {4: 0.1, 5: 0.1}, 5)
    assert stopped.onset.distance == 6 and stopped.starts_at_range_end and not stopped.starts_inside_range
    assert model("c", {1: 1.0}, {1: 1.0}, 5).onset is None
    record = rare.record()
    assert record["onset_distance"] == 5 and record["rows"][2]["shortfall"] == 5 - 4.1


def test_the_comparison_names_the_explanation_the_models_share():
    rare_a = model("a", {4: 3.9, 5: 4.1, 6: 4.2}, {4: 0.04, 5: 0.006}, 5)
    rare_b = model("b", {5: 4.9, 6: 5.3, 7: 5.5}, {5: 0.01, 6: 0.0015, 7: 0.0001}, 7)
    both = compare_frequency([rare_a, rare_b])
    assert both.inside_range_count == 2 and both.share_separates and both.supports == "rare data"
    assert both.highest_share_short == 0.006 and both.lowest_share_predicted == 0.01
    stopped = model("c", {4: 4.0, 5: 4.8, 6: 5.0}, {4: 0.1, 5: 0.1}, 5)
    assert compare_frequency([stopped]).supports == "data stopped"
    mixed = compare_frequency([rare_a, stopped])
    assert mixed.supports == "mixed" and mixed.record()["inside_range_count"] == 1
    # Inside the range in every model, but a common distance is short while a rarer one is right.
    broad = model("d", {3: 2.0, 4: 4.0}, {3: 0.2, 4: 0.05}, 5)
    assert not compare_frequency([broad]).share_separates and compare_frequency([broad]).supports == "mixed"
