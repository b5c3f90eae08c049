"""Loss and mean prediction of every label on a run's fixed evaluation batch, every few steps
(chapter 2's main run).

`lib.paths.training.train` logs the training loss of each path length over windows of fresh
batches, which says how far a length's loss fell but not why: the model may have learned to tell
that length apart, or one constant prediction for many lengths may have moved closer to it.
`train_with_curves` trains a run exactly as `train` does (the same steps, batches and updates:
only predictions without gradients are added between them, so the model is the same) and every
`every` steps scores the model on the run's fixed evaluation batch, one row of loss and one row
of mean prediction per label. `lib.paths.constant_rival` reads the two together.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from tqdm.auto import tqdm

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


def train_with_curves(run: TrainingRun, every: int, *, progress: bool = True) -> EvaluationCurves:
    """Train `run` to the end of its schedule as `lib.paths.training.train` does, scoring it on
    its evaluation batch at its current step and every `every` steps (and at the end)."""
    total = run.config.total_steps
    steps = [run.step] + [s for s in range(math.ceil((run.step + 1) / every) * every, total + 1, every)]
    if steps[-1] != total:
        steps.append(total)
    losses, means, labels, counts = [], [], (), ()
    bar = tqdm(total=total - run.step, disable=None if progress else True, mininterval=30, desc="training")
    for step in steps:
        if step > run.step:
            done = run.step
            train(run, until_step=step, progress=False)
            bar.update(run.step - done)
        loss, mean, labels, counts = score_by_label(run)
        losses.append(loss)
        means.append(mean)
    bar.close()
    return EvaluationCurves(tuple(steps), labels, counts, torch.stack(losses), torch.stack(means))


__all__ = ["EvaluationCurves", "score_by_label", "train_with_curves"]
