"""Run the book's published-scale work on a GPU, most important first, resumable
(`make published DEVICE=cuda BUDGET_S=600`; README, "On a GPU").

    .venv/bin/python tools/published.py [--device auto|cpu|cuda|cuda:K] [--budget-s SECONDS]
                                        [--steps NAME ...] [--out DIR] [--smoke] [--plan-only]

`STEPS` lists the work in priority order. Each step executes one chapter with papermill, with the
parameters of its published scale (`notebooks/published/NN.yaml`, the file `papermill -f` reads)
and the few overrides the step names, into `--out/<step>/` (default `results/published/`): the
executed notebook, the chapter's results JSON and whatever else it writes to its `results_dir`
(checkpoints, sweeps), and `step.json` (the papermill command, the device, the wall time, the
chapter's code fingerprint, the machine and the date). A step runs in `--out/.<step>.partial/`
and is renamed to `--out/<step>/` only when it finished, so a step is done exactly when its
results JSON is there, and a finished step is skipped the next time: run the same command again
to resume. Chapter 3's step runs with the folder of chapter 2's published step as its
`results_dir`, where it finds that step's checkpoint; what it writes there is moved into its own
folder when it finished.

A resumable step (`Step.state_file`: ch2_published, 9,600 steps, longer than one GPU loan) is
passed `state_every_s`, so its chapter saves its main run's whole state every `STATE_EVERY_S`
seconds (`lib.paths.resumable_run`, about 11 MB at the published scale). When the budget ends
while it runs, its partial folder is kept, with the state and `runs.json` (each run: device,
machine, code fingerprint, wall time, the main run's steps from and to); commit that folder, and
the same command, on any later GPU, continues from the saved step, with the numbers of a run that
never stopped. It is started even when it cannot finish, as long as `MIN_RESUMED_S` of the budget
is left, and it takes the rest of the budget. The command prints how far each such step got.

On CUDA the command first runs `benchmarks/bench_published_step.py` (the study-scale step against
the device's measured matrix-product throughput; its report goes to `--out/bench_step_<time>.json`).

The last steps are CPU-feasible (`fixed_estimate`: their chapters have no probe): run them with
`--device cpu --budget-s 30000` in the background.

Before the work, every pending step's training loops are timed on the device for a few seconds
(one to five training steps of the step's own model and batch, twenty epochs of each sweep at
its seed count; `training_loops`, `estimate_step`), and its time is estimated as `OVERHEAD_S`
plus `SAFETY` times the loops' steps (or epochs) at the probed rates. The command prints the estimates and which
steps fit `--budget-s`, counted from its start; a step is started only when its estimate fits
the time left (a step that does not fit is skipped and the next one considered), and a step
still running when the budget is spent is stopped, its partial folder removed.

`--smoke` runs every step with `smoke=True` (the chapters' seconds-long test runs) into
`results/published-smoke/` unless `--out` says otherwise: the tests run it on a CPU. A chapter
keeps every value papermill passes it, smoke or not, so a smoke step is passed neither the
published YAML nor the step's overrides (both are still validated, smoke and full, before any
work).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
import torch  # noqa: E402
from papermill.iorw import read_yaml_file  # noqa: E402

from lib.book.code_fingerprint import fingerprint, machine_description  # noqa: E402
from lib.book.params import ParameterError, read_parameters_cell, validate_parameters  # noqa: E402
from lib.chapters.registry import parameters_class  # noqa: E402
from lib.paths.resumable_run import progress_path, read_progress  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
PUBLISHED = NOTEBOOKS / "published"
DEFAULT_OUT = ROOT / "results" / "published"
SMOKE_OUT = ROOT / "results" / "published-smoke"

#: Seconds of a chapter run that the probed loops leave out (kernel start, imports, evaluation
#: batches, figures, saving): the smoke runs of chapters 2 and 4 took 19-21 s end to end on a busy
#: 2-core CPU, nearly all of it this part; the published scale's evaluation batches are larger.
OVERHEAD_S = 60.0
#: The probed loops' time is multiplied by this, for what the probe does not see (evaluations
#: between steps, logging, a device slower when warm).
SAFETY = 1.5
#: The probe times at most this many training steps of a model, or stops after PROBE_SECONDS,
PROBE_STEPS = 5
PROBE_SECONDS = 3.0
#: and this many epochs of each sweep, after a one-epoch warm-up.
PROBE_EPOCHS = 20


@dataclass(frozen=True)
class Step:
    """One piece of published-scale work: a chapter with its published parameters and overrides."""

    name: str                                  # its folder under --out
    chapter: int                               # the chapter number (notebooks/NN_*.py)
    what: str                                  # what it produces, in words
    overrides: tuple[tuple[str, Any], ...] = ()  # parameters set on top of notebooks/published/NN.yaml
    label: str = ""                            # how step.json names a partial scale, e.g. "S4 10k only"
    reads_from: str | None = None              # the step whose folder is this step's results_dir
    published_file: bool = True                # False: the chapter's defaults plus the overrides only
    fixed_estimate: tuple[float, str] | None = None  # (seconds, basis): the estimate of a step
                                                     # whose chapter has no probe (`training_loops`)
    state_file: str | None = None              # resumable: the file in its folder from which a
                                               # stopped run continues (`lib.paths.resumable_run`)
    needs: str = ""                            # the device time it needs, in words, with its basis,
                                               # where `fixed_estimate` does not say it

    @property
    def device_time(self) -> str:
        """The device time the step needs, with its basis: what the index names beside the rows
        still to come."""
        if self.needs:
            return self.needs
        if self.fixed_estimate:
            return f"about {duration(self.fixed_estimate[0])} ({self.fixed_estimate[1]})"
        return "device time not estimated"

    @property
    def source(self) -> Path:
        """The chapter's .py source."""
        found = sorted(NOTEBOOKS.glob(f"{self.chapter:02d}_*.py"))
        if len(found) != 1:
            raise SystemExit(f"step {self.name}: no single chapter {self.chapter:02d}_*.py in {NOTEBOOKS}.")
        return found[0]

    @property
    def parameters_file(self) -> Path:
        return PUBLISHED / f"{self.chapter:02d}.yaml"


