"""Patching read layer by layer, and the shortcut statistics of a known graph (lib.paths.causal)."""

import pytest
import torch

from lib.paths.causal import Patching, shortcut_values
from lib.paths.token_graphs import TokenGraphs


def test_patching_by_layer_rests_the_verdict_on_the_intermediate_layers():
    patching = Patching(3, torch.tensor([0.6, 0.8, 0.9]), torch.tensor([[0.1, 0.2], [0.1, 0.3], [0.2, 0.2]]),
                        torch.tensor([1.0, 1.0, 1.0]), 100)
    rows = patching.by_layer()
    assert [r["last"] for r in rows] == [False, False, True] and rows[0]["beats_every_random"]
    assert rows[1]["random_max"] == pytest.approx(0.3) and rows[1]["share_of_token"] == pytest.approx(0.8)


def test_shortcut_statistics_on_a_known_graph():
    # Edges 1-3, 3-2, 1-3 (a duplicate), 4-5; target 2: d(1, 2) = 2.
    tokens = torch.tensor([[[1, 3], [2, 3], [1, 3], [4, 5], [0, 0], [0, 0], [2, 9]]])
    values = {name: int(v[0]) for name, v in shortcut_values(TokenGraphs.from_tokens(tokens)).items()}
    assert values == {"edges in the graph": 4, "duplicate edges": 1, "vertices with an edge": 5,
                      "degree of vertex 1": 2, "degree of t": 1, "vertices reachable from 1": 3,
                      "vertices reachable from t": 3, "edges on shortest 1-t paths": 3}
