"""Parameters and runs of chapter 6 (determination): when does a seed decide which group it groks?

The notebook `notebooks/06_determination.py` validates `Chapter6Parameters`, gets chapter 4's S4
sweep without the unembedding bias (`lib.grokking.study_sweep.load_s4_sweep`: loaded, or trained
with the same code when missing) and runs
the chapter's studies on it:

* `choose_per_outcome` and `retrain_with_snapshots`: the seeds of each outcome that the
  perturbation study (`lib.chapters.ch6_perturbation`) perturbs, retrained with dense snapshots;
* `total_variation_study`: chosen seeds retrained with the same code and seeds, with dense
  snapshots over the last epochs, and the total variation and argmax flips of their logits
  there (`lib.grokking.total_variation`), on the pairs outside the training set and on it;
* `transplant_both_ways`: seeds that grokked one group of the pair on an iid part of its table,
  continued on the pair's intersection (`lib.grokking.transplant`), for each group;
* `jacobian_spectra`: the singular values of the training Jacobian of one small MLP on a pair's
  intersection (`lib.grokking.training_jacobian`) after several training lengths, with and
  without weight decay, in float64 and float32;
* `early_prediction`: how well the final outcome of every seed of the sweep can be read from
  its logged metrics at each epoch (`lib.grokking.early_prediction`).

Tables and the results JSON are built in `lib.chapters.ch6_results`, figures in
`lib.chapters.ch6_figures`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lib.book.params import at_most, parameter, ParameterError
from lib.book.seed_streams import stream_seeds
from lib.chapters.sweep_parameters import SweepChapterParameters
from lib.grokking.study import (
    PUBLISHED_FLIP_RATES, PUBLISHED_UNGROK_SHARES, S4_MODEL_NO_BIAS, S4_PAIR, S4_SCHEDULE,
)
from lib.grokking.early_prediction import held_out_auc
from lib.grokking.mlp import MLPConfig, init_single, init_instances
from lib.grokking.outcomes import classify_outcomes
from lib.grokking.pairs import make_pair, pairs_in_mask
from lib.grokking.sweeps import intersection_training_set, pair_evaluations, sweep_outcomes
from lib.grokking.total_variation import argmax_flip_rate, snapshot_logits, total_variation
from lib.grokking.training import SweepConfig, SweepResult, snapshot_epochs, train_instances
from lib.grokking.training_jacobian import (
    adam, adam_start, finite_difference_error, flatten, mlp_loss, training_jacobian, training_map,
    training_snapshots,
)
from lib.grokking.transplant import Transplant, TransplantFates, transplant, transplant_fates

#: The seeds this chapter transplants, by the group they grok first (`lib.book.seed_streams`).
TRANSPLANT_STREAMS = {"g1": "ch6_transplant_g1", "g2": "ch6_transplant_g2"}


@dataclass(frozen=True)
class Chapter6Parameters(SweepChapterParameters):
    """The papermill parameters of chapter 6, each with its type, bounds, help and smoke value."""

    fallback_instances: int = parameter(
        "seeds of the S4 sweep trained here when chapter 4's is missing (chapter 4: 1,000)", low=1,
        high=1_000_000, smoke=at_most(16))
    fallback_epochs: int = parameter("epochs of that sweep (the study: 2,000)", low=1,
                                     high=1_000_000, smoke=at_most(40))
    grok_threshold: float = parameter("accuracy on a group's full table that counts as grokking it",
                                      low=0.5, high=1.0)
    perturb_per_outcome: int = parameter("seeds of each outcome whose weights are perturbed", low=1,
                                         high=1000, smoke=at_most(1))
    perturb_every: int = parameter("epochs between the checkpoints at which they are perturbed",
                                   low=1, smoke=at_most(20))
    log2_scales: tuple[int, ...] = parameter(
        "noise scales as powers of two, k in 2^k (the study: -25 .. 5)", low=-60, high=10,
        smoke=(-20, 0))
    copies: int = parameter("noisy copies per seed, checkpoint and scale", low=1, high=10_000,
                            smoke=at_most(2))
    decision_log2_scale: int = parameter(
        "decision epoch: perturbations up to 2^k no longer change the outcome", low=-60, high=10)
    tv_per_outcome: int = parameter("seeds of each outcome whose logits' total variation is measured",
                                    low=1, high=100_000, smoke=at_most(2))
    tv_epochs: int = parameter("epochs those seeds are trained for (the study: 3,000)", low=1,
                               high=1_000_000, smoke=at_most(40))
    tv_window: int = parameter("the late interval of the total variation, its last epochs", low=1,
                               smoke=at_most(20))
    tv_every: int = parameter("epochs between the snapshots inside that interval", low=1,
                              smoke=at_most(10))
    transplant_seeds: int = parameter("seeds transplanted in each direction", low=1, high=100_000,
                                      smoke=at_most(4))
    transplant_train_fraction: float = parameter(
        "share of the group's table they first train on", low=0.0, high=1.0, low_inclusive=False)
    transplant_first_epochs: int = parameter("epochs on that iid part", low=1, high=1_000_000,
                                             smoke=at_most(40))
    transplant_second_epochs: int = parameter("epochs on the intersection after the transplant",
                                              low=1, high=1_000_000, smoke=at_most(40))
    jacobian_dim: int = parameter("embedding and hidden width (d and h) of the MLP whose "
                                  "training Jacobian is computed", low=1, high=64, smoke=at_most(2))
    jacobian_lengths: tuple[int, ...] = parameter(
        "training lengths (full-batch Adam steps) of the Jacobians", low=0, high=100_000,
        smoke=(0, 3))
    jacobian_weight_decays: tuple[float, ...] = parameter(
        "weight decays of the Jacobians (0 and the study's 2e-5)", low=0.0, high=1.0)
    predict_every: int = parameter("epochs between the epochs at which the outcome is predicted",
                                   low=1, smoke=at_most(20))
    predict_folds: int = parameter("folds of the held-out predictions", low=2, high=1000)
    cpu_threads: int = parameter("torch threads of this process on the CPU", low=1, high=256)
    workers: int = parameter("single-threaded worker processes training the perturbed copies and "
                             "the retrained seeds, on a CPU", low=1, high=256)

    def check_consistency(self) -> None:
        """Lists in increasing order, and a decision scale on the grid of scales."""
        super().check_consistency()
        if list(self.jacobian_lengths) != sorted(set(self.jacobian_lengths)):
            raise ParameterError(f"Parameter `jacobian_lengths` must be increasing without repeats; "
                                 f"got {list(self.jacobian_lengths)!r}.")
        if list(self.log2_scales) != sorted(set(self.log2_scales)):
            raise ParameterError(f"Parameter `log2_scales` must be increasing without repeats; "
                                 f"got {list(self.log2_scales)!r}.")
        if self.decision_log2_scale < self.log2_scales[0]:
            raise ParameterError(f"Parameter `decision_log2_scale` must be at least the smallest of "
                                 f"`log2_scales` ({self.log2_scales[0]}); got {self.decision_log2_scale}.")


# --- Seeds and their dense snapshots ---------------------------------------------------------


def choose_per_outcome(groups: torch.Tensor, per_outcome: int, generator: torch.Generator) -> torch.Tensor:
    """Up to `per_outcome` seeds of each outcome group (`lib.grokking.study_sweep.outcome_groups`),
    drawn at random, as sweep indices ordered by group and then by index."""
    chosen = []
    for code in groups.unique().tolist():
        members = (groups == code).nonzero().squeeze(1)
        chosen.append(members[torch.randperm(len(members), generator=generator)[:per_outcome]].sort().values)
    return torch.cat(chosen)


def retrain_with_snapshots(result: SweepResult, index: torch.Tensor, marks: Sequence[int],
                           workers: int = 1, epochs: int | None = None) -> SweepResult:
    """The seeds at `index` of `result` trained again from their initial weights with the same
    code, seeds and schedule (so along the same trajectories), keeping snapshots at `marks`;
    for `epochs` epochs when given (longer runs extend the same trajectories)."""
    schedule = dataclasses.replace(result.training_config, checkpoint_epochs=tuple(marks), workers=workers,
                                   epochs=epochs or result.training_config.epochs)
    pair = make_pair(result.info["pair"])
    initial = init_instances(result.seeds[index].tolist(), result.model_config)
    return train_instances(initial, result.train_left, result.train_right, result.train_labels,
                           pair_evaluations(pair), schedule, seeds=result.seeds[index],
                           model_config=result.model_config, info=dict(result.info))


@dataclass
class TotalVariationStudy:
    """Total variation of chosen seeds' logits over the last epochs of training.

    Attributes:
        index: (B,) the seeds' positions in the sweep; outcome: (B,) their outcome codes at the
            end of the retraining; same_outcome: whether the retraining's outcomes at the
            sweep's last epoch equal the sweep's (it retraced the same trajectories).
        epochs: (E,) the snapshot epochs of the window.
        test_tv, test_flips: (B,) total variation and argmax flip rate on the pairs outside the
            training set; train_tv, train_flips: the same on the training pairs.
        train_accuracy: (B,) training accuracy at the start of the window.
    """

    index: torch.Tensor
    outcome: torch.Tensor
    same_outcome: bool
    epochs: torch.Tensor
    test_tv: torch.Tensor
    test_flips: torch.Tensor
    train_tv: torch.Tensor
    train_flips: torch.Tensor
    train_accuracy: torch.Tensor

    @property
    def group(self) -> torch.Tensor:
        """(B,) each seed's outcome group in the retraining (index into `lib.grokking.study_sweep.GROUPS`)."""
        return self.outcome.clamp(max=2)


