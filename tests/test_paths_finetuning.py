"""Fine-tuning (lib.paths.finetuning): its own AdamW, its data against networkx, base-model loading."""

from __future__ import annotations

import dataclasses

import networkx as nx
import pytest
import torch

from lib.paths.finetuning import (
    CHAPTER_2_CHECKPOINT, ensure_base_model, fallback_base_config, finetune, finetuning_config,
    held_out_loss, start_finetuning, weight_shrink_factor,
)
from lib.paths.sampler import sample_with_options
from lib.book.params import ParameterError
from lib.paths.prediction import predict
from lib.paths.training import PathTrainingConfig, save_training_run, start_training, train

BASE = PathTrainingConfig(n_layers=2, n_min=3, n_max=7, batch_size=128, lr_schedule=((150, 2e-3),),
                      log_every=10, snapshot_every=50, eval_size=256, seed=3)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def base_run():
    return train(start_training(BASE), progress=False)


def graph_of(tokens: torch.Tensor) -> nx.Graph:
    graph = nx.Graph()
    graph.add_nodes_from([1, 2])
    graph.add_edges_from((a, b) for a, b in tokens[:-1].tolist() if a)
    return graph


def small_config(base: PathTrainingConfig, **overrides) -> PathTrainingConfig:
    settings = dict(small_n_max=5, steps=40, batch_size=128, learning_rate=1e-3, weight_decay=1e-2,
                    eval_size=512, seed=0)
    settings.update(overrides)
    return finetuning_config(base, **settings)


def test_finetuning_data_is_on_path_targets_in_small_graphs():
    config = small_config(BASE)
    tokens, labels = sample_with_options(3000, config.sampler, torch.Generator().manual_seed(0))
    assert tokens.shape[1] == 5 + 1
    # The vocabulary and the TARGET token are the base model's, not the small graphs'.
    assert (tokens[:, -1, 1] == BASE.n_max + 1).all()
    assert int(tokens[:, :-1].max()) <= 5
    for row, label in zip(tokens, labels.long().tolist()):
        graph, target = graph_of(row), int(row[-1, 0])
        d_12 = nx.shortest_path_length(graph, 1, 2)
        assert label == nx.shortest_path_length(graph, 1, target)
        assert label + nx.shortest_path_length(graph, target, 2) == d_12, "target on a shortest 1-2 path"
    # The small-graph filter thins out short 1-2 paths: without it length-1 paths dominate more.
    unfiltered = dataclasses.replace(config.sampler, small_graph_filter=False)
    _, plain = sample_with_options(3000, unfiltered, torch.Generator().manual_seed(0))
    assert (labels == 1).float().mean() < (plain == 1).float().mean() - 0.05


def test_small_n_max_must_fit_the_base_model():
    with pytest.raises(ParameterError, match="small_n_max"):
        small_config(BASE, small_n_max=9)


def test_finetuning_steps_its_own_adamw_and_leaves_the_base_model_alone(base_run):
    config = small_config(BASE, learning_rate=3e-4, weight_decay=0.05)
    run = start_finetuning(base_run.model, config)
    assert type(run.optimizer) is torch.optim.AdamW
    group = run.optimizer.param_groups[0]
    assert group["lr"] == 3e-4 and group["weight_decay"] == 0.05
    assert not run.optimizer.state, "no optimizer state carried over from pre-training"
    assert run.model is not base_run.model
    original = [p.detach().clone() for p in base_run.model.parameters()]
    train(run, progress=False)
    assert all(torch.equal(a, b) for a, b in zip(original, base_run.model.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(original, run.model.parameters()))
    assert len(run.optimizer.state) > 0  # the optimizer that stepped is the new one


def test_weight_shrink_factor_is_adamw_decay_with_zero_gradient():
    weight = torch.nn.Parameter(torch.ones(3))
    optimizer = torch.optim.AdamW([weight], lr=0.1, weight_decay=0.5)
    for _ in range(4):
        weight.grad = torch.zeros(3)
        optimizer.step()
    assert torch.allclose(weight.detach(), torch.full((3,), weight_shrink_factor(0.1, 0.5, 4)))


def test_finetuning_lowers_the_on_path_loss(base_run):
    run = finetune(base_run.model, small_config(BASE, steps=60), progress=False)
    before, after = held_out_loss(run, 0), held_out_loss(run, -1)
    assert after < 0.5 * before, (before, after)
    assert run.snapshot_steps == [0, 60]


def test_ensure_base_model_loads_chapter_2_checkpoint_or_trains_the_fallback(tmp_path, base_run):
    tiny = dataclasses.replace(fallback_base_config(seed=1, smoke=True), lr_schedule=((5, 1e-3),))
    trained = ensure_base_model(tmp_path, tiny, progress=False)
    assert trained.source == "trained" and trained.checkpoint_path is None and trained.seconds > 0
    assert not list(tmp_path.iterdir()), "the fallback is not written where chapter 2's checkpoint goes"

    save_training_run(base_run, tmp_path / CHAPTER_2_CHECKPOINT)
    loaded = ensure_base_model(tmp_path, tiny, progress=False)
    assert loaded.source == "checkpoint" and loaded.config.n_max == BASE.n_max
    assert loaded.checkpoint_path == str(tmp_path / CHAPTER_2_CHECKPOINT)
    assert torch.equal(predict(loaded.model, base_run.eval_tokens), predict(base_run.model, base_run.eval_tokens))


def test_fallback_is_chapter_2_default_run():
    config = fallback_base_config(seed=0)
    assert (config.n_max, config.n_layers, config.batch_size, config.task) == (8, 4, 256, "pretrain")
    assert config.total_steps == 2500
    smoke = fallback_base_config(seed=0, smoke=True)
    assert smoke.total_steps <= 80 and smoke.n_layers == 2