#: Seconds between the saves of a resumable step's state (the last few minutes of a stopped run are
#: trained again by the next one), and in a smoke run (every scoring: the tests stop it anywhere).
STATE_EVERY_S = 120.0
SMOKE_STATE_EVERY_S = 0.001
#: The least budget a resumable step is started with when it cannot finish: the chapter's start
#: and a first save.
MIN_RESUMED_S = OVERHEAD_S + STATE_EVERY_S

#: Chapter 4's sweeps other than the one a step is for, at the seed counts of the chapter's smoke
#: run (the smallest the tests run it with) and their epochs unchanged; the Z35 sweep at the
#: first of the authors' learning rates only.
CH4_OTHER_SWEEPS_SMALL = (("z48_instances", 2), ("z35_instances", 1), ("z35_learning_rates", [5e-4]),
                          ("z35_book_instances", 2), ("z100_instances", 1), ("subsample_instances", [4, 4]))

#: The published-scale work, most important first.
STEPS = (
    Step("ch2_first300", 2, "chapter 2 at the study's scale for its first 300 steps: the loss of each "
         "path length over them (the published run's first phase, cut at step 300)",
         (("learning_rates", [5e-4]), ("phase_steps", [300]))),
    Step("ch2_published", 2, "chapter 2 at the published scale (9,600 steps): the model chapters 3 and 7 read",
         state_file="02_training_state.pt",
         needs="about 37 GPU-minutes on one H200 (9,600 steps at the 0.212 s a step ch2_first300 measured there, "
               "and the transition study's 3,000 steps at 0.029 s), in several GPU runs: it resumes"),
    Step("ch3_published", 3, "chapter 3 at the published scale, fine-tuning the model ch2_published trained",
         reads_from="ch2_published",
         needs="about 75 GPU-minutes on one H200 after ch2_published (two more seeds pre-trained as long as "
               "chapter 2's run, then 3 x 100 fine-tuning steps; from ch2_first300's measured step)"),
    Step("ch4_s4_10k", 4, "chapter 4's S4 sweeps of 10,000 seeds (with the bias, as published; the "
         "chapter also trains them without the bias and at the second weight decay), the other "
         "sweeps at a few seeds", CH4_OTHER_SWEEPS_SMALL + (("s5_instances", 1),), label="S4 10k only",
         needs="70 minutes of a 2-core CPU shared with other jobs (measured, 2026-11-29)"),
    Step("ch4_s5_100", 4, "chapter 4's S5 sweep of 100 seeds at d = h = 128, the other sweeps at a few seeds",
         CH4_OTHER_SWEEPS_SMALL + (("s4_instances", 16),), label="S5 100 only"),
    Step("ch4_z35_800", 4, "chapter 4's Z35 pair at the authors' 8 learning rates x 100 seeds, 5,000 epochs, the "
         "other sweeps at a few seeds", tuple(item for item in CH4_OTHER_SWEEPS_SMALL if not item[0].startswith("z35_"))
         + (("z35_book_instances", 2), ("s4_instances", 16), ("s5_instances", 1)), label="Z35 800 only",
         needs="about 15 GPU-minutes on one H200 (8 x 5,000 epochs of 100 seeds at d = h = 128: ch4_s5_100's "
               "measured 0.054 s an epoch of 100 S5 seeds, scaled by the intersections' sizes, 2,940 / 7,920; "
               "not measured)"),
    Step("ch5_measures_grid", 5, "chapter 5's measures along training on the study's grid: a checkpoint every 3 "
         "epochs (667), LLC 5 chains x 3,000 steps, PAC-Bayes 100 / 1,000 draws (the rest at its defaults)",
         (("measures_every", 3), ("measures_sparse_every", 3), ("measures_llc_chains", 5),
          ("measures_llc_steps", 3000), ("pac_bayes_doubling_draws", 100), ("pac_bayes_bisection_draws", 1000)),
         label="measures grid only", published_file=False,
         fixed_estimate=(5400.0, "a guess for one H200, not measured: 667 checkpoints x 15,000 SGLD steps at "
                                 "about 0.3 ms, and the PAC-Bayes searches")),
    Step("ch5_s5_llc", 5, "chapter 5's S5 LLC along training at the study's grid: 3 seeds, an estimate every 10 "
         "epochs, 3 chains x 3,000 steps (the rest at its defaults); the seeds come from the chapter's seed "
         "stream, not one per outcome as the authors chose theirs, so it gives a verdict only if they happen "
         "to cover the outcomes",
         (("s5_seeds", 3), ("s5_every", 10), ("s5_llc_chains", 3), ("s5_llc_steps", 3000)),
         label="S5 LLC only", published_file=False,
         fixed_estimate=(3600.0, "a guess for one H200, not measured: 3 seeds x 200 snapshots x 9,000 SGLD steps "
                                 "at about 0.3 ms")),
    Step("ch6_jacobian_all_directions", 6, "chapter 6's training Jacobian over the authors' 4,000 steps pushed "
         "through all 4,376 directions, so that its singular values are all read, not bounded (the rest of the "
         "chapter at its defaults)", (("sketch_steps", 4000), ("sketch_directions", 4376)),
         label="Jacobian, all directions", published_file=False,
         fixed_estimate=(3600.0, "a guess for one H200, not measured: 137 times the 32 directions ch6_flips_jacobian "
                                 "pushed through 4,000 steps in part of its 20 min on a 2-core CPU")),
    # Steps a 2-core CPU finishes in an hour or two (issue 49): run them in the background with
    # `--device cpu`, commit their folders like the GPU ones.
    Step("ch6_flips_jacobian", 6, "chapter 6's argmax flips at the study's scale (up to 1,000 seeds of each "
         "outcome of ch4_s4_10k's sweep with the bias, 3,000 epochs, snapshots every 5) and its sketched "
         "training Jacobian over the authors' 4,000 steps (the rest of the chapter at its defaults)",
         (("tv_per_outcome", 1000), ("sketch_steps", 4000)), label="flips and Jacobian sketch only",
         reads_from="ch4_s4_10k", published_file=False,
         fixed_estimate=(1230.0, "its wall time on a 2-core CPU shared with other jobs, 2026-11-29")),
    Step("ch1_5000", 1, "chapter 1's study protocol at the study's length: the 5 draws of the damage "
         "nearest the study's 0.403 retrained for 5,000 steps on both constructions",
         (("study_draws", 5),), label="5 draws only",
         fixed_estimate=(8081.0, "its wall time on a 2-core CPU shared with other jobs, 2026-11-29")),
)
STEP_NAMES = [step.name for step in STEPS]


