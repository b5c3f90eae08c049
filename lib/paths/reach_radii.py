"""Reach radii read off the layer probes, per model, over depths and seeds: the radii of every fact
(`fact_radii`), how they grow against one hop per layer (`growth`, `settled_layer`), their
spread over seeds (`seed_spread`), what a randomly initialised model reads (`random_reads`) and
the probe scores as a results JSON holds them (`grid_results`) (chapter 7).

The probes and the criteria a radius is stated by are those of `lib.paths.layer_probes`.
"""

from __future__ import annotations

from lib.paths.layer_probes import FACTS, ModelProbes, ProbeGrid, ReadCriteria, bin_radii, one_hop_radii, read_radii


def fact_radii(probes: ModelProbes, statistics: dict[str, ProbeGrid], criteria: ReadCriteria) -> dict[str, dict]:
    """Per fact, `read_radii` of one model's probes against the statistics probe, and per
    edge-count bin ("bins", `bin_radii`)."""
    return {fact: {**read_radii(grid.scores, grid.ks, criteria, statistics[fact].scores),
                   "bins": bin_radii(grid, statistics[fact], criteria)}
            for fact, grid in probes.grids.items()}


def reach_rows(radii: dict[int, dict[str, dict]]) -> dict[int, dict[str, list[int | None]]]:
    """The stated radius per residual index of every fact, for every model depth (from the
    `fact_radii` of each depth)."""
    return {depth: {fact: value["stated"] for fact, value in by_fact.items()} for depth, by_fact in radii.items()}


def seed_spread(per_seed: dict[int, dict[str, dict]]) -> dict[str, dict]:
    """Per fact, the stated radii of every seed's model and their range per residual index
    (over the seeds with a stated radius there; None where no seed has one)."""
    out = {}
    for fact in FACTS:
        rows = {seed: radii[fact]["stated"] for seed, radii in per_seed.items()}
        columns = list(zip(*rows.values()))
        ranges = [[min(v), max(v)] if (v := [r for r in column if r is not None]) else None for column in columns]
        out[fact] = {"stated": {str(seed): row for seed, row in rows.items()}, "range": ranges,
                     "disputed_seeds": [sum(r is None for r in column) for column in columns]}
    return out


def grid_results(model: ModelProbes, statistics: dict[str, ProbeGrid] | None, radii: dict[str, dict]) -> dict:
    """Per fact of one model: ks, held-out AUC, tuned and untuned balanced accuracy (per residual
    index and k), the shuffled-label control's, the statistics probe's, the scores per edge-count
    bin, and the radii under every criterion (with those per bin)."""
    def scores(value) -> dict:
        return {"auc": value.auc.tolist(), "tuned": value.tuned.tolist(), "untuned": value.untuned.tolist()}

    return {fact: {"ks": list(grid.ks), **scores(grid.scores), "radii": radii[fact],
                   "by_bin": [scores(value) for value in grid.by_bin],
                   **({"shuffled": scores(grid.shuffled)} if grid.shuffled is not None else {}),
                   **({"statistics": scores(statistics[fact].scores),
                       "statistics_by_bin": [scores(value) for value in statistics[fact].by_bin]}
                      if statistics is not None else {})}
            for fact, grid in model.grids.items()}


def growth(radii: list[int | None], largest: int) -> dict:
    """How reach radii (per residual index; None where no radius is stated) compare with one hop
    per layer: the layers after which a stated radius is ahead of it (`faster`) or behind it
    (`slower`), those with no stated radius (`unstated`), and the largest step between the stated
    radii of two consecutive indices (`step`: layer, from, to; None where no two are stated)."""
    hop = one_hop_radii(len(radii) - 1, largest)
    stated = [layer for layer in range(1, len(radii)) if radii[layer] is not None]
    steps = [layer for layer in stated if radii[layer - 1] is not None]
    step = max(steps, key=lambda layer: radii[layer] - radii[layer - 1]) if steps else None
    return {"faster": [layer for layer in stated if radii[layer] > hop[layer]],
            "slower": [layer for layer in stated if radii[layer] < hop[layer]],
            "unstated": [layer for layer in range(1, len(radii)) if radii[layer] is None],
            "step": None if step is None else {"layer": step, "from": radii[step - 1], "to": radii[step]}}


def settled_layer(radii: list[int | None], largest: int) -> int | None:
    """The first residual index whose stated radius reaches `largest` (None: none)."""
    return next((layer for layer, radius in enumerate(radii) if radius is not None and radius >= largest), None)


def largest_ks(probes: ModelProbes) -> dict[str, int]:
    """Per fact, the largest k probed (the cap of its radii)."""
    return {fact: max(grid.ks) if grid.ks else 0 for fact, grid in probes.grids.items()}


def first_index(radii: list[int | None], k: int) -> int | None:
    """The first residual index whose stated radius reaches `k` (None: none)."""
    return next((index for index, radius in enumerate(radii) if radius is not None and radius >= k), None)


def random_reads(random_radii: dict[str, dict], random_init: ModelProbes) -> list[dict]:
    """Per fact, what a randomly initialised model reads: whether any k was probed, its largest
    stated radius at or above the first k probed (None: nothing beyond the statistics probe) and
    the first residual index stating it, the largest radius at the tuned cut-off and by AUC
    without the rival, its best AUC and whether a radius is disputed at some index."""
    rows = []
    for fact, grid in random_init.grids.items():
        radii = random_radii[fact]
        if not grid.ks:
            rows.append({"fact": fact, "probed": False, "best": None, "from_index": None, "tuned": None,
                         "auc": None, "best_auc": None, "disputed": False})
            continue
        stated = [r for r in radii["stated"] if r is not None]
        best = max(stated) if stated else None
        if best is not None and best < grid.ks[0]:
            best = None
        rows.append({"fact": fact, "probed": True, "best": best,
                     "from_index": None if best is None else first_index(radii["stated"], best),
                     "tuned": max(radii["tuned"]), "auc": max(radii["auc"]),
                     "best_auc": float(grid.scores.auc.nan_to_num(0).max()), "disputed": any(radii["disputed"])})
    return rows


def span(values) -> tuple[float, float]:
    """The lowest and highest of a score grid's values (NaN ignored; NaN, NaN where none)."""
    finite = values[~values.isnan()]
    return (float("nan"), float("nan")) if not len(finite) else (float(finite.min()), float(finite.max()))


__all__ = [
    "fact_radii", "first_index", "grid_results", "growth", "largest_ks", "random_reads", "reach_rows",
    "seed_spread", "settled_layer", "span",
]
