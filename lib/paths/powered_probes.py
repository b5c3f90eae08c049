"""Layer probes with the power to decide (chapter 7): the facts of `lib.paths.layer_probes`,
fitted on one probe set, their cut-off tuned on a second and scored on a third, each against the
graph-statistics rival with the standard error of the AUC difference.

For every fact, residual index and threshold k (`powered_ks`: only the k at which each answer
holds in at least `min_graphs` graphs of each of the three sets, see
`lib.paths.stratified_graphs`), a logistic probe (`lib.paths.probes.fit_probes`) is fitted on the
training set; its cut-off is the one that maximises the balanced accuracy on the validation set
(`tuned_cutoffs`), so that no held-out example and no training example sets it; on the held-out
set it is scored by ROC AUC and by balanced accuracy at that cut-off. The rival, a probe of the
same kind on `lib.paths.layer_probes.statistic_features` (statistics of the graph that need no
search), is fitted, tuned and scored the same way on the same tokens, and the difference of the
two AUCs gets its standard error from a paired bootstrap over the held-out graphs
(`lib.book.statistics.auc_difference`, the graph as the cluster, since an edge fact has several
tokens per graph). `powered_radii` states one radius per residual index under one rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.book.statistics import auc_difference
from lib.paths.activations import capture
from lib.paths.graph_set import GraphSet
from lib.paths.layer_probes import (
    DISTANCE, FACTS, REACHABILITY_FACTS, bin_of, examples, fact_values, statistic_features, token_features,
)
from lib.paths.model import PathTransformer
from lib.paths.probes import balanced_accuracy, fit_probes, roc_aucs, tuned_cutoffs
from lib.paths.token_graphs import UNREACHABLE


#: Fewest graphs of each answer, in a bin's validation and held-out graphs, for a k to be scored in
#: an edge-count bin.
MIN_BIN_GRAPHS = 100
#: Most training tokens a probe is fitted on (edge facts have several tokens a graph; a fixed
#: random subset beyond this keeps the fits quick).
MAX_TRAIN_TOKENS = 6000


@dataclass(frozen=True)
class Rule:
    """When a layer reads a fact at k: held-out balanced accuracy (cut-off tuned on the validation
    set) at least `balanced_accuracy`, held-out AUC at least `auc`, and an AUC above the rival's by
    at least `z` standard errors of the difference, unless the rival already reads k perfectly
    (AUC 1: the fact needs no search, as "the edge (1, t) is present" gives d(1, t) <= 1)."""

    balanced_accuracy: float
    auc: float
    z: float


def _answers(fact: str, k: int, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """0/1 answers of one k's scoring and which examples it scores (reachability facts: the
    tokens whose target is exactly k steps away or unreachable)."""
    if fact in REACHABILITY_FACTS:
        return values < UNREACHABLE, (values == k) | (values >= UNREACHABLE)
    return values <= k, torch.ones_like(values, dtype=torch.bool)


def _graphs_with(rows: torch.Tensor, chosen: torch.Tensor) -> int:
    return int(torch.unique(rows[chosen]).numel())


def class_graphs(graphs: GraphSet, fact: str, k: int) -> tuple[int, int]:
    """How many graphs hold a scored "yes" token and how many a scored "no" token of `fact` at `k`."""
    chosen = examples(graphs.graphs, fact)
    yes, scored = _answers(fact, k, chosen.values)
    return _graphs_with(chosen.rows, yes & scored), _graphs_with(chosen.rows, ~yes & scored)


def powered_ks(sets: tuple[GraphSet, ...], fact: str, min_graphs: int) -> tuple[int, ...]:
    """The thresholds k at which both answers of `fact` occur in at least `min_graphs` graphs of
    every set (threshold facts: k from 1 for the distance, 0 for the edge facts; reachability
    facts: the distances k)."""
    values = [fact_values(s.graphs, fact) for s in sets]
    finite = [v[v < UNREACHABLE] for v in values]
    largest = max(int(v.max()) for v in finite if len(v))
    start = 1 if fact in REACHABILITY_FACTS or fact == DISTANCE else 0
    return tuple(k for k in range(start, largest + 1)
                 if all(min(class_graphs(s, fact, k)) >= min_graphs for s in sets))


@dataclass(frozen=True)
class PoweredGrid:
    """One fact's held-out scores at every residual index (rows) and k (columns).

    Attributes:
        auc, balanced: (I, K) ROC AUC and balanced accuracy at the validation-tuned cut-off.
        rival_auc: (K,) the statistics probe's AUC on the same tokens.
        difference, standard_error: (I, K) AUC minus the rival's and its bootstrap standard error
            (NaN where not computed: a cell that fails the AUC or the balanced accuracy anyway,
            or where the rival reads k perfectly).
        rarer_graphs: (K,) held-out graphs of the rarer answer at each k.
    """

    fact: str
    ks: tuple[int, ...]
    auc: torch.Tensor
    balanced: torch.Tensor
    rival_auc: torch.Tensor
    difference: torch.Tensor
    standard_error: torch.Tensor
    rarer_graphs: torch.Tensor

    @property
    def z(self) -> torch.Tensor:
        """(I, K) the AUC difference in standard errors (inf where the error is 0 and it is positive)."""
        return torch.where(self.standard_error > 0, self.difference / self.standard_error,
                           torch.where(self.difference > 0, torch.inf, torch.nan))


@dataclass(frozen=True)
class _Fitted:
    """One fact's probe logits on the validation and test tokens, per index and k: (I, K, N)."""

    validation: torch.Tensor
    test: torch.Tensor