def step_named(name: str) -> Step:
    return next(step for step in STEPS if step.name == name)


# --- Parameters --------------------------------------------------------------------------------

def step_values(step: Step, *, device: str, smoke: bool, results_dir: str) -> dict[str, Any]:
    """What the step's chapter will see: its parameters cell's defaults, then the published YAML,
    the step's overrides, and device, results_dir and smoke, in papermill's order."""
    values = read_parameters_cell(step.source)
    published = (read_yaml_file(str(step.parameters_file)) or {}) if step.published_file else {}
    unknown = sorted((set(published) | {name for name, _ in step.overrides}) - set(values))
    if unknown:
        raise ParameterError(f"{step.parameters_file.relative_to(ROOT)} or step {step.name} sets "
                             f"{', '.join(unknown)}, which chapter {step.chapter} does not have.")
    return {**values, **published, **dict(step.overrides), "device": device, "results_dir": results_dir,
            "smoke": smoke}


def step_config(step: Step, *, device: str, smoke: bool):
    """The step's parameters as its chapter validates them (its dataclass); a bad value raises
    `ParameterError`, one sentence. results_dir is checked on a temporary folder."""
    with tempfile.TemporaryDirectory() as scratch:
        values = step_values(step, device=device, smoke=smoke, results_dir=scratch)
        return validate_parameters(parameters_class(step.source), values)


