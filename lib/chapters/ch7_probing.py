"""Chapter 7's powered probes run over its models, the radius laws fitted to their radii and the
capacity experiment (`notebooks/07_learned_circuit.py`).

The science is in `lib.paths.stratified_graphs` (probe sets stratified by distance),
`lib.paths.powered_probes` (probes with a validation split and the rival's margin in standard
errors), `lib.paths.radius_laws` (one hop, doubling or tripling per layer) and
`lib.paths.capacity_lever` (Ye et al.'s capacity at the book's scale); this module wires them to
the chapter's models and parameters and returns numbers for its tables (`lib.chapters.ch7_results`).
"""

from __future__ import annotations

import dataclasses

import torch

from lib.paths.capacity_lever import matched_sets, statistics_r2, train_on_graphs
from lib.paths.graph_set import GraphSet
from lib.paths.layer_probes import edge_count_bins
from lib.paths.model import PathTransformer
from lib.paths.powered_probes import PoweredGrid, ProbeSets, Rule, powered_radii, prepare_sets, probe_powered
from lib.paths.radius_laws import RadiusPoint
from lib.paths.stratified_graphs import StratifiedSet, draw_stratified
from lib.paths.token_graphs import UNREACHABLE
from lib.paths.training import PathTrainingConfig

#: The three probe sets, by name, and the offset of each one's seed from the chapter's.
PROBE_SETS = {"training": 1, "validation": 2, "held-out": 3}


def draw_probe_sets(recipe: PathTrainingConfig, per_stratum: int, pool: int, seed: int, *, l2: float,
                    min_graphs: int) -> tuple[ProbeSets, dict[str, StratifiedSet], tuple[float, ...]]:
    """The three stratified probe sets of `recipe` (seeds `seed` + 1, 2, 3), each with up to
    `per_stratum` graphs of every distance stratum in every edge-count bin (terciles of the
    sampler's edge count, from 20,000 graphs of seed `seed` + 7, returned as the bins' inner
    boundaries), and the rival probes fitted on the first; each k is probed only where both answers
    hold in `min_graphs` graphs of every set."""
    bins = edge_count_bins(GraphSet.draw(recipe, 20_000, seed + 7).graphs)
    drawn = {name: draw_stratified(recipe, per_stratum, seed + offset, pool=pool, edge_bins=bins)
             for name, offset in PROBE_SETS.items()}
    sets = prepare_sets(*(drawn[name].graphs for name in PROBE_SETS), l2=l2, min_graphs=min_graphs)
    return sets, drawn, bins


def radii_of(grids: dict[str, PoweredGrid], rule: Rule) -> dict[str, list[int]]:
    """Per fact, the radius after every residual index under `rule`."""
    return {fact: powered_radii(grid, rule) for fact, grid in grids.items()}


def radius_points(radii: dict[tuple[int, int], dict[str, list[int]]], caps: dict[str, int], facts: tuple[str, ...],
                  *, with_last: bool) -> list[RadiusPoint]:
    """The measured radii of every model ((depth, seed) -> fact -> radius per index) as points of
    `lib.paths.radius_laws` over layers 1..L-1 (with `with_last`, 1..L), for `facts`."""
    points = []
    for (depth, seed), by_fact in sorted(radii.items()):
        last = depth if with_last else depth - 1
        for fact in facts:
            if fact not in by_fact:
                continue
            points.extend(RadiusPoint(depth, seed, fact, layer, by_fact[fact][layer], caps[fact])
                          for layer in range(1, last + 1))
    return points


def capacity_experiment(base: PathTrainingConfig, *, layers: int, pool: int, steps: int, seeds: int, seed: int,
                        l2: float) -> dict:
    """Ye et al.'s lever at the book's scale: models of chapter 2's architecture with `layers`
    layers (capacity 3^layers), `seeds` of them trained for `steps` steps on graphs within the
    capacity and as many on graphs beyond it (matched by edge count, `lib.paths.capacity_lever`),
    scored on held-out graphs of both kinds: their MSE and the held-out R^2 of a ridge probe on
    the graph statistics, of each model's answer and of the true answer."""
    config = dataclasses.replace(base, n_layers=layers)
    capacity = 3 ** layers
    train_sets = matched_sets(config, capacity, pool, seed + 20)
    test_sets = matched_sets(config, capacity, pool, seed + 21)
    tests = {"within": test_sets.within, "beyond": test_sets.beyond}
    rows = []
    for side, graphs in (("within", train_sets.within), ("beyond", train_sets.beyond)):
        for model_seed in range(seed, seed + seeds):
            model = train_on_graphs(config, graphs, steps=steps, seed=model_seed)
            rows.append({"trained on": side, "seed": model_seed, **_scores(model, tests, l2)})
    truth = {name: statistics_r2(graphs, graphs.labels, l2=l2) for name, graphs in tests.items()}
    return {"layers": layers, "capacity": capacity, "training_graphs": len(train_sets.within.labels),
            "test_graphs": len(test_sets.within.labels), "pool": pool, "steps": steps, "rows": rows,
            "truth_r2": truth,
            "test_reachable_share": {name: float((g.graphs.distance < UNREACHABLE).double().mean())
                                     for name, g in tests.items()}}


@torch.no_grad()
def _scores(model: PathTransformer, tests: dict[str, GraphSet], l2: float) -> dict:
    out = {}
    for name, graphs in tests.items():
        prediction = model(graphs.tokens).double()
        out[f"mse_{name}"] = float(((prediction - graphs.labels.double()) ** 2).mean())
        out[f"r2_{name}"] = statistics_r2(graphs, prediction, l2=l2)
    return out


def capacity_summary(result: dict) -> dict:
    """Per training side: the mean, lowest and highest over seeds of each score of `capacity_experiment`."""
    out = {}
    for side in ("within", "beyond"):
        rows = [row for row in result["rows"] if row["trained on"] == side]
        out[side] = {name: {"mean": sum(row[name] for row in rows) / len(rows), "low": min(row[name] for row in rows),
                            "high": max(row[name] for row in rows)}
                     for name in ("mse_within", "mse_beyond", "r2_within", "r2_beyond")}
    return out


__all__ = ["PROBE_SETS", "capacity_experiment", "capacity_summary", "draw_probe_sets", "radii_of", "radius_points"]
