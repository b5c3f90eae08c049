"""What each layer knows: linear probes on every residual stream of a path transformer (chapter 7).

Three families of yes/no facts, one probe per (residual index, k):

* at the target token: "d(1, t) <= k", the question the model answers;
* at every edge token: "an endpoint is within k steps of vertex 1" and "... within k steps of
  t", the facts a breadth-first search from either end would hold.

Each probe is trained on fresh graphs and scored (balanced accuracy) on held-out ones; the
same probe trained on shuffled labels is the control for what a linear read-out finds by
chance, and the same probes on a randomly initialised model of the same shape (the notebook
runs `probe_model` on one) the control for what the architecture gives for free. A ridge probe
of the label at the target token gives the direction that chapter 7 patches. `reach_radius`
turns a grid into the largest k each layer has settled.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.chapters.ch7 import GraphSet
from lib.paths.activations import Activations, capture
from lib.paths.model import PathTransformer
from lib.paths.probes import balanced_accuracy, fit_probes, r_squared
from lib.paths.token_graphs import UNREACHABLE, TokenGraphs

#: The probed facts, in the order of the chapter's figures.
FACTS = ("d(1, t) <= k at the target token", "edge within k of vertex 1", "edge within k of t")
#: Fewest held-out examples of each class for a fact to be probed at some k.
MIN_CLASS_COUNT = 20


def fact_values(graphs: TokenGraphs, fact: str) -> torch.Tensor:
    """The number each fact thresholds, one per probed token: d(1, t) per graph, or each edge's
    distance from vertex 1 or from t (edge tokens in batch order)."""
    if fact == FACTS[0]:
        return graphs.distance
    by_edge = graphs.edge_from_source if fact == FACTS[1] else graphs.edge_from_target
    return by_edge[graphs.is_edge]


def token_features(activations: Activations, graphs: TokenGraphs, fact: str) -> torch.Tensor:
    """(L + 1, N, d) the residual streams at the tokens that carry `fact`."""
    if fact == FACTS[0]:
        return activations.residual[:, :, -1]
    return activations.residual[:, :, :-1][:, graphs.is_edge]


def usable_ks(train: GraphSet, test: GraphSet, fact: str) -> tuple[int, ...]:
    """Thresholds k at which both answers occur at least MIN_CLASS_COUNT times in both sets.

    k stops at the largest finite distance: beyond it "within k" only separates reachable from
    unreachable, the same fact at every k."""
    values = [fact_values(g.graphs, fact) for g in (train, test)]
    start = 1 if fact == FACTS[0] else 0
    largest = max(int(v[v < UNREACHABLE].max()) for v in values)
    return tuple(k for k in range(start, largest + 1)
                 if all(MIN_CLASS_COUNT <= int((v <= k).sum()) <= len(v) - MIN_CLASS_COUNT for v in values))


def one_hop_radii(n_layers: int, largest: int) -> list[int]:
    """Radius after each residual index 0..L of a search that advances one hop per layer."""
    return [min(layer, largest) for layer in range(n_layers + 1)]


def doubling_radii(n_layers: int, largest: int) -> list[int]:
    """Radius after each residual index of a search that doubles it every layer (path doubling:
    2^l after layer l, nothing at the embedding), capped at `largest`."""
    return [0] + [min(2 ** layer, largest) for layer in range(1, n_layers + 1)]


@dataclass(frozen=True)
class ProbeGrid:
    """Held-out balanced accuracy of one fact's probes at every residual index and threshold.

    Attributes:
        fact: one of FACTS.
        ks: the thresholds k.
        accuracy: (L + 1, len(ks)) probes trained on the true labels.
        shuffled: (L + 1, len(ks)) the same probes trained on shuffled labels (the control), or
            None where the control was not run.
        directions: (L + 1, len(ks), d) unit direction of each true-label probe.
    """

    fact: str
    ks: tuple[int, ...]
    accuracy: torch.Tensor
    shuffled: torch.Tensor | None
    directions: torch.Tensor

    def reach_radius(self, threshold: float) -> list[int]:
        """Per residual index, the largest k such that every threshold up to k is read at
        `threshold` or better (one less than the first k when none is)."""
        radii = []
        for row in self.accuracy.tolist():
            radius = self.ks[0] - 1
            for k, score in zip(self.ks, row):
                if not score >= threshold:
                    break
                radius = k
            radii.append(radius)
        return radii


@dataclass(frozen=True)
class ModelProbes:
    """Every probe of one model.

    Attributes:
        n_layers: the model's depth L.
        grids: fact -> ProbeGrid.
        distance_r2: (L + 1,) held-out R^2 of a ridge probe of the label at the target token.
        distance_directions: (L + 1, d) the unit direction of that probe in each residual stream.
    """

    n_layers: int
    grids: dict[str, ProbeGrid]
    distance_r2: torch.Tensor
    distance_directions: torch.Tensor

    def distance_subspace(self) -> torch.Tensor:
        """(L + 1, m, d) orthonormal rows spanning, at each residual index, the ridge probe's
        direction and those of every "d(1, t) <= k" probe: where the target token's stream
        holds what the probes read about the distance (chapter 7 patches it)."""
        spans = torch.cat([self.distance_directions.unsqueeze(1), self.grids[FACTS[0]].directions], dim=1)
        return torch.linalg.qr(spans.transpose(1, 2)).Q.transpose(1, 2)


def _grid(fact: str, ks: tuple[int, ...], train: tuple[Activations, GraphSet], test: tuple[Activations, GraphSet],
          l2: float, generator: torch.Generator | None) -> ProbeGrid:
    (train_acts, train_set), (test_acts, test_set) = train, test
    thresholds = torch.tensor(ks).unsqueeze(1)
    train_labels = (fact_values(train_set.graphs, fact).unsqueeze(0) <= thresholds).double()
    test_labels = (fact_values(test_set.graphs, fact).unsqueeze(0) <= thresholds).double()
    train_x = token_features(train_acts, train_set.graphs, fact)
    test_x = token_features(test_acts, test_set.graphs, fact)
    accuracy, shuffled, directions = [], [], []
    for index in range(len(train_x)):
        probes = fit_probes(train_x[index], train_labels, kind="logistic", l2=l2)
        accuracy.append(balanced_accuracy(probes.scores(test_x[index]), test_labels))
        directions.append(probes.direction())
        if generator is not None:
            order = torch.randperm(train_labels.shape[1], generator=generator)
            control = fit_probes(train_x[index], train_labels[:, order], kind="logistic", l2=l2)
            shuffled.append(balanced_accuracy(control.scores(test_x[index]), test_labels))
    return ProbeGrid(fact, ks, torch.stack(accuracy), torch.stack(shuffled) if shuffled else None,
                     torch.stack(directions))


def probe_model(model: PathTransformer, train: GraphSet, test: GraphSet, *, l2: float,
                ks: dict[str, tuple[int, ...]], seed: int | None = None) -> ModelProbes:
    """Fit and score every probe of `model` (facts at the thresholds `ks`, see `usable_ks`);
    with a `seed`, also the shuffled-label control (the seed draws the shuffles)."""
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    train_acts, test_acts = capture(model, train.tokens), capture(model, test.tokens)
    grids = {fact: _grid(fact, ks[fact], (train_acts, train), (test_acts, test), l2, generator)
             for fact in FACTS}
    r2, directions = [], []
    for index in range(len(train_acts.residual)):
        ridge = fit_probes(train_acts.residual[index, :, -1], train.labels.unsqueeze(0), kind="linear", l2=l2)
        r2.append(r_squared(ridge.scores(test_acts.residual[index, :, -1]), test.labels.unsqueeze(0))[0])
        directions.append(ridge.direction()[0])
    return ModelProbes(len(train_acts.residual) - 1, grids, torch.stack(r2), torch.stack(directions))


__all__ = ["FACTS", "MIN_CLASS_COUNT", "ModelProbes", "ProbeGrid", "doubling_radii", "fact_values",
           "one_hop_radii", "probe_model", "token_features", "usable_ks"]
