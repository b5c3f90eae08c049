"""How the book is built: from executed copies, never writing the tracked notebooks, by Sphinx
with MyST-NB from myst.yml (tools/build_book.py): cell tags honoured, equations numbered and
referenced, citations and footnotes resolved, figures drawn from their JSON, no warnings."""

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import build_book  # noqa: E402  (a script folder, not a package)
from lib.book.record import RECORD_MIME  # noqa: E402
from lib.book.sphinx_outputs import WIDGET_NOTE  # noqa: E402
import sync_notebooks  # noqa: E402


def make_commands(target: str) -> list[str]:
    """The shell lines `make -n target` would run (a dry run: nothing is executed)."""
    run = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True)
    return run.stdout.splitlines()


def test_make_book_executes_copies_under_build_and_leaves_the_tracked_notebooks_alone():
    commands = "\n".join(make_commands("book"))
    # tools/execute_chapters.py writes every chapter to _build/executed (executed from its .py, or
    # the committed notebook copied when its code fingerprint matches; tests/test_execute_chapters.py)...
    assert "tools/execute_chapters.py --mode cached --out _build/executed --results results" in commands
    # ...and nothing in the recipe syncs or executes the committed .ipynb files.
    assert "sync_notebooks" not in commands and not re.search(r"notebooks/\d\d_\w+\.ipynb", commands)
    assert "build_book.py --notebooks _build/executed --results results" in commands
    assert "results_table.py" not in commands                  # book/index.md is not rewritten


def test_make_notebooks_is_the_explicit_way_to_refresh_the_committed_ones():
    commands = "\n".join(make_commands("notebooks"))
    assert "tools/sync_notebooks.py notebooks/01_handcrafted_bfs.py" in commands
    assert "executing $nb in place" in commands
    assert "tools/results_table.py" in commands                # then the index page's table
    assert "tools/readme_findings.py" in commands              # and the README's findings


TINY_BOOK = {
    "myst.yml": "version: 1\nproject:\n  title: Tiny\n  bibliography:\n    - refs.bib\n  toc:\n"
                "    - file: pages/index.md\n    - file: pages/01_tags.ipynb\n",
    "refs.bib": "@misc{knuth1984, author = {Knuth, Donald}, title = {Literate Programming}, year = 1984}\n",
    "pages/index.md": "# Tiny\n\nAs {cite:t}`knuth1984` says, see {eq}`eq-energy` and the note.[^n]\n\n"
                      "$$E = m c^2$$ (eq-energy)\n\n[^n]: A footnote.\n\n1. *Tags.* Chapter 1 tags its cells; "
                      "`chapter 1` in code stays.\n",
}


def tagged_notebook() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                 "display_name": "Python 3"},
                                                  "language_info": {"name": "python"}})
    notebook.cells.append(nbformat.v4.new_markdown_cell("# Tags\n\nBack to {eq}`eq-energy`."))
    checked = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint('checked source')")
    checked.outputs = [nbformat.v4.new_output("stream", name="stdout", text="checked output\n")]
    notebook.cells.append(checked)
    cells = [("plain", []), ("no-output", ["remove-output"]), ("no-input", ["remove-input"]),
             ("gone", ["remove-cell"])]
    for name, tags in cells:
        cell = nbformat.v4.new_code_cell(f"print('{name} source')", metadata={"tags": tags})
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{name} output\n")]
        notebook.cells.append(cell)
    figure = nbformat.v4.new_code_cell("figure")
    figure.outputs = [nbformat.v4.new_output("display_data", data={
        "application/vnd.plotly.v1+json": {"data": [{"type": "bar", "y": [1, 2]}], "layout": {"width": 500}},
        "text/plain": "Figure()"})]
    notebook.cells.append(figure)
    # A number recorded by lib.book.record (its display bundle) and a markdown cell that cites it.
    recorded = nbformat.v4.new_code_cell('record("tiny.share", 0.1234, ".1%")')
    recorded.outputs = [nbformat.v4.new_output("display_data", data={
        RECORD_MIME: {"key": "tiny.share", "value": 0.1234, "format": ".1%", "text": "12.3%"},
        "text/plain": "tiny.share = 12.3%"})]
    notebook.cells.append(recorded)
    notebook.cells.append(nbformat.v4.new_markdown_cell("The recorded share is {{ tiny.share }} of the seeds."))
    # A live panel and a tqdm bar, as ipywidgets saves them: views in outputs, models in metadata.
    state = {"panel": {"model_name": "VBoxModel", "state": {"children": []}},
             "bar": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_progress"]}},
             "progress": {"model_name": "FloatProgressModel", "state": {}}}
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": state}}
    for model_id, text in (("bar", "exactness:   0%|          | 0/4"), ("panel", "interactive(children=...)")):
        cell = nbformat.v4.new_code_cell(f"show_{model_id}()")
        cell.outputs = [nbformat.v4.new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": model_id, "version_major": 2, "version_minor": 0},
            "text/plain": text})]
        notebook.cells.append(cell)
    return notebook


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory):
    """A two-page book (a page with a labelled equation, a citation and a footnote; a notebook
    with tagged cells, a plotly figure and a reference back to the equation) built by the same
    code as the real one; its HTML pages by name, and Sphinx's warnings."""
    root = tmp_path_factory.mktemp("tiny")
    for name, text in TINY_BOOK.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    nbformat.write(tagged_notebook(), root / "pages" / "01_tags.ipynb")
    html = build_book.build(root / "html", stage=root / "stage", root=root)
    pages = {path.stem: path.read_text() for path in html.parent.glob("*.html")}
    return pages, (root / "stage" / "warnings.txt").read_text()


