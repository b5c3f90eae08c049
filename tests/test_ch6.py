"""Chapter 6's perturbation study on a tiny sweep, and its decision epochs on a hand-made study."""

import pytest
import torch

from lib.chapters.ch6 import (
    PerturbationStudy, jacobian_spectra, perturbation_study, total_variation_study,
)
from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import run_pair_sweep, sweep_outcomes
from lib.grokking.training import SweepConfig

pytestmark = pytest.mark.usefixtures("one_thread")


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


def test_decision_epochs_take_the_worst_scale_up_to_the_chosen_one():
    # One seed, three snapshots, scales 2^-10 and 2^0: the small scale stops changing the
    # outcome from epoch 500, the large one only from epoch 1000.
    probability = torch.tensor([[[0.5, 1.0]], [[0.0, 0.5]], [[0.0, 0.0]]], dtype=torch.float64)
    study = PerturbationStudy(
        index=torch.tensor([7]), sweep_outcome=torch.tensor([0]), checkpoints=torch.tensor([0, 500, 1000]),
        log2_scales=torch.tensor([-10, 0]), copies=2, outcomes=torch.zeros(3, 1, 2, 2, dtype=torch.long),
        reference=torch.zeros(3, 1, dtype=torch.long), probability=probability, choice_epoch=torch.tensor([1400]))
    assert study.decision_epochs(up_to_scale=-10).tolist() == [500]
    assert study.decision_epochs(up_to_scale=0).tolist() == [1000]
    assert study.decision_epochs(up_to_scale=0, tolerance=0.5).tolist() == [500]
    with pytest.raises(ValueError, match="at most 2\\*\\*-20"):
        study.decision_epochs(up_to_scale=-20)


def test_total_variation_study_retraces_the_seeds_and_measures_the_window():
    schedule = SweepConfig(epochs=20, log_every=5, checkpoint_epochs=(0, 20))
    result = run_pair_sweep(make_pair("S4_vs_A4xZ2"), [0, 1, 2], MLPConfig(24, 8, 8), schedule, progress=False)
    index = torch.tensor([1, 2])
    study = total_variation_study(result, index, window=10, every=5, grok_threshold=0.999)
    assert study.epochs.tolist() == [10, 15, 20] and study.same_outcome
    for values in (study.test_tv, study.test_flips, study.train_tv, study.train_flips, study.train_accuracy):
        assert values.shape == (2,) and torch.all(values >= 0)
    assert torch.all(study.test_tv > 0)                      # 10 epochs of training move the logits
    torch.testing.assert_close(study.train_accuracy, result.metrics["train_acc"][2, index])   # epoch 10
    # One step over the whole window: at most the sum of the two steps (triangle inequality).
    coarse = total_variation_study(result, index, window=10, every=10, grok_threshold=0.999)
    assert coarse.epochs.tolist() == [10, 20] and torch.all(coarse.test_tv <= study.test_tv + 1e-9)
    with pytest.raises(ValueError, match="every <= window"):
        total_variation_study(result, index, window=30, every=5, grok_threshold=0.999)


def test_jacobian_spectra_start_at_the_identity_and_pass_the_finite_difference_check():
    spectra = jacobian_spectra("S4_vs_A4xZ2", MLPConfig(24, 2, 2), seed=0, schedule=SweepConfig(),
                               lengths=[0, 3, 6], weight_decays=[0.0, 0.01],
                               dtypes=[torch.float64, torch.float32], generator=torch.Generator().manual_seed(0))
    assert spectra.n_parameters == 24 * 2 * 2 + 2 * 2 * 2 + 2 * 24
    assert set(spectra.singular_values) == {(0.0, "float64"), (0.0, "float32"), (0.01, "float64"), (0.01, "float32")}
    for key, values in spectra.singular_values.items():
        assert values.shape == (3, spectra.n_parameters)
        # No training: the Jacobian is the identity, every singular value 1.
        torch.testing.assert_close(values[0], torch.ones(spectra.n_parameters, dtype=torch.float64))
        assert spectra.near_one(key)[0] == 1.0
        assert torch.all(values[:, :-1] >= values[:, 1:])                    # descending
    torch.testing.assert_close(spectra.singular_values[0.0, "float32"], spectra.singular_values[0.0, "float64"],
                               rtol=1e-3, atol=1e-4)
    assert spectra.finite_difference_error < 1e-5
