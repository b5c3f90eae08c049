"""How much faster is the vectorized edge-token sampler than a per-graph Python generator?

Both generators draw the same distribution (`lib.paths.sampler.sample_batch` and
`lib.paths.reference_sampler.reference_sample_batch`). Three rates are measured in one run,
interleaved, so that load from other programs on the machine affects them alike:

- reference: the per-graph Python generator, one core (the reference is timed on fewer graphs
  because it is slow);
- vectorized, one process: `sample_batch` in this process, on one thread, timed over
  consecutive batches after one untimed batch: on the virtual machines measured here the first
  call after 0.3 s of anything else (the reference, or even sleeping) ran at half speed, and a
  sampler at work draws batches back to back;
- vectorized, W workers: `lib.paths.stream.graph_batch_loader` with W worker processes (default
  2, one per core of the 2-core machines the book targets), timed in steady state: each round
  starts once every worker has its prefetched batches ready and is idle (so that nothing runs
  beside the reference while it is timed), the ready batches are taken untimed, and the next
  batches are timed as they are produced.

(An earlier version asked glibc to keep freed memory in the sampler's processes. It was worth
2-3% in the DataLoader workers and about 20% in one process, which no chapter runs, so the book
does without it.)

Prints graphs per second (kept examples, after the rejection filter) for each, and the ratios
to the reference. The per-core ratio compares like with like; the W-worker ratio is what
the machine delivers, since the per-graph generator is plain Python and uses one core.

Usage:
    python benchmarks/bench_graph_sampler.py [--task pretrain] [--n-max 15] [--batch 32768]
        [--reference-graphs 3000] [--repeats 5] [--workers 2] [--worker-batches 12]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch

from lib.paths.reference_sampler import reference_sample_batch
from lib.paths.sampler import sample_batch
from lib.paths.stream import GraphBatchStream, graph_batch_loader

#: Seconds to wait before timing the reference, long enough for the workers to fill their queues.
SETTLE_SECONDS = 1.0
#: Batches each worker holds ready (`graph_batch_loader`'s default).
PREFETCH = 4


def graphs_per_second(draw, count: int, calls: int = 1) -> float:
    """Throughput of `calls` consecutive calls `draw(count)`, in graphs per second of wall-clock time."""
    start = time.perf_counter()
    for _ in range(calls):
        draw(count)
    return calls * count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="pretrain", choices=["pretrain", "onpath", "any"])
    parser.add_argument("--n-min", type=int, default=3)
    parser.add_argument("--n-max", type=int, default=15)
    parser.add_argument("--batch", type=int, default=2**15, help="graphs per vectorized call")
    parser.add_argument("--reference-graphs", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2, help="worker processes (0: skip)")
    parser.add_argument("--worker-batches", type=int, default=12,
                        help="timed batches per round, in this process and from the workers")
    args = parser.parse_args()

    torch.set_num_threads(1)
    batches = None
    if args.workers:
        # Started first, while this process's heap is small: memory that exists when the workers
        # are forked is shared copy-on-write with them, and reusing it here would fault.
        stream = GraphBatchStream(args.batch, args.task, args.n_min, args.n_max, seed=1)
        batches = iter(graph_batch_loader(stream, workers=args.workers, prefetch=PREFETCH))
        next(batches)
    generator = torch.Generator().manual_seed(0)
    rng = random.Random(0)
    vectorized = lambda count: sample_batch(count, args.task, args.n_min, args.n_max, generator)  # noqa: E731
    reference = lambda count: reference_sample_batch(count, args.task, args.n_min, args.n_max, rng)  # noqa: E731
    vectorized(1024)  # warm-up: first-call allocations
    slow, fast, parallel = [], [], []
    for _ in range(args.repeats):
        if batches is not None:
            time.sleep(SETTLE_SECONDS)
        slow.append(graphs_per_second(reference, args.reference_graphs))
        vectorized(args.batch)  # not timed, like the workers' ready batches (see the docstring)
        fast.append(graphs_per_second(vectorized, args.batch, args.worker_batches))
        if batches is not None:
            for _ in range(PREFETCH * args.workers):  # ready before the round started: not timed
                next(batches)
            start = time.perf_counter()
            for _ in range(args.worker_batches):
                next(batches)
            parallel.append(args.worker_batches * args.batch / (time.perf_counter() - start))
    slow_rate, fast_rate = statistics.median(slow), statistics.median(fast)
    print(f"task={args.task} n in [{args.n_min}, {args.n_max}] batch={args.batch:,} "
          f"(median of {args.repeats} interleaved rounds)")
    print(f"reference (per-graph Python, deque BFS), 1 core: {slow_rate:12,.0f} graphs/s")
    print(f"vectorized, 1 process (1 thread):              {fast_rate:12,.0f} graphs/s  "
          f"ratio {fast_rate / slow_rate:6.1f}x")
    if parallel:
        parallel_rate = statistics.median(parallel)
        print(f"vectorized, {args.workers} worker processes:               {parallel_rate:12,.0f} graphs/s  "
              f"ratio {parallel_rate / slow_rate:6.1f}x")


if __name__ == "__main__":
    main()
