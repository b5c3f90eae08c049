"""Where each attention head looks, in graph terms (chapter 7).

For every head, the share of attention that goes from an edge token to edges sharing an endpoint
with it, to edges on a shortest 1-t path, to the query token and to itself; and from the query
token (t, TARGET) to edges at t, edges at vertex 1 and edges on a shortest path. Each share is an
average over the batch's (non-padding) queries, beside its chance level: the share a head that
spread its attention evenly over the graph's tokens would give. Categories can overlap (an edge
next to the query edge can be on the shortest path too), so shares need not add up to one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.paths.token_graphs import TokenGraphs

#: Key categories for queries at edge tokens, and for the query at the target token.
EDGE_QUERY_CATEGORIES = ("itself", "edges sharing an endpoint", "edges on a shortest 1-t path",
                         "the target token")
TARGET_QUERY_CATEGORIES = ("itself", "edges at t", "edges at vertex 1", "edges on a shortest 1-t path")


@dataclass(frozen=True)
class AttentionFractions:
    """Shares of attention by key category.

    Attributes:
        from_edges: (L, heads, len(EDGE_QUERY_CATEGORIES)) mean share over edge-token queries.
        from_target: (L, heads, len(TARGET_QUERY_CATEGORIES)) mean share at the target token.
        edge_chance, target_chance: the same shares under uniform attention over non-padding keys.
    """

    from_edges: torch.Tensor
    from_target: torch.Tensor
    edge_chance: torch.Tensor
    target_chance: torch.Tensor


def _edge_query_keys(graphs: TokenGraphs) -> torch.Tensor:
    """(B, E, S, categories) bool: key k is in category c for edge query q."""
    batch, edges = graphs.is_edge.shape
    itself = torch.eye(edges, edges + 1, dtype=torch.bool).expand(batch, -1, -1)
    adjacent = torch.cat([graphs.shares_endpoint, torch.zeros(batch, edges, 1, dtype=torch.bool)], dim=2)
    on_path = torch.cat([graphs.on_shortest_path, torch.zeros(batch, 1, dtype=torch.bool)], dim=1)
    target = torch.zeros(batch, edges, edges + 1, dtype=torch.bool)
    target[..., -1] = True
    return torch.stack([itself, adjacent, on_path.unsqueeze(1).expand(-1, edges, -1), target], dim=-1)


def _target_query_keys(graphs: TokenGraphs) -> torch.Tensor:
    """(B, S, categories) bool: key k is in category c for the query at the target token."""
    batch, edges = graphs.is_edge.shape
    no = torch.zeros(batch, 1, dtype=torch.bool)
    itself = torch.cat([torch.zeros(batch, edges, dtype=torch.bool), ~no], dim=1)
    at_target = torch.cat([graphs.touches(graphs.target), no], dim=1)
    at_source = torch.cat([graphs.touches(torch.ones_like(graphs.target)), no], dim=1)
    on_path = torch.cat([graphs.on_shortest_path, no], dim=1)
    return torch.stack([itself, at_target, at_source, on_path], dim=-1)


def attention_fractions(attention: torch.Tensor, graphs: TokenGraphs) -> AttentionFractions:
    """Shares of attention by category from (L, B, heads, S, S) weights of a batch of graphs."""
    attention = attention.double()
    real_keys = torch.cat([graphs.is_edge, torch.ones(len(graphs.target), 1, dtype=torch.bool)], dim=1)
    edge_keys = _edge_query_keys(graphs).double()                          # (B, E, S, C)
    queries = graphs.is_edge.double()                                      # (B, E)
    from_edges = torch.einsum("lbhqk,bqkc,bq->lhc", attention[..., :-1, :], edge_keys, queries) / queries.sum()
    uniform = real_keys.double() / real_keys.sum(1, keepdim=True)          # (B, S)
    edge_chance = torch.einsum("bk,bqkc,bq->c", uniform, edge_keys, queries) / queries.sum()
    target_keys = _target_query_keys(graphs).double()                      # (B, S, C)
    from_target = torch.einsum("lbhk,bkc->lhc", attention[..., -1, :], target_keys) / len(graphs.target)
    target_chance = torch.einsum("bk,bkc->c", uniform, target_keys) / len(graphs.target)
    return AttentionFractions(from_edges, from_target, edge_chance, target_chance)


__all__ = ["EDGE_QUERY_CATEGORIES", "TARGET_QUERY_CATEGORIES", "AttentionFractions", "attention_fractions"]
