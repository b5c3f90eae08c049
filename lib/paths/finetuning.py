"""Fine-tuning the pre-trained path transformer on targets other than vertex 2 (chapter 3).

Chapter 2 trains a model to predict the distance from vertex 1 to vertex 2. Chapter 3 starts
from that model (`ensure_base_model` loads chapter 2's checkpoint, or trains one with the same
library code when it is missing) and fine-tunes it on the "on-path" task in small graphs: the
target is a vertex on a shortest 1-2 path and the label is its distance from vertex 1
[@wang2024shortest].

The optimizer is built here, explicitly, and it is the one that steps. The authors' code
stepped the pre-training optimizer by mistake, so the learning rate and weight decay they state
for fine-tuning (both 1e-5) were never applied. We use AdamW: Adam's update with *decoupled*
weight decay, every weight shrunk by the factor (1 - lr * weight_decay) each step. The stated
purpose of the weight decay was to push the model towards simpler representations; with Adam's
coupled L2 term the decay is added to the gradient and then divided by the running gradient
scale, so weights with large gradients are hardly decayed at all, while AdamW's pull towards
zero is the same for every weight.

The fine-tuning run itself is a `lib.paths.training.TrainingRun`: `train` draws fresh graphs
every step and logs the loss by true label, and the run's fixed evaluation batch, drawn from a
separate seed stream, is the held-out set on which the loss before and after fine-tuning is
measured.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import time
from pathlib import Path

import torch

from lib.book.params import ParameterError
from lib.paths.training import (
    PathTrainingConfig, TrainingRun, follow_up_config, load_trained_model, start_training, train,
)
from lib.paths.model import PathTransformer
from lib.paths.prediction import predict

#: File name of chapter 2's checkpoint inside `results_dir`.
CHAPTER_2_CHECKPOINT = "02_training_checkpoint.pt"

#: Chapter 2's default run (`notebooks/02_training.py`), used when its checkpoint is missing.
CHAPTER_2_DEFAULTS = {
    "n_min": 3, "n_max": 8, "n_layers": 4, "batch_size": 256,
    "lr_schedule": ((2000, 1e-3), (500, 2e-4)), "log_every": 10, "snapshot_every": 100,
    "eval_size": 2048,
}

#: The published fine-tuning: 100 steps of 2^15 fresh graphs, stated lr = weight decay = 1e-5.
PUBLISHED_FINETUNING = {"steps": 100, "batch_size": 2**15, "learning_rate": 1e-5,
                        "weight_decay": 1e-5, "loss_before": 0.5531, "loss_after": 0.01472}


@dataclasses.dataclass
class BaseModel:
    """The pre-trained model chapter 3 starts from.

    Attributes:
        model: the network, in eval mode.
        config: the configuration it was trained with (`config.sampler` says on which graphs).
        source: "checkpoint" (loaded from chapter 2's file) or "trained" (trained here).
        checkpoint_path: the file it was loaded from, or None.
        seconds: wall-clock seconds spent loading or training it.
    """

    model: PathTransformer
    config: PathTrainingConfig
    source: str
    checkpoint_path: str | None
    seconds: float

    @property
    def checkpoint_name(self) -> str | None:
        """The loaded file's name without its folder (what a page prints); None when trained here."""
        return Path(self.checkpoint_path).name if self.checkpoint_path else None


def fallback_base_config(*, seed: int, device: str = "cpu", smoke: bool = False) -> PathTrainingConfig:
    """Chapter 2's default training run (or its smoke version), for when no checkpoint exists.

    The smoke version mirrors chapter 2's smoke shrinkage: 2 layers, batches of 64, 40 steps
    per phase.
    """
    settings = dict(CHAPTER_2_DEFAULTS)
    if smoke:
        settings.update(n_layers=2, batch_size=64, eval_size=256, log_every=5, snapshot_every=20,
                        lr_schedule=tuple((min(steps, 40), lr) for steps, lr in settings["lr_schedule"]))
    return PathTrainingConfig(task="pretrain", seed=seed, device=str(device), **settings)


def ensure_base_model(results_dir: str | os.PathLike, fallback: PathTrainingConfig, *,
                      device: str | torch.device = "cpu", progress: bool = True) -> BaseModel:
    """Chapter 2's trained model if its checkpoint is in `results_dir`, else train `fallback`.

    The fallback is trained with `lib.paths.training` (the code chapter 2 uses) and is not
    written to `results_dir`, so it is never mistaken for chapter 2's output.

    Args:
        results_dir: the folder where chapter 2 writes `CHAPTER_2_CHECKPOINT`.
        fallback: the training run to do when the checkpoint is missing.
        device: where to put the model.
        progress: show a progress bar while training the fallback.
    """
    started = time.perf_counter()
    path = Path(results_dir) / CHAPTER_2_CHECKPOINT
    if path.exists():
        model, config = load_trained_model(path, device)
        config = dataclasses.replace(config, device=str(torch.device(device)))
        return BaseModel(model, config, "checkpoint", str(path), time.perf_counter() - started)
    config = dataclasses.replace(fallback, device=str(torch.device(device)))
    run = train(start_training(config), progress=progress)
    run.model.eval()
    return BaseModel(run.model, config, "trained", None, time.perf_counter() - started)


def finetuning_config(base: PathTrainingConfig, *, small_n_max: int, steps: int, batch_size: int,
                      learning_rate: float, weight_decay: float, eval_size: int, seed: int,
                      log_every: int = 10) -> PathTrainingConfig:
    """The fine-tuning run: on-path targets in small graphs, for a model trained as `base`.

    Graphs have `base.n_min`..`small_n_max` vertices, the small-graph filter of the on-path
    sampler is on (short 1-2 paths thinned out, as in the published small graphs), and the
    vertex vocabulary and unreachable label are the base model's
    (`lib.paths.training.follow_up_config`), so the tokens mean what they meant in pre-training. `learning_rate` and `weight_decay` are those of the AdamW optimizer
    that `start_finetuning` builds.

    Raises:
        ParameterError: if `small_n_max` is outside [base.n_min, base.n_max].
    """
    sampler = base.sampler
    if not sampler.n_min <= small_n_max <= sampler.n_max:
        raise ParameterError(
            f"Parameter `small_n_max` must be between {sampler.n_min} and {sampler.n_max} (the "
            f"base model's graph sizes); got {small_n_max!r}.")
    return follow_up_config(
        base, task="onpath", n_max=small_n_max, batch_size=batch_size,
        lr_schedule=((steps, learning_rate),), weight_decay=weight_decay,
        sampler_options={"small_graph_filter": True}, log_every=log_every, snapshot_every=steps,
        eval_size=eval_size, seed=seed)


def start_finetuning(model: PathTransformer, config: PathTrainingConfig) -> TrainingRun:
    """A fine-tuning run at step 0 on a copy of `model`, stepped by a new AdamW optimizer.

    The copy leaves `model` untouched (chapter 3 compares the two). The optimizer is
    `torch.optim.AdamW(lr=config's learning rate, weight_decay=config.weight_decay)`, with no
    state carried over from pre-training. The run's first snapshot holds the predictions of
    the unchanged model on the held-out evaluation batch.
    """
    run = start_training(config, model=copy.deepcopy(model))
    learning_rate = config.lr_schedule[0][1]
    run.optimizer = torch.optim.AdamW(run.model.parameters(), lr=learning_rate,
                                      weight_decay=config.weight_decay)
    return run


def finetune(model: PathTransformer, config: PathTrainingConfig, *, progress: bool = True) -> TrainingRun:
    """Fine-tune a copy of `model` for the whole of `config`'s schedule (see `start_finetuning`)."""
    run = train(start_finetuning(model, config), progress=progress)
    run.model.eval()
    return run


def held_out_loss(run: TrainingRun, snapshot: int) -> float:
    """MSE on the run's held-out evaluation batch at one snapshot (0: before, -1: after)."""
    predictions = run.snapshot_predictions[snapshot].double()
    return float(((predictions - run.eval_labels.cpu().double()) ** 2).mean())


def weight_shrink_factor(learning_rate: float, weight_decay: float, steps: int) -> float:
    """How much AdamW's decay alone scales every weight over `steps` steps: (1 - lr wd)^steps."""
    return (1.0 - learning_rate * weight_decay) ** steps


def loss_on(model: PathTransformer, tokens: torch.Tensor, labels: torch.Tensor) -> float:
    """MSE of `model` on a batch."""
    return float(((predict(model, tokens).double() - labels.double()) ** 2).mean())


__all__ = [
    "BaseModel", "CHAPTER_2_CHECKPOINT", "CHAPTER_2_DEFAULTS", "PUBLISHED_FINETUNING",
    "ensure_base_model", "fallback_base_config", "finetune", "finetuning_config", "held_out_loss",
    "loss_on", "start_finetuning", "weight_shrink_factor",
]