def test_the_build_honours_remove_output_input_and_cell_tags(tiny_book):
    body = tiny_book[0]["01_tags"]
    assert "plain source" in body and "plain output" in body
    assert "no-output source" in body and "no-output output" not in body
    assert "no-input source" not in body and "no-input output" in body
    assert "gone" not in body
    assert not tiny_book[1], tiny_book[1]
    # Every chapter page opens with how to run it live and where its source is.
    assert "Run this chapter live." in body and "notebooks/01_tags.ipynb" in body and "notebooks/01_tags.py" in body


def test_the_pages_link_the_chapters_they_mention_and_code_cells_lose_nbvals_markers(tiny_book):
    pages = tiny_book[0]
    # the index's list of chapters and its mention of chapter 1 link to its page; code is left
    assert re.search(r'<a class="reference internal" href="01_tags.html"><span class="std std-doc"><em>Tags\.</em>',
                     pages["index"])
    assert re.search(r'href="01_tags.html"><span class="std std-doc">Chapter 1</span></a> tags its cells', pages["index"])
    # nbval's marker is a test's, not the reader's; the cell and its output stay
    body = pages["01_tags"]
    assert "NBVAL_CHECK_OUTPUT" not in body and "checked source" in body and "checked output" in body
    # the page's tip links the set-up page when the book has one, and promises panels only where
    # the chapter has a live one (this one has)
    assert build_book.PANELS_HINT.split("(")[0].strip("; ") in " ".join(body.split())


def test_chapter_mentions_become_links_outside_code_math_and_links():
    chapters = {2: "02_b.ipynb", 3: "03_c.ipynb", 4: "04_d.ipynb", 5: "05_e.ipynb", 6: "06_f.ipynb"}
    link = build_book.link_chapters
    assert link("Chapter 2's model", chapters) == "[Chapter 2](02_b.ipynb)'s model"
    assert link("chapters 5 and 6 read chapter 4's sweeps", chapters) == \
        "chapters [5](05_e.ipynb) and [6](06_f.ipynb) read [chapter 4](04_d.ipynb)'s sweeps"
    assert link("chapters\n4-6", chapters) == "chapters\n[4](04_d.ipynb)-[6](06_f.ipynb)"
    assert link("in chapter 3", chapters, own=3) == "in chapter 3"                 # the page's own
    assert link("chapter 9 and chapter 2.5", chapters) == "chapter 9 and chapter 2.5"
    for kept in ("`chapter 2`", "$chapter 2$", "[chapter 2](elsewhere.md)", "<!-- chapter 2 -->",
                 "```\nchapter 2\n```", "{{ chapter 2 }}"):
        assert link(kept, chapters) == kept, kept
    assert link("```{tip}\nsee chapter 2\n```", chapters) == "```{tip}\nsee [chapter 2](02_b.ipynb)\n```"
    assert build_book.link_chapter_list("2. *Training.* More.\n9. *Not one.*", chapters) == \
        "2. [*Training.*](02_b.ipynb) More.\n9. *Not one.*"


def test_the_tip_promises_live_panels_only_to_chapters_that_have_one(tmp_path):
    notebook = tagged_notebook()
    nbformat.write(notebook, tmp_path / "01_tags.ipynb")
    assert build_book.has_live_panel(nbformat.read(tmp_path / "01_tags.ipynb", as_version=4))
    notebook.cells = [cell for cell in notebook.cells if "show_panel" not in cell.source]
    nbformat.write(notebook, tmp_path / "01_bar_only.ipynb")
    build_book.staged_chapter(tmp_path / "01_bar_only.ipynb", tmp_path / "staged.ipynb")
    hint = nbformat.read(tmp_path / "staged.ipynb", as_version=4).cells[1].source
    assert "Run this chapter live" in hint and "panel" not in hint and "slider" not in hint
    assert "[the set-up page](setup.md)" in hint


def test_markdown_cites_recorded_numbers_and_the_page_shows_their_text(tiny_book):
    """A `{{key}}` of a markdown cell becomes the text its record gave; the record's own output
    (key = text, for the reader of the .ipynb) is not on the page."""
    body = tiny_book[0]["01_tags"]
    assert "The recorded share is 12.3% of the seeds." in body
    assert "{{ tiny.share }}" not in body and "tiny.share = 12.3%" not in body


