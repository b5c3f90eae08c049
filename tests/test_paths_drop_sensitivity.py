"""The sensitivity table of chapter 2's drop detector (lib.paths.drop_sensitivity): one row per
value of each setting, and a transition holds only when every row finds it within its fall."""

import math

from lib.paths.drop_sensitivity import SENSITIVITY_RANGES, sensitivity
from lib.paths.phase_transitions import DropSettings, detect_drop

STEPS = list(range(0, 301, 5))


def step_curve(at: int, high: float, low: float) -> list[float]:
    top, bottom = math.log10(high), math.log10(low)
    return [10 ** (top if s <= at else bottom if s >= at + 15 else top + (bottom - top) * (s - at) / 15)
            for s in STEPS]


CURVES = {(0, 1): step_curve(100, 16.0, 0.01),     # two decades and more: found at every setting
          (0, 2): step_curve(150, 10.0, 10 ** 0.4),   # 0.6 decades: lost where min_decades > 0.6
          (1, 1): step_curve(120, 16.0, 0.02)}


def analyse(settings: DropSettings):
    found = {}
    for key, curve in CURVES.items():
        drop = detect_drop(STEPS, curve, settings)
        found[key] = (drop.step, drop.dropped, drop.start, drop.end)   # every drop taken as a transition
    return found


def test_the_table_has_one_row_per_value_and_keeps_what_every_row_finds():
    table = sensitivity(analyse, DropSettings())
    assert len(table.rows) == sum(len(values) for values in SENSITIVITY_RANGES.values())
    first = SENSITIVITY_RANGES["min_decades"]
    assert [(row.setting, row.value) for row in table.rows[:len(first)]] == [("min_decades", v) for v in first]
    assert set(table.holds) == {(0, 1), (1, 1)}
    assert table.held_count(1) == 2 and table.held_count(2) == 0
    lost = {(row["setting"], row["value"]): row["default_transitions_lost"] for row in table.table_rows()}
    assert lost[("min_decades", 0.75)] == 1 and lost[("min_decades", 0.5)] == 0
    assert all(low <= table.holds[key] <= high for key, (low, high) in table.step_range.items())
    data = table.to_dict()
    assert len(data["rows"]) == len(table.rows) and data["holds"][0][:2] == [0, 1]


def test_a_transition_that_does_not_hold_names_the_rows_that_lose_it_or_date_it_elsewhere():
    table = sensitivity(analyse, DropSettings())
    assert table.lost_at((0, 1)) == [] and table.lost_at((1, 1)) == []
    lost = table.lost_at((0, 2))
    assert ("min_decades", 0.75, None) in lost and all(step is None for _, _, step in lost)
    # A row that finds the transition but far outside the default fall does not count either.
    moved = sensitivity(lambda settings: {**analyse(settings), (0, 1): (
        (280 if settings.window != DropSettings().window else 100), True, 100, 115)}, DropSettings())
    assert (0, 1) not in moved.holds
    assert moved.lost_at((0, 1)) and all(step == 280 for _, _, step in moved.lost_at((0, 1)))
