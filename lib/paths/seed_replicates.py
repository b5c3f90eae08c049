"""Pre-training and fine-tuning again from other seeds, and the five tests of each (chapter 3).

One trained model's test MSEs move with the seed and even with the CPU's rounding (chapter 3
saw an on-path MSE of 0.073 on one machine and 0.156 on another from the same seed). So the
pipeline the tests depend on is rerun: for each extra seed, a base model is pre-trained with the
base model's own configuration (`lib.paths.training`, the code chapter 2 uses) but that seed,
fine-tuned with the chapter's fine-tuning settings and that seed, and scored on the five tests.
The tests' held-out graphs are the same for every seed (drawn from the chapter's seed), so the
spread comes from training alone.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

from lib.paths.finetuning import finetune, held_out_loss
from lib.paths.generalization_tests import Scale, evaluate_all
from lib.paths.model import PathTransformer
from lib.paths.recipe_models import ensure_recipe_run
from lib.paths.training import PathTrainingConfig

#: A further measurement of one seed: (pre-trained base model, fine-tuned model) -> JSON-ready dict.
Analysis = Callable[[PathTransformer, PathTransformer], dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class SeedRun:
    """One seed of the pipeline: its fine-tuning losses and each test's MSE after fine-tuning.

    Attributes:
        seed: the seed of pre-training and fine-tuning.
        source: where its base model came from ("checkpoint" or "trained").
        finetune_loss_before, finetune_loss_after: held-out on-path MSE before and after.
        test_mse: test name -> MSE of the fine-tuned model.
        seconds: wall-clock seconds of the seed's pre-training, fine-tuning and tests.
        test_by_kind: test name -> the fine-tuned model's errors by kind of target
            (`lib.paths.generalization_tests.by_target_kind`).
        analysis: what the caller's `Analysis` measured on the seed's models (empty without one).
    """

    seed: int
    source: str
    finetune_loss_before: float
    finetune_loss_after: float
    test_mse: dict[str, float]
    seconds: float
    test_by_kind: dict[str, dict[str, dict[str, float]]] = dataclasses.field(default_factory=dict)
    analysis: dict[str, Any] = dataclasses.field(default_factory=dict)

    def record(self) -> dict:
        return dataclasses.asdict(self)


def seed_run(seed: int, source: str, finetune_run, scale: Scale, test_graphs: int, test_seed: int,
             seconds: float, *, base_model: PathTransformer | None = None,
             analysis: Analysis | None = None) -> SeedRun:
    """The `SeedRun` of a finished fine-tuning run (its tests scored here).

    With `analysis` (which then needs `base_model`, the model fine-tuning started from), its
    dict on (base_model, fine-tuned model) is stored as the run's `analysis`.
    """
    results = evaluate_all(finetune_run.model, scale, test_graphs, test_seed)
    measured = {} if analysis is None else analysis(base_model, finetune_run.model)
    return SeedRun(seed, source, held_out_loss(finetune_run, 0), held_out_loss(finetune_run, -1),
                   {r.test.name: r.mse for r in results}, seconds, {r.test.name: r.by_kind for r in results},
                   measured)


def replicate_seed(base_config: PathTrainingConfig, make_finetuning_config: Callable[[int], PathTrainingConfig],
                   seed: int, scale: Scale, test_graphs: int, test_seed: int, *,
                   results_dir: str | os.PathLike, progress: bool = False,
                   analysis: Analysis | None = None) -> SeedRun:
    """Pre-train `base_config` with `seed`, fine-tune with `make_finetuning_config(seed)`, test.

    Args:
        base_config: the base model's configuration (its seed is replaced).
        make_finetuning_config: the chapter's fine-tuning configuration for a seed.
        test_graphs, test_seed: held-out graphs per test and their seed (the same for all seeds).
        analysis: further measurements on the seed's base and fine-tuned models (`seed_run`).
        results_dir: where the base model is kept (`lib.paths.recipe_models`): loaded when a run
            of this configuration is there, else trained and saved, so that chapter 7 finds it
            (training with checkpoints gives the weights of training without).
    """
    started = time.perf_counter()
    base_of_seed = dataclasses.replace(base_config, seed=seed)
    base = ensure_recipe_run(base_of_seed, results_dir, progress=progress).run
    run = finetune(base.model, make_finetuning_config(seed), progress=progress)
    scored = seed_run(seed, "trained", run, scale, test_graphs, test_seed, 0.0, base_model=base.model,
                      analysis=analysis)
    return dataclasses.replace(scored, seconds=time.perf_counter() - started)


__all__ = ["Analysis", "SeedRun", "replicate_seed", "seed_run"]
