"""The irrep profile along training: settle epochs and held-out AUCs on constructed data with
known answers (chapter 8)."""

import torch

from lib.grokking.characters import character_table, isotypic_projectors
from lib.grokking.irrep_trajectory import auc_over_epochs, profiles_over_training, settle_epochs
from lib.grokking.mlp import init_instances
from lib.grokking.pairs import make_pair
from lib.grokking.study import S4_MODEL_NO_BIAS


def test_profiles_over_training_are_read_at_every_snapshot_in_order():
    projectors = isotypic_projectors(character_table(make_pair("S4_vs_A4xZ2").g1))
    checkpoints = {50: init_instances([3, 4], S4_MODEL_NO_BIAS), 0: init_instances([1, 2], S4_MODEL_NO_BIAS)}
    epochs, shares = profiles_over_training(checkpoints, projectors)
    assert epochs.tolist() == [0, 50]
    assert shares.shape == (2, 2, 5)
    assert torch.allclose(shares.sum(dim=2), torch.ones(2, 2, dtype=torch.float64))


def test_settle_epochs_are_the_first_snapshot_from_which_the_profile_stays_near_its_end():
    epochs = torch.tensor([0, 10, 20, 30])
    start, end = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    # seed 0 arrives at 10 and stays; seed 1 arrives at 10, leaves at 20, returns at 30
    profiles = torch.stack([torch.stack([start, start]), torch.stack([end, end]),
                            torch.stack([end, start]), torch.stack([end, end])]).double()
    assert settle_epochs(profiles, epochs, 0.1).tolist() == [10, 30]


def test_auc_over_epochs_is_chance_early_and_perfect_once_the_features_separate():
    generator = torch.Generator().manual_seed(0)
    groups = torch.tensor([0] * 10 + [1] * 6 + [2] * 40)
    noise = torch.randn(3, 56, 2, generator=generator, dtype=torch.float64)
    separated = torch.stack([(groups == 0).double(), (groups == 1).double()], dim=1) * 10
    features = torch.stack([noise[0], noise[1], separated + noise[2] * 0.01])
    prediction = auc_over_epochs(features, torch.tensor([0, 100, 200]), groups, 5, generator)
    assert prediction.folds == (5, 5)
    assert abs(float(prediction.auc_either[0]) - 0.5) < 0.25
    assert float(prediction.auc_either[2]) == 1.0 and float(prediction.auc_group[2]) == 1.0
    assert prediction.first_epoch_at_or_above(0.99) == 200
    few = auc_over_epochs(features, torch.tensor([0, 100, 200]), torch.tensor([0] * 15 + [1] + [2] * 40), 5, generator)
    assert few.folds[1] == 1 and bool(few.auc_group.isnan().all())
