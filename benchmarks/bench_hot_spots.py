"""Where the chapters' time goes: each hot spot of issue 37 against its FLOP floor and a plain baseline.

Run from the repository root:

    .venv/bin/python benchmarks/bench_hot_spots.py            # about 2-4 minutes on 2 quiet cores
    .venv/bin/python benchmarks/bench_hot_spots.py --quick    # about 30 s: a smoke run (the test's)

Usage:
    python benchmarks/bench_hot_spots.py [--quick] [--repeats 3] [--json PATH]

`--repeats`: interleaved rounds (default 3; 1 with `--quick`); `--json PATH`: also write every
number printed to PATH.

The floor. The peak float32 and float64 GFLOP/s of a large matrix product (n = 512 and 1024,
the best of short bursts), measured before and after the hot spots (the better is kept): on one
thread, and in one single-threaded process per core, which is how the sweeps and the LLC chains
run (`lib.grokking.parallel`) and how chapters 3, 5 and 6 run everything else (`cpu_threads = 1`).
A hot spot's floor is its FLOPs at the all-core peak of its dtype: the machine's floor.

The hot spots. A short slice of each, run by the library code its chapter calls, at the
chapter's default parameters (read from the notebook's parameters cell), for a few epochs or
steps only; chapters 4-6's sweeps run on the local backend writing finished shards to a results
folder, as `config.use_sweep_backend()` sets it in the chapters:

* `z48` (chapter 4): `run_pair_sweep` of the Z48 pair's `z48_instances` seeds at the authors'
  settings; unit: one epoch of all seeds. `z48_one_shard`: the same without a results folder
  (one shard, so the chunks spread over one worker per core).
* `llc_end` (chapter 5): `mlp_llc_in_chunks` of the measured S4 seeds (their number from the
  recorded results, else `neither_sample`) with `llc_chains` chains, from chapter 4's S4 model
  without bias trained briefly (untimed); unit: one SGLD step of all chains of all seeds.
* `s5_train`, `s5_llc`, `s5_llc_one_shard` (chapter 5): the two calls of `s5_llc_over_training`,
  the S5 seed's training (`run_pair_sweep`; unit: one epoch) and the LLC at its snapshots
  (`llc_along_training`; unit: one SGLD step of all chains of all snapshots).
* `sketch_*` (chapter 6): `push_tangents` of one segment carrying `sketch_directions` products
  (float64, float32) and `sketch_spread_directions` ones (what the spread, Adam-eps and overflow
  runs carry), `pull_cotangents` of one segment (the backward pass, float64), and `screen_seeds`
  of `sketch_candidates` seeds at `sketch_dim` and at `jacobian_dim`; unit: one training step.
* `ch3_pretrain`, `ch3_finetune` (chapter 3): `train` of chapter 2's default run and of the
  chapter's fine-tuning run, as each seed replicate does; unit: one step. The eval batch, the
  snapshots and the five tests of a replicate are not timed.

For each: seconds per unit (median over `--repeats` interleaved rounds), GFLOP per unit counted
by `torch.utils.flop_counter.FlopCounterMode` (torch's counter: it counts matrix products,
attention and convolutions only, so lookups, softmax, elementwise work and the optimizer are free
in it and the floor ignores them; the profile says how much of the time they take), achieved
GFLOP/s, the cores the run kept busy (its CPU seconds over its wall seconds, worker processes
included), the share of those cores' peak it reached, its time over the floor, and its cost
extrapolated to the chapter's default scale beside the time the chapter recorded
(`notebooks/results/*.json`, recorded beside other jobs: upper bounds). The last column is the
share of the cores that other processes took meanwhile (`benchmarks/timing.py`).

Plain baselines, timed in the same rounds on one thread where they are cheap: the hand-written
training step (`ChunkStep`) against `train_single` (autograd and torch.optim.Adam) at the Z48 and
the S5 shapes, and the vmapped forward products against a loop of one `jvp` per direction. The
batched LLC against devinterp and a plain loop is `bench_llc.py`'s, the batched trainer against
one S4 model at a time `bench_instance_training.py`'s, the path sampler against a per-graph
generator `bench_graph_sampler.py`'s. A last block profiles a few units of each hot spot with
torch.profiler (one thread, in this process): the three ops with the most self CPU time, and the
share of the ops the counter counts (where it is small, elementwise work dominates and no faster
matrix product brings the slice near its floor).

Results measured so far, with their machines and dates: `benchmarks/RESULTS.md`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.func import jvp
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

from lib.book.params import read_parameters_cell, validate_parameters
from lib.book.seed_streams import stream_seeds
from lib.chapters.ch3 import Chapter3Parameters
from lib.chapters.ch4 import Chapter4Parameters
from lib.chapters.ch5 import Chapter5Parameters, s5_llc_over_training
from lib.grokking.llc_trajectory import llc_along_training, s5_snapshot_epochs
from lib.chapters.ch6 import JACOBIAN_STREAM, Chapter6Parameters
from lib.grokking.chunk_step import ChunkStep
from lib.grokking.jacobian_sketch import pull_cotangents, screen_seeds
from lib.grokking.mlp import MLPConfig, init_single
from lib.grokking.mlp_llc import MAX_SGLD_ACTIVATIONS, mlp_llc, mlp_llc_in_chunks
from lib.grokking.pairs import make_pair
from lib.grokking.reference_training import train_single
from lib.grokking.study import S4_PAIR
from lib.grokking.sweep_runner import SweepBackend, backend_in_use, use_backend
from lib.grokking.sweeps import intersection_training_set, run_pair_sweep
from lib.grokking.training_jacobian import (
    adam, adam_start, advance_differentiable, flatten, iid_part, mlp_loss, push_tangents)
from lib.paths.finetuning import fallback_base_config, finetuning_config, start_finetuning
from lib.paths.model import build_model
from lib.paths.sampler import sample_with_options
from lib.paths.training import start_training, train
from timing import Timing, medians, timed

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS, RESULTS = ROOT / "notebooks", ROOT / "notebooks" / "results"
#: torch's own thread count before anything here changes it (chapter 4 keeps it).
DEFAULT_THREADS = torch.get_num_threads()
#: The profiler's names of the ops whose FLOPs FlopCounterMode counts here (matrix products and
#: attention; their self time is the kernels').
COUNTED_OPS = {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addbmm",
               "aten::_scaled_dot_product_flash_attention_for_cpu",
               "aten::_scaled_dot_product_flash_attention_for_cpu_backward"}


@dataclass(frozen=True)
class Sizes:
    """How much of each hot spot is timed (units per call) and how long the peak is measured."""

    peak_seconds: float = 1.0
    z48_epochs: int = 200
    llc_train_epochs: int = 200
    llc_steps: int = 60
    s5_epochs: int = 20
    s5_llc_steps: int = 30
    sketch_steps: int = 10
    screen_steps: int = 30
    path_steps: int = 20
    baseline_epochs: int = 10
    profile_units: int = 3


FULL = Sizes()
#: Each slice still runs for 0.1 s or more, so that its CPU time (counted in ticks of 10 ms) means something.
QUICK = Sizes(peak_seconds=0.2, z48_epochs=10, llc_train_epochs=10, llc_steps=3, s5_epochs=4,
              s5_llc_steps=2, sketch_steps=4, screen_steps=10, path_steps=2, baseline_epochs=3,
              profile_units=1)


# --- The floor -------------------------------------------------------------------------------


def matmul_rate(dtype: torch.dtype, seconds: float, sizes: tuple[int, ...] = (512, 1024)) -> float:
    """Best GFLOP/s of n x n matrix products on this process's threads, over bursts of about
    `seconds` / 4 at each size n."""
    best = 0.0
    for n in sizes:
        a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
        out = torch.mm(a, b)
        for _ in range(2):
            count, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds / 4:
                torch.mm(a, b, out=out)
                count += 1
            best = max(best, 2 * n ** 3 * count / (time.perf_counter() - started) / 1e9)
    return best


def _rate_in_worker(dtype: torch.dtype, seconds: float, barrier, rates) -> None:
    torch.set_num_threads(1)
    barrier.wait()
    rates.put(matmul_rate(dtype, seconds))


def all_core_rate(dtype: torch.dtype, seconds: float, workers: int) -> float:
    """Summed GFLOP/s of `workers` forked single-threaded processes multiplying at once."""
    context = multiprocessing.get_context("fork")
    barrier, rates = context.Barrier(workers), context.SimpleQueue()
    processes = [context.Process(target=_rate_in_worker, args=(dtype, seconds, barrier, rates))
                 for _ in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    return sum(rates.get() for _ in processes)


@dataclass
class Peaks:
    """Peak GFLOP/s by dtype name: on one core, and in one single-threaded process per core."""

    core: dict[str, float] = field(default_factory=dict)
    machine: dict[str, float] = field(default_factory=dict)
    others: list[float] = field(default_factory=list)

    def measure(self, seconds: float, workers: int) -> None:
        """Measure every peak once more, keeping the best of each."""
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        for dtype in (torch.float32, torch.float64):
            name = dtype_name(dtype)
            timing, rate = timed(lambda: matmul_rate(dtype, seconds))
            self.core[name] = max(self.core.get(name, 0.0), rate)
            timing_all, rate_all = timed(lambda: all_core_rate(dtype, seconds, workers))
            self.machine[name] = max(self.machine.get(name, 0.0), rate_all)
            self.others += [timing.others_share(), timing_all.others_share()]
        torch.set_num_threads(threads)


def dtype_name(dtype: torch.dtype) -> str:
    """"float32" for torch.float32."""
    return str(dtype).removeprefix("torch.")


# --- Measuring one slice -----------------------------------------------------------------------


def count_flops(run: Callable[[], object]) -> int:
    """FLOPs of run() as torch's FlopCounterMode counts them (matrix products and attention only)."""
    with FlopCounterMode(display=False) as counter:
        run()
    return counter.get_total_flops()


