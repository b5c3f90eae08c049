"""AUC, correlations and bootstrap intervals (lib.book.statistics) against hand-computed values."""

import math

import pytest
import torch

from lib.book.statistics import (
    average_ranks, bootstrap, mean_estimate, pearson, roc_auc, spearman, trials_to_bound, wilson_interval,
    zero_event_upper,
)


def t(values):
    return torch.tensor(values, dtype=torch.float64)


def test_tied_values_share_the_mean_of_their_ranks():
    assert average_ranks(t([10, 20, 20, 5])).tolist() == [2.0, 3.5, 3.5, 1.0]


def test_correlations_on_hand_computed_cases():
    x = t([1, 2, 3, 4])
    assert pearson(x, 2 * x + 1) == pytest.approx(1.0)
    assert pearson(x, t([1, 3, 2, 4])) == pytest.approx(0.8)  # cov 1.0 over var 1.25
    # A monotone but non-linear relation: rank correlation 1, linear correlation below 1.
    assert spearman(x, x ** 3) == pytest.approx(1.0) and pearson(x, x ** 3) < 0.99
    assert spearman(x, -x) == pytest.approx(-1.0)
    assert math.isnan(pearson(x, t([2, 2, 2, 2])))


def test_auc_is_the_share_of_positive_negative_pairs_ordered_right():
    scores = t([0.9, 0.4, 0.4, 0.1, 0.6])
    positive = torch.tensor([True, True, False, False, False])
    # Pairs (pos, neg): 0.9 beats all three; 0.4 ties 0.4 (1/2), beats 0.1, loses to 0.6.
    assert roc_auc(scores, positive) == pytest.approx((3 + 1.5) / 6)
    assert roc_auc(-scores, positive) == pytest.approx(1 - 4.5 / 6)
    assert roc_auc(t([1, 2]), torch.tensor([True, False])) == 0.0
    assert math.isnan(roc_auc(scores, torch.zeros(5, dtype=torch.bool)))


def test_bootstrap_interval_is_reproducible_and_covers_the_estimate():
    values = torch.arange(50, dtype=torch.float64)
    first = mean_estimate(values, resamples=300, generator=torch.Generator().manual_seed(0))
    second = mean_estimate(values, resamples=300, generator=torch.Generator().manual_seed(0))
    assert first == second
    assert first.value == 24.5 and first.low < 24.5 < first.high
    # The standard error of the mean of 0..49 is about 2.0: the 95% interval spans about +-4.
    assert 2.5 < first.high - 24.5 < 6 and 2.5 < 24.5 - first.low < 6
    assert math.isnan(mean_estimate(t([3.0]), resamples=10, generator=torch.Generator()).low)


def test_stratified_bootstrap_keeps_both_classes_in_every_resample():
    scores = t([0.9, 0.8, 0.1, 0.2, 0.3, 0.4])
    positive = torch.tensor([True, True, False, False, False, False])
    estimate = bootstrap(roc_auc, scores, positive, resamples=200, generator=torch.Generator().manual_seed(1),
                         strata=positive.long())
    assert estimate.value == 1.0 and estimate.low == 1.0 and estimate.high == 1.0
    with pytest.raises(ValueError, match="same length"):
        bootstrap(roc_auc, scores, positive[:3], resamples=2, generator=torch.Generator())


def test_bootstrap_of_no_rows_is_nan_not_an_error():
    empty = torch.zeros(0, dtype=torch.float64)
    estimate = bootstrap(roc_auc, empty, empty.bool(), resamples=10, generator=torch.Generator())
    assert all(math.isnan(v) for v in (estimate.value, estimate.low, estimate.high))


# Wilson's interval: the one every chapter and the index use.

@pytest.mark.parametrize("n", [1, 2, 7, 20, 60, 480, 10_000])
def test_wilson_interval_is_exact_at_both_ends_and_holds_its_share(n):
    """At 0 events the lower end is exactly 0 and at n of n the upper end exactly 1 (the closed
    form leaves 3e-17 and 0.9999999999999999 there, which put a share outside its own interval:
    chapter 1's check stopped the README's small rerun on it)."""
    assert wilson_interval(0, n)[0] == 0.0 and wilson_interval(n, n)[1] == 1.0
    for k in range(n + 1) if n <= 60 else (0, 1, n // 2, n - 1, n):
        low, high = wilson_interval(k, n)
        assert 0.0 <= low <= k / n <= high <= 1.0


def test_wilson_interval_known_values_and_bad_counts():
    # R: binom::binom.wilson(3, 8) -> 0.1368443, 0.6942576.
    assert wilson_interval(3, 8) == pytest.approx((0.1368443, 0.6942576), abs=1e-7)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert zero_event_upper(4) == pytest.approx(3.8415 / 7.8415, abs=1e-4)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(-1, 2)


def test_trials_to_bound_is_the_fewest_zero_event_trials_below_the_rate():
    for rate in (0.5, 0.1, 0.05, 0.01):
        n = trials_to_bound(rate)
        assert zero_event_upper(n) < rate <= zero_event_upper(n - 1)
