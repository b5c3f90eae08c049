"""benchmarks/bench_chapter_times.py, in parts (a whole run executes chapters for minutes): the
baseline's files come from git, the reference step is timed, a chapter this checkout lacks stops
the run with one sentence before anything runs."""

import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_chapter_times  # noqa: E402


def test_the_baseline_is_the_commits_own_files(tmp_path):
    exported = bench_chapter_times.export_commit("HEAD", tmp_path / "baseline")
    committed = subprocess.run(["git", "show", "HEAD:notebooks/02_training.py"], cwd=ROOT, check=True,
                               capture_output=True, text=True).stdout
    assert (exported / "notebooks" / "02_training.py").read_text() == committed
    assert (exported / "lib" / "paths" / "training.py").exists()


def test_the_reference_step_is_timed_and_the_thread_count_restored():
    import torch
    threads = torch.get_num_threads()
    assert 0 < bench_chapter_times.reference_step_ms(repeats=1) < math.inf
    assert torch.get_num_threads() == threads


def test_a_chapter_this_checkout_lacks_stops_the_run_at_once():
    run = subprocess.run([sys.executable, "benchmarks/bench_chapter_times.py", "09_missing"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines()[-1] == "No chapter notebooks/09_missing.py in this checkout."


@pytest.mark.parametrize("chapter", bench_chapter_times.CHAPTERS)
def test_the_default_chapters_exist(chapter):
    assert (ROOT / "notebooks" / f"{chapter}.py").exists()
