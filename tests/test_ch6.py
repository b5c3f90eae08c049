"""Chapter 6's studies on tiny sweeps, its parameters, and its decision epochs on a hand-made study."""

from pathlib import Path

import pytest
import torch

from lib.book.params import ParameterError, read_parameters_cell, validate_parameters
from lib.book.seed_streams import stream_seeds
from lib.chapters.ch6 import (
    JACOBIAN_STREAM, Chapter6Parameters, choose_per_outcome, jacobian_run, sketched_jacobian_run,
    transplant_both_ways)
from lib.grokking.authors_scale_jacobian import AMPLIFICATION_SIZES
from lib.grokking.early_prediction import EarlyPrediction, early_prediction
from lib.grokking.mlp import MLPConfig
from lib.grokking.perturbation import PerturbationStudy, perturbation_study, retrain_with_snapshots
from lib.grokking.total_variation import total_variation_study
from lib.grokking.transplant import CRITERIA
from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import run_pair_sweep, sweep_outcomes
from lib.grokking.training import SweepConfig

pytestmark = pytest.mark.usefixtures("one_thread")

DEFAULTS = {**read_parameters_cell(Path(__file__).parents[1] / "notebooks" / "06_determination.py"),
            "device": "cpu", "results_dir": "/tmp/results"}


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
        log2_scales=torch.tensor([-10, 0]), copies=2, noise_shape="init", outcomes=torch.zeros(3, 1, 2, 2, dtype=torch.long),
        reference=torch.zeros(3, 1, dtype=torch.long), probability=probability,
        accuracy_shift=torch.zeros(3, 1, 2, dtype=torch.float64), choice_epoch=torch.tensor([1400]))
    assert study.decision_epochs(up_to_scale=-10).tolist() == [500]
    assert study.decision_epochs(up_to_scale=0).tolist() == [1000]
    assert study.decision_epochs(up_to_scale=0, tolerance=0.5).tolist() == [500]
    with pytest.raises(ValueError, match="at most 2\\*\\*-20"):
        study.decision_epochs(up_to_scale=-20)


def test_total_variation_study_retraces_the_seeds_and_measures_the_window():
    schedule = SweepConfig(epochs=20, log_every=5, checkpoint_epochs=(0, 20))
    result = run_pair_sweep(make_pair("S4_vs_A4xZ2"), [0, 1, 2], MLPConfig(24, 8, 8), schedule, progress=False)
    index = torch.tensor([1, 2])
    study = total_variation_study(result, index, epochs=20, window=10, every=5, grok_threshold=0.999,
                                  authors_every=2, authors_intervals=4)
    assert study.epochs.tolist() == [10, 15, 20] and study.same_outcome
    # The authors' definition: snapshots every 2 epochs, the last 4 intervals, all 576 pairs.
    assert study.authors_epochs.tolist() == [12, 14, 16, 18, 20]
    assert study.authors_flips.shape == (2,) and torch.all((study.authors_flips >= 0) & (study.authors_flips <= 1))
    for values in (study.test_tv, study.test_flips, study.train_tv, study.train_flips, study.train_accuracy):
        assert values.shape == (2,) and torch.all(values >= 0)
    assert torch.all(study.test_tv > 0)                      # 10 epochs of training move the logits
    torch.testing.assert_close(study.train_accuracy, result.metrics["train_acc"][2, index])   # epoch 10
    # One step over the whole window: at most the sum of the two steps (triangle inequality).
    coarse = total_variation_study(result, index, epochs=20, window=10, every=10, grok_threshold=0.999,
                                   authors_every=2, authors_intervals=4)
    assert coarse.epochs.tolist() == [10, 20] and torch.all(coarse.test_tv <= study.test_tv + 1e-9)
    # Trained on past the sweep's end, the same trajectories go on: the window moves to the end.
    longer = total_variation_study(result, index, epochs=30, window=10, every=5, grok_threshold=0.999,
                                   authors_every=2, authors_intervals=4)
    assert longer.epochs.tolist() == [20, 25, 30] and longer.same_outcome
    with pytest.raises(ValueError, match="every <= window"):
        total_variation_study(result, index, epochs=20, window=30, every=5, grok_threshold=0.999)
    with pytest.raises(ValueError, match="at least the sweep's 20"):
        total_variation_study(result, index, epochs=10, window=5, every=5, grok_threshold=0.999)
    with pytest.raises(ValueError, match="do not fit"):                  # the authors' 100 x 5 epochs
        total_variation_study(result, index, epochs=20, window=10, every=5, grok_threshold=0.999)


def test_jacobian_run_starts_at_the_identity_and_passes_the_finite_difference_check():
    config = validate_parameters(Chapter6Parameters, {**DEFAULTS, "smoke": True})
    study = jacobian_run(config, SweepConfig())
    assert study.n_parameters == MLPConfig(24, 2, 2, unembed_bias=True).n_parameters()
    assert study.boundaries.tolist() == [0, 3, 6] and set(study.singular_values) == {"float64", "float32"}
    for dtype, values in study.singular_values.items():
        assert values.shape == (3, study.n_parameters)
        # No training: the Jacobian is the identity, every singular value 1.
        torch.testing.assert_close(values[0], torch.ones(study.n_parameters, dtype=torch.float64))
        assert study.near_one(dtype)[0] == 1.0
        assert torch.all(values[:, :-1] >= values[:, 1:])                    # descending
    torch.testing.assert_close(study.singular_values["float32"], study.singular_values["float64"],
                               rtol=1e-3, atol=1e-4)
    assert study.dtype_difference[0] == 0 and torch.all(study.dtype_difference[1:] < 1e-3)
    assert study.finite_difference_error < 1e-5
    assert study.grok_step() == -1                                       # 6 steps of a d = 2 model


