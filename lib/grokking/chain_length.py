"""How the LLC estimate moves with the length of the SGLD chains, and where it settles (chapter 5).

A chain starts at w* and its loss first overshoots, then settles; the estimate averages the loss
after the burn-in, so chains too short to settle overestimate the LLC. Every LLC estimate keeps
the chain-averaged loss of every step, and a chain of L steps is exactly the first L steps of a
longer one (`lib.grokking.llc.estimates_at_chain_lengths`), so the estimates at shorter lengths
cost nothing: `fitted_seed_estimates` reads them at an early and the final snapshot of each seed
followed along training (`lib.grokking.llc_trajectory`), `group_mean_estimates` per outcome group
of the seeds measured at the end of training (`lib.grokking.end_of_training`). A `ChainLengthRow`
says from which length an estimate stays within a tolerance of the longest chains' value
(`settled_at`); `chain_length_summary` sums the rows up. Chapter 5 names the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from lib.grokking.end_of_training import EndOfTraining
from lib.grokking.llc import SGLDConfig, estimates_at_chain_lengths
from lib.grokking.llc_trajectory import Trajectory
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


def chain_lengths_within(lengths: tuple[int, ...], steps: int) -> tuple[int, ...]:
    """The lengths of `lengths` a chain of `steps` steps holds, and `steps` itself, increasing."""
    return tuple(sorted({length for length in lengths if length <= steps} | {steps}))


@dataclass(frozen=True)
class SeedAtLengths:
    """One snapshot of one seed followed along training, read at several chain lengths.

    Attributes:
        label: the seed's label in its `Trajectory` ("grokked S4 (seed 17)").
        snapshot: "early" (the first snapshot after it fits its training set) or "final".
        epoch: the snapshot's epoch; estimates: the estimate at each chain length.
    """

    label: str
    snapshot: str
    epoch: int
    estimates: tuple[float, ...]


def fitted_seed_estimates(trajectory: Trajectory,
                          lengths: tuple[int, ...]) -> tuple[tuple[int, ...], list[SeedAtLengths]]:
    """The chain lengths read (`chain_lengths_within` the trajectory's chains) and, for each seed
    of `trajectory` that fits its training set, its estimate at each of them at the first
    snapshot after fitting (early) and at the last snapshot (final)."""
    lengths = chain_lengths_within(lengths, trajectory.sgld.steps)
    at = estimates_at_chain_lengths(trajectory.loss_trace, trajectory.init_loss, trajectory.sgld, lengths)
    read = []
    for label, k in trajectory.labels.items():
        fitted = int(trajectory.fitted_epoch[k])
        if fitted < 0:
            continue
        after = (trajectory.epochs >= fitted).nonzero().squeeze(1)
        if not len(after):
            continue
        for position, when in ((int(after[0]), "early"), (len(trajectory.epochs) - 1, "final")):
            read.append(SeedAtLengths(label, when, int(trajectory.epochs[position]),
                                      tuple(float(v) for v in at[:, position, k])))
    return lengths, read


@dataclass(frozen=True)
class GroupAtLengths:
    """The mean end-of-training estimate of one outcome group (`GROUPS` name, `count` seeds) at
    several chain lengths."""

    group: str
    count: int
    estimates: tuple[float, ...]


def group_mean_estimates(end: EndOfTraining, sgld: SGLDConfig,
                         lengths: tuple[int, ...]) -> tuple[tuple[int, ...], list[GroupAtLengths]]:
    """The chain lengths read and, per outcome group present, the mean estimate at the end of
    training at each of them."""
    lengths = chain_lengths_within(lengths, sgld.steps)
    at = estimates_at_chain_lengths(end.llc.loss_trace, end.llc.init_loss, sgld, lengths)
    groups = []
    for code, name in enumerate(GROUPS):
        members = end.group == code
        if members.any():
            groups.append(GroupAtLengths(name, int(members.sum()), tuple(float(v) for v in at[:, members].mean(dim=1))))
    return lengths, groups


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


__all__ = ["ChainLengthRow", "ChainLengthSummary", "GroupAtLengths", "SETTLED_WITHIN", "SeedAtLengths",
           "chain_length_summary", "chain_lengths_within", "fitted_seed_estimates", "group_mean_estimates"]
