"""Transplant: a seed that grokked one group on its own data, moved to the ambiguous intersection (chapter 6).

Is a grokked solution stable once found, whatever parameters implement it? The study trained
models on an iid part of one group's table, where they reliably grok it, then continued training
them on the intersection of the pair; about 7% partially "ungrokked" the group while keeping
the intersection, a few of them grokked it again later, and with the roles of the groups swapped
8% ungrokked [@wu2025ambiguous]. Here:

* `transplant`: the two phases with the sweep trainer: `run_group_sweep` on a random part of
  one of the pair's groups (in the pair's labelling), then `continue_training` of the final
  weights on the whole intersection, the optimizer anew;
* `transplant_fates`: per seed, whether it grokked the group in the first phase, whether it
  then ungrokked it (accuracy on the group's whole table below the threshold at some logged
  epoch of the second phase while the training accuracy on the intersection stays at or above
  it), and whether it grokked it again by the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import GroupPair
from lib.grokking.perturbation import continue_training
from lib.grokking.sweeps import intersection_training_set, run_group_sweep
from lib.grokking.training import SweepConfig, SweepResult


@dataclass
class Transplant:
    """The two phases of a transplant of seeds grokking `group` ("g1" or "g2" of `pair`)."""

    pair: GroupPair
    group: str
    first: SweepResult
    second: SweepResult


@dataclass(frozen=True)
class TransplantFates:
    """(B,) bool per seed: grokked the group in the first phase; among those, ungrokked it on
    the intersection; among those, grokked it again by the end."""

    grokked: torch.Tensor
    ungrokked: torch.Tensor
    regrokked: torch.Tensor

    def fractions(self) -> dict[str, float]:
        """Share of first-phase grokkers that ungrokked, and of those that regrokked."""
        n_grokked, n_ungrokked = int(self.grokked.sum()), int(self.ungrokked.sum())
        return {"grokked_first": n_grokked,
                "ungrokked": n_ungrokked / n_grokked if n_grokked else float("nan"),
                "regrokked": int(self.regrokked.sum()) / n_ungrokked if n_ungrokked else float("nan")}


def transplant(pair: GroupPair, group: str, seeds: Sequence[int], model: MLPConfig,
               first_schedule: SweepConfig, second_schedule: SweepConfig, train_fraction: float,
               generator: torch.Generator, progress: bool = False) -> Transplant:
    """Train `seeds` on a random `train_fraction` of `group`'s table, then on the intersection."""
    if group not in ("g1", "g2"):
        raise ValueError(f"group must be 'g1' or 'g2' (a group of the pair); got {group!r}.")
    first = run_group_sweep(getattr(pair, group), seeds, model, first_schedule, train_fraction=train_fraction,
                            generator=generator, progress=progress)
    second = continue_training(first.final_params, pair, intersection_training_set(pair), second_schedule,
                               second_schedule.epochs)
    return Transplant(pair, group, first, second)


def transplant_fates(run: Transplant, threshold: float) -> TransplantFates:
    """Which seeds grokked the group, ungrokked it on the intersection, and grokked it again."""
    grokked = run.first.final("acc_test") >= threshold
    accuracy = run.second.metrics[f"acc_{run.group}"]               # (E, B) on the group's whole table
    fitting = run.second.metrics["train_acc"] >= threshold          # still fits the intersection
    ungrokked = grokked & ((accuracy < threshold) & fitting).any(dim=0)
    regrokked = ungrokked & (accuracy[-1] >= threshold)
    return TransplantFates(grokked, ungrokked, regrokked)


__all__ = ["Transplant", "TransplantFates", "transplant", "transplant_fates"]
