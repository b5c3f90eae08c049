"""Speed of the batched SGLD estimator of the LLC against estimating the same instances one at a time.

Run from the repository root:

    .venv/bin/python benchmarks/bench_llc.py                 # about 4 minutes on 2 cores
    .venv/bin/python benchmarks/bench_llc.py --repeats 1 --instances 50 --steps 50   # a quick look

Usage:
    python benchmarks/bench_llc.py [--pair S4_vs_A4xZ2] [--instances 200] [--dim 32]
        [--chains 8] [--steps 200] [--single-instances 2] [--workers 1 2] [--repeats 3]
        [--train-epochs 200]

What is measured: the local learning coefficient of `--instances` chapter-4 MLPs (S4 vs A4xZ2
intersection, N = 24, 336 training pairs, d = h = 32) with the same SGLD settings everywhere
(the study's step 8e-4, n_beta 1e3, localization 1, 60% burn-in, full batch; chains and steps
from the flags), estimated

* batched: `lib.grokking.mlp_llc.mlp_llc_in_chunks`, all instances and chains as batches of at
  at most `MAX_SGLD_ACTIVATIONS` activations, on each worker count of `--workers` (single-threaded processes);
* one at a time by devinterp 1.3.2's `estimate_learning_coeff_with_summary`
  (`lib.grokking.devinterp_llc.devinterp_mlp_llc`), the field's estimator, chains one after
  another;
* one at a time by `mlp_single_llc`, our plain loop (autograd on one model's loss).

The one-at-a-time baselines are timed on the first `--single-instances` instances and scaled per
instance (an instance's SGLD work does not depend on the others: same steps, chains and data),
each on 1 and on 2 torch threads; the faster count is its reference. All contenders run in the
same process, in interleaved rounds, so that a slow spell of the busy machine hits all of them;
medians over the rounds are reported. The ratios are instances per wall-clock second, batched
over one-at-a-time; the CPU column (CPU seconds per instance, all processes) shows how much of
a ratio comes from doing less work and how much from using both cores. The last column is the
share of the machine's cores that other processes (and, on a virtual machine, other guests) took
while a contender ran, from /proc/stat (`benchmarks/timing.py`): the one-at-a-time baselines use
one core, so a busy second core slows only the two-worker contender, and a run with that column
well above zero does not measure the two-core ratio.

The instances are trained briefly first (`run_pair_sweep`, `--train-epochs` full-batch Adam
epochs, untimed), so that w* is near a minimum as at the checkpoints chapter 5 measures. A last
line checks that the three estimators give the same LLCs on the timed instances (within their
chains' standard errors). devinterp's `estimate_learning_coeff` is the same code path: it
returns `estimate_learning_coeff_with_summary(...)["llc/mean"]`.

Results measured so far, with their machines and dates, and where a step's time goes:
`benchmarks/RESULTS.md`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import torch

from lib.grokking.devinterp_llc import devinterp_mlp_llc
from lib.grokking.llc import SGLDConfig
from lib.grokking.mlp import MLPConfig, init_instances
from lib.grokking.mlp_llc import MAX_SGLD_ACTIVATIONS, mlp_llc_in_chunks, mlp_single_llc
from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import intersection_training_set, run_pair_sweep
from lib.grokking.training import SweepConfig
from timing import Timing, medians, timed

BASELINE_THREADS = (1, 2)


def per_instance(runs: list[Timing], instances: int) -> tuple[float, float, float]:
    """(instances per wall-clock second, CPU seconds per instance, share of the machine's cores
    that other processes and other guests took while it ran), medians over the rounds."""
    wall, cpu, others = medians(runs)
    return instances / wall, cpu / instances, others


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="S4_vs_A4xZ2")
    parser.add_argument("--instances", type=int, default=200, help="instances of the batched run")
    parser.add_argument("--dim", type=int, default=32, help="d = h")
    parser.add_argument("--train-epochs", type=int, default=200,
                        help="full-batch epochs of training before the estimates (0: initial weights)")
    parser.add_argument("--chains", type=int, default=8, help="SGLD chains per instance")
    parser.add_argument("--steps", type=int, default=200, help="SGLD steps per chain")
    parser.add_argument("--single-instances", type=int, default=2,
                        help="instances the one-at-a-time baselines are timed on (scaled per instance)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                        help="worker processes of the batched estimator, each its own contender")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds; medians are reported")
    args = parser.parse_args()

    pair = make_pair(args.pair)
    left, right, labels = intersection_training_set(pair)
    model = MLPConfig(pair.n_elements, args.dim, args.dim)
    seeds = list(range(args.instances))
    torch.set_num_threads(1)
    if args.train_epochs:
        training = SweepConfig(epochs=args.train_epochs, log_every=args.train_epochs)
        sweep = run_pair_sweep(pair, seeds, model, training, progress=False)
        params = sweep.final_params
        start = f"trained {args.train_epochs} epochs (median train loss {float(sweep.final('train_loss').median()):.2e})"
    else:
        params, start = init_instances(seeds, model), "at their initial weights"
    sgld = SGLDConfig(steps=args.steps, chains=args.chains)
    singles = min(args.single_instances, args.instances)
    one = [{k: v[i] for k, v in params.items()} for i in range(singles)]
    print(f"pair {args.pair}: N={pair.n_elements}, {left.numel()} training pairs, d=h={args.dim}, "
          f"{model.n_parameters()} parameters per model; {args.instances} instances {start}")
    print(f"SGLD: {sgld.chains} chains x {sgld.steps} steps (burn-in {sgld.burn_in_steps}), step "
          f"{sgld.step_size:g}, n_beta {sgld.n_beta:g}, localization {sgld.localization:g}, full batch; "
          f"batches of at most {MAX_SGLD_ACTIVATIONS} activations; {os.cpu_count()} CPUs; medians of "
          f"{args.repeats} interleaved rounds")

    contenders = {f"batched, {w} worker{'s' if w > 1 else ''}": (
        lambda seed, w=w: mlp_llc_in_chunks(params, left, right, labels, sgld,
                                            torch.Generator().manual_seed(seed), workers=w).per_chain,
        args.instances, 1) for w in args.workers}
    for threads in BASELINE_THREADS:
        contenders[f"devinterp, one at a time, {threads} thread(s)"] = (
            lambda seed: torch.stack([devinterp_mlp_llc(p, left, right, labels, sgld, seed) for p in one]),
            singles, threads)
        contenders[f"mlp_single_llc, one at a time, {threads} thread(s)"] = (
            lambda seed: torch.cat([mlp_single_llc(p, left, right, labels, sgld,
                                                   torch.Generator().manual_seed(seed)).per_chain for p in one]),
            singles, threads)

    # Warm up every code path (first calls pay for lazy initialisation).
    warm = SGLDConfig(steps=3, chains=2)
    mlp_llc_in_chunks({k: v[:2] for k, v in params.items()}, left, right, labels, warm, torch.Generator())
    devinterp_mlp_llc(one[0], left, right, labels, warm, 0)
    mlp_single_llc(one[0], left, right, labels, warm, torch.Generator())

    runs = {name: [] for name in contenders}
    per_chain = {}
    for round_ in range(args.repeats):
        print(f"round {round_ + 1} of {args.repeats} ...", file=sys.stderr, flush=True)
        for name, (run, _, threads) in contenders.items():
            torch.set_num_threads(threads)
            timing, result = timed(lambda: run(round_))
            runs[name].append(timing)
            per_chain[name] = result[:singles]

    rates = {name: per_instance(runs[name], contenders[name][1]) for name in contenders}
    print(f"\n{'contender':44s} {'instances/s':>12s} {'CPU-s each':>11s} {'taken by others':>16s}")
    for name, (rate, cpu, others) in rates.items():
        print(f"{name:44s} {rate:12.3f} {cpu:11.3f} {others:15.1%}")
    for baseline in ("devinterp", "mlp_single_llc"):
        best = max((name for name in rates if name.startswith(baseline)), key=lambda name: rates[name][0])
        print(f"\nagainst {baseline} at its faster thread count ({best.rsplit(', ', 1)[1]}):")
        for name in rates:
            if name.startswith("batched"):
                print(f"  {name}: {rates[name][0] / rates[best][0]:5.1f}x wall-clock, "
                      f"{rates[best][1] / rates[name][1]:5.1f}x less CPU")

    means = {name: values.mean(dim=1) for name, values in per_chain.items()}
    sems = {name: values.std(dim=1) / math.sqrt(sgld.chains) for name, values in per_chain.items()}
    reference = next(name for name in per_chain if name.startswith("batched"))
    print(f"\nsame estimates (last round, first {singles} instances):")
    for name in per_chain:
        gaps = (means[name] - means[reference]) / torch.sqrt(sems[name] ** 2 + sems[reference] ** 2)
        print(f"  {name:44s} LLC {', '.join(f'{float(v):7.1f}' for v in means[name])}   vs "
              f"{reference}: {', '.join(f'{float(g):+.1f}' for g in gaps)} combined se")


if __name__ == "__main__":
    main()
