"""Instance-parallel work cut into shards, run here or on a Ray cluster, merged in seed order
(chapters 4-6).

Every instance of a sweep (and every perturbed copy, transplanted seed, ...) is independent of
the others, so a sweep can be cut into shards, ranges start..stop of its instances, run anywhere
and put back together. `run_sharded` does that for any `work(start, stop)` that returns a dict of
tensors with the instances along a known dimension:

* backend "local" (the default): the shards run here, one after the other, each with the
  existing batched code (which spreads its chunks over this machine's cores);
* backend "ray": each shard is a Ray task asking for one GPU when the cluster has them and one
  CPU otherwise. `ray_address=None` starts Ray on this machine's cores, "auto" or an address
  joins a running cluster. A task whose worker dies is retried by Ray (`max_retries`).

With a `results_dir`, every finished shard is written there atomically as it completes (under a
key that names the computation: its inputs' hash), so rerunning an interrupted sweep computes only
the shards that are missing; the shard files are removed once the sweep is merged. A shard that
fails (after Ray's retries) stops the sweep with one sentence naming it and its error; shards
already written stay, complete, for the rerun.

`use_backend` sets the backend for the chapter (its `sweep_backend`, `ray_address` parameters);
`lib.grokking.training.train_instances` runs through here, so chapter 4's sweeps, chapter 6's
perturbed copies, transplants and retrained seeds, and the fallback sweeps of chapters 5 and 6
all do, and so do chapter 5's LLC chains (`lib.grokking.mlp_llc.mlp_llc_in_chunks`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from lib.book.results import save_checkpoint

#: The backends a sweep can run on.
BACKENDS = ("local", "ray")

#: Work on the instances start..stop - 1: name -> tensor with those instances along its dimension.
ShardWork = Callable[[int, int], dict[str, torch.Tensor]]


class ShardFailed(RuntimeError):
    """A shard that could not be computed (after Ray's retries); its message is one sentence."""


@dataclass(frozen=True)
class SweepBackend:
    """Where sharded work runs.

    Attributes:
        name: "local" or "ray".
        ray_address: None (start Ray on this machine), "auto" or a cluster address; "ray" only.
        results_dir: where finished shards are written while a sweep runs (None: nowhere).
        shards_per_worker: shards per CPU or GPU of the cluster, so that a slow one does not hold
            up the end (the local backend uses this many shards when it writes them).
        max_retries: times Ray reruns a shard whose worker died.
    """

    name: str = "local"
    ray_address: str | None = None
    results_dir: Path | None = None
    shards_per_worker: int = 4
    max_retries: int = 3


_backend = SweepBackend()


def check_backend(name: str, ray_address: str | None) -> None:
    """Raise ValueError (one sentence) for an unknown backend or an address without Ray."""
    if name not in BACKENDS:
        raise ValueError(f"The sweep backend must be one of {', '.join(BACKENDS)}; got {name!r}.")
    if ray_address is not None and name != "ray":
        raise ValueError(f"A ray_address ({ray_address!r}) needs sweep_backend 'ray'; got {name!r}.")


def use_backend(name: str = "local", ray_address: str | None = None,
                results_dir: str | os.PathLike | None = None) -> SweepBackend:
    """Make every sweep of this process run on backend `name` (chapters 4-6 call this once)."""
    global _backend
    check_backend(name, ray_address)
    _backend = SweepBackend(name, ray_address, None if results_dir is None else Path(results_dir))
    return _backend


def current_backend() -> SweepBackend:
    """The backend set by `use_backend` (local, writing no shards, until then)."""
    return _backend


@contextlib.contextmanager
def backend_in_use(backend: SweepBackend) -> Iterator[SweepBackend]:
    """Inside the block, sweeps run on `backend` (tests)."""
    global _backend
    saved, _backend = _backend, backend
    try:
        yield backend
    finally:
        _backend = saved


def content_key(*parts: torch.Tensor | str) -> str:
    """A short name for a computation: SHA-256 over its input tensors (bytes, shape, dtype) and
    texts (configurations), so that shards of different sweeps never mix."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, torch.Tensor):
            tensor = part.detach().cpu().contiguous()
            digest.update(f"{tuple(tensor.shape)}{tensor.dtype}".encode())
            digest.update(tensor.view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
        else:
            digest.update(part.encode())
    return digest.hexdigest()[:20]


def plan_shards(n_items: int, n_shards: int, cut_points: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """About `n_shards` ranges of nearly equal size covering 0..n_items - 1, each starting at one
    of `cut_points` (default: anywhere). A sweep cuts only between its chunks, so that every
    instance is trained in the same chunk, and gives the same numbers, on every backend."""
    points = sorted(set(range(n_items) if cut_points is None else cut_points) | {0})
    n_shards = max(1, min(n_shards, len(points)))
    starts = sorted({min(points, key=lambda point: abs(point - i * n_items / n_shards)) for i in range(n_shards)})
    return list(zip(starts, starts[1:] + [n_items]))


def merge_shards(parts: list[dict[str, torch.Tensor]], instance_dim: Callable[[str], int] = lambda name: 0
                 ) -> dict[str, torch.Tensor]:
    """Concatenate shard outputs in order, each name along its instances dimension."""
    return {name: torch.cat([part[name] for part in parts], dim=instance_dim(name)) for name in parts[0]}


def _shard_path(folder: Path, start: int, stop: int) -> Path:
    return folder / f"shard_{start:08d}_{stop:08d}.pt"


def _failure(index: int, start: int, stop: int, error: BaseException) -> ShardFailed:
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    reason = lines[-1].strip() if lines else type(error).__name__
    return ShardFailed(f"Shard {index} (instances {start}..{stop - 1}) failed: {reason}")


def run_sharded(work: ShardWork, n_items: int, *, key: str, instance_dim: Callable[[str], int] = lambda name: 0,
                cut_points: Sequence[int] | None = None,
                on_shard_done: Callable[[int, int], None] | None = None,
                backend: SweepBackend | None = None, local_workers: int = 1) -> dict[str, torch.Tensor]:
    """Run `work` over instances 0..n_items - 1 in shards on the backend and merge the results.

    Args:
        work: computes the outputs of the instances start..stop - 1 (on whatever device it finds).
        key: names the computation (see `content_key`); shard files live under it.
        instance_dim: the instances dimension of each output, by name (default 0).
        cut_points: where shards may start (default: anywhere), see `plan_shards`.
        on_shard_done: called with (start, stop) as each shard finishes or is found on disk.
        backend: defaults to `current_backend()`.
        local_workers: how many chunks `work` runs at once on the local backend (its worker
            processes); a local shard then holds at least that many chunks where there are
            enough, since the local shards run one after another and a shard of one chunk
            would leave the other cores idle.

    Raises:
        ShardFailed: a shard failed (after Ray's retries); finished shards stay on disk.
    """
    backend = backend or current_backend()
    folder = None if backend.results_dir is None else backend.results_dir / "shards" / key
    workers = _ray_workers(backend) if backend.name == "ray" else 1
    sharded = backend.name == "ray" or folder is not None
    n_shards = workers * backend.shards_per_worker if sharded else 1
    if backend.name == "local" and cut_points is not None:
        n_shards = min(n_shards, max(1, len(cut_points) // max(1, local_workers)))
    shards = plan_shards(n_items, n_shards, cut_points)
    results: dict[int, dict[str, torch.Tensor]] = {}
    if folder is not None:
        for index, (start, stop) in enumerate(shards):
            path = _shard_path(folder, start, stop)
            if path.exists():
                results[index] = torch.load(path, weights_only=True)
                if on_shard_done:
                    on_shard_done(start, stop)
    missing = [index for index in range(len(shards)) if index not in results]

    def finished(index: int, outputs: dict[str, torch.Tensor]) -> None:
        results[index] = outputs
        if folder is not None:
            save_checkpoint(_shard_path(folder, *shards[index]), outputs)
        if on_shard_done:
            on_shard_done(*shards[index])

    if backend.name == "ray":
        _run_on_ray(work, shards, missing, backend, finished)
    else:
        for index in missing:
            start, stop = shards[index]
            try:
                outputs = work(start, stop)
            except Exception as error:
                if len(shards) == 1:
                    raise  # not sharded: the error as the batched code gives it
                raise _failure(index, start, stop, error) from error
            finished(index, outputs)
    merged = merge_shards([results[index] for index in range(len(shards))], instance_dim)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            folder.parent.rmdir()   # "shards/" itself, once no sweep has shards in it
    return merged


# --- Ray -------------------------------------------------------------------------------------


def _connect(backend: SweepBackend):
    import ray  # imported here: the local backend never needs it

    if not ray.is_initialized():
        ray.init(address=backend.ray_address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    return ray


def _ray_workers(backend: SweepBackend) -> int:
    """CPUs (or GPUs, where the cluster has them) that shards can run on at once."""
    resources = _connect(backend).cluster_resources()
    return max(1, int(resources.get("GPU", 0) or resources.get("CPU", 1)))


def _run_shard_in_task(work: ShardWork, start: int, stop: int) -> dict[str, torch.Tensor]:
    torch.set_num_threads(1)  # one CPU per task: Ray runs as many tasks as the node has CPUs
    return {name: tensor.cpu() for name, tensor in work(start, stop).items()}


def _run_on_ray(work: ShardWork, shards: list[tuple[int, int]], missing: list[int], backend: SweepBackend,
                finished: Callable[[int, dict[str, torch.Tensor]], None]) -> None:
    ray = _connect(backend)
    gpus = ray.cluster_resources().get("GPU", 0) > 0
    task = ray.remote(_run_shard_in_task).options(
        num_gpus=1 if gpus else 0, num_cpus=0 if gpus else 1, max_retries=backend.max_retries)
    work_ref = ray.put(work)
    pending = {task.remote(work_ref, *shards[index]): index for index in missing}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(done[0])
            try:
                outputs = ray.get(done[0])
            except Exception as error:
                raise _failure(index, *shards[index], error) from None
            finished(index, outputs)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)


__all__ = ["BACKENDS", "ShardFailed", "ShardWork", "SweepBackend", "backend_in_use", "check_backend",
           "content_key", "current_backend", "merge_shards", "plan_shards", "run_sharded", "use_backend"]
