"""Chapter 5's chain-length study: its rows named, their table and their results-JSON entry.

The estimates at shorter chain lengths are read from the chains already run
(`lib.grokking.chain_length`): `trajectory_rows` at an early and the final snapshot of each seed
followed along training, `end_of_training_rows` per outcome group of the seeds measured at the
end of training; `lib.grokking.chain_length.chain_length_summary` gives the numbers the prose
cites.
"""

from __future__ import annotations

from dataclasses import asdict

from lib.grokking.chain_length import (
    SETTLED_WITHIN, ChainLengthRow, fitted_seed_estimates, group_mean_estimates)
from lib.grokking.end_of_training import EndOfTraining
from lib.grokking.llc_trajectory import Trajectory


def trajectory_rows(trajectory: Trajectory, lengths: tuple[int, ...], name: str) -> list[ChainLengthRow]:
    """For each seed of `trajectory` that fits its training set: its estimate at each chain
    length at the first snapshot after fitting (early) and at the last snapshot (final)."""
    lengths, read = fitted_seed_estimates(trajectory, lengths)
    rows = []
    for at in read:
        seed = at.label.split("(seed ")[-1].rstrip(")")
        rows.append(ChainLengthRow(f"{name} seed {seed} ({at.label.split(' (')[0]}), {at.snapshot} snapshot, "
                                   f"epoch {at.epoch}", lengths, at.estimates))
    return rows


def end_of_training_rows(end: EndOfTraining, sgld, lengths: tuple[int, ...]) -> list[ChainLengthRow]:
    """Per outcome group, the mean estimate at the end of training at each chain length."""
    lengths, groups = group_mean_estimates(end, sgld, lengths)
    rows = []
    for group in groups:
        outcome = group.group if group.group.startswith("grokked") else "grokked neither"
        rows.append(ChainLengthRow(f"S4, end of training, mean over the {group.count} measured "
                                   f"seeds that {outcome}", lengths, group.estimates))
    return rows


def chain_length_table(rows: list[ChainLengthRow]) -> tuple[list[str], list[list]]:
    """Header and rows of the chain-length table: each estimate at each length and where it settles."""
    lengths = rows[0].lengths
    header = ["estimate", *(f"{length:,} steps" for length in lengths),
              f"settled (within {SETTLED_WITHIN:.0%}) from"]
    return header, [[r.what, *r.estimates, f"{r.settled_at():,} steps"] for r in rows]


def chain_length_results(rows: list[ChainLengthRow]) -> list[dict]:
    """The rows with where each settles, for the results JSON."""
    return [asdict(r) | {"settled_at": r.settled_at(), "settled_within": SETTLED_WITHIN} for r in rows]


__all__ = ["chain_length_results", "chain_length_table", "end_of_training_rows", "trajectory_rows"]
