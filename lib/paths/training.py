"""Training the edge-token transformer on freshly sampled graphs (chapter 2; chapter 3 resumes it).

Every step draws a new batch from `lib.paths.sampler` (the published run's "epochs" were such steps),
takes one Adam step on the mean squared error, and adds the per-example errors to a log that is
split by true path length: the loss of each length over time is what shows the phase
transitions. The learning rate follows a list of (steps, lr) phases. Training runs in float32:
the authors first trained in bfloat16 to save memory, and with batches of 2^15 the loss
stalled from loss of precision (bfloat16 keeps 8 bits of mantissa, so a mean over 32,768
squared errors, and the small updates it produces, are rounded away); it took them two weeks to
find, and float32 fixed it [@wang2024shortest].

A `TrainingRun` holds everything that determines the future of a run (model, optimizer,
the data generator's state, step, log), so a run saved with `save_training_run` and reloaded
with `load_training_run` continues exactly as if it had never stopped. The run also keeps a
fixed evaluation batch and the model's predictions on it at regular steps, from which chapter 2
draws its confusion histograms without extra work.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import torch
from tqdm.auto import tqdm

from lib.paths.sampler import SamplerOptions, make_options, sample_with_options
from lib.paths.model import PathTransformer, PathTransformerConfig, build_model, count_parameters
from lib.paths.prediction import predict
from lib.paths.width_buckets import forward_in_width_buckets
from lib.book.results import save_checkpoint

#: The published schedule: 6,400 steps at 5e-4, then 3,200 at 1e-4.
PUBLISHED_LR_SCHEDULE = ((6400, 5e-4), (3200, 1e-4))


@dataclasses.dataclass(frozen=True)
class PathTrainingConfig:
    """Everything that defines a training run (chapter 2's defaults are set by its notebook).

    Attributes:
        n_layers: encoder layers.
        n_min, n_max: graphs have n_min..n_max vertices (n_max edge slots).
        task: sampler task ("pretrain" for chapter 2).
        batch_size: fresh examples per step.
        lr_schedule: ((steps, lr), ...) phases run one after another.
        weight_decay: Adam's (coupled, L2) weight decay.
        max_vertex_id: vocabulary of vertex ids (None: n_max).
        sampler_options: further keyword options of `lib.paths.sampler.sample_batch`.
        log_every: steps per logging window.
        snapshot_every: steps between predictions on the fixed evaluation batch.
        eval_size: size of that batch.
        width_buckets: 0 runs every training batch on all n_max edge slots; k > 0 runs it in k
            chunks of graphs sorted by the slots they use, each on its widest graph's slots
            (`lib.paths.width_buckets`): the same function, rounded differently, and faster where
            graphs use few of their slots. Scoring passes trim padding anyway (`predict`).
        seed: seeds the initial weights, the data stream and the evaluation batch.
        device: "cpu", "cuda" or "cuda:K".
    """

    n_layers: int = 11
    n_min: int = 3
    n_max: int = 15
    task: str = "pretrain"
    batch_size: int = 2**15
    lr_schedule: tuple[tuple[int, float], ...] = PUBLISHED_LR_SCHEDULE
    weight_decay: float = 0.0
    max_vertex_id: int | None = None
    sampler_options: tuple[tuple[str, Any], ...] = ()
    log_every: int = 10
    snapshot_every: int = 100
    eval_size: int = 2048
    width_buckets: int = 0
    seed: int = 0
    device: str = "cpu"

    @property
    def total_steps(self) -> int:
        return sum(steps for steps, _ in self.lr_schedule)

    @property
    def model_config(self) -> PathTransformerConfig:
        return PathTransformerConfig(n_layers=self.n_layers,
                                     max_vertex_id=self.max_vertex_id or self.n_max)

    @property
    def sampler(self) -> SamplerOptions:
        return make_options(self.task, self.n_min, self.n_max, max_vertex_id=self.max_vertex_id,
                            **dict(self.sampler_options))

    def to_dict(self) -> dict:
        """Plain types only, for JSON and for checkpoints read with weights_only=True."""
        data = dataclasses.asdict(self)
        data["lr_schedule"] = [list(phase) for phase in self.lr_schedule]
        data["sampler_options"] = [list(item) for item in self.sampler_options]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> PathTrainingConfig:
        data = dict(data)
        data["lr_schedule"] = tuple((int(s), float(lr)) for s, lr in data["lr_schedule"])
        data["sampler_options"] = tuple((str(k), v) for k, v in data["sampler_options"])
        return cls(**data)


def learning_rate_at(schedule: Sequence[tuple[int, float]], step: int) -> float:
    """The learning rate of step `step` (0-based) under a ((steps, lr), ...) schedule."""
    for steps, lr in schedule:
        if step < steps:
            return lr
        step -= steps
    return schedule[-1][1]


@dataclasses.dataclass
class TrainingLog:
    """Per-window training losses, overall and by true path length.

    Attributes:
        steps: the step count at the end of each window.
        loss: mean training loss over each window.
        loss_by_length: per window, the mean loss of examples whose label is 0, 1, ...;
            NaN where a window had none.
        count_by_length: per window, how many examples had each label.
        learning_rate: the learning rate at the end of each window.
    """

    steps: list[int] = dataclasses.field(default_factory=list)
    loss: list[float] = dataclasses.field(default_factory=list)
    loss_by_length: list[list[float]] = dataclasses.field(default_factory=list)
    count_by_length: list[list[int]] = dataclasses.field(default_factory=list)
    learning_rate: list[float] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TrainingLog:
        return cls(**data)

    def loss_by_length_tensor(self) -> torch.Tensor:
        """(windows, labels) tensor of `loss_by_length`."""
        return torch.tensor(self.loss_by_length, dtype=torch.float64)


@dataclasses.dataclass
class TrainingRun:
    """A training run in progress: all state needed to continue it exactly.

    Attributes:
        config: the run's configuration.
        model, optimizer: the network and its Adam state.
        generator: the data stream's generator (on the training device).
        step: steps taken so far.
        log: the per-window loss log.
        eval_tokens, eval_labels: the fixed evaluation batch.
        snapshot_steps, snapshot_predictions: predictions on the evaluation batch at those
            steps, shape (snapshots, eval_size).
        seconds: wall-clock seconds spent training so far.
        seconds_sampling: of which spent drawing data.
        window_sum, window_count: squared errors and counts by label in the open log window.
    """

    config: PathTrainingConfig
    model: PathTransformer
    optimizer: torch.optim.Optimizer
    generator: torch.Generator
    step: int = 0
    log: TrainingLog = dataclasses.field(default_factory=TrainingLog)
    eval_tokens: torch.Tensor | None = None
    eval_labels: torch.Tensor | None = None
    snapshot_steps: list[int] = dataclasses.field(default_factory=list)
    snapshot_predictions: list[torch.Tensor] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    seconds_sampling: float = 0.0
    window_sum: torch.Tensor | None = None
    window_count: torch.Tensor | None = None

    @property
    def n_parameters(self) -> int:
        return count_parameters(self.model)

    @property
    def examples_per_second(self) -> float:
        return self.step * self.config.batch_size / self.seconds if self.seconds else math.nan

    @property
    def max_label(self) -> int:
        sampler = self.config.sampler
        return max(sampler.n_max - 1, sampler.unreachable_label)


def _data_generator(config: PathTrainingConfig, device: torch.device, stream: int) -> torch.Generator:
    # Stream 0 is the training data, stream 1 the evaluation batch: independent seeds.
    return torch.Generator(device=device).manual_seed(config.seed * 1_000_003 + 7919 * (stream + 1))


def start_training(config: PathTrainingConfig, model: PathTransformer | None = None) -> TrainingRun:
    """A new run at step 0: fresh model (or `model`, e.g. to fine-tune it), optimizer, data.

    Args:
        config: the run's configuration.
        model: start from this model instead of a fresh one (moved to the run's device); its
            shape must match `config`.
    """
    device = torch.device(config.device)
    if model is None:
        model = build_model(config.model_config, seed=config.seed, device=device)
    elif model.config != config.model_config:
        raise ValueError(f"model shape {model.config} does not match config {config.model_config}; "
                         "build the config with follow_up_config to keep the model's vocabulary")
    model = model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate_at(config.lr_schedule, 0),
                                 weight_decay=config.weight_decay)
    eval_tokens, eval_labels = sample_with_options(
        config.eval_size, config.sampler, _data_generator(config, device, 1))
    run = TrainingRun(config, model, optimizer, _data_generator(config, device, 0),
                      eval_tokens=eval_tokens, eval_labels=eval_labels)
    _take_snapshot(run)
    return run


def _take_snapshot(run: TrainingRun) -> None:
    if run.snapshot_steps and run.snapshot_steps[-1] == run.step:
        return
    run.snapshot_steps.append(run.step)
    run.snapshot_predictions.append(predict(run.model, run.eval_tokens).float().cpu())


def train(run: TrainingRun, until_step: int | None = None, *, checkpoint_path: str | os.PathLike | None = None,
          checkpoint_every: int = 0, progress: bool = True) -> TrainingRun:
    """Continue `run` until step `until_step` (default: the end of its schedule).

    Each step samples a fresh batch, takes one Adam step on the MSE, and accumulates the
    squared errors by true label; every `log_every` steps the window's means are appended to
    `run.log`. Every `snapshot_every` steps (and at the end of the schedule) the model predicts
    the evaluation batch. With `checkpoint_path`, the run is saved there every `checkpoint_every` steps (if > 0)
    and at the end.

    Returns:
        The same `run`, advanced.
    """
    config = run.config
    until_step = config.total_steps if until_step is None else until_step
    sampler = config.sampler
    n_labels = run.max_label + 1
    device = torch.device(config.device)
    if run.window_sum is None:
        run.window_sum = torch.zeros(n_labels, dtype=torch.float64, device=device)
        run.window_count = torch.zeros(n_labels, dtype=torch.float64, device=device)
    window_sum, window_count = run.window_sum, run.window_count
    run.model.train()
    bar = tqdm(total=until_step - run.step, disable=None if progress else True, mininterval=30,
               desc="training")
    while run.step < until_step:
        started = time.perf_counter()
        lr = learning_rate_at(config.lr_schedule, run.step)
        for group in run.optimizer.param_groups:
            group["lr"] = lr
        tokens, labels = sample_with_options(config.batch_size, sampler, run.generator)
        sampled = time.perf_counter()
        predictions = (run.model(tokens) if config.width_buckets == 0
                       else forward_in_width_buckets(run.model, tokens, config.width_buckets))
        squared_error = (predictions - labels) ** 2
        loss = squared_error.mean()
        run.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        run.optimizer.step()
        label_index = labels.long()
        errors = squared_error.detach().double()
        window_sum += torch.bincount(label_index, weights=errors, minlength=n_labels)
        window_count += torch.bincount(label_index, minlength=n_labels).double()
        run.step += 1
        # Windows and snapshots fall on fixed steps, so a resumed run logs like an unbroken one.
        if run.step % config.log_every == 0 or run.step == config.total_steps:
            _close_window(run, window_sum, window_count, lr)
            window_sum.zero_()
            window_count.zero_()
        if run.step % config.snapshot_every == 0 or run.step == config.total_steps:
            _take_snapshot(run)
        finished = time.perf_counter()
        run.seconds += finished - started
        run.seconds_sampling += sampled - started
        bar.update(1)
        if checkpoint_path is not None and checkpoint_every > 0 and run.step % checkpoint_every == 0:
            save_training_run(run, checkpoint_path)
    bar.close()
    if checkpoint_path is not None:
        save_training_run(run, checkpoint_path)
    return run


def _close_window(run: TrainingRun, window_sum: torch.Tensor, window_count: torch.Tensor, lr: float) -> None:
    sums, counts = window_sum.cpu(), window_count.cpu()
    by_length = torch.where(counts > 0, sums / counts.clamp(min=1), torch.tensor(math.nan))
    run.log.steps.append(run.step)
    run.log.loss.append(float(sums.sum() / counts.sum()))
    run.log.loss_by_length.append(by_length.tolist())
    run.log.count_by_length.append(counts.long().tolist())
    run.log.learning_rate.append(lr)


def training_state(run: TrainingRun) -> dict:
    """The checkpoint dictionary of a run (plain types and tensors only)."""
    return {
        "format": "path-training-v1",
        "config": run.config.to_dict(),
        "model": run.model.state_dict(),
        "optimizer": run.optimizer.state_dict(),
        "generator_state": run.generator.get_state(),
        "step": run.step,
        "log": run.log.to_dict(),
        "eval_tokens": run.eval_tokens.cpu(),
        "eval_labels": run.eval_labels.cpu(),
        "snapshot_steps": list(run.snapshot_steps),
        "snapshot_predictions": torch.stack(run.snapshot_predictions) if run.snapshot_predictions
        else torch.empty(0),
        "seconds": run.seconds,
        "seconds_sampling": run.seconds_sampling,
        "window_sum": None if run.window_sum is None else run.window_sum.cpu(),
        "window_count": None if run.window_count is None else run.window_count.cpu(),
        "n_parameters": run.n_parameters,
    }


def save_training_run(run: TrainingRun, path: str | os.PathLike) -> None:
    """Save everything needed to resume `run` (atomically, via lib.book.results.save_checkpoint)."""
    save_checkpoint(path, training_state(run))


def load_training_run(path: str | os.PathLike, device: str | torch.device | None = None) -> TrainingRun:
    """Rebuild a run saved by `save_training_run`; `train` then continues it exactly.

    Args:
        path: the checkpoint file.
        device: where to put it (default: the device it was trained on).
    """
    state = torch.load(path, map_location="cpu", weights_only=True)
    config = PathTrainingConfig.from_dict(state["config"])
    if device is not None:
        config = dataclasses.replace(config, device=str(torch.device(device)))
    target = torch.device(config.device)
    model = PathTransformer(config.model_config)
    model.load_state_dict(state["model"])
    model.to(target)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate_at(config.lr_schedule, 0),
                                 weight_decay=config.weight_decay)
    optimizer.load_state_dict(state["optimizer"])
    generator = torch.Generator(device=target)
    generator.set_state(state["generator_state"])
    predictions = state["snapshot_predictions"]
    return TrainingRun(
        config, model, optimizer, generator, step=int(state["step"]),
        log=TrainingLog.from_dict(state["log"]),
        eval_tokens=state["eval_tokens"].to(target), eval_labels=state["eval_labels"].to(target),
        snapshot_steps=list(state["snapshot_steps"]),
        snapshot_predictions=list(predictions.unbind(0)) if predictions.numel() else [],
        seconds=float(state["seconds"]), seconds_sampling=float(state["seconds_sampling"]),
        window_sum=None if state["window_sum"] is None else state["window_sum"].to(target),
        window_count=None if state["window_count"] is None else state["window_count"].to(target))


def follow_up_config(base: PathTrainingConfig, **changes) -> PathTrainingConfig:
    """A configuration for training further a model trained with `base` (chapter 3).

    Like `dataclasses.replace(base, **changes)`, except that the model's vocabulary
    (max_vertex_id, hence the TARGET token) and the unreachable label stay those of `base`
    unless given explicitly, so that fine-tuning or testing on smaller or larger graphs speaks
    the model's language. `sampler_options` may be given as a dict.

    Example:
        follow_up_config(config, task="onpath", n_max=7, lr_schedule=((100, 1e-5),),
                         weight_decay=1e-5)
    """
    options = dict(base.sampler_options)
    options.update(dict(changes.pop("sampler_options", {})))
    options.setdefault("unreachable_label", base.sampler.unreachable_label)
    changes.setdefault("max_vertex_id", base.model_config.max_vertex_id)
    return dataclasses.replace(base, sampler_options=tuple(sorted(options.items())), **changes)


def load_trained_model(path: str | os.PathLike, device: str | torch.device = "cpu"
                       ) -> tuple[PathTransformer, PathTrainingConfig]:
    """The model of a saved run, in eval mode, with the configuration it was trained with.

    Chapter 3 starts from chapter 2's checkpoint this way; `config.sampler` tells which graphs
    (n_min, n_max, vocabulary, unreachable label) it was trained on.
    """
    state = torch.load(path, map_location="cpu", weights_only=True)
    config = PathTrainingConfig.from_dict(state["config"])
    model = PathTransformer(config.model_config)
    model.load_state_dict(state["model"])
    return model.to(device).eval(), config


def constant_prediction_loss(labels: torch.Tensor) -> float:
    """MSE of always predicting the mean label: the loss a model with no information gets."""
    labels = labels.double()
    return float(((labels - labels.mean()) ** 2).mean())
