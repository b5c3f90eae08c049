"""Chapter 3's one-model claims read over the seeds, the frequency table and comparison, and what
each further seed measures (lib.chapters.ch3_results, lib.chapters.ch3_results and the lib.paths modules they read)."""

import math

import pytest
import torch

from lib.chapters.ch3_results import all_seeds, frequency_table, kind_spread_table, seed_claims
from lib.paths.length_summary import LengthSeeds, summarize_length_study
from lib.paths.size_trend import size_trends_over_seeds
from lib.paths.target_kind_scores import kind_contrast, kind_spread
from lib.paths.under_prediction_onsets import onsets, under_prediction
from lib.paths.generalization_tests import TARGET_KINDS, TESTS
from lib.paths.length_frequency import compare_frequency
from lib.paths.length_generalization import Cell, LengthSplit
from lib.paths.training import PathTrainingConfig

VERTEX_2, ON, OFF, UNREACHABLE = TARGET_KINDS


def kinds(on_mse, off_mse, unreachable_mse, answers=0.8):
    def score(mse):
        return {"count": 10, "mse": mse, "accuracy": 0.5, "mean_label": 2.0, "mean_prediction": 2.0,
                "answers_1_2_distance": answers}
    return {VERTEX_2: score(0.01), ON: score(on_mse), OFF: score(off_mse), UNREACHABLE: score(unreachable_mse)}


def runs():
    by_kind = [kinds(0.3, 12.0, 24.0, 0.6), kinds(0.5, 11.0, 20.0, 0.8), kinds(2.0, 10.0, 30.0, 0.7)]
    # The on-path tests have no off-path or unreachable targets.
    return [{"test_by_kind": {name: (k if TESTS[name].task == "any" else {VERTEX_2: k[VERTEX_2], ON: k[ON]})
                              for name in TESTS}} for k in by_kind]


def test_kind_spreads_read_each_seed_and_skip_absent_kinds():
    spread = kind_spread(runs(), "any_target_large_graphs", OFF)
    assert spread.values == (12.0, 11.0, 10.0)
    assert kind_spread(runs(), "onpath_target", OFF) is None
    table = kind_spread_table(runs())
    assert len(table.splitlines()) == 2 + len(TESTS) and "n/a" in table and "11 (10 to 12)" in table


def test_the_contrast_counts_seeds_where_on_path_targets_are_far_better():
    contrast = kind_contrast(runs(), "any_target_large_graphs", factor=10.0)
    # Seed 3: 10 x 2.0 = 20 is not below min(10, 30).
    assert (contrast.seeds_far_better, contrast.seeds) == (2, 3)
    assert contrast.off_path_answers_1_2.values == (0.6, 0.8, 0.7)
    assert contrast.record()["on_path_mse"]["max"] == 2.0


def size_rows(small_mse, large_small_id_mse, large_large_id_mse):
    rows = [{"n_vertices": 3, "count": 10, "mse": small_mse, "accuracy": 1.0,
             "small_id": {"count": 10, "mse": small_mse}, "large_id": {"count": 0, "mse": math.nan}},
            {"n_vertices": 6, "count": 30, "mse": (10 * large_small_id_mse + 20 * large_large_id_mse) / 30,
             "accuracy": 0.5, "small_id": {"count": 10, "mse": large_small_id_mse},
             "large_id": {"count": 20, "mse": large_large_id_mse}}]
    return {"analysis": {"onpath_by_graph_size": rows}}


def test_the_size_check_holds_ids_to_the_fine_tuning_ones_in_every_seed():
    seeds = size_trends_over_seeds([size_rows(0.01, 0.3, 0.9), size_rows(0.02, 0.03, 0.01)], small_n_max=5)
    first = seeds.trends[0]
    assert first.mse_large_small_ids == 0.3 and first.count_large_small_ids == 10
    assert first.mse_large_large_ids == 0.9 and math.isclose(first.mse_large, (3 + 18) / 30)
    assert math.isclose(first.growth_small_ids, 30.0) and not first.stays_right_small_ids
    assert seeds.trends[1].stays_right_small_ids
    assert (seeds.seeds_not_staying_right, seeds.seeds_new_ids_worse) == (1, 1)
    assert seeds.seeds == 2 and seeds.growth_small_ids.values[0] == 30.0
    assert seeds.record()["growth_small_ids"]["values"][1] == 1.5


def length_summary(top, longer_mse, training_mse):
    split = LengthSplit(3, 4, 6)
    cells = [Cell(4, 1, 20, training_mse, 1.0, 1.0, True, True),
             Cell(6, 4, 20, longer_mse, top, 0.0, False, False)]
    config = PathTrainingConfig(n_layers=2, n_min=3, n_max=6)
    return summarize_length_study(cells, split, torch.tensor([1, 2, 3]), [], config)


def test_length_seeds_count_the_seeds_each_claim_holds_in():
    seeds = LengthSeeds((0, 1), (length_summary(3.2, 1.0, 0.01), length_summary(4.5, 0.05, 0.01)))
    assert seeds.top_prediction.values == (3.2, 4.5)
    assert seeds.seeds_stopping_within_a_hop == 1 and seeds.seeds_longer_ten_times_worse == 1
    assert seeds.record()["longer_distances_mse"]["max"] == 1.0


def test_seed_counts_and_claims():
    assert all_seeds(2, 2) and not all_seeds(1, 2) and not all_seeds(0, 0)
    sizes = size_trends_over_seeds([size_rows(0.01, 0.3, 0.9)], small_n_max=5)
    lengths = LengthSeeds((0,), (length_summary(3.2, 1.0, 0.01),))
    cells = [Cell(4, 3, 20, 0.0, 3.0, 1.0, True, True), Cell(4, 4, 20, 1.0, 3.2, 0.0, True, True)]
    frequency = compare_frequency([under_prediction("m", cells, torch.tensor([3] * 9 + [4]), 4)])
    claims = seed_claims(sizes, kind_contrast(runs()[:2]), lengths, frequency)
    assert all(isinstance(v, bool) for v in claims.values()) and all(claims.values())


def test_the_frequency_table_and_comparison_read_both_model_families():
    length_cells = [Cell(6, 4, 20, 0.0, 3.95, 1.0, True, True), Cell(6, 5, 20, 0.8, 4.1, 0.0, True, True),
                    Cell(7, 6, 20, 3.4, 4.15, 0.0, False, False)]
    depth_cells = [Cell(8, 5, 20, 0.4, 4.9, 0.6, False, True), Cell(8, 6, 20, 1.1, 5.3, 0.3, False, True)]
    length = [under_prediction("length", length_cells, torch.tensor([4] * 96 + [5] * 4), 5)]
    depth = [under_prediction("chapter 2", depth_cells, torch.tensor([5] * 99 + [6]), 7)]
    table = frequency_table(length, depth)
    assert len(table.splitlines()) == 2 + 3 and "0 (outside)" in table and "n/a" in table
    comparison = compare_frequency([*length, *depth])
    assert comparison.inside_range_count == 2 and len(comparison.models) == 2
    assert comparison.supports == "rare data" and comparison.share_separates
    assert comparison.lowest_share_predicted == pytest.approx(0.96)
    assert comparison.highest_share_short == pytest.approx(0.04)
    assert onsets(length).onsets == ((5, pytest.approx(0.04), True),) and onsets(length).missing == 0
    assert onsets(depth).models == 1
