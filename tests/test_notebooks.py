"""Every chapter runs headless with smoke parameters, writes its results, and re-executes stably.

For each notebooks/NN_topic.ipynb: papermill executes it with smoke=True into a temporary
folder (any error fails the test), the results JSON must hold the chapter's required keys, and
nbval (lax mode) then re-executes the executed copy and compares the outputs of the cells
marked `# NBVAL_CHECK_OUTPUT`: numbers that must not change between two runs with one seed.
"""

import json
import subprocess
import sys
from pathlib import Path

import papermill
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

#: Keys each chapter's results JSON must contain (beyond these, chapters may write more).
REQUIRED_KEYS = {
    "01_handcrafted_bfs": {"handcrafted_mse", "handcrafted_max_abs_error", "n_graphs", "perturbation"},
    "02_training": {"final_loss", "loss_by_length", "transition_step_by_length", "n_parameters", "steps",
                    "examples_per_second"},
    "03_finetuning_generalization": {"finetune_loss_before", "finetune_loss_after", "generalization",
                                     "length_generalization"},
    "04_ambiguous_grokking": {"pairs", "subsample", "intersection_sizes", "published_intersection_sizes"},
    "05_complexity": {"outcomes", "correlations", "aucs", "llc_over_training", "s5_llc_over_training",
                      "tracking_over_time", "regression_check", "sgld"},
    "06_determination": {"decision_epochs", "total_variation", "transplant", "jacobian", "early_prediction",
                         "perturbation", "outcome_counts"},
    "07_learned_circuit": {"models", "probes", "probes_random_init", "reach_radius", "attention", "ablation",
                           "patching", "shortcut_correlations", "hand_built", "conclusions"},
}


def check_chapter_results(name: str, results: dict) -> None:
    """Chapter-specific checks of the results JSON beyond the required keys."""
    assert REQUIRED_KEYS[name] <= results.keys(), REQUIRED_KEYS[name] - results.keys()
    if name == "01_handcrafted_bfs":
        assert results["handcrafted_mse"] < 1e-6 and results["n_graphs"] > 0
        assert all({"scale", "loss_before", "loss_after"} <= r.keys() for r in results["perturbation"])
    if name == "02_training":
        assert results["n_parameters"] > 0 and results["steps"] > 0 and results["examples_per_second"] > 0
        assert isinstance(results["loss_by_length"], dict) and isinstance(results["transition_step_by_length"], dict)
    if name == "03_finetuning_generalization":
        assert results["finetune_loss_after"] < results["finetune_loss_before"]
        assert len(results["generalization"]) == 5
        assert all({"test", "mse", "accuracy", "published_mse"} <= r.keys() for r in results["generalization"])
        assert all({"n_vertices", "distance", "mse"} <= r.keys() for r in results["length_generalization"])
    if name == "05_complexity":
        assert results["regression_check"]["estimate"] > 0
        assert all({"group", "count", "llc", "train_loss", "weight_norm", "efficiency_loss"} <= o.keys()
                   for o in results["outcomes"])
        assert sum(o["count"] for o in results["outcomes"]) == results["n_measured"]
        assert {t["measure"] for t in results["tracking_over_time"]} >= {"llc", "train_loss", "path_norm"}
        s5 = results["s5_llc_over_training"]
        assert len(s5["llc"]) == len(s5["seeds"]) and all(len(row) == len(s5["epochs"]) for row in s5["llc"])
    if name == "06_determination":
        assert all({"seed", "outcome", "choice_epoch", "decision_epoch", "lead_epochs"} <= r.keys()
                   for r in results["decision_epochs"])
        assert {r["first_group"] for r in results["transplant"]} == {"S4", "A4xZ2"}
        assert all({"ungrokked_share", "regrokked_share"} <= r.keys() for r in results["transplant"])
        jacobian = results["jacobian"]
        assert jacobian["finite_difference_error"] < 1e-4
        assert all(r["top_singular_value"] == 1.0 for r in jacobian["spectra"] if r["length"] == 0)
        prediction = results["early_prediction"]
        assert len(prediction["auc_either"]) == len(prediction["epochs"]) == len(prediction["auc_group"])
        assert all("published_flip_rate" in r for r in results["total_variation"]["by_outcome"])
    if name == "07_learned_circuit":
        assert results["hand_built"]["hand_built_mse"] < 1e-6
        for depth, probes in results["probes"].items():
            for fact, grid in probes["accuracy"].items():
                assert len(grid["accuracy"]) == int(depth) + 1 and len(grid["accuracy"][0]) == len(grid["ks"])
        assert {r["component"] for r in results["ablation"]} >= {"none", "layer 1 head 1", "layer 1 MLP"}
        assert len(results["patching"]["probe"]) == len(results["patching"]["token"]) > 0
    if name == "04_ambiguous_grokking":
        assert results["intersection_sizes"] == results["published_intersection_sizes"]
        for pair in results["pairs"]:
            assert {"name", "n_elements", "intersection_size", "n_instances", "epochs", "fraction_g1",
                    "fraction_g2", "fraction_neither"} <= pair.keys()


