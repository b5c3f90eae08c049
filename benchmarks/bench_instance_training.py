"""Speed of the instance-batched trainer against training the same instances one at a time.

Run from the repository root:

    .venv/bin/python benchmarks/bench_instance_training.py            # ~2-4 minutes on 2 cores
    .venv/bin/python benchmarks/bench_instance_training.py --scale-check   # adds a 10,000-instance run

Both measurements happen in one run, on the same pair and settings, so the ratio is meaningful
even when other processes share the machine (absolute rates then are pessimistic). The
one-at-a-time baseline is the plain single-model trainer (`train_single`: autograd and
torch.optim.Adam, the reference of the tests) at whichever thread count is faster. A second
line splits the gain: the batched trainer handed one instance at a time shows how much comes
from batching alone and how much from the hand-written gradient.
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from lib.group_pairs import make_pair
from lib.grokking_sweeps import intersection_training_set, pair_evaluations
from lib.grokking_training import TrainingConfig, train_instances, train_single
from lib.instance_mlp import MLPConfig, init_instances


def peak_rss_gib() -> float:
    """Peak resident memory of this process so far, in GiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="S4_vs_A4xZ2")
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=200, help="epochs of the batched run")
    parser.add_argument("--single-instances", type=int, default=4)
    parser.add_argument("--single-epochs", type=int, default=200)
    parser.add_argument("--dim", type=int, default=32, help="d = h")
    parser.add_argument("--weight-decay", type=float, default=2e-5)
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--scale-check", action="store_true",
                        help="also time 10,000 instances for --scale-epochs and report memory")
    parser.add_argument("--scale-instances", type=int, default=10_000)
    parser.add_argument("--scale-epochs", type=int, default=100)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    pair = make_pair(args.pair)
    left, right, labels = intersection_training_set(pair)
    model = MLPConfig(pair.n_elements, args.dim, args.dim)
    evaluations = pair_evaluations(pair)
    config = TrainingConfig(epochs=args.epochs, weight_decay=args.weight_decay, log_every=args.log_every)
    print(f"pair {args.pair}: N={pair.n_elements}, {left.numel()} training pairs, d=h={args.dim}, "
          f"{model.n_parameters()} parameters per model, torch threads={args.threads}")

    # Batched: all instances at once.
    result = train_instances(init_instances(range(args.instances), model), left, right, labels,
                             evaluations, config)
    batched_rate = result.model_epochs_per_second()
    print(f"batched      : {args.instances} instances x {args.epochs} epochs in {result.elapsed_s:.1f} s "
          f"= {batched_rate:,.0f} model-epochs/s")

    # One at a time: the plain reference trainer, at 1 and at `threads` intra-op threads.
    single_config = TrainingConfig(epochs=args.single_epochs, weight_decay=args.weight_decay)
    baselines = {}
    for threads in sorted({1, args.threads}):
        torch.set_num_threads(threads)
        began = time.perf_counter()
        for seed in range(args.single_instances):
            train_single(seed, model, left, right, labels, single_config)
        elapsed = time.perf_counter() - began
        baselines[f"train_single, {threads} thread(s)"] = args.single_instances * args.single_epochs / elapsed
    torch.set_num_threads(args.threads)
    # The batched trainer handed one instance at a time (same logging as the batched run).
    began = time.perf_counter()
    one_config = TrainingConfig(epochs=args.single_epochs, weight_decay=args.weight_decay,
                                log_every=args.log_every)
    for seed in range(args.single_instances):
        train_instances(init_instances([seed], model), left, right, labels, evaluations, one_config)
    elapsed = time.perf_counter() - began
    baselines["train_instances, one instance per call"] = args.single_instances * args.single_epochs / elapsed
    for name, rate in baselines.items():
        print(f"one at a time: {name}: {rate:,.0f} model-epochs/s "
              f"({1e3 / rate:.2f} ms per model-epoch)")
    plain = max(rate for name, rate in baselines.items() if name.startswith("train_single"))
    kernel = baselines["train_instances, one instance per call"]
    print(f"speed-up at {args.instances} instances over training them one at a time "
          f"(plain single-model loop, faster thread count): {batched_rate / plain:.1f}x")
    print(f"  of which batching alone (same hand-written trainer, one instance per call): "
          f"{batched_rate / kernel:.1f}x")
    published = 10_000 * 2_000 / batched_rate
    print(f"extrapolated 10,000 instances x 2,000 epochs at this rate: {published / 60:.1f} min")
    print(f"peak memory so far: {peak_rss_gib():.2f} GiB")

    if args.scale_check:
        scale = TrainingConfig(epochs=args.scale_epochs, weight_decay=args.weight_decay,
                               log_every=args.log_every, checkpoint_epochs=(0, args.scale_epochs))
        result = train_instances(init_instances(range(args.scale_instances), model), left, right,
                                 labels, evaluations, scale)
        rate = result.model_epochs_per_second()
        print(f"scale check  : {args.scale_instances} instances x {args.scale_epochs} epochs in "
              f"{result.elapsed_s:.1f} s = {rate:,.0f} model-epochs/s; 2,000 epochs would take "
              f"{args.scale_instances * 2000 / rate / 60:.1f} min; peak memory {peak_rss_gib():.2f} GiB")


if __name__ == "__main__":
    main()
