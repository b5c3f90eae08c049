"""Parameters and summary numbers of chapter 2's main run (`notebooks/02_training.py`).

`Chapter2Parameters` declares the chapter's papermill parameters (validated by
`lib.book.params.validate_parameters`; `smoke=True` shrinks the run to seconds): the main run
(the model chapters 3 and 7 build on) and the transition study at the study's graph size
(`lib.chapters.ch2_transitions` says what it found). `summarize_run` computes the numbers of
the main run that the chapter prints, asserts and writes to `results_dir/02_training.json`.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from lib.book.params import at_most, ChapterParameters, check_schedule, parameter, ParameterError
from lib.paths.training import PathTrainingConfig, TrainingRun, constant_prediction_loss, predict
from lib.paths.phase_transitions import Drop, DropSettings, detect_drops
from lib.paths.evaluation_curves import EvaluationCurves

#: The published run [@wang2024shortest], for comparison in the text.
PUBLISHED = {
    "n_max": 15, "n_layers": 11, "batch_size": 2**15, "phase_steps": [6400, 3200],
    "learning_rates": [5e-4, 1e-4], "n_parameters": 550_433, "final_loss": 0.001623,
    # length -> about the step of its drop (length 1's the first transition, 2 and 3's the second)
    "first_transitions": {1: 50, 2: 80, 3: 80},
}


@dataclasses.dataclass(frozen=True)
class Chapter2Parameters(ChapterParameters):
    """The papermill parameters of chapter 2, each with its type, bounds, help and smoke value."""

    n_min: int = parameter("fewest vertices in a graph", low=2, high=62)
    n_max: int = parameter("most vertices in a graph, also the number of edge slots (published: 15)",
                           low=3, high=62)
    n_layers: int = parameter("encoder layers (published: 11)", low=1, high=64,
                              smoke=at_most(2))
    batch_size: int = parameter("fresh graphs per step (published: 2**15)", low=1, high=2**20,
                                smoke=at_most(64))
    learning_rates: tuple[float, ...] = parameter(
        "learning rate of each phase (published: [5e-4, 1e-4])", low=0.0, high=1.0)
    phase_steps: tuple[int, ...] = parameter(
        "steps of each phase (published: [6400, 3200])", low=1,
        smoke=lambda steps: tuple(min(s, 40) for s in steps))
    log_every: int = parameter("steps per logging window of the loss by path length", low=1, smoke=5)
    snapshot_every: int = parameter("steps between predictions on the fixed evaluation batch",
                                    low=1, smoke=20)
    eval_size: int = parameter("size of the fixed evaluation batch", low=16, high=1_000_000,
                               smoke=at_most(256))
    study_n_max: int = parameter(
        "most vertices in the graphs of the transition study (the study's size: 15)", low=3, high=62)
    study_seeds: int = parameter("models in the transition study, seeded seed, seed + 1, ...", low=1, high=100,
                                 smoke=at_most(2))
    study_workers: int = parameter(
        "worker processes that train the transition study's models at once on a CPU (one per core)",
        low=1, high=256, smoke=at_most(1))
    study_steps: int = parameter("training steps of each model of the transition study (the study plotted 300)",
                                 low=10, smoke=at_most(30))
    study_batch_size: int = parameter("fresh graphs per step in the transition study", low=1, high=2**20,
                                      smoke=at_most(64))
    study_learning_rate: float = parameter("learning rate of the transition study (published: 5e-4)",
                                           low=0.0, high=1.0, low_inclusive=False)
    study_eval_every: int = parameter("steps between scorings of the transition study's models", low=1)
    study_eval_per_length: int = parameter(
        "evaluation graphs of each path length in the transition study", low=8, high=100_000, smoke=at_most(16))
    drop_smoothing: int = parameter("points in the running median of each log-loss curve before drops are dated",
                                    low=1, high=99)
    drop_min_decades: float = parameter("smallest fall (decades of loss) that counts as a drop", low=0.0,
                                        low_inclusive=False)
    drop_max_width: int = parameter("most steps a drop may take (from 10% to 90% of its fall)", low=1)
    cpu_threads: int = parameter(
        "torch threads on the CPU (one is fastest for this small model on 2 cores)", low=1, high=256)

    def check_consistency(self) -> None:
        if self.n_min > self.n_max:
            raise ParameterError(f"Parameter `n_min` must be an integer between 2 and {self.n_max}; "
                                 f"got {self.n_min}.")
        check_schedule("learning_rates", self.learning_rates, "phase_steps", self.phase_steps)
        if self.n_min > self.study_n_max:
            raise ParameterError(f"Parameter `study_n_max` must be an integer between {self.n_min} and 62; "
                                 f"got {self.study_n_max}.")
        if self.study_eval_every > self.study_steps:
            raise ParameterError(f"Parameter `study_eval_every` must be at most `study_steps` "
                                 f"({self.study_steps}); got {self.study_eval_every}.")

    @property
    def training(self) -> PathTrainingConfig:
        """The training run these parameters describe."""
        return PathTrainingConfig(
            n_layers=self.n_layers, n_min=self.n_min, n_max=self.n_max, task="pretrain",
            batch_size=self.batch_size, lr_schedule=tuple(zip(self.phase_steps, self.learning_rates)),
            log_every=self.log_every, snapshot_every=self.snapshot_every, eval_size=self.eval_size,
            seed=self.seed, device=str(self.device))

    @property
    def study(self) -> PathTrainingConfig:
        """The recipe of each model of the transition study (its seed: the first seed's)."""
        return PathTrainingConfig(
            n_layers=self.n_layers, n_min=self.n_min, n_max=self.study_n_max, task="pretrain",
            batch_size=self.study_batch_size, lr_schedule=((self.study_steps, self.study_learning_rate),),
            log_every=self.study_eval_every, snapshot_every=self.study_steps, eval_size=16,
            seed=self.seed, device=str(self.device))

    @property
    def study_seed_list(self) -> tuple[int, ...]:
        """The seeds of the transition study's models."""
        return tuple(self.seed + k for k in range(self.study_seeds))

    @property
    def drop_settings(self) -> DropSettings:
        """What counts as a drop (the window and the plateau keep `DropSettings`' defaults)."""
        return DropSettings(smoothing=self.drop_smoothing, min_decades=self.drop_min_decades,
                            max_width=self.drop_max_width)


#: Fewest examples of a length in a logging window of the main run for the window to count.
MIN_WINDOW_COUNT = 5


def main_run_drops(run: TrainingRun, settings: DropSettings) -> dict[int, Drop]:
    """Drops of every length in the main run's logged training loss (windows with fewer than
    `MIN_WINDOW_COUNT` examples of a length are missing points of its curve)."""
    losses = run.log.loss_by_length_tensor().clone()
    losses[torch.tensor(run.log.count_by_length) < MIN_WINDOW_COUNT] = math.nan
    curves = {k: losses[:, k].tolist() for k in range(losses.shape[1]) if not torch.isnan(losses[:, k]).all()}
    return detect_drops(run.log.steps, curves, settings)


def evaluation_drops(curves: EvaluationCurves, settings: DropSettings, min_count: int = 20) -> dict[int, Drop]:
    """Drops of every label with at least `min_count` examples in the main run's loss on its
    fixed evaluation batch (`lib.paths.evaluation_curves`)."""
    kept = [k for k, n in zip(curves.labels, curves.counts) if n >= min_count]
    return detect_drops(curves.steps, {k: curves.curve(k) for k in kept}, settings)


def summarize_run(run: TrainingRun, settings: DropSettings, curves: EvaluationCurves | None = None) -> dict:
    """The chapter's key numbers for a finished run.

    Returns:
        A dict with final_loss (MSE of the final model on the fixed evaluation batch),
        loss_by_length ({length: that MSE restricted to the length}), count_by_length,
        constant_prediction_loss (MSE of always predicting the mean label on that batch),
        final_training_loss (last logging window), drop_by_length ({length: `Drop.to_dict()` of
        its loss on the evaluation batch over `curves`, `evaluation_drops`; without `curves`, of
        its logged training loss, `main_run_drops`}), n_parameters,
        steps, examples_per_second, seconds and sampling_share (fraction of the time spent
        drawing graphs).
    """
    predictions = predict(run.model, run.eval_tokens).double()
    labels = run.eval_labels.double()
    squared_error = (predictions - labels) ** 2
    loss_by_length, count_by_length = {}, {}
    for length in sorted(set(labels.long().tolist())):
        chosen = labels.long() == length
        loss_by_length[length] = float(squared_error[chosen].mean())
        count_by_length[length] = int(chosen.sum())
    drops = main_run_drops(run, settings) if curves is None else evaluation_drops(curves, settings)
    return {
        "final_loss": float(squared_error.mean()),
        "loss_by_length": loss_by_length,
        "count_by_length": count_by_length,
        "constant_prediction_loss": constant_prediction_loss(run.eval_labels),
        "final_training_loss": run.log.loss[-1],
        "drop_by_length": {length: drop.to_dict() for length, drop in drops.items()},
        "n_parameters": run.n_parameters,
        "steps": run.step,
        "examples_per_second": run.examples_per_second,
        "seconds": run.seconds,
        "sampling_share": run.seconds_sampling / run.seconds if run.seconds else math.nan,
    }


@dataclasses.dataclass(frozen=True)
class LearningOrder:
    """What chapter 2's summary says about the order in which path lengths were learned."""

    common_lengths: tuple[int, ...]   # lengths with at least `min_share` of the evaluation batch
    in_length_order: bool             # lengths with a drop dropped shortest first (unreachable excluded)
    hardest_length: int               # the label with the largest final loss
    hardest_unreachable: bool         # that label is the one of unreachable targets
    hardest_loss: float
    hardest_count: int                # evaluation examples with that label


def learning_order(summary: dict, unreachable_label: int, min_share: float = 0.02) -> LearningOrder:
    """Read the order of the drops and the hardest label off a `summarize_run` dict."""
    drops = summary["drop_by_length"]
    eval_size = sum(summary["count_by_length"].values())
    common = tuple(length for length, count in summary["count_by_length"].items()
                   if count >= min_share * eval_size and length in drops)
    dropped = sorted((drop["step"], length) for length, drop in drops.items()
                     if drop["dropped"] and length != unreachable_label)
    in_order = [length for _, length in dropped] == sorted(length for _, length in dropped)
    hardest = max(summary["loss_by_length"], key=summary["loss_by_length"].get)
    return LearningOrder(common, in_order, hardest, hardest == unreachable_label,
                         summary["loss_by_length"][hardest], summary["count_by_length"][hardest])
