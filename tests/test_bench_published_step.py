"""benchmarks/bench_published_step.py on this CPU, at a small size: it reports the products'
throughput and, per variant, finite positive step times, shares and device-minutes. Its values are
not checked: the machine running the tests may be busy."""

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_small_run_reports_every_variant_asked_for(tmp_path):
    out = tmp_path / "step.json"
    run = subprocess.run([sys.executable, "benchmarks/bench_published_step.py", "--device", "cpu", "--batch-size",
                          "32", "--n-layers", "1", "--steps", "1", "--variants", "fp32", "tf32", "--json", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["tokens_per_step"] == 32 * 16 and report["matmul_tflops"]["fp32"] > 0
    assert set(report["variants"]) == {"fp32", "tf32"}
    for numbers in report["variants"].values():
        assert all(math.isfinite(v) and v >= 0 for v in numbers.values())
        assert numbers["seconds_per_step"] > 0 and 0 <= numbers["sampling_share"] <= 1


def test_bad_input_is_one_sentence():
    run = subprocess.run([sys.executable, "benchmarks/bench_published_step.py", "--steps", "0"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines()[-1] == "--steps, --batch-size and --n-layers must be positive integers."
