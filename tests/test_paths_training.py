"""The edge-token transformer, its training loop (resume, logging) and the running median of
the transition detector (lib.paths.phase_transitions; the detector: test_paths_phase_transitions)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from lib.paths.sampler import sample_batch
from lib.paths.training import (
    PathTrainingConfig, constant_prediction_loss, follow_up_config, learning_rate_at, load_trained_model,
    load_training_run, start_training, train,
)
from lib.paths.model import PathTransformer, PathTransformerConfig, build_model, count_parameters
from lib.paths.prediction import predict
from lib.paths.phase_transitions import running_median



# Tiny models train fastest (and least disturbed by other processes) on one thread.
pytestmark = pytest.mark.usefixtures("one_thread")


TINY = PathTrainingConfig(n_layers=2, n_max=6, batch_size=32, lr_schedule=((12, 1e-3), (6, 1e-4)),
                      log_every=4, snapshot_every=5, eval_size=64, seed=3)


@pytest.mark.parametrize("n_layers,expected", [(11, 550_433), (6, 300_513)])
def test_parameter_count_matches_published(n_layers, expected):
    model = PathTransformer(PathTransformerConfig(n_layers=n_layers, max_vertex_id=15))
    assert count_parameters(model) == expected


def test_model_ignores_edge_order_and_padding():
    torch.manual_seed(0)
    model = build_model(PathTransformerConfig(n_layers=2, max_vertex_id=8), seed=0).eval()
    tokens, _ = sample_batch(16, "any", 3, 8, torch.Generator().manual_seed(0))
    with torch.no_grad():
        reference = model(tokens)
        shuffled = tokens.clone()
        shuffled[:, :-1] = tokens[:, torch.randperm(8)]
        padded = torch.cat([torch.zeros(16, 5, 2, dtype=torch.long), tokens], dim=1)
        assert torch.allclose(model(shuffled), reference, atol=1e-5)
        assert torch.allclose(model(padded), reference, atol=1e-5), "more edge slots are fine"


def test_build_model_depends_only_on_seed():
    config = PathTransformerConfig(n_layers=1, max_vertex_id=5)
    first = build_model(config, seed=1)
    torch.rand(10)
    second = build_model(config, seed=1)
    assert all(torch.equal(a, b) for a, b in zip(first.parameters(), second.parameters()))


def test_learning_rate_schedule():
    schedule = ((3, 1.0), (2, 0.5))
    assert [learning_rate_at(schedule, s) for s in range(6)] == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5]


def test_resume_continues_exactly(tmp_path):
    straight = train(start_training(TINY), progress=False)
    interrupted = train(start_training(TINY), 7, checkpoint_path=tmp_path / "run.pt", progress=False)
    assert interrupted.step == 7
    resumed = train(load_training_run(tmp_path / "run.pt"), progress=False)
    for a, b in zip(straight.model.state_dict().values(), resumed.model.state_dict().values()):
        assert torch.equal(a, b)
    assert resumed.log.loss == straight.log.loss
    assert resumed.log.steps == straight.log.steps == [4, 8, 12, 16, 18]
    assert resumed.snapshot_steps == straight.snapshot_steps == [0, 5, 10, 15, 18]
    for a, b in zip(resumed.snapshot_predictions, straight.snapshot_predictions):
        assert torch.equal(a, b)


def test_log_by_length_is_consistent():
    run = train(start_training(TINY), progress=False)
    for total, by_length, counts in zip(run.log.loss, run.log.loss_by_length, run.log.count_by_length):
        weighted = sum(c * l for c, l in zip(counts, by_length) if c)
        assert math.isclose(weighted / sum(counts), total, rel_tol=1e-9)
        assert all(math.isnan(l) == (c == 0) for c, l in zip(counts, by_length))
    assert sum(run.log.count_by_length[0]) == 4 * TINY.batch_size
    assert run.log.learning_rate[-1] == 1e-4
    assert run.examples_per_second > 0


def test_training_reduces_loss_below_constant_prediction():
    config = dataclasses.replace(TINY, lr_schedule=((80, 3e-3),), batch_size=64, log_every=10,
                                 snapshot_every=80, eval_size=256)
    run = train(start_training(config), progress=False)
    mse = float(((predict(run.model, run.eval_tokens) - run.eval_labels) ** 2).mean())
    assert mse < 0.5 * constant_prediction_loss(run.eval_labels)


def test_load_trained_model_and_fine_tune_start(tmp_path):
    run = train(start_training(TINY), progress=False, checkpoint_path=tmp_path / "run.pt")
    model, config = load_trained_model(tmp_path / "run.pt")
    assert config == TINY and not model.training
    assert torch.equal(predict(model, run.eval_tokens), predict(run.model, run.eval_tokens))
    fine_tune = follow_up_config(config, task="onpath", n_max=5, lr_schedule=((3, 1e-5),),
                                 weight_decay=1e-5, sampler_options={"target_max": 4})
    assert fine_tune.model_config == config.model_config
    assert fine_tune.sampler.unreachable_label == config.sampler.unreachable_label == 6
    assert fine_tune.sampler.target_token == 7 and fine_tune.sampler.target_max == 4
    continued = train(start_training(fine_tune, model=model), progress=False)
    assert continued.step == 3 and continued.optimizer.param_groups[0]["weight_decay"] == 1e-5
    assert int(continued.eval_tokens[:, -1, 1].unique()) == 7
    assert int(continued.eval_tokens[:, -1, 0].max()) <= 4
    with pytest.raises(ValueError):
        start_training(dataclasses.replace(config, n_layers=3), model=model)


def test_running_median_skips_gaps():
    smoothed = running_median([1.0, math.nan, 3.0, 100.0, 5.0], 3)
    assert smoothed[0] == 2.0 and math.isnan(smoothed[1]) and smoothed[2] == 3.0
    assert smoothed[3] == 5.0 and smoothed[4] == 52.5
