"""Outcome classification on hand-made accuracies; confidence intervals against known values."""

import math

import pytest
import torch

from lib.grokking.outcomes import (
    FAILED, GROKKED_G1, GROKKED_G2, MEMORIZED, OUTCOMES, classify_outcomes,
    clopper_pearson_interval, first_epoch_at_or_above, outcome_fractions, typical_instances,
)
from lib.book.statistics import wilson_interval


def test_classification_of_hand_made_accuracies():
    acc_g1 = torch.tensor([1.0, 0.60, 0.62, 0.30, 0.9995, 0.999, 0.9989, 1.0])
    acc_g2 = torch.tensor([0.58, 1.0, 0.61, 0.30, 0.58, 0.60, 0.60, 0.9995])
    train = torch.tensor([1.0, 1.0, 1.0, 0.80, 1.0, 1.0, 1.0, 1.0])
    codes = classify_outcomes(acc_g1, acc_g2, train)
    assert codes.tolist() == [GROKKED_G1, GROKKED_G2, MEMORIZED, FAILED, GROKKED_G1,
                              GROKKED_G1, MEMORIZED, GROKKED_G1]
    # Thresholds are parameters.
    assert classify_outcomes(acc_g1, acc_g2, train, grok_threshold=0.95).tolist()[6] == GROKKED_G1
    assert classify_outcomes(acc_g1, acc_g2, train, fit_threshold=0.7).tolist()[3] == MEMORIZED
    # Above threshold on both: credited to the better fit.
    assert classify_outcomes(torch.tensor([0.9995]), torch.tensor([1.0]), torch.tensor([1.0])).item() == GROKKED_G2


def test_outcome_fractions_count_everything():
    codes = torch.tensor([GROKKED_G1] * 6 + [GROKKED_G2] * 1 + [MEMORIZED] * 93)
    fractions = outcome_fractions(codes)
    assert list(fractions) == list(OUTCOMES)
    assert [f.count for f in fractions.values()] == [6, 1, 93, 0]
    assert [f.fraction for f in fractions.values()] == [0.06, 0.01, 0.93, 0.0]
    for name, f in fractions.items():
        assert f.outcome == name and f.n_instances == 100
        assert (f.low, f.high) == wilson_interval(f.count, 100)
    exact = outcome_fractions(codes, confidence=0.9, method="clopper_pearson")
    for f in exact.values():
        assert (f.low, f.high) == clopper_pearson_interval(f.count, 100, 0.9)
    assert exact["failed"].low == 0.0 and exact["memorized"].high < 1.0


def test_an_exact_tie_above_the_threshold_goes_to_g1():
    codes = classify_outcomes(torch.tensor([1.0, 0.9995]), torch.tensor([1.0, 0.9995]), torch.tensor([1.0, 1.0]))
    assert codes.tolist() == [GROKKED_G1, GROKKED_G1]


def test_grokking_does_not_need_the_fit_threshold():
    # An instance above the grok threshold on a whole table is credited to that group even if
    # its training accuracy is lower (the training set is a subset of both tables).
    codes = classify_outcomes(torch.tensor([0.9995, 0.2]), torch.tensor([0.3, 0.2]), torch.tensor([0.99, 0.99]))
    assert codes.tolist() == [GROKKED_G1, FAILED]


Z95 = 1.959963984540054   # standard normal 97.5% quantile
Z90 = 1.6448536269514722  # 95% quantile


@pytest.mark.parametrize("k, n, confidence, z", [(3, 10, 0.95, Z95), (7, 40, 0.9, Z90), (1, 3, 0.9, Z90)])
def test_wilson_interval_equals_its_closed_form(k, n, confidence, z):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert wilson_interval(k, n, confidence) == pytest.approx((centre - half, centre + half), abs=1e-9)


@pytest.mark.parametrize("k, n, confidence", [(3, 10, 0.95), (7, 40, 0.9), (1, 3, 0.99)])
def test_clopper_pearson_ends_have_tail_probability_alpha_over_two(k, n, confidence):
    def tail(p, ks):
        return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in ks)

    low, high = clopper_pearson_interval(k, n, confidence)
    alpha = 1 - confidence
    assert tail(low, range(k, n + 1)) == pytest.approx(alpha / 2, abs=1e-9)    # P(X >= k | low)
    assert tail(high, range(0, k + 1)) == pytest.approx(alpha / 2, abs=1e-9)   # P(X <= k | high)


@pytest.mark.parametrize("k, n, low, high", [
    (0, 10, 0.0, 0.27753),          # Wilson 95%, textbook values
    (5, 10, 0.23659, 0.76341),
    (1, 100, 0.00177, 0.05449),
    (603, 10000, 0.05580, 0.06514),
])
def test_wilson_interval_known_values(k, n, low, high):
    got = wilson_interval(k, n)
    assert got == pytest.approx((low, high), abs=5e-5)


@pytest.mark.parametrize("k, n, low, high", [
    (0, 10, 0.0, 1 - 0.025 ** 0.1),  # closed form at the boundary
    (10, 10, 0.025 ** 0.1, 1.0),
    (5, 10, 0.187086, 0.812914),
    (1, 1000, 2.5317e-05, 0.0055589),
])
def test_clopper_pearson_interval_known_values(k, n, low, high):
    got = clopper_pearson_interval(k, n)
    assert got == pytest.approx((low, high), abs=2e-6)


def test_intervals_refuse_impossible_counts():
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        clopper_pearson_interval(0, 0)


def test_first_epoch_and_typical_instances():
    epochs = torch.tensor([0, 10, 20, 30])
    curves = torch.tensor([[0.1, 0.1, 0.1], [0.5, 1.0, 0.2], [1.0, 1.0, 0.3], [1.0, 1.0, 0.4]])
    assert first_epoch_at_or_above(curves, epochs, 0.999).tolist() == [20, 10, -1]
    codes = torch.tensor([MEMORIZED, MEMORIZED, MEMORIZED, GROKKED_G1])
    picked = typical_instances(codes, torch.tensor([30.0, 10.0, 20.0, 5.0]))
    assert picked == {"grokked_g1": 3, "memorized": 2}


def test_first_epoch_is_the_first_crossing_even_if_the_curve_drops_again():
    epochs = torch.tensor([0, 5, 10, 15])
    curves = torch.tensor([[0.2], [1.0], [0.4], [1.0]])
    assert first_epoch_at_or_above(curves, epochs, 0.999).tolist() == [5]
    assert first_epoch_at_or_above(curves, epochs, 0.3).tolist() == [5]
    assert first_epoch_at_or_above(curves, epochs, 0.1).tolist() == [0]


def test_typical_instance_of_an_even_group_is_the_lower_median():
    codes = torch.tensor([FAILED, GROKKED_G2, FAILED, FAILED, FAILED])
    score = torch.tensor([40.0, 7.0, 10.0, 30.0, 20.0])
    # FAILED scores sorted: 10 (index 2), 20 (4), 30 (3), 40 (0); the lower median is 20.
    assert typical_instances(codes, score) == {"grokked_g2": 1, "failed": 4}
