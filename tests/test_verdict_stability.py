"""The verdict-stability check (tools/verdict_stability.py): which index verdicts moved between
two runs, from results folders or index pages, on hand-made rows and on two smoke runs of
chapter 4 with different seeds."""

import importlib.util
import json
from pathlib import Path

import papermill
import pytest

from lib.book.reproduced import Reproduced, reproduced_table

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("verdict_stability", ROOT / "tools" / "verdict_stability.py")
stability = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stability)


def test_the_conclusions_a_chapter_records_as_words_are_compared_by_key(tmp_path):
    for side, word in (("old", "disputed"), ("new", "4")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "07_learned_circuit.json").write_text(json.dumps({"recorded": {
            "radii.layer_3": {"value": word, "format": None, "text": word},
            "probes.auc": {"value": 0.9 if side == "old" else 0.8, "format": ".2f", "text": "0.9"}}}))
    before, after = (stability.conclusions_from_results(tmp_path / side) for side in ("old", "new"))
    assert before == {(7, "radii.layer_3"): ("disputed", "")}       # numbers are not conclusions
    assert [(c["quantity"], c["old"], c["new"]) for c in stability.compare(before, after)] == [
        ("radii.layer_3", "disputed", "4")]


def test_moved_verdicts_and_rows_of_one_run_are_reported_but_numbers_alone_do_not_move_a_row():
    old = {(4, "a"): ("reproduced", "48"), (4, "b"): ("differs", "1"), (6, "c"): ("pending", "")}
    new = {(4, "a"): ("reproduced", "55"), (4, "b"): ("too few events", "2"), (5, "d"): ("differs", "3")}
    changes = stability.compare(old, new)
    assert [(c["chapter"], c["quantity"], c["old"], c["new"]) for c in changes] == [
        (4, "b", "differs", "too few events"), (5, "d", None, "differs"), (6, "c", "pending", None)]
    assert changes[0]["old_book"] == "1" and changes[0]["new_book"] == "2"


def test_both_layouts_of_the_index_page_are_read():
    old_layout = ("| chapter | quantity | the study | this book | this run's scale | verdict |\n|---|---|---|---|---|---|\n"
                  "| 4 | Z48xZ2 vs Z48x\\|25Z2: which | only Z48xZ2 | 4 of 4 | 4 seeds | reproduced (no seed) |\n")
    rows = [Reproduced(4, "Z48xZ2 vs Z48x|25Z2: which", "only Z48xZ2", "4 of 4", "4 seeds", "reproduced (no seed)",
                       "reproduced"),
            Reproduced(6, "flips", "5.4e-05", "0.00022", "50 seeds", "too few events: 2 of 50", "too few events")]
    assert stability.rows_from_page(old_layout) == {(4, "Z48xZ2 vs Z48x|25Z2: which"): ("reproduced", "4 of 4")}
    new_layout = stability.rows_from_page(reproduced_table(rows, smoke=False))
    assert new_layout == {(4, "Z48xZ2 vs Z48x|25Z2: which"): ("reproduced", "4 of 4"),
                          (6, "flips"): ("too few events", "0.00022")}
    assert stability.compare(stability.rows_from_page(old_layout), new_layout)[0]["new"] == "too few events"


@pytest.mark.notebook
def test_two_smoke_runs_with_different_seeds_are_compared_row_by_row(tmp_path, capsys):
    notebook = ROOT / "notebooks" / "04_ambiguous_grokking.ipynb"
    for seed in (0, 1):
        papermill.execute_notebook(str(notebook), str(tmp_path / f"seed{seed}.ipynb"),
                                   parameters={"smoke": True, "seed": seed, "results_dir": str(tmp_path / f"seed{seed}")},
                                   kernel_name="python3", cwd=str(notebook.parent), progress_bar=False)
    assert json.loads((tmp_path / "seed1" / "04_ambiguous_grokking.json").read_text())["seed"] == 1
    assert stability.main([str(tmp_path / "seed0"), str(tmp_path / "seed1")]) == 0
    rows = len(stability.rows_from_results(tmp_path / "seed0"))
    summary = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(f"{rows} rows in both"))
    assert summary.startswith(f"{rows} rows in both runs, ") and "(verdict words compared); 0 in one run only" in summary
    with pytest.raises(SystemExit, match="neither a results folder nor an index page"):
        stability.main([str(tmp_path / "missing"), str(tmp_path / "seed1")])
