"""Markdown tables from rows of values, with one number format for the whole book (all chapters).

Chapters display tables with `IPython.display.Markdown(markdown_table(...))`. Cells are
formatted by `format_value`: integers with thousands separators, other numbers with four
significant digits, trailing zeros kept in tables (scientific notation when very small or
large), exact zeros as "0", missing
values (None or NaN) as "n/a". A "|" inside a cell (as in the group name "Z48x|25Z2") is
escaped so that it does not split the cell.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: Significant digits of every non-integer number in the book's tables.
SIGNIFICANT_DIGITS = 4


def format_value(value: Any, digits: int = SIGNIFICANT_DIGITS, *, trailing_zeros: bool = False) -> str:
    """One number (or other value) as text (see the module docstring for the rules).

    Tables keep trailing zeros (`trailing_zeros=True`: 0.2190 beside 0.1563, so every cell of a
    column shows the same number of significant digits); prose drops them (0.219).
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if 1e-3 <= abs(value) < 1e5:
            return f"{value:#.{digits}g}".rstrip(".") if trailing_zeros else f"{value:.{digits}g}"
        return scientific(value, digits - 1)
    return str(value).replace("|", "\\|")


def scientific(value: float, decimals: int = 2) -> str:
    """`value` in scientific notation with `decimals` digits after the point; an exact zero as "0".

    For numbers in prose that can be exactly zero (chapter 1's error of the hand-built model):
    "0.00e+00" would suggest a rounded small number where there is none.
    """
    if value == 0:
        return "0"
    return f"{value:.{decimals}e}"


def short_scientific(value: float) -> str:
    """A setting such as a weight decay or learning rate as people write it: 2e-5, 2.5e-4, 0.

    Three significant digits at most, trailing zeros dropped, no "+" or leading zeros in the
    exponent (chapter 4's weight decays).
    """
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.2e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]],
                   formats: Mapping[int, Callable[[Any], str]] | None = None) -> str:
    """A markdown table with `header` and one line per row.

    Args:
        header: column titles.
        rows: cell values, as many per row as there are titles.
        formats: optional per-column formatters (column index -> function) that replace
            `format_value` for that column.

    Raises:
        ValueError: if a row has a different number of cells from the header.
    """
    formats = formats or {}
    lines = ["| " + " | ".join(format_value(h) for h in header) + " |",
             "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"A table row has {len(row)} cells for {len(header)} columns: {row!r}.")
        cells = [formats[i](v) if i in formats else format_value(v, trailing_zeros=True)
                 for i, v in enumerate(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
