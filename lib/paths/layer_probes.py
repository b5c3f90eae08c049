"""What each layer knows: linear probes on every residual stream of a path transformer (chapter 7).

Five families of yes/no facts, one probe per (residual index, k):

* at the target token, on graphs whose target is reachable: "d(1, t) <= k". Only reachable
  targets: otherwise, for k beyond most distances, the "no" class is almost all unreachable
  targets and the probe reads reachability instead of distance;
* at the target token, on all graphs: "t is reachable", one probe per residual index, scored
  at each k on the graphs whose target is at distance exactly k or unreachable ("can this
  layer tell a target k steps away from an unreachable one?");
* the same on the graphs where vertex 1 and t both have an edge: on all graphs, the rule "both
  have an edge" alone tells most reachable targets from unreachable ones;
* at every edge token whose nearer endpoint is reachable from vertex 1: "that endpoint is
  within k steps of vertex 1"; the same from t, at edges reachable from t. These are the facts a
  breadth-first search from either end would hold.

Each probe is trained on fresh graphs and scored on held-out ones, threshold-free (ROC AUC) and
by balanced accuracy at a cut-off tuned on the training graphs (`lib.paths.probes`), overall
and within bins of the graphs' edge count (`edge_count_bins`), so that the graph's size cannot
carry the fact. Three controls: the same probes trained on shuffled labels (what a linear
read-out finds by chance), the same probes on a randomly initialised model of the same shape
(what the architecture gives for free), and the rival probe of `statistics_probes`, fitted and
scored the same way on statistics of the graph that need no search (edge count, degrees, ...):
what a layer reads beyond them is what it computed. `read_radii` turns scores into the largest
k each layer has settled under each criterion, and states a radius only where they agree.
A ridge probe of the distance at the target token (reachable graphs) gives, with the
"d(1, t) <= k" probes, the subspace that chapter 7 patches.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.paths.activations import Activations, capture
from lib.paths.causal import shortcut_values
from lib.paths.graph_set import GraphSet
from lib.paths.model import PathTransformer
from lib.paths.probes import LogisticScores, fit_probes, r_squared, score_logistic
from lib.paths.token_graphs import UNREACHABLE, TokenGraphs

DISTANCE = "d(1, t) <= k (reachable targets)"
REACHABLE = "t reachable (d(1, t) = k against unreachable)"
REACHABLE_WITH_EDGES = "t reachable, 1 and t both with an edge (d(1, t) = k against unreachable)"
FROM_SOURCE = "edge within k of vertex 1 (reachable edges)"
FROM_TARGET = "edge within k of t (reachable edges)"
#: The probed facts, in the order of the chapter's figures.
FACTS = (DISTANCE, REACHABLE, REACHABLE_WITH_EDGES, FROM_SOURCE, FROM_TARGET)
#: The facts read at the target token; the reachability facts among them (one probe, scored per k).
TARGET_FACTS = (DISTANCE, REACHABLE, REACHABLE_WITH_EDGES)
REACHABILITY_FACTS = (REACHABLE, REACHABLE_WITH_EDGES)
#: Fewest examples of each class (in the training and in the held-out set) for a k to be scored.
MIN_CLASS_COUNT = 20
#: How much higher a layer's held-out AUC must be than the statistics probe's for the layer to
#: count as reading a fact beyond what those statistics give.
STATISTICS_MARGIN = 0.02
#: The rival probe's features: statistics of the graph that need no search (the search-free ones
#: of `lib.paths.causal.SHORTCUTS`, and two more); at edge tokens also the edge's endpoint degrees.
#: The sizes of the components of 1 and t and the edges on shortest paths are left out: they are
#: outputs of a search (each tells an unreachable target apart by itself).
GRAPH_STATISTICS = ("edges in the graph", "duplicate edges", "vertices with an edge", "degree of vertex 1",
                    "degree of t", "edge (1, t) present", "1 and t both have an edge")
EDGE_STATISTICS = ("smaller endpoint degree", "larger endpoint degree")


@dataclass(frozen=True)
class Examples:
    """The probed tokens of one fact: graph row, token position and distance value of each."""

    rows: torch.Tensor
    positions: torch.Tensor
    values: torch.Tensor


def examples(graphs: TokenGraphs, fact: str) -> Examples:
    """The tokens a fact is probed at, in batch order: the target token of every graph (DISTANCE:
    reachable targets only; REACHABLE_WITH_EDGES: graphs where 1 and t both have an edge) with
    d(1, t), or each edge token reachable from vertex 1 (t) with its distance from it."""
    if fact in TARGET_FACTS:
        values = graphs.distance
        keep = {DISTANCE: values < UNREACHABLE, REACHABLE: torch.ones_like(values, dtype=torch.bool),
                REACHABLE_WITH_EDGES: both_have_edges(graphs)}[fact]
        rows = keep.nonzero(as_tuple=True)[0]
        return Examples(rows, torch.full_like(rows, graphs.low.shape[1]), values[rows])
    by_edge = graphs.edge_from_source if fact == FROM_SOURCE else graphs.edge_from_target
    rows, positions = (graphs.is_edge & (by_edge < UNREACHABLE)).nonzero(as_tuple=True)
    return Examples(rows, positions, by_edge[rows, positions])


def both_have_edges(graphs: TokenGraphs) -> torch.Tensor:
    """(B,) vertex 1 and the target t each have at least one edge."""
    return (graphs.degree(torch.ones_like(graphs.target)) > 0) & (graphs.degree(graphs.target) > 0)


def fact_values(graphs: TokenGraphs, fact: str) -> torch.Tensor:
    """The distance each fact reads, one per probed token (see `examples`)."""
    return examples(graphs, fact).values


def token_features(activations: Activations, graphs: TokenGraphs, fact: str) -> torch.Tensor:
    """(L + 1, N, d) the residual streams at the tokens that `examples` returns, in its order."""
    chosen = examples(graphs, fact)
    return activations.residual[:, chosen.rows, chosen.positions]


def statistic_features(graphs: TokenGraphs, fact: str) -> torch.Tensor:
    """(N, s) the rival probe's features at the tokens of `fact`: GRAPH_STATISTICS of the token's
    graph, and at edge tokens also EDGE_STATISTICS."""
    shortcuts = shortcut_values(graphs)
    one_t = (graphs.is_edge & (graphs.low == 1) & (graphs.high == graphs.target.unsqueeze(1).int())).any(dim=1)
    extra = {"edge (1, t) present": one_t, "1 and t both have an edge": both_have_edges(graphs)}
    table = torch.stack([(shortcuts | extra)[name].double() for name in GRAPH_STATISTICS], dim=1)
    chosen = examples(graphs, fact)
    features = table[chosen.rows]
    if fact in TARGET_FACTS:
        return features
    degrees = torch.stack([graphs.degree(graphs.low[:, slot]) for slot in range(graphs.low.shape[1])], dim=1)
    degrees_high = torch.stack([graphs.degree(graphs.high[:, slot]) for slot in range(graphs.low.shape[1])], dim=1)
    low, high = degrees[chosen.rows, chosen.positions], degrees_high[chosen.rows, chosen.positions]
    return torch.cat([features, torch.stack([torch.minimum(low, high), torch.maximum(low, high)], 1).double()], 1)


def edge_count_bins(graphs: TokenGraphs, count: int = 3) -> tuple[float, ...]:
    """The `count - 1` inner boundaries of `count` quantile bins of the graphs' edge counts
    (terciles by default): bin b holds the graphs with boundary[b - 1] < edges <= boundary[b]."""
    levels = torch.linspace(0, 1, count + 1, dtype=torch.float64)[1:-1]
    return tuple(torch.quantile(graphs.edge_count.double(), levels).tolist())


def bin_of(graphs: TokenGraphs, boundaries: tuple[float, ...]) -> torch.Tensor:
    """(B,) the edge-count bin of each graph (see `edge_count_bins`)."""
    return torch.bucketize(graphs.edge_count.double(), torch.tensor(boundaries, dtype=torch.float64))


def usable_ks(train: GraphSet, test: GraphSet, fact: str) -> tuple[int, ...]:
    """Thresholds k at which both answers occur at least MIN_CLASS_COUNT times in both sets.

    For the threshold facts k runs below the largest distance (at it, every reachable token is a
    "yes"); for the reachability facts, over the distances k with enough targets at exactly k
    (and enough unreachable ones)."""
    values = [fact_values(g.graphs, fact) for g in (train, test)]
    if fact in REACHABILITY_FACTS:
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


def radius_of(scores: torch.Tensor, ks: tuple[int, ...], threshold: float) -> list[int]:
    """Per row of an (indices, len(ks)) score grid, the largest k of an unbroken run of
    scores >= threshold from the first k (NaN breaks the run; one less than the first k when
    the first fails)."""
    radii = []
    for row in scores.tolist():
        radius = ks[0] - 1 if ks else 0
        for k, score in zip(ks, row):
            if not score >= threshold:
                break
            radius = k
        radii.append(radius)
    return radii


@dataclass(frozen=True)
class ProbeGrid:
    """Held-out scores of one fact's probes at every residual index and k.

    Attributes:
        fact: one of FACTS.
        ks: the thresholds k (for the reachability facts: the distances k scored at).
        scores: (L + 1, len(ks)) AUC, tuned and untuned balanced accuracy of the probes trained
            on the true labels.
        shuffled: the same for probes trained on shuffled labels (the control), or None.
        directions: (L + 1, len(ks), d) unit direction of each true-label probe (reachability
            facts: one probe per index, (L + 1, 1, d)).
        by_bin: per edge-count bin, the scores of the same probes on that bin's held-out graphs
            (cut-offs tuned on that bin's training graphs); a k with fewer than MIN_CLASS_COUNT
            of either answer in the bin scores NaN.
    """

    fact: str
    ks: tuple[int, ...]
    scores: LogisticScores
    shuffled: LogisticScores | None
    directions: torch.Tensor
    by_bin: tuple[LogisticScores, ...] = ()


@dataclass(frozen=True)
class ReadCriteria:
    """When a probe counts as reading its fact at k: held-out balanced accuracy at the tuned
    cut-off >= `balanced_accuracy`, held-out AUC >= `auc`, and (against a rival) an AUC at least
    `margin` above the statistics probe's (`beats_rival`)."""

    balanced_accuracy: float
    auc: float
    margin: float = STATISTICS_MARGIN


def beats_rival(auc: torch.Tensor, rival_auc: torch.Tensor, margin: float) -> torch.Tensor:
    """Where a layer's AUC (rows, len(ks)) reads more than the statistics probe's (1, len(ks)):
    at least `margin` higher, or, where the rival leaves less than `margin` below 1 (it reads
    the fact by itself, as "the edge (1, t) is present" reads d(1, t) <= 1), at least as high.
    NaN scores never beat."""
    needed = torch.where(rival_auc + margin <= 1, rival_auc + margin, rival_auc)
    return auc >= needed - 1e-12


def read_radii(scores: LogisticScores, ks: tuple[int, ...], criteria: ReadCriteria,
               rival: LogisticScores | None = None) -> dict[str, list]:
    """Per residual index (the rows of `scores`), the radius under each criterion: "tuned"
    (balanced accuracy at the tuned cut-off), "auc", "untuned" (balanced accuracy at logit 0,
    for comparison only), "beyond_statistics" (`beats_rival` against the rival's (1, len(ks))
    scores); "disputed" (tuned and AUC radii differ) and "stated": where they agree, that radius
    capped by "beyond_statistics" (without a rival, not capped); None where disputed."""
    radii = {"tuned": radius_of(scores.tuned, ks, criteria.balanced_accuracy),
             "auc": radius_of(scores.auc, ks, criteria.auc),
             "untuned": radius_of(scores.untuned, ks, criteria.balanced_accuracy)}
    beyond = None if rival is None else radius_of(
        beats_rival(scores.auc, rival.auc, criteria.margin).double(), ks, 1.0)
    radii["disputed"] = [tuned != auc for tuned, auc in zip(radii["tuned"], radii["auc"])]
    radii["stated"] = [None if disputed else (tuned if beyond is None else min(tuned, beyond[index]))
                       for index, (disputed, tuned) in enumerate(zip(radii["disputed"], radii["tuned"]))]
    if beyond is not None:
        radii["beyond_statistics"] = beyond
    return radii


def bin_radii(grid: ProbeGrid, rival: ProbeGrid, criteria: ReadCriteria) -> list[dict[str, list]]:
    """`read_radii` within each edge-count bin of `grid` (against the rival's scores in the same
    bin), over the ks scored in that bin (both answers at least MIN_CLASS_COUNT times), which
    each entry lists as "ks"; without any, every radius is None."""
    out = []
    for scores, rival_scores in zip(grid.by_bin, rival.by_bin):
        columns = [j for j in range(len(grid.ks)) if not torch.isnan(scores.auc[:, j]).all()]
        ks = tuple(grid.ks[j] for j in columns)
        if not ks:
            rows = len(scores.auc)
            out.append({"ks": [], **{name: [None] * rows for name in ("tuned", "auc", "untuned", "stated",
                                                                      "beyond_statistics")},
                        "disputed": [False] * rows})
            continue
        pick = lambda s: LogisticScores(s.auc[:, columns], s.tuned[:, columns], s.untuned[:, columns])  # noqa: E731
        out.append({"ks": list(ks), **read_radii(pick(scores), ks, criteria, pick(rival_scores))})
    return out


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


@dataclass(frozen=True)
class _Split:
    """One fact's examples in one set of graphs: features (I, N, d), distance values, bins."""

    features: torch.Tensor
    values: torch.Tensor
    bins: torch.Tensor


def _labels(fact: str, ks: tuple[int, ...], values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(len(ks), N) 0/1 answers and (len(ks), N) which examples count, of each k's scoring."""
    if fact in REACHABILITY_FACTS:
        reachable = (values < UNREACHABLE).double().expand(len(ks), -1)
        scored = [(values == k) | (values >= UNREACHABLE) for k in ks]
        return reachable, torch.stack(scored) if scored else torch.zeros_like(reachable, dtype=torch.bool)
    labels = (values.unsqueeze(0) <= torch.tensor(ks, dtype=values.dtype).view(-1, 1)).double()
    return labels, torch.ones_like(labels, dtype=torch.bool)


def _score(fact: str, ks: tuple[int, ...], train_logits: torch.Tensor, train: _Split, test_logits: torch.Tensor,
           test: _Split, in_bin: int | None = None) -> LogisticScores:
    """(len(ks),) scores of one residual index's probes (logits (P, N)), on all examples or on
    those of one edge-count bin; NaN where either answer has fewer than MIN_CLASS_COUNT."""
    columns = [_labels(fact, ks, split.values) for split in (train, test)]
    if in_bin is not None:
        columns = [(labels, rows & (split.bins == in_bin)) for (labels, rows), split in zip(columns, (train, test))]
    rows = []
    for column in range(len(ks)):
        probe = 0 if fact in REACHABILITY_FACTS else column
        (train_y, train_rows), (test_y, test_rows) = ((y[column], keep[column]) for y, keep in columns)
        counts = [int(y[keep].sum()) for y, keep in ((train_y, train_rows), (test_y, test_rows))]
        sizes = [int(train_rows.sum()), int(test_rows.sum())]
        if min(min(counts), min(size - count for size, count in zip(sizes, counts))) < MIN_CLASS_COUNT:
            nan = torch.full((1,), torch.nan, dtype=torch.float64)
            rows.append(LogisticScores(nan, nan, nan))
            continue
        rows.append(score_logistic(train_logits[probe:probe + 1, train_rows], train_y[train_rows].unsqueeze(0),
                                   test_logits[probe:probe + 1, test_rows], test_y[test_rows].unsqueeze(0)))
    if not rows:
        empty = torch.empty(0, dtype=torch.float64)
        return LogisticScores(empty, empty, empty)
    return LogisticScores(*(torch.cat([getattr(row, name) for row in rows]) for name in ("auc", "tuned", "untuned")))


def _grid(fact: str, ks: tuple[int, ...], train: _Split, test: _Split, l2: float, bins: int,
          generator: torch.Generator | None) -> ProbeGrid:
    """Fit one fact's probes at every residual index of `train` and score them on `test`."""
    fit_labels = (train.values < UNREACHABLE).double().unsqueeze(0) if fact in REACHABILITY_FACTS \
        else _labels(fact, ks, train.values)[0]
    scores, shuffled, directions, by_bin = [], [], [], []
    for index in range(len(train.features)):
        probes = fit_probes(train.features[index], fit_labels, kind="logistic", l2=l2)
        logits = probes.scores(train.features[index]), probes.scores(test.features[index])
        scores.append(_score(fact, ks, logits[0], train, logits[1], test))
        by_bin.append([_score(fact, ks, logits[0], train, logits[1], test, in_bin=b) for b in range(bins)])
        directions.append(probes.direction())
        if generator is not None:
            order = torch.randperm(fit_labels.shape[1], generator=generator)
            control = fit_probes(train.features[index], fit_labels[:, order], kind="logistic", l2=l2)
            shuffled.append(_score(fact, ks, control.scores(train.features[index]), train,
                                   control.scores(test.features[index]), test))
    return ProbeGrid(fact, ks, LogisticScores.stack(scores), LogisticScores.stack(shuffled) if shuffled else None,
                     torch.stack(directions),
                     tuple(LogisticScores.stack([row[b] for row in by_bin]) for b in range(bins)))


def _split(graphs: GraphSet, fact: str, features: torch.Tensor, boundaries: tuple[float, ...]) -> _Split:
    return _Split(features, fact_values(graphs.graphs, fact), bin_of(graphs.graphs, boundaries)[
        examples(graphs.graphs, fact).rows])


def probe_model(model: PathTransformer, train: GraphSet, test: GraphSet, *, l2: float,
                ks: dict[str, tuple[int, ...]], bins: tuple[float, ...] = (), seed: int | None = None) -> ModelProbes:
    """Fit and score every probe of `model` (facts at the thresholds `ks`, see `usable_ks`; per
    edge-count bin with the inner boundaries `bins`, see `edge_count_bins`); with a `seed`, also
    the shuffled-label control (the seed draws the shuffles)."""
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    train_acts, test_acts = capture(model, train.tokens), capture(model, test.tokens)
    grids = {}
    for fact in FACTS:
        splits = [_split(graphs, fact, token_features(acts, graphs.graphs, fact), bins)
                  for graphs, acts in ((train, train_acts), (test, test_acts))]
        grids[fact] = _grid(fact, ks[fact], *splits, l2, len(bins) + 1 if bins else 0, generator)
    train_x, train_d = token_features(train_acts, train.graphs, DISTANCE), fact_values(train.graphs, DISTANCE)
    test_x, test_d = token_features(test_acts, test.graphs, DISTANCE), fact_values(test.graphs, DISTANCE)
    r2, directions = [], []
    for index in range(len(train_x)):
        ridge = fit_probes(train_x[index], train_d.double().unsqueeze(0), kind="linear", l2=l2)
        r2.append(r_squared(ridge.scores(test_x[index]), test_d.double().unsqueeze(0))[0])
        directions.append(ridge.direction()[0])
    return ModelProbes(len(train_x) - 1, grids, torch.stack(r2), torch.stack(directions))


def statistics_probes(train: GraphSet, test: GraphSet, *, l2: float, ks: dict[str, tuple[int, ...]],
                      bins: tuple[float, ...] = ()) -> dict[str, ProbeGrid]:
    """The rival of every fact: a logistic probe on `statistic_features` alone (one "index"),
    fitted, tuned and scored exactly as the layers' probes, overall and per edge-count bin."""
    grids = {}
    for fact in FACTS:
        splits = [_split(graphs, fact, statistic_features(graphs.graphs, fact).unsqueeze(0), bins)
                  for graphs in (train, test)]
        grids[fact] = _grid(fact, ks[fact], *splits, l2, len(bins) + 1 if bins else 0, None)
    return grids


__all__ = ["DISTANCE", "EDGE_STATISTICS", "FACTS", "FROM_SOURCE", "FROM_TARGET", "GRAPH_STATISTICS",
           "MIN_CLASS_COUNT", "REACHABILITY_FACTS", "REACHABLE", "REACHABLE_WITH_EDGES", "STATISTICS_MARGIN",
           "TARGET_FACTS", "Examples", "ModelProbes", "ProbeGrid", "ReadCriteria", "beats_rival", "bin_of", "bin_radii",
           "both_have_edges",
           "doubling_radii", "edge_count_bins", "examples", "fact_values", "one_hop_radii", "probe_model",
           "radius_of", "read_radii", "statistic_features", "statistics_probes", "token_features", "usable_ks"]
