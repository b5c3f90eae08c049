"""Each notebooks/*.py and its .ipynb hold the same cells; committed .ipynb are executed and small."""

from pathlib import Path

import jupytext
import pytest

from lib.book.code_fingerprint import fingerprint, read_fingerprints

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


def cells(notebook):
    """Each cell's kind, text and tags (papermill's own tag left out)."""
    return [(cell.cell_type, cell.source.strip(),
             sorted(set(cell.metadata.get("tags", [])) - {"injected-parameters"})) for cell in notebook.cells]


def test_there_are_chapters():
    assert SOURCES, "no notebooks/NN_topic.py found"
    assert sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb")) == [p.stem for p in SOURCES]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_pair_is_in_sync(source):
    paired = source.with_suffix(".ipynb")
    assert cells(jupytext.read(source)) == cells(jupytext.read(paired)), \
        f"{source.name} and {paired.name} differ: run `make notebooks` (or `python tools/sync_notebooks.py {source}` and re-execute it)"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_committed_notebook_is_executed_without_errors_and_small(source):
    paired = source.with_suffix(".ipynb")
    assert paired.stat().st_size < 5 * 1024 * 1024
    notebook = jupytext.read(paired)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(cell.get("execution_count") for cell in code), "not every code cell was executed"
    assert any(cell.outputs for cell in code)
    assert not [o for cell in code for o in cell.outputs if o.get("output_type") == "error"]
    assert "parameters" in code[0].metadata.get("tags", []), "first code cell must be tagged `parameters`"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_committed_outputs_come_from_the_current_code(source):
    """Outputs executed before a change to the chapter or to a lib module it uses are stale
    (chapter 2's numbers once drifted that way): the recorded fingerprint must be current."""
    recorded = read_fingerprints(source.parent).get(source.stem)
    assert recorded == fingerprint(source, ROOT), (
        f"{source.stem}.ipynb was executed with other code than its .py and lib hold now: re-execute it "
        f"(`make notebooks`, or papermill on it and `python tools/record_fingerprints.py notebooks/{source.name}`)")
