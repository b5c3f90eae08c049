"""The phase-transition study at the study's graph size: loss per path length on a fixed,
length-balanced evaluation set, every few steps, for several seeds (chapter 2).

The authors measured the transitions on every training batch of 2^15 fresh graphs of up to 15
vertices, one curve per label, and plotted log MSE against a linear step axis over the first
300 steps [@wang2024shortest]. On a CPU the batches are small, so a training batch holds few
examples of each length and its per-length loss is noisy. Here instead every `eval_every`
steps the model is scored on one fixed evaluation set that holds the same number of examples
of each length (`balanced_evaluation_set`): each length's curve is measured on the same
graphs at every step, and no length is scored on a handful of examples.

`run_transition_study` trains one model per seed with `lib.paths.training` (the code of the
chapter's main run) and returns the curves; `lib.paths.phase_transitions.detect_drops` dates
the drops.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import torch
from tqdm.auto import tqdm

from lib.paths.sampler import SamplerOptions, sample_with_options
from lib.paths.training import PathTrainingConfig, predict, start_training, train


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
def loss_by_length(model: torch.nn.Module, evaluation: BalancedEvaluationSet) -> torch.Tensor:
    """(len(lengths),) MSE of `model` on the evaluation examples of each length."""
    prediction = predict(model, evaluation.tokens.to(next(model.parameters()).device)).double().cpu()
    error = (prediction - evaluation.labels.double()) ** 2
    return error.view(len(evaluation.lengths), evaluation.per_length).mean(dim=1)


@dataclasses.dataclass(frozen=True)
class TransitionCurves:
    """Loss per length over the early steps, one row per seed.

    Attributes:
        seeds: the seed of each model.
        steps: the steps at which the models were scored (0 first).
        lengths: the labels scored (path lengths, then the unreachable label).
        loss: (seeds, steps, lengths) MSE on the balanced evaluation set.
        seconds: wall-clock seconds of each seed's run.
        config: the training recipe (its seed field is the first seed's).
    """

    seeds: tuple[int, ...]
    steps: tuple[int, ...]
    lengths: tuple[int, ...]
    loss: torch.Tensor
    seconds: tuple[float, ...]
    config: PathTrainingConfig

    def curve(self, seed_index: int, length: int) -> list[float]:
        """The loss of one length over the steps for the model of `seeds[seed_index]`."""
        return self.loss[seed_index, :, self.lengths.index(length)].tolist()


def run_transition_study(config: PathTrainingConfig, seeds: Sequence[int], evaluation: BalancedEvaluationSet,
                         eval_every: int, *, progress: bool = True) -> TransitionCurves:
    """Train one model per seed with `config` (its seed replaced) and score it on `evaluation`
    at step 0 and every `eval_every` steps until the end of its schedule."""
    steps = list(range(0, config.total_steps + 1, eval_every))
    if steps[-1] != config.total_steps:
        steps.append(config.total_steps)
    losses, seconds = [], []
    bar = tqdm(total=len(seeds) * config.total_steps, disable=None if progress else True, mininterval=30,
               desc="transition study")
    for seed in seeds:
        started = time.perf_counter()
        run = start_training(dataclasses.replace(config, seed=seed))
        curve = []
        for step in steps:
            if step > run.step:
                done = run.step
                train(run, until_step=step, progress=False)
                bar.update(run.step - done)
            curve.append(loss_by_length(run.model, evaluation))
        losses.append(torch.stack(curve))
        seconds.append(time.perf_counter() - started)
    bar.close()
    return TransitionCurves(tuple(seeds), tuple(steps), evaluation.lengths, torch.stack(losses),
                            tuple(seconds), config)


__all__ = ["BalancedEvaluationSet", "TransitionCurves", "balanced_evaluation_set", "loss_by_length",
           "run_transition_study"]
