"""tools/execute_chapters.py: which chapters `make book` re-executes (code fingerprint against
notebooks/fingerprints.json, plus the upstream chapters whose outputs they read) and what it
copies, on a tiny fake repository; one 1-cell chapter is executed for real with papermill."""

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from lib.book.code_fingerprint import fingerprint

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import execute_chapters  # noqa: E402  (a script folder, not a package)
from execute_chapters import chapter_sources, plan, reuse_chapter  # noqa: E402

#: Chapter 2 reads chapter 1's model from results_dir, as chapter 3 reads chapter 2's checkpoint.
FAKE_DEPENDENCIES = {"02_down": ("01_up", ("01_up_model.pt",))}

CHAPTERS = {
    "01_up": 'from lib.shared import scale\nfrom pathlib import Path\n\n# %%\nPath("x").write_text(str(scale))\n',
    "02_down": "from lib.down import read\n\n# %%\nread()\n",
    "03_alone": "from lib.shared import scale\n\n# %%\nprint(scale)\n",
}
LIB = {
    "__init__.py": "",
    "shared.py": '"""Shared."""\nscale = 2\n',
    "down.py": '"""Reads chapter 1\'s model."""\n\n\ndef read():\n    """Read it."""\n    return 1\n',
}


#: The jupytext header of a chapter: the kernel papermill starts.
KERNEL_HEADER = ("# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3\n#     language: python\n"
                 "#     name: python3\n# ---\n\n")


def fake_notebook(text: str = "committed output") -> str:
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell("print(1)", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text=text)]))
    return nbformat.writes(notebook)


@pytest.fixture
def repo(tmp_path):
    """A repository with three chapters, their committed notebooks and results JSON, a `lib`
    package, and every chapter's current fingerprint recorded."""
    (tmp_path / "lib").mkdir()
    for name, text in LIB.items():
        (tmp_path / "lib" / name).write_text(text)
    notebooks = tmp_path / "notebooks"
    (notebooks / "results").mkdir(parents=True)
    for stem, text in CHAPTERS.items():
        (notebooks / f"{stem}.py").write_text("# %%\n" + text)
        (notebooks / f"{stem}.ipynb").write_text(fake_notebook(f"{stem} committed"))
        (notebooks / "results" / f"{stem}.json").write_text(json.dumps({"chapter": stem}))
    record = {stem: {"code": fingerprint(notebooks / f"{stem}.py", tmp_path), "machine": "m"} for stem in CHAPTERS}
    (notebooks / "fingerprints.json").write_text(json.dumps(record))
    return tmp_path


def actions(repo: Path, mode: str = "cached", results: Path | None = None) -> dict[str, str]:
    steps = plan(chapter_sources(repo / "notebooks"), results or repo / "results", mode,
                 dependencies=FAKE_DEPENDENCIES)
    return {step.chapter: step.describe() for step in steps}


REUSED = "reused (fingerprint matches the committed run)"


def test_chapters_whose_code_matches_the_record_are_reused(repo):
    assert actions(repo) == {stem: REUSED for stem in CHAPTERS}
    # A docstring is not code: editing it re-executes nothing.
    (repo / "lib" / "down.py").write_text(LIB["down.py"].replace("Read it.", "Read the model."))
    assert actions(repo) == {stem: REUSED for stem in CHAPTERS}


def test_an_edited_lib_module_re_executes_the_chapters_that_import_it(repo):
    (repo / "lib" / "shared.py").write_text('"""Shared."""\nscale = 3\n')
    assert actions(repo) == {"01_up": "executed (code changed)", "02_down": REUSED,
                             "03_alone": "executed (code changed)"}


def test_a_chapter_without_a_recorded_fingerprint_or_committed_notebook_is_executed(repo):
    record = json.loads((repo / "notebooks" / "fingerprints.json").read_text())
    del record["03_alone"]
    (repo / "notebooks" / "fingerprints.json").write_text(json.dumps(record))
    (repo / "notebooks" / "01_up.ipynb").unlink()
    assert actions(repo) == {"01_up": "executed (no committed notebook)", "02_down": REUSED,
                             "03_alone": "executed (no recorded fingerprint)"}


def test_a_downstream_chapter_gets_its_upstream_executed_when_the_outputs_it_reads_are_missing(repo):
    (repo / "lib" / "down.py").write_text(LIB["down.py"].replace("return 1", "return 2"))
    planned = actions(repo)
    assert planned["02_down"] == "executed (code changed)"
    assert planned["01_up"].startswith("executed (needed by chapter 2: 01_up_model.pt not in ")
    assert planned["03_alone"] == REUSED
    # Executed in order: the upstream first.
    steps = plan(chapter_sources(repo / "notebooks"), repo / "results", dependencies=FAKE_DEPENDENCIES)
    assert [s.chapter for s in steps if s.execute] == ["01_up", "02_down"]
    # With chapter 1's outputs already in results/, chapter 1 stays reused.
    (repo / "results").mkdir()
    (repo / "results" / "01_up_model.pt").write_text("model")
    assert actions(repo)["01_up"] == REUSED


def test_the_upstream_is_added_even_when_only_the_downstream_chapter_was_asked_for(repo):
    (repo / "lib" / "down.py").write_text(LIB["down.py"].replace("return 1", "return 2"))
    steps = plan(chapter_sources(repo / "notebooks", ["2"]), repo / "results", dependencies=FAKE_DEPENDENCIES)
    assert [(s.chapter, s.execute) for s in steps] == [("01_up", True), ("02_down", True)]


def test_mode_all_executes_every_chapter(repo):
    assert all(text.startswith("executed") for text in actions(repo, "all").values())


