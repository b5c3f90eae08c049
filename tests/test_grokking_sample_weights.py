"""Weights that make a sample stand for its sweep, and weighted correlations (known answers)."""

import pytest
import torch

from lib.book.statistics import pearson, spearman
from lib.grokking.sample_weights import (
    representative_weights, weighted_pearson, weighted_ranks, weighted_spearman,
)


def test_each_group_weighs_its_size_in_the_sweep():
    groups = torch.tensor([0, 2, 2, 2, 2, 1, 2, 2])
    chosen = torch.tensor([0, 1, 5, 6])
    weights = representative_weights(groups, chosen)
    assert weights.tolist() == [1.0, 3.0, 1.0, 3.0]  # 6 "neither" seeds stand behind 2 chosen
    assert float(weights.sum()) == len(groups)


def test_integer_weights_equal_the_correlations_of_the_repeated_sample():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(12, generator=generator, dtype=torch.float64)
    y = x + torch.randn(12, generator=generator, dtype=torch.float64)
    counts = torch.randint(1, 5, (12,), generator=generator)
    repeated_x, repeated_y = x.repeat_interleave(counts), y.repeat_interleave(counts)
    assert weighted_pearson(x, y, counts) == pytest.approx(pearson(repeated_x, repeated_y), abs=1e-12)
    assert weighted_spearman(x, y, counts) == pytest.approx(spearman(repeated_x, repeated_y), abs=1e-12)


def test_unit_weights_give_the_plain_correlations_and_mid_ranks():
    x = torch.tensor([3.0, 1.0, 2.0, 2.0])
    y = torch.tensor([1.0, 0.0, 5.0, 4.0])
    ones = torch.ones(4)
    assert weighted_ranks(x, ones).tolist() == [3.5, 0.5, 2.0, 2.0]
    assert weighted_pearson(x, y, ones) == pytest.approx(pearson(x, y))
    assert weighted_spearman(x, y, ones) == pytest.approx(spearman(x, y))
    assert weighted_pearson(torch.ones(3), torch.arange(3.0), torch.ones(3)) != weighted_pearson(
        torch.ones(3), torch.arange(3.0), torch.ones(3))  # NaN: a constant sample
