"""Early prediction reads a planted outcome and finds from which epoch on it stays readable (lib.grokking.early_prediction)."""

import pytest
import torch

from lib.grokking.early_prediction import EarlyPrediction, early_prediction
from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import run_pair_sweep
from lib.grokking.training import SweepConfig

pytestmark = pytest.mark.usefixtures("one_thread")


def test_early_prediction_reads_a_planted_outcome_and_finds_when_it_becomes_readable():
    schedule = SweepConfig(epochs=20, log_every=5)
    result = run_pair_sweep(make_pair("S4_vs_A4xZ2"), list(range(12)), MLPConfig(24, 8, 8), schedule, progress=False)
    # Plant the outcome in the final training loss: the six seeds with the lowest loss "grokked".
    groups = torch.full((12,), 2)
    groups[result.final("train_loss").argsort()[:6]] = 0
    prediction = early_prediction(result, groups, every=10, folds=3, generator=torch.Generator().manual_seed(0))
    assert prediction.epochs.tolist() == [0, 10, 20] and prediction.folds == (3, 0)
    assert prediction.auc_either[-1] >= 0.9                       # the loss itself is a feature
    assert torch.isnan(prediction.auc_group).all()                # no A4xZ2 grokker to tell apart
    made_up = EarlyPrediction(torch.tensor([0, 10, 20, 30]), torch.tensor([0.95, 0.5, 0.92, 0.97]),
                              torch.tensor([0.5] * 4), (3, 3))
    assert made_up.first_epoch_at_or_above(0.9) == 20            # stays above only from epoch 20
    assert made_up.first_epoch_at_or_above(0.99) == -1
