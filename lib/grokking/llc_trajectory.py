"""The LLC along training: seeds trained with snapshots, and their LLC at every snapshot (chapter 5).

The study followed the LLC of one S5 run (3 instances, d = h = 128, with the unembedding bias)
over training with 3 SGLD chains of 3,000 steps at a checkpoint every 10 epochs: it peaked near
4,560-4,600 at epochs 80-90 and fell to 505-598 by the end [@wu2025ambiguous]
(`lib.grokking.study.PUBLISHED_S5_LLC`). Here:

* `llc_along_training`: the LLC at every snapshot of every seed of a run, estimated as one batch
  of models, with the epochs at which each seed fits its training set and groks (`Trajectory`);
* `llc_over_training`: one seed per outcome of a sweep (`representative_seeds`), retrained with
  the same code and seed and a snapshot every `every` epochs, and its LLC along training;
* `s5_llc_trajectory`: seeds of the S5 vs A5 x Z2 pair trained as the study did (its model and
  schedule, `lib.grokking.study.S5_MODEL` and `S5_SCHEDULE`, at a chosen width and length) with
  snapshots at chosen epochs (`s5_snapshot_epochs`), and their LLC along training.

Chapter 5 passes its parameters and tabulates the courses.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from lib.grokking.llc import SGLDConfig
from lib.grokking.mlp import init_instances
from lib.grokking.mlp_llc import mlp_llc_in_chunks
from lib.grokking.outcomes import first_epoch_at_or_above
from lib.grokking.pairs import make_pair
from lib.grokking.study import S4_PAIR, S5_MODEL, S5_PAIR, S5_SCHEDULE
from lib.grokking.study_sweep import GROUPS, outcome_groups
from lib.grokking.sweeps import pair_evaluations, run_pair_sweep
from lib.grokking.training import SweepResult, snapshot_epochs, train_instances


@dataclass
class Trajectory:
    """Seeds of one pair with snapshots along training, and their LLC at every snapshot.

    Attributes:
        labels: a label per seed ("grokked S4 (seed 17)") -> the seed's column.
        outcome: (k,) each seed's outcome at the end of training (index into `GROUPS`: grokked
            the pair's first group, its second, neither).
        group_names: the pair's two groups, as the accuracies in `result.metrics` name them
            ("acc_g1", "acc_g2").
        result: the training run (snapshots at `epochs`).
        epochs: (E,) snapshot epochs; llc, llc_sem: (E, k) estimates and standard errors.
        fitted_epoch: (k,) first logged epoch at which each seed fits its training set (the
            LLC estimate means something only from there on: before, w is not a minimum and the
            chains slide downhill, which makes the estimate negative).
        grok_epoch: (k,) first logged epoch at which the seed's accuracy on all pairs against
            either group reaches the threshold, -1 if never.
        sgld: the SGLD settings of the estimates.
        loss_trace: (steps, E, k) the chain-averaged loss at every SGLD step of every estimate;
            init_loss: (E, k) the loss at w* of every snapshot.
        same_outcome: for retrained seeds, whether each ends with the outcome it had in the
            sweep it was taken from (None for seeds trained here first).
    """

    labels: dict[str, int]
    outcome: torch.Tensor
    group_names: tuple[str, str]
    result: SweepResult
    epochs: torch.Tensor
    llc: torch.Tensor
    llc_sem: torch.Tensor
    fitted_epoch: torch.Tensor
    grok_epoch: torch.Tensor
    sgld: SGLDConfig
    loss_trace: torch.Tensor
    init_loss: torch.Tensor
    same_outcome: bool | None = None

    def around_grokking(self, k: int) -> tuple[int, float, int, float] | None:
        """(epoch, LLC) of the last snapshot before seed k groks and of the first one at or
        after it; None if it never groks or no snapshot precedes it."""
        grok = int(self.grok_epoch[k])
        before = (self.epochs < grok).nonzero().squeeze(1)
        after = (self.epochs >= grok).nonzero().squeeze(1)
        if grok < 0 or not len(before) or not len(after):
            return None
        i, j = int(before[-1]), int(after[0])
        return int(self.epochs[i]), float(self.llc[i, k]), int(self.epochs[j]), float(self.llc[j, k])

    def after_fitting(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(epochs, LLC) of seed k's snapshots from the epoch it fits its training set on."""
        kept = (self.epochs >= int(self.fitted_epoch[k])).nonzero().squeeze(1)
        if int(self.fitted_epoch[k]) < 0:
            kept = kept[:0]
        return self.epochs[kept], self.llc[kept, k]

    def last_snapshot_drift(self) -> float:
        """How far the chains at the last snapshot were from settled, averaged over seeds: the
        rise of the chain-averaged loss from the first to the second half of the kept draws, as
        a share of its whole rise from L(w*) (0: flat, settled; near 1: still climbing)."""
        kept = self.loss_trace[self.sgld.burn_in_steps:, -1, :]
        half = kept.shape[0] // 2
        if half == 0:
            return float("nan")
        first, second = kept[:half].mean(dim=0), kept[half:].mean(dim=0)
        return float(((second - first) / (second - self.init_loss[-1])).mean())

    def course(self, k: int) -> dict[str, float | int | None]:
        """Seed k's LLC course as numbers: the epoch it fits its training set (-1: never), its LLC
        at the first snapshot from then on, at its highest and at the end (with their epochs),
        and, where it groks after a snapshot, its LLC at the snapshots before and after grokking,
        the relative change across grokking and the relative change from its highest value (up
        to the snapshot before grokking) to that snapshot. Missing numbers are None."""
        epochs, llc = self.after_fitting(k)
        row = dict.fromkeys(("first", "first_epoch", "highest", "highest_epoch", "final", "final_epoch",
                             "before", "before_epoch", "after", "after_epoch", "change_across_grokking",
                             "highest_before", "change_from_highest"))
        row["fitted_epoch"], row["grok_epoch"] = int(self.fitted_epoch[k]), int(self.grok_epoch[k])
        if not len(epochs):
            return row
        top = int(llc.argmax())
        row.update(first=float(llc[0]), first_epoch=int(epochs[0]), highest=float(llc[top]),
                   highest_epoch=int(epochs[top]), final=float(llc[-1]), final_epoch=int(epochs[-1]))
        around = self.around_grokking(k)
        if around is not None:
            before = (epochs <= around[0]).nonzero().squeeze(1)
            peak = float(llc[before].max()) if len(before) else around[1]
            row.update(before_epoch=around[0], before=around[1], after_epoch=around[2], after=around[3],
                       change_across_grokking=around[3] / around[1] - 1, highest_before=peak,
                       change_from_highest=around[1] / peak - 1)
        return row

    def peak_and_end(self) -> tuple[float, float]:
        """The mean over seeds of their highest LLC after fitting and of their final LLC (NaN
        when no seed fits its training set)."""
        courses = [self.after_fitting(k)[1] for k in range(len(self.labels))]
        courses = [c for c in courses if len(c)]
        if not courses:
            return float("nan"), float("nan")
        return (float(torch.stack([c.max() for c in courses]).mean()),
                float(torch.stack([c[-1] for c in courses]).mean()))


