"""Overhead of the Ray sweep backend against the local one, and what a cluster would take.

Run from the repository root:

    .venv/bin/python benchmarks/bench_sweep_backends.py                 # S4 pair, 1,000 x 2,000: 2.5-5 minutes on 2 cores
    .venv/bin/python benchmarks/bench_sweep_backends.py --epochs 200    # a quick look
    .venv/bin/python benchmarks/bench_sweep_backends.py --device cuda   # the table for GPUs, on a GPU machine

Both backends train the same sweep of the S4 pair (chapter 4's model and schedule) in one run,
alternating, on this machine's cores: "local" with one worker process per core, "ray" with a Ray
started here with as many CPUs, one single-threaded task per shard. The overhead is the ratio of
the medians; the merged results are compared exactly. Ray's start-up is timed apart (it happens
once per notebook, not per sweep).

From the measured per-shard throughputs (model-epochs of training, chain-steps of chapter 5's
LLC) the script prints the wall time of the published-scale chapters 4-6 on 1, 8 and 64 workers.
A worker is what one Ray task gets: one core with `--device cpu` (the throughputs of the local
run), one GPU with `--device cuda` (a shard of `--instances` trained, and LLC chains run, on this
machine's GPU). The table is extrapolated from one worker: it assumes shards that keep every
worker busy and ignores Ray's start-up and transfers (measured above on cores). No GPU was
available where this was written, so the GPU table has not been measured yet. On a GPU the
chunks keep the sizes tuned for a core's cache (`auto_chunk_size`: 97 S4 instances per
training chunk; `MAX_SGLD_ACTIVATIONS`: 24 LLC models per batch), so `--device cuda` measures
the chapters as they run today, with kernels that are small for a GPU; a larger budget on CUDA
is the first thing to try there (it changes the numbers, as any change of chunking does).

Results measured so far, with their machines and dates: `benchmarks/RESULTS.md`.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from lib.grokking.llc import SGLDConfig
from lib.grokking.mlp import MLPConfig, init_instances
from lib.grokking.mlp_llc import mlp_llc_in_chunks
from lib.grokking.pairs import make_pair
from lib.grokking.sweep_runner import SweepBackend, backend_in_use
from lib.grokking.sweeps import intersection_training_set, run_pair_sweep
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


#: Chapter 5's published-scale LLC: 10,000 seeds x 100 chains x 3,000 SGLD steps.
PUBLISHED_CHAIN_STEPS = 10_000 * 100 * 3_000


def sweep(instances: int, epochs: int, workers: int, device: torch.device = torch.device("cpu")):
    config = SweepConfig(epochs=epochs, log_every=10, workers=workers)
    return run_pair_sweep(make_pair("S4_vs_A4xZ2"), list(range(instances)), MLPConfig(24, 32, 32), config,
                          device=device, progress=False)


def shard_model_epochs_per_second(instances: int, epochs: int, device: torch.device) -> float:
    """Model-epochs per second of one shard of the S4 sweep trained on `device` (a GPU)."""
    sweep(2, 2, workers=1, device=device)  # first calls pay for lazy initialisation
    began = time.perf_counter()
    sweep(instances, epochs, workers=1, device=device)
    return instances * epochs / (time.perf_counter() - began)


def llc_chain_steps_per_second(device: torch.device, instances: int = 40, chains: int = 8,
                               steps: int = 200) -> float:
    """Chain-steps (one SGLD step of one chain of one model) per second of chapter 5's batched
    LLC estimator on one core (`device` "cpu") or one GPU, for the S4 model."""
    params = init_instances(list(range(instances)), MLPConfig(24, 32, 32), device=device)
    left, right, labels = intersection_training_set(make_pair("S4_vs_A4xZ2"))
    began = time.perf_counter()
    mlp_llc_in_chunks(params, left, right, labels, SGLDConfig(steps=steps, chains=chains),
                      torch.Generator(device=device).manual_seed(0), workers=1)
    return instances * chains * steps / (time.perf_counter() - began)


def same(a, b) -> bool:
    return all(torch.equal(a.metrics[k], b.metrics[k]) for k in a.metrics) and \
        all(torch.equal(a.final_params[k], b.final_params[k]) for k in a.final_params)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2, help="local worker processes = Ray CPUs")
    parser.add_argument("--repeats", type=int, default=1, help="alternating rounds; medians are reported")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="what one worker of the scaling table is: a core or a GPU")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda needs a GPU that torch can see; this machine has none.")

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
    torch.set_num_threads(1)
    if device.type == "cuda":
        per_worker = shard_model_epochs_per_second(args.instances, args.epochs, device)
        print(f"measured on {torch.cuda.get_device_name(device)}: {per_worker:,.0f} model-epochs per "
              f"second for one shard of {args.instances:,} instances")
    per_worker_llc = llc_chain_steps_per_second(device)
    unit = "GPU" if device.type == "cuda" else "core"
    print(f"measured LLC throughput: {per_worker_llc:,.0f} chain-steps per second on one {unit}")
    training = sum(PUBLISHED_MODEL_EPOCHS.values())
    seconds = training / per_worker + PUBLISHED_CHAIN_STEPS / per_worker_llc
    print(f"\nExtrapolated wall time of the published-scale chapters 4-6 on {unit}s like this one "
          f"({training / 1e9:.2f} billion model-epochs of training, {PUBLISHED_CHAIN_STEPS / 1e9:.1f} billion "
          "chain-steps of LLC):")
    print(f"| {unit}s | wall time |")
    print("|---|---|")
    for count in (1, 8, 64):
        print(f"| {count} | {seconds / count / 3600:,.1f} h |")
    for name, work in PUBLISHED_MODEL_EPOCHS.items():
        print(f"  {name}: {work / 1e9:.3f} billion model-epochs")


if __name__ == "__main__":
    main()
