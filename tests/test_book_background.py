"""Runs started in the background (lib.book.background): the results of map_in_workers, in order,
computed in other processes while this one goes on; without workers, computed when read."""

import os

import torch

from lib.book.background import start_in_workers
from lib.book.workers import can_fork, map_in_workers


def _noisy_sum(seed: int) -> tuple[int, float, int]:
    generator = torch.Generator().manual_seed(seed)
    return seed, float(torch.randn(1000, generator=generator).sum()), torch.get_num_threads()


def _pid(item: int) -> tuple[int, int]:
    return item, os.getpid()


def test_started_workers_give_in_order_what_map_in_workers_gives():
    pending = start_in_workers(_noisy_sum, range(5), workers=2)
    torch.randn(1000).sum()                              # this process goes on meanwhile
    started = list(pending.results())
    assert [r[:2] for r in started] == [r[:2] for r in map_in_workers(_noisy_sum, range(5), workers=2)]
    if can_fork(2):
        assert all(r[2] == 1 for r in started)           # each worker runs on one thread
        pids = {pid for _, pid in start_in_workers(_pid, range(4), workers=2).results()}
        assert os.getpid() not in pids


def test_a_closure_over_unpicklable_state_runs_in_the_workers():
    offset = torch.nn.Linear(1, 1)        # reached through the closure, inherited by the forks
    pending = start_in_workers(lambda x: x + 1 + 0 * float(offset.weight.sum()), [1, 2, 3], workers=2)
    assert list(pending.results()) == [2.0, 3.0, 4.0]


def test_without_workers_nothing_runs_before_the_results_are_read():
    called = []
    pending = start_in_workers(lambda x: called.append(x) or -x, [1, 2], workers=1)
    assert called == []
    assert list(pending.results()) == [-1, -2] and called == [1, 2]


def test_in_background_says_where_the_items_run():
    assert not start_in_workers(abs, [1, 2], workers=1).in_background
    pending = start_in_workers(abs, [1, 2], workers=2)
    assert pending.in_background == can_fork(2)
    assert list(pending.results()) == [1, 2]
