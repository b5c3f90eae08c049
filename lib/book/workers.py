"""A function mapped over independent runs in forked single-threaded worker processes (chapters 1-3, 6).

Chapter 1 retrains forty damaged copies of two constructions, chapter 2 trains ten seeds,
chapter 3 pre-trains and fine-tunes further seeds and chapter 6 reads several training runs
through Jacobian products: each run is small, single-threaded runs use a core best, and the runs
do not talk to each other.
`map_in_workers` hands them to `workers` forked processes, each with one torch thread, and
returns the results in the order of the items, so a run's numbers are those of the same run done
here on one thread (the tests check it). On a GPU, with one worker, or where fork is missing, the
runs go here one after the other.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import torch

Item = TypeVar("Item")
Result = TypeVar("Result")

#: (function, items) of the map in progress. The workers are forks of this process and inherit
#: it, so neither needs to be picklable (a notebook's lambda will do); only the results travel.
_work: tuple[Callable, list] | None = None


def can_fork(workers: int, device: torch.device | str = "cpu") -> bool:
    """Whether `map_in_workers` would use worker processes: several workers, a CPU, and fork."""
    return workers > 1 and torch.device(device).type == "cpu" and "fork" in multiprocessing.get_all_start_methods()


def _single_threaded() -> None:
    # Intra-op threads gain little on these sizes and lose badly when the workers share the cores.
    torch.set_num_threads(1)


def _run(index: int):
    function, items = _work
    return function(items[index])


def map_in_workers(function: Callable[[Item], Result], items: Iterable[Item], workers: int,
                   device: torch.device | str = "cpu") -> Iterator[Result]:
    """`function(item)` for every item, in order, computed by `workers` forked processes.

    The results must be picklable; the function and the items need not be. Yields each result
    as soon as it and those before it are done, so a caller can show progress.
    """
    global _work
    items = list(items)
    if not can_fork(min(workers, len(items)), device):
        yield from map(function, items)
        return
    _work = (function, items)
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(items)), initializer=_single_threaded) as pool:
            yield from pool.imap(_run, range(len(items)))
    finally:
        _work = None


__all__ = ["can_fork", "map_in_workers"]
