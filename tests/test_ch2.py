"""Chapter 2's parameters and summaries (lib.chapters.ch2)."""

from pathlib import Path

import pytest

from lib.book.params import ParameterError, read_parameters_cell, validate_parameters
from lib.chapters.ch2 import Chapter2Parameters, learning_order

DEFAULTS = {**read_parameters_cell(Path(__file__).parents[1] / "notebooks" / "02_training.py"), "device": "cpu"}


def test_parameters_build_the_training_run_and_smoke_shrinks_it():
    training = validate_parameters(Chapter2Parameters, DEFAULTS).training
    assert training.lr_schedule == ((2000, 1e-3), (500, 2e-4)) and training.n_layers == 4
    smoke = validate_parameters(Chapter2Parameters, {**DEFAULTS, "smoke": True}).training
    assert smoke.lr_schedule == ((40, 1e-3), (40, 2e-4)) and smoke.batch_size == 64 and smoke.n_layers == 2


def test_n_min_above_n_max_names_n_min():
    with pytest.raises(ParameterError, match=r"`n_min` must be an integer between 2 and 5; got 6\."):
        validate_parameters(Chapter2Parameters, {**DEFAULTS, "n_min": 6, "n_max": 5})


def test_learning_order_finds_common_lengths_order_and_the_hardest_label():
    summary = {"transition_step_by_length": {1: 40, 2: 180, 3: 150, 8: None},
               "count_by_length": {1: 500, 2: 400, 3: 90, 8: 10},
               "loss_by_length": {1: 0.01, 2: 0.02, 3: 0.3, 8: 0.2}}
    order = learning_order(summary, unreachable_label=8)
    assert order.common_lengths == (1, 2, 3)            # 10 of 1,000 examples is under 2%
    assert order.in_length_order is False               # 3 was learned before 2
    assert (order.hardest_length, order.hardest_name, order.hardest_loss, order.hardest_count) == \
        (3, "paths of length 3", 0.3, 90)
