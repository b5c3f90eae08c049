"""Speed of the batched SGLD estimator of the LLC against estimating the same instances one at a time.

Run from the repository root:

    .venv/bin/python benchmarks/bench_llc.py                     # 1 torch thread, ~10 minutes on 2 busy cores
    .venv/bin/python benchmarks/bench_llc.py --threads 1 2 --chunks 0 25

Usage:
    python benchmarks/bench_llc.py [--pair S4_vs_A4xZ2] [--instances 200] [--dim 32]
        [--chains 8] [--steps 200] [--single-instances 5] [--threads 1 [2]] [--chunks 0 [25]]
        [--repeats 3] [--train-epochs 200]

What is measured: the local learning coefficient of `--instances` chapter-4 MLPs (S4 vs
A4xZ2 intersection, N = 24, d = h = 32) by `lib.grokking.llc.mlp_llc`, all instances and
chains moved as one batch per call, against `mlp_single_llc`, the plain loop that runs one
model's chains one after another (autograd on the model's own loss), with the same SGLD
settings (the study's step 8e-4, n_beta 1e3, localization 1, 60% burn-in, full batch; chains
and steps from the flags). The one-at-a-time baseline is timed on the first `--single-instances`
instances and scaled per instance (an instance's SGLD work does not depend on the others: same
steps, same chains, same data). Both are timed in the same run, in interleaved rounds, on the
same torch thread count (each count given to `--threads` is its own comparison); medians over
the rounds are reported, so that a busy machine slows both alike (absolute rates then are
pessimistic). `--chunks` adds batched variants that call `mlp_llc` on `--chunks` instances at
a time (0: all instances in one call; `lib.grokking.llc.mlp_llc_in_chunks` makes calls of at
most 256 models): smaller calls keep the activations, (chains x chunk, pairs, h) floats, nearer the
cache.

The instances are trained briefly first (`run_pair_sweep`, `--train-epochs` full-batch Adam
epochs, untimed), so that w* is near a minimum as at the checkpoints chapter 5 measures and the
chains sample around it instead of drifting downhill from an initialisation. The cost of a
step does not depend on the weights (dense kernels), so this is for realism, not for speed; a
last line checks that both estimators give the same LLCs on the timed subset.

Measured on 2 busy cores (`--threads 1 2 --chunks 0 25`, defaults otherwise): on 1 thread the
batched estimator was 1.9x faster in one call and 4.3x in calls of 25 instances, far short of
the 20x the book aims for; on 2 threads the tiny kernels of both mostly wait for each other's threads (the
baseline took 2.4 times the CPU of its 1-thread run), so 1 thread is the like-for-like count.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import torch

from lib.grokking.llc import LLCEstimate, SGLDConfig, mlp_llc, mlp_single_llc
from lib.grokking.mlp import MLPConfig, init_instances
from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import intersection_training_set, run_pair_sweep
from lib.grokking.training import SweepConfig


def cpu_seconds() -> float:
    """CPU time of this process (all its threads)."""
    times = os.times()
    return times.user + times.system


def timed(run) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds, result) of run()."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    result = run()
    return time.perf_counter() - wall, cpu_seconds() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="S4_vs_A4xZ2")
    parser.add_argument("--instances", type=int, default=200, help="instances of the batched run")
    parser.add_argument("--dim", type=int, default=32, help="d = h")
    parser.add_argument("--train-epochs", type=int, default=200,
                        help="full-batch epochs of training before the estimates (0: initial weights)")
    parser.add_argument("--chains", type=int, default=8, help="SGLD chains per instance")
    parser.add_argument("--steps", type=int, default=200, help="SGLD steps per chain")
    parser.add_argument("--step-size", type=float, default=8e-4)
    parser.add_argument("--n-beta", type=float, default=1e3)
    parser.add_argument("--localization", type=float, default=1.0)
    parser.add_argument("--burn-in", type=float, default=0.6)
    parser.add_argument("--single-instances", type=int, default=5,
                        help="instances the one-at-a-time baseline is timed on (scaled per instance)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1],
                        help="torch thread counts, each compared like with like (e.g. 1 2)")
    parser.add_argument("--chunks", type=int, nargs="+", default=[0],
                        help="instances per mlp_llc call of each batched variant (0: all in one call)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds; medians are reported")
    args = parser.parse_args()

    pair = make_pair(args.pair)
    left, right, labels = intersection_training_set(pair)
    model = MLPConfig(pair.n_elements, args.dim, args.dim)
    torch.set_num_threads(max(args.threads))
    seeds = list(range(args.instances))
    if args.train_epochs:
        training = SweepConfig(epochs=args.train_epochs, log_every=args.train_epochs)
        sweep = run_pair_sweep(pair, seeds, model, training, progress=False)
        params = sweep.final_params
        loss = float(sweep.final("train_loss").median())
        start = f"trained {args.train_epochs} epochs (median train loss {loss:.2e})"
    else:
        params, start = init_instances(seeds, model), "at their initial weights"
    sgld = SGLDConfig(step_size=args.step_size, n_beta=args.n_beta, localization=args.localization,
                      steps=args.steps, chains=args.chains, burn_in=args.burn_in)
    singles = min(args.single_instances, args.instances)
    print(f"pair {args.pair}: N={pair.n_elements}, {left.numel()} training pairs, d=h={args.dim}, "
          f"{model.n_parameters()} parameters per model; {args.instances} instances {start}")
    print(f"SGLD: {sgld.chains} chains x {sgld.steps} steps (burn-in {sgld.burn_in_steps}), step "
          f"{sgld.step_size:g}, n_beta {sgld.n_beta:g}, localization {sgld.localization:g}, full batch; "
          f"medians of {args.repeats} interleaved rounds")

    def batched(chunk: int, seed: int) -> LLCEstimate | None:
        size = chunk or args.instances
        generator = torch.Generator().manual_seed(seed)
        parts = [mlp_llc({k: v[start:start + size] for k, v in params.items()}, left, right, labels,
                         sgld, generator) for start in range(0, args.instances, size)]
        return parts[0] if len(parts) == 1 else None

    def one_at_a_time(seed: int) -> list[LLCEstimate]:
        generator = torch.Generator().manual_seed(seed)
        return [mlp_single_llc({k: v[i] for k, v in params.items()}, left, right, labels, sgld, generator)
                for i in range(singles)]

    # Warm up both code paths (first calls pay for lazy initialisation).
    warm = SGLDConfig(steps=3, chains=2)
    mlp_llc({k: v[:2] for k, v in params.items()}, left, right, labels, warm, torch.Generator())
    mlp_single_llc({k: v[0] for k, v in params.items()}, left, right, labels, warm, torch.Generator())

    batched_runs = {(t, c): [] for t in args.threads for c in args.chunks}
    single_runs = {t: [] for t in args.threads}
    estimates: dict[str, LLCEstimate | list[LLCEstimate]] = {}
    # Interleaved rounds, so that a slow spell of the machine hits every contender alike.
    for round_ in range(args.repeats):
        print(f"round {round_ + 1} of {args.repeats} ...", file=sys.stderr, flush=True)
        for threads in args.threads:
            torch.set_num_threads(threads)
            for chunk in args.chunks:
                wall, cpu, result = timed(lambda: batched(chunk, round_))
                batched_runs[threads, chunk].append((wall, cpu))
                if result is not None:
                    estimates["batched"] = result
            wall, cpu, result = timed(lambda: one_at_a_time(round_))
            single_runs[threads].append((wall, cpu))
            estimates["single"] = result

    def rate(runs: list[tuple[float, float]], instances: int) -> tuple[float, float]:
        """(instances per wall-clock second, CPU seconds per instance), medians over the rounds."""
        return (instances / statistics.median(w for w, _ in runs),
                statistics.median(c for _, c in runs) / instances)

    for threads in args.threads:
        single_rate, single_cpu = rate(single_runs[threads], singles)
        print(f"\ntorch threads = {threads}")
        print(f"  one at a time (mlp_single_llc, timed on {singles} instances, per instance): "
              f"{single_rate:8.3f} instances/s, {single_cpu:7.2f} CPU-s each")
        for chunk in args.chunks:
            fast_rate, fast_cpu = rate(batched_runs[threads, chunk], args.instances)
            calls = "one call" if chunk in (0, args.instances) else f"calls of {chunk} instances"
            print(f"  batched (mlp_llc, {args.instances} instances, {calls}): "
                  f"{fast_rate:8.3f} instances/s, {fast_cpu:7.2f} CPU-s each   "
                  f"ratio {fast_rate / single_rate:5.1f}x wall-clock, {single_cpu / fast_cpu:5.1f}x CPU")

    if len(args.threads) > 1:
        best = max(args.threads, key=lambda t: rate(single_runs[t], singles)[0])
        best_rate = rate(single_runs[best], singles)[0]
        print(f"\nagainst the one-at-a-time baseline at its faster thread count ({best}):")
        for threads in args.threads:
            for chunk in args.chunks:
                fast_rate = rate(batched_runs[threads, chunk], args.instances)[0]
                calls = "one call" if chunk in (0, args.instances) else f"calls of {chunk}"
                print(f"  batched on {threads} thread(s), {calls}: {fast_rate / best_rate:5.1f}x wall-clock")

    if "batched" in estimates:
        fast, slow = estimates["batched"], estimates["single"]
        gaps = [(float(fast.mean[i]) - float(s.mean[0])) / math.hypot(float(fast.sem[i]), float(s.sem[0]))
                for i, s in enumerate(slow)]
        print(f"\nsame estimates (last round, first {singles} instances): batched "
              f"{', '.join(f'{float(v):.1f}' for v in fast.mean[:singles])}; one at a time "
              f"{', '.join(f'{float(s.mean[0]):.1f}' for s in slow)}; differences in combined "
              f"standard errors {', '.join(f'{g:+.1f}' for g in gaps)}")


if __name__ == "__main__":
    main()
