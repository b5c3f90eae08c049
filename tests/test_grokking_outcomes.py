"""Outcome classification on hand-made accuracies; confidence intervals against known values."""

import pytest
import torch

from lib.grokking.outcomes import (
    FAILED, GROKKED_G1, GROKKED_G2, MEMORIZED, OUTCOMES, classify_outcomes,
    clopper_pearson_interval, first_epoch_at_or_above, outcome_fractions, typical_instances,
    wilson_interval,
)


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
    assert [f.count for f in fractions.values()] == [6, 1, 93, 0]
    assert sum(f.fraction for f in fractions.values()) == pytest.approx(1.0)
    assert list(fractions) == list(OUTCOMES)
    for f in fractions.values():
        assert f.low <= f.fraction <= f.high
    assert fractions["failed"].low == 0.0


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
