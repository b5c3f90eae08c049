"""Runs in forked single-threaded workers (lib.book.workers): the same results, in order, as the
same runs done here on one thread, whether waited for (map_in_workers) or started in the
background (start_in_workers) while this process goes on."""

import os

import torch

from lib.book.workers import can_fork, map_in_workers, start_in_workers


def _noisy_sum(seed: int) -> tuple[int, float, int]:
    generator = torch.Generator().manual_seed(seed)
    return seed, float(torch.randn(1000, generator=generator).sum()), torch.get_num_threads()


def test_workers_return_in_order_what_one_thread_here_returns():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        here = list(map(_noisy_sum, range(5)))
    finally:
        torch.set_num_threads(threads)
    forked = list(map_in_workers(_noisy_sum, range(5), workers=2))
    assert [r[:2] for r in forked] == [r[:2] for r in here]
    if can_fork(2):
        assert all(r[2] == 1 for r in forked)          # each worker runs on one thread


def test_one_worker_or_a_gpu_runs_here():
    assert not can_fork(1) and not can_fork(2, "cuda")
    assert list(map_in_workers(abs, [-2, 3], workers=1)) == [2, 3]


def test_a_closure_over_unpicklable_state_runs_in_the_workers():
    offset = torch.nn.Linear(1, 1)        # reached through the closure, inherited by the forks
    results = list(map_in_workers(lambda x: x + 1 + 0 * float(offset.weight.sum()), [1, 2, 3], workers=2))
    assert results == [2.0, 3.0, 4.0]


def _pid(item: int) -> tuple[int, int]:
    return item, os.getpid()


def test_started_workers_give_in_order_what_map_in_workers_gives():
    pending = start_in_workers(_noisy_sum, range(5), workers=2)
    assert pending.in_background == can_fork(2)
    torch.randn(1000).sum()                              # this process goes on meanwhile
    started = list(pending.results())
    assert [r[:2] for r in started] == [r[:2] for r in map_in_workers(_noisy_sum, range(5), workers=2)]
    if can_fork(2):
        assert all(r[2] == 1 for r in started)           # each worker runs on one thread
        pids = {pid for _, pid in start_in_workers(_pid, range(4), workers=2).results()}
        assert os.getpid() not in pids


def test_without_workers_nothing_runs_before_the_results_are_read():
    called = []
    pending = start_in_workers(lambda x: called.append(x) or -x, [1, 2], workers=1)
    assert not pending.in_background and called == []
    assert list(pending.results()) == [-1, -2] and called == [1, 2]
