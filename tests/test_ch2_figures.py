"""Chapter 2's figures build from a log, and the confusion matrix is a conditional distribution."""

from __future__ import annotations

import math

import torch

from lib.paths.training import TrainingLog
from lib.chapters.ch2_figures import (
    confusion_figure, confusion_matrix, confusion_slider_figure, learning_rate_figure,
    loss_by_length_figure, total_loss_figure,
)


def test_confusion_matrix_rows_are_distributions():
    labels = torch.tensor([1, 1, 2, 2, 2, 4])
    predictions = torch.tensor([0.9, 2.2, 2.0, 2.4, 6.0, 3.6])
    matrix = confusion_matrix(predictions, labels, 5)
    assert matrix[1].tolist() == [0, 0.5, 0.5, 0, 0]
    assert torch.allclose(matrix[2], torch.tensor([0, 0, 2 / 3, 0, 1 / 3], dtype=torch.float64))
    assert matrix[4, 4] == 1 and all(math.isnan(v) for v in matrix[3].tolist())


def test_figures_build():
    log = TrainingLog(steps=[10, 20, 30], loss=[3.0, 1.0, 0.1],
                      loss_by_length=[[math.nan, 2.0, 3.0], [math.nan, 0.05, 2.0], [math.nan, 0.01, 0.05]],
                      count_by_length=[[0, 5, 5]] * 3, learning_rate=[1e-3] * 3)
    assert total_loss_figure(log, published_final_loss=0.001623).data
    figure = loss_by_length_figure(log, {1: 20, 2: 30}, threshold=0.1, unreachable_label=2)
    assert len(figure.data) == 5, "two curves, two transition markers, the threshold"
    labels = torch.tensor([1, 2, 2])
    assert confusion_figure(torch.tensor([1.0, 2.0, 1.0]), labels, 3).data
    slider = confusion_slider_figure([0, 10], [torch.zeros(3), torch.ones(3)], labels, 3)
    assert len(slider.layout.sliders[0].steps) == 2
    assert learning_rate_figure(((5, 1e-3), (5, 1e-4))).data
