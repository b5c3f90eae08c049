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
from lib.grokking.mlp import MLPConfig
from lib.grokking.transplant import CRITERIA
from lib.grokking.training import SweepConfig

pytestmark = pytest.mark.usefixtures("one_thread")

DEFAULTS = {**read_parameters_cell(Path(__file__).parents[1] / "notebooks" / "06_determination.py"),
            "device": "cpu", "results_dir": "/tmp/results"}


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


def test_choose_per_outcome_takes_up_to_k_seeds_of_each_group_in_group_order():
    groups = torch.tensor([2, 0, 2, 1, 2, 0, 2])
    chosen = choose_per_outcome(groups, 2, torch.Generator().manual_seed(0))
    assert groups[chosen].tolist() == [0, 0, 1, 2, 2]
    assert set(chosen[:2].tolist()) == {1, 5} and chosen[2] == 3
    assert set(chosen[3:].tolist()) <= {0, 2, 4, 6} and chosen[3] < chosen[4]
    assert torch.equal(chosen, choose_per_outcome(groups, 2, torch.Generator().manual_seed(0)))


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