def total_variation_study(result: SweepResult, index: torch.Tensor, epochs: int, window: int, every: int,
                          grok_threshold: float, workers: int = 1) -> TotalVariationStudy:
    """Retrain the seeds at `index` of `result` (same code, seeds and schedule) for `epochs`
    epochs (the sweep's or more), with a snapshot every `every` epochs over the last `window`,
    and measure their logits' total variation and argmax flips there, off and on the training
    set. Outcomes are those at `epochs`; `same_outcome` checks the retraining against the sweep
    at the sweep's last epoch."""
    swept = result.training_config.epochs
    if epochs < swept or not 0 < window <= epochs or not 0 < every <= window:
        raise ValueError(f"need 0 < every <= window <= epochs and epochs at least the sweep's {swept}; "
                         f"got every={every}, window={window}, epochs={epochs}.")
    marks = snapshot_epochs(epochs, every, start=epochs - window)
    retrained = retrain_with_snapshots(result, index, marks, workers, epochs)
    pair = make_pair(result.info["pair"])
    trained = torch.zeros(pair.n_elements, pair.n_elements, dtype=torch.bool)
    trained[result.train_left, result.train_right] = True
    snapshots = [retrained.checkpoints[e] for e in marks]
    test_logits = snapshot_logits(snapshots, *pairs_in_mask(~trained))
    train_logits = snapshot_logits(snapshots, result.train_left, result.train_right)
    in_sweep = sweep_outcomes(result, grok_threshold, grok_threshold)[index]
    logged = retrained.log_epochs.tolist()
    start = logged.index(marks[0]) if marks[0] in logged else None
    accuracy = (retrained.metrics["train_acc"][start] if start is not None
                else torch.full((len(index),), float("nan")))
    return TotalVariationStudy(
        index=index, outcome=sweep_outcomes(retrained, grok_threshold, grok_threshold),
        same_outcome=bool(torch.equal(outcomes_at(retrained, swept, grok_threshold), in_sweep)),
        epochs=torch.tensor(marks),
        test_tv=total_variation(test_logits), test_flips=argmax_flip_rate(test_logits),
        train_tv=total_variation(train_logits), train_flips=argmax_flip_rate(train_logits),
        train_accuracy=accuracy)


