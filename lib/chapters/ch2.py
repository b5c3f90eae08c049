"""Parameters and summary numbers of chapter 2 (`notebooks/02_training.py`).

`Chapter2Parameters` declares the chapter's papermill parameters (validated by
`lib.book.params.validate_parameters`; `smoke=True` shrinks the run to seconds). `summarize_run` computes the numbers the chapter prints, asserts
and writes to `results_dir/02_training.json`.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from lib.book.params import at_most, ChapterParameters, check_schedule, parameter, ParameterError
from lib.paths.training import PathTrainingConfig, TrainingRun, constant_prediction_loss, predict
from lib.paths.phase_transitions import transition_steps

#: The published run [@wang2024shortest], for comparison in the text.
PUBLISHED = {
    "n_max": 15, "n_layers": 11, "batch_size": 2**15, "phase_steps": [6400, 3200],
    "learning_rates": [5e-4, 1e-4], "n_parameters": 550_433, "final_loss": 0.001623,
    "first_transitions": "length 1 near step 50, lengths 2 and 3 near step 80",
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
    transition_threshold: float = parameter(
        "a length counts as learned once its loss stays below this", low=0.0, low_inclusive=False)
    transition_smoothing: int = parameter(
        "logging windows in the running median applied before detection", low=1, high=99)
    cpu_threads: int = parameter(
        "torch threads on the CPU (one is fastest for this small model on 2 cores)", low=1, high=256)

    def check_consistency(self) -> None:
        if self.n_min > self.n_max:
            raise ParameterError(f"Parameter `n_min` must be an integer between 2 and {self.n_max}; "
                                 f"got {self.n_min}.")
        check_schedule("learning_rates", self.learning_rates, "phase_steps", self.phase_steps)

    @property
    def training(self) -> PathTrainingConfig:
        """The training run these parameters describe."""
        return PathTrainingConfig(
            n_layers=self.n_layers, n_min=self.n_min, n_max=self.n_max, task="pretrain",
            batch_size=self.batch_size, lr_schedule=tuple(zip(self.phase_steps, self.learning_rates)),
            log_every=self.log_every, snapshot_every=self.snapshot_every, eval_size=self.eval_size,
            seed=self.seed, device=str(self.device))


def summarize_run(run: TrainingRun, threshold: float, smoothing: int = 3) -> dict:
    """The chapter's key numbers for a finished run.

    Returns:
        A dict with final_loss (MSE of the final model on the fixed evaluation batch),
        loss_by_length ({length: that MSE restricted to the length}), count_by_length,
        constant_prediction_loss (MSE of always predicting the mean label on that batch),
        final_training_loss (last logging window), transition_step_by_length, n_parameters,
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
    transitions = transition_steps(run.log.steps, run.log.loss_by_length, threshold,
                                   smoothing=smoothing, min_count=run.log.count_by_length)
    return {
        "final_loss": float(squared_error.mean()),
        "loss_by_length": loss_by_length,
        "count_by_length": count_by_length,
        "constant_prediction_loss": constant_prediction_loss(run.eval_labels),
        "final_training_loss": run.log.loss[-1],
        "transition_step_by_length": transitions,
        "n_parameters": run.n_parameters,
        "steps": run.step,
        "examples_per_second": run.examples_per_second,
        "seconds": run.seconds,
        "sampling_share": run.seconds_sampling / run.seconds if run.seconds else math.nan,
    }


def transition_sentence(transitions: dict[int, int | None], unreachable_label: int) -> str:
    """Plain-language order of learning, e.g. "length 1 at step 60, then length 2 at step 190"."""
    learned = sorted(((step, length) for length, step in transitions.items() if step is not None))
    if not learned:
        return "no length fell below the threshold"
    names = [("unreachable targets" if length == unreachable_label else f"length {length}")
             + f" at step {step}" for step, length in learned]
    return ", then ".join(names)



def format_example(tokens: torch.Tensor, label: float) -> str:
    """One example as text: its edges, its target and its label."""
    edges = [f"({a},{b})" for a, b in tokens[:-1].tolist() if a]
    target, target_token = tokens[-1].tolist()
    padding = len(tokens) - 1 - len(edges)
    return (f"edges: {' '.join(edges)}  + {padding} padding pairs (0,0)\n"
            f"query pair: ({target},{target_token})  -> label {int(label)}")


@dataclasses.dataclass(frozen=True)
class LearningOrder:
    """What chapter 2's summary says about the order in which path lengths were learned."""

    common_lengths: tuple[int, ...]   # lengths with at least `min_share` of the evaluation batch
    in_length_order: bool             # path lengths learned shortest first (unreachable excluded)
    hardest_length: int               # the label with the largest final loss
    hardest_name: str                 # "paths of length k" or "unreachable targets"
    hardest_loss: float
    hardest_count: int                # evaluation examples with that label


def learning_order(summary: dict, unreachable_label: int, min_share: float = 0.02) -> LearningOrder:
    """Read the order of learning and the hardest label off a `summarize_run` dict."""
    transitions = summary["transition_step_by_length"]
    eval_size = sum(summary["count_by_length"].values())
    common = tuple(length for length, count in summary["count_by_length"].items()
                   if count >= min_share * eval_size and length in transitions)
    learned = sorted((step, length) for length, step in transitions.items()
                     if step is not None and length != unreachable_label)
    in_order = [length for _, length in learned] == sorted(length for _, length in learned)
    hardest = max(summary["loss_by_length"], key=summary["loss_by_length"].get)
    name = "unreachable targets" if hardest == unreachable_label else f"paths of length {hardest}"
    return LearningOrder(common, in_order, hardest, name, summary["loss_by_length"][hardest],
                         summary["count_by_length"][hardest])
