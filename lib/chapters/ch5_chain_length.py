"""How the LLC estimate moves with the length of the SGLD chains (chapter 5's chain-length study).

A chain starts at w* and its loss first overshoots, then settles; the estimate averages the loss
after the burn-in, so chains too short to settle overestimate the LLC. Every estimate of the
chapter keeps the chain-averaged loss of every step, and a chain of L steps is exactly the first
L steps of a longer one (`lib.grokking.llc.estimates_at_chain_lengths`), so the estimates at
shorter lengths cost nothing: `trajectory_rows` reads them at an early and the final snapshot
of each seed followed along training, `end_of_training_rows` per outcome group of the seeds
measured at the end of training. `settled_at` says from which length an estimate stays within a
tolerance of the longest chains' value; `chain_length_summary` gives the numbers the prose cites.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from lib.chapters.ch5 import EndOfTraining
from lib.chapters.ch5_trajectory import Trajectory
from lib.grokking.llc import estimates_at_chain_lengths
from lib.grokking.study_sweep import GROUPS

#: Relative distance from the longest chains' estimate within which an estimate counts as settled.
SETTLED_WITHIN = 0.05


@dataclass(frozen=True)
class ChainLengthRow:
    """The estimate of one snapshot (or the mean over one outcome group) at several chain lengths.

    Attributes:
        what: which estimate, in words ("S5 seed 70000, epoch 80").
        lengths: the chain lengths, increasing; estimates: the estimate at each.
    """

    what: str
    lengths: tuple[int, ...]
    estimates: tuple[float, ...]

    def settled_at(self, within: float = SETTLED_WITHIN) -> int:
        """The shortest length from which every longer length's estimate lies within `within`
        (relative) of the longest length's."""
        final = self.estimates[-1]
        settled = self.lengths[-1]
        for length, value in zip(reversed(self.lengths), reversed(self.estimates)):
            if abs(value - final) > within * abs(final):
                break
            settled = length
        return settled

    def excess(self, index: int = 0) -> float:
        """How much the estimate at `lengths[index]` exceeds the longest chains' (relative)."""
        return self.estimates[index] / self.estimates[-1] - 1


def _lengths(lengths: tuple[int, ...], steps: int) -> tuple[int, ...]:
    return tuple(sorted({length for length in lengths if length <= steps} | {steps}))


def trajectory_rows(trajectory: Trajectory, lengths: tuple[int, ...], name: str) -> list[ChainLengthRow]:
    """For each seed of `trajectory` that fits its training set: its estimate at each chain
    length at the first snapshot after fitting (early) and at the last snapshot (final)."""
    lengths = _lengths(lengths, trajectory.sgld.steps)
    at = estimates_at_chain_lengths(trajectory.loss_trace, trajectory.init_loss, trajectory.sgld, lengths)
    rows = []
    for label, k in trajectory.labels.items():
        fitted = int(trajectory.fitted_epoch[k])
        if fitted < 0:
            continue
        after = (trajectory.epochs >= fitted).nonzero().squeeze(1)
        if not len(after):
            continue
        seed = label.split("(seed ")[-1].rstrip(")")
        for position, when in ((int(after[0]), "early"), (len(trajectory.epochs) - 1, "final")):
            rows.append(ChainLengthRow(f"{name} seed {seed} ({label.split(' (')[0]}), {when} snapshot, "
                                       f"epoch {int(trajectory.epochs[position])}", lengths,
                                       tuple(float(v) for v in at[:, position, k])))
    return rows


def end_of_training_rows(end: EndOfTraining, sgld, lengths: tuple[int, ...]) -> list[ChainLengthRow]:
    """Per outcome group, the mean estimate at the end of training at each chain length."""
    lengths = _lengths(lengths, sgld.steps)
    at = estimates_at_chain_lengths(end.llc.loss_trace, end.llc.init_loss, sgld, lengths)
    rows = []
    for code, name in enumerate(GROUPS):
        members = end.group == code
        if members.any():
            outcome = name if name.startswith("grokked") else "grokked neither"
            rows.append(ChainLengthRow(f"S4, end of training, mean over the {int(members.sum())} measured "
                                       f"seeds that {outcome}", lengths,
                                       tuple(float(v) for v in at[:, members].mean(dim=1))))
    return rows


def chain_length_table(rows: list[ChainLengthRow]) -> tuple[list[str], list[list]]:
    """Header and rows of the chain-length table: each estimate at each length and where it settles."""
    lengths = rows[0].lengths
    header = ["estimate", *(f"{length:,} steps" for length in lengths),
              f"settled (within {SETTLED_WITHIN:.0%}) from"]
    return header, [[r.what, *r.estimates, f"{r.settled_at():,} steps"] for r in rows]


@dataclass(frozen=True)
class ChainLengthSummary:
    """What the chain-length study shows, over its rows.

    Attributes:
        shortest, longest: the shortest and the longest chain length; second: the one before the
            longest.
        rows: how many estimates; higher: how many of them are higher at the shortest length
            than at the longest.
        excess_low, excess_high: the smallest and largest relative excess at the shortest length.
        settled_low, settled_high: the shortest and the longest length from which estimates stay
            within `SETTLED_WITHIN` of the longest chains' value (the longest length is where
            the comparison ends, not proof that it settled).
        unsettled: how many estimates still move by more than `SETTLED_WITHIN` between `second`
            and `longest`.
    """

    shortest: int
    longest: int
    second: int
    rows: int
    higher: int
    excess_low: float
    excess_high: float
    settled_low: int
    settled_high: int
    unsettled: int
    within: float = SETTLED_WITHIN


def chain_length_summary(rows: list[ChainLengthRow]) -> ChainLengthSummary:
    """`ChainLengthSummary` of the rows (all read at the same lengths)."""
    lengths = rows[0].lengths
    excesses = [r.excess(0) for r in rows]
    settled = [r.settled_at() for r in rows]
    second = lengths[-2] if len(lengths) > 1 else lengths[-1]
    unsettled = sum(abs(r.estimates[-2] / r.estimates[-1] - 1) > SETTLED_WITHIN for r in rows) if len(lengths) > 1 else 0
    return ChainLengthSummary(lengths[0], lengths[-1], second, len(rows), sum(e > 0 for e in excesses),
                              min(excesses), max(excesses), min(settled), max(settled), unsettled)


def chain_length_results(rows: list[ChainLengthRow]) -> list[dict]:
    """The rows with where each settles, for the results JSON."""
    return [asdict(r) | {"settled_at": r.settled_at(), "settled_within": SETTLED_WITHIN} for r in rows]


__all__ = ["ChainLengthRow", "ChainLengthSummary", "SETTLED_WITHIN", "chain_length_results",
           "chain_length_summary", "chain_length_table", "end_of_training_rows", "trajectory_rows"]
