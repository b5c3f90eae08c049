"""Independent runs started in forked single-threaded worker processes, collected later (chapter 2).

`lib.book.workers.map_in_workers` hands runs to worker processes and waits for them;
`start_in_workers` starts the same workers and returns at once, so this process can do other
work meanwhile: chapter 2 trains its transition study's ten seeds in two workers while its main
run trains in the notebook's own process. Each worker is forked when the runs start (the
function and the items need not be picklable, only the results) and runs torch on one thread, so
each run's numbers are those of the same run done here on one thread (the tests check it). On a
GPU, with one worker, or where fork is missing, nothing runs until the results are read; then the
runs go here one after the other.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

import torch

from lib.book.workers import can_fork

Item = TypeVar("Item")
Result = TypeVar("Result")

#: (function, items) of the runs being started; each pool's workers keep the copy they were forked with.
_work: tuple[Callable, list] | None = None


def _single_threaded() -> None:
    # As in lib.book.workers: one torch thread per worker, one worker per core.
    torch.set_num_threads(1)


def _run(index: int):
    function, items = _work
    return function(items[index])


class Pending(Generic[Result]):
    """The runs of `start_in_workers`: `results()` waits for them, in the order of the items."""

    def __init__(self, function: Callable[[Item], Result], items: list, pool=None, iterator=None):
        self._function, self._items, self._pool, self._iterator = function, items, pool, iterator

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
    """`function(item)` for every item, started now in `workers` forked single-threaded processes;
    read them with `Pending.results()`. Where `lib.book.workers.map_in_workers` would run the
    items here, they run here when the results are read."""
    global _work
    items = list(items)
    if not can_fork(min(workers, len(items)), device):
        return Pending(function, items)
    _work = (function, items)
    try:   # the pool forks its workers here, each with this `_work`
        pool = multiprocessing.get_context("fork").Pool(min(workers, len(items)), initializer=_single_threaded)
    finally:
        _work = None
    return Pending(function, items, pool, pool.imap(_run, range(len(items))))


__all__ = ["Pending", "start_in_workers"]
