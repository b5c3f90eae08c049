"""Spreads over seeds, and orders claimed only where every seed agrees (lib.paths.seed_spread)."""

import math

from lib.paths.generalization_tests import TESTS
from lib.paths.seed_spread import SeedSpread, count_higher, position_against, spread_by_test


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
