"""Parameters and summary numbers of chapter 2's main run (`notebooks/02_training.py`).

`Chapter2Parameters` declares the chapter's papermill parameters (validated by
`lib.book.params.validate_parameters`; `smoke=True` shrinks the run to seconds): the main run
(the model chapters 3 and 7 build on) and the transition study at the study's graph size
(`lib.paths.transition_drops` and `lib.paths.transition_verdicts` read what it found). The
numbers of the main run that the chapter prints, asserts and writes to
`results_dir/02_training.json` are computed by `lib.paths.main_run_summary.summarize_run`.
"""

from __future__ import annotations

import dataclasses

import torch

from lib.book.params import at_most, ChapterParameters, check_schedule, parameter, ParameterError
from lib.paths.training import PathTrainingConfig
from lib.paths.phase_transitions import DropSettings

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
        "worker processes that train the transition study's models on a CPU while the main run trains; "
        "this process joins them after it (one worker: one busy process per core)",
        low=1, high=256, smoke=at_most(1))
    study_steps: int = parameter("training steps of each model of the transition study (the study plotted 300)",
                                 low=10, smoke=at_most(30))
    study_batch_size: int = parameter("fresh graphs per step in the transition study", low=1, high=2**20,
                                      smoke=at_most(64))
    study_width_buckets: int = parameter(
        "on a CPU, chunks of graphs of similar width each training batch of the transition study runs in, "
        "each on its widest graph's edge slots (0: every graph on all slots; see lib.paths.width_buckets)",
        low=0, high=64)
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
        "torch threads of the main run on the CPU (one: the study's workers train beside it)", low=1, high=256)
    state_every_s: float = parameter(
        "seconds between saves of the main run's whole state to results_dir/02_training_state.pt, from which "
        "a stopped run continues (tools/published.py); 0: no state, the weights are scored after the run",
        low=0.0)

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
    def state_path(self) -> str:
        """Where the main run keeps its state when `state_every_s` is above 0."""
        return f"{self.results_dir}/02_training_state.pt"

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
            # On a GPU the extra, smaller passes cost more than the padding (as in `predict`).
            width_buckets=self.study_width_buckets if torch.device(self.device).type == "cpu" else 0,
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


