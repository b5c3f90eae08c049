"""A main run that can be stopped at any moment and continued later (chapter 2 at the published
scale: `tools/published.py`'s step ch2_published, whose 9,600 steps outlast one short GPU loan).

`lib.paths.evaluation_curves.train_keeping_weights` keeps a copy of the weights at every scoring
step and scores them after the run (2 GB of copies at the published scale). A run that must
survive being stopped scores each copy at once instead (`score_by_label`, on the run's device)
and keeps only the scores, so that its whole future fits in one file of about 11 MB at the
published scale: the run (`lib.paths.training.training_state`: weights, Adam's state, the data
stream's generator, the step, the loss log and the snapshots) and the scores so far.

`train_resumably` saves that file, atomically, every `save_every_s` seconds and at the end, with a
small JSON beside it saying how far the run got (`read_progress`, which `tools/published.py`
prints). When the file is there it continues from it: the steps, batches, updates and scores
are those of a run that never stopped, on the same kind of device (a CUDA generator's state
does not load into a CPU generator, so a run saved on a GPU continues on a GPU).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import torch
from tqdm.auto import tqdm

from lib.book.results import save_checkpoint
from lib.paths.evaluation_curves import EvaluationCurves, score_by_label, scoring_steps
from lib.paths.training import PathTrainingConfig, TrainingRun, load_training_run, start_training, train, \
    training_state

#: The key of the scores so far in the saved state (the other keys are `training_state`'s).
SCORES_KEY = "scores_so_far"


def progress_path(state_path: str | Path) -> Path:
    """The JSON beside a state file that says how far its run got."""
    state_path = Path(state_path)
    return state_path.with_name(state_path.stem + "_progress.json")


def read_progress(state_path: str | Path) -> dict | None:
    """How far the run saved at `state_path` got ({"step", "total_steps", "seconds", "device",
    "saved"}), or None where no state was saved."""
    path = progress_path(state_path)
    return json.loads(path.read_text()) if path.exists() and Path(state_path).exists() else None


def save_state(run: TrainingRun, scores: list[tuple[int, tuple]], state_path: str | Path) -> None:
    """Save `run` and its scores so far to `state_path` (atomically), then its progress JSON.
    The evaluation batch's tokens are stored as int8 (vertex ids and the few special tokens)."""
    state = training_state(run)
    if int(state["eval_tokens"].max()) > torch.iinfo(torch.int8).max:
        raise ValueError("the evaluation tokens do not fit in int8; this run cannot be saved compactly.")
    state["eval_tokens"] = state["eval_tokens"].to(torch.int8)
    state[SCORES_KEY] = [(step, loss, mean, list(labels), list(counts))
                         for step, (loss, mean, labels, counts) in scores]
    save_checkpoint(state_path, state)
    progress = {"step": run.step, "total_steps": run.config.total_steps, "seconds": round(run.seconds, 1),
                "device": run.config.device, "saved": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    # Written whole or not at all: `tools/published.py` and the tests read it while the run goes on.
    path = progress_path(state_path)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(progress, indent=2) + "\n")
    os.replace(partial, path)


def load_state(state_path: str | Path, config: PathTrainingConfig) -> tuple[TrainingRun, list[tuple[int, tuple]]]:
    """The run and scores saved at `state_path`, on `config`'s device; a state saved for another
    configuration, or on another kind of device, stops with one sentence."""
    state = torch.load(state_path, map_location="cpu", weights_only=True)
    saved = PathTrainingConfig.from_dict(state["config"])
    if dataclasses.replace(saved, device=config.device) != config:
        raise ValueError(f"{state_path} holds a run of another configuration ({saved}); remove it to start "
                         f"afresh.")
    saved_type, wanted_type = torch.device(saved.device).type, torch.device(config.device).type
    if saved_type != wanted_type:
        raise ValueError(f"{state_path} was saved on a {saved_type} device, and this run is on a {wanted_type} "
                         f"one: its data stream's generator continues only on a {saved_type} device.")
    run = load_training_run(state_path, device=config.device)
    run.eval_tokens = run.eval_tokens.long()
    scores = [(int(step), (loss, mean, tuple(labels), tuple(counts)))
              for step, loss, mean, labels, counts in state[SCORES_KEY]]
    return run, scores


def train_resumably(config: PathTrainingConfig, every: int, state_path: str | Path, *, save_every_s: float,
                    progress: bool = True, after_scoring: Callable[[int], None] | None = None
                    ) -> tuple[TrainingRun, EvaluationCurves]:
    """Train a run of `config` to the end of its schedule, continuing the one saved at
    `state_path` if there is one, scoring it on its evaluation batch at its first step, every
    `every` steps and at the end (`score_by_label`), and saving it with its scores every
    `save_every_s` seconds and at the end. `after_scoring(step)` is called after each scoring (the
    tests stop a run there). Returns the finished run and its evaluation curves."""
    if Path(state_path).exists():
        run, scores = load_state(state_path, config)
    else:
        run, scores = start_training(config), []
    saved_at = time.monotonic()
    bar = tqdm(total=config.total_steps, initial=run.step, disable=None if progress else True, mininterval=30,
               desc="training")
    for step in scoring_steps(run, every):
        if scores and step <= scores[-1][0]:
            continue                    # scored before the run was stopped
        if step > run.step:
            done = run.step
            train(run, until_step=step, progress=False)
            bar.update(run.step - done)
        scores.append((step, score_by_label(run)))
        if after_scoring is not None:
            after_scoring(step)
        if time.monotonic() - saved_at >= save_every_s or run.step == config.total_steps:
            save_state(run, scores, state_path)
            saved_at = time.monotonic()
    bar.close()
    _, (_, _, labels, counts) = scores[0]
    curves = EvaluationCurves(tuple(step for step, _ in scores), labels, counts,
                              torch.stack([loss for _, (loss, _, _, _) in scores]),
                              torch.stack([mean for _, (_, mean, _, _) in scores]))
    return run, curves


__all__ = ["SCORES_KEY", "load_state", "progress_path", "read_progress", "save_state", "train_resumably"]
