"""The published scale as files (notebooks/published/NN.yaml) and the command that runs it on a GPU
(tools/published.py, `make published`).

Each chapter's YAML is read as `papermill -f` reads it, merged into the chapter's defaults (its
parameters cell) and validated with the chapter's parameters dataclass, as on a machine with CUDA
(the files ask for `device: cuda`): an unknown key or a bad value fails. The steps of
tools/published.py validate the same way; its bad input stops with one sentence before any work;
a smoke run of its first step, on this CPU, writes the step's folder, and a second run skips it.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from papermill.iorw import read_yaml_file

from lib.book.params import ParameterError, read_parameters_cell, validate_parameters
from lib.chapters.registry import parameters_class

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
sys.path.insert(0, str(ROOT / "tools"))

import published  # noqa: E402  (a script folder, not a package)


def published_file(notebook: Path) -> Path:
    return ROOT / "notebooks" / "published" / f"{notebook.name[:2]}.yaml"


def check_published(notebook: Path, values: dict, tmp_path: Path):
    """Validate `values` (a published YAML's keys) as the chapter would after `papermill -f`."""
    defaults = read_parameters_cell(notebook)
    unknown = sorted(set(values) - set(defaults))
    if unknown:
        raise ParameterError(f"{notebook.stem} has no parameter {', '.join(unknown)}.")
    return validate_parameters(parameters_class(notebook), {**defaults, **values, "results_dir": str(tmp_path)})


@pytest.fixture
def as_with_cuda(monkeypatch):
    """The published scale asks for `device: cuda`: validate as on a machine that has it."""
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_published_file_a_chapter_names_exists_and_passes_its_validation(notebook, tmp_path, as_with_cuda):
    path = published_file(notebook)
    # A chapter that reproduces a study names its published scale in its text (papermill -f
    # published/NN.yaml); a chapter of the book's own makes no such file, and needs none.
    if f"published/{path.name}" not in notebook.read_text():
        assert not path.exists(), f"{path.relative_to(ROOT)} exists but {notebook.name} never names it"
        pytest.skip(f"{notebook.stem} names no published scale")
    assert path.exists(), f"{path.relative_to(ROOT)} is missing: {notebook.name} names it as its published scale"
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# "), "the file starts with a comment saying what it reproduces"
    keys = [line.split(":", 1)[0] for line in lines if line.strip() and not line.startswith("#")]
    assert all(key.isidentifier() for key in keys), "one `name: value` per line"
    values = read_yaml_file(str(path))
    assert list(values) == keys and values, "one key per line, each once"
    assert "results_dir" not in values and "smoke" not in values, "the run chooses those"
    check_published(notebook, values, tmp_path)


@pytest.mark.parametrize("text, message", [
    ("n_layerz: 11\n", "has no parameter n_layerz"),
    # YAML 1.1, which papermill reads, takes 1e-4 (no dot) for text, not a number.
    ("learning_rates: [1e-4, 1e-4]\n", "Parameter `learning_rates`"),
    ("n_max: 99\n", "Parameter `n_max`"),
])
def test_an_unknown_key_or_a_bad_value_fails(text, message, tmp_path, as_with_cuda):
    path = tmp_path / "02.yaml"
    path.write_text(text)
    with pytest.raises(ParameterError, match=message):
        check_published(ROOT / "notebooks" / "02_training.py", read_yaml_file(str(path)), tmp_path)


def test_the_steps_validate_and_the_first_is_the_published_run_cut_at_step_300(as_with_cuda):
    assert len(set(published.STEP_NAMES)) == len(published.STEPS)
    for index, step in enumerate(published.STEPS):
        assert step.reads_from is None or step.reads_from in published.STEP_NAMES[:index]
        published.step_config(step, device="cuda", smoke=False)
        published.step_config(step, device="cuda", smoke=True)
    first, full = (published.step_config(published.step_named(name), device="cuda", smoke=False)
                   for name in ("ch2_first300", "ch2_published"))
    assert first.training.lr_schedule == ((300, full.training.lr_schedule[0][1]),)
    assert full.training.total_steps == 9600
    changed = ("learning_rates", "phase_steps", "results_dir")
    assert dataclass_without(first, *changed) == dataclass_without(full, *changed)
    s4 = published.step_config(published.step_named("ch4_s4_10k"), device="cuda", smoke=False)
    s5 = published.step_config(published.step_named("ch4_s5_100"), device="cuda", smoke=False)
    assert s4.s4_instances == 10_000 and s4.unembed_bias and s5.s5_instances == 100 and s5.s5_dim == 128


def dataclass_without(config, *names) -> dict:
    return {k: v for k, v in vars(config).items() if k not in names}


def test_the_plan_keeps_the_order_the_budget_and_what_a_step_reads():
    steps = list(published.STEPS)
    names = published.STEP_NAMES
    estimates = dict(zip(names, [100.0, 5000.0, 300.0, 200.0, None]))
    verdicts = published.plan(steps, set(), estimates, 600.0)
    assert verdicts["ch2_first300"] == "runs"
    # The resumable step that does not fit runs as far as the rest of the budget goes.
    assert verdicts["ch2_published"].startswith("runs as far as the 8 min 20 s left go")
    assert verdicts["ch3_published"] == "waits for ch2_published"
    assert verdicts["ch4_s4_10k"].startswith("does not fit")
    assert verdicts["ch4_s5_100"].startswith("no estimate")
    verdicts = published.plan(steps, {"ch2_first300"}, estimates, 150.0)    # too little to start it
    assert verdicts["ch2_published"].startswith("does not fit")
    assert verdicts["ch4_s4_10k"] == "does not fit the 2 min 30 s left"
    verdicts = published.plan(steps, {"ch2_first300", "ch2_published"}, estimates, 600.0)
    assert verdicts["ch2_published"] == "done" and verdicts["ch3_published"] == "runs"
    assert verdicts["ch4_s4_10k"] == "runs"          # a later step that fits still runs
    assert published.plan(steps, {"ch2_first300", "ch2_published"}, estimates, 450.0)["ch4_s4_10k"] \
        == "does not fit the 2 min 30 s left"


@pytest.mark.parametrize("argv, message", [
    (["--steps", "ch9_everything"], "unknown step 'ch9_everything': the steps are ch2_first300, "),
    (["--budget-s", "0"], "--budget-s must be a positive number of seconds; got 0."),
    (["--budget-s", "-5"], "--budget-s must be a positive number of seconds; got -5."),
    (["--device", "tpu"], "--device must be auto, cpu, cuda or cuda:K; got 'tpu'."),
])
def test_bad_input_gets_one_sentence_before_any_work(argv, message, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as stop:
        published.main([*argv, "--out", str(out)])
    assert str(stop.value.code).startswith(message) and "\n" not in str(stop.value.code)
    assert not out.exists()


def test_cuda_on_a_machine_without_it_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(SystemExit, match=r"^--device cuda asks for CUDA, which this machine does not have"):
        published.main(["--device", "cuda", "--out", str(tmp_path / "out")])


def test_a_command_over_its_time_is_stopped_with_its_children():
    child = ("import subprocess, sys, time; "
             "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)")
    started = time.monotonic()
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert published.run_until([sys.executable, "-c", child], 2.0) is None
    assert time.monotonic() - started < 30
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE]
    assert not left
    assert published.run_until([sys.executable, "-c", "pass"], 30.0) == 0


@pytest.mark.notebook
def test_the_first_step_runs_in_smoke_mode_and_is_skipped_the_second_time(tmp_path):
    command = [sys.executable, str(ROOT / "tools" / "published.py"), "--smoke", "--budget-s", "300",
               "--device", "cpu", "--out", str(tmp_path), "--steps", "ch2_first300"]
    first = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    folder = tmp_path / "ch2_first300"
    assert {"step.json", "02_training.json", "02_training.ipynb", "02_training_checkpoint.pt"} <= \
        {p.name for p in folder.iterdir()}
    record = json.loads((folder / "step.json").read_text())
    assert {"command", "device", "wall_s", "code_fingerprint", "machine", "date"} <= record.keys()
    assert record["smoke"] is True and record["device"] == "cpu" and record["wall_s"] > 0
    # A smoke run is passed neither the published file nor the overrides: a chapter keeps what it is passed.
    assert "-f notebooks/published/02.yaml" not in record["command"] and "-p smoke True" in record["command"]
    assert record["code_fingerprint"] == published.fingerprint(ROOT / "notebooks" / "02_training.py", ROOT)
    assert not list(tmp_path.glob(".*.partial"))

    second = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "ch2_first300: done" in second.stdout and "Finished now: nothing" in second.stdout
    assert json.loads((folder / "step.json").read_text()) == record


#: Keys of chapter 2's results that time the run (they differ between any two runs).
TIMING_KEYS = {"examples_per_second", "sampling_share", "seconds", "wall_s"}


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS and "per_second" not in k}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


