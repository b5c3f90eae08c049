"""The two noise shapes of chapter 6's perturbations on large draws whose spread is known."""

import math

import pytest
import torch

from lib.book.params import ParameterError
from lib.grokking.mlp import MLPConfig, init_instances
from lib.grokking.perturbation import noise_sizes, perturbed_copies


def test_init_shaped_noise_has_each_tensors_standard_deviation_from_the_formula():
    # d = 16, h = 8: embeddings N(0, s^2); linear maps uniform with bound s / sqrt(d); the
    # unembedding with bound s / sqrt(h); the bias with bound s / sqrt(h). A uniform on [-b, b]
    # has standard deviation b / sqrt(3).
    d, h, s = 16, 8, 0.25
    params = init_instances([0], MLPConfig(24, d, h, unembed_bias=True))
    noisy = perturbed_copies(params, [s], 400, torch.Generator().manual_seed(0), shape="init")
    expected = {"embed_left": s, "embed_right": s, "linear_left": s / math.sqrt(3 * d),
                "linear_right": s / math.sqrt(3 * d), "unembed": s / math.sqrt(3 * h),
                "unembed_bias": s / math.sqrt(3 * h)}
    for name, std in expected.items():
        noise = noisy[name] - params[name]
        assert abs(float(noise.std()) / std - 1) < 0.02, name
        if name != "embed_left" and name != "embed_right":           # uniform: bounded by sqrt(3) std
            assert float(noise.abs().max()) <= math.sqrt(3) * std * (1 + 1e-5)


def test_gaussian_noise_is_the_same_on_every_entry_and_about_ten_times_larger_on_the_linear_maps():
    params = init_instances([0], MLPConfig(24, 32, 32, unembed_bias=True))
    noisy = perturbed_copies(params, [0.5], 200, torch.Generator().manual_seed(1), shape="gaussian")
    for name in params:
        assert abs(float((noisy[name] - params[name]).std()) / 0.5 - 1) < 0.03, name
    bound = noise_sizes({k: v[0] for k, v in params.items()}, "init")["linear_left"][1]
    ratio = 1.0 / (bound / math.sqrt(3))                           # Gaussian std over the uniform's
    assert 9 < ratio < 10                                          # sqrt(3 d) = 9.8 at d = 32


def test_scale_zero_gives_exact_copies_in_either_shape_and_unknown_shapes_are_refused():
    params = init_instances([0, 1], MLPConfig(24, 4, 4, unembed_bias=True))
    for shape in ("init", "gaussian"):
        copies = perturbed_copies(params, [0.0], 2, torch.Generator().manual_seed(0), shape=shape)
        for name, value in params.items():
            assert torch.equal(copies[name][:2], value[[0, 0]]) and torch.equal(copies[name][2:], value[[1, 1]])
    with pytest.raises(ParameterError, match="noise_shape"):
        perturbed_copies(params, [0.1], 1, torch.Generator(), shape="uniform")
