"""Parameters and summary numbers of chapter 2 (`notebooks/02_training.py`).

The chapter's second cell passes its papermill parameters through `validate_parameters`, which
checks each with `lib.book.params` and returns a frozen `TrainingChapterConfig`; `smoke=True`
shrinks the run to seconds. `summarize_run` computes the numbers the chapter prints, asserts
and writes to `results_dir/02_training.json`.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from lib.book.params import (
    check_common, check_float, check_int, check_schedule,
)
from lib.paths.training import PathTrainingConfig, TrainingRun, constant_prediction_loss, predict
from lib.paths.phase_transitions import transition_steps

#: The published run [@wang2024shortest], for comparison in the text.
PUBLISHED = {
    "n_max": 15, "n_layers": 11, "batch_size": 2**15, "phase_steps": [6400, 3200],
    "learning_rates": [5e-4, 1e-4], "n_parameters": 550_433, "final_loss": 0.001623,
    "first_transitions": "length 1 near step 50, lengths 2 and 3 near step 80",
}


@dataclasses.dataclass(frozen=True)
class TrainingChapterConfig:
    """Validated parameters of chapter 2.

    Attributes:
        training: the training run's configuration.
        results_dir: where the JSON results and the checkpoint go.
        transition_threshold, transition_smoothing: how transitions are detected
            (see `lib.paths.phase_transitions.transition_step`).
        cpu_threads: torch threads when training on the CPU.
        smoke: whether this is the tiny test run.
    """

    training: PathTrainingConfig
    results_dir: str
    transition_threshold: float
    transition_smoothing: int
    cpu_threads: int
    smoke: bool


def validate_parameters(*, smoke, seed, device, results_dir, n_min, n_max, n_layers, batch_size,
                        learning_rates, phase_steps, log_every, snapshot_every, eval_size,
                        transition_threshold, transition_smoothing, cpu_threads) -> TrainingChapterConfig:
    """Check chapter 2's parameters and build its configuration.

    Raises:
        ParameterError: with one sentence naming the first bad parameter.
    """
    resolved = check_common(smoke, seed, device, results_dir)
    check_int("n_max", n_max, 3, 62)
    check_int("n_min", n_min, 2, n_max)
    check_int("n_layers", n_layers, 1, 64)
    check_int("batch_size", batch_size, 1, 2**20)
    rates, steps = check_schedule("learning_rates", learning_rates, "phase_steps", phase_steps)
    check_int("log_every", log_every, 1)
    check_int("snapshot_every", snapshot_every, 1)
    check_int("eval_size", eval_size, 16, 1_000_000)
    check_float("transition_threshold", transition_threshold, 0.0, low_inclusive=False)
    check_int("transition_smoothing", transition_smoothing, 1, 99)
    check_int("cpu_threads", cpu_threads, 1, 256)
    if smoke:
        n_layers, batch_size, eval_size = min(n_layers, 2), min(batch_size, 64), min(eval_size, 256)
        steps, log_every, snapshot_every = [min(s, 40) for s in steps], 5, 20
    training = PathTrainingConfig(
        n_layers=n_layers, n_min=n_min, n_max=n_max, task="pretrain", batch_size=batch_size,
        lr_schedule=tuple(zip(steps, rates)), log_every=log_every, snapshot_every=snapshot_every,
        eval_size=eval_size, seed=seed, device=str(resolved))
    return TrainingChapterConfig(training, results_dir, float(transition_threshold),
                                 transition_smoothing, cpu_threads, smoke)


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