@pytest.mark.notebook
def test_a_resumable_step_stopped_mid_run_ends_with_the_numbers_of_an_unbroken_run(tmp_path, monkeypatch):
    def run(out):
        return published.main(["--smoke", "--budget-s", "600", "--device", "cpu", "--out", str(out),
                               "--steps", "ch2_published"])

    assert run(tmp_path / "unbroken") == 0
    state = tmp_path / "broken" / ".ch2_published.partial" / "02_training_state.pt"
    run_to_the_end = published.run_until

    def stopped_mid_run(command, seconds, **popen):
        """Run the step until its main run has saved step 30 or later (of 80), then stop it as
        the budget would."""
        process = subprocess.Popen(command, **popen)
        while process.poll() is None and (published.read_progress(state) or {"step": 0})["step"] < 30:
            time.sleep(0.05)
        published.stop_tree(process)
        return None

    monkeypatch.setattr(published, "run_until", stopped_mid_run)
    assert run(tmp_path / "broken") == 0
    stopped_at = published.read_progress(state)["step"]
    assert 30 <= stopped_at < 80, stopped_at
    assert not (tmp_path / "broken" / "ch2_published").exists()
    monkeypatch.setattr(published, "run_until", run_to_the_end)
    assert run(tmp_path / "broken") == 0
    folder = tmp_path / "broken" / "ch2_published"
    record = json.loads((folder / "step.json").read_text())
    assert [r["outcome"] for r in record["runs"]] == ["stopped", "done"]
    assert record["runs"][1]["main_run_steps"] == [stopped_at, 80]
    assert not state.parent.exists() and not list(folder.glob("*_state*"))
    unbroken = json.loads((tmp_path / "unbroken" / "ch2_published" / "02_training.json").read_text())
    broken = json.loads((folder / "02_training.json").read_text())
    assert without_timings(broken) == without_timings(unbroken)