def papermill_text(value: Any) -> str:
    """A value as `papermill -p name value` passes it (lists as JSON text, which the chapters parse)."""
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value))
    return str(value)


def display_path(path: Path) -> str:
    """`path` relative to the repository when it is inside it (symbolic links kept: the venv's
    python stays .venv/bin/python)."""
    absolute = Path(os.path.abspath(path))
    return str(absolute.relative_to(ROOT)) if absolute.is_relative_to(ROOT) else str(absolute)


def papermill_command(step: Step, notebook: Path, results_dir: Path, device: str, smoke: bool) -> list[str]:
    """The papermill command of a step, run in the repository root (the kernel runs in notebooks/).
    results_dir is given relative to notebooks/ when it is inside the repository."""
    results = os.path.abspath(results_dir)
    if Path(results).is_relative_to(ROOT):
        results = os.path.relpath(results, NOTEBOOKS)
    command = [display_path(Path(sys.executable)), "-m", "papermill", "--no-progress-bar", "--log-level",
               "WARNING", "--cwd", "notebooks", "-k", "python3", display_path(notebook), display_path(notebook)]
    if not smoke:   # a smoke run keeps what it is passed (lib.book.params): it gets the smoke values only
        if step.published_file:
            command += ["-f", display_path(step.parameters_file)]
        for name, value in step.overrides:
            command += ["-p", name, papermill_text(value)]
    if step.state_file:     # passed to smoke runs too: the tests stop and resume one
        command += ["-p", "state_every_s", str(SMOKE_STATE_EVERY_S if smoke else STATE_EVERY_S)]
    command += ["-p", "device", device, "-p", "results_dir", results]
    if smoke:
        command += ["-p", "smoke", "True"]
    return command


# --- The probe ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Loop:
    """A training loop of a step: `units` steps (or epochs) at the rate `probe` measures."""

    what: str
    units: int
    unit: str
    key: Hashable                   # loops with one key share one probe
    probe: Callable[[], float]      # seconds per unit on the device


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def seconds_per_training_step(config) -> float:
    """Seconds per step of `config`'s path-transformer training (its model, batch and sampler)
    on its device: one warm-up step, then up to PROBE_STEPS steps or PROBE_SECONDS (a warm-up
    step longer than PROBE_SECONDS is taken as the measure, a little high)."""
    from lib.paths.training import start_training, train
    probe = dataclasses.replace(config, lr_schedule=((10**9, config.lr_schedule[0][1]),),
                                log_every=10**9, snapshot_every=10**9, eval_size=16)
    device = torch.device(config.device)
    run = start_training(probe)
    started = time.perf_counter()
    train(run, until_step=1, progress=False)
    _synchronize(device)
    if time.perf_counter() - started > PROBE_SECONDS:     # slow: the warm-up step is the measure
        return time.perf_counter() - started
    started, steps = time.perf_counter(), 0
    while steps < PROBE_STEPS and (steps == 0 or time.perf_counter() - started < PROBE_SECONDS):
        train(run, until_step=run.step + 1, progress=False)
        steps += 1
    _synchronize(device)
    return (time.perf_counter() - started) / steps


def seconds_per_sweep_epoch(experiment, seed: int, device: torch.device) -> float:
    """Seconds per epoch of a chapter 4 sweep, all its seeds, on `device`: a one-epoch warm-up,
    then PROBE_EPOCHS epochs (their set-up and two evaluations included, so a little high; a
    warm-up longer than PROBE_SECONDS is taken as the measure)."""
    from lib.book.seed_streams import stream_seeds
    from lib.grokking.pairs import make_pair
    from lib.grokking.sweeps import run_pair_sweep
    pair = make_pair(experiment.pair_name)
    seeds = stream_seeds("sweep", seed, experiment.n_instances)

    def timed(epochs: int) -> float:
        training = dataclasses.replace(experiment.training, epochs=epochs, log_every=epochs, checkpoint_epochs=())
        started = time.perf_counter()
        run_pair_sweep(pair, seeds, experiment.model, training, train_fraction=experiment.train_fraction,
                       generator=torch.Generator().manual_seed(seed), device=device, progress=False)
        _synchronize(device)
        return time.perf_counter() - started

    warm_up = timed(1)
    if warm_up > PROBE_SECONDS:     # slow: the warm-up epoch (with its set-up) is the measure
        return warm_up
    return timed(PROBE_EPOCHS) / PROBE_EPOCHS


def _path_loop(what: str, units: int, config) -> Loop:
    key = ("path", config.n_layers, config.n_min, config.n_max, config.max_vertex_id, config.task,
           config.sampler_options, config.batch_size, config.device)
    return Loop(what, units, "step", key, lambda: seconds_per_training_step(config))


