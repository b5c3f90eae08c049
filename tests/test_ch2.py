"""Chapter 2's parameters and summaries (lib.chapters.ch2)."""

import dataclasses
from pathlib import Path

import pytest

from lib.book.params import ParameterError, read_parameters_cell, validate_parameters
import torch

from lib.chapters.ch2 import Chapter2Parameters
from lib.chapters.ch2_results import drop_table
from lib.paths.phase_transitions import drop_order
from lib.paths.transition_drops import (
    drop_steps, mean_label_from, mean_label_loss, plotted_lengths, study_drops, study_results,
)
from lib.paths.phase_transitions import DropSettings
from lib.paths.training import PathTrainingConfig
from lib.paths.transition_study import TransitionCurves

DEFAULTS = {**read_parameters_cell(Path(__file__).parents[1] / "notebooks" / "02_training.py"), "device": "cpu"}


def test_parameters_build_the_training_run_and_smoke_shrinks_it():
    training = validate_parameters(Chapter2Parameters, DEFAULTS).training
    assert training.lr_schedule == ((2000, 1e-3), (500, 2e-4)) and training.n_layers == 4
    smoke = validate_parameters(Chapter2Parameters, {**DEFAULTS, "smoke": True}).training
    assert smoke.lr_schedule == ((40, 1e-3), (40, 2e-4)) and smoke.batch_size == 64 and smoke.n_layers == 2


def test_n_min_above_n_max_names_n_min():
    with pytest.raises(ParameterError, match=r"`n_min` must be an integer between 2 and 5; got 6\."):
        validate_parameters(Chapter2Parameters, {**DEFAULTS, "n_min": 6, "n_max": 5})


def test_the_study_parameters_build_its_recipe_and_bad_ones_are_named():
    config = validate_parameters(Chapter2Parameters, DEFAULTS)
    study = config.study
    assert study.n_max == config.study_n_max == 15 and study.n_layers == config.n_layers
    assert study.lr_schedule == ((config.study_steps, config.study_learning_rate),)
    assert config.study_seed_list == tuple(range(config.study_seeds)) and config.study_seeds >= 10
    assert config.drop_settings.max_width == config.drop_max_width
    # The study trains in width buckets on a CPU only; the main run, which chapters 3 and 7 build on, never.
    assert study.width_buckets == config.study_width_buckets > 0 and config.training.width_buckets == 0
    assert dataclasses.replace(config, device=torch.device("cuda")).study.width_buckets == 0
    smoke = validate_parameters(Chapter2Parameters, {**DEFAULTS, "smoke": True})
    assert smoke.study_steps <= 30 and smoke.study_seeds <= 2
    with pytest.raises(ParameterError, match=r"`study_eval_every` must be at most `study_steps`"):
        validate_parameters(Chapter2Parameters, {**DEFAULTS, "study_eval_every": 500})
    with pytest.raises(ParameterError, match=r"`study_n_max`"):
        validate_parameters(Chapter2Parameters, {**DEFAULTS, "study_n_max": 2})


def test_the_study_table_and_results_read_the_drops_of_every_seed():
    steps = tuple(range(0, 201, 5))
    lengths = (1, 2, 15)

    def step_curve(at):
        return [16.0 if s <= at else 0.01 for s in steps] if at else [5.0] * len(steps)

    loss = torch.tensor([[step_curve(a), step_curve(b), step_curve(None)] for a, b in ((40, 120), (60, 100))],
                        dtype=torch.float64).transpose(1, 2)
    curves = TransitionCurves((0, 1), steps, lengths, loss, (1.0, 1.0), PathTrainingConfig(n_max=15))
    drops = study_drops(curves, DropSettings())
    order = drop_order(drop_steps(drops, plotted_lengths(lengths, 15)))
    assert order.groups == ((1,), (2,)) and order.never == (15,)
    mean_loss = mean_label_loss(torch.tensor([1.0, 3.0]), lengths)
    assert mean_loss == {1: 1.0, 2: 0.0, 15: 169.0} and mean_label_from(mean_loss) == 2.0
    table = drop_table(curves, drops, 15, mean_loss)
    assert "| 1 | 40, 60 | 20 |" in table and "| unreachable | no drop, no drop | – |" in table
    results = study_results(curves, drops, order, DropSettings(), mean_loss, 8)
    assert results["drop_step"][1] == [40, 60] and results["order"]["groups"] == [[1], [2]]
