"""Scoring passes (lib.paths.prediction): each graph run on the edge slots it uses gives the
model's predictions on all slots, wherever its padding lies."""

from __future__ import annotations

import pytest
import torch

from lib.paths.model import PathTransformerConfig, build_model
from lib.paths.prediction import predict, used_edge_slots
from lib.paths.sampler import sample_batch

pytestmark = pytest.mark.usefixtures("one_thread")


def test_used_edge_slots_counts_to_the_last_edge():
    tokens = torch.tensor([[[1, 2], [0, 0], [0, 0], [3, 9]],     # one edge
                           [[0, 0], [2, 3], [0, 0], [3, 9]],     # an edge after a padding slot
                           [[0, 0], [0, 0], [0, 0], [3, 9]],     # no edge
                           [[1, 2], [2, 3], [1, 3], [3, 9]]])    # every slot
    assert used_edge_slots(tokens).tolist() == [1, 2, 0, 3]


def test_predict_on_the_used_slots_equals_the_model_on_all_slots():
    model = build_model(PathTransformerConfig(n_layers=2, max_vertex_id=10), seed=1)
    tokens, _ = sample_batch(300, "any", 3, 10, torch.Generator().manual_seed(2))
    # Padding moved in front of some graphs' edges: only slots empty in a whole group may be cut.
    tokens[::3, :-1] = tokens[::3, :-1].flip(1)
    assert len(used_edge_slots(tokens).unique()) > 3
    model.train()
    with torch.no_grad():
        full = model(tokens)
    for batch_size in (8192, 7):
        assert torch.allclose(predict(model, tokens, batch_size=batch_size), full, atol=1e-6, rtol=0)
    assert model.training
    assert predict(model, tokens[:0]).shape == (0,)
