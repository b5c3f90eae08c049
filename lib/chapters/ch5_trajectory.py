"""Chapter 5's LLC along training: its parameters wired to `lib.grokking.llc_trajectory`, and the
table of each seed's course.

Chapter 5 follows one seed per outcome of chapter 4's S4 sweep (`lib.grokking.llc_trajectory.
llc_over_training`, a snapshot every `trajectory_every` epochs) and `s5_seeds` seeds of the S5 vs
A5 x Z2 pair trained as the study did (`s5_llc_over_training`), with snapshots at the epochs
`s5_snapshots` (a sparser grid than the study's every 10 epochs: an S5 model has 18 times the
parameters and 24 times the training pairs of an S4 one) and `s5_llc_chains` chains of
`s5_llc_steps` steps at each (the study: 3 of 3,000).
"""

from __future__ import annotations

import dataclasses

import torch

from lib.book.seed_streams import stream_seeds
from lib.chapters.ch5 import Chapter5Parameters
from lib.grokking.llc_trajectory import Trajectory, s5_llc_trajectory, s5_snapshot_epochs


def s5_llc_over_training(config: Chapter5Parameters, generator: torch.Generator,
                         progress: bool = True) -> Trajectory:
    """Train `s5_seeds` seeds (the "ch5_s5_trajectory" seed stream) of the S5 pair at the study's
    setting (width `s5_dim`, epochs `s5_epochs`) with snapshots at `s5_snapshot_epochs` (of
    `s5_snapshots` and `s5_every`), and
    estimate the LLC at each snapshot with `s5_llc_chains` chains of `s5_llc_steps` steps (the
    other SGLD settings as for S4)."""
    marks = s5_snapshot_epochs(config.s5_snapshots, config.s5_epochs, config.s5_every)
    seeds = stream_seeds("ch5_s5_trajectory", config.seed, config.s5_seeds)
    sgld = dataclasses.replace(config.sgld, chains=config.s5_llc_chains, steps=config.s5_llc_steps)
    return s5_llc_trajectory(seeds, config.s5_dim, config.s5_epochs, marks, sgld, config.grok_threshold, generator,
                             workers=config.workers, device=config.device, progress=progress)


def course_table(trajectory: Trajectory) -> tuple[list[str], list[list]]:
    """Header and rows of `Trajectory.course`, one row per seed ("-" where a number is missing:
    a seed that never fits, or never groks after a snapshot)."""
    def cell(value, fmt: str):
        return "-" if value is None or value == -1 else format(value, fmt)

    rows = []
    for label, k in trajectory.labels.items():
        c = trajectory.course(k)
        rows.append([label, cell(c["fitted_epoch"], "d"), cell(c["first"], ".1f"), cell(c["highest"], ".1f"),
                     cell(c["highest_epoch"], "d"), cell(c["final"], ".1f"), cell(c["final_epoch"], "d"),
                     cell(c["grok_epoch"], "d"), cell(c["before"], ".1f"), cell(c["before_epoch"], "d"),
                     cell(c["after"], ".1f"), cell(c["after_epoch"], "d"), cell(c["change_across_grokking"], "+.0%"),
                     cell(c["change_from_highest"], "+.0%")])
    return (["seed", "fits at epoch", "LLC at the first snapshot from there", "highest LLC", "at epoch", "final LLC", "at epoch",
             "groks at epoch", "LLC before", "at epoch", "LLC after", "at epoch", "change across grokking",
             "change from highest to before"], rows)


__all__ = ["course_table", "s5_llc_over_training"]
