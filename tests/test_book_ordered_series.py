"""The ordered-series rule (lib/book/ordered_series.py): at most five coloured lines a panel, the
subset spread evenly with the first, the last and the kept values among it."""

from __future__ import annotations

import math

import pytest

from lib.book.figure_style import lab, parse_colour, series_colour
from lib.book.ordered_series import DISTINCT, MOST_ORDERED, evenly_spaced, series_colours


def test_evenly_spaced_keeps_the_ends_and_the_kept_value_and_spreads_the_rest():
    assert evenly_spaced(range(1, 10), 5) == [1, 3, 5, 7, 9]
    assert evenly_spaced(range(3, 13), 5, keep=[6]) == [3, 6, 8, 10, 12]
    assert evenly_spaced([1, 2, 3], 5) == [1, 2, 3]
    assert evenly_spaced(range(10), 3, keep=[99]) == [0, 4, 9]        # a value not there is ignored
    with pytest.raises(ValueError, match="cannot keep 3 values"):
        evenly_spaced(range(10), 2, keep=[5])


def test_the_five_distinct_colours_stay_apart_on_both_pages_and_a_sixth_series_raises():
    """The reason for DISTINCT: every pair of its six lies at least 39 delta E apart on either
    page as the figure style draws it (the browser check asks 12; five Viridis steps were 18)."""
    for mode in ("light", "dark"):
        colours = [lab(parse_colour(series_colour(c, mode))[0]) for c in series_colours(6, most=6)]
        assert min(math.dist(a, b) for i, a in enumerate(colours) for b in colours[i + 1:]) > 39
    assert series_colours(2) == DISTINCT[:2]
    with pytest.raises(ValueError, match="cannot be told apart"):
        series_colours(MOST_ORDERED + 1)
    with pytest.raises(ValueError, match="at most 6"):
        series_colours(7, most=99)
