"""The capacity lever of Ye, Fu, Jia and Sharan (2025) at the book's scale (chapter 7).

Their claim: an L-layer (disentangled) transformer can solve connectivity on graphs of diameter
up to 3^L; trained on graphs within that capacity it learns the exact algorithm, trained on
graphs beyond it a heuristic built on the vertices' degrees. Here: graphs of chapter 2's sampler
split by their diameter (`diameters`: the longest shortest path between two vertices of the
graph) at `capacity`, matched so that both sets hold the same number of graphs of every edge
count (`matched_sets`); one model of chapter 2's architecture trained on each
(`train_on_graphs`: chapter 2's loss and optimiser, batches drawn from the fixed set); and how
much of each model's answer a ridge probe on the graph statistics of `lib.paths.layer_probes`
(edge count, degrees of 1 and t, ...) explains on held-out graphs (`statistics_r2`), beside how
much of the true answer they explain.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.paths.graph_set import GraphSet
from lib.paths.layer_probes import REACHABLE, statistic_features
from lib.paths.model import PathTransformer, build_model
from lib.paths.probes import fit_probes, r_squared
from lib.paths.sampler import sample_with_options
from lib.paths.token_graphs import TokenGraphs
from lib.paths.training import PathTrainingConfig


def diameters(graphs: TokenGraphs) -> torch.Tensor:
    """(B,) the diameter of each graph: the largest finite distance between two of its vertices
    (0 for a graph without edges)."""
    size = int(torch.maximum(graphs.low.max(), graphs.high.max())) + 1 if graphs.low.numel() else 1
    batch = graphs.low.shape[0]
    adjacency = torch.zeros(batch, size, size, dtype=torch.bool)
    rows = torch.arange(batch).unsqueeze(1).expand_as(graphs.low)
    low, high, edge = graphs.low.long(), graphs.high.long(), graphs.is_edge
    adjacency[rows[edge], low[edge], high[edge]] = True
    adjacency[rows[edge], high[edge], low[edge]] = True
    reached = torch.eye(size, dtype=torch.bool).expand(batch, -1, -1).clone()
    diameter = torch.zeros(batch, dtype=torch.long)
    for step in range(1, size):
        grown = reached | (reached.float() @ adjacency.float() > 0)
        new = (grown & ~reached).flatten(1).any(1)
        diameter[new] = step
        if not bool(new.any()):
            break
        reached = grown
    return diameter


@dataclass(frozen=True)
class MatchedSets:
    """Graphs within the capacity (diameter <= capacity) and beyond it, with as many graphs of
    every edge count in each, and the pool they were drawn from."""

    within: GraphSet
    beyond: GraphSet
    capacity: int
    drawn: int


def matched_sets(config: PathTrainingConfig, capacity: int, pool: int, seed: int) -> MatchedSets:
    """Draw `pool` graphs of `config`'s sampler (seeded by `seed`) and keep, for every edge count,
    as many graphs of diameter at most `capacity` as of diameter beyond it (the first ones drawn)."""
    tokens, labels = sample_with_options(pool, config.sampler, torch.Generator().manual_seed(seed))
    graphs = TokenGraphs.from_tokens(tokens)
    diameter, edges = diameters(graphs), graphs.edge_count
    keep = {"within": [], "beyond": []}
    for count in torch.unique(edges).tolist():
        inside = ((edges == count) & (diameter <= capacity)).nonzero(as_tuple=True)[0]
        outside = ((edges == count) & (diameter > capacity)).nonzero(as_tuple=True)[0]
        n = min(len(inside), len(outside))
        keep["within"].append(inside[:n])
        keep["beyond"].append(outside[:n])
    out = {}
    for name, parts in keep.items():
        rows = torch.sort(torch.cat(parts)).values
        out[name] = GraphSet(tokens[rows], labels[rows], TokenGraphs.from_tokens(tokens[rows]),
                             config.sampler.unreachable_label)
    return MatchedSets(out["within"], out["beyond"], capacity, pool)


def train_on_graphs(config: PathTrainingConfig, graphs: GraphSet, *, steps: int, seed: int,
                    learning_rate: float = 1e-3) -> PathTransformer:
    """A model of `config`'s architecture (seeded by `seed`) trained for `steps` Adam steps on the
    mean squared error of batches of `config.batch_size` graphs drawn with replacement from
    `graphs` (chapter 2's loss and learning rate; a fixed set instead of fresh graphs)."""
    model = build_model(config.model_config, seed=seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=learning_rate)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        rows = torch.randint(len(graphs.labels), (config.batch_size,), generator=generator)
        loss = ((model(graphs.tokens[rows]) - graphs.labels[rows]) ** 2).mean()
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    return model.eval()


def statistics_r2(graphs: GraphSet, answers: torch.Tensor, *, l2: float = 1e-3) -> float:
    """Held-out R^2 of a ridge probe of `answers` (one per graph: a model's prediction, or the true
    label) on the graph statistics (`lib.paths.layer_probes.statistic_features`), fitted on the
    first half of the graphs and scored on the second."""
    features = statistic_features(graphs.graphs, REACHABLE)
    half = len(answers) // 2
    probe = fit_probes(features[:half], answers[:half].double().unsqueeze(0), kind="linear", l2=l2)
    return float(r_squared(probe.scores(features[half:]), answers[half:].double().unsqueeze(0))[0])


__all__ = ["MatchedSets", "diameters", "matched_sets", "statistics_r2", "train_on_graphs"]