def llc_along_training(result: SweepResult, sgld: SGLDConfig, grok_threshold: float,
                       generator: torch.Generator, workers: int) -> Trajectory:
    """The LLC of every snapshot of every seed of `result` (all as one set of models), with
    the epochs at which each seed fits its training set and groks; labels are the outcomes."""
    marks = sorted(result.checkpoints)
    stacked = {name: torch.cat([result.checkpoints[e][name] for e in marks]) for name in result.final_params}
    estimate = mlp_llc_in_chunks(stacked, result.train_left, result.train_right, result.train_labels,
                                 sgld, generator, workers=workers)
    shape = (len(marks), result.n_instances)
    metrics, logged = result.metrics, result.log_epochs
    fitted = first_epoch_at_or_above(metrics["train_acc"], logged, grok_threshold)
    grokked = first_epoch_at_or_above(torch.maximum(metrics["acc_g1"], metrics["acc_g2"]), logged,
                                      grok_threshold)
    outcome = outcome_groups(result, grok_threshold)
    g1, g2 = result.info["g1"], result.info["g2"]
    names = {0: f"grokked {g1}", 1: f"grokked {g2}", 2: "neither"}
    labels = {f"{names[int(code)]} (seed {int(seed)})": k
              for k, (code, seed) in enumerate(zip(outcome, result.seeds))}
    return Trajectory(labels, outcome, (g1, g2), result, torch.tensor(marks), estimate.mean.view(shape),
                      estimate.sem.view(shape), fitted, grokked, sgld,
                      estimate.loss_trace.view(sgld.steps, *shape), estimate.init_loss.view(shape))


