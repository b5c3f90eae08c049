"""Full-batch training of thousands of MLP instances at once, with trajectories (chapters 4-6).

Every instance is trained as the authors trained one model: full batch, mean cross-entropy,
Adam (lr 0.01, betas 0.9/0.98) with coupled L2 weight decay (added to the gradient) on every
parameter except the unembedding bias. Because the loss of the batch is the sum of the
instances' losses and Adam acts elementwise, one optimizer over the stacked tensors follows
each instance's own trajectory; `train_single` is the one-model reference the tests compare
against.

Speed on a CPU comes from three things: the gradient is written out by hand (no autograd graph,
and no allocation inside the epoch loop except the gathered hidden layer), the embedding lookups
and the linear maps are fused (a lookup in E @ W costs N rows instead of T), and instances are
trained in chunks of about 10 MiB of activations, each chunk for all epochs, by one
single-threaded worker process per core. Accuracy on all N^2 pairs is computed only at logged
epochs.

Chapters 5 and 6 start sweeps from any parameters (perturbed checkpoints, models trained on
another set) by passing them to `train_instances`; the optimizer state always starts fresh.
"""

from __future__ import annotations

import math
import multiprocessing
import shutil
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from lib.grokking.mlp import (
    NO_DECAY, PARAMETER_NAMES, MLPConfig, init_single, n_instances, single_logits,
)
from lib.book.process_memory import keep_freed_memory


@dataclass(frozen=True)
class SweepConfig:
    """Optimiser, schedule and bookkeeping of a sweep.

    Attributes:
        epochs: number of full-batch updates.
        lr, beta1, beta2, eps: Adam hyperparameters (the authors: 0.01, 0.9, 0.98, 1e-8).
        weight_decay: coupled L2 coefficient on non-bias parameters (S4/S5: 2e-5).
        log_every: metrics are recorded at epochs 0, log_every, 2 log_every, ... and at `epochs`.
        checkpoint_epochs: epochs whose parameters are kept for every instance (0 = init).
        chunk_size: instances trained together; 0 picks one (see `auto_chunk_size`).
        workers: processes training different chunks at once, each single-threaded, on a CPU
            (threads where fork or room in /dev/shm is missing); 0 uses one per torch thread.
    """

    epochs: int = 2000
    lr: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-8
    weight_decay: float = 2e-5
    log_every: int = 10
    checkpoint_epochs: tuple[int, ...] = ()
    chunk_size: int = 0
    workers: int = 0

    def log_epochs(self) -> list[int]:
        """The epochs at which metrics are recorded."""
        epochs = list(range(0, self.epochs + 1, self.log_every))
        return epochs if epochs[-1] == self.epochs else epochs + [self.epochs]


@dataclass(frozen=True)
class Evaluation:
    """A set of pairs and the labels a model is scored against on them.

    Attributes:
        name: key of the metric ("acc_<name>" in `SweepResult.metrics`).
        labels: (N, N) LongTensor of correct outputs, e.g. a group's table.
        mask: (N, N) BoolTensor of the pairs scored; None scores all N^2 pairs.
    """

    name: str
    labels: torch.Tensor
    mask: torch.Tensor | None = None


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


# --- Evaluation ----------------------------------------------------------------------------


