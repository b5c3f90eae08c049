"""Chunks of a sweep spread over forked worker processes, threads, or run in order (chapters 4-6).

The sweep trainer (`lib.grokking.training.train_instances`) cuts its instances into chunks and
hands them to `run_chunks` with a function that trains one chunk and writes its rows of the
sweep's output tensors. On a CPU the chunks go to single-threaded forked worker processes that
write into shared memory; where fork is missing or /dev/shm is too small, to threads (a little
slower); with one worker, or on a GPU, they run here one after the other. Each chunk's numbers
are the same whichever way it runs (the tests check it).
"""

from __future__ import annotations

import multiprocessing
import shutil
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import torch

#: (start, stop): the instances a chunk trains together.
Chunk = tuple[int, int]
#: Called with a number of model-epochs each time some are done.
Report = Callable[[int], None]


def run_chunks(chunks: Sequence[Chunk], train_chunk: Callable[[Chunk, Report | None], None],
               workers: int, outputs: Sequence[torch.Tensor], progress: Report | None) -> None:
    """Run `train_chunk(chunk, report)` for every chunk, on `workers` workers at once.

    `outputs` are the tensors the chunks write into; worker processes need them in shared
    memory, so they are moved there (`Tensor.share_memory_`) when processes are used.
    """
    if workers > 1 and processes_can_share(outputs):
        for tensor in outputs:
            tensor.share_memory_()
        # Worker k takes chunks k, k + workers, ...: equal shares when the chunks are equal.
        _run_in_processes(lambda k, report: [train_chunk(chunk, report) for chunk in chunks[k::workers]],
                          workers, progress)
    elif workers > 1:
        _run_in_threads(chunks, train_chunk, workers, progress)
    else:
        for chunk in chunks:
            train_chunk(chunk, progress)


def processes_can_share(tensors: Sequence[torch.Tensor]) -> bool:
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


def _run_in_threads(chunks: Sequence[Chunk], train_chunk: Callable[[Chunk, Report | None], None],
                    workers: int, progress: Report | None) -> None:
    """The fallback without fork or shared memory: two threads reached about 1.8 times the speed
    of one on a 2-core machine, two processes 2.0 times."""
    lock = threading.Lock()

    def locked_progress(model_epochs: int) -> None:
        with lock:
            progress(model_epochs)

    report = locked_progress if progress is not None else None
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda chunk: train_chunk(chunk, report), chunks))


def _run_in_processes(work: Callable[[int, Report], None], workers: int, progress: Report | None) -> None:
    """Run `work(k, report)` for k = 0..workers-1 in forked processes and wait for all of them.

    Each worker is a fork of this process, so it sees every tensor that exists here; it must
    write its results into tensors in shared memory. A worker calls `report(model_epochs)` as it
    goes; the counts are summed in shared memory and passed to `progress` here. A worker that
    raises sends its traceback back, and the sweep fails with it.
    """
    context = multiprocessing.get_context("fork")
    done, errors = context.Value("q", 0), context.SimpleQueue()

    def report(model_epochs: int) -> None:
        with done.get_lock():
            done.value += model_epochs

    def run(worker: int) -> None:
        # One thread per worker: intra-op threads gain little on these matrix sizes and lose
        # badly when processes compete for the cores.
        torch.set_num_threads(1)
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


__all__ = ["Chunk", "Report", "run_chunks", "processes_can_share"]
