"""Where one damage falls among all of its kind: the study's damage over every matrix (chapter 1).

The study damaged its hand-built model once (`lib.bfs.study_damage`: one of six weight lists
uniformly, one of its n matrices uniformly, replaced by N(0, 1) noise) and reported that one
draw's MSE, 0.403 right after the damage. Every matrix is equally likely under that draw (6 lists
of n matrices each), so damaging every matrix with the same number of noise draws samples the
study's damage distribution exactly, with forward passes only. This module

* `damage_distribution`: the held-out MSE right after the damage for every matrix of the six
  lists and `noise_draws` noise draws each, with its standard error over the held-out graphs;
* `share_at_or_below`: the share of draws at or below a value (the value's percentile), with
  its Wilson interval (`lib.book.statistics.wilson_interval`);
* `nearest_draws`: the draws whose MSE lies nearest a target on a log scale, the ones chapter 1
  retrains to compare like with like with the study's one draw;
* `quantile_summary`: quantiles of the MSE.

Draw i of the distribution damages with a generator seeded `seed + i`, the seed that
`lib.bfs.study_damage.study_protocol_draw` takes, so a draw picked here is retrained from the
very same damage.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from lib.bfs.perturbation import flush_denormals
from lib.bfs.study_damage import WEIGHT_LISTS, Damage, HeldOut, apply_damage
from lib.book.statistics import wilson_interval

#: Quantiles the summary of a distribution reports.
QUANTILES = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)


def every_damage(n_vertices: int) -> list[Damage]:
    """Every matrix of the six weight lists, list by list (6 n damages, each as likely as the others)."""
    return [Damage(weight_list, index) for weight_list in WEIGHT_LISTS for index in range(n_vertices)]


def damage_distribution(intact, held_out: HeldOut, noise_draws: int, seed: int, *,
                        progress: bool = False) -> list[dict]:
    """The held-out MSE right after the damage, for every matrix and `noise_draws` noise draws each.

    Args:
        intact: a construction (the study's or the book's); it is copied, never changed.
        held_out: the graphs (and their labels) the MSE is measured on.
        noise_draws: noise draws per matrix.
        seed: draw i (matrix by matrix, its noise draws in turn) damages with seed `seed + i`.
        progress: show a progress bar.

    Returns:
        One record per draw, in draw order: `weight_list`, `index`, `matrix` (its name,
        `lib.bfs.study_damage.matrix_name`), `answer_head`, `noise_draw`, `seed`, `mse` (mean
        squared error over the held-out graphs) and `standard_error` (its standard error over
        those graphs).
    """
    draws = [(damage, draw) for damage in every_damage(intact.n_vertices) for draw in range(noise_draws)]
    records = []
    with flush_denormals(), torch.no_grad():
        for i, (damage, draw) in enumerate(tqdm(draws, disable=not progress, desc="damage distribution",
                                                mininterval=5)):
            model = copy.deepcopy(intact)
            apply_damage(model, damage, torch.Generator().manual_seed(seed + i))
            squared = (model(held_out.adjacency) - held_out.distance).double() ** 2
            records.append({"weight_list": damage.weight_list, "index": damage.index, "matrix": damage.matrix,
                            "answer_head": damage.hits_answer_head, "noise_draw": draw, "seed": seed + i,
                            "mse": float(squared.mean()),
                            "standard_error": float(squared.std() / math.sqrt(len(squared)))})
    return records


@dataclass(frozen=True)
class Share:
    """k of n, with the share's Wilson 95% interval."""

    k: int
    n: int

    @property
    def share(self) -> float:
        return self.k / self.n if self.n else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.k, self.n)

    def as_dict(self) -> dict:
        low, high = self.interval
        return {"k": self.k, "n": self.n, "share": self.share, "low": low, "high": high}


def share_at_or_below(values, target: float) -> Share:
    """How many of `values` are at or below `target`: the target's percentile among them, k of n."""
    values = list(values)
    return Share(sum(v <= target for v in values), len(values))


def quantile_summary(values, quantiles=QUANTILES) -> dict[str, float]:
    """{"0.05": ..., "0.5": ..., ...}: quantiles of `values` (linear interpolation), plus min and max."""
    data = torch.tensor(list(values), dtype=torch.float64)
    summary = {f"{q:g}": float(torch.quantile(data, q)) for q in quantiles}
    return {"min": float(data.min()), **summary, "max": float(data.max())}


def nearest_draws(records: list[dict], target: float, count: int, key: str = "mse") -> list[dict]:
    """The `count` records whose `key` lies nearest `target` on a log scale (|log(value / target)|),
    nearest first; records with a value of 0 or below are never picked."""
    if target <= 0:
        raise ValueError(f"target must be positive; got {target!r}.")
    candidates = [r for r in records if r[key] > 0]
    return sorted(candidates, key=lambda r: abs(math.log(r[key] / target)))[:count]


__all__ = [
    "QUANTILES", "Share", "damage_distribution", "every_damage", "nearest_draws", "quantile_summary",
    "share_at_or_below",
]
