"""The two noise shapes of chapter 6's perturbations on large draws whose spread is known; the perturbation
study, its decision epochs and the retraining with snapshots, on tiny sweeps."""

import math

import pytest
import torch

from lib.book.params import ParameterError
from lib.grokking.mlp import MLPConfig, init_instances
from lib.grokking.pairs import make_pair
from lib.grokking.perturbation import (
    PerturbationStudy, noise_sizes, perturbation_study, perturbed_copies, retrain_with_snapshots,
)
from lib.grokking.sweeps import run_pair_sweep, sweep_outcomes
from lib.grokking.training import SweepConfig


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


@pytest.mark.usefixtures("one_thread")
def test_perturbation_study_on_a_tiny_sweep():
    schedule = SweepConfig(epochs=20, log_every=5, checkpoint_epochs=(0, 10, 20))
    result = run_pair_sweep(make_pair("S4_vs_A4xZ2"), [0, 1, 2], MLPConfig(24, 8, 8), schedule, progress=False)
    index = torch.tensor([0, 2])
    study = perturbation_study(result, index, log2_scales=[-20, 3], copies=2,
                               generator=torch.Generator().manual_seed(0), grok_threshold=0.999)
    assert study.checkpoints.tolist() == [0, 10]                      # the last epoch is not perturbed
    assert study.outcomes.shape == (2, 2, 2, 2) and study.probability.shape == (2, 2, 2)
    # Continued from epoch 0 with a fresh optimizer, the unperturbed copy retraces the sweep.
    assert torch.equal(study.reference[0], sweep_outcomes(result)[index])
    assert torch.equal(study.sweep_outcome, sweep_outcomes(result)[index])
    # Noise of 2^-20 changes no outcome in 20 epochs.
    assert torch.equal(study.probability[:, :, 0], torch.zeros(2, 2, dtype=torch.float64))
    assert study.decision_epochs(up_to_scale=-20).tolist() == [0, 0]
    again = perturbation_study(result, index, log2_scales=[-20, 3], copies=2,
                               generator=torch.Generator().manual_seed(0), grok_threshold=0.999)
    assert torch.equal(again.outcomes, study.outcomes)


@pytest.mark.usefixtures("one_thread")
def test_decision_epochs_take_the_worst_scale_up_to_the_chosen_one():
    # One seed, three snapshots, scales 2^-10 and 2^0: the small scale stops changing the
    # outcome from epoch 500, the large one only from epoch 1000.
    probability = torch.tensor([[[0.5, 1.0]], [[0.0, 0.5]], [[0.0, 0.0]]], dtype=torch.float64)
    study = PerturbationStudy(
        index=torch.tensor([7]), sweep_outcome=torch.tensor([0]), checkpoints=torch.tensor([0, 500, 1000]),
        log2_scales=torch.tensor([-10, 0]), copies=2, noise_shape="init", outcomes=torch.zeros(3, 1, 2, 2, dtype=torch.long),
        reference=torch.zeros(3, 1, dtype=torch.long), probability=probability,
        accuracy_shift=torch.zeros(3, 1, 2, dtype=torch.float64), choice_epoch=torch.tensor([1400]))
    assert study.decision_epochs(up_to_scale=-10).tolist() == [500]
    assert study.decision_epochs(up_to_scale=0).tolist() == [1000]
    assert study.decision_epochs(up_to_scale=0, tolerance=0.5).tolist() == [500]
    with pytest.raises(ValueError, match="at most 2\\*\\*-20"):
        study.decision_epochs(up_to_scale=-20)


@pytest.mark.usefixtures("one_thread")
def test_perturbation_study_measures_how_far_the_copies_end_from_the_reference():
    schedule = SweepConfig(epochs=30, log_every=10, checkpoint_epochs=(0, 15, 30))
    result = run_pair_sweep(make_pair("S4_vs_A4xZ2"), [0, 1], MLPConfig(24, 8, 8), schedule, progress=False)
    study = perturbation_study(result, torch.tensor([0, 1]), log2_scales=[-25, 5], copies=2,
                               generator=torch.Generator().manual_seed(0), grok_threshold=0.999)
    assert study.accuracy_shift.shape == (2, 2, 2)
    assert torch.all(study.accuracy_shift[:, :, 0] < 1e-3)        # 2^-25: the copies end where the seed does
    assert torch.all(study.accuracy_shift[:, :, 1] > 1e-3)        # 2^5: somewhere else


@pytest.mark.usefixtures("one_thread")
def test_retraining_retraces_the_sweep_with_the_snapshots_asked_for():
    schedule = SweepConfig(epochs=20, log_every=5, checkpoint_epochs=(0, 20))
    result = run_pair_sweep(make_pair("S4_vs_A4xZ2"), [3, 4, 5], MLPConfig(24, 8, 8), schedule, progress=False)
    index = torch.tensor([2, 0])
    again = retrain_with_snapshots(result, index, (0, 5, 10, 20))
    assert sorted(again.checkpoints) == [0, 5, 10, 20] and again.seeds.tolist() == [5, 3]
    for name, value in result.final_params.items():
        torch.testing.assert_close(again.checkpoints[20][name], value[index], rtol=0, atol=1e-6)
    torch.testing.assert_close(again.metrics["train_loss"], result.metrics["train_loss"][:, index])