def representative_seeds(result: SweepResult, groups: torch.Tensor) -> dict[str, int]:
    """One seed per outcome group present: the one that fitted its training set at the median
    epoch (as chapter 4 picks its typical seeds)."""
    fitted = first_epoch_at_or_above(result.metrics["train_acc"], result.log_epochs, 0.999).float()
    chosen = {}
    for code, name in enumerate(GROUPS):
        members = (groups == code).nonzero().squeeze(1)
        if len(members):
            order = fitted[members].argsort(stable=True)
            chosen[name] = int(members[order[(len(members) - 1) // 2]])
    return chosen


def llc_over_training(result: SweepResult, groups: torch.Tensor, every: int, sgld: SGLDConfig,
                      grok_threshold: float, generator: torch.Generator, *, workers: int,
                      device: str) -> Trajectory:
    """Retrain one seed per outcome of the S4 sweep `result` (`groups`: each seed's outcome) with
    snapshots every `every` epochs on `device`, and estimate the LLC at each snapshot with `sgld`
    over `workers` worker processes."""
    index = torch.tensor(list(representative_seeds(result, groups).values()))
    epochs = result.training_config.epochs
    schedule = dataclasses.replace(result.training_config,
                                   checkpoint_epochs=snapshot_epochs(epochs, every))
    initial = init_instances(result.seeds[index].tolist(), result.model_config, device=device)
    retrained = train_instances(initial, result.train_left, result.train_right, result.train_labels,
                                pair_evaluations(make_pair(S4_PAIR)), schedule, seeds=result.seeds[index],
                                model_config=result.model_config, info=dict(result.info))
    trajectory = llc_along_training(retrained, sgld, grok_threshold, generator, workers)
    trajectory.same_outcome = bool(torch.equal(trajectory.outcome, groups[index]))
    return trajectory


def s5_snapshot_epochs(snapshots: tuple[int, ...], epochs: int, every: int = 0) -> tuple[int, ...]:
    """The S5 snapshot epochs: those of `snapshots` within training, every `every`-th epoch
    (none for 0), and the last epoch."""
    grid = set(range(0, epochs + 1, every)) if every else set()
    return tuple(sorted({e for e in snapshots if e <= epochs} | grid | {epochs}))


def s5_llc_trajectory(seeds: list[int], dim: int, epochs: int, marks: tuple[int, ...], sgld: SGLDConfig,
                      grok_threshold: float, generator: torch.Generator, *, workers: int, device: str,
                      progress: bool = True) -> Trajectory:
    """Train `seeds` of the S5 pair at the study's setting (width `dim`, `epochs` epochs) with
    snapshots at the epochs `marks` (`s5_snapshot_epochs`), and estimate the LLC at each
    snapshot with `sgld`."""
    model = dataclasses.replace(S5_MODEL, embed_dim=dim, hidden_dim=dim)
    log_every = math.gcd(S5_SCHEDULE.log_every, *marks) if any(marks) else S5_SCHEDULE.log_every
    schedule = dataclasses.replace(S5_SCHEDULE, epochs=epochs, log_every=min(log_every, epochs),
                                   checkpoint_epochs=marks, workers=workers)
    result = run_pair_sweep(make_pair(S5_PAIR), seeds, model, schedule, device=device, progress=progress)
    return llc_along_training(result, sgld, grok_threshold, generator, workers)


__all__ = ["Trajectory", "llc_along_training", "llc_over_training", "representative_seeds", "s5_llc_trajectory",
           "s5_snapshot_epochs"]
