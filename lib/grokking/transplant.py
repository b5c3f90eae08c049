"""Transplant: a seed that learned one group on its own data, moved to the ambiguous intersection (chapter 6).

Is a grokked solution stable once found, whatever parameters implement it? The study reports
that about 7% of models "partially ungrokked" their group when training continued on the
intersection of the pair, some of them grokking it again later, and 8% with the roles of the
groups swapped [@wu2025ambiguous]. Its code (`ungrok.ipynb`) trained phase 1 on the WHOLE table
of the group (S4, d = h = 32, the unembedding bias, weight decay 2e-5), then loaded only the
weights and trained 2,000 epochs on the intersection with a fresh Adam (lr 0.01, betas
0.9 / 0.98); the published shares are not stored in its repository. Here:

* `transplant`: the two phases with the sweep trainer: `run_group_sweep` on a random
  `train_fraction` of one of the pair's groups (1.0: the whole table, the authors' protocol),
  then `continue_training` of the final weights on the whole intersection, the optimizer anew;
* `ungrok_criteria`: which seeds ungrok, by four criteria (`CRITERIA`), each with the seeds it
  counts as having grokked the group in phase 1 (its denominator):
  - "below 0.999" (the book's): grokked (accuracy on the group's whole table >= 0.999 at the
    end of phase 1), then below 0.999 at some logged epoch of phase 2 while the intersection
    is still fitted (training accuracy >= 0.999);
  - "below 0.95": the same with 0.95;
  - "peak minus final > 0.1" (the authors' coded criterion, `is_grokked` in their
    `src/utils.py`, with their training script's grok threshold 0.95): grokked at 0.95, and the
    highest accuracy of phase 2 exceeds the final one by more than 0.1;
  - "collapse to the intersection": grokked at 0.999, and at the end of phase 2 the accuracy on
    the group's table is at most the intersection's share of it (|I| / N^2): no pair outside
    the intersection is right any more, as for a model that only fits its training data;
* `transplant_fates`: the book's first criterion with regrokking (back above the threshold at
  the end).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lib.grokking.mlp import MLPConfig
from lib.book.statistics import wilson_interval
from lib.grokking.pairs import GroupPair
from lib.grokking.perturbation import continue_training
from lib.grokking.sweeps import intersection_training_set, run_group_sweep
from lib.grokking.training import SweepConfig, SweepResult

#: The ungrok criterion the authors' code records (`is_grokked` in their `src/utils.py`).
AUTHORS_CRITERION = "peak minus final > 0.1"
#: The ungrokking criteria of `ungrok_criteria`, the book's first, the authors' third.
CRITERIA = ("below 0.999", "below 0.95", AUTHORS_CRITERION, "collapse to the intersection")
#: The authors' coded criterion: grok threshold and the drop from the peak (`src/utils.py`).
AUTHORS_GROK_THRESHOLD, AUTHORS_UNGROK_DROP = 0.95, 0.1


@dataclass
class Transplant:
    """The two phases of a transplant of seeds grokking `group` ("g1" or "g2" of `pair`)."""

    pair: GroupPair
    group: str
    first: SweepResult
    second: SweepResult

    @property
    def intersection_share(self) -> float:
        """|I| / N^2: the share of the group's table the intersection covers."""
        return len(self.second.train_labels) / self.pair.n_elements ** 2


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
    """Train `seeds` on a random `train_fraction` of `group`'s table (1.0: all of it), then on
    the intersection with a fresh optimizer."""
    if group not in ("g1", "g2"):
        raise ValueError(f"group must be 'g1' or 'g2' (a group of the pair); got {group!r}.")
    first = run_group_sweep(getattr(pair, group), seeds, model, first_schedule, train_fraction=train_fraction,
                            generator=generator, progress=progress)
    second = continue_training(first.final_params, pair, intersection_training_set(pair), second_schedule,
                               second_schedule.epochs)
    return Transplant(pair, group, first, second)


def transplant_fates(run: Transplant, threshold: float) -> TransplantFates:
    """Which seeds grokked the group, ungrokked it on the intersection (below `threshold` at a
    logged epoch while still fitting the intersection), and grokked it again by the end."""
    grokked = run.first.final("acc_test") >= threshold
    accuracy = run.second.metrics[f"acc_{run.group}"]               # (E, B) on the group's whole table
    fitting = run.second.metrics["train_acc"] >= threshold          # still fits the intersection
    ungrokked = grokked & ((accuracy < threshold) & fitting).any(dim=0)
    regrokked = ungrokked & (accuracy[-1] >= threshold)
    return TransplantFates(grokked, ungrokked, regrokked)


def ungrok_criteria(run: Transplant) -> dict[str, TransplantFates]:
    """The fates of the seeds of `run` under each criterion of `CRITERIA` (module docstring);
    "regrokked" is back at or above the criterion's grok threshold at the end (the collapse
    criterion, read at the end, has none)."""
    accuracy = run.second.metrics[f"acc_{run.group}"]
    final = accuracy[-1]
    fates = {"below 0.999": transplant_fates(run, 0.999), "below 0.95": transplant_fates(run, 0.95)}
    grokked = run.first.final("acc_test") >= AUTHORS_GROK_THRESHOLD
    dropped = grokked & (accuracy.max(dim=0).values - final > AUTHORS_UNGROK_DROP)
    fates[AUTHORS_CRITERION] = TransplantFates(grokked, dropped, torch.zeros_like(dropped))
    grokked = run.first.final("acc_test") >= 0.999
    collapsed = grokked & (final <= run.intersection_share + 1e-9)
    fates["collapse to the intersection"] = TransplantFates(grokked, collapsed, torch.zeros_like(collapsed))
    return fates


def ungrok_share(fates: TransplantFates, confidence: float = 0.95) -> dict:
    """Ungrokked seeds among the phase-1 grokkers: count, share and Wilson interval."""
    grokked, ungrokked = int(fates.grokked.sum()), int(fates.ungrokked.sum())
    low, high = wilson_interval(ungrokked, grokked, confidence) if grokked else (float("nan"), float("nan"))
    return {"grokked_first": grokked, "ungrokked": ungrokked,
            "share": ungrokked / grokked if grokked else float("nan"), "low": low, "high": high,
            "regrokked": int(fates.regrokked.sum())}


__all__ = ["AUTHORS_CRITERION", "AUTHORS_GROK_THRESHOLD", "AUTHORS_UNGROK_DROP", "CRITERIA", "Transplant", "TransplantFates",
           "transplant", "transplant_fates", "ungrok_criteria", "ungrok_share"]
