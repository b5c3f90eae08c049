"""The phase-transition study at the study's graph size: loss per path length on a fixed,
length-balanced evaluation set, every few steps, for several seeds (chapter 2).

The authors measured the transitions on every training batch of 2^15 fresh graphs of up to 15
vertices, one curve per label, and plotted log MSE against a linear step axis over the first
300 steps [@wang2024shortest]. On a CPU the batches are small, so a training batch holds few
examples of each length and its per-length loss is noisy. Here instead every `eval_every`
steps the model is scored on one fixed evaluation set that holds the same number of examples
of each length (`balanced_evaluation_set`): each length's curve is measured on the same
graphs at every step, and no length is scored on a handful of examples. Beside each length's
loss the study logs the model's mean prediction on that length's graphs: a loss can fall because
the model tells that length apart, or because one constant prediction for many lengths moves
closer to it, and only the mean predictions tell these apart (`lib.paths.constant_rival`).

`start_transition_study` trains one model per seed with `lib.paths.training` (the code of the
chapter's main run; chapter 2's recipe sets `width_buckets` on a CPU, so each batch runs in chunks of
graphs of similar width, `lib.paths.width_buckets`), in the background where it can; `PendingStudy.curves` (or
`run_transition_study`, which waits at once) returns the curves, and
`lib.paths.phase_transitions.detect_drops` dates the drops.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import torch
from tqdm.auto import tqdm

from lib.book.workers import Pending, start_in_workers
from lib.paths.sampler import SamplerOptions, sample_with_options
from lib.paths.prediction import predict
from lib.paths.training import PathTrainingConfig, start_training, train


@dataclasses.dataclass(frozen=True)
class BalancedEvaluationSet:
    """Graphs with `per_length` examples of every label in `lengths` (the unreachable label
    included when it is common enough)."""

    tokens: torch.Tensor
    labels: torch.Tensor
    lengths: tuple[int, ...]
    per_length: int


def balanced_evaluation_set(spec: SamplerOptions, per_length: int, generator: torch.Generator, *,
                            pool_size: int = 50_000, max_rounds: int = 20) -> BalancedEvaluationSet:
    """Draw graphs from the training distribution and keep the first `per_length` of every
    label that reaches that count within `max_rounds` pools of `pool_size` graphs.

    Labels too rare to fill `per_length` slots (the longest paths) are left out: their curve
    would rest on a few graphs.
    """
    kept_tokens: dict[int, list[torch.Tensor]] = {}
    counts: dict[int, int] = {}
    for _ in range(max_rounds):
        tokens, labels = sample_with_options(pool_size, spec, generator)
        for label in labels.long().unique().tolist():
            need = per_length - counts.get(label, 0)
            if need <= 0:
                continue
            rows = tokens[labels.long() == label][:need]
            kept_tokens.setdefault(label, []).append(rows)
            counts[label] = counts.get(label, 0) + len(rows)
        full = [label for label, count in counts.items() if count >= per_length]
        # Stop once every label seen so far but the rarest is full and another round adds none.
        if len(full) == len(counts):
            break
    lengths = tuple(sorted(label for label, count in counts.items() if count >= per_length))
    tokens = torch.cat([torch.cat(kept_tokens[label]) for label in lengths])
    labels = torch.cat([torch.full((per_length,), float(label)) for label in lengths])
    return BalancedEvaluationSet(tokens, labels, lengths, per_length)


@torch.no_grad()
def loss_and_mean_by_length(model: torch.nn.Module, evaluation: BalancedEvaluationSet
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """(len(lengths),) MSE of `model` on the evaluation examples of each length, and
    (len(lengths),) its mean prediction on them."""
    prediction = predict(model, evaluation.tokens.to(next(model.parameters()).device)).double().cpu()
    error = (prediction - evaluation.labels.double()) ** 2
    shape = (len(evaluation.lengths), evaluation.per_length)
    return error.view(shape).mean(dim=1), prediction.view(shape).mean(dim=1)


def loss_by_length(model: torch.nn.Module, evaluation: BalancedEvaluationSet) -> torch.Tensor:
    """(len(lengths),) MSE of `model` on the evaluation examples of each length."""
    return loss_and_mean_by_length(model, evaluation)[0]


@dataclasses.dataclass(frozen=True)
class TransitionCurves:
    """Loss per length over the early steps, one row per seed.

    Attributes:
        seeds: the seed of each model.
        steps: the steps at which the models were scored (0 first).
        lengths: the labels scored (path lengths, then the unreachable label).
        loss: (seeds, steps, lengths) MSE on the balanced evaluation set.
        mean_prediction: (seeds, steps, lengths) the mean prediction on the same graphs.
        seconds: wall-clock seconds of each seed's run.
        config: the training recipe (its seed field is the first seed's).
    """

    seeds: tuple[int, ...]
    steps: tuple[int, ...]
    lengths: tuple[int, ...]
    loss: torch.Tensor
    seconds: tuple[float, ...]
    config: PathTrainingConfig
    mean_prediction: torch.Tensor | None = None

    def curve(self, seed_index: int, length: int) -> list[float]:
        """The loss of one length over the steps for the model of `seeds[seed_index]`."""
        return self.loss[seed_index, :, self.lengths.index(length)].tolist()

    def mean_curve(self, seed_index: int, length: int) -> list[float]:
        """The mean prediction on one length's graphs over the steps (`seeds[seed_index]`)."""
        return self.mean_prediction[seed_index, :, self.lengths.index(length)].tolist()


def _study_steps(config: PathTrainingConfig, eval_every: int) -> list[int]:
    steps = list(range(0, config.total_steps + 1, eval_every))
    if steps[-1] != config.total_steps:
        steps.append(config.total_steps)
    return steps


def _one_seed(config: PathTrainingConfig, seed: int, evaluation: BalancedEvaluationSet, eval_every: int
              ) -> tuple[torch.Tensor, torch.Tensor, float]:
    """One model's curves: (steps, lengths) loss and mean prediction, and its seconds."""
    started = time.perf_counter()
    run = start_training(dataclasses.replace(config, seed=seed))
    curve, mean = [], []
    for step in _study_steps(config, eval_every):
        if step > run.step:
            train(run, until_step=step, progress=False)
        loss, prediction = loss_and_mean_by_length(run.model, evaluation)
        curve.append(loss)
        mean.append(prediction)
    return torch.stack(curve), torch.stack(mean), time.perf_counter() - started


@dataclasses.dataclass
class PendingStudy:
    """A transition study started by `start_transition_study`; `curves()` waits for it."""

    seeds: tuple[int, ...]
    steps: tuple[int, ...]
    lengths: tuple[int, ...]
    config: PathTrainingConfig
    pending: Pending

    @property
    def in_background(self) -> bool:
        """Whether the seeds train in worker processes while this process goes on."""
        return self.pending.in_background

    def curves(self, *, progress: bool = True) -> TransitionCurves:
        """The study's curves, once every seed's model is trained (a bar counts the seeds done)."""
        results = list(tqdm(self.pending.results(), total=len(self.seeds), disable=None if progress else True,
                            mininterval=30, desc="transition study"))
        losses, means, seconds = zip(*results)
        return TransitionCurves(self.seeds, self.steps, self.lengths, torch.stack(losses), tuple(seconds),
                                self.config, torch.stack(means))


def start_transition_study(config: PathTrainingConfig, seeds: Sequence[int], evaluation: BalancedEvaluationSet,
                           eval_every: int, *, workers: int = 1, this_process_helps: bool = False) -> PendingStudy:
    """Start training one model per seed with `config` (its seed replaced), each scored on
    `evaluation` at step 0 and every `eval_every` steps until the end of its schedule.

    On a CPU the seeds train now, in `workers` forked single-threaded worker processes
    (`lib.book.workers.start_in_workers`), while this process goes on (chapter 2 trains its main
    run meanwhile); with `this_process_helps`, `curves()` also trains here, on one thread, the
    seeds no worker has started yet; each model's numbers are then those of a single-threaded run
    in order. On a machine with a GPU, where fork is missing, or with no second process, they
    train one after the other, on this process's threads, when `curves()` is called.
    """
    pending = start_in_workers(lambda seed: _one_seed(config, seed, evaluation, eval_every), seeds, workers,
                               config.device, this_process_helps=this_process_helps)
    return PendingStudy(tuple(seeds), tuple(_study_steps(config, eval_every)), evaluation.lengths, config, pending)


def run_transition_study(config: PathTrainingConfig, seeds: Sequence[int], evaluation: BalancedEvaluationSet,
                         eval_every: int, *, progress: bool = True, workers: int = 1) -> TransitionCurves:
    """`start_transition_study` and wait for its curves."""
    return start_transition_study(config, seeds, evaluation, eval_every, workers=workers).curves(progress=progress)


__all__ = ["BalancedEvaluationSet", "PendingStudy", "TransitionCurves", "balanced_evaluation_set",
           "loss_and_mean_by_length", "loss_by_length", "run_transition_study", "start_transition_study"]