def training_loops(step: Step, config, *, device: str, smoke: bool, steps_done: int = 0) -> list[Loop]:
    """The loops that take a step's time, with their lengths, as its chapter runs them (a resumed
    main run: the `steps_done` its saved state holds left out)."""
    if step.chapter == 2:
        return [_path_loop("main run", config.training.total_steps - steps_done, config.training),
                _path_loop("transition study", config.study_seeds * config.study_steps, config.study)]
    if step.chapter == 3:
        from lib.paths.finetuning import fallback_base_config, finetuning_config
        from lib.paths.length_generalization import training_config
        base = step_config(step_named(step.reads_from), device=device, smoke=smoke).training
        finetuning = finetuning_config(
            base, small_n_max=config.small_n_max, steps=config.finetune_steps,
            batch_size=config.finetune_batch_size, learning_rate=config.finetune_learning_rate,
            weight_decay=config.finetune_weight_decay, eval_size=config.eval_size, seed=config.seed)
        # The notebook pre-trains each further seed as the base model was (in smoke mode, as
        # chapter 2's smoke run), then fine-tunes it.
        replicate = fallback_base_config(seed=config.seed, device=str(config.device), smoke=True) if smoke else base
        length = training_config(config.length_split, n_layers=config.length_n_layers,
                                 batch_size=config.length_batch_size, lr_schedule=config.length_lr_schedule,
                                 seed=config.seed, device=str(config.device))
        return [_path_loop("fine-tuning, every seed", config.n_seeds * config.finetune_steps, finetuning),
                _path_loop("pre-training of the further seeds", (config.n_seeds - 1) * replicate.total_steps,
                           replicate),
                _path_loop("length study", length.total_steps, length)]
    if step.chapter == 4:
        loops = []
        for key, experiment in config.experiments.items():
            probe_key = ("sweep", experiment.pair_name, experiment.n_instances, repr(experiment.model),
                         experiment.train_fraction, str(config.device))
            loops.append(Loop(f"{key} ({experiment.n_instances:,} seeds)", experiment.training.epochs, "epoch",
                              probe_key, lambda e=experiment: seconds_per_sweep_epoch(e, config.seed, config.device)))
        return loops
    raise SystemExit(f"step {step.name}: tools/published.py has no probe for chapter {step.chapter} "
                     f"(add its loops to training_loops).")


@dataclass(frozen=True)
class Estimate:
    seconds: float
    basis: str      # the loops and their probed rates, in words


def estimate_step(step: Step, config, *, device: str, smoke: bool, rates: dict[Hashable, float],
                  steps_done: int = 0) -> Estimate:
    """OVERHEAD_S + SAFETY x (the step's loops at their probed rates); `rates` caches the probes.
    A step with a `fixed_estimate` (its chapter has no probe) takes that, times SAFETY."""
    if step.fixed_estimate is not None:
        seconds, basis = step.fixed_estimate
        return Estimate(SAFETY * seconds, f"{SAFETY} x {duration(seconds)} ({basis})")
    cpu_threads = getattr(config, "cpu_threads", None)
    saved_threads = torch.get_num_threads()
    if cpu_threads and config.device.type == "cpu":
        torch.set_num_threads(cpu_threads)    # as the chapter does on a CPU
    try:
        parts, loop_seconds = [], 0.0
        for loop in training_loops(step, config, device=device, smoke=smoke, steps_done=steps_done):
            if loop.units == 0:
                continue
            if loop.key not in rates:
                rates[loop.key] = loop.probe()
            loop_seconds += loop.units * rates[loop.key]
            parts.append(f"{loop.what} {loop.units:,} {loop.unit}s x {rates[loop.key]:.3g} s")
    finally:
        torch.set_num_threads(saved_threads)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    basis = f"{OVERHEAD_S:.0f} s + {SAFETY} x ({'; '.join(parts)})"
    return Estimate(OVERHEAD_S + SAFETY * loop_seconds, basis)


# --- The plan ----------------------------------------------------------------------------------

def plan(steps: list[Step], done: set[str], estimates: dict[str, float | None], budget_left: float) -> dict[str, str]:
    """What happens to each step, in order: "done", "runs", or why it does not run. A step runs
    when the one it reads from is done or runs before it, and its estimate fits what is left of
    the budget after the steps before it that run; a resumable step (`Step.state_file`) that does
    not fit runs as far as the rest of the budget goes when that is at least `MIN_RESUMED_S`."""
    verdicts, ready, left = {}, set(done), budget_left
    for step in steps:
        estimate = estimates.get(step.name)
        if step.name in done:
            verdicts[step.name] = "done"
        elif step.reads_from and step.reads_from not in ready:
            verdicts[step.name] = f"waits for {step.reads_from}"
        elif estimate is None:
            verdicts[step.name] = "no estimate (see its probe above)"
        elif estimate > left and step.state_file and left >= MIN_RESUMED_S:
            verdicts[step.name] = f"runs as far as the {duration(left)} left go (it resumes: its state is kept)"
            left = 0.0
        elif estimate > left:
            verdicts[step.name] = f"does not fit the {duration(left)} left"
        else:
            verdicts[step.name] = "runs"
            ready.add(step.name)
            left -= estimate
    return verdicts


