"""Attention fractions: uniform attention gives the chance shares, attention on one category gives 1."""

import torch

from lib.paths.attention_fractions import attention_fractions
from lib.paths.sampler import sample_batch
from lib.paths.token_graphs import TokenGraphs


def graphs_and_keys(count=200, seed=3):
    tokens, _ = sample_batch(count, "pretrain", 3, 8, torch.Generator().manual_seed(seed))
    graphs = TokenGraphs.from_tokens(tokens)
    real_keys = torch.cat([graphs.is_edge, torch.ones(count, 1, dtype=torch.bool)], dim=1)
    return graphs, real_keys


def normalised(weights: torch.Tensor) -> torch.Tensor:
    return weights / weights.sum(-1, keepdim=True)


def test_uniform_attention_gives_exactly_the_chance_shares():
    graphs, real_keys = graphs_and_keys()
    seq = real_keys.shape[1]
    uniform = normalised(real_keys.double().unsqueeze(1).expand(-1, seq, -1))   # (B, S, S)
    attention = uniform.unsqueeze(0).unsqueeze(2).expand(2, -1, 3, -1, -1)      # 2 layers, 3 heads
    fractions = attention_fractions(attention, graphs)
    assert torch.allclose(fractions.from_edges, fractions.edge_chance.expand(2, 3, -1), atol=1e-12)
    assert torch.allclose(fractions.from_target, fractions.target_chance.expand(2, 3, -1), atol=1e-12)


def test_attention_on_itself_and_on_the_target_token_is_counted_as_such():
    graphs, real_keys = graphs_and_keys()
    batch, seq = real_keys.shape
    itself = torch.eye(seq, dtype=torch.float64).expand(batch, -1, -1)
    to_target = torch.zeros(batch, seq, seq, dtype=torch.float64)
    to_target[..., -1] = 1.0
    fractions = attention_fractions(torch.stack([itself, to_target]).unsqueeze(2), graphs)
    assert torch.allclose(fractions.from_edges[0, 0], torch.tensor([1.0, 0.0, fractions.from_edges[0, 0, 2], 0.0],
                                                                   dtype=torch.float64))
    assert fractions.from_edges[1, 0, 3] == 1.0 and fractions.from_edges[1, 0, 0] == 0.0
    assert fractions.from_target[0, 0, 0] == 1.0 == fractions.from_target[1, 0, 0]


def test_attention_spread_over_the_edges_at_t_scores_one_for_that_category():
    graphs, real_keys = graphs_and_keys()
    at_t = torch.cat([graphs.touches(graphs.target), torch.zeros(len(graphs.target), 1, dtype=torch.bool)], dim=1)
    has = at_t.any(1)   # graphs where t has an edge at all
    graphs = TokenGraphs.from_tokens(torch.cat([torch.stack([graphs.low, graphs.high], -1),
                                                torch.stack([graphs.target.int(), torch.full_like(graphs.target.int(), 9)],
                                                            -1).unsqueeze(1)], dim=1)[has])
    at_t = at_t[has]
    seq = at_t.shape[1]
    attention = normalised(at_t.double()).unsqueeze(1).expand(-1, seq, -1).unsqueeze(0).unsqueeze(2)
    fractions = attention_fractions(attention, graphs)
    assert torch.isclose(fractions.from_target[0, 0, 1], torch.tensor(1.0, dtype=torch.float64))
