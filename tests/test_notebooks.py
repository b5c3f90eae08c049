"""Every chapter runs headless with smoke parameters, writes its results, and re-executes stably.

For each notebooks/NN_topic.ipynb: papermill executes it with smoke=True into a temporary
folder (any error fails the test; each notebook runs its own `check_results` before it writes
its results), the results JSON must hold every key that the index's rows of the chapter read
from the committed run's JSON (`lib.book.reproduced.keys_read`), and
nbval (lax mode) then re-executes the executed copy and compares the outputs of the cells
marked `# NBVAL_CHECK_OUTPUT`: numbers that must not change between two runs with one seed (as
shown: `tests/nbval_records.py` has nbval skip a record's full-precision value).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import papermill
import pytest

from lib.book.reproduced import CHAPTERS, keys_read

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def check_chapter_results(name: str, results: dict) -> None:
    """`results` holds every key the index's rows of the chapter read from the committed run's JSON."""
    if name in CHAPTERS:
        committed = json.loads((ROOT / "notebooks" / "results" / f"{name}.json").read_text())
        assert keys_read(name, committed) <= results.keys(), keys_read(name, committed) - results.keys()


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

    # tests/nbval_records.py: compare the text a record shows, not its full-precision value.
    nbval = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "nbval_records", "--nbval-lax",
         "--nbval-kernel-name", "python3", "--nbval-cell-timeout", "300", str(executed)],
        cwd=notebook.parent, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "tests"),
                                                                         os.environ.get("PYTHONPATH")]))})
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
@pytest.mark.parametrize("bad, message", [
    ({"n_vertices": 99}, "Parameter `n_vertices` must be an integer between 2 and 32; got 99."),
    ({"results_dir": "/proc/forbidden/results"},
     "Parameter `results_dir` must be a directory this run can create and write to"),
], ids=["n_vertices", "unwritable_results_dir"])
def test_a_bad_parameter_stops_the_chapter_with_one_sentence(bad, message, tmp_path):
    """A bad value, an unwritable results_dir included, stops the run in the cell that validates
    the parameters, before any computation, with one sentence naming the parameter."""
    notebook = ROOT / "notebooks" / "01_handcrafted_bfs.ipynb"
    parameters = {"smoke": True, "results_dir": str(tmp_path / "results"), **bad}
    with pytest.raises(papermill.PapermillExecutionError) as error:
        papermill.execute_notebook(
            str(notebook), str(tmp_path / "bad.ipynb"), parameters=parameters,
            kernel_name="python3", cwd=str(notebook.parent), progress_bar=False)
    assert error.value.ename == "ParameterError"
    assert message in error.value.evalue and "\n" not in error.value.evalue
    assert "validate_parameters(" in error.value.source
    # What papermill prints last is the sentence alone, not the frames that raised it.
    assert [line for line in error.value.traceback if line.strip()] == [f"ParameterError: {error.value.evalue}"]
    assert not (tmp_path / "results").exists()


def test_a_misspelled_name_stops_and_smoke_keeps_what_was_passed(tmp_path):
    """`-p n_vertex 12` (no such parameter) stops in the parameters cell, naming the closest
    one; `-p smoke True -p n_vertices 6` runs at 6 vertices, not at the smoke value 5."""
    notebook = ROOT / "notebooks" / "01_handcrafted_bfs.ipynb"
    with pytest.raises(papermill.PapermillExecutionError) as error:
        papermill.execute_notebook(
            str(notebook), str(tmp_path / "bad.ipynb"), kernel_name="python3", cwd=str(notebook.parent),
            parameters={"smoke": True, "results_dir": str(tmp_path / "bad"), "n_vertex": 12}, progress_bar=False)
    assert error.value.evalue == "Parameter `n_vertex` is not a parameter of this chapter; did you mean `n_vertices`?"
    assert not (tmp_path / "bad").exists()
    papermill.execute_notebook(
        str(notebook), str(tmp_path / "kept.ipynb"), kernel_name="python3", cwd=str(notebook.parent),
        parameters={"smoke": True, "results_dir": str(tmp_path / "kept"), "n_vertices": 6}, progress_bar=False)
    assert json.loads((tmp_path / "kept" / "01_handcrafted_bfs.json").read_text())["n_vertices"] == 6


@pytest.mark.notebook
def test_nbval_compares_what_a_record_shows_not_its_last_bits(tmp_path):
    """A checked cell whose recorded value differs from the reference in the last bits, but shows
    the same text, passes with tests/nbval_records.py and fails without it."""
    import nbformat
    source = ("# NBVAL_CHECK_OUTPUT\nimport random\nfrom lib.book.record import Record\n"
              "_ = Record()('check.value', 0.25 + random.random() * 1e-12, '.3f')")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "record.ipynb"
    nbformat.write(notebook, path)
    papermill.execute_notebook(str(path), str(path), kernel_name="python3", progress_bar=False)

    def nbval(*plugin):
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "--nbval-lax",
             "--nbval-kernel-name", "python3", str(path)], cwd=tmp_path, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "tests")}).returncode

    assert nbval() == 1 and nbval("-p", "nbval_records") == 0
