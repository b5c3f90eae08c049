"""The one verdict rule (lib.book.verdict): each word of the index's legend on hand-made cases."""

import pytest

from lib.book.statistics import wilson_interval
from lib.book.verdict import (
    CONSISTENT, DIFFERS, NOT_COMPARABLE, ONE_RUN, REPRODUCED, TOO_FEW_EVENTS, WORDS, Interval, Never, NotComparable, OneRun, Order, Seen,
    judge, rate_interval,
)


def rate(value, count, trials):
    return rate_interval(value, count, trials, *wilson_interval(count, trials))


def test_an_interval_that_holds_the_study_reproduces_it_and_one_that_does_not_differs():
    assert judge(Interval(0.5, 0.4, 0.6, units=3)) == REPRODUCED
    assert judge(Interval(0.5, 0.4, 0.5, units=3)) == REPRODUCED          # the ends belong to it
    assert judge(Interval(0.7, 0.4, 0.6, units=3)) == DIFFERS
    assert judge(rate(0.06, 48, 1000)) == REPRODUCED                     # 4.8%, 3.6% to 6.3%
    assert judge(rate(0.0603, 504, 10_000)) == DIFFERS                   # 5.04%, 4.63% to 5.49%


def test_a_row_with_no_interval_is_one_run_never_reproduced():
    assert judge(Interval(0.5, None, None, units=3)) == ONE_RUN
    assert judge(Interval(0.5, 0.5, 0.5, units=1)) == ONE_RUN            # one seed: its range is a point
    assert judge(Interval(0.5, float("nan"), 0.6, units=3)) == ONE_RUN
    assert judge(OneRun()) == ONE_RUN and judge(OneRun(), NotComparable()) == NOT_COMPARABLE


def test_a_rate_on_fewer_than_five_events_is_too_few_events_whichever_side():
    assert judge(rate(0.0043, 1, 1000)) == TOO_FEW_EVENTS                 # A4xZ2: 1 grokker in 1,000
    assert judge(rate(0.99, 998, 1000)) == TOO_FEW_EVENTS                 # 2 exceptions in 1,000
    assert judge(rate(0.0043, 5, 1000)) == REPRODUCED


def test_never_is_consistent_on_few_units_reproduced_once_bounded_and_differs_when_seen():
    assert judge(Never(0, 4)) == CONSISTENT                                # bound 49%
    assert judge(Never(0, 12)) == CONSISTENT                               # bound 24%
    assert Never(0, 12).units_to_bound == 73
    assert judge(Never(0, 73)) == REPRODUCED and judge(Never(0, 72)) == CONSISTENT
    assert judge(Never(1, 400)) == DIFFERS


def test_a_row_of_two_comparisons_takes_the_weaker_word():
    s4, a4 = rate(0.0603, 48, 1000), rate(0.0043, 1, 1000)
    assert judge(s4) == REPRODUCED and judge(s4, a4) == TOO_FEW_EVENTS
    assert judge(s4, Interval(0.7, 0.4, 0.6, units=3)) == DIFFERS
    assert judge(Never(0, 4), s4) == CONSISTENT
    assert judge(s4, NotComparable()) == NOT_COMPARABLE
    assert WORDS.index(REPRODUCED) == 0


def test_no_evidence_or_the_wrong_kind_is_refused_with_a_sentence():
    with pytest.raises(ValueError, match="at least one"):
        judge()
    with pytest.raises(TypeError, match="Interval, Never, Seen, Order, OneRun or NotComparable"):
        judge(0.5)


def test_an_order_of_intervals_holds_differs_or_cannot_be_told():
    assert judge(Order(((0.001, 0.01), (0.03, 0.06), (0.9, 0.95)))) == REPRODUCED
    assert judge(Order(((0.001, 0.04), (0.03, 0.06), (0.9, 0.95)))) == TOO_FEW_EVENTS
    assert judge(Order(((0.07, 0.09), (0.03, 0.06), (0.9, 0.95)))) == DIFFERS


def test_something_the_study_says_can_happen_is_reproduced_once_seen():
    assert judge(Seen(1)) == REPRODUCED and judge(Seen(0)) == TOO_FEW_EVENTS
    assert judge(Seen(3), Seen(0)) == TOO_FEW_EVENTS
