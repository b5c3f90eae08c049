"""The book's markdown tables and number format (lib.book.tables)."""

import math

import pytest

from lib.book.tables import format_value, markdown_table, scientific, short_scientific


@pytest.mark.parametrize("value, text", [
    (0.0, "0"), (12345, "12,345"), (0.014023, "0.01402"), (3.5e-5, "3.500e-05"), (2.0e7, "2.000e+07"),
    (None, "n/a"), (math.nan, "n/a"), (True, "yes"), ("Z48x|25Z2", "Z48x\\|25Z2"), (1.0, "1"),
    (0.219, "0.219"), (12345.6, "1.235e+04"),
])
def test_each_kind_of_value_has_one_format(value, text):
    assert format_value(value) == text


@pytest.mark.parametrize("value, text", [(0.219, "0.2190"), (18.6, "18.60"), (1.0, "1.000"), (1234.5, "1234"),
                                         (0.0, "0"), (3.5e-5, "3.500e-05")])
def test_table_cells_keep_trailing_zeros_so_a_column_shows_four_digits(value, text):
    assert format_value(value, trailing_zeros=True) == text
    assert markdown_table(["x"], [[value]]).splitlines()[2] == f"| {text} |"


@pytest.mark.parametrize("value, text", [
    (2e-5, "2e-5"), (2e-4, "2e-4"), (2.5e-4, "2.5e-4"), (0.0, "0"), (1e-2, "1e-2"), (1234.0, "1.23e3"),
])
def test_short_scientific_writes_settings_as_people_do(value, text):
    assert short_scientific(value) == text


@pytest.mark.parametrize("value, text", [(0.0, "0"), (1.234e-7, "1.23e-07"), (-5.0, "-5.00e+00")])
def test_scientific_prints_an_exact_zero_as_zero(value, text):
    assert scientific(value) == text


def test_a_table_has_a_header_a_rule_and_one_line_per_row():
    table = markdown_table(["pair", "N", "loss"], [["S4|A4", 24, 0.5], ["Z48", 96, None]],
                           formats={2: lambda v: "-" if v is None else f"{v:.1f}"})
    assert table.splitlines() == ["| pair | N | loss |", "|---|---|---|",
                                  "| S4\\|A4 | 24 | 0.5 |", "| Z48 | 96 | - |"]


def test_a_row_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        markdown_table(["a", "b", "c"], [[1, 2]])