@torch.no_grad()
def evaluate_instances(
    params: dict[str, torch.Tensor],
    evaluations: Sequence[Evaluation],
    train_left: torch.Tensor,
    train_right: torch.Tensor,
    train_labels: torch.Tensor,
    max_logits: int = 2 ** 24,
) -> dict[str, torch.Tensor]:
    """Per-instance training loss and accuracy, and accuracy on each evaluation, each (B,).

    One forward pass over all N^2 pairs serves every metric; instances are processed in groups
    of at most `max_logits` logits to bound memory. Logits are laid out (B, N, N^2) so that
    the reductions over classes run along a short axis with a long contiguous inner one.
    """
    n = params["unembed"].shape[-1]
    device = params["unembed"].device
    train_index = (train_left * n + train_right).to(device)
    train_labels = train_labels.to(device)
    # Accuracy on an evaluation = (number correct inside the mask) / (mask size), exact counts.
    targets = []
    for e in evaluations:
        mask = torch.ones(n * n, device=device) if e.mask is None else e.mask.flatten().to(device).float()
        targets.append((e.labels.flatten().to(device), mask, float(mask.sum())))
    # Class c weighs n - c: among the classes with the maximal logit, the first weighs most.
    first_weight = (n - torch.arange(n, device=device)).to(torch.uint8 if n < 256 else torch.int16)
    first_weight = first_weight[None, :, None]
    b_total = n_instances(params)
    step = max(1, max_logits // (n * n * n))
    out = {key: torch.empty(b_total, device=device)
           for key in ["train_loss", "train_acc"] + [f"acc_{e.name}" for e in evaluations]}
    for start in range(0, b_total, step):
        part = {k: v[start:start + step] for k, v in params.items()}
        b = part["unembed"].shape[0]
        left_rows = torch.bmm(part["embed_left"], part["linear_left"])
        right_rows = torch.bmm(part["embed_right"], part["linear_right"])
        hidden = (left_rows[:, :, None, :] + right_rows[:, None, :, :]).relu_().view(b, n * n, -1)
        logits = torch.bmm(part["unembed"].transpose(1, 2), hidden.transpose(1, 2))   # (b, N, N^2)
        if "unembed_bias" in part:
            logits += part["unembed_bias"][:, :, None]
        col_max = logits.amax(dim=1)                                                # (b, N^2)
        # argmax over classes (first maximum, as torch.argmax) via a max over small integers,
        # several times faster on a CPU than torch.argmax or a where/amin over dim 1.
        is_max = (logits == col_max[:, None, :]).view(torch.uint8)
        predictions = n - (is_max * first_weight).amax(dim=1).int()
        log_sum_exp = (logits - col_max[:, None, :]).exp_().sum(dim=1).log_().add_(col_max)
        train_label_logit = logits.view(b, -1).index_select(1, train_labels * (n * n) + train_index)
        rows = slice(start, start + b)
        out["train_loss"][rows] = (log_sum_exp.index_select(1, train_index) - train_label_logit).mean(1)
        out["train_acc"][rows] = (predictions.index_select(1, train_index) == train_labels).float().mean(1)
        for e, (labels, mask, size) in zip(evaluations, targets):
            out[f"acc_{e.name}"][rows] = ((predictions == labels).float() @ mask) / size
    return out


#: torch's fused Adam kernel (private, present in the pinned torch); None falls back to plain ops.
_FUSED_ADAM = getattr(torch, "_fused_adam_", None)


# --- The hand-written full-batch step --------------------------------------------------------


class _ChunkStep:
    """Forward, backward and Adam update of a chunk of B instances, with preallocated buffers.

    Layout choices, all for speed on a CPU:
    * every parameter, gradient and Adam moment lives in one flat buffer (parameter-major, the
      bias last), so Adam is one fused kernel call (or five plain ops) over one tensor;
    * the unembedding is stored transposed (B, N, h), which makes both of its matrix products
      in the backward pass the fast kind;
    * the tables E_left @ W_left and E_right @ W_right share one (2, B, N, h) buffer, so one
      embedding_bag looks up both rows of every pair and sums them;
    * logits are laid out (B, N, T): the softmax runs over a short axis with a long
      contiguous inner one, in place, with the 1/T of the mean folded into its normaliser.
    """

    def __init__(self, params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor,
                 labels: torch.Tensor, config: SweepConfig):
        b, n, d = params["embed_left"].shape
        h = params["linear_left"].shape[2]
        t = left.numel()
        device, dtype = params["unembed"].device, params["unembed"].dtype
        self.b, self.n, self.h, self.t, self.config = b, n, h, t, config
        like = {"device": device, "dtype": dtype}
        self.has_bias = "unembed_bias" in params
        shapes = {"embed_left": (b, n, d), "embed_right": (b, n, d), "linear_left": (b, d, h),
                  "linear_right": (b, d, h), "unembed_t": (b, n, h)}
        if self.has_bias:
            shapes["unembed_bias"] = (b, n)
        sizes = [math.prod(shape) for shape in shapes.values()]
        total = sum(sizes)
        self.n_decay = total - (b * n if self.has_bias else 0)
        self.flat = torch.empty(total, **like)
        self.flat_grad = torch.empty(total, **like)
        self.exp_avg = torch.zeros(total, **like)
        self.exp_avg_sq = torch.zeros(total, **like)
        self.denom = torch.empty(total, **like)
        self.p, self.g, offset = {}, {}, 0
        for (name, shape), size in zip(shapes.items(), sizes):
            self.p[name] = self.flat[offset:offset + size].view(shape)
            self.g[name] = self.flat_grad[offset:offset + size].view(shape)
            offset += size
        # Left and right embeddings (and linear maps) are adjacent in the flat buffer, so one
        # batched product over 2B matrices handles both sides.
        self.embeds = self.flat[:2 * b * n * d].view(2 * b, n, d)
        self.linears = self.flat[2 * b * n * d:2 * b * (n * d + d * h)].view(2 * b, d, h)
        self.grad_embeds = self.flat_grad[:2 * b * n * d].view(2 * b, n, d)
        self.grad_linears = self.flat_grad[2 * b * n * d:2 * b * (n * d + d * h)].view(2 * b, d, h)
        for name, value in params.items():
            target = self.p["unembed_t"] if name == "unembed" else self.p[name]
            target.copy_(value.transpose(1, 2) if name == "unembed" else value)
        self.adam_step = 0
        self.step_tensor = torch.zeros((), **like)

        instance = torch.arange(b, device=device)[:, None] * n
        left, right = left.to(device), right.to(device)
        self.left, self.right = left, right
        self.bags = torch.stack([(left[None, :] + instance).flatten(),
                                 (right[None, :] + instance + b * n).flatten()], dim=1).flatten().int()
        # Made once, not per step; int32 indices make the lookup about 15% faster than int64.
        self.bag_offsets = torch.arange(0, 2 * b * t, 2, device=device, dtype=torch.int32)
        # Position of each pair's label in a flattened (N, T) slice, and the -1 added there.
        self.label_index = labels.to(device) * t + torch.arange(t, device=device)
        self.minus_one_over_t = torch.full((b, t), -1.0 / t, **like)
        self.tables = torch.empty(2, b, n, h, **like)
        self.logits = torch.empty(b, n, t, **like)
        self.col_max = torch.empty(b, 1, t, **like)
        self.col_sum = torch.empty(b, 1, t, **like)
        self.grad_hidden = torch.empty(b, t, h, **like)
        self.grad_tables = torch.empty(2, b, n, h, **like)

    @torch.no_grad()
    def step(self) -> None:
        p, g, b, n, h, t = self.p, self.g, self.b, self.n, self.h, self.t
        torch.bmm(self.embeds, self.linears, out=self.tables.view(2 * b, n, h))
        hidden = torch.nn.functional.embedding_bag(
            self.bags, self.tables.view(2 * b * n, h), self.bag_offsets, mode="sum").view(b, t, h)
        hidden.relu_()
        logits = torch.bmm(p["unembed_t"], hidden.transpose(1, 2), out=self.logits)
        if self.has_bias:
            logits += p["unembed_bias"][:, :, None]
        # Gradient of the mean cross-entropy w.r.t. the logits, (softmax - onehot) / T, computed
        # in place: subtract the column max, exponentiate, scale by 1 / (T * column sum).
        torch.amax(logits, dim=1, keepdim=True, out=self.col_max)
        logits.sub_(self.col_max).exp_()
        torch.sum(logits, dim=1, keepdim=True, out=self.col_sum)
        grad_logits = logits.mul_(self.col_sum.mul_(t).reciprocal_())
        grad_logits.view(b, -1).index_add_(1, self.label_index, self.minus_one_over_t)
        torch.bmm(grad_logits, hidden, out=g["unembed_t"])
        if self.has_bias:
            torch.sum(grad_logits, dim=2, out=g["unembed_bias"])
        torch.bmm(grad_logits.transpose(1, 2), p["unembed_t"], out=self.grad_hidden)
        grad_hidden = torch.ops.aten.threshold_backward.grad_input(
            self.grad_hidden, hidden, 0.0, grad_input=self.grad_hidden)
        grad_tables = self.grad_tables.zero_()
        grad_tables[0].index_add_(1, self.left, grad_hidden)
        grad_tables[1].index_add_(1, self.right, grad_hidden)
        rows = grad_tables.view(2 * b, n, h)
        torch.bmm(self.embeds.transpose(1, 2), rows, out=self.grad_linears)
        torch.bmm(rows, self.linears.transpose(1, 2), out=self.grad_embeds)
        self._adam()

    def _adam(self) -> None:
        """Adam with coupled weight decay (torch.optim.Adam's rule) on the flat buffers.

        Uses torch's fused CPU/GPU kernel when present: one pass instead of five.
        """
        c = self.config
        self.adam_step += 1
        regions = [(slice(0, self.n_decay), c.weight_decay)]
        if self.has_bias:
            regions.append((slice(self.n_decay, None), 0.0))
        if _FUSED_ADAM is not None:
            self.step_tensor += 1
            for region, decay in regions:
                _FUSED_ADAM([self.flat[region]], [self.flat_grad[region]], [self.exp_avg[region]],
                            [self.exp_avg_sq[region]], [], [self.step_tensor], lr=c.lr,
                            beta1=c.beta1, beta2=c.beta2, weight_decay=decay, eps=c.eps,
                            amsgrad=False, maximize=False)
            return
        grad, param = self.flat_grad, self.flat
        for region, decay in regions:
            if decay != 0:
                grad[region].add_(param[region], alpha=decay)
        self.exp_avg.lerp_(grad, 1 - c.beta1)
        self.exp_avg_sq.mul_(c.beta2).addcmul_(grad, grad, value=1 - c.beta2)
        bias_correction1 = 1 - c.beta1 ** self.adam_step
        bias_correction2 = 1 - c.beta2 ** self.adam_step
        torch.sqrt(self.exp_avg_sq, out=self.denom).div_(bias_correction2 ** 0.5).add_(c.eps)
        param.addcdiv_(self.exp_avg, self.denom, value=-c.lr / bias_correction1)

    def params(self) -> dict[str, torch.Tensor]:
        """Views of the current parameters in the canonical layout of `lib.grokking.mlp`."""
        out = {k: v for k, v in self.p.items() if k != "unembed_t"}
        out["unembed"] = self.p["unembed_t"].transpose(1, 2)
        return {k: out[k] for k in PARAMETER_NAMES if k in out}


# --- Sweeps --------------------------------------------------------------------------------


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


def _cpu_schedule(n_chunks: int, threads: int, workers: int, device: torch.device) -> tuple[int, int]:
    """(worker processes, intra-op threads) for a sweep.

    On a CPU every worker runs single-threaded and the workers share the chunks. Intra-op
    parallelism gains little on these matrix sizes and loses badly when another process
    competes for the cores: on a shared 2-core machine, one S5-pair epoch took 11 ms on one
    thread and 110 ms on two.
    """
    if device.type != "cpu":
        return 1, threads
    return max(1, min(workers or threads, n_chunks)), 1


def _can_share(tensors: Sequence[torch.Tensor]) -> bool:
    """Whether sweep workers can be processes: fork exists, and /dev/shm has room for `tensors`.

    A container's /dev/shm can be as small as 64 MiB, and a worker that writes past its end dies
    of SIGBUS; with twice the outputs' size free there is room to spare.
    """
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    needed = sum(tensor.numel() * tensor.element_size() for tensor in tensors)
    try:
        return 2 * needed < shutil.disk_usage("/dev/shm").free
    except OSError:
        return False


def _run_in_processes(work: Callable[[int, Callable[[int], None]], None], workers: int,
                      progress: Callable[[int], None] | None) -> None:
    """Run `work(k, report)` for k = 0..workers-1 in forked processes and wait for all of them.

    Each worker is a fork of this process, so it sees every tensor that exists here; it must
    write its results into tensors in shared memory (`Tensor.share_memory_`). Processes, not
    threads: two threads training chunks reached about 1.8 times the speed of one on a 2-core
    machine, two processes 2.0 times. A worker calls `report(model_epochs)` as it goes; the
    counts are summed in shared memory and passed to `progress` here. A worker that raises
    sends its traceback back, and the sweep fails with it.
    """
    context = multiprocessing.get_context("fork")
    done, errors = context.Value("q", 0), context.SimpleQueue()

    def report(model_epochs: int) -> None:
        with done.get_lock():
            done.value += model_epochs

    def run(worker: int) -> None:
        torch.set_num_threads(1)
        keep_freed_memory()
        try:
            work(worker, report)
        except BaseException:
            errors.put(f"worker {worker}: {traceback.format_exc()}")
            sys.exit(1)  # the parent raises with this traceback; exit without printing it twice

    processes = [context.Process(target=run, args=(k,), daemon=True) for k in range(workers)]
    for process in processes:
        process.start()
    reported = 0
    try:
        while any(process.is_alive() for process in processes):
            processes[0].join(timeout=0.2)
            if progress is not None and done.value > reported:
                progress(done.value - reported)
                reported = done.value
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
            process.join()
    if progress is not None and done.value > reported:
        progress(done.value - reported)
    failed = [process.exitcode for process in processes if process.exitcode != 0]
    if failed:
        message = errors.get() if not errors.empty() else f"a worker exited with code {failed[0]}"
        raise RuntimeError(f"The sweep failed in a worker process: {message}")


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
    b_total = n_instances(params)
    device = params["unembed"].device
    if model_config is None:
        n, d = params["embed_left"].shape[1:]
        model_config = MLPConfig(n, d, params["linear_left"].shape[2], "unembed_bias" in params)
    bad = [e for e in config.checkpoint_epochs if not 0 <= e <= config.epochs]
    if bad:
        raise ValueError(f"checkpoint epochs {bad} lie outside 0..{config.epochs}.")
    log_epochs = config.log_epochs()
    metric_names = ["train_loss", "train_acc"] + [f"acc_{e.name}" for e in evaluations]
    metrics = {k: torch.empty(len(log_epochs), b_total) for k in metric_names}
    checkpoints = {e: {k: torch.empty_like(v, device="cpu") for k, v in params.items()}
                   for e in sorted(set(config.checkpoint_epochs))}
    final_params = {k: torch.empty_like(v) for k, v in params.items()}

    threads = torch.get_num_threads()
    chunk = config.chunk_size or auto_chunk_size(train_left.numel(), model_config)
    if not config.chunk_size and device.type == "cpu":
        # A whole number of equal chunks per worker, so that no worker is left with one more.
        n_workers = config.workers or threads
        rounds = -(-b_total // (chunk * n_workers))
        chunk = -(-b_total // (rounds * n_workers))
    chunks = [(s, min(s + chunk, b_total)) for s in range(0, b_total, chunk)]
    workers, intra_op = _cpu_schedule(len(chunks), threads, config.workers, device)
    outputs = [*metrics.values(), *final_params.values(),
               *(v for snapshot in checkpoints.values() for v in snapshot.values())]
    in_processes = workers > 1 and _can_share(outputs)
    if in_processes:  # the workers write their rows into shared memory
        for tensor in outputs:
            tensor.share_memory_()

    def run_chunk(bounds: tuple[int, int], report: Callable[[int], None] | None) -> None:
        start, stop = bounds
        part = {k: v[start:stop] for k, v in params.items()}
        stepper = _ChunkStep(part, train_left, train_right, train_labels, config)
        done = 0
        for epoch in range(config.epochs + 1):
            if epoch in checkpoints:
                for k, v in stepper.params().items():
                    checkpoints[epoch][k][start:stop] = v.cpu()
            if epoch % config.log_every == 0 or epoch == config.epochs:
                row = log_epochs.index(epoch)
                values = evaluate_instances(stepper.params(), evaluations,
                                            train_left, train_right, train_labels)
                for k, v in values.items():
                    metrics[k][row, start:stop] = v.cpu()
            if epoch == config.epochs:
                break
            stepper.step()
            if report is not None and (epoch + 1) % 50 == 0:
                report((stop - start) * (epoch + 1 - done))
                done = epoch + 1
        if report is not None and done < config.epochs:
            report((stop - start) * (config.epochs - done))
        for k, v in stepper.params().items():
            final_params[k][start:stop] = v

    began = time.perf_counter()
    torch.set_num_threads(intra_op)
    try:
        if in_processes:
            # Worker k takes chunks k, k + workers, ...: equal shares (see the chunk size above).
            _run_in_processes(lambda k, report: [run_chunk(bounds, report) for bounds in chunks[k::workers]],
                              workers, progress)
        elif workers > 1:  # no fork or no room in shared memory: threads, a little slower
            lock = threading.Lock()

            def locked_progress(model_epochs: int) -> None:
                with lock:
                    progress(model_epochs)

            report = locked_progress if progress is not None else None
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(lambda bounds: run_chunk(bounds, report), chunks))
        else:
            for bounds in chunks:
                run_chunk(bounds, progress)
    finally:
        torch.set_num_threads(threads)
    elapsed = time.perf_counter() - began

    if seeds is None:
        seeds = torch.arange(b_total)
    return SweepResult(
        seeds=torch.as_tensor(seeds).clone(), model_config=model_config, training_config=config,
        train_left=train_left.cpu(), train_right=train_right.cpu(), train_labels=train_labels.cpu(),
        log_epochs=torch.tensor(log_epochs), metrics=metrics, checkpoints=checkpoints,
        final_params={k: v.cpu() for k, v in final_params.items()}, elapsed_s=elapsed,
        info=dict(info or {}),
    )


def train_single(
    seed: int,
    model_config: MLPConfig,
    train_left: torch.Tensor,
    train_right: torch.Tensor,
    train_labels: torch.Tensor,
    config: SweepConfig,
    record_epochs: Sequence[int] = (),
    dtype: torch.dtype = torch.float32,
) -> tuple[dict[str, torch.Tensor], dict[int, dict[str, torch.Tensor]], list[float]]:
    """Train one model alone, written plainly with autograd and torch.optim.Adam (the reference).

    Returns the final parameters, the parameters at `record_epochs`, and the training loss at
    every epoch (before that epoch's update).
    """
    params = {k: v.to(dtype).requires_grad_() for k, v in init_single(seed, model_config).items()}
    groups = [{"params": [v for k, v in params.items() if k not in NO_DECAY],
               "weight_decay": config.weight_decay}]
    if any(k in NO_DECAY for k in params):
        groups.append({"params": [v for k, v in params.items() if k in NO_DECAY], "weight_decay": 0.0})
    optimizer = torch.optim.Adam(groups, lr=config.lr, betas=(config.beta1, config.beta2), eps=config.eps)
    recorded, losses = {}, []
    for epoch in range(config.epochs + 1):
        if epoch in record_epochs:
            recorded[epoch] = {k: v.detach().clone() for k, v in params.items()}
        if epoch == config.epochs:
            break
        loss = torch.nn.functional.cross_entropy(single_logits(params, train_left, train_right),
                                                 train_labels)
        losses.append(float(loss.detach()))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {k: v.detach() for k, v in params.items()}, recorded, losses

