"""Loss and mean prediction of every label on a run's fixed evaluation batch, every few steps
(chapter 2's main run).

`lib.paths.training.train` logs the training loss of each path length over windows of fresh
batches, which says how far a length's loss fell but not why: the model may have learned to tell
that length apart, or one constant prediction for many lengths may have moved closer to it.
`train_keeping_weights` trains a run exactly as `train` does (the same steps, batches and updates)
and keeps a copy of the model's weights every `every` steps; `start_scoring` (or `score_weights`,
which waits at once) scores each copy on the run's fixed evaluation batch, one row of loss and one
row of mean prediction per label. The scoring is apart from the training so that it can run in
another process once the run is done: chapter 2 scores in a worker while its own process trains
the transition study's seeds, and each copy gets the numbers scoring the model there, on one
thread, would give. `train_with_curves` does both here. `lib.paths.constant_rival` reads the two
curves together.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import torch
from tqdm.auto import tqdm

from lib.book.workers import Pending, start_in_workers
from lib.paths.prediction import predict
from lib.paths.training import TrainingRun, train


@dataclasses.dataclass(frozen=True)
class EvaluationCurves:
    """A run's loss and mean prediction per label on its fixed evaluation batch over steps.

    Attributes:
        steps: the steps at which the model was scored (the run's step when it started first).
        labels: the labels of the evaluation batch (columns of `loss` and `mean_prediction`).
        counts: evaluation examples of each label.
        loss: (steps, labels) MSE on the examples of each label.
        mean_prediction: (steps, labels) mean prediction on them.
    """

    steps: tuple[int, ...]
    labels: tuple[int, ...]
    counts: tuple[int, ...]
    loss: torch.Tensor
    mean_prediction: torch.Tensor

    def curve(self, label: int) -> list[float]:
        """The loss of one label over the steps."""
        return self.loss[:, self.labels.index(label)].tolist()

    def mean_curve(self, label: int) -> list[float]:
        """The mean prediction on one label's examples over the steps."""
        return self.mean_prediction[:, self.labels.index(label)].tolist()

    def to_dict(self) -> dict:
        """Plain types, for the results JSON."""
        return {"steps": list(self.steps), "labels": list(self.labels), "counts": list(self.counts),
                "loss": self.loss.tolist(), "mean_prediction": self.mean_prediction.tolist()}


def score_by_label(run: TrainingRun) -> tuple[torch.Tensor, torch.Tensor, tuple[int, ...], tuple[int, ...]]:
    """Loss and mean prediction of each label of the run's evaluation batch, the labels and
    their counts."""
    labels = run.eval_labels.long().cpu()
    prediction = predict(run.model, run.eval_tokens).double().cpu()
    present = tuple(sorted(set(labels.tolist())))
    loss, mean, counts = [], [], []
    for label in present:
        chosen = labels == label
        loss.append(float(((prediction[chosen] - label) ** 2).mean()))
        mean.append(float(prediction[chosen].mean()))
        counts.append(int(chosen.sum()))
    return (torch.tensor(loss, dtype=torch.float64), torch.tensor(mean, dtype=torch.float64), present,
            tuple(counts))


def scoring_steps(run: TrainingRun, every: int) -> list[int]:
    """The run's current step, every multiple of `every` after it, and the end of its schedule."""
    total = run.config.total_steps
    steps = [run.step] + [s for s in range(math.ceil((run.step + 1) / every) * every, total + 1, every)]
    if steps[-1] != total:
        steps.append(total)
    return steps


def train_keeping_weights(run: TrainingRun, every: int, *, progress: bool = True
                          ) -> list[tuple[int, dict[str, torch.Tensor]]]:
    """Train `run` to the end of its schedule as `lib.paths.training.train` does, keeping
    (step, a copy of the model's weights) at `scoring_steps`.

    The copies stay on the run's device: at chapter 2's defaults 251 copies of 0.2 M parameters
    (about 200 MB), at the published scale 962 of 0.55 M (about 2.1 GB).
    """
    kept = []
    bar = tqdm(total=run.config.total_steps - run.step, disable=None if progress else True, mininterval=30,
               desc="training")
    for step in scoring_steps(run, every):
        if step > run.step:
            done = run.step
            train(run, until_step=step, progress=False)
            bar.update(run.step - done)
        kept.append((step, {name: value.detach().clone() for name, value in run.model.state_dict().items()}))
    bar.close()
    return kept


@dataclasses.dataclass
class PendingCurves:
    """The scoring started by `start_scoring`; `curves()` waits for it."""

    steps: tuple[int, ...]
    pending: Pending

    @property
    def in_background(self) -> bool:
        """Whether a worker process scores while this process goes on."""
        return self.pending.in_background

    def curves(self) -> EvaluationCurves:
        """The run's evaluation curves, once every kept copy is scored."""
        losses, means, labels, counts = [], [], (), ()
        for loss, mean, labels, counts in self.pending.results():
            losses.append(loss)
            means.append(mean)
        return EvaluationCurves(self.steps, labels, counts, torch.stack(losses), torch.stack(means))


def start_scoring(run: TrainingRun, kept: list[tuple[int, dict[str, torch.Tensor]]], *,
                  workers: int = 1) -> PendingCurves:
    """Start scoring each kept copy of `run`'s weights on its evaluation batch (`score_by_label`).

    On a CPU the copies are scored now in `workers` forked single-threaded processes
    (`lib.book.workers.start_in_workers`) while this process goes on, and `curves()` scores here,
    on one thread, those no worker has started. On a machine with a GPU, or where fork is
    missing, they are scored here, on this process's threads, when `curves()` is called. The
    run's own model is left as it is.
    """
    scorer = dataclasses.replace(run, model=copy.deepcopy(run.model))

    def score(weights: dict[str, torch.Tensor]) -> tuple:
        scorer.model.load_state_dict(weights)
        return score_by_label(scorer)

    pending = start_in_workers(score, [weights for _, weights in kept], workers, run.config.device,
                               this_process_helps=True)
    return PendingCurves(tuple(step for step, _ in kept), pending)


def score_weights(run: TrainingRun, kept: list[tuple[int, dict[str, torch.Tensor]]]) -> EvaluationCurves:
    """The kept copies of `run`'s weights scored here, on this process's threads."""
    return start_scoring(run, kept, workers=0).curves()


def train_with_curves(run: TrainingRun, every: int, *, progress: bool = True) -> EvaluationCurves:
    """Train `run` to the end of its schedule as `lib.paths.training.train` does, scoring it on
    its evaluation batch at its current step and every `every` steps (and at the end), here."""
    return score_weights(run, train_keeping_weights(run, every, progress=progress))


__all__ = ["EvaluationCurves", "PendingCurves", "score_by_label", "score_weights", "scoring_steps", "start_scoring",
           "train_keeping_weights", "train_with_curves"]
