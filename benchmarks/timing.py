"""Timing of the benchmarks' contenders: wall clock, their own CPU, and what others took meanwhile.

A ratio measured in one run is robust to a machine that is uniformly slower, not to one where
another process holds one core: a one-at-a-time baseline on one core does not feel it, a
contender with a worker per core does. So each timing also records the CPU seconds that other
processes of this machine used, and that the hypervisor gave to other guests, while it ran.
Used by bench_llc.py and bench_instance_training.py (run from the repository root, which puts
this folder on the import path).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass


def cpu_seconds() -> float:
    """CPU time of this process and of its finished child processes (all threads)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, stolen) CPU seconds of the whole machine since boot, all cores, from /proc/stat
    (Linux; zeros elsewhere). Stolen time is what the hypervisor gave to other guests while this
    virtual machine wanted to run."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:9]]
    except OSError:
        return 0.0, 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


@dataclass
class Timing:
    """One timed run: wall seconds, its own CPU seconds (with its worker processes), and the CPU
    seconds that other processes of this machine used and that the hypervisor stole meanwhile."""

    wall: float
    cpu: float
    others: float
    stolen: float

    def others_share(self) -> float:
        """Share of the machine's cores that others took while it ran."""
        return (self.others + self.stolen) / (self.wall * (os.cpu_count() or 1))


def timed(run) -> tuple[Timing, object]:
    """The `Timing` of run(), and its result."""
    wall, cpu, (busy, stolen) = time.perf_counter(), cpu_seconds(), machine_cpu_seconds()
    result = run()
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    busy_after, stolen_after = machine_cpu_seconds()
    return Timing(wall, cpu, max(0.0, busy_after - busy - cpu), stolen_after - stolen), result


def medians(runs: list[Timing]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, share of the cores others took), medians over the runs."""
    return (statistics.median(run.wall for run in runs), statistics.median(run.cpu for run in runs),
            statistics.median(run.others_share() for run in runs))
