"""A function mapped over independent runs in forked single-threaded worker processes (chapters 1-3, 6, 7).

Chapter 1 retrains forty damaged copies of two constructions, chapter 2 trains ten seeds,
chapter 3 pre-trains and fine-tunes further seeds and chapter 6 reads several training runs
through Jacobian products: each run is small, single-threaded runs use a core best, and the runs
do not talk to each other.
`map_in_workers` hands them to `workers` forked processes, each with one torch thread, and
returns the results in the order of the items, so a run's numbers are those of the same run done
here on one thread (the tests check it). On a machine with a GPU, with one worker, or where fork
is missing, the runs go here one after the other (on this process's threads). `start_in_workers`
starts the same workers and returns at once, so that this process can do other work meanwhile;
with `this_process_helps` it also runs, once it reads the results and on one thread, the items no
worker has started yet. Chapter 2 trains its transition study's seeds so, in one worker while its
main run trains in the notebook's own process, then in both, and meanwhile scores the main run's
kept weights in one more worker (three busy processes for about 20 s); chapter 1 retrains its
damaged copies so beside its other sections: two busy processes on two cores.
"""

from __future__ import annotations

import multiprocessing
import pickle
import queue
import traceback
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

import torch

Item = TypeVar("Item")
Result = TypeVar("Result")

#: (function, items) of the runs being started. The workers are forks of this process and keep
#: the copy they were forked with, so neither needs to be picklable (a notebook's lambda will
#: do); only the results travel.
_work: tuple[Callable, list] | None = None

#: Seconds between two checks that the workers still live while this process waits for a result.
_POLL_SECONDS = 1.0


def can_fork(processes: int, device: torch.device | str = "cpu") -> bool:
    """Whether `map_in_workers` and `start_in_workers` fork worker processes for runs shared by
    `processes` processes (the workers, and this one where it helps): several, a CPU, fork, and no
    CUDA device. A fork of a process that has asked the CUDA driver anything (as checking for a
    device does) cannot use CUDA, and torch's optimizers ask it about graph capture even for CPU
    tensors, so on a machine with a GPU the runs go here."""
    return (processes > 1 and torch.device(device).type == "cpu" and not torch.cuda.is_available()
            and "fork" in multiprocessing.get_all_start_methods())


def _claim(claimed, count: int) -> int | None:
    """The index of the next item nobody has started, now taken, or None when all are."""
    with claimed.get_lock():
        index = claimed.value
        if index >= count:
            return None
        claimed.value = index + 1
        return index


def _worker(claimed, results) -> None:
    """A forked worker's life: on one torch thread, run unclaimed items until none is left,
    sending each result (or the error that stopped it) pickled, so a result that does not pickle
    is reported rather than lost."""
    # Intra-op threads gain little on these sizes and lose badly when the workers share the cores.
    torch.set_num_threads(1)
    function, items = _work
    while (index := _claim(claimed, len(items))) is not None:
        try:
            results.put((index, True, pickle.dumps(function(items[index]))))
        except BaseException:  # noqa: BLE001 - any failure goes back to the reader, with its traceback
            results.put((index, False, traceback.format_exc()))
            return


class Pending(Generic[Result]):
    """The runs of `start_in_workers`: `results()` waits for them, in the order of the items."""

    def __init__(self, function: Callable[[Item], Result], items: list, *, processes: list | None = None,
                 claimed=None, results=None, this_process_helps: bool = False):
        self._function, self._items = function, items
        self._processes, self._claimed, self._results = processes or [], claimed, results
        self._helps = this_process_helps

    @property
    def in_background(self) -> bool:
        """Whether worker processes run the items (else they run here when the results are read)."""
        return bool(self._processes)

    def results(self) -> Iterator[Result]:
        """Each result as soon as it and those before it are done (computed here, in order, where
        no worker process was started). Where this process helps, it runs the items no worker has
        started yet, one at a time on one torch thread, between collecting the workers' results.
        Read them once: the workers stop when they are read."""
        if not self._processes:
            yield from map(self._function, self._items)
            return
        done: dict[int, Result] = {}
        try:
            for index in range(len(self._items)):
                while index not in done:
                    self._collect(done, wait=False)
                    mine = _claim(self._claimed, len(self._items)) if self._helps else None
                    if mine is not None:
                        done[mine] = self._run_here(self._items[mine])
                    elif index not in done:
                        self._collect(done, wait=True)
                yield done.pop(index)
        finally:
            for process in self._processes:
                if process.is_alive():
                    process.terminate()
                process.join()

    def _run_here(self, item: Item) -> Result:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)   # the numbers of a worker's run
        try:
            return self._function(item)
        finally:
            torch.set_num_threads(threads)

    def _collect(self, done: dict, *, wait: bool) -> None:
        """Move the results the workers have sent into `done`; with `wait`, wait for one (and
        stop with an error if every worker has ended and none is coming)."""
        while True:
            try:
                index, ok, payload = self._results.get(timeout=_POLL_SECONDS) if wait else self._results.get_nowait()
            except queue.Empty:
                if not wait:
                    return
                if not any(process.is_alive() for process in self._processes) and self._results.empty():
                    raise RuntimeError("every worker process ended before all results came back "
                                       f"({len(done)} of {len(self._items)} here)") from None
                continue
            if not ok:
                raise RuntimeError(f"item {index} failed in a worker process:\n{payload}")
            done[index] = pickle.loads(payload)
            wait = False


def start_in_workers(function: Callable[[Item], Result], items: Iterable[Item], workers: int,
                     device: torch.device | str = "cpu", *, this_process_helps: bool = False) -> Pending[Result]:
    """`function(item)` for every item, started now in `workers` forked single-threaded processes
    (the function and the items of this moment; only the results must be picklable); read them
    with `Pending.results()`. With `this_process_helps`, this process also runs items, those no
    worker has started when it reads the results. Where no worker would be used (see
    `can_fork`), the items run here when the results are read."""
    global _work
    items = list(items)
    workers = min(workers, len(items) - int(this_process_helps))
    if workers < 1 or not can_fork(workers + int(this_process_helps), device):
        return Pending(function, items)
    context = multiprocessing.get_context("fork")
    claimed, results = context.Value("l", 0), context.Queue()
    _work = (function, items)
    try:   # each worker is forked here, with this `_work`
        processes = [context.Process(target=_worker, args=(claimed, results), daemon=True) for _ in range(workers)]
        for process in processes:
            process.start()
    finally:
        _work = None
    return Pending(function, items, processes=processes, claimed=claimed, results=results,
                   this_process_helps=this_process_helps)


def map_in_workers(function: Callable[[Item], Result], items: Iterable[Item], workers: int,
                   device: torch.device | str = "cpu") -> Iterator[Result]:
    """`function(item)` for every item, in order, computed by `workers` forked processes
    (`start_in_workers` when first read, then its results).

    The results must be picklable; the function and the items need not be. Yields each result
    as soon as it and those before it are done, so a caller can show progress.
    """
    yield from start_in_workers(function, items, workers, device).results()


__all__ = ["Pending", "can_fork", "map_in_workers", "start_in_workers"]
