"""Training passes in width buckets (lib.paths.width_buckets): the model's predictions and
gradients on all slots, in batch order, whatever the number of buckets."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from lib.paths.model import PathTransformerConfig, build_model
from lib.paths.prediction import used_edge_slots
from lib.paths.sampler import sample_batch
from lib.paths.training import PathTrainingConfig, start_training, train
from lib.paths.width_buckets import forward_in_width_buckets

pytestmark = pytest.mark.usefixtures("one_thread")


def graphs(count: int = 200, n_max: int = 10, seed: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    tokens, labels = sample_batch(count, "pretrain", 3, n_max, torch.Generator().manual_seed(seed))
    # Padding moved in front of some graphs' edges: a graph's width is its last edge slot, not its edge count.
    tokens[::3, :-1] = tokens[::3, :-1].flip(1)
    return tokens, labels.float()


def gradients(model, predictions, labels) -> list[torch.Tensor]:
    model.zero_grad(set_to_none=True)
    ((predictions - labels) ** 2).mean().backward()
    return [parameter.grad.clone() for parameter in model.parameters()]


@pytest.mark.parametrize("buckets", [1, 3, 4, 1000])
def test_buckets_give_the_predictions_and_gradients_on_all_slots(buckets):
    model = build_model(PathTransformerConfig(n_layers=2, max_vertex_id=10), seed=1).train()
    tokens, labels = graphs()
    assert len(used_edge_slots(tokens).unique()) > 4
    full = model(tokens)
    bucketed = forward_in_width_buckets(model, tokens, buckets)
    assert bucketed.shape == full.shape
    assert torch.allclose(bucketed, full, atol=1e-5, rtol=0)  # batch order restored
    for ours, theirs in zip(gradients(model, bucketed, labels), gradients(model, model(tokens), labels)):
        assert torch.allclose(ours, theirs, atol=1e-5, rtol=1e-4)


def test_a_bucket_runs_on_its_widest_graphs_slots_only():
    model = build_model(PathTransformerConfig(n_layers=1, max_vertex_id=10), seed=1)
    tokens, _ = graphs(count=64)
    widths = []
    handle = model.encoder.register_forward_pre_hook(lambda module, args, kwargs: widths.append(args[0].shape[1]),
                                                     with_kwargs=True)
    forward_in_width_buckets(model, tokens, 2)
    handle.remove()
    used = used_edge_slots(tokens).sort().values
    assert widths == [int(used[:32].max()) + 1, int(used[32:].max()) + 1] and widths[0] < tokens.shape[1]


def test_no_bucket_is_refused():
    model = build_model(PathTransformerConfig(n_layers=1, max_vertex_id=10), seed=1)
    tokens, _ = graphs(count=8)
    with pytest.raises(ValueError, match="buckets must be at least 1; got 0"):
        forward_in_width_buckets(model, tokens, 0)


def test_a_run_in_width_buckets_follows_the_run_on_all_slots_and_repeats_itself():
    config = PathTrainingConfig(n_layers=2, n_max=10, batch_size=64, lr_schedule=((20, 1e-3),), log_every=5,
                                snapshot_every=20, eval_size=64, seed=3)
    bucketed = dataclasses.replace(config, width_buckets=4)
    runs = [train(start_training(c), progress=False) for c in (config, bucketed, bucketed)]
    assert runs[1].log.loss == runs[2].log.loss  # same seed, same numbers
    # The same function rounded differently: 20 steps later the losses agree closely, not bit for bit.
    assert runs[0].log.loss == pytest.approx(runs[1].log.loss, rel=1e-3)
    assert PathTrainingConfig.from_dict(bucketed.to_dict()) == bucketed
    legacy = {key: value for key, value in config.to_dict().items() if key != "width_buckets"}
    assert PathTrainingConfig.from_dict(legacy).width_buckets == 0  # checkpoints from before the field load
