"""How many series (distances, sizes, thresholds, cells) one panel tells apart by colour, in
which colours, and which to draw when there are more (chapters 2, 3, 7 and 8).

A reader's pass over the built book found neighbours of an ordered Viridis gradient hard to tell
apart as thin lines even at five (the book's figure style squeezes Viridis into the part that
reads on each page: neighbours lie 18 CIELAB delta E apart at five series in light mode, 7 at
eleven), and the palette's near pairs (blue and sky blue, vermillion and orange) hard too. So a
panel colours at most `MOST_ORDERED` series, in `DISTINCT`: five of the palette's colours that
stay apart on either page and for colour-blind readers; the series' order is the legend's. A
figure with more draws a subset (`evenly_spaced`: the others stay in a heatmap or table beside
it), facets them, or greys the rest (`REST_COLOUR`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import TypeVar

from lib.book.plotting import PALETTE

T = TypeVar("T")

#: The most series one panel colours apart.
MOST_ORDERED = 5
#: Their colours: the palette's blue, vermillion, bluish green, reddish purple and black (the
#: page's text colour in dark mode), in that order, then yellow (indigo in light mode) for a
#: figure whose panels show different series, up to six in all (chapter 7's attention shares).
#: Every pair lies at least 39 delta E apart on either page as the figure style draws it.
DISTINCT = [PALETTE[i] for i in (0, 1, 2, 3, 7, 6)]
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


def series_colours(count: int, *, most: int = MOST_ORDERED) -> list[str]:
    """Colours for `count` series, in order: the first `count` of `DISTINCT`. More than `most`
    (one panel's `MOST_ORDERED`; a figure of several panels may ask for all of `DISTINCT`)
    cannot all be told apart and raise."""
    if count > min(most, len(DISTINCT)):
        raise ValueError(f"{count} series cannot be told apart by colour (at most {min(most, len(DISTINCT))}): "
                         "draw a subset (evenly_spaced), facet them, or grey the rest")
    return DISTINCT[:count]