def duration(seconds: float) -> str:
    """'2 h 5 min', '12 min 5 s', or '40 s'."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


# --- Running a step ----------------------------------------------------------------------------

def results_file(out: Path, step: Step) -> Path:
    """The file whose existence marks a step done: its chapter's results JSON in its folder."""
    return out / step.name / f"{step.source.stem}.json"


def stop_tree(process: subprocess.Popen) -> None:
    """Stop a process this command started and every process below it (papermill's kernel runs
    in a session of its own, so it is found through its parent, not its process group)."""
    try:
        parent = psutil.Process(process.pid)
        tree = parent.children(recursive=True) + [parent]
    except psutil.NoSuchProcess:
        tree = []
    for member in tree:
        try:
            member.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(tree, timeout=10)
    for member in alive:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)
    process.wait()


def run_until(command: list[str], seconds: float, **popen) -> int | None:
    """Run `command`; its exit status, or None when it was stopped after `seconds`."""
    process = subprocess.Popen(command, **popen)
    try:
        return process.wait(timeout=max(seconds, 0.0))
    except subprocess.TimeoutExpired:
        stop_tree(process)
        return None
    except BaseException:
        stop_tree(process)
        raise


def device_description(device: torch.device) -> str:
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        memory = torch.cuda.get_device_properties(index).total_memory / 2**30
        return f"{device} ({torch.cuda.get_device_name(index)}, {memory:.0f} GiB, CUDA {torch.version.cuda})"
    return str(device)


