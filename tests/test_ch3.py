"""Chapter 3's parameters, tables and figures (lib.chapters.ch3, lib.chapters.ch3_figures).

Its results objects are tested in tests/test_ch3_results.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from lib.book.params import read_parameters_cell, validate_parameters
from lib.chapters.ch3 import Chapter3Parameters, generalization_table, target_kind_table
from lib.paths.generalization_summary import summarize_generalization
from lib.paths.target_kind_scores import KindScore
from lib.chapters.ch3_figures import (
    confusion_by_test_figure, error_by_target_kind_figure, finetune_loss_figure,
    generalization_bars_figure, length_heatmap_figure, loss_by_distance_figure, loss_by_size_figure,
)
from lib.paths.generalization_tests import TESTS, Scale, distance_1_to_2, sample_test, score, target_kinds
from lib.paths.length_generalization import Cell, LengthSplit
from lib.book.params import ParameterError
from lib.paths.training import TrainingLog

DEFAULTS = {**read_parameters_cell(Path(__file__).parents[1] / "notebooks" / "03_finetuning_generalization.py"),
            "device": "cpu"}
SCALE = Scale(3, 5, 8, 8, 8)


def test_defaults_validate_and_smoke_shrinks_everything():
    config = validate_parameters(Chapter3Parameters, DEFAULTS)
    assert config.length_split == LengthSplit(3, 6, 12)
    assert config.length_lr_schedule == ((1200, 1e-3), (300, 2e-4))
    smoke = validate_parameters(Chapter3Parameters, {**DEFAULTS, "smoke": True})
    assert smoke.finetune_steps <= 10 and smoke.test_graphs <= 256
    assert sum(steps for steps, _ in smoke.length_lr_schedule) <= 40 and smoke.length_n_layers <= 2


@pytest.mark.parametrize("name, value, message", [
    ("small_n_max", 2, "Parameter `small_n_max` must be an integer between 3 and 62; got 2."),
    ("finetune_learning_rate", 0.0, "finetune_learning_rate"),
    ("length_test_n_max", 6, "length_test_n_max"),
    ("length_phase_steps", [100], "one entry per learning rate"),
    ("device", "tpu", "device"),
])
def test_a_bad_parameter_names_itself(name, value, message):
    with pytest.raises(ParameterError, match=re.escape(message)):
        validate_parameters(Chapter3Parameters, {**DEFAULTS, name: value})


@pytest.fixture(scope="module")
def results():
    outcomes = []
    for index, test in enumerate(TESTS.values()):
        tokens, labels = sample_test(test, SCALE, 200, seed=0)
        predictions = labels + 0.1 * (index + 1)
        outcomes.append(score(test, predictions, labels, SCALE.unreachable_label, target_kinds(tokens),
                              distance_1_to_2(tokens, SCALE.unreachable_label), tokens[:, -1, 0]))
    return outcomes


def test_tables_have_one_row_per_test(results):
    summary = summarize_generalization(results, results, SCALE, on_path_small_graphs=KindScore.absent())
    table = generalization_table(summary).splitlines()
    assert len(table) == 2 + len(TESTS)
    assert table[0] == ("| test | graphs and targets here | MSE pre-trained | MSE fine-tuned | accuracy fine-tuned "
                        "| study: MSE in the post | study: MSE of its 11-layer rerun |")
    assert table[2] == "| On-path small target | n in 3..8; on a shortest 1-2 path, target id <= 5 | 0.01000 | 0.01000 | 1.000 | 0.1020 | 0.09690 |"
    kinds = target_kind_table(summary).splitlines()
    assert len(kinds) == 2 + len(TESTS)
    assert kinds[0] == "| test | vertex 2 | on a shortest 1-2 path | reachable, off the path | unreachable |"
    # Every on-path target is on the path: the other two kinds did not occur ("n/a").
    on_path = summary.onpath_small_target.kinds_after
    assert kinds[2] == (f"| On-path small target | 0.01000 ({on_path.vertex_2.count:,}) "
                        f"| 0.01000 ({on_path.on_path.count}) | n/a | n/a |")


def test_figures_build(results):
    log = TrainingLog(steps=[10, 20], loss=[0.5, 0.1], loss_by_length=[[float("nan"), 0.4, 0.6]] * 2,
                      count_by_length=[[0, 5, 5]] * 2, learning_rate=[1e-4, 1e-4])
    fig = finetune_loss_figure(log, 8, loss_before=0.6, loss_after=0.05, published_before=0.5531,
                               published_after=0.01472)
    assert [t.name for t in fig.data][:2] == ["length 1", "length 2"]
    assert len(generalization_bars_figure(results, results, "small").data) == 4
    assert len(error_by_target_kind_figure(results).data) == 4
    buttons = confusion_by_test_figure(results, 9)
    assert len(buttons.data) == len(TESTS) and len(buttons.layout.updatemenus[0].buttons) == len(TESTS)
    split = LengthSplit(3, 5, 8)
    cells = [Cell(n, d, 10, 0.1 * d, float(d), 1.0, n <= 5, d <= 4) for n in range(3, 9) for d in range(1, n)]
    heatmap = length_heatmap_figure(cells, split)
    assert heatmap.data[0].z[0][0] == pytest.approx(-1.0)  # log10 of MSE 0.1 at n = 3, distance 1
    assert len(loss_by_size_figure(cells, split).data) == 5   # five of the seven distances
    assert len(loss_by_distance_figure(cells, split).data) == 2 * 5 + 1   # five of the six sizes
    assert torch.is_tensor(results[0].predictions)
