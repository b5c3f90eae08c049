"""A function mapped over independent runs in forked single-threaded worker processes (chapters 1-3, 6).

Chapter 1 retrains forty damaged copies of two constructions, chapter 2 trains ten seeds,
chapter 3 pre-trains and fine-tunes further seeds and chapter 6 reads several training runs
through Jacobian products: each run is small, single-threaded runs use a core best, and the runs
do not talk to each other.
`map_in_workers` hands them to `workers` forked processes, each with one torch thread, and
returns the results in the order of the items, so a run's numbers are those of the same run done
here on one thread (the tests check it). On a GPU, with one worker, or where fork is missing, the
runs go here one after the other. `start_in_workers` starts the same workers and returns at once,
so that this process can do other work meanwhile: chapter 2 trains its transition study's seeds
in them while its main run trains in the notebook's own process.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

import torch

Item = TypeVar("Item")
Result = TypeVar("Result")

#: (function, items) of the runs being started. The workers are forks of this process and keep
#: the copy they were forked with, so neither needs to be picklable (a notebook's lambda will
#: do); only the results travel.
_work: tuple[Callable, list] | None = None


def can_fork(workers: int, device: torch.device | str = "cpu") -> bool:
    """Whether `map_in_workers` and `start_in_workers` use worker processes: several workers, a CPU, and fork."""
    return workers > 1 and torch.device(device).type == "cpu" and "fork" in multiprocessing.get_all_start_methods()


def _single_threaded() -> None:
    # Intra-op threads gain little on these sizes and lose badly when the workers share the cores.
    torch.set_num_threads(1)


def _run(index: int):
    function, items = _work
    return function(items[index])


class Pending(Generic[Result]):
    """The runs of `start_in_workers`: `results()` waits for them, in the order of the items."""

    def __init__(self, function: Callable[[Item], Result], items: list, pool=None):
        self._function, self._items, self._pool = function, items, pool
        self._iterator = None if pool is None else pool.imap(_run, range(len(items)))

    @property
    def in_background(self) -> bool:
        """Whether worker processes run the items (else they run here when the results are read)."""
        return self._pool is not None

    def results(self) -> Iterator[Result]:
        """Each result as soon as it and those before it are done (computed here, in order, where
        no worker process was started). Read them once: the workers stop when they are read."""
        if self._pool is None:
            yield from map(self._function, self._items)
            return
        try:
            yield from self._iterator
        finally:
            self._pool.terminate()


def start_in_workers(function: Callable[[Item], Result], items: Iterable[Item], workers: int,
                     device: torch.device | str = "cpu") -> Pending[Result]:
    """`function(item)` for every item, started now in `workers` forked single-threaded processes
    (the function and the items of this moment; only the results must be picklable); read them
    with `Pending.results()`. Where no worker would be used (see `can_fork`), the items run here
    when the results are read."""
    global _work
    items = list(items)
    if not can_fork(min(workers, len(items)), device):
        return Pending(function, items)
    _work = (function, items)
    try:   # the pool forks its workers here, each with this `_work`
        pool = multiprocessing.get_context("fork").Pool(min(workers, len(items)), initializer=_single_threaded)
    finally:
        _work = None
    return Pending(function, items, pool)


def map_in_workers(function: Callable[[Item], Result], items: Iterable[Item], workers: int,
                   device: torch.device | str = "cpu") -> Iterator[Result]:
    """`function(item)` for every item, in order, computed by `workers` forked processes
    (`start_in_workers` when first read, then its results).

    The results must be picklable; the function and the items need not be. Yields each result
    as soon as it and those before it are done, so a caller can show progress.
    """
    yield from start_in_workers(function, items, workers, device).results()


__all__ = ["Pending", "can_fork", "map_in_workers", "start_in_workers"]
