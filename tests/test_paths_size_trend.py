"""The per-size on-path check: fine-tuning sizes pooled apart from larger ones, and larger graphs read with the fine-tuning ids apart (lib.paths.size_trend)."""

import math

from lib.paths.size_trend import size_trend


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
