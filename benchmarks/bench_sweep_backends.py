"""Overhead of the Ray sweep backend against the local one, and what a cluster would take.

Run from the repository root:

    .venv/bin/python benchmarks/bench_sweep_backends.py                 # S4 pair, 1,000 x 2,000: ~2.5 minutes on 2 cores
    .venv/bin/python benchmarks/bench_sweep_backends.py --epochs 200    # a quick look

Both backends train the same sweep of the S4 pair (chapter 4's model and schedule) in one run,
alternating, on this machine's cores: "local" with one worker process per core, "ray" with a Ray
started here with as many CPUs, one single-threaded task per shard. The overhead is the ratio of
the medians; the merged results are compared exactly. Ray's start-up is timed apart (it happens
once per notebook, not per sweep).

From the measured per-worker throughput (model-epochs per second on one core) the script prints
the wall time of the published-scale training of chapters 4-6 on 1, 8 and 64 workers. That table
is extrapolated: it assumes the throughput of a core measured here and shards that keep every
worker busy; it says nothing about GPUs, where a shard's throughput must be measured on the GPU.

Measured on a 2-core AMD EPYC machine (2026-11-25): local 62.2 s, Ray 63.3 s (+1.7%), Ray's
start-up 5.7 s, merged results identical; 16,070 model-epochs per second per core.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import make_pair
from lib.grokking.sweep_runner import SweepBackend, backend_in_use
from lib.grokking.sweeps import run_pair_sweep
from lib.grokking.training import SweepConfig

#: Published-scale training of chapters 4-6 in model-epochs (instances x epochs) of the S4 model
#: (d = h = 32): chapter 4's two S4 sweeps (10,000 seeds each, 2,000 epochs); chapter 6's
#: perturbed copies (10 seeds per outcome x 3 outcomes x 20 checkpoints x 7 scales x 10 copies,
#: continued for 1,000 epochs on average), total-variation retrains (1,000 per outcome x 3,000
#: epochs) and transplants (1,000 per direction x 2 x 3,500 epochs).
PUBLISHED_MODEL_EPOCHS = {
    "chapter 4: S4 sweeps at two weight decays": 2 * 10_000 * 2_000,
    "chapter 6: perturbed copies": 10 * 3 * 20 * 7 * 10 * 1_000,
    "chapter 6: total-variation retrains": 3 * 1_000 * 3_000,
    "chapter 6: transplants": 2 * 1_000 * 3_500,
}


def sweep(instances: int, epochs: int, workers: int):
    config = SweepConfig(epochs=epochs, log_every=10, workers=workers)
    return run_pair_sweep(make_pair("S4_vs_A4xZ2"), list(range(instances)), MLPConfig(24, 32, 32), config,
                          progress=False)


def same(a, b) -> bool:
    return all(torch.equal(a.metrics[k], b.metrics[k]) for k in a.metrics) and \
        all(torch.equal(a.final_params[k], b.final_params[k]) for k in a.final_params)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2, help="local worker processes = Ray CPUs")
    parser.add_argument("--repeats", type=int, default=1, help="alternating rounds; medians are reported")
    args = parser.parse_args()

    import ray

    began = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    startup = time.perf_counter() - began
    times: dict[str, list[float]] = {"local": [], "ray": []}
    results = {}
    for _ in range(args.repeats):
        for name in ("local", "ray"):
            with backend_in_use(SweepBackend(name)):
                began = time.perf_counter()
                results[name] = sweep(args.instances, args.epochs, args.workers)
                times[name].append(time.perf_counter() - began)
    ray.shutdown()

    local, on_ray = statistics.median(times["local"]), statistics.median(times["ray"])
    per_worker = args.instances * args.epochs / local / args.workers
    print(f"S4 pair, {args.instances:,} instances x {args.epochs:,} epochs, {args.workers} workers, "
          f"{args.repeats} round(s)")
    print(f"local: {local:.1f} s   ray: {on_ray:.1f} s   overhead of ray: {on_ray / local - 1:+.1%}   "
          f"(ray start-up, once per notebook: {startup:.1f} s)")
    print(f"merged results identical: {same(results['local'], results['ray'])}")
    print(f"measured throughput: {per_worker:,.0f} model-epochs per second per worker (one core)")
    total = sum(PUBLISHED_MODEL_EPOCHS.values())
    print("\nExtrapolated wall time of the published-scale training of chapters 4-6 "
          f"({total / 1e9:.2f} billion model-epochs; the LLC chains of chapter 5 are not included):")
    print("| workers (cores like this one) | wall time |")
    print("|---|---|")
    for count in (1, 8, 64):
        print(f"| {count} | {total / (per_worker * count) / 60:,.1f} min |")
    for name, work in PUBLISHED_MODEL_EPOCHS.items():
        print(f"  {name}: {work / 1e9:.3f} billion model-epochs")


if __name__ == "__main__":
    main()
