"""The transition study of chapter 2 (lib.paths.transition_study): a balanced evaluation set and
curves that are the model's loss per length, the same for the same seed."""

import dataclasses

import pytest
import torch

from lib.book.workers import can_fork
from lib.paths.training import PathTrainingConfig, start_training
from lib.paths.transition_study import (
    balanced_evaluation_set, loss_and_mean_by_length, loss_by_length, run_transition_study, start_transition_study,
)

RECIPE = PathTrainingConfig(n_layers=1, n_min=3, n_max=8, batch_size=32, lr_schedule=((12, 1e-3),),
                            log_every=4, snapshot_every=12, eval_size=16)


def test_the_evaluation_set_holds_the_same_count_of_every_length_it_keeps():
    evaluation = balanced_evaluation_set(RECIPE.sampler, 20, torch.Generator().manual_seed(0), pool_size=2000)
    assert 1 in evaluation.lengths and 2 in evaluation.lengths
    counts = torch.bincount(evaluation.labels.long())
    assert all(int(counts[k]) == 20 for k in evaluation.lengths)
    assert len(evaluation.tokens) == 20 * len(evaluation.lengths)


def test_curves_start_at_the_untrained_model_and_repeat_with_the_seed():
    evaluation = balanced_evaluation_set(RECIPE.sampler, 10, torch.Generator().manual_seed(1), pool_size=2000)
    curves = run_transition_study(RECIPE, (3, 4), evaluation, 5, progress=False)
    assert curves.steps == (0, 5, 10, 12) and curves.loss.shape == (2, 4, len(evaluation.lengths))
    untrained = loss_by_length(start_training(dataclasses.replace(RECIPE, seed=3)).model, evaluation)
    assert torch.allclose(curves.loss[0, 0], untrained)
    again = run_transition_study(RECIPE, (3,), evaluation, 5, progress=False)
    assert torch.equal(again.loss[0], curves.loss[0])
    assert not torch.equal(curves.loss[0], curves.loss[1])


def test_curves_log_the_mean_prediction_and_worker_processes_give_the_same_numbers():
    evaluation = balanced_evaluation_set(RECIPE.sampler, 10, torch.Generator().manual_seed(1), pool_size=2000)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # the workers are single-threaded; so is the chapter at its defaults
    try:
        in_order = run_transition_study(RECIPE, (3, 4), evaluation, 5, progress=False)
    finally:
        torch.set_num_threads(threads)
    in_workers = run_transition_study(RECIPE, (3, 4), evaluation, 5, progress=False, workers=2)
    assert torch.equal(in_order.loss, in_workers.loss)
    assert torch.equal(in_order.mean_prediction, in_workers.mean_prediction)
    assert in_order.mean_prediction.shape == in_order.loss.shape
    untrained = start_training(dataclasses.replace(RECIPE, seed=3)).model
    loss, mean = loss_and_mean_by_length(untrained, evaluation)
    assert torch.allclose(in_order.mean_prediction[0, 0], mean) and torch.allclose(in_order.loss[0, 0], loss)
    assert in_order.mean_curve(0, evaluation.lengths[0])[0] == pytest.approx(float(mean[0]))


def test_a_study_started_in_the_background_gives_the_numbers_of_one_run_to_the_end():
    evaluation = balanced_evaluation_set(RECIPE.sampler, 10, torch.Generator().manual_seed(1), pool_size=2000)
    study = start_transition_study(RECIPE, (3, 4), evaluation, 5, workers=2)
    assert study.in_background == can_fork(2)
    in_workers = run_transition_study(RECIPE, (3, 4), evaluation, 5, progress=False, workers=2)
    started = study.curves(progress=False)
    assert started.seeds == (3, 4) and started.steps == in_workers.steps and started.lengths == evaluation.lengths
    assert torch.equal(started.loss, in_workers.loss)
    assert torch.equal(started.mean_prediction, in_workers.mean_prediction)


def test_a_study_this_process_helps_with_gives_the_same_numbers():
    evaluation = balanced_evaluation_set(RECIPE.sampler, 10, torch.Generator().manual_seed(1), pool_size=2000)
    study = start_transition_study(RECIPE, (3, 4, 5), evaluation, 5, workers=1, this_process_helps=True)
    assert study.in_background == can_fork(2)
    in_workers = run_transition_study(RECIPE, (3, 4, 5), evaluation, 5, progress=False, workers=2)
    helped = study.curves(progress=False)
    assert torch.equal(helped.loss, in_workers.loss)
    assert torch.equal(helped.mean_prediction, in_workers.mean_prediction)