def test_perturbation_study_measures_how_far_the_copies_end_from_the_reference():
    schedule = SweepConfig(epochs=30, log_every=10, checkpoint_epochs=(0, 15, 30))
    result = run_pair_sweep(make_pair("S4_vs_A4xZ2"), [0, 1], MLPConfig(24, 8, 8), schedule, progress=False)
    study = perturbation_study(result, torch.tensor([0, 1]), log2_scales=[-25, 5], copies=2,
                               generator=torch.Generator().manual_seed(0), grok_threshold=0.999)
    assert study.accuracy_shift.shape == (2, 2, 2)
    assert torch.all(study.accuracy_shift[:, :, 0] < 1e-3)        # 2^-25: the copies end where the seed does
    assert torch.all(study.accuracy_shift[:, :, 1] > 1e-3)        # 2^5: somewhere else


def test_choose_per_outcome_takes_up_to_k_seeds_of_each_group_in_group_order():
    groups = torch.tensor([2, 0, 2, 1, 2, 0, 2])
    chosen = choose_per_outcome(groups, 2, torch.Generator().manual_seed(0))
    assert groups[chosen].tolist() == [0, 0, 1, 2, 2]
    assert set(chosen[:2].tolist()) == {1, 5} and chosen[2] == 3
    assert set(chosen[3:].tolist()) <= {0, 2, 4, 6} and chosen[3] < chosen[4]
    assert torch.equal(chosen, choose_per_outcome(groups, 2, torch.Generator().manual_seed(0)))


def test_retraining_retraces_the_sweep_with_the_snapshots_asked_for():
    schedule = SweepConfig(epochs=20, log_every=5, checkpoint_epochs=(0, 20))
    result = run_pair_sweep(make_pair("S4_vs_A4xZ2"), [3, 4, 5], MLPConfig(24, 8, 8), schedule, progress=False)
    index = torch.tensor([2, 0])
    again = retrain_with_snapshots(result, index, (0, 5, 10, 20))
    assert sorted(again.checkpoints) == [0, 5, 10, 20] and again.seeds.tolist() == [5, 3]
    for name, value in result.final_params.items():
        torch.testing.assert_close(again.checkpoints[20][name], value[index], rtol=0, atol=1e-6)
    torch.testing.assert_close(again.metrics["train_loss"], result.metrics["train_loss"][:, index])


def test_chapter_6_parameters_refuse_unordered_lists_and_a_decision_scale_off_the_grid():
    smoke = dict(DEFAULTS)
    with pytest.raises(ParameterError, match="`noise_shapes` must not repeat"):
        validate_parameters(Chapter6Parameters, {**smoke, "noise_shapes": ["init", "init"]})
    with pytest.raises(ParameterError, match="`noise_shapes`"):
        validate_parameters(Chapter6Parameters, {**smoke, "noise_shapes": ["uniform"]})
    with pytest.raises(ParameterError, match="`log2_scales` must be increasing"):
        validate_parameters(Chapter6Parameters, {**smoke, "log2_scales": [0, -10, -10]})
    with pytest.raises(ParameterError, match="`decision_log2_scale` must be at least"):
        validate_parameters(Chapter6Parameters, {**smoke, "log2_scales": [-10, 0], "decision_log2_scale": -12})


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


def test_transplant_both_ways_at_smoke_scale():
    config = validate_parameters(Chapter6Parameters, {**DEFAULTS, "smoke": True, "workers": 1})
    study = transplant_both_ways(config, torch.Generator().manual_seed(0), progress=False)
    assert list(study.runs) == ["g1", "g2"]
    for group, run in study.runs.items():
        assert run.first.n_instances == config.transplant_seeds
        assert run.first.train_left.numel() == round(config.transplant_train_fraction * 24 * 24)
        assert run.second.train_left.numel() == 336 and run.second.training_config.epochs == config.transplant_second_epochs
        assert "unembed_bias" in run.first.final_params                  # the authors' model has the bias
        assert set(study.criteria[group]) == set(CRITERIA)
        for fates in study.criteria[group].values():
            assert torch.all(fates.ungrokked <= fates.grokked) and torch.all(fates.regrokked <= fates.ungrokked)


def test_sketched_jacobian_run_in_smoke_mode_reads_the_first_seed_when_none_groks():
    config = validate_parameters(Chapter6Parameters, {**DEFAULTS, "smoke": True})
    run = sketched_jacobian_run(config, SweepConfig())
    assert run.seeds == stream_seeds(JACOBIAN_STREAM, config.seed, config.sketch_candidates)
    assert run.grok_steps == [-1] * len(run.seeds) and run.chosen == run.seeds[0]
    assert run.small_width == config.jacobian_dim and len(run.small_grok_steps) == len(run.seeds)
    assert run.study.n_parameters == MLPConfig(24, 2, 2, unembed_bias=True).n_parameters()
    assert run.study.boundaries.tolist() == [0, 3, 6] and [s.step for s in run.study.spectra] == [3, 6]
    (check,) = run.amplification                       # no grokking: the early check only
    assert check["step"] == 3 and len(check["ratios"]) == len(AMPLIFICATION_SIZES) and check["derivative"] > 0


def test_a_segment_longer_than_the_sketched_run_is_refused():
    with pytest.raises(ParameterError, match="sketch_segment"):
        validate_parameters(Chapter6Parameters, {**DEFAULTS, "sketch_steps": 50, "sketch_segment": 100})
