"""How the book is built: from executed copies, never writing the tracked notebooks, with
MyST's cell tags honoured by the offline build."""

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import offline_book  # noqa: E402  (a script folder, not a package)
import sync_notebooks  # noqa: E402


def make_commands(target: str) -> list[str]:
    """The shell lines `make -n target` would run (a dry run: nothing is executed)."""
    run = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True)
    return run.stdout.splitlines()


def test_make_book_executes_copies_under_build_and_leaves_the_tracked_notebooks_alone():
    commands = "\n".join(make_commands("book"))
    assert "papermill" in commands and "_build/executed" in commands
    # The loop writes every chapter to _build/executed/NN.ipynb, made from the .py source...
    assert "jupytext --quiet --to ipynb --output $nb $py" in commands
    assert "nb=_build/executed/" in commands
    # ...and nothing in it syncs or executes the committed .ipynb files.
    assert "sync_notebooks" not in commands and not re.search(r"notebooks/\d\d_\w+\.ipynb", commands)
    assert "build_book.py --notebooks _build/executed --results results" in commands
    assert "results_table.py" not in commands                  # book/index.md is not rewritten


def test_make_notebooks_is_the_explicit_way_to_refresh_the_committed_ones():
    commands = "\n".join(make_commands("notebooks"))
    assert "tools/sync_notebooks.py notebooks/01_handcrafted_bfs.py" in commands
    assert "executing $nb in place" in commands
    assert "tools/results_table.py" in commands                # then the index page's table


def tagged_notebook() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    cells = [("plain", []), ("no-output", ["remove-output"]), ("no-input", ["remove-input"]),
             ("gone", ["remove-cell"])]
    for name, tags in cells:
        cell = nbformat.v4.new_code_cell(f"print('{name} source')", metadata={"tags": tags})
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{name} output\n")]
        notebook.cells.append(cell)
    return notebook


def test_offline_book_honours_remove_output_input_and_cell_tags(tmp_path):
    path = tmp_path / "tagged.ipynb"
    nbformat.write(tagged_notebook(), path)
    _, body = offline_book.render_notebook(path, offline_book.MarkdownRenderer({}))
    assert "plain source" in body and "plain output" in body
    assert "no-output source" in body and "no-output output" not in body
    assert "no-input source" not in body and "no-input output" in body
    assert "gone" not in body


def test_offline_book_reads_a_chapters_executed_copy_when_there_is_one(tmp_path):
    committed = ROOT / "notebooks" / "01_handcrafted_bfs.ipynb"
    assert offline_book.executed_copy(committed, None) == committed
    assert offline_book.executed_copy(committed, tmp_path) == committed       # no copy there
    (tmp_path / committed.name).write_text("{}")
    assert offline_book.executed_copy(committed, tmp_path) == tmp_path / committed.name


def test_build_log_cells_are_tagged_out_of_the_book():
    """The cells that only report where results were written (and the device) keep their output
    in the notebook but not in the book."""
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        writes = [cell for cell in notebook.cells if cell.cell_type == "code" and "write_results(" in cell.source]
        assert writes and all("remove-output" in cell.metadata.get("tags", []) for cell in writes), path.name


def test_bibliography_is_read_with_latex_decoded_and_bad_entries_refused():
    entries = offline_book.parse_bibtex((ROOT / "book" / "references.bib").read_text())
    assert "Kramár, János" in entries["varma2023efficiency"]["author"]     # Kram\'ar, J\'anos in the file
    assert entries["chughtai2023toy"]["type"] == "inproceedings"
    assert offline_book.short_citation(entries["wu2025ambiguous"]) == "Wu & Jaburi, 2025"
    text = "@misc{good, title = {Fine}, year = 2020}\n\n@misc{broken, title = {Unclosed, year = 2021\n"
    with pytest.raises(ValueError, match="could not be read, the first at line 3"):
        offline_book.parse_bibtex(text)


def test_outline_links_every_section_heading_with_unique_ids():
    body = ('<h1>Title</h1><h2 id="setup">Setup</h2><h3 id="data">Data <a class="citation" href="r.html">(W)</a></h3>'
            '<h2 id="setup">Setup</h2>')
    body, outline = offline_book.add_outline(body)
    assert re.findall(r'<h[23] id="([^"]+)"', body) == ["setup", "data", "setup-2"]
    assert re.findall(r'href="#([^"]+)"', outline) == ["setup", "data", "setup-2"]
    assert 'class="citation"' not in outline and "Data (W)" in outline
    assert offline_book.add_outline("<h1>Only a title</h1>") == ("<h1>Only a title</h1>", "")


def test_syncing_a_notebook_takes_new_tags_from_its_source_and_keeps_outputs(tmp_path):
    import jupytext
    source = tmp_path / "01_demo.py"
    source.write_text("# %%\nprint('kept')\n\n# %%\nprint('tagged later')\n")
    notebook = jupytext.read(source)
    for cell in notebook.cells:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="old output\n")]
        cell.metadata["tags"] = []  # as papermill leaves them
    jupytext.write(notebook, source.with_suffix(".ipynb"))
    source.write_text("# %%\nprint('kept')\n\n# %% tags=[\"remove-output\"]\nprint('tagged later')\n")
    synced = nbformat.read(sync_notebooks.sync(source), as_version=4)
    assert [cell.metadata.get("tags") for cell in synced.cells] == [None, ["remove-output"]]
    assert all(cell.outputs[0]["text"] == "old output\n" for cell in synced.cells)
