"""Full-batch training of thousands of MLP instances at once, with trajectories (chapters 4-6).

Every instance is trained as the authors trained one model: full batch, mean cross-entropy,
Adam (lr 0.01, betas 0.9/0.98) with coupled L2 weight decay (added to the gradient) on every
parameter except the unembedding bias. `train_instances` trains the instances of a parameter
dict with a leading instances dimension in three steps:

* planning (`plan_sweep`, `SweepOutputs.allocate`): cut the instances into chunks of about
  10 MiB of activations and choose the workers; allocate every output tensor;
* running (`train_chunk`, `lib.grokking.parallel.run_chunks`): train each chunk for all epochs
  with the hand-written step of `lib.grokking.chunk_step`, scoring it at logged epochs and
  writing its rows of the outputs, one single-threaded worker process per core;
* assembling: the `SweepResult` of the outputs, the configs and the training set.

A sweep's `SweepConfig` lives in `lib.grokking.sweep_config` (below this module and
`lib.grokking.chunk_step`, which both read it) and is importable from here too.

The chunks are grouped into shards that `lib.grokking.sweep_runner` runs here or on Ray.

An instance's numbers depend on its initial parameters and on the chunking (vectorised kernels
round the tail of a buffer differently from its body), not on the workers: with a set
`chunk_size`, sweeps over disjoint ranges of seeds that start at multiples of it concatenate,
bit for bit, to the sweep over all of them. `lib.grokking.reference_training.train_single` is the plain one-model reference
(autograd, torch.optim.Adam) the tests compare every instance against.

Chapters 5 and 6 start sweeps from any parameters (perturbed checkpoints, models trained on
another set) by passing them to `train_instances`; the optimizer state always starts fresh.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from lib.grokking.chunk_step import ChunkStep
from lib.grokking.evaluation import Evaluation, evaluate_instances
from lib.grokking.mlp import MLPConfig, n_instances
from lib.grokking.parallel import Chunk, Report, run_chunks
from lib.grokking.sweep_config import SweepConfig
from lib.grokking.sweep_runner import content_key, current_backend, run_sharded


def snapshot_epochs(epochs: int, every: int, start: int = 0) -> tuple[int, ...]:
    """Checkpoint epochs start, start + every, ... and the last epoch, for `SweepConfig`
    (chapters 4-6)."""
    return tuple(sorted(set(range(start, epochs + 1, every)) | {epochs}))


@dataclass
class SweepResult:
    """Everything a sweep produced: per-instance metrics over time and parameter snapshots.

    Attributes:
        seeds: (B,) seeds of the instances, in order.
        model_config, training_config: how they were built and trained.
        train_left, train_right, train_labels: the training pairs and their labels.
        log_epochs: (E,) epochs at which `metrics` were recorded.
        metrics: name -> (E, B) float tensor; "train_loss", "train_acc" and "acc_<evaluation>".
        checkpoints: epoch -> parameter dict with the instances dimension.
        final_params: parameters after the last epoch.
        elapsed_s: wall-clock seconds spent training.
        info: free-form description (e.g. the pair name).
    """

    seeds: torch.Tensor
    model_config: MLPConfig
    training_config: SweepConfig
    train_left: torch.Tensor
    train_right: torch.Tensor
    train_labels: torch.Tensor
    log_epochs: torch.Tensor
    metrics: dict[str, torch.Tensor]
    checkpoints: dict[int, dict[str, torch.Tensor]]
    final_params: dict[str, torch.Tensor]
    elapsed_s: float = 0.0
    info: dict = field(default_factory=dict)

    @property
    def n_instances(self) -> int:
        """Number of instances B."""
        return int(self.seeds.numel())

    def final(self, metric: str) -> torch.Tensor:
        """Value of `metric` at the last logged epoch, shape (B,)."""
        return self.metrics[metric][-1]

    def model_epochs_per_second(self) -> float:
        """Instances times epochs divided by training time."""
        return self.n_instances * self.training_config.epochs / max(self.elapsed_s, 1e-9)


# --- Planning ------------------------------------------------------------------------------


def auto_chunk_size(n_train: int, config: MLPConfig, budget_bytes: int = 10 * 2 ** 20) -> int:
    """Instances per chunk so that one chunk's activations take about `budget_bytes`.

    A larger chunk spreads the fixed cost of each of the ~25 tensor operations of a step over
    more instances; far past the core's cache the activations slow every operation down.
    Measured on the S4 pair with two worker processes on a 2-core machine (2 MiB of L2 per
    core): 23-25 microseconds per model-epoch anywhere from 42 to 84 instances a chunk
    (5-10 MiB), 25-27 at 125; with worker threads, 41 at 500.
    """
    per_instance = 4 * n_train * (config.hidden_dim + 2 * config.n_elements)
    return max(1, budget_bytes // per_instance)


@dataclass(frozen=True)
class SweepPlan:
    """How a sweep's instances are cut into chunks and spread over workers.

    Attributes:
        chunks: (start, stop) ranges of instances trained together, in order.
        workers: chunks trained at once (processes or threads on a CPU; 1 on a GPU).
        torch_threads: intra-op threads of this process while the chunks train.
    """

    chunks: list[Chunk]
    workers: int
    torch_threads: int


def plan_sweep(b_total: int, n_train: int, model_config: MLPConfig, config: SweepConfig,
               device: torch.device) -> SweepPlan:
    """Chunks and workers for training `b_total` instances on `n_train` pairs on `device`.

    On a CPU every worker runs single-threaded and the workers share the chunks. Intra-op
    parallelism gains little on these matrix sizes and loses badly when another process
    competes for the cores: on a shared 2-core machine, one S5-pair epoch took 11 ms on one
    thread and 110 ms on two. Without a set `chunk_size`, chunks are about `auto_chunk_size`
    and a whole number of equal ones per worker, so that no worker is left with one more.
    """
    threads = torch.get_num_threads()
    chunk = config.chunk_size or auto_chunk_size(n_train, model_config)
    if not config.chunk_size and device.type == "cpu":
        n_workers = config.workers or threads
        rounds = -(-b_total // (chunk * n_workers))
        chunk = -(-b_total // (rounds * n_workers))
    chunks = [(start, min(start + chunk, b_total)) for start in range(0, b_total, chunk)]
    if device.type != "cpu":
        return SweepPlan(chunks, workers=1, torch_threads=threads)
    return SweepPlan(chunks, workers=max(1, min(config.workers or threads, len(chunks))), torch_threads=1)


@dataclass
class SweepOutputs:
    """The tensors a sweep fills in, chunk by chunk, each with the instances dimension.

    Attributes:
        metrics: name -> (E, B) on the CPU, one row per logged epoch.
        checkpoints: epoch -> parameter dict, on the CPU.
        final_params: parameter dict on the training device.
    """

    metrics: dict[str, torch.Tensor]
    checkpoints: dict[int, dict[str, torch.Tensor]]
    final_params: dict[str, torch.Tensor]

    @classmethod
    def allocate(cls, params: dict[str, torch.Tensor], evaluations: Sequence[Evaluation],
                 config: SweepConfig) -> SweepOutputs:
        """Empty outputs for training `params` under `config`, scored on `evaluations`."""
        b_total = n_instances(params)
        names = ["train_loss", "train_acc"] + [f"acc_{e.name}" for e in evaluations]
        return cls(
            metrics={name: torch.empty(len(config.log_epochs()), b_total) for name in names},
            checkpoints={epoch: {k: torch.empty_like(v, device="cpu") for k, v in params.items()}
                         for epoch in sorted(set(config.checkpoint_epochs))},
            final_params={k: torch.empty_like(v) for k, v in params.items()},
        )

    def tensors(self) -> list[torch.Tensor]:
        """Every output tensor (what worker processes need in shared memory)."""
        return [*self.metrics.values(), *self.final_params.values(),
                *(v for snapshot in self.checkpoints.values() for v in snapshot.values())]

    def flat(self) -> dict[str, torch.Tensor]:
        """One name per tensor ("metrics/train_loss", "final/unembed", "checkpoint/100/unembed"),
        on the CPU: the form a shard of a sweep travels and is saved in (`lib.grokking.sweep_runner`)."""
        flat = {f"metrics/{k}": v for k, v in self.metrics.items()}
        flat.update({f"final/{k}": v.cpu() for k, v in self.final_params.items()})
        flat.update({f"checkpoint/{epoch}/{k}": v for epoch, snapshot in self.checkpoints.items()
                     for k, v in snapshot.items()})
        return flat

    @staticmethod
    def instance_dim(name: str) -> int:
        """The instances dimension of a flat tensor: 1 for metrics (E, B), 0 for parameters."""
        return 1 if name.startswith("metrics/") else 0

    @classmethod
    def from_flat(cls, flat: Mapping[str, torch.Tensor]) -> SweepOutputs:
        """The outputs back from `flat` (the merged shards)."""
        metrics, final, checkpoints = {}, {}, {}
        for name, tensor in flat.items():
            kind, _, rest = name.partition("/")
            if kind == "metrics":
                metrics[rest] = tensor
            elif kind == "final":
                final[rest] = tensor
            else:
                epoch, _, parameter = rest.partition("/")
                checkpoints.setdefault(int(epoch), {})[parameter] = tensor
        return cls(metrics, dict(sorted(checkpoints.items())), final)



# --- Running -------------------------------------------------------------------------------


def train_chunk(
    params: dict[str, torch.Tensor],
    chunk: Chunk,
    train_set: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    evaluations: Sequence[Evaluation],
    config: SweepConfig,
    outputs: SweepOutputs,
    report: Report | None = None,
    tied_linear: bool = False,
) -> None:
    """Train instances start..stop-1 of `params` for all epochs and write their rows of `outputs`
    (`tied_linear`: the model's two linear maps are one, `MLPConfig.tied_linear`).

    Metrics at epoch e (and a checkpoint at e) describe the parameters after e updates;
    `report` receives the model-epochs done every 50 epochs and at the end.
    """
    start, stop = chunk
    train_left, train_right, train_labels = train_set
    stepper = ChunkStep({k: v[start:stop] for k, v in params.items()},
                        train_left, train_right, train_labels, config, tied_linear)
    log_rows = {epoch: row for row, epoch in enumerate(config.log_epochs())}
    reported = 0
    for epoch in range(config.epochs + 1):
        if epoch in outputs.checkpoints:
            for k, v in stepper.params().items():
                outputs.checkpoints[epoch][k][start:stop] = v.cpu()
        if epoch in log_rows:
            values = evaluate_instances(stepper.params(), evaluations, train_left, train_right, train_labels)
            for k, v in values.items():
                outputs.metrics[k][log_rows[epoch], start:stop] = v.cpu()
        if epoch == config.epochs:
            break
        stepper.step()
        if report is not None and (epoch + 1) % 50 == 0:
            report((stop - start) * (epoch + 1 - reported))
            reported = epoch + 1
    if report is not None and reported < config.epochs:
        report((stop - start) * (config.epochs - reported))
    for k, v in stepper.params().items():
        outputs.final_params[k][start:stop] = v


# --- The sweep -----------------------------------------------------------------------------


def _train_shard(params: dict[str, torch.Tensor], train_set: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                 evaluations: Sequence[Evaluation], config: SweepConfig, plan: SweepPlan, tied_linear: bool,
                 progress: Callable[[int], None] | None, start: int, stop: int) -> dict[str, torch.Tensor]:
    """Train instances start..stop - 1 of `params` (one shard of a sweep: whole chunks of `plan`)
    over `plan.workers` workers; their outputs in flat form (`SweepOutputs.flat`)."""
    params = {k: v[start:stop] for k, v in params.items()}
    chunks = [(a - start, b - start) for a, b in plan.chunks if start <= a < stop]
    outputs = SweepOutputs.allocate(params, evaluations, config)

    def train_one_chunk(chunk: Chunk, report: Report | None) -> None:
        train_chunk(params, chunk, train_set, evaluations, config, outputs, report, tied_linear)

    threads = torch.get_num_threads()
    torch.set_num_threads(plan.torch_threads)
    try:
        run_chunks(chunks, train_one_chunk, min(plan.workers, len(chunks)), outputs.tensors(), progress)
    finally:
        torch.set_num_threads(threads)
    return outputs.flat()


def train_instances(
    params: dict[str, torch.Tensor],
    train_left: torch.Tensor,
    train_right: torch.Tensor,
    train_labels: torch.Tensor,
    evaluations: Sequence[Evaluation],
    config: SweepConfig,
    *,
    seeds: Sequence[int] | torch.Tensor | None = None,
    model_config: MLPConfig | None = None,
    progress: Callable[[int], None] | None = None,
    info: dict | None = None,
) -> SweepResult:
    """Train every instance of `params` full-batch on the given pairs and record trajectories.

    Args:
        params: initial parameters with a leading instances dimension (see `init_instances`);
            the device of these tensors is the device used for training.
        train_left, train_right, train_labels: the T training pairs and their labels.
        evaluations: label sets scored at every logged epoch (all N^2 pairs, or a mask).
        config: optimiser, schedule, logging and checkpoint epochs.
        seeds, model_config: recorded in the result (seeds default to 0..B-1).
        progress: called with a number of model-epochs each time some are done.
        info: recorded in the result.

    Returns:
        A `SweepResult`; metrics at epoch e describe the parameters after e updates.
    """
    bad = [e for e in config.checkpoint_epochs if not 0 <= e <= config.epochs]
    if bad:
        raise ValueError(f"checkpoint epochs {bad} lie outside 0..{config.epochs}.")
    if model_config is None:
        n, d = params["embed_left"].shape[1:]
        model_config = MLPConfig(n, d, params["linear_left"].shape[2], "unembed_bias" in params)
    train_set = (train_left, train_right, train_labels)
    local = current_backend().name == "local"
    # The chunks are planned once, here, whatever the backend: an instance's numbers depend on
    # its chunk, and shards are cut between chunks. Inside a Ray task a shard has one CPU (or
    # one GPU), so no worker processes of its own, and no progress callback (it reports when it
    # arrives); the task gets a picklable partial.
    plan = plan_sweep(n_instances(params), train_left.numel(), model_config, config, params["unembed"].device)
    shard_plan = plan if local else dataclasses.replace(plan, workers=1, torch_threads=1)
    shard_work = functools.partial(_train_shard, params, train_set, evaluations, config, shard_plan,
                                   model_config.tied_linear, progress if local else None)
    computed_here: set[tuple[int, int]] = set()

    def work(start: int, stop: int) -> dict[str, torch.Tensor]:
        computed_here.add((start, stop))
        return shard_work(start, stop)

    def shard_done(start: int, stop: int) -> None:
        # Shards trained here reported as they went; those from Ray or from disk report now.
        if progress is not None and (start, stop) not in computed_here:
            progress((stop - start) * config.epochs)

    tables = (t for e in evaluations for t in (e.labels, e.mask) if t is not None)
    key = content_key(*params.values(), *train_set, *tables, repr((config, model_config, [e.name for e in evaluations])))
    began = time.perf_counter()
    flat = run_sharded(work if local else shard_work, n_instances(params), key=key,
                       instance_dim=SweepOutputs.instance_dim, cut_points=[start for start, _ in plan.chunks],
                       on_shard_done=shard_done, local_workers=plan.workers)
    elapsed, outputs = time.perf_counter() - began, SweepOutputs.from_flat(flat)
    return SweepResult(
        seeds=torch.arange(n_instances(params)) if seeds is None else torch.as_tensor(seeds).clone(),
        model_config=model_config, training_config=config,
        train_left=train_left.cpu(), train_right=train_right.cpu(), train_labels=train_labels.cpu(),
        log_epochs=torch.tensor(config.log_epochs()), metrics=outputs.metrics,
        checkpoints=outputs.checkpoints,
        final_params={k: v.cpu() for k, v in outputs.final_params.items()}, elapsed_s=elapsed,
        info=dict(info or {}),
    )


__all__ = [
    "SweepConfig", "SweepResult", "snapshot_epochs", "Evaluation", "evaluate_instances", "auto_chunk_size",
    "SweepPlan", "plan_sweep", "SweepOutputs", "train_chunk", "train_instances",
]
