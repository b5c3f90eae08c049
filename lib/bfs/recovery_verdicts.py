"""What each perturb-and-recover draw did, and the counts per (damage mode, scale) (chapter 1).

`lib.bfs.perturbation.perturb_and_recover` damages the hand-built model and retrains it; this
module marks each of its records: whether the damage changed the held-out MSE at all
(`mark_effect`), and its status, "no effect", "not broken", "recovered" or "not recovered"
(`draw_status`), and counts the statuses per (mode, scale) (`mark_recovered`, `RecoveryVerdict`).
A draw that changed nothing is "no effect", never a recovery.
"""

from __future__ import annotations

from dataclasses import dataclass


def mark_effect(records: list[dict], tolerance: float = 1e-6) -> list[dict]:
    """Add `damage_had_effect` to each perturb-and-recover record: the damage moved the held-out
    MSE by more than `tolerance`. A draw without effect (it hit a matrix these graphs never use)
    is "no effect", never a recovery. Returns `records`."""
    for record in records:
        record["damage_had_effect"] = abs(record["loss_before"] - record["loss_intact"]) > tolerance
    return records


@dataclass(frozen=True)
class RecoveryVerdict:
    """What the draws of one (damage mode, scale) did.

    Each draw is one of: "no effect" (the damage left the held-out MSE unchanged), "not broken"
    (it changed the MSE but left it below the threshold already, so there was nothing to
    recover from), "recovered" (above the threshold after the damage, below it after
    retraining) or "not recovered".
    """

    mode: str
    scale: float
    draws: int
    no_effect: int
    not_broken: int
    recovered: int

    @property
    def broken(self) -> int:
        return self.draws - self.no_effect - self.not_broken

    @property
    def not_recovered(self) -> int:
        return self.broken - self.recovered


def draw_status(record: dict, recovered_below: float) -> str:
    """"no effect", "not broken", "recovered" or "not recovered" (see `RecoveryVerdict`)."""
    if not record["damage_had_effect"]:
        return "no effect"
    if record["loss_before"] < recovered_below:
        return "not broken"
    return "recovered" if record["loss_after"] < recovered_below else "not recovered"


def mark_recovered(records: list[dict], recovered_below: float) -> list[RecoveryVerdict]:
    """Add `status` (`draw_status`) and `recovered` (status "recovered") to each record, marking
    `damage_had_effect` first where it is missing.

    Returns one verdict per (mode, scale), modes in the order they first appear, scales sorted.
    """
    for record in records:
        if "damage_had_effect" not in record:
            mark_effect([record])
        record["status"] = draw_status(record, recovered_below)
        record["recovered"] = record["status"] == "recovered"
    verdicts = []
    for mode in dict.fromkeys(r["mode"] for r in records):
        for scale in sorted({r["scale"] for r in records if r["mode"] == mode}):
            runs = [r for r in records if r["mode"] == mode and r["scale"] == scale]
            verdicts.append(RecoveryVerdict(mode, scale, len(runs), sum(r["status"] == "no effect" for r in runs),
                                            sum(r["status"] == "not broken" for r in runs),
                                            sum(r["recovered"] for r in runs)))
    return verdicts


__all__ = ["draw_status", "mark_effect", "mark_recovered", "RecoveryVerdict"]
