"""Perturb-and-recover study of chapter 1."""

import torch

from lib.bfs.transformer import bfs_transformer
from lib.bfs.perturbation import GraphSet, RecoverySettings, perturb_and_recover, perturb_weights

SETTINGS = RecoverySettings(steps=6, batch_size=16, learning_rate=1e-4, n_eval_graphs=64,
                            n_train_graphs=64, n_curve_points=3)


def changed_slices(before, after):
    return [(name, index) for name in ("query", "key", "value", "output")
            for index in torch.nonzero((getattr(before, name) != getattr(after, name)).flatten(2).any(-1)).tolist()]


def test_replace_hits_exactly_one_head_matrix():
    intact, model = bfs_transformer(5), bfs_transformer(5)
    what = perturb_weights(model, "replace", 1.0, torch.Generator().manual_seed(0))
    changed = changed_slices(intact, model)
    assert len(changed) == 1 and changed[0][0] in ("query", "key", "value")
    assert changed[0][0] in what


def test_gaussian_noise_has_the_requested_relative_norm():
    intact, model = bfs_transformer(5), bfs_transformer(5)
    perturb_weights(model, "gaussian", 0.1, torch.Generator().manual_seed(1))
    for before, after in zip(intact.parameters(), model.parameters()):
        assert torch.isclose((after - before).norm(), 0.1 * before.norm(), rtol=1e-4)


def test_damage_raises_the_loss_and_the_run_is_deterministic():
    generator = torch.Generator().manual_seed(2)
    train, held_out = GraphSet.sample(64, 6, generator), GraphSet.sample(64, 6, generator)
    model = bfs_transformer(6)
    first = perturb_and_recover(model, "gaussian", 0.3, train, held_out, SETTINGS, seed=7)
    second = perturb_and_recover(model, "gaussian", 0.3, train, held_out, SETTINGS, seed=7)
    assert first == second
    assert first["loss_intact"] < 1e-6 < first["loss_before"]
    assert len(first["curve"]) >= 3 and first["curve"][-1][0] == SETTINGS.steps
    # The intact model is not touched by the study.
    assert perturb_and_recover(model, "replace", 1.0, train, held_out, SETTINGS, seed=8)["loss_intact"] < 1e-6
