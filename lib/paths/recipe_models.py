"""Models of chapter 2's recipe kept on disk, trained once for every chapter that needs them.

Chapter 3's replicate seeds and chapter 7's models of other seeds and depths are chapter 2's
training configuration with one field changed, and chapter 3 pre-trains the very models (seeds
1 and 2) that chapter 7 probes. `recipe_path` names the file of a configuration by a hash of the
configuration (its device aside), so that a model one chapter trained is found by the other;
`ensure_recipe_run` loads a finished run of exactly this configuration, resumes an interrupted
one, or trains it, writing a checkpoint as it goes; `finished_recipe_run` only loads. Both
chapters train these models in single-threaded worker processes (`lib.book.workers`), so a
model's weights are the same on one machine whichever chapter trained it.

A saved run is matched by its configuration, not by the training code that produced it: after a
change to `lib.paths.training` or the sampler, delete the `recipe_*.pt` files (or start from an
empty results folder, as `make reproduce` does) so that the models are trained again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from lib.paths.training import PathTrainingConfig, TrainingRun, load_training_run, start_training, train

#: The sources `ensure_recipe_run` reports.
LOADED, TRAINED = "a saved run of this recipe", "trained with chapter 2's code"


@dataclass
class RecipeRun:
    """A finished training run of one configuration: the run, where it came from and the seconds
    this call took (loading, or training what was missing)."""

    run: TrainingRun
    source: str
    seconds: float


def _without_device(config: PathTrainingConfig) -> PathTrainingConfig:
    return dataclasses.replace(config, device="cpu")


def recipe_path(results_dir: str | os.PathLike, config: PathTrainingConfig) -> Path:
    """The checkpoint file of `config` in `results_dir`: its depth and seed in the name for a
    reader, and 12 hex digits of a hash of the whole configuration (device aside)."""
    digest = hashlib.sha256(repr(_without_device(config)).encode()).hexdigest()[:12]
    return Path(results_dir) / f"recipe_{config.n_layers}_layers_seed_{config.seed}_{digest}.pt"


def _saved_run(config: PathTrainingConfig, results_dir: str | os.PathLike) -> TrainingRun | None:
    """The run saved for exactly `config` in `results_dir` (finished or not), None when there is none."""
    path = recipe_path(results_dir, config)
    if not path.exists():
        return None
    saved = load_training_run(path, device=config.device)
    return saved if _without_device(saved.config) == _without_device(config) else None


def finished_recipe_run(config: PathTrainingConfig, results_dir: str | os.PathLike) -> RecipeRun | None:
    """The finished run of `config` loaded from `results_dir` (model in eval mode), None when it is
    missing or unfinished. Chapter 7 loads what is there before it trains what is not."""
    started = time.perf_counter()
    run = _saved_run(config, results_dir)
    if run is None or run.step < config.total_steps:
        return None
    run.model.eval()
    return RecipeRun(run, LOADED, time.perf_counter() - started)


def ensure_recipe_run(config: PathTrainingConfig, results_dir: str | os.PathLike, *, checkpoint_every: int = 250,
                      progress: bool = False) -> RecipeRun:
    """The finished run of `config`: loaded from `recipe_path` when a finished run of exactly this
    configuration is there, continued when an interrupted one is, else trained, with a checkpoint
    every `checkpoint_every` steps and at the end (written atomically). The model is in eval mode."""
    started = time.perf_counter()
    run = _saved_run(config, results_dir)
    if run is None:
        run, source = start_training(config), TRAINED
    else:
        source = LOADED if run.step >= config.total_steps else f"resumed from a saved run at step {run.step}"
    if run.step < config.total_steps:
        path = recipe_path(results_dir, config)
        path.parent.mkdir(parents=True, exist_ok=True)
        run = train(run, checkpoint_path=path, checkpoint_every=checkpoint_every, progress=progress)
    run.model.eval()
    return RecipeRun(run, source, time.perf_counter() - started)


__all__ = ["LOADED", "TRAINED", "RecipeRun", "ensure_recipe_run", "finished_recipe_run", "recipe_path"]
