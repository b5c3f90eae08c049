"""How many ordered series (distances, sizes, thresholds) one panel may tell apart by colour, and
which to draw when there are more (chapters 2, 3 and 7).

Ordered series take colours along Viridis (`lib.book.plotting.ordered_colours`), which the book's
figure style squeezes into the part of the scale that reads on each page (light: 0-0.57, dark:
0.42-1.0). Neighbours then lie about 18 CIELAB delta E apart or more in light mode at five series
(30 in dark), and only 7 at eleven: eleven lines read as one. So a panel colours at most
`MOST_ORDERED` of them; a figure with more draws a subset (`evenly_spaced`: the others stay in a
heatmap or table beside it), facets them, or greys the rest (`REST_COLOUR`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import TypeVar

from lib.book.plotting import PALETTE, ordered_colours

T = TypeVar("T")

#: The most ordered series one panel colours apart (neighbours at least 18 delta E apart).
MOST_ORDERED = 5
#: The colour of series drawn as one group ("the other lengths"): the figure style makes it a
#: grey that reads on either page.
REST_COLOUR = "grey"


def evenly_spaced(values: Sequence[T], count: int = MOST_ORDERED, keep: Sequence[T] = ()) -> list[T]:
    """`count` of `values` (in their order), the first, the last and each of `keep` among them,
    spread as evenly as can be: of all such choices, the one whose widest gap (in places along
    `values`) is narrowest, then whose gaps are most alike (least sum of squares), then the first.
    All of them when there are no more than `count`. Used where a figure can colour only
    `MOST_ORDERED` lines (chapter 3's size and distance lines)."""
    values = list(values)
    if len(values) <= count:
        return values
    fixed = sorted({0, len(values) - 1} | {values.index(v) for v in keep if v in values})
    if count < len(fixed):
        raise ValueError(f"evenly_spaced cannot keep {len(fixed)} values (first, last and {list(keep)}) "
                         f"in {count}")
    free = [i for i in range(len(values)) if i not in fixed]

    def spread(picks: tuple[int, ...]) -> tuple[int, int]:
        gaps = [b - a for a, b in zip(picks, picks[1:])]
        return max(gaps), sum(g * g for g in gaps)

    best = min((tuple(sorted(fixed + list(extra))) for extra in combinations(free, count - len(fixed))), key=spread)
    return [values[i] for i in best]


def series_colours(count: int) -> list[str]:
    """Colours for `count` series of one panel: ordered (Viridis) up to `MOST_ORDERED`, the book's
    eight palette colours beyond (distinct in both modes, order given by the legend alone);
    more than eight cannot be told apart and raise (chapter 7's thresholds k)."""
    if count <= MOST_ORDERED:
        return ordered_colours(count)
    if count <= len(PALETTE):
        return list(PALETTE[:count])
    raise ValueError(f"{count} series in one panel cannot be told apart by colour (at most {len(PALETTE)}): "
                     "draw a subset (evenly_spaced), facet them, or grey the rest")