def test_a_markdown_cell_citing_an_unrecorded_key_stops_the_staging(tmp_path):
    notebook = tagged_notebook()
    notebook.cells.append(nbformat.v4.new_markdown_cell("A number nobody recorded: {{tiny.missing}}."))
    nbformat.write(notebook, tmp_path / "01_tags.ipynb")
    with pytest.raises(SystemExit) as stopped:
        build_book.staged_chapter(tmp_path / "01_tags.ipynb", tmp_path / "staged.ipynb")
    message = str(stopped.value)
    assert message == ("01_tags.ipynb cites {{tiny.missing}} in a markdown cell, but no record() call of "
                       "its notebook recorded 'tiny.missing'.")
    assert not (tmp_path / "staged.ipynb").exists()


def test_numbered_equation_references_resolve_on_the_page_and_across_pages(tiny_book):
    pages = tiny_book[0]
    assert re.search(r'<a class="reference internal" href="#equation-eq-energy">\(1\)</a>', pages["index"])
    assert re.search(r'<a class="reference internal" href="index.html#equation-eq-energy">\(1\)</a>',
                     pages["01_tags"])
    assert 'id="equation-eq-energy"' in pages["index"]


def test_citations_footnotes_and_figures_render(tiny_book):
    pages = tiny_book[0]
    assert "Knuth" in pages["index"] and "{cite" not in pages["index"]       # {cite:t} became "Knuth [1984]"
    assert "Literate programming" in pages["references"]   # the plain style: sentence case
    assert 'class="footnote-reference brackets"' in pages["index"] and "[^n]" not in pages["index"]
    # The plotly figure is drawn from its JSON by plotly.js served from the book itself.
    assert 'class="plotly-figure" style="max-width: 500px"' in pages["01_tags"]
    assert "Plotly.newPlot" in pages["01_tags"] and '_static/plotly.min.js' in pages["01_tags"]
    # The live panel is a one-line note (it needs a kernel); the progress bar is left out.
    assert pages["01_tags"].count(WIDGET_NOTE) == 1 and "0%|" not in pages["01_tags"]
    assert "interactive(children" not in pages["01_tags"]


def test_the_real_book_builds_without_warnings_from_the_committed_notebooks(tmp_path):
    html = build_book.build(tmp_path / "html", stage=tmp_path / "stage")
    assert not (tmp_path / "stage" / "warnings.txt").read_text().strip()
    names = {path.stem for path in html.parent.glob("*.html")}
    assert {"index", "references", "search", *(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))} <= names
    references = (html.parent / "references.html").read_text()
    assert "Kramár" in references                       # Kram\'ar in references.bib, decoded
    # The two reproduced studies link to where they are published, and to the authors' code.
    assert "lesswrong.com/posts/oRKemL989qyQ6KZTB" in references and "github.com/awestover" in references
    assert 'href="https://github.com/LouisYRYJ/Finite-groups"' in references
    # The index's list of chapters links every chapter from the text, not only from the sidebar.
    index = (html.parent / "index.html").read_text()
    article = index[index.index('<article'):]
    for chapter in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"):
        assert f'href="{chapter.stem}.html"' in article, chapter.stem
    assert "NBVAL_" not in "".join(path.read_text() for path in html.parent.glob("0*.html"))
    # Every chapter hides its parameters and imports behind a toggle (MyST-NB's hide-input tag).
    for chapter in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"):
        assert (html.parent / f"{chapter.stem}.html").read_text().count("tag_hide-input") >= 2, chapter.stem
    for path in html.parent.glob("*.html"):
        text = re.sub(r'<div class="highlight.*?</pre></div>', "", path.read_text(), flags=re.S)  # code cells
        assert "[@" not in text and "{cite" not in text, f"{path.name}: a citation left unresolved"
        assert not re.search(r'<(?:script|link|img)[^>]+(?:src|href)="(?:https?:)?//', text), \
            f"{path.name} loads something from another site"


def test_the_build_reads_a_chapters_executed_copy_when_there_is_one(tmp_path):
    committed = ROOT / "notebooks" / "01_handcrafted_bfs.ipynb"
    assert build_book.executed_copy(committed, None) == committed
    assert build_book.executed_copy(committed, tmp_path) == committed       # no copy there
    (tmp_path / committed.name).write_text("{}")
    assert build_book.executed_copy(committed, tmp_path) == tmp_path / committed.name


def test_build_log_cells_are_tagged_out_of_the_book():
    """The cells that only report where results were written (and the device) keep their output
    in the notebook but not in the book."""
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        writes = [cell for cell in notebook.cells if cell.cell_type == "code" and "write_results(" in cell.source]
        assert writes and all("remove-output" in cell.metadata.get("tags", []) for cell in writes), path.name


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