@pytest.mark.notebook
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_runs_headless_in_smoke_mode(notebook, tmp_path):
    executed = tmp_path / notebook.name
    results_dir = tmp_path / "results"
    papermill.execute_notebook(
        str(notebook), str(executed), parameters={"smoke": True, "results_dir": str(results_dir)},
        kernel_name="python3", cwd=str(notebook.parent), progress_bar=False)
    results = json.loads((results_dir / f"{notebook.stem}.json").read_text())
    check_chapter_results(notebook.stem, results)
    assert not list(results_dir.glob(".*.tmp")), "a temporary file was left in results_dir"

    nbval = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
         "--nbval-kernel-name", "python3", "--nbval-cell-timeout", "300", str(executed)],
        cwd=notebook.parent, capture_output=True, text=True)
    assert nbval.returncode == 0, nbval.stdout[-4000:] + nbval.stderr[-2000:]


#: Parts of the names of results keys that measure time (seconds, rates per second, elapsed
#: time, chapter 2's share of the time spent drawing graphs): they differ between two runs.
TIMING_WORDS = ("second", "elapsed", "sampling_share")


def without_timings(value):
    """`value` (parsed JSON) without the entries whose keys name a timing, at any depth."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items()
                if not any(word in k for word in TIMING_WORDS)}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


#: Chapters whose smoke run is repeated: chapter 2 streams its graphs from DataLoader worker
#: processes, chapter 5 spreads its SGLD chains and its training over worker processes, chapter
#: 7 fits its probes with L-BFGS and trains a model of another depth.
RERUN_CHAPTERS = ["02_training", "05_complexity", "07_learned_circuit"]


@pytest.mark.notebook
@pytest.mark.parametrize("name", RERUN_CHAPTERS)
def test_same_seed_gives_the_same_results_twice(name, tmp_path):
    """Two smoke runs of a chapter with one seed write the same results JSON, number for number
    (timings aside)."""
    notebook = ROOT / "notebooks" / f"{name}.ipynb"
    runs = []
    for run in ("first", "second"):
        results_dir = tmp_path / run
        papermill.execute_notebook(
            str(notebook), str(tmp_path / f"{run}.ipynb"),
            parameters={"smoke": True, "results_dir": str(results_dir)},
            kernel_name="python3", cwd=str(notebook.parent), progress_bar=False)
        runs.append(without_timings(json.loads((results_dir / f"{name}.json").read_text())))
    assert runs[0] == runs[1]


@pytest.mark.notebook
def test_a_bad_parameter_stops_the_chapter_with_one_sentence(tmp_path):
    notebook = ROOT / "notebooks" / "01_handcrafted_bfs.ipynb"
    with pytest.raises(papermill.PapermillExecutionError) as error:
        papermill.execute_notebook(
            str(notebook), str(tmp_path / "bad.ipynb"),
            parameters={"smoke": True, "n_vertices": 99, "results_dir": str(tmp_path / "results")},
            kernel_name="python3", cwd=str(notebook.parent), progress_bar=False)
    assert error.value.ename == "ParameterError"
    assert "Parameter `n_vertices` must be an integer between 2 and 32; got 99." in error.value.evalue
    assert not (tmp_path / "results").exists()
