"""The instance-batched MLP equals the single-model definition, instance by instance."""

import math

import pytest
import torch

from lib.grokking.mlp import (
    MLPConfig, all_pairs_logits, init_instances, init_single, instance_logits, instance_loss,
    n_instances, parameter_norm, select_instances, single_logits,
)

CONFIGS = [MLPConfig(6, 4, 5), MLPConfig(24, 8, 16, unembed_bias=True)]


@pytest.mark.parametrize("config", CONFIGS)
def test_instances_start_from_the_single_model_seeds(config):
    seeds = [3, 0, 17]
    stacked = init_instances(seeds, config)
    assert n_instances(stacked) == 3
    assert set(stacked) == set(config.parameter_shapes())
    for i, seed in enumerate(seeds):
        single = init_single(seed, config)
        for name, value in single.items():
            assert torch.equal(stacked[name][i], value)
    assert not torch.equal(stacked["embed_left"][0], stacked["embed_left"][1])
    assert sum(v[0].numel() for v in stacked.values()) == config.n_parameters()


def test_initial_scales_follow_the_authors():
    config = MLPConfig(120, 128, 128, unembed_bias=True)
    p = init_single(0, config)
    assert p["embed_left"].std().item() == pytest.approx(1.0, abs=0.02)
    assert p["linear_left"].abs().max().item() <= 1 / math.sqrt(2 * 128)
    assert p["linear_left"].abs().max().item() > 0.95 / math.sqrt(2 * 128)
    assert p["unembed"].abs().max().item() <= 1 / math.sqrt(128)
    assert p["unembed_bias"].abs().max().item() <= 1 / math.sqrt(128)


@pytest.mark.parametrize("config", CONFIGS)
def test_batched_forward_matches_single_forward(config):
    params = init_instances([1, 2, 3, 4], config)
    g = torch.Generator().manual_seed(0)
    left = torch.randint(config.n_elements, (50,), generator=g)
    right = torch.randint(config.n_elements, (50,), generator=g)
    batched = instance_logits(params, left, right)
    assert batched.shape == (4, 50, config.n_elements)
    for i in range(4):
        single = single_logits({k: v[i] for k, v in params.items()}, left, right)
        torch.testing.assert_close(batched[i], single, rtol=1e-5, atol=1e-5)
    grid = torch.arange(config.n_elements)
    all_left, all_right = grid.repeat_interleave(config.n_elements), grid.repeat(config.n_elements)
    torch.testing.assert_close(all_pairs_logits(params), instance_logits(params, all_left, all_right),
                               rtol=1e-5, atol=1e-5)


def test_loss_is_mean_cross_entropy_per_instance():
    config = CONFIGS[1]
    params = init_instances([5, 6], config)
    left, right = torch.arange(10), torch.arange(10, 20)
    labels = (left + right) % config.n_elements
    loss = instance_loss(params, left, right, labels)
    for i in range(2):
        logits = single_logits({k: v[i] for k, v in params.items()}, left, right)
        expected = torch.nn.functional.cross_entropy(logits, labels)
        assert loss[i].item() == pytest.approx(expected.item(), rel=1e-5)


def test_select_and_norm():
    params = init_instances([0, 1, 2], CONFIGS[0])
    for index, rows in ((1, [1]), ([2, 0], [2, 0]), (slice(1, 3), [1, 2])):
        selected = select_instances(params, index)
        assert set(selected) == set(params)
        for name, value in selected.items():
            assert torch.equal(value, params[name][rows]), (index, name)
    single = init_single(1, CONFIGS[0])
    expected = torch.sqrt(sum((v ** 2).sum() for v in single.values()))
    assert parameter_norm(params)[1].item() == pytest.approx(expected.item(), rel=1e-6)


def test_single_logits_follow_the_definition_on_one_pair():
    config = MLPConfig(5, 3, 4, unembed_bias=True)
    p = init_single(9, config)
    a, b = 3, 1
    hidden = torch.relu(p["embed_left"][a] @ p["linear_left"] + p["embed_right"][b] @ p["linear_right"])
    expected = hidden @ p["unembed"] + p["unembed_bias"]
    torch.testing.assert_close(single_logits(p, torch.tensor([a]), torch.tensor([b]))[0], expected)


def test_instances_are_independent_models():
    # The gradient of one instance's loss reaches only that instance's parameters.
    params = {k: v.requires_grad_() for k, v in init_instances([1, 2, 3], CONFIGS[1]).items()}
    left, right = torch.arange(8), torch.arange(8, 16)
    instance_loss(params, left, right, (left * right) % 24)[1].backward()
    for name, value in params.items():
        assert value.grad[1].abs().sum() > 0, name
        assert not value.grad[[0, 2]].any(), name