def outcomes_at(result: SweepResult, epoch: int, grok_threshold: float) -> torch.Tensor:
    """(B,) outcome code of every seed of `result` at logged epoch `epoch`."""
    logged = result.log_epochs.tolist()
    if epoch not in logged:
        raise ValueError(f"epoch {epoch} was not logged; logged epochs run {logged[0]}..{logged[-1]} "
                         f"every {result.training_config.log_every}.")
    row = logged.index(epoch)
    metrics = result.metrics
    return classify_outcomes(metrics["acc_g1"][row], metrics["acc_g2"][row], metrics["train_acc"][row],
                             grok_threshold, grok_threshold)


@dataclass
class JacobianSpectra:
    """Singular values of the training Jacobian of one MLP after several training lengths.

    Attributes:
        n_parameters: P, the size of the (P, P) Jacobians.
        lengths: the numbers of training steps (full-batch epochs), ascending.
        singular_values: (weight decay, dtype name) -> (len(lengths), P), descending per row.
        finite_difference_error: the largest relative error of the first setting's Jacobian
            at the shortest nonzero length against central differences (float64 only).
        longest_finite_difference_error: the same at the longest length: large when the
            training map is no longer linear over the differences' step (1e-6).
    """

    n_parameters: int
    lengths: list[int]
    singular_values: dict[tuple[float, str], torch.Tensor]
    finite_difference_error: float
    longest_finite_difference_error: float

    def near_one(self, key: tuple[float, str], tolerance: float = 0.1) -> torch.Tensor:
        """(len(lengths),) share of singular values within `tolerance` of 1 (the "bulk")."""
        return ((self.singular_values[key] - 1).abs() <= tolerance).double().mean(dim=1)


