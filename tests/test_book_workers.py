"""Runs in forked single-threaded workers (lib.book.workers): the same results, in order, as the
same runs done here on one thread, whether waited for (map_in_workers) or started in the
background (start_in_workers) while this process goes on, and helped by this process once it reads
them; a worker's failure comes back as an error here."""

import multiprocessing
import os
import time

import pytest
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


def test_this_process_helps_with_the_items_no_worker_started():
    started = multiprocessing.get_context("fork").Value("i", 0) if can_fork(2) else None

    def noisy_sum_once_both_run(seed: int) -> tuple[int, float, int, int]:
        # An item waits (a minute at most) until both processes have begun one, so both run
        # items however slowly the worker starts.
        if started is not None:
            with started.get_lock():
                started.value += 1
            deadline = time.monotonic() + 60
            while started.value < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        return (*_noisy_sum(seed), os.getpid())

    pending = start_in_workers(noisy_sum_once_both_run, range(6), workers=1, this_process_helps=True)
    assert pending.in_background == can_fork(2)
    threads = torch.get_num_threads()
    results = list(pending.results())
    assert torch.get_num_threads() == threads                 # restored after the items run here
    assert [r[:2] for r in results] == [r[:2] for r in map(_noisy_sum, range(6))]
    assert all(r[2] == 1 for r in results)                    # one thread, here as in the worker
    if can_fork(2):
        assert {r[3] for r in results} >= {os.getpid()} and len({r[3] for r in results}) == 2


def test_one_item_with_this_process_helping_runs_here():
    pending = start_in_workers(abs, [-4], workers=3, this_process_helps=True)
    assert not pending.in_background and list(pending.results()) == [4]


def _fails_on_two(item: int) -> int:
    if item == 2:
        raise ValueError("two is refused")
    return item


@pytest.mark.skipif(not can_fork(2), reason="needs fork")
def test_a_failure_in_a_worker_is_raised_here_with_its_traceback():
    with pytest.raises(RuntimeError, match=r"item 2 failed in a worker process(.|\n)*two is refused"):
        list(map_in_workers(_fails_on_two, range(4), workers=2))


@pytest.mark.skipif(not can_fork(2), reason="needs fork")
def test_a_result_that_does_not_pickle_is_reported():
    with pytest.raises(RuntimeError, match="failed in a worker process"):
        list(map_in_workers(lambda item: (lambda: item), range(2), workers=2))


def test_no_fork_on_a_machine_with_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert not can_fork(2)
    pending = start_in_workers(abs, [-1, 2], workers=2)
    assert not pending.in_background and list(pending.results()) == [1, 2]