def _fit(fact: str, ks: tuple[int, ...], features: tuple[torch.Tensor, ...], values: torch.Tensor,
         l2: float, max_train: int | None = None) -> _Fitted:
    """Fit the probes of every index on the training features (I, N, d) (at most `max_train` of
    them, a fixed random subset, where there are more: edge facts have several tokens a graph)
    and give their logits on the validation and test features."""
    train, validation, test = features
    if max_train is not None and train.shape[1] > max_train:
        chosen = torch.randperm(train.shape[1], generator=torch.Generator().manual_seed(max_train))[:max_train]
        train, values = train[:, chosen], values[chosen]
    if fact in REACHABILITY_FACTS:
        targets = (values < UNREACHABLE).double().unsqueeze(0)
    else:
        targets = torch.stack([(values <= k).double() for k in ks])
    out = {"validation": [], "test": []}
    for index in range(len(train)):
        probes = fit_probes(train[index], targets, kind="logistic", l2=l2)
        for name, x in (("validation", validation), ("test", test)):
            logits = probes.scores(x[index])
            out[name].append(logits.expand(len(ks), -1) if fact in REACHABILITY_FACTS else logits)
    return _Fitted(torch.stack(out["validation"]), torch.stack(out["test"]))


def _score(fact: str, ks: tuple[int, ...], fitted: _Fitted, values: tuple[torch.Tensor, torch.Tensor],
           keep: tuple[torch.Tensor, torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(I, K) AUC and balanced accuracy on the test tokens (within `keep` masks of the validation
    and test tokens where given), the cut-off tuned on the validation tokens."""
    indices = fitted.test.shape[0]
    auc = torch.full((indices, len(ks)), torch.nan, dtype=torch.float64)
    balanced = auc.clone()
    for column, k in enumerate(ks):
        (val_yes, val_rows), (test_yes, test_rows) = (_answers(fact, k, v) for v in values)
        if keep is not None:
            val_rows, test_rows = val_rows & keep[0], test_rows & keep[1]
        cut = tuned_cutoffs(fitted.validation[:, column, val_rows], val_yes[val_rows].expand(indices, -1))
        test_logits, test_labels = fitted.test[:, column, test_rows], test_yes[test_rows].expand(indices, -1)
        auc[:, column] = roc_aucs(test_logits, test_labels)
        balanced[:, column] = balanced_accuracy(test_logits, test_labels, cut)
    return auc, balanced


@dataclass(frozen=True)
class ProbeSets:
    """The three probe sets (`lib.paths.stratified_graphs`) and, per fact, the ks probed and the
    rival's fitted logits (one "index")."""

    train: GraphSet
    validation: GraphSet
    test: GraphSet
    ks: dict[str, tuple[int, ...]]
    rival: dict[str, _Fitted]
    max_train: int | None = None


def prepare_sets(train: GraphSet, validation: GraphSet, test: GraphSet, *, l2: float, min_graphs: int,
                 max_train: int | None = MAX_TRAIN_TOKENS) -> ProbeSets:
    """The ks of every fact (`powered_ks`) and the rival probes fitted on the training set (on at
    most `max_train` tokens of each fact, as the layers' probes)."""
    sets = (train, validation, test)
    ks = {fact: powered_ks(sets, fact, min_graphs) for fact in FACTS}
    rival = {fact: _fit(fact, ks[fact], tuple(statistic_features(s.graphs, fact).unsqueeze(0) for s in sets),
                        fact_values(train.graphs, fact), l2, max_train) for fact in FACTS if ks[fact]}
    return ProbeSets(train, validation, test, ks, rival, max_train)


def _differences(fact: str, ks: tuple[int, ...], fitted: _Fitted, rival: _Fitted, auc: torch.Tensor,
                 balanced: torch.Tensor, rival_auc: torch.Tensor, values: torch.Tensor, rows: torch.Tensor,
                 rule: Rule, resamples: int, generator: torch.Generator,
                 keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(I, K) AUC differences against the rival and their standard errors, computed where a cell
    passes the AUC and the balanced accuracy and the rival is below 1 (NaN elsewhere)."""
    difference = torch.full_like(auc, torch.nan)
    error = difference.clone()
    for column, k in enumerate(ks):
        yes, scored = _answers(fact, k, values)
        if keep is not None:
            scored = scored & keep
        if not rival_auc[column] < 1:
            continue
        for index in range(auc.shape[0]):
            if not (auc[index, column] >= rule.auc and balanced[index, column] >= rule.balanced_accuracy):
                continue
            result = auc_difference(fitted.test[index, column, scored], rival.test[0, column, scored], yes[scored],
                                    resamples=resamples, generator=generator, clusters=rows[scored])
            difference[index, column], error[index, column] = result.difference, result.standard_error
    return difference, error


def probe_powered(model: PathTransformer, sets: ProbeSets, *, l2: float, rule: Rule, resamples: int,
                  seed: int, bins: tuple[float, ...] = (), min_bin_graphs: int = MIN_BIN_GRAPHS,
                  facts: tuple[str, ...] = FACTS) -> tuple[dict[str, PoweredGrid], dict[str, list[PoweredGrid]]]:
    """Every fact's `PoweredGrid` for `model`, and per fact one grid per edge-count bin (inner
    `bins` boundaries of `lib.paths.layer_probes.bin_of`; empty without bins): within a bin the
    cut-off is tuned on the bin's validation tokens and a k is scored only where each answer holds
    in at least `min_bin_graphs` of the bin's validation and held-out graphs (NaN elsewhere)."""
    generator = torch.Generator().manual_seed(seed)
    acts = [capture(model, s.tokens) for s in (sets.train, sets.validation, sets.test)]
    grids, binned = {}, {}
    for fact in facts:
        ks = sets.ks[fact]
        if not ks:
            continue
        graph_sets = (sets.train, sets.validation, sets.test)
        features = tuple(token_features(a, s.graphs, fact) for a, s in zip(acts, graph_sets))
        fitted = _fit(fact, ks, features, fact_values(sets.train.graphs, fact), l2, sets.max_train)
        values = tuple(fact_values(s.graphs, fact) for s in (sets.validation, sets.test))
        rows = examples(sets.test.graphs, fact).rows
        auc, balanced = _score(fact, ks, fitted, values)
        rival_auc = _score(fact, ks, sets.rival[fact], values)[0][0]
        difference, error = _differences(fact, ks, fitted, sets.rival[fact], auc, balanced, rival_auc, values[1],
                                         rows, rule, resamples, generator)
        rarer = torch.tensor([min(class_graphs(sets.test, fact, k)) for k in ks])
        grids[fact] = PoweredGrid(fact, ks, auc, balanced, rival_auc, difference, error, rarer)
        if not bins:
            continue
        val_rows = examples(sets.validation.graphs, fact).rows
        in_bin = [bin_of(s.graphs, bins)[r] for s, r in ((sets.validation, val_rows), (sets.test, rows))]
        binned[fact] = []
        for b in range(len(bins) + 1):
            keep = (in_bin[0] == b, in_bin[1] == b)
            b_auc, b_balanced = _score(fact, ks, fitted, values, keep)
            b_rival = _score(fact, ks, sets.rival[fact], values, keep)[0][0]
            counts = []
            for column, k in enumerate(ks):
                fewest = min(min(_bin_class_graphs(fact, k, v, r, m)) for v, r, m in
                             ((values[0], val_rows, keep[0]), (values[1], rows, keep[1])))
                counts.append(fewest)
                if fewest < min_bin_graphs:
                    b_auc[:, column] = b_balanced[:, column] = b_rival[column] = torch.nan
            b_diff, b_error = _differences(fact, ks, fitted, sets.rival[fact], b_auc, b_balanced, b_rival,
                                           values[1], rows, rule, resamples, generator, keep=keep[1])
            binned[fact].append(PoweredGrid(fact, ks, b_auc, b_balanced, b_rival, b_diff, b_error,
                                            torch.tensor(counts)))
    return grids, binned


def _bin_class_graphs(fact: str, k: int, values: torch.Tensor, rows: torch.Tensor, keep: torch.Tensor
                      ) -> tuple[int, int]:
    yes, scored = _answers(fact, k, values)
    scored = scored & keep
    return _graphs_with(rows, yes & scored), _graphs_with(rows, ~yes & scored)


def passes(grid: PoweredGrid, rule: Rule) -> torch.Tensor:
    """(I, K) where a cell passes `rule` (NaN scores never pass)."""
    reads = (grid.auc >= rule.auc) & (grid.balanced >= rule.balanced_accuracy)
    beyond = (grid.rival_auc >= 1).unsqueeze(0) | (grid.z >= rule.z)
    return reads & beyond


def scored_columns(grid: PoweredGrid) -> list[int]:
    """The columns (ks) of a grid with any score (in an edge-count bin, those with enough graphs)."""
    return [c for c in range(len(grid.ks)) if not bool(torch.isnan(grid.auc[:, c]).all())]


def powered_radii(grid: PoweredGrid, rule: Rule, *, scored_only: bool = False) -> list[int]:
    """Per residual index, the largest k such that every k' <= k (from the first k probed) passes
    `rule`; one less than the first k where that fails. With `scored_only` (an edge-count bin),
    over the ks scored (`scored_columns`) alone, and one less than the first of them."""
    ok = passes(grid, rule)
    columns = scored_columns(grid) if scored_only else list(range(len(grid.ks)))
    ks = [grid.ks[c] for c in columns]
    radii = []
    for row in ok[:, columns].tolist() if columns else [[] for _ in range(len(ok))]:
        radius = (ks[0] if ks else grid.ks[0]) - 1
        for k, good in zip(ks, row):
            if not good:
                break
            radius = k
        radii.append(radius)
    return radii


def first_failure(grid: PoweredGrid, rule: Rule) -> list[dict]:
    """Per residual index, the first k that fails `rule` and which parts it fails ("auc",
    "balanced", "rival"), with its AUC difference in standard errors (None where every k passes)."""
    ok = passes(grid, rule)
    out = []
    z = grid.z
    for index in range(len(ok)):
        failing = [column for column in range(len(grid.ks)) if not ok[index, column]]
        if not failing:
            out.append(None)
            continue
        c = failing[0]
        parts = [name for name, good in (("auc", grid.auc[index, c] >= rule.auc),
                                         ("balanced", grid.balanced[index, c] >= rule.balanced_accuracy),
                                         ("rival", not z[index, c] < rule.z or grid.rival_auc[c] >= 1))
                 if not good]
        out.append({"k": grid.ks[c], "fails": parts, "z": float(z[index, c])})
    return out


def grid_json(grid: PoweredGrid, rule: Rule) -> dict:
    """A grid as the results JSON holds it (NaN and infinities as None), with its radii."""
    def clean(tensor: torch.Tensor):
        return [[None if not torch.isfinite(torch.tensor(v)) else v for v in row] for row in tensor.tolist()] \
            if tensor.dim() == 2 else [None if not torch.isfinite(torch.tensor(v)) else v for v in tensor.tolist()]

    return {"ks": list(grid.ks), "auc": clean(grid.auc), "balanced": clean(grid.balanced),
            "rival_auc": clean(grid.rival_auc), "difference": clean(grid.difference),
            "standard_error": clean(grid.standard_error), "z": clean(grid.z),
            "rarer_graphs": grid.rarer_graphs.tolist(), "radii": powered_radii(grid, rule),
            "first_failure": first_failure(grid, rule)}


__all__ = ["MAX_TRAIN_TOKENS", "MIN_BIN_GRAPHS", "PoweredGrid", "ProbeSets", "Rule", "class_graphs", "first_failure", "grid_json", "passes",
           "powered_ks", "powered_radii", "prepare_sets", "probe_powered", "scored_columns"]


def distance_subspace(model: PathTransformer, train: GraphSet, test: GraphSet, ks: tuple[int, ...], *,
                      l2: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(L + 1, m, d) orthonormal rows spanning, at each residual index, the direction of a ridge
    probe of d(1, t) at the target token (reachable targets) and of every "d(1, t) <= k" probe (the
    subspace chapter 7 patches), fitted on `train`; and (L + 1,) the ridge probe's held-out R^2 on
    `test`."""
    from lib.paths.probes import r_squared

    train_acts, test_acts = capture(model, train.tokens), capture(model, test.tokens)
    x, d = token_features(train_acts, train.graphs, DISTANCE), fact_values(train.graphs, DISTANCE).double()
    test_x, test_d = token_features(test_acts, test.graphs, DISTANCE), fact_values(test.graphs, DISTANCE).double()
    spans, r2 = [], []
    for index in range(len(x)):
        ridge = fit_probes(x[index], d.unsqueeze(0), kind="linear", l2=l2)
        r2.append(r_squared(ridge.scores(test_x[index]), test_d.unsqueeze(0))[0])
        logistic = fit_probes(x[index], torch.stack([(d <= k).double() for k in ks]), kind="logistic", l2=l2)
        spans.append(torch.cat([ridge.direction()[:1], logistic.direction()]))
    stacked = torch.stack(spans)
    return torch.linalg.qr(stacked.transpose(1, 2)).Q.transpose(1, 2), torch.stack(r2)


__all__ += ["distance_subspace"]