def jacobian_spectra(pair_name: str, model: MLPConfig, seed: int, schedule: SweepConfig,
                     lengths: Sequence[int], weight_decays: Sequence[float],
                     dtypes: Sequence[torch.dtype], generator: torch.Generator) -> JacobianSpectra:
    """The training Jacobian of seed `seed`'s MLP trained on the intersection of `pair_name`
    with `schedule`'s Adam settings, for `lengths` steps, each weight decay and dtype (all
    lengths from one run per setting); its singular values, and finite-difference checks of the
    first float64 setting at the shortest and longest nonzero lengths."""
    left, right, labels = intersection_training_set(make_pair(pair_name))
    params = init_single(seed, model)
    shapes = {name: tuple(value.shape) for name, value in params.items()}
    loss, mask = mlp_loss(shapes, left, right, labels)
    spectra, error, longest_error = {}, float("nan"), float("nan")
    for decay in weight_decays:
        for dtype in dtypes:
            theta0 = flatten(params).to(dtype)
            step = adam(loss, schedule.lr, (schedule.beta1, schedule.beta2), schedule.eps, decay,
                        mask.to(dtype))
            jacobians = training_jacobian(training_snapshots(step, adam_start, list(lengths)), theta0)
            spectra[decay, str(dtype).removeprefix("torch.")] = torch.linalg.svdvals(jacobians.double())
            checked = [i for i, length in enumerate(lengths) if length > 0]
            if error != error and dtype == torch.float64 and checked:
                error, longest_error = (
                    finite_difference_error(training_map(step, adam_start, lengths[i]), theta0, jacobians[i],
                                            3, 1e-6, generator) for i in (checked[0], checked[-1]))
    return JacobianSpectra(int(flatten(params).numel()), list(lengths), spectra, error, longest_error)


# --- Transplant ---------------------------------------------------------------------------


@dataclass
class TransplantStudy:
    """Transplants in both directions: group ("g1" or "g2") -> its run and the seeds' fates."""

    runs: dict[str, Transplant]
    fates: dict[str, TransplantFates]


def transplant_both_ways(config: Chapter6Parameters, generator: torch.Generator,
                         progress: bool = True) -> TransplantStudy:
    """`transplant_seeds` seeds of the study's S4 model trained on a random
    `transplant_train_fraction` of each group's table of the S4 pair for
    `transplant_first_epochs`, then on the pair's intersection for `transplant_second_epochs`
    (the optimizer anew), and which of them ungrok and regrok the group."""
    pair = make_pair(S4_PAIR)

    def schedule(epochs: int) -> SweepConfig:
        return SweepConfig(epochs=epochs, log_every=min(S4_SCHEDULE.log_every, epochs),
                           weight_decay=S4_SCHEDULE.weight_decay, workers=config.workers)

    runs, fates = {}, {}
    for group, stream in TRANSPLANT_STREAMS.items():
        seeds = stream_seeds(stream, config.seed, config.transplant_seeds)
        runs[group] = transplant(pair, group, seeds, S4_MODEL_NO_BIAS, schedule(config.transplant_first_epochs),
                                 schedule(config.transplant_second_epochs), config.transplant_train_fraction,
                                 generator, progress=progress)
        fates[group] = transplant_fates(runs[group], config.grok_threshold)
    return TransplantStudy(runs, fates)


