"""Speed of the instance-batched trainer against training the same instances one at a time.

Run from the repository root:

    .venv/bin/python benchmarks/bench_instance_training.py            # ~1 minute on 2 cores
    .venv/bin/python benchmarks/bench_instance_training.py --scale-check   # adds a 10,000-instance run

Both measurements happen in one run, on the same pair and settings, so the ratio holds when the
whole machine slows down (absolute rates then are pessimistic); each line also says what share
of the cores other processes took meanwhile (`benchmarks/timing.py`), since a busy second core
slows only the batched trainer's two workers, not the one-thread baseline. The
one-at-a-time baseline is the plain single-model trainer (`train_single`: autograd and
torch.optim.Adam, the reference of the tests) at whichever thread count is faster, with each
model scored on all pairs at the start and the end, the work a sweep's result holds for every
instance (with the default `--log-every 0`). A second
line splits the gain: the batched trainer handed one instance at a time shows how much comes
from batching alone and how much from the hand-written gradient.
"""

from __future__ import annotations

import argparse
import resource

import torch

from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import intersection_training_set, pair_evaluations
from lib.grokking.reference_training import train_single
from lib.grokking.training import SweepConfig, evaluate_instances, train_instances
from lib.grokking.mlp import MLPConfig, init_instances, init_single
from timing import Timing, medians, timed


def peak_rss_gib() -> float:
    """Peak resident memory of this process or of its largest worker so far, in GiB (Linux: KiB)."""
    usage = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return max(u.ru_maxrss for u in usage) / 2 ** 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="S4_vs_A4xZ2")
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=200, help="epochs of the batched run")
    parser.add_argument("--single-instances", type=int, default=4)
    parser.add_argument("--single-epochs", type=int, default=200)
    parser.add_argument("--dim", type=int, default=32, help="d = h")
    parser.add_argument("--weight-decay", type=float, default=2e-5)
    parser.add_argument("--log-every", type=int, default=0,
                        help="epochs between evaluations on all pairs in the timed runs; 0 (default) "
                             "evaluates only at the start and the end, like the plain baseline")
    parser.add_argument("--sweep-log-every", type=int, default=20,
                        help="evaluation interval of the scale check (as in a real sweep)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads = sweep worker processes")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds; medians are reported")
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
    config = SweepConfig(epochs=args.epochs, weight_decay=args.weight_decay,
                            log_every=args.log_every or args.epochs)
    print(f"pair {args.pair}: N={pair.n_elements}, {left.numel()} training pairs, d=h={args.dim}, "
          f"{model.n_parameters()} parameters per model, torch threads={args.threads}")

    def report(name: str, model_epochs: int, runs: list[Timing]) -> tuple[float, float]:
        """Print and return (model-epochs per wall second, per CPU second), medians over runs."""
        wall, cpu, others = medians(runs)
        print(f"{name}: {model_epochs / wall:,.0f} model-epochs/s wall-clock "
              f"({1e3 * wall / model_epochs:.3f} ms each), {1e3 * cpu / model_epochs:.3f} CPU-ms each; "
              f"others took {others:.1%} of the cores meanwhile")
        return model_epochs / wall, model_epochs / cpu

    # Warm up both code paths (first calls pay for lazy initialisation).
    warm = SweepConfig(epochs=3, weight_decay=args.weight_decay, log_every=1)
    train_single(0, model, left, right, labels, warm)
    train_instances(init_instances([0, 1], model), left, right, labels, evaluations, warm)

    single_config = SweepConfig(epochs=args.single_epochs, weight_decay=args.weight_decay)
    one_config = SweepConfig(epochs=args.single_epochs, weight_decay=args.weight_decay,
                                log_every=args.log_every or args.single_epochs)
    single_epochs = args.single_instances * args.single_epochs
    def plain_one_at_a_time(seed: int) -> None:
        """The plain trainer, scored at the start and the end as `train_instances` scores a sweep."""
        one = lambda params: {k: v.unsqueeze(0) for k, v in params.items()}  # noqa: E731
        evaluate_instances(one(init_single(seed, model)), evaluations, left, right, labels)
        final, _, _ = train_single(seed, model, left, right, labels, single_config)
        evaluate_instances(one(final), evaluations, left, right, labels)

    thread_counts = sorted({1, args.threads})
    batched_runs, kernel_runs = [], []
    plain_runs = {threads: [] for threads in thread_counts}
    # Interleaved rounds, so that a slow spell of the machine hits every contender alike.
    for _ in range(args.repeats):
        # Batched: all instances at once.
        torch.set_num_threads(args.threads)
        batched_runs.append(timed(lambda: train_instances(
            init_instances(range(args.instances), model), left, right, labels, evaluations, config))[0])
        # One at a time: the plain reference trainer, at 1 and at `threads` intra-op threads.
        for threads in thread_counts:
            torch.set_num_threads(threads)
            plain_runs[threads].append(timed(lambda: [
                plain_one_at_a_time(seed) for seed in range(args.single_instances)])[0])
        torch.set_num_threads(args.threads)
        kernel_runs.append(timed(lambda: [
            train_instances(init_instances([seed], model), left, right, labels, evaluations, one_config)
            for seed in range(args.single_instances)])[0])
    batched_wall, batched_cpu = report(f"batched, {args.instances} instances x {args.epochs} epochs",
                                       args.instances * args.epochs, batched_runs)
    plain = [report(f"one at a time, train_single on {threads} thread(s)", single_epochs, plain_runs[threads])
             for threads in thread_counts]
    kernel = report("one at a time, train_instances with one instance per call", single_epochs, kernel_runs)
    plain_wall = max(wall for wall, _ in plain)
    plain_cpu = max(cpu for _, cpu in plain)
    print(f"speed-up at {args.instances} instances over training them one at a time with the plain "
          f"single-model loop (its faster thread count), medians of {args.repeats} interleaved rounds: "
          f"{batched_wall / plain_wall:.1f}x wall-clock, {batched_cpu / plain_cpu:.1f}x in CPU time")
    print(f"  batching alone (the hand-written trainer called once per instance): "
          f"{batched_wall / kernel[0]:.1f}x wall-clock, {batched_cpu / kernel[1]:.1f}x in CPU time")
    minutes = 10_000 * 2_000 / batched_wall / 60
    print(f"extrapolated 10,000 instances x 2,000 epochs at this wall-clock rate: {minutes:.1f} min "
          f"(at one full core per worker: {10_000 * 2_000 / batched_cpu / 60 / args.threads:.1f} min)")
    print(f"peak memory so far: {peak_rss_gib():.2f} GiB")

    if args.scale_check:
        scale = SweepConfig(epochs=args.scale_epochs, weight_decay=args.weight_decay,
                               log_every=args.sweep_log_every, checkpoint_epochs=(0, args.scale_epochs))
        timing, _ = timed(lambda: train_instances(init_instances(range(args.scale_instances), model),
                                                  left, right, labels, evaluations, scale))
        wall, cpu = timing.wall, timing.cpu
        model_epochs = args.scale_instances * args.scale_epochs
        print(f"scale check: {args.scale_instances} instances x {args.scale_epochs} epochs in {wall:.1f} s "
              f"({model_epochs / wall:,.0f} model-epochs/s); 2,000 epochs would take "
              f"{args.scale_instances * 2000 / model_epochs * wall / 60:.1f} min wall-clock "
              f"({args.scale_instances * 2000 / model_epochs * cpu / 60 / args.threads:.1f} min at one full "
              f"core per worker); peak memory {peak_rss_gib():.2f} GiB")


if __name__ == "__main__":
    main()
