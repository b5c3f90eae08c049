"""What each layer knows: linear probes on every residual stream of a path transformer (chapter 7).

Four families of yes/no facts, one probe per (residual index, k):

* at the target token, on graphs whose target is reachable: "d(1, t) <= k". Only reachable
  targets: otherwise, for k beyond most distances, the "no" class is almost all unreachable
  targets and the probe reads reachability instead of distance;
* at the target token, on all graphs: "t is reachable", one probe per residual index, scored
  at each k on the graphs whose target is at distance exactly k or unreachable ("can this
  layer tell a target k steps away from an unreachable one?");
* at every edge token whose nearer endpoint is reachable from vertex 1: "that endpoint is
  within k steps of vertex 1"; the same from t, at edges reachable from t. These are the facts a
  breadth-first search from either end would hold.

Each probe is trained on fresh graphs and scored (balanced accuracy) on held-out ones; the
same probe trained on shuffled labels is the control for what a linear read-out finds by
chance, and the same probes on a randomly initialised model of the same shape (chapter 7 runs
`probe_model` on one) the control for what the architecture gives for free. A ridge probe of
the distance at the target token (reachable graphs) gives, with the "d(1, t) <= k" probes, the
subspace that chapter 7 patches. `ProbeGrid.reach_radius` turns a grid into the largest k each
layer has settled.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.paths.activations import Activations, capture
from lib.paths.graph_set import GraphSet
from lib.paths.model import PathTransformer
from lib.paths.probes import balanced_accuracy, fit_probes, r_squared
from lib.paths.token_graphs import UNREACHABLE, TokenGraphs

DISTANCE = "d(1, t) <= k (reachable targets)"
REACHABLE = "t reachable (d(1, t) = k against unreachable)"
FROM_SOURCE = "edge within k of vertex 1 (reachable edges)"
FROM_TARGET = "edge within k of t (reachable edges)"
#: The probed facts, in the order of the chapter's figures.
FACTS = (DISTANCE, REACHABLE, FROM_SOURCE, FROM_TARGET)
#: Fewest examples of each class (in the training and in the held-out set) for a k to be probed.
MIN_CLASS_COUNT = 20


def fact_values(graphs: TokenGraphs, fact: str) -> torch.Tensor:
    """The distance each fact reads, one per probed token: d(1, t) per graph (reachable graphs
    only, except for REACHABLE, which keeps every graph), or each reachable edge's distance from
    vertex 1 or from t (edge tokens in batch order)."""
    if fact in (DISTANCE, REACHABLE):
        values = graphs.distance
    else:
        values = (graphs.edge_from_source if fact == FROM_SOURCE else graphs.edge_from_target)[graphs.is_edge]
    return values if fact == REACHABLE else values[values < UNREACHABLE]


def token_features(activations: Activations, graphs: TokenGraphs, fact: str) -> torch.Tensor:
    """(L + 1, N, d) the residual streams at the tokens that `fact_values` returns, in its order."""
    if fact in (DISTANCE, REACHABLE):
        features = activations.residual[:, :, -1]
        return features if fact == REACHABLE else features[:, graphs.distance < UNREACHABLE]
    values = (graphs.edge_from_source if fact == FROM_SOURCE else graphs.edge_from_target)[graphs.is_edge]
    return activations.residual[:, :, :-1][:, graphs.is_edge][:, values < UNREACHABLE]


def usable_ks(train: GraphSet, test: GraphSet, fact: str) -> tuple[int, ...]:
    """Thresholds k at which both answers occur at least MIN_CLASS_COUNT times in both sets.

    For the threshold facts k runs below the largest distance (at it, every reachable token is a
    "yes"); for REACHABLE, over the distances k with enough targets at exactly k (and enough
    unreachable ones)."""
    values = [fact_values(g.graphs, fact) for g in (train, test)]
    if fact == REACHABLE:
        largest = max(int(v[v < UNREACHABLE].max()) for v in values)
        if not all(int((v >= UNREACHABLE).sum()) >= MIN_CLASS_COUNT for v in values):
            return ()
        return tuple(k for k in range(1, largest + 1)
                     if all(int((v == k).sum()) >= MIN_CLASS_COUNT for v in values))
    start = 1 if fact == DISTANCE else 0
    largest = max(int(v.max()) for v in values)
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
    """Held-out balanced accuracy of one fact's probes at every residual index and k.

    Attributes:
        fact: one of FACTS.
        ks: the thresholds k (for REACHABLE: the distances k the probe is scored at).
        accuracy: (L + 1, len(ks)) probes trained on the true labels.
        shuffled: (L + 1, len(ks)) the same probes trained on shuffled labels (the control), or
            None where the control was not run.
        directions: (L + 1, len(ks), d) unit direction of each true-label probe (REACHABLE: one
            probe per index, (L + 1, 1, d)).
    """

    fact: str
    ks: tuple[int, ...]
    accuracy: torch.Tensor
    shuffled: torch.Tensor | None
    directions: torch.Tensor

    def reach_radius(self, threshold: float) -> list[int]:
        """Per residual index, the largest k such that every k up to it is read at `threshold`
        or better (one less than the first k when none is)."""
        return radius_of(self.accuracy, self.ks, threshold)

    def shuffled_radius(self, threshold: float) -> list[int] | None:
        """`reach_radius` of the shuffled-label control (None without the control)."""
        return None if self.shuffled is None else radius_of(self.shuffled, self.ks, threshold)


def radius_of(accuracy: torch.Tensor, ks: tuple[int, ...], threshold: float) -> list[int]:
    """Per row of an (indices, len(ks)) accuracy grid, the largest k of an unbroken run of
    scores >= threshold from the first k (NaN breaks the run)."""
    radii = []
    for row in accuracy.tolist():
        radius = ks[0] - 1 if ks else 0
        for k, score in zip(ks, row):
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
        distance_r2: (L + 1,) held-out R^2 of a ridge probe of d(1, t) at the target token
            (reachable graphs).
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
        spans = torch.cat([self.distance_directions.unsqueeze(1), self.grids[DISTANCE].directions], dim=1)
        return torch.linalg.qr(spans.transpose(1, 2)).Q.transpose(1, 2)


def _threshold_grid(fact: str, ks: tuple[int, ...], train_x: torch.Tensor, train_v: torch.Tensor,
                    test_x: torch.Tensor, test_v: torch.Tensor, l2: float,
                    generator: torch.Generator | None) -> ProbeGrid:
    thresholds = torch.tensor(ks).unsqueeze(1)
    train_labels = (train_v.unsqueeze(0) <= thresholds).double()
    test_labels = (test_v.unsqueeze(0) <= thresholds).double()
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


def _scores_by_distance(scores: torch.Tensor, test_v: torch.Tensor, ks: tuple[int, ...]) -> torch.Tensor:
    """(len(ks),) balanced accuracy of reachability scores (1, N) on the targets at distance k
    or unreachable, for each k."""
    labels = (test_v < UNREACHABLE).double().unsqueeze(0)
    out = []
    for k in ks:
        rows = (test_v == k) | (test_v >= UNREACHABLE)
        out.append(balanced_accuracy(scores[:, rows], labels[:, rows])[0])
    return torch.stack(out) if out else torch.empty(0, dtype=torch.float64)


def _reachability_grid(ks: tuple[int, ...], train_x: torch.Tensor, train_v: torch.Tensor, test_x: torch.Tensor,
                       test_v: torch.Tensor, l2: float, generator: torch.Generator | None) -> ProbeGrid:
    train_labels = (train_v < UNREACHABLE).double().unsqueeze(0)
    accuracy, shuffled, directions = [], [], []
    for index in range(len(train_x)):
        probe = fit_probes(train_x[index], train_labels, kind="logistic", l2=l2)
        accuracy.append(_scores_by_distance(probe.scores(test_x[index]), test_v, ks))
        directions.append(probe.direction())
        if generator is not None:
            order = torch.randperm(train_labels.shape[1], generator=generator)
            control = fit_probes(train_x[index], train_labels[:, order], kind="logistic", l2=l2)
            shuffled.append(_scores_by_distance(control.scores(test_x[index]), test_v, ks))
    return ProbeGrid(REACHABLE, ks, torch.stack(accuracy), torch.stack(shuffled) if shuffled else None,
                     torch.stack(directions))


def probe_model(model: PathTransformer, train: GraphSet, test: GraphSet, *, l2: float,
                ks: dict[str, tuple[int, ...]], seed: int | None = None) -> ModelProbes:
    """Fit and score every probe of `model` (facts at the thresholds `ks`, see `usable_ks`);
    with a `seed`, also the shuffled-label control (the seed draws the shuffles)."""
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    train_acts, test_acts = capture(model, train.tokens), capture(model, test.tokens)
    grids = {}
    for fact in FACTS:
        data = (token_features(train_acts, train.graphs, fact), fact_values(train.graphs, fact),
                token_features(test_acts, test.graphs, fact), fact_values(test.graphs, fact))
        grids[fact] = (_reachability_grid(ks[fact], *data, l2, generator) if fact == REACHABLE
                       else _threshold_grid(fact, ks[fact], *data, l2, generator))
    train_x, train_d = token_features(train_acts, train.graphs, DISTANCE), fact_values(train.graphs, DISTANCE)
    test_x, test_d = token_features(test_acts, test.graphs, DISTANCE), fact_values(test.graphs, DISTANCE)
    r2, directions = [], []
    for index in range(len(train_x)):
        ridge = fit_probes(train_x[index], train_d.double().unsqueeze(0), kind="linear", l2=l2)
        r2.append(r_squared(ridge.scores(test_x[index]), test_d.double().unsqueeze(0))[0])
        directions.append(ridge.direction()[0])
    return ModelProbes(len(train_x) - 1, grids, torch.stack(r2), torch.stack(directions))


__all__ = ["DISTANCE", "FACTS", "FROM_SOURCE", "FROM_TARGET", "MIN_CLASS_COUNT", "REACHABLE", "ModelProbes",
           "ProbeGrid", "doubling_radii", "fact_values", "one_hop_radii", "probe_model", "radius_of",
           "token_features", "usable_ks"]
