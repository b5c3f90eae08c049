"""benchmarks/bench_chapter_1_2_steps.py --quick (a few seconds) reports every timing and ratio,
finite and positive, and the constructions' softmax it times agrees with torch's."""

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_quick_run_reports_every_timing_and_ratio(tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, "benchmarks/bench_chapter_1_2_steps.py", "--quick", "--json", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    assert set(report["seconds"]) == {
        "retrain_step_study", "retrain_step_book", "retrain_step_study_torch_softmax",
        "retrain_step_book_torch_softmax", "softmax_torch", "softmax_underflow_free", "exp_normal",
        "exp_underflow", "encoder_step_1_threads", "encoder_step_2_threads", "encoder_eval",
        "encoder_eval_all_slots", "study_step", "study_eval", "study_eval_all_slots",
        "encoder_step_width_buckets", "study_step_width_buckets"}
    assert all(math.isfinite(v) and v > 0 for v in [*report["seconds"].values(), *report["ratios"].values(),
                                                     *report["core_seconds"].values()])
    assert len(report["core_seconds"]) == 3
    # Two processes that keep runs whole cannot beat two perfectly shared cores.
    assert report["chapter_2_two_process_seconds"] >= sum(list(report["core_seconds"].values())[1:]) / 2
    assert report["softmax_difference"] < 1e-6


def test_the_two_process_schedule_keeps_runs_whole():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_chapter_1_2_steps import two_process_schedule
    assert two_process_schedule(197, 40.5, 10) == 197 + 3 * 40.5      # chapter 2 at this session's times
    assert two_process_schedule(100, 50, 2) == 100                    # the seeds beside the main run
    assert two_process_schedule(0, 10, 3) == 20
