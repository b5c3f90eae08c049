"""benchmarks/bench_hot_spots.py --quick (about 30 s) reports every hot spot of issue 37 with finite,
positive numbers. Its values are not checked: the machine running the tests may be busy."""

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The slices of the four hot spots: chapter 4's Z48 sweep, chapter 5's LLC at the end of training
#: and S5 trajectory, chapter 6's sketched Jacobian, chapter 3's seed replicates.
SLICES = ["z48", "z48_one_shard", "llc_end", "s5_train", "s5_llc", "s5_llc_one_shard", "sketch_fwd64",
          "sketch_fwd32", "sketch_bwd64", "ch3_pretrain", "ch3_finetune"]
#: Slices named after chapter 6's widths and numbers of directions ("screen_d32", "sketch_fwd64_k8").
NAMED_AFTER_DEFAULTS = ["screen_d", "sketch_fwd64_k", "sketch_fwd32_k"]
POSITIVE = ["seconds_per_unit", "gflop_per_unit", "gflops", "busy_cores", "times_floor", "floor_seconds_per_unit"]


def finite_positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_quick_run_reports_every_hot_spot(tmp_path):
    out = tmp_path / "hot_spots.json"
    run = subprocess.run([sys.executable, "benchmarks/bench_hot_spots.py", "--quick", "--json", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(out.read_text())
    rows = report["slices"]
    assert set(SLICES) <= set(rows)
    assert all(any(key.startswith(prefix) for key in rows) for prefix in NAMED_AFTER_DEFAULTS)
    table_lines = {line.split()[0]: line for line in run.stdout.splitlines() if line.split()}
    for key, row in rows.items():
        assert key in table_lines, f"{key} is missing from the printed table"
        bad = {name: row[name] for name in POSITIVE if not finite_positive(row[name])}
        assert not bad, f"{key}: {bad}"
        assert math.isfinite(row["estimated_seconds"]) and row["estimated_seconds"] >= 0
    assert all(finite_positive(v) for peaks in report["peaks"].values() for v in peaks.values())
    assert report["baselines"] and all(finite_positive(ratio) for ratio in report["baselines"].values())
    for key, profiled in report["profiles"].items():
        assert len(profiled["top"]) == 3 and 0 <= profiled["counted_share"] <= 1, key
    for name, estimate in report["estimates"].items():
        assert finite_positive(estimate["estimated_seconds"]), name
