"""The LLC estimator's regression check finds half the dimension (lib.grokking.llc_regression_check)."""

import torch

from lib.grokking.llc_regression_check import regression_check


def test_the_regression_check_finds_half_the_dimension():
    check = regression_check(torch.Generator().manual_seed(0))
    assert check.learning_coefficient == 2.0 and check.passes
    assert abs(check.expected - 2.0) < 0.05
