"""Measures along one run's checkpoints and their rank correlations with the generalization gap."""

import math

import pytest
import torch

from lib.grokking.generalization_measures import CHEAP_MEASURES, PacBayesSearch
from lib.grokking.groups import cyclic
from lib.grokking.llc import SGLDConfig
from lib.grokking.measures_over_time import (
    common_checkpoints, measures_over_time, rank_correlation, spearman_over_common,
)
from lib.grokking.mlp import MLPConfig
from lib.grokking.sweeps import run_group_sweep
from lib.grokking.training import SweepConfig, snapshot_epochs


def test_infinite_values_are_tied_top_ranks():
    # Ranks (1, 2, 3.5, 3.5) against (1, 2, 3, 4): deviations (-1.5, -0.5, 1, 1) and
    # (-1.5, -0.5, 0.5, 1.5): 4.5 / sqrt(4.5 * 5) = 0.9487 (scipy.stats.spearmanr gives the same).
    x = torch.tensor([1.0, 2.0, math.inf, math.inf])
    y = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert rank_correlation(x, y) == pytest.approx(4.5 / math.sqrt(22.5))
    # -inf ranks below every finite value.
    assert rank_correlation(torch.tensor([-math.inf, 2.0, 3.0]), torch.tensor([0.0, 1.0, 2.0])) == pytest.approx(1.0)
    assert rank_correlation(torch.tensor([math.inf, 2.0, 3.0]), torch.tensor([0.0, 1.0, 2.0])) == pytest.approx(-0.5)
    assert math.isnan(rank_correlation(torch.full((3,), math.inf), y[:3]))     # all tied: constant ranks


def test_rank_correlation_refuses_nan_and_unequal_lengths():
    with pytest.raises(ValueError, match="NaN"):
        rank_correlation(torch.tensor([1.0, math.nan]), torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="length"):
        rank_correlation(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0, 3.0]))


def test_every_measure_is_compared_over_the_same_checkpoints():
    gap = torch.tensor([0.0, 0.5, 0.9, 0.2, 0.1])
    measures = {"a": torch.tensor([0.0, 1.0, 2.0, 0.5, math.nan]),       # NaN at the last checkpoint
                "b": torch.tensor([math.inf, 1.0, 3.0, 0.2, 0.0])}
    keep = common_checkpoints(measures, gap)
    assert keep.tolist() == [True, True, True, True, False]
    rho, mask = spearman_over_common(measures, gap)
    assert torch.equal(mask, keep)
    assert rho["a"] == pytest.approx(1.0)                                   # same order as the gap
    # b over the first four: ranks (4, 2, 3, 1) against the gap's (1, 3, 4, 2): differences
    # (3, -1, -1, -1), 1 - 6 * 12 / (4 * 15) = -0.2.
    assert rho["b"] == pytest.approx(rank_correlation(measures["b"][:4], gap[:4]))
    assert rho["b"] == pytest.approx(-0.2)


def test_measures_along_a_small_run():
    every, epochs = 2, 12
    schedule = SweepConfig(epochs=epochs, log_every=every, weight_decay=2e-5,
                           checkpoint_epochs=snapshot_epochs(epochs, every), workers=1)
    result = run_group_sweep(cyclic(7), [3], MLPConfig(7, 8, 8, unembed_bias=False), schedule,
                             train_fraction=0.5, generator=torch.Generator().manual_seed(0), progress=False)
    sgld = SGLDConfig(step_size=1e-4, n_beta=10.0, localization=1.0, steps=6, chains=2, burn_in=0.5)
    run = measures_over_time(result, [0, 6, 12], sgld, PacBayesSearch(doubling_draws=2, bisection_draws=3),
                             torch.Generator().manual_seed(1))
    assert run.epochs.tolist() == list(range(0, 13, 2))
    assert run.sparse_epochs.tolist() == [0, 6, 12]
    assert set(run.measures) == set(CHEAP_MEASURES)
    assert set(run.sparse_measures) == set(CHEAP_MEASURES) | {"pac_bayes_sharpness", "llc"}
    for name in CHEAP_MEASURES:
        torch.testing.assert_close(run.sparse_measures[name], run.measures[name][run.sparse])
    logged = result.metrics["train_acc"][:, 0] - result.metrics["acc_test"][:, 0]
    torch.testing.assert_close(run.gap, logged.double())
    assert run.measures["distance_from_init"][0] == 0.0
    costs = run.seconds_per_checkpoint()
    assert set(costs) == {"cheap_measures", "pac_bayes", "llc"} and all(v >= 0 for v in costs.values())
    with pytest.raises(ValueError, match="not checkpoints"):
        measures_over_time(result, [5], sgld, PacBayesSearch(), torch.Generator())
