"""The learned model's graphs put to chapter 1's hand-built construction, and where the two
models agree (chapter 7).

`hand_built_adjacency` turns a batch of edge-token graphs into adjacency matrices with vertex t
relabelled 2, the target the construction reads; `HandBuilt` holds the construction's answers
and, per layer, whether it knows that t is within reach; `hand_built_rows` compares the trained
model's exactness with the construction's, by whether the distance fits within the trained
model's depth. Running the construction (`lib.bfs`) is the chapter's glue,
`lib.chapters.ch7`: this package does not import `lib.bfs`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.paths.graph_set import GraphSet
from lib.paths.token_graphs import TokenGraphs


def hand_built_adjacency(graphs: TokenGraphs, n_vertices: int) -> torch.Tensor:
    """(B, n, n) adjacency of each graph with vertices 2 and t swapped, so that the hand-built
    model (which measures the distance from 1 to 2) answers the learned model's question."""
    if (graphs.target == 1).any():
        raise ValueError("The hand-built model cannot be asked for d(1, 1); a target is vertex 1.")
    batch = len(graphs.target)
    relabel = torch.arange(n_vertices + 1).expand(batch, -1).clone()   # old id -> new id
    rows = torch.arange(batch)
    relabel[rows, graphs.target.long()] = 2
    relabel[rows, 2] = graphs.target.long()
    low = relabel.gather(1, graphs.low.long())[graphs.is_edge.nonzero(as_tuple=True)]
    high = relabel.gather(1, graphs.high.long())[graphs.is_edge.nonzero(as_tuple=True)]
    which = graphs.is_edge.nonzero(as_tuple=True)[0]
    adjacency = torch.zeros(batch, n_vertices, n_vertices, dtype=torch.bool)
    adjacency[which, low - 1, high - 1] = True
    adjacency[which, high - 1, low - 1] = True
    return adjacency


@dataclass(frozen=True)
class HandBuilt:
    """The hand-built model on the learned model's graphs.

    Attributes:
        prediction: (B,) its distances (n_vertices where unreachable, the sampler's label).
        knows: (n_vertices, B) after layer l (row l - 1), the reach bit of t in vertex 1's
            token: [d(1, t) <= l]. (The answer token copies it one layer later.)
    """

    prediction: torch.Tensor
    knows: torch.Tensor


def hand_built_rows(prediction: torch.Tensor, hand_built: HandBuilt, graphs: GraphSet, n_layers: int) -> dict:
    """Where the trained model and the hand-built one agree: exactness of each, by whether the
    distance fits within the trained model's depth."""
    rounded = prediction.round()
    reachable = graphs.reachable
    within = reachable & (graphs.graphs.distance <= n_layers)
    beyond = reachable & (graphs.graphs.distance > n_layers)
    unreachable = ~reachable

    def share(mask: torch.Tensor, predicted: torch.Tensor) -> float:
        return float((predicted[mask] == graphs.labels[mask]).double().mean()) if mask.any() else float("nan")

    return {
        "hand_built_mse": float(((hand_built.prediction - graphs.labels) ** 2).mean()),
        "hand_built_layers": int(hand_built.knows.shape[0]),
        "counts": {"within_depth": int(within.sum()), "beyond_depth": int(beyond.sum()),
                   "unreachable": int(unreachable.sum())},
        "trained_exact": {"within_depth": share(within, rounded), "beyond_depth": share(beyond, rounded),
                          "unreachable": share(unreachable, rounded)},
        "hand_built_exact": {"within_depth": share(within, hand_built.prediction.round()),
                             "beyond_depth": share(beyond, hand_built.prediction.round()),
                             "unreachable": share(unreachable, hand_built.prediction.round())},
    }


__all__ = ["hand_built_adjacency", "hand_built_rows", "HandBuilt"]
