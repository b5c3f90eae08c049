"""The one rule that turns a comparison with a published number into a verdict word: the legend of
the index's table of what is reproduced (book/index.md), applied by every index row
(`lib.book.reproduced`) and by the chapters' findings (chapter 4's published findings, chapter 5's
measures over time).

The word follows from numbers only, never from prose: what the study published, this run's
interval for it, and how many independent units (seeds, matrices) and events that interval rests
on. The evidence comes in three kinds:

* `Interval`: a published value against this run's interval for it (a range over seeds, a Wilson
  interval of a rate). "reproduced" when the interval holds the value, "differs" when it does not,
  "too few events" when a rate rests on fewer than `FEW_EVENTS` events (its interval too wide to
  judge), "one run" when there is no interval (one unit, or an end missing): a row with no
  interval is never "reproduced".
* `Never`: the study says something never happens (or always does: pass the times it did not).
  "differs" when it happened here; else "reproduced" when the units bound its rate below `rate`
  (the upper end of Wilson's interval with no event), "consistent" when they are too few to.
* `Seen`: the study's "it can happen": seen once here ("reproduced"), or not yet ("too few
  events").
* `Order`: the study's "rarer than": this run's intervals wholly in its order ("reproduced"),
  one wholly out of it ("differs"), or overlapping ("too few events").
* `OneRun`: a number read on one model, as the study's own: "one run".
* `NotComparable`: this run's protocol or scale is not the study's.

A row built from several comparisons (two rates of one sweep) takes the weakest word of them
(`WORDS`, strongest agreement first): one "differs" makes the row differ, one "too few events"
keeps it from "reproduced".
"""

from __future__ import annotations

from dataclasses import dataclass

from lib.book.statistics import trials_to_bound, zero_event_upper

REPRODUCED, CONSISTENT, TOO_FEW_EVENTS, ONE_RUN, DIFFERS, NOT_COMPARABLE = (
    "reproduced", "consistent", "too few events", "one run", "differs", "not comparable")
#: The verdict words, from the strongest agreement with the study to the weakest: a row of several
#: comparisons takes the last of its words in this order.
WORDS = (REPRODUCED, CONSISTENT, TOO_FEW_EVENTS, ONE_RUN, DIFFERS, NOT_COMPARABLE)
#: A rate resting on fewer events than this is "too few events".
FEW_EVENTS = 5
#: A "never" is bounded ("reproduced") once no event in the units puts the rate below this.
BOUND_RATE = 0.05


@dataclass(frozen=True)
class Interval:
    """The study's `value` against this run's interval `low`-`high` (None: no interval), which
    rests on `units` independent units (seeds, matrices: not draws that repeat a unit) and, for a
    rate, on `events` events (None for a measured value)."""

    value: float
    low: float | None
    high: float | None
    units: int
    events: int | None = None


@dataclass(frozen=True)
class Never:
    """The study's "never": it happened `events` times in `units` independent units here (for an
    "always", pass the units where it did not happen). `rate`: the rate a bound must beat."""

    events: int
    units: int
    rate: float = BOUND_RATE

    @property
    def upper(self) -> float:
        """The upper end of the 95% Wilson interval of the rate with no event in `units`."""
        return zero_event_upper(self.units)

    @property
    def units_to_bound(self) -> int:
        """The fewest units with no event that would bound the rate below `rate`."""
        return trials_to_bound(self.rate)


@dataclass(frozen=True)
class Seen:
    """The study's "it can happen" (either group can be grokked): it happened `events` times here.
    Once is enough ("reproduced"); never is "too few events" (the units were too few to show it)."""

    events: int


@dataclass(frozen=True)
class Order:
    """The study's "A is rarer than B, rarer than C": this run's intervals of A, B, C in that
    order (each `(low, high)`). "reproduced" when each lies wholly below the next, "differs" when
    one lies wholly above the next, "too few events" when neighbours overlap (the counts cannot
    order them)."""

    intervals: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class OneRun:
    """A number read on one model (one seed, one draw), as the study's own: no interval judges it."""


@dataclass(frozen=True)
class NotComparable:
    """This run's protocol or scale is not the study's (the row says what a comparison needs)."""


def _word(evidence) -> str:
    if isinstance(evidence, NotComparable):
        return NOT_COMPARABLE
    if isinstance(evidence, OneRun):
        return ONE_RUN
    if isinstance(evidence, Never):
        if evidence.events > 0:
            return DIFFERS
        return REPRODUCED if evidence.upper < evidence.rate else CONSISTENT
    if isinstance(evidence, Seen):
        return REPRODUCED if evidence.events > 0 else TOO_FEW_EVENTS
    if isinstance(evidence, Order):
        pairs = list(zip(evidence.intervals, evidence.intervals[1:]))
        if all(lower[1] < upper[0] for lower, upper in pairs):
            return REPRODUCED
        return DIFFERS if any(lower[0] > upper[1] for lower, upper in pairs) else TOO_FEW_EVENTS
    if isinstance(evidence, Interval):
        if evidence.low is None or evidence.high is None or evidence.units < 2 \
                or evidence.low != evidence.low or evidence.high != evidence.high:
            return ONE_RUN
        if evidence.events is not None and evidence.events < FEW_EVENTS:
            return TOO_FEW_EVENTS
        return REPRODUCED if evidence.low <= evidence.value <= evidence.high else DIFFERS
    raise TypeError(f"a verdict is judged on Interval, Never, Seen, Order, OneRun or NotComparable evidence, not {type(evidence).__name__}.")


def judge(*evidence) -> str:
    """The verdict word of one published number (see the module docstring): the weakest word of
    its comparisons, in the order of `WORDS`."""
    if not evidence:
        raise ValueError("a verdict needs at least one comparison.")
    return max((_word(e) for e in evidence), key=WORDS.index)


def rate_interval(value: float, count: int, trials: int, low: float, high: float) -> Interval:
    """A published rate `value` against this run's `count` of `trials` and its interval
    (chapter 4's sweeps, chapter 6's flips). Its events are the rarer side, `count` or
    `trials - count`: a share near 1 rests on its few exceptions as one near 0 on its few events."""
    return Interval(value, low, high, units=trials, events=min(count, trials - count))


__all__ = ["BOUND_RATE", "CONSISTENT", "DIFFERS", "FEW_EVENTS", "Interval", "Never", "NotComparable", "NOT_COMPARABLE",
           "ONE_RUN", "OneRun", "Order", "Seen", "REPRODUCED", "TOO_FEW_EVENTS", "WORDS", "judge", "rate_interval"]