def run_step(step: Step, out: Path, device: torch.device, smoke: bool, estimate: Estimate,
             seconds_left: float) -> str:
    """Execute one step into out/.<step>.partial and rename it to out/<step> when it finished;
    returns "done", "failed" or "stopped" (over the budget: the partial folder is removed, except
    that of a resumable step that saved its state, which the next run continues: commit it).
    Each run of a resumable step is listed in the partial folder's runs.json, then in step.json."""
    partial = out / f".{step.name}.partial"
    state = partial / step.state_file if step.state_file else None
    if not (state and state.exists()):
        shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True, exist_ok=True)
    from_step = (read_progress(state) or {}).get("step", 0) if state else None
    # Chapter 3 reads chapter 2's checkpoint from its results_dir: the folder of the step that
    # wrote it. What the chapter adds there is moved into this step's folder afterwards.
    results_dir = out / step.reads_from if step.reads_from else partial
    before = set(os.listdir(results_dir))
    notebook = partial / f"{step.source.stem}.ipynb"
    command = papermill_command(step, notebook, results_dir, str(device), smoke)
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "jupytext", "--quiet", "--to", "ipynb", "--output", str(notebook),
                    str(step.source)], check=True, cwd=ROOT)
    status = run_until([sys.executable, *command[1:]], seconds_left - (time.monotonic() - started), cwd=ROOT)
    wall = time.monotonic() - started
    added = sorted(set(os.listdir(results_dir)) - before) if step.reads_from else []
    runs = partial / "runs.json"
    if state:
        # A save the stop cut short leaves its temporary file (lib.book.results.save_checkpoint,
        # lib.paths.resumable_run.save_state): the state itself is the last whole one.
        for leftover in [*partial.glob(f".{step.state_file}.*.tmp"), *partial.glob("*_progress.json.partial")]:
            leftover.unlink()
        outcome = "stopped" if status is None else ("failed" if status else "done")
        reached = (read_progress(state) or {}).get("step", 0)
        past = json.loads(runs.read_text()) if runs.exists() else []
        runs.write_text(json.dumps(past + [{
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "device": device_description(device), "machine": machine_description(),
            "code_fingerprint": fingerprint(step.source, ROOT), "wall_s": round(time.monotonic() - started, 1),
            "main_run_steps": [from_step, reached], "outcome": outcome}], indent=2) + "\n")
    if status is None and state and state.exists():
        progress = read_progress(state)
        print(f"{step.name}: stopped after {duration(time.monotonic() - started)}, the budget being spent, at "
              f"step {progress['step']:,} of {progress['total_steps']:,} of its main run; its state is in "
              f"{display_path(partial)}/: commit it, and the same command continues from there.", flush=True)
        return "stopped"
    if status is None or status != 0:
        for name in added:
            target = results_dir / name
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        if status is None:
            shutil.rmtree(partial, ignore_errors=True)
            print(f"{step.name}: stopped after {duration(wall)}, the budget being spent; left unfinished "
                  f"(nothing written).", flush=True)
            return "stopped"
        print(f"{step.name}: failed after {duration(wall)} (papermill exit status {status}); the notebook "
              f"with the error is {display_path(notebook)}.", flush=True)
        return "failed"
    for name in added:
        os.replace(results_dir / name, partial / name)
    if not (partial / f"{step.source.stem}.json").exists():
        print(f"{step.name}: the chapter finished but wrote no {step.source.stem}.json; its notebook is "
              f"{display_path(notebook)}.", flush=True)
        return "failed"
    record = {
        "step": step.name,
        "what": step.what,
        "scale": (f"published, {step.label}" if step.label else "published") + (", smoke run" if smoke else ""),
        "chapter": step.source.stem,
        "command": shlex.join(command),
        "parameters_file": display_path(step.parameters_file),
        "overrides": dict(step.overrides),
        "results_dir": (f"{display_path(results_dir)} (chapter 2's checkpoint, written by step "
                        f"{step.reads_from}; what this chapter wrote there was moved here)"
                        if step.reads_from else f"this folder (during the run {display_path(partial)})"),
        "smoke": smoke,
        "device": device_description(device),
        "wall_s": round(wall, 1),
        "estimate_s": round(estimate.seconds, 1),
        "estimate_basis": estimate.basis,
        "code_fingerprint": fingerprint(step.source, ROOT),
        "machine": machine_description(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if state:   # the run's end is in the chapter's checkpoint: the state has done its work
        record["runs"] = json.loads(runs.read_text())
        record["wall_s"] = round(sum(run["wall_s"] for run in record["runs"]), 1)
        for done_with in (runs, state, progress_path(state)):
            done_with.unlink(missing_ok=True)
    (partial / "step.json").write_text(json.dumps(record, indent=2) + "\n")
    final = out / step.name
    shutil.rmtree(final, ignore_errors=True)     # an unfinished copy left by hand; a done step is never rerun
    os.replace(partial, final)
    print(f"{step.name}: done in {duration(wall)} (estimated {duration(estimate.seconds)}), written to "
          f"{display_path(final)}/", flush=True)
    return "done"


# --- The command -------------------------------------------------------------------------------

def resolve_device(text: str) -> torch.device:
    """The --device argument as a torch.device, or one sentence saying what is wrong."""
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", text):
        raise SystemExit(f"--device must be auto, cpu, cuda or cuda:K; got {text!r}.")
    if text == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(text)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit(f"--device {text} asks for CUDA, which this machine does not have: use "
                             f"--device auto or cpu.")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise SystemExit(f"--device {text}: this machine has {torch.cuda.device_count()} CUDA "
                             f"device(s), numbered from 0.")
    return device


def selected_steps(names: list[str] | None) -> list[Step]:
    """The steps --steps names (names or comma-separated lists), in priority order; all by default."""
    if not names:
        return list(STEPS)
    wanted = [name for text in names for name in text.split(",") if name]
    unknown = [name for name in wanted if name not in STEP_NAMES]
    if unknown:
        raise SystemExit(f"unknown step {unknown[0]!r}: the steps are {', '.join(STEP_NAMES)}.")
    return [step for step in STEPS if step.name in wanted]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda or cuda:K")
    parser.add_argument("--budget-s", type=float, default=600.0,
                        help="seconds this command may take, probes included (default 600)")
    parser.add_argument("--steps", nargs="+", metavar="NAME",
                        help=f"only these steps (default all, in this order): {', '.join(STEP_NAMES)}")
    parser.add_argument("--out", type=Path, default=None,
                        help="where the steps' folders go (default results/published, with --smoke "
                             "results/published-smoke)")
    parser.add_argument("--smoke", action="store_true", help="run every step with smoke=True (tests)")
    parser.add_argument("--plan-only", action="store_true", help="probe, print the plan, run nothing")
    args = parser.parse_args(argv)
    started = time.monotonic()

    # Bad input stops here, with one sentence, before any work.
    if not args.budget_s > 0:
        raise SystemExit(f"--budget-s must be a positive number of seconds; got {args.budget_s:g}.")
    steps = selected_steps(args.steps)
    device = resolve_device(args.device)
    out = (args.out or (SMOKE_OUT if args.smoke else DEFAULT_OUT)).resolve()
    done = set()
    for step in STEPS:
        if results_file(out, step).exists():
            record = out / step.name / "step.json"
            recorded = json.loads(record.read_text()).get("smoke") if record.exists() else None
            if recorded is not None and recorded != args.smoke:
                raise SystemExit(f"{display_path(out / step.name)} holds a {'smoke' if recorded else 'full'} "
                                 f"run, and this is a {'smoke' if args.smoke else 'full'} one: give another "
                                 f"--out or remove that folder.")
            done.add(step.name)
    pending = [step for step in steps if step.name not in done]
    configs = {}
    for step in pending:
        try:
            configs[step.name] = step_config(step, device=str(device), smoke=args.smoke)
        except ParameterError as error:
            raise SystemExit(f"step {step.name}: {error}") from None

    print(f"Published-scale steps on {device_description(device)}, budget {duration(args.budget_s)}"
          f"{', smoke runs' if args.smoke else ''}; results in {display_path(out)}/.", flush=True)
    steps_done = {}
    for step in steps:
        if step.name in done:
            print(f"  {step.name}: done ({display_path(results_file(out, step))} is there): skipped", flush=True)
        elif step.state_file and (progress := read_progress(out / f".{step.name}.partial" / step.state_file)):
            steps_done[step.name] = progress["step"]
            print(f"  {step.name}: its main run is at step {progress['step']:,} of {progress['total_steps']:,} "
                  f"(saved {progress['saved']} on {progress['device']}, after {duration(progress['seconds'])} "
                  f"of training): it continues from there", flush=True)

    # On a GPU, first the study-scale step against the device's matrix units (a minute or so of
    # the budget): the report says which of TF32 and compilation would pay, for a later change.
    if device.type == "cuda" and not args.smoke and pending:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import bench_published_step
        out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M")
        bench_published_step.main(["--device", str(device), "--json", str(out / f"bench_step_{stamp}.json")])

    # The probe: each pending step's loops timed on the device.
    estimates: dict[str, Estimate | None] = {}
    rates: dict[Hashable, float] = {}
    for step in pending:
        probe_started = time.monotonic()
        if probe_started - started > args.budget_s:
            estimates[step.name] = None
            print(f"  {step.name}: not probed, the budget being spent on the probes before it.", flush=True)
            continue
        try:
            estimates[step.name] = estimate_step(step, configs[step.name], device=str(device), smoke=args.smoke,
                                                 rates=rates, steps_done=steps_done.get(step.name, 0))
            print(f"  {step.name}: estimate {duration(estimates[step.name].seconds)} = "
                  f"{estimates[step.name].basis} (probed in {duration(time.monotonic() - probe_started)})",
                  flush=True)
        except Exception as error:  # a probe that fails (out of memory, say) leaves its step out
            estimates[step.name] = None
            print(f"  {step.name}: the probe failed ({type(error).__name__}: {error}); the step will not "
                  f"be started.", flush=True)

    def left() -> float:
        return args.budget_s - (time.monotonic() - started)

    seconds = {name: (e.seconds if e else None) for name, e in estimates.items()}
    verdicts = plan(steps, done, seconds, left())
    print(f"Plan ({duration(left())} of the budget left after the probe; estimate = {OVERHEAD_S:.0f} s + "
          f"{SAFETY} x the probed loops):", flush=True)
    for step in steps:
        estimate = "" if step.name in done or seconds.get(step.name) is None else \
            f", estimate {duration(seconds[step.name])}"
        print(f"  {step.name}: {verdicts[step.name]}{estimate}", flush=True)
    if args.plan_only:
        return 0

    outcomes: dict[str, str] = {}
    for step in pending:
        ready = step.reads_from is None or step.reads_from in done
        estimate = estimates[step.name]
        if not ready or estimate is None:
            outcomes[step.name] = "not started" if estimate else "no estimate"
            continue
        if estimate.seconds > left() and not (step.state_file and left() >= MIN_RESUMED_S):
            outcomes[step.name] = "not started"
            print(f"{step.name}: not started: its estimate, {duration(estimate.seconds)}, is more than the "
                  f"{duration(left())} left.", flush=True)
            continue
        print(f"{step.name}: running ({step.what}; estimate {duration(estimate.seconds)}, "
              f"{duration(left())} left) ...", flush=True)
        outcomes[step.name] = run_step(step, out, device, args.smoke, estimate, left())
        if outcomes[step.name] == "done":
            done.add(step.name)

    finished = [name for name, outcome in outcomes.items() if outcome == "done"]
    rest = [step.name for step in steps if step.name not in done]
    print(f"Finished now: {', '.join(finished) or 'nothing'}. "
          + (f"Still to do: {', '.join(rest)}; run the same command again to resume (finished steps "
             f"are skipped). " if rest else "Every selected step is done. ")
          + f"Results in {display_path(out)}/.", flush=True)
    return 1 if "failed" in outcomes.values() else 0


if __name__ == "__main__":
    sys.exit(main())