@contextlib.contextmanager
def quiet_stderr():
    """Hide what C++ code writes to stderr (the profiler's two log lines per run)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def top_ops(run: Callable[[], object], n: int = 3) -> tuple[list[tuple[str, float]], float]:
    """The `n` ops with the most self CPU time in run() (with their shares of it), and the share
    of the ops whose FLOPs are counted (`COUNTED_OPS`)."""
    with quiet_stderr(), profile(activities=[ProfilerActivity.CPU]) as profiler:
        run()
    events = [e for e in profiler.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events) or 1.0
    events.sort(key=lambda e: e.self_cpu_time_total, reverse=True)
    top = [(e.key, e.self_cpu_time_total / total) for e in events[:n]]
    return top, sum(e.self_cpu_time_total for e in events if e.key in COUNTED_OPS) / total


@dataclass
class Slice:
    """One timed slice of a hot spot.

    Attributes:
        key, title, unit: its name in the table, what it is, its unit of work.
        run: one call of the chapter's code doing `units` units of work.
        flops: FLOPs per unit (FlopCounterMode); dtype: the dtype of its products.
        default_units: units at the chapter's default scale (0: not extrapolated).
        threads: torch threads of this process while it runs (the chapter's).
        profile: a few units of it in this process on one thread, for the profile (None: none).
        detail: a further line on where its time goes, printed after its profile.
    """

    key: str
    title: str
    unit: str
    run: Callable[[], object]
    units: int
    flops: float
    dtype: torch.dtype
    default_units: int
    threads: int = 1
    profile: Callable[[], object] | None = None
    detail: Callable[[], str] | None = None
    timings: list[Timing] = field(default_factory=list)

    def time_once(self) -> None:
        torch.set_num_threads(self.threads)
        self.timings.append(timed(self.run)[0])

    def numbers(self, peaks: Peaks) -> dict[str, float]:
        """The table's numbers, from the medians of the rounds."""
        wall, _, others = medians(self.timings)
        seconds, name = wall / self.units, dtype_name(self.dtype)
        busy = sum(t.cpu for t in self.timings) / sum(t.wall for t in self.timings)
        gflops = self.flops / seconds / 1e9
        return {"seconds_per_unit": seconds, "gflop_per_unit": self.flops / 1e9, "gflops": gflops,
                "busy_cores": busy, "share_of_busy_peak": gflops / (busy * peaks.core[name]),
                "floor_seconds_per_unit": self.flops / (peaks.machine[name] * 1e9),
                "times_floor": seconds * peaks.machine[name] * 1e9 / self.flops,
                "default_units": self.default_units, "estimated_seconds": seconds * self.default_units,
                "others_share": others}


@dataclass
class Baseline:
    """A plain implementation of a unit of work beside the chapter's, both on one thread."""

    key: str
    text: str
    ours: Callable[[], object]
    plain: Callable[[], object]
    timings: dict[str, list[Timing]] = field(default_factory=lambda: {"ours": [], "plain": []})

    def time_once(self) -> None:
        torch.set_num_threads(1)
        self.timings["ours"].append(timed(self.ours)[0])
        self.timings["plain"].append(timed(self.plain)[0])

    def ratio(self) -> float:
        return medians(self.timings["plain"])[0] / medians(self.timings["ours"])[0]


@dataclass
class HotSpot:
    """A hot spot of issue 37: its slices, baselines, and the chapter's recorded time.

    Attributes:
        estimate_keys: the slices whose extrapolated costs add up to what `recorded` timed.
        recorded: the seconds the chapter recorded for that part (None: not recorded).
        note: what the estimate leaves out or assumes.
    """

    name: str
    slices: list[Slice]
    baselines: list[Baseline]
    estimate_keys: list[str]
    recorded: float | None
    note: str


# --- The chapters' defaults and records --------------------------------------------------------


def chapter_config(spec, notebook: str, results_dir: str):
    """The chapter's parameters at the defaults of its notebook's parameters cell, on the CPU."""
    values = read_parameters_cell(NOTEBOOKS / notebook) | {"device": "cpu", "results_dir": results_dir}
    return validate_parameters(spec, values)


def recorded(notebook: str) -> dict:
    """The chapter's results JSON (notebooks/results), or {} when it is missing."""
    path = (RESULTS / notebook).with_suffix(".json")
    return json.loads(path.read_text()) if path.exists() else {}


def dig(data, *keys, default=None):
    """data[k1][k2]..., or `default` where a key is missing."""
    for key in keys:
        if not isinstance(data, (dict, list)):
            return default
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return default
    return data


# --- Chapter 4: the Z48 sweep ------------------------------------------------------------------


def z48_hot_spot(sizes: Sizes, results_dir: str) -> HotSpot:
    """Chapter 4's Z48 sweep: `run_pair_sweep` as the chapter runs it, and in one shard."""
    config = chapter_config(Chapter4Parameters, "04_ambiguous_grokking.py", results_dir)
    experiment = config.experiments["z48"]
    pair, model = make_pair(experiment.pair_name), experiment.model
    seeds = stream_seeds("sweep", config.seed, experiment.n_instances)
    schedule = dataclasses.replace(experiment.training, epochs=sizes.z48_epochs,
                                   log_every=min(experiment.training.log_every, sizes.z48_epochs))
    left, right, labels = intersection_training_set(pair)
    stepper = ChunkStep(init_single_batch(seeds[0], model), left, right, labels, experiment.training,
                        model.tied_linear)
    per_epoch = count_flops(stepper.step) * len(seeds)   # the bmm FLOPs grow with the instances

    def sweep() -> None:
        run_pair_sweep(pair, seeds, model, schedule, progress=False)

    def one_shard() -> None:
        with backend_in_use(SweepBackend()):
            sweep()

    unit = f"epoch of {len(seeds)} seeds"
    slices = [Slice("z48", "ch4 Z48 sweep, as the chapter runs it", unit, sweep, sizes.z48_epochs, per_epoch,
                    torch.float32, config.z48_epochs, DEFAULT_THREADS,
                    lambda: [stepper.step() for _ in range(sizes.profile_units)]),
              Slice("z48_one_shard", "ch4 Z48 sweep, one shard (one worker per core)", unit, one_shard,
                    sizes.z48_epochs, per_epoch, torch.float32, config.z48_epochs, DEFAULT_THREADS)]
    epochs = sizes.baseline_epochs
    plain = dataclasses.replace(experiment.training, epochs=epochs)
    baseline = Baseline("z48", f"ChunkStep.step against train_single (autograd, torch.optim.Adam), one Z48 "
                               f"model, {epochs} epochs, one thread",
                        lambda: [stepper.step() for _ in range(epochs)],
                        lambda: train_single(seeds[0], model, left, right, labels, plain))
    return HotSpot("chapter 4: the Z48 sweep", slices, [baseline], ["z48"],
                   dig(next((p for p in recorded("04_ambiguous_grokking").get("pairs", [])
                             if p.get("experiment") == "z48"), {}), "seconds"),
                   f"{config.z48_epochs:,} epochs (the slice evaluates at its first and last epoch, the "
                   f"chapter every {experiment.training.log_every})")


def init_single_batch(seed: int, model: MLPConfig) -> dict[str, torch.Tensor]:
    """One model's initial parameters with an instances dimension of 1."""
    return {k: v.unsqueeze(0) for k, v in init_single(seed, model).items()}


# --- Chapter 5: the end-of-training LLC and the S5 trajectory ----------------------------------


def model_step_flops(params: dict[str, torch.Tensor], left, right, labels) -> int:
    """FLOPs of one SGLD gradient of each model in `params` (the hand-written one of
    `mlp_llc`), per model."""
    stepper = ChunkStep(params, left, right, labels, config=None)
    losses = torch.empty(params["unembed"].shape[0])
    return count_flops(lambda: stepper.compute_gradients(losses)) // params["unembed"].shape[0]


def llc_end_hot_spot(sizes: Sizes, results_dir: str) -> HotSpot:
    """Chapter 5's LLC at the end of training: `mlp_llc_in_chunks` of the measured S4 seeds."""
    config = chapter_config(Chapter5Parameters, "05_complexity.py", results_dir)
    record = recorded("05_complexity")
    measured = record.get("n_measured") or config.neither_sample
    s4 = chapter_config(Chapter4Parameters, "04_ambiguous_grokking.py", results_dir).experiments["s4_no_bias"]
    pair = make_pair(s4.pair_name)
    training = dataclasses.replace(s4.training, epochs=sizes.llc_train_epochs, log_every=sizes.llc_train_epochs,
                                   checkpoint_epochs=())
    torch.set_num_threads(config.workers)
    sweep = run_pair_sweep(pair, stream_seeds("sweep", config.seed, measured), s4.model, training, progress=False)
    torch.set_num_threads(1)
    params, train = sweep.final_params, (sweep.train_left, sweep.train_right, sweep.train_labels)
    sgld = dataclasses.replace(config.sgld, steps=sizes.llc_steps)
    chains = {k: v[:1].repeat_interleave(sgld.chains, dim=0) for k, v in params.items()}
    per_step = model_step_flops(chains, *train) * measured * sgld.chains

    def llc() -> None:
        mlp_llc_in_chunks(params, *train, sgld, torch.Generator().manual_seed(config.seed), workers=config.workers)

    few = dataclasses.replace(sgld, steps=sizes.profile_units)
    # One chunk of `mlp_llc_in_chunks`, as a worker runs it.
    widest = max(s4.model.hidden_dim, pair.n_elements)
    per_chunk = max(1, MAX_SGLD_ACTIVATIONS // (sgld.chains * train[2].numel() * widest))
    chunk = {k: v[:per_chunk] for k, v in params.items()}
    unit = f"SGLD step of {measured} seeds x {sgld.chains} chains"
    slices = [Slice("llc_end", "ch5 end-of-training LLC (S4)", unit, llc, sizes.llc_steps, per_step,
                    torch.float32, config.llc_steps,
                    profile=lambda: mlp_llc(chunk, *train, few, torch.Generator().manual_seed(0)))]
    return HotSpot("chapter 5: the LLC at the end of training", slices, [], ["llc_end"],
                   dig(record, "seconds", "end_of_training"),
                   f"{measured} seeds x {config.llc_chains} chains x {config.llc_steps:,} steps; the baselines "
                   "(devinterp, a plain autograd loop) on this model: bench_llc.py")


def s5_hot_spot(sizes: Sizes, results_dir: str) -> HotSpot:
    """Chapter 5's S5 trajectory: the two calls of `s5_llc_over_training`, on a run of its own
    made first (few epochs, the chapter's number of snapshots)."""
    config = chapter_config(Chapter5Parameters, "05_complexity.py", results_dir)
    marks = s5_snapshot_epochs(config.s5_snapshots, config.s5_epochs, config.s5_every)
    # The slice keeps the number of snapshots, spread over its few epochs.
    epochs = max(sizes.s5_epochs, len(marks))
    snapshots = tuple(round(epochs * (k + 1) / len(marks)) for k in range(len(marks) - 1))
    short = dataclasses.replace(config, s5_epochs=epochs, s5_snapshots=snapshots, s5_every=0,
                                s5_llc_steps=sizes.s5_llc_steps)
    torch.set_num_threads(1)
    made = s5_llc_over_training(short, torch.Generator().manual_seed(0), progress=False)
    result = made.result
    sgld = made.sgld
    pair = make_pair(result.info["pair"])
    seeds = result.seeds.tolist()
    train = (result.train_left, result.train_right, result.train_labels)
    one = init_single_batch(seeds[0], result.model_config)
    per_model = model_step_flops(one, *train)
    n_models = len(marks) * len(seeds) * sgld.chains

    def training() -> None:
        run_pair_sweep(pair, seeds, result.model_config, result.training_config, progress=False)

    def llc() -> None:
        llc_along_training(result, sgld, config.grok_threshold, torch.Generator().manual_seed(0), config.workers)

    def llc_one_shard() -> None:
        with backend_in_use(SweepBackend()):
            llc()

    stepper = ChunkStep(one, *train, result.training_config)
    few = dataclasses.replace(sgld, steps=sizes.profile_units)
    unit = f"SGLD step of {len(marks)} snapshots x {len(seeds)} seed(s) x {sgld.chains} chains"
    slices = [Slice("s5_train", "ch5 S5 trajectory: training", f"epoch of {len(seeds)} seed(s)", training, epochs,
                    per_model * len(seeds), torch.float32, config.s5_epochs,
                    profile=lambda: [stepper.step() for _ in range(sizes.profile_units)]),
              Slice("s5_llc", "ch5 S5 trajectory: LLC at the snapshots", unit, llc, sgld.steps,
                    per_model * n_models, torch.float32, config.s5_llc_steps,
                    profile=lambda: mlp_llc(one, *train, few, torch.Generator().manual_seed(0))),
              Slice("s5_llc_one_shard", "ch5 S5 LLC, one shard (one worker per core)", unit, llc_one_shard,
                    sgld.steps, per_model * n_models, torch.float32, config.s5_llc_steps)]
    plain = dataclasses.replace(result.training_config, epochs=sizes.baseline_epochs, checkpoint_epochs=())
    baseline = Baseline("s5", f"ChunkStep.step against train_single (autograd, torch.optim.Adam), one S5 "
                              f"model, {sizes.baseline_epochs} epochs, one thread",
                        lambda: [stepper.step() for _ in range(sizes.baseline_epochs)],
                        lambda: train_single(seeds[0], result.model_config, *train, plain))
    return HotSpot("chapter 5: the S5 trajectory", slices, [baseline], ["s5_train", "s5_llc"],
                   dig(recorded("05_complexity"), "seconds", "s5_llc_over_training"),
                   f"{config.s5_epochs:,} epochs, then {len(marks)} snapshots x {config.s5_llc_chains} chains x "
                   f"{config.s5_llc_steps:,} steps")


# --- Chapter 6: the sketched training Jacobian ---------------------------------------------------


def sketch_step(config, schedule, dtype: torch.dtype):
    """The Adam step of the chapter's sketched model as `sketched_jacobian_study` builds it, its
    start state, and the number of parameters P."""
    pair = make_pair(S4_PAIR)
    model = MLPConfig(pair.n_elements, config.sketch_dim, config.sketch_dim, unembed_bias=True)
    training, _ = iid_part(pair.g1, config.jacobian_train_fraction, torch.Generator().manual_seed(config.seed + 10))
    params = init_single(stream_seeds(JACOBIAN_STREAM, config.seed, 1)[0], model)
    loss, mask = mlp_loss({name: tuple(value.shape) for name, value in params.items()}, *training)
    step = adam(loss, schedule.lr, (schedule.beta1, schedule.beta2), schedule.eps, config.jacobian_weight_decay,
                mask.to(dtype))
    theta = flatten(params).to(dtype)
    return step, adam_start(theta), theta.numel()


def directions(k: int, p: int, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """K Gaussian tangents (d theta, d m, d v) of a sketch's start."""
    omega = torch.randn(k, p, generator=torch.Generator().manual_seed(0), dtype=torch.float64).to(dtype)
    return omega, torch.zeros_like(omega), torch.zeros_like(omega)


def jvp_loop(step, state, tangents, steps: int) -> list:
    """The plain way to push K directions through a segment: one forward-mode product each."""
    theta, m, v, t = state

    def segment(theta_, m_, v_):
        return advance_differentiable(step, (theta_, m_, v_, t), steps)[:3]

    return [jvp(segment, (theta, m, v), tuple(x[k] for x in tangents))[1] for k in range(len(tangents[0]))]


@dataclass(frozen=True)
class SketchWork:
    """How many training steps chapter 6's sketch section carries products through, by kind: the
    read seed's `sketch_directions` products in each dtype (`read`); `sketch_spread_directions`
    products in float64 for each further grokker and, at each further Adam eps, for them and the
    read seed (`spread`), and in both dtypes for the overflow run (`overflow`); the steps pulled
    back, through every segment up to each spectrum's step (`pulled`, from the recorded spectra)."""

    read: int
    spread: int
    overflow: int
    pulled: int

    @classmethod
    def of(cls, config, record: dict) -> SketchWork:
        grokkers = record.get("seeds_grokked_in_screen")   # the read seed and the others that grokked
        others = config.sketch_spread_seeds
        if grokkers is not None:
            others = min(others, max(0, grokkers - 1))
        runs = others + len(config.sketch_adam_eps) * (1 + others)
        overflow = config.sketch_overflow_steps if config.sketch_overflow_steps >= config.sketch_segment else 0
        pulled = sum(spectrum["step"] for spectrum in record.get("spectra", [])) or config.sketch_steps
        return cls(config.sketch_steps, runs * config.sketch_steps, overflow, pulled)

    def describe(self, config) -> str:
        return (f"forward: {self.read:,} steps of the read seed in each dtype with {config.sketch_directions} "
                f"products, {self.spread:,} (float64) and {self.overflow:,} (both dtypes) with "
                f"{config.sketch_spread_directions}; backward: {self.pulled:,} steps pulled back; "
                "finite_amplification not timed")


def forward_slice(config, steps: dict, k: int, dtype: torch.dtype, default_units: int, sizes: Sizes) -> Slice:
    """`push_tangents` of one segment of `sizes.sketch_steps` steps with `k` products in `dtype`."""
    step, state, p = steps[dtype]
    tangents = directions(k, p, dtype)
    key = f"sketch_fwd{dtype_name(dtype)[-2:]}" + ("" if k == config.sketch_directions else f"_k{k}")
    return Slice(key, f"ch6 sketch forward, {k} products, {dtype_name(dtype)}", "training step",
                 lambda: push_tangents(step, state, tangents, sizes.sketch_steps), sizes.sketch_steps,
                 count_flops(lambda: push_tangents(step, state, tangents, 1)), dtype, default_units,
                 profile=lambda: push_tangents(step, state, tangents, sizes.profile_units))


def sketch_hot_spot(sizes: Sizes, results_dir: str) -> HotSpot:
    """Chapter 6's sketched training Jacobian: its forward and backward products and its screening."""
    config = chapter_config(Chapter6Parameters, "06_determination.py", results_dir)
    s4 = chapter_config(Chapter4Parameters, "04_ambiguous_grokking.py", results_dir).experiments["s4_no_bias"]
    schedule = s4.training   # the S4 sweep's Adam, which chapter 6 reads from the loaded sweep
    work = SketchWork.of(config, dig(recorded("06_determination"), "jacobian_sketch", default={}))
    steps = {dtype: sketch_step(config, schedule, dtype) for dtype in (torch.float64, torch.float32)}
    k, k_spread = config.sketch_directions, config.sketch_spread_directions
    slices = [forward_slice(config, steps, k, torch.float64, work.read, sizes),
              forward_slice(config, steps, k, torch.float32, work.read, sizes),
              forward_slice(config, steps, k_spread, torch.float64, work.spread + work.overflow, sizes),
              forward_slice(config, steps, k_spread, torch.float32, work.overflow, sizes)]
    step, state, p = steps[torch.float64]
    cotangents = directions(k, p, torch.float64)
    slices.append(Slice("sketch_bwd64", f"ch6 sketch backward, {k} products, float64", "training step pulled back",
                        lambda: pull_cotangents(step, state, cotangents, sizes.sketch_steps), sizes.sketch_steps,
                        count_flops(lambda: pull_cotangents(step, state, cotangents, 1)), torch.float64, work.pulled,
                        profile=lambda: pull_cotangents(step, state, cotangents, sizes.profile_units)))
    slices += screen_slices(config, schedule, sizes)
    baseline = Baseline("sketch", f"vmapped push_tangents against a loop of one jvp per direction, {k} "
                                  "directions, float64, one step",
                        lambda: push_tangents(step, state, cotangents, 1), lambda: jvp_loop(step, state, cotangents, 1))
    return HotSpot("chapter 6: the sketched training Jacobian", slices, [baseline], [s.key for s in slices],
                   dig(recorded("06_determination"), "seconds", "jacobian_sketch"), work.describe(config))


def screen_slices(config, schedule, sizes: Sizes) -> list[Slice]:
    """`screen_seeds` of the chapter's candidates at the sketched width and at the dense one."""
    pair = make_pair(S4_PAIR)
    training, test = iid_part(pair.g1, config.jacobian_train_fraction, torch.Generator().manual_seed(config.seed + 10))
    seeds = stream_seeds(JACOBIAN_STREAM, config.seed, config.sketch_candidates)
    settings = (config.jacobian_weight_decay, schedule.lr, (schedule.beta1, schedule.beta2), schedule.eps)
    slices = []
    for width in (config.sketch_dim, config.jacobian_dim):
        model = MLPConfig(pair.n_elements, width, width, unembed_bias=True)

        def screen(steps: int, model=model) -> None:
            screen_seeds(model, seeds, training, test, steps, steps, *settings)

        # One test-set check per call: the difference of two lengths is training steps only.
        flops = (count_flops(lambda: screen(4)) - count_flops(lambda: screen(2))) / 2
        slices.append(Slice(f"screen_d{width}", f"ch6 screening, {len(seeds)} seeds at d = h = {width}",
                            f"step of {len(seeds)} seeds", lambda screen=screen: screen(sizes.screen_steps),
                            sizes.screen_steps, flops, torch.float32, config.sketch_steps,
                            profile=lambda screen=screen: screen(sizes.profile_units)))
    return slices


# --- Chapter 3: the seed replicates ------------------------------------------------------------


def path_step_flops(run) -> int:
    """FLOPs of one training step's forward and backward pass (Adam has no products)."""
    tokens, labels = sample_with_options(run.config.batch_size, run.config.sampler, torch.Generator().manual_seed(0))

    def step() -> None:
        ((run.model(tokens) - labels) ** 2).mean().backward()

    flops = count_flops(step)
    run.model.zero_grad(set_to_none=True)
    return flops


def seeds_hot_spot(sizes: Sizes, results_dir: str) -> HotSpot:
    """Chapter 3's seed replicates: pre-training and fine-tuning steps of one further seed."""
    config = chapter_config(Chapter3Parameters, "03_finetuning_generalization.py", results_dir)
    extra = config.seeds[1:]
    base = fallback_base_config(seed=extra[0] if extra else config.seed, device="cpu")
    tune = finetuning_config(base, small_n_max=config.small_n_max, steps=config.finetune_steps,
                             batch_size=config.finetune_batch_size, learning_rate=config.finetune_learning_rate,
                             weight_decay=config.finetune_weight_decay, eval_size=config.eval_size,
                             seed=base.seed)
    torch.set_num_threads(config.cpu_threads)
    runs = {"pretrain": start_training(base),
            "finetune": start_finetuning(build_model(base.model_config, seed=base.seed), tune)}
    defaults = {"pretrain": base.total_steps, "finetune": config.finetune_steps}
    slices = []
    for name, run in runs.items():
        def steps(count: int, run=run) -> None:
            train(run, run.step + count, progress=False)

        def sampling(run=run) -> str:
            return f"drawing the graphs (the sampler): {run.seconds_sampling / run.seconds:.0%} of the steps' time"

        slices.append(Slice(f"ch3_{name}", f"ch3 seed replicate: {name}", f"step of {run.config.batch_size} graphs",
                            lambda steps=steps: steps(sizes.path_steps), sizes.path_steps, path_step_flops(run),
                            torch.float32, defaults[name] * len(extra), config.cpu_threads,
                            lambda steps=steps: steps(sizes.profile_units), sampling))
    workers = min(getattr(config, "workers", 1), len(extra))
    note = (f"{len(extra)} further seeds x ({base.total_steps:,} + {config.finetune_steps} steps), one core each "
            f"(added up: the chapter's `workers` runs {workers} at once); eval snapshots and tests not timed; the "
            "sampler against a per-graph generator: bench_graph_sampler.py")
    return HotSpot("chapter 3: the seed replicates", slices, [], [s.key for s in slices],
                   dig(recorded("03_finetuning_generalization"), "seconds", "seed_replicates"), note)


# --- Report -------------------------------------------------------------------------------------


def print_peaks(peaks: Peaks, workers: int) -> None:
    """The floor: the peaks of each dtype, and the most of the cores others took while they ran."""
    print(f"floor: peak GFLOP/s of a matrix product, {os.cpu_count()} CPUs, torch {torch.__version__} "
          f"({torch.backends.cpu.get_cpu_capability()}); others took up to {max(peaks.others):.0%} of the cores")
    for name in peaks.core:
        print(f"  {name}: {peaks.core[name]:6.1f} on one core, {peaks.machine[name]:6.1f} in {workers} "
              f"single-threaded processes ({peaks.machine[name] / peaks.core[name]:.2f}x)")


def print_table(spots: list[HotSpot], peaks: Peaks) -> dict[str, dict]:
    """The table of every slice; returns its numbers by key."""
    header = (f"{'hot spot':18s} {'s/unit':>9s} {'GFLOP/unit':>10s} {'GFLOP/s':>8s} {'busy':>5s} "
              f"{'of peak':>7s} {'x floor':>8s} {'default scale':>13s} {'others':>6s}  unit")
    print("\n" + header + "\n" + "-" * len(header))
    table = {}
    for spot in spots:
        for s in spot.slices:
            row = table[s.key] = s.numbers(peaks) | {"title": s.title, "unit": s.unit, "dtype": dtype_name(s.dtype)}
            print(f"{s.key:18s} {row['seconds_per_unit']:9.4f} {row['gflop_per_unit']:10.3f} {row['gflops']:8.1f} "
                  f"{row['busy_cores']:5.2f} {row['share_of_busy_peak']:7.0%} {row['times_floor']:8.1f} "
                  f"{row['estimated_seconds']:11.0f} s {row['others_share']:6.0%}  {s.unit} ({row['dtype']})")
    print("busy: cores kept busy (CPU over wall seconds); of peak: GFLOP/s over the busy cores' peak; x floor: "
          "time over the FLOPs at the all-core peak; default scale: units at the chapter's defaults x s/unit.\n"
          "FlopCounterMode counts matrix products and attention only: elementwise work, lookups, softmax and "
          "the optimizer are not in the floor.")
    return table


def print_estimates(spots: list[HotSpot], table: dict[str, dict]) -> dict[str, dict]:
    """Each hot spot at its chapter's default scale beside the recorded time; returns them by name."""
    print("\nat the chapters' default scale (estimates from the slices) against the recorded times "
          "(notebooks/results, recorded beside other jobs):")
    estimates = {}
    for spot in spots:
        total = sum(table[key]["estimated_seconds"] for key in spot.estimate_keys)
        shown = "not recorded" if spot.recorded is None else f"recorded {spot.recorded:,.0f} s"
        print(f"  {spot.name}: about {total:,.0f} s ({shown}); {spot.note}")
        estimates[spot.name] = {"estimated_seconds": total, "recorded_seconds": spot.recorded, "note": spot.note}
    return estimates


def print_baselines(spots: list[HotSpot]) -> dict[str, float]:
    """Each plain baseline's time over the chapter's code's; returns the ratios by key."""
    print("\nagainst a plain implementation (one thread, medians of the rounds):")
    ratios = {}
    for spot in spots:
        for baseline in spot.baselines:
            ratios[baseline.key] = baseline.ratio()
            print(f"  {baseline.text}: {ratios[baseline.key]:.1f}x faster")
    return ratios


def print_profiles(spots: list[HotSpot], units: int) -> dict[str, dict]:
    """The top ops of each profiled slice and the share of the counted ones; returns them by key."""
    print(f"\nwhere the time goes (torch.profiler, {units} unit(s), one thread, self CPU time):")
    profiles = {}
    torch.set_num_threads(1)
    for spot in spots:
        for s in spot.slices:
            if s.profile is None:
                continue
            s.profile()   # warm
            top, counted = top_ops(s.profile)
            profiles[s.key] = {"top": top, "counted_share": counted}
            ops = ", ".join(f"{name} {share:.0%}" for name, share in top)
            print(f"  {s.key:18s} {ops}; the counted ops (products, attention) {counted:.0%}")
            if s.detail is not None:
                profiles[s.key]["detail"] = s.detail()
                print(f"  {'':18s} {profiles[s.key]['detail']}")
    return profiles


def run_rounds(spots: list[HotSpot], repeats: int) -> None:
    """Time every slice and baseline once per round, interleaved, after one untimed call of each slice."""
    for s in (s for spot in spots for s in spot.slices):   # warm every code path
        s.time_once()
        s.timings.clear()
    for round_ in range(repeats):
        print(f"round {round_ + 1} of {repeats} ...", file=sys.stderr, flush=True)
        for spot in spots:
            for s in spot.slices:
                s.time_once()
            for baseline in spot.baselines:
                baseline.time_once()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of about 30 s (the test's)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 3, quick 1)")
    parser.add_argument("--json", type=Path, default=None, help="also write every number to this JSON file")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    repeats = args.repeats or (1 if args.quick else 3)
    workers = os.cpu_count() or 1

    peaks = Peaks()
    peaks.measure(sizes.peak_seconds, workers)
    with tempfile.TemporaryDirectory() as results_dir:
        use_backend("local", None, results_dir)   # as chapters 4-6's config.use_sweep_backend()
        builders = [z48_hot_spot, llc_end_hot_spot, s5_hot_spot, sketch_hot_spot, seeds_hot_spot]
        spots = []
        for build in builders:
            print(f"setting up {build.__name__.removesuffix('_hot_spot')} ...", file=sys.stderr, flush=True)
            spots.append(build(sizes, results_dir))
        run_rounds(spots, repeats)
        peaks.measure(sizes.peak_seconds, workers)
        print_peaks(peaks, workers)
        table = print_table(spots, peaks)
        estimates = print_estimates(spots, table)
        ratios = print_baselines(spots)
        profiles = print_profiles(spots, sizes.profile_units)
    if args.json:
        args.json.write_text(json.dumps({"peaks": {"core": peaks.core, "machine": peaks.machine},
                                         "slices": table, "estimates": estimates, "baselines": ratios,
                                         "profiles": profiles, "repeats": repeats, "quick": args.quick},
                                        indent=1))


if __name__ == "__main__":
    main()
