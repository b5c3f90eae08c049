"""Chapter 3's baselines, seed spreads and per-size check (lib.paths.seed_spread, baseline_comparison, size_trend; tables in lib.chapters.ch3_results)."""

import math

from lib.chapters.ch3_results import baseline_table, vertex_2_table
from lib.paths.baseline_comparison import compare_with_baselines
from lib.paths.seed_spread import SeedSpread
from lib.paths.baselines import BaselineScore
from lib.paths.generalization_tests import TESTS


def scores(d12: float, mean: float, share: float = 0.8) -> list[BaselineScore]:
    return [BaselineScore(name, 100, d12, mean, 3.0, 0.0, share, share) for name in TESTS]


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