def test_a_reused_chapter_copies_its_committed_notebook_and_results_json(repo):
    out, results = repo / "_build" / "executed", repo / "results"
    steps = {s.chapter: s for s in plan(chapter_sources(repo / "notebooks"), results,
                                        dependencies=FAKE_DEPENDENCIES)}
    results.mkdir()
    (results / "02_down.json").write_text('{"fresh": true}')          # already there: kept
    (repo / "notebooks" / "results" / "03_alone.json").unlink()       # none committed
    notes = {stem: reuse_chapter(step, out, results) for stem, step in steps.items()}
    for stem in CHAPTERS:
        assert (out / f"{stem}.ipynb").read_bytes() == (repo / "notebooks" / f"{stem}.ipynb").read_bytes()
    assert json.loads((results / "01_up.json").read_text()) == {"chapter": "01_up"}
    assert notes["01_up"].startswith("results JSON: copied")
    assert json.loads((results / "02_down.json").read_text()) == {"fresh": True}
    assert notes["02_down"].startswith("results JSON: kept")
    assert not (results / "03_alone.json").exists() and "none committed" in notes["03_alone"]
    assert not list(out.glob(".*partial")) and not list(results.glob(".*partial"))


def test_bad_input_stops_with_one_sentence_before_any_work(repo, tmp_path):
    with pytest.raises(SystemExit, match="unknown chapter '09': the chapters are 01_up, 02_down, 03_alone"):
        chapter_sources(repo / "notebooks", ["09"])
    with pytest.raises(SystemExit, match="no notebooks folder at"):
        chapter_sources(tmp_path / "nowhere")
    assert [s.stem for s in chapter_sources(repo / "notebooks", ["03_alone", "notebooks/01_up.py", "1"])] == [
        "01_up", "03_alone"]
    (repo / "results").mkdir()
    (repo / "results" / "old.json").write_text("{}")
    with pytest.raises(SystemExit, match="--mode all executes from nothing, but .* is not empty"):
        execute_chapters.main(["--mode", "all", "--notebooks", str(repo / "notebooks"),
                               "--out", str(repo / "out"), "--results", str(repo / "results")])
    assert not (repo / "out").exists()


def test_the_dependency_map_names_real_chapters_and_what_they_read():
    stems = {path.stem: path for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.py")}
    readers = {"03_finetuning_generalization": "ensure_base_model", "07_learned_circuit": "ensure_base_model",
               "05_complexity": "load_s4_sweep", "06_determination": "load_s4_sweep",
               "08_representations": "load_s4_sweep"}
    assert set(execute_chapters.DEPENDENCIES) == set(readers)
    for chapter, (upstream, files) in execute_chapters.DEPENDENCIES.items():
        assert chapter in stems and upstream in stems and upstream < chapter
        assert readers[chapter] in stems[chapter].read_text()
        assert all(name.startswith(upstream[:2] + "_") for name in files), files


def test_an_executed_chapter_is_written_whole_with_its_results_and_its_time(tmp_path, capsys):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    # One cell, the parameters cell itself: it writes the results JSON.
    (notebooks / "01_one.py").write_text(
        KERNEL_HEADER + '# %% tags=["parameters"]\nresults_dir = "../results"\nimport pathlib; '
        'pathlib.Path(results_dir).mkdir(exist_ok=True); '
        '(pathlib.Path(results_dir) / "01_one.json").write_text("{}")\n')
    out, results = tmp_path / "_build" / "executed", tmp_path / "results"
    execute_chapters.main(["--notebooks", str(notebooks), "--out", str(out), "--results", str(results)])
    printed = capsys.readouterr().out
    assert "01_one: executed (no recorded fingerprint) in " in printed
    assert "`make reproduce`" in printed.splitlines()[-1]
    executed = nbformat.read(out / "01_one.ipynb", as_version=4)
    assert len(executed.cells) == 1 and "injected-parameters" not in executed.cells[0].metadata.get("tags", [])
    assert (results / "01_one.json").read_text() == "{}"
    assert sorted(p.name for p in out.iterdir()) == ["01_one.ipynb", "timings.md"]   # no partial file left
    assert "| 01_one |" in (out / "timings.md").read_text()


def test_a_chapter_that_stops_ends_the_output_with_its_error_and_no_papermill_traceback(tmp_path, capfd):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    sentence = "Parameter `n_vertices` must be an integer between 2 and 32; got -3."
    (notebooks / "01_bad.py").write_text(
        KERNEL_HEADER + '# %% tags=["parameters"]\nresults_dir = "../results"\n\n# %%\n'
        'class ParameterError(ValueError):\n    pass\n\n\n'
        f'raise ParameterError({sentence!r})\n')
    out, results = tmp_path / "_build" / "executed", tmp_path / "results"
    with pytest.raises(SystemExit) as stopped:
        execute_chapters.main(["--notebooks", str(notebooks), "--out", str(out), "--results", str(results)])
    message = str(stopped.value.code)
    assert message.splitlines()[-1] == f"ParameterError: {sentence}"
    assert message.startswith("01_bad failed after ") and "01_bad.partial.ipynb" in message
    printed = capfd.readouterr()
    assert "Traceback" not in printed.out + printed.err and "PapermillExecutionError" not in printed.out + printed.err
    assert not (out / "01_bad.ipynb").exists()


def test_the_makefile_targets_call_the_tool():
    commands = subprocess.run(["make", "-n", "-B", "execute", "reproduce", "notebooks"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout
    assert "tools/execute_chapters.py --mode cached --out _build/executed --results results" in commands
    assert "tools/execute_chapters.py --mode all --out _build/reproduce --results _build/reproduce/results" in commands
    assert "tools/verdict_stability.py notebooks/results _build/reproduce/results" in commands
    assert "cp results/$(basename ${nb%.ipynb}).json notebooks/results/" in commands
