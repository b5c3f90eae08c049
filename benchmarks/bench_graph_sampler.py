"""How much faster is the vectorized edge-token sampler than a per-graph Python generator?

Both generators draw the same distribution (`lib.graphs.sample_batch` and
`lib.reference_graphs.reference_sample_batch`). They are timed in one process, alternating, so
that load from other programs on the machine affects both alike; the reference is timed on
fewer graphs because it is slow. Prints graphs per second (kept examples, after the rejection
filter) for both, and their ratio.

Usage:
    python benchmarks/bench_graph_sampler.py [--task pretrain] [--n-max 15] [--batch 32768]
        [--reference-graphs 3000] [--repeats 3] [--device cpu]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch

from lib.graphs import sample_batch
from lib.reference_graphs import reference_sample_batch


def graphs_per_second(draw, count: int) -> float:
    """Throughput of one call `draw(count)` in graphs per second of wall-clock time."""
    start = time.perf_counter()
    draw(count)
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="pretrain", choices=["pretrain", "onpath", "any"])
    parser.add_argument("--n-min", type=int, default=3)
    parser.add_argument("--n-max", type=int, default=15)
    parser.add_argument("--batch", type=int, default=2**15, help="graphs per vectorized call")
    parser.add_argument("--reference-graphs", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    generator = torch.Generator(device=args.device).manual_seed(0)
    rng = random.Random(0)
    vectorized = lambda count: sample_batch(count, args.task, args.n_min, args.n_max, generator)  # noqa: E731
    reference = lambda count: reference_sample_batch(count, args.task, args.n_min, args.n_max, rng)  # noqa: E731
    vectorized(1024)  # warm-up: first-call allocations
    fast, slow = [], []
    for _ in range(args.repeats):
        slow.append(graphs_per_second(reference, args.reference_graphs))
        fast.append(graphs_per_second(vectorized, args.batch))
    fast_rate, slow_rate = statistics.median(fast), statistics.median(slow)
    print(f"task={args.task} n in [{args.n_min}, {args.n_max}] device={args.device} "
          f"torch threads={torch.get_num_threads()} (sampler uses 1 on CPU)")
    print(f"reference (per-graph Python, deque BFS): {slow_rate:12,.0f} graphs/s")
    print(f"vectorized (lib.graphs.sample_batch):    {fast_rate:12,.0f} graphs/s")
    print(f"ratio: {fast_rate / slow_rate:.1f}x (median of {args.repeats} alternating runs)")


if __name__ == "__main__":
    main()