# --- Predicting the outcome early ---------------------------------------------------------

#: The features of a seed at one logged epoch from which its outcome is predicted.
PREDICTION_FEATURES = ("accuracy against S4", "accuracy against A4xZ2", "training accuracy",
                       "log10 training loss")


def logged_features(result: SweepResult, row: int) -> torch.Tensor:
    """(B, 4) `PREDICTION_FEATURES` of every seed at the `row`-th logged epoch of `result`."""
    metrics = result.metrics
    return torch.stack([metrics["acc_g1"][row], metrics["acc_g2"][row], metrics["train_acc"][row],
                        metrics["train_loss"][row].clamp_min(1e-12).log10()], dim=1).double()


@dataclass
class EarlyPrediction:
    """How readable each seed's final outcome is from its `PREDICTION_FEATURES` at epoch t.

    Attributes:
        epochs: (T,) the epochs.
        auc_either: (T,) held-out ROC AUC for "grokked either group" against "neither".
        auc_group: (T,) the same for "grokked S4" against "grokked A4xZ2", among the grokkers
            (NaN when one of them has no seed).
        folds: the folds used for the two AUCs.
    """

    epochs: torch.Tensor
    auc_either: torch.Tensor
    auc_group: torch.Tensor
    folds: tuple[int, int]

    def first_epoch_at_or_above(self, auc: float, which: str = "either") -> int:
        """First epoch from which the AUC stays at or above `auc` to the end; -1 if never."""
        values = self.auc_either if which == "either" else self.auc_group
        above = (values >= auc).int().flip(0).cummin(dim=0).values.flip(0).bool()
        return int(self.epochs[above.nonzero()[0, 0]]) if above.any() else -1


def early_prediction(result: SweepResult, groups: torch.Tensor, every: int, folds: int,
                     generator: torch.Generator) -> EarlyPrediction:
    """Held-out AUCs of a logistic regression predicting each seed's outcome group (`groups`,
    `lib.grokking.study_sweep.outcome_groups`) from its features at every logged epoch that is a
    multiple of `every` (and the last)."""
    logged = result.log_epochs.tolist()
    rows = [i for i, e in enumerate(logged) if e % every == 0 or i == len(logged) - 1]
    grokked = groups < 2
    either_folds = min(folds, int(grokked.sum()), int((~grokked).sum()))
    group_folds = min(folds, int((groups == 0).sum()), int((groups == 1).sum()))
    auc_either, auc_group = [], []
    for row in rows:
        features = logged_features(result, row)
        auc_either.append(held_out_auc(features, grokked, either_folds, generator)
                          if either_folds >= 2 else float("nan"))
        auc_group.append(held_out_auc(features[grokked], groups[grokked] == 0, group_folds, generator)
                         if group_folds >= 2 else float("nan"))
    return EarlyPrediction(torch.tensor([logged[r] for r in rows]), torch.tensor(auc_either, dtype=torch.float64),
                           torch.tensor(auc_group, dtype=torch.float64), (either_folds, group_folds))


__all__ = [
    "Chapter6Parameters", "EarlyPrediction", "JacobianSpectra", "PREDICTION_FEATURES",
    "PUBLISHED_FLIP_RATES", "PUBLISHED_UNGROK_SHARES", "TotalVariationStudy",
    "TransplantStudy", "choose_per_outcome", "early_prediction", "jacobian_spectra", "logged_features",
    "outcomes_at", "retrain_with_snapshots", "total_variation_study",
    "transplant_both_ways",
]
