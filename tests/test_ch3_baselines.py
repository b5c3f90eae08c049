"""Chapter 3's baselines, seed spreads and per-size check (lib.paths.seed_spread, baseline_comparison, size_trend; tables in lib.chapters.ch3_results)."""

import math

from lib.chapters.ch3_results import baseline_table, vertex_2_table
from lib.paths.baseline_comparison import compare_with_baselines
from lib.paths.seed_spread import SeedSpread, count_higher, position_against, spread_by_test
from lib.paths.size_trend import size_trend
from lib.paths.baselines import BaselineScore
from lib.paths.generalization_tests import TESTS


def scores(d12: float, mean: float, share: float = 0.8) -> list[BaselineScore]:
    return [BaselineScore(name, 100, d12, mean, 3.0, 0.0, share, share) for name in TESTS]


def test_a_spread_orders_against_the_study_only_when_every_seed_agrees():
    spread = SeedSpread((0.07, 0.16, 0.12))
    assert spread.low == 0.07 and spread.high == 0.16 and math.isclose(spread.mean, 0.35 / 3)
    assert position_against(spread, 0.145) is None
    assert position_against(spread, 0.05) is True and position_against(spread, 0.2) is False
    assert spread.record() == {"values": [0.07, 0.16, 0.12], "mean": spread.mean, "sd": spread.sd, "min": 0.07,
                               "max": 0.16}
    assert math.isnan(SeedSpread((1.0,)).sd)  # one seed has no spread


def test_spreads_and_orders_come_from_the_seed_records():
    runs = [{"test_mse": {name: 1.0 + i + (0.5 if name == "onpath_target" else 0) for name in TESTS}}
            for i in range(3)]
    spreads = spread_by_test(runs)
    assert spreads["onpath_target"].values == (1.5, 2.5, 3.5)
    order = count_higher(spreads, "onpath_target", "onpath_small_target")
    assert (order.higher, order.seeds) == (3, 3)


def test_the_baseline_comparison_reads_the_gap_the_scale_accounts_for():
    spreads = {name: SeedSpread((16.0, 17.0, 18.0)) for name in TESTS}
    comparisons = compare_with_baselines(spreads, scores(17.0, 10.0), scores(72.0, 40.0), scores(70.0, 42.0))
    last = comparisons[-1]
    assert last.test == "any_target_large_graphs" and last.published == 72.87
    assert math.isclose(last.ratio_to_baseline.low, 16 / 17)
    assert math.isclose(last.study_ratio_to_baseline, 72.87 / 72.0) and last.scale_accounts
    assert math.isclose(last.share_of_gap_from_scale, (72.0 - 17.0) / (72.87 - 17.0))
    assert math.isclose(last.share_of_gap_from_label, (70.0 - 17.0) / (72.87 - 17.0))
    assert len(baseline_table(comparisons).splitlines()) == 2 + len(TESTS)
    assert sum(c.scale_accounts for c in comparisons if TESTS[c.test].task == "any") == 1
    assert len(vertex_2_table(0.6, comparisons).splitlines()) == 3 + len(TESTS)
    assert last.record()["scale_accounts"] is True


def test_the_size_trend_pools_fine_tuning_sizes_apart_from_larger_ones():
    rows = [{"n_vertices": 3, "count": 10, "mse": 0.1, "accuracy": 1.0},
            {"n_vertices": 5, "count": 30, "mse": 0.3, "accuracy": 0.9},
            {"n_vertices": 8, "count": 20, "mse": 1.0, "accuracy": 0.5}]
    trend = size_trend(rows, small_n_max=5)
    assert math.isclose(trend.mse_small, (1 + 9) / 40) and trend.mse_large == 1.0
    assert (trend.count_small, trend.count_large) == (40, 20) and not trend.stays_right
    assert not trend.stays_right_small_ids  # without the id split, larger sizes count as fine-tuning ids
    assert size_trend(rows[:2], small_n_max=5).count_large == 0


def test_the_size_trend_reads_larger_graphs_with_the_fine_tuning_ids_apart():
    rows = [{"n_vertices": 5, "count": 10, "mse": 0.1, "accuracy": 1.0,
             "small_id": {"count": 10, "mse": 0.1}, "large_id": {"count": 0, "mse": float("nan")}},
            {"n_vertices": 7, "count": 30, "mse": 0.5, "accuracy": 0.5,
             "small_id": {"count": 20, "mse": 0.15}, "large_id": {"count": 10, "mse": 1.2}}]
    trend = size_trend(rows, small_n_max=5)
    assert trend.mse_large == 0.5 and not trend.stays_right
    assert (trend.mse_large_small_ids, trend.count_large_small_ids) == (0.15, 20)
    assert (trend.mse_large_large_ids, trend.count_large_large_ids) == (1.2, 10)
    assert trend.stays_right_small_ids and math.isclose(trend.growth_small_ids, 1.5)
    assert trend.record()["stays_right_small_ids"] is True
