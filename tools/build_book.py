"""Build the HTML book into _build/html with Sphinx, MyST-NB and sphinx-book-theme (`make html`).

The book is built offline from the executed notebooks (Sphinx never executes them) and from
myst.yml, the one table of contents: this script stages a Sphinx source folder in
_build/sphinx/src (myst.yml's pages in one folder, each chapter from its executed copy in
`--notebooks` when there is one, else the committed notebook; a references page; the
configuration tools/sphinx/conf.py, which reads myst.yml; the static files: MathJax from the
npm registry's `mathjax` package and plotly.js from the plotly package) and runs Sphinx on it.
No tracked file is written.

    .venv/bin/python tools/build_book.py [--notebooks _build/executed] [--results results] [--output _build/html]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from pathlib import Path

import plotly
import yaml
from sphinx.cmd.build import build_main

import results_table  # a sibling script in tools/ (run as `python tools/build_book.py`)
from lib.book.figure_style import restyle
from lib.book.record import UnknownKey, resolve_notebook
from lib.book.sphinx_outputs import PLOTLY_MIME

ROOT = Path(__file__).resolve().parents[1]
SPHINX_CONF = ROOT / "tools" / "sphinx"
STAGE = ROOT / "_build" / "sphinx"
NPM_CACHE = ROOT / "_build" / "npm"
MATHJAX_VERSION = "3.2.2"   # version 3 is self-contained; version 4 fetches its fonts from a CDN
REFERENCES_PAGE = "# References\n\n```{bibliography}\n```\n"


def executed_copy(source: Path, notebooks: Path | None) -> Path:
    """The notebook to build for toc entry `source`: its executed copy in `notebooks` (what
    `make execute` writes) when there is one, else the committed notebook itself."""
    if notebooks is not None and (notebooks / source.name).exists():
        return notebooks / source.name
    return source


#: The note each chapter page opens with: how to run it live and where its source is.
LAUNCH_HINT = ("```{{tip}}\n**Run this chapter live.** In a clone of the book's repository: `make venv`, then "
               "`.venv/bin/jupyter lab notebooks/{name}.ipynb` (as root, add `--allow-root`); the sliders then "
               "redraw in the live kernel. The download button above gives this notebook with its outputs; its "
               "source is `notebooks/{name}.py`, and `book/setup.md` says how to rerun it at another scale.\n```")


def staged_chapter(notebook: Path, target: Path) -> None:
    """Copy chapter `notebook` to `target` with `LAUNCH_HINT` as a markdown cell after its title
    cell, its parameters cell's input hidden behind a toggle (MyST-NB's hide-input; the source
    keeps the tag list `["parameters"]`, the one `lib.book.params.read_parameters_cell` reads) and
    every plotly figure in the book's figure style (`lib.book.figure_style.restyle`: the style is
    presentation, applied here so that it reaches outputs executed before it existed), and every
    `{{key}}` of its markdown cells replaced by the text its `lib.book.record.Record` calls
    recorded (their display bundles dropped: the prose shows the values). A key no call recorded
    stops the staging with one sentence naming it."""
    content = json.loads(notebook.read_text())
    try:
        resolve_notebook(content, where=notebook.name)
    except UnknownKey as error:
        raise SystemExit(str(error)) from None
    for cell in content["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "parameters" in tags and "hide-input" not in tags:
            tags.append("hide-input")
        for output in cell.get("outputs", []):
            if PLOTLY_MIME in output.get("data", {}):
                output["data"][PLOTLY_MIME] = restyle(output["data"][PLOTLY_MIME])
    hint = {"cell_type": "markdown", "id": "launch-hint", "metadata": {},
            "source": LAUNCH_HINT.format(name=notebook.stem)}
    content["cells"].insert(1, hint)
    target.write_text(json.dumps(content, indent=1))


def stage_sources(src: Path, notebooks: Path | None, index_text: str | None, root: Path = ROOT) -> None:
    """Fill `src` with what Sphinx reads: conf.py, `root`'s myst.yml, every toc page under its file
    name (chapters from their executed copies where present, each with `LAUNCH_HINT` after its
    title; the first page's text replaced by `index_text` when given), the bibliography and the
    references page."""
    config = yaml.safe_load((root / "myst.yml").read_text())["project"]
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    shutil.copy(SPHINX_CONF / "conf.py", src / "conf.py")
    shutil.copy(root / "myst.yml", src / "myst.yml")
    names = [Path(entry["file"]).name for entry in config["toc"]]
    if len(set(names)) != len(names):
        raise SystemExit(f"two pages of myst.yml's toc share a file name: {names}")
    for position, entry in enumerate(config["toc"]):
        source = root / entry["file"]
        target = src / source.name
        if position == 0 and index_text is not None:
            target.write_text(index_text)
        elif source.suffix == ".ipynb":
            staged_chapter(executed_copy(source, notebooks), target)
        else:
            shutil.copy(source, target)
    for bib in config.get("bibliography", []):
        shutil.copy(root / bib, src / Path(bib).name)
    (src / "references.md").write_text(REFERENCES_PAGE)


def mathjax_folder() -> Path:
    """MathJax's browser build (es5/), installed once from the npm registry into _build/npm."""
    es5 = NPM_CACHE / "node_modules" / "mathjax" / "es5"
    if not (es5 / "tex-chtml.js").exists():
        NPM_CACHE.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(NPM_CACHE),
                            f"mathjax@{MATHJAX_VERSION}"], check=True, capture_output=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as error:
            raise SystemExit(f"MathJax could not be installed with npm ({error}); the book needs it for its math.")
    return es5


def stage_static(src: Path) -> None:
    """The book's static files in `src/_static`: its CSS and figure script, plotly.js from the
    installed plotly package and MathJax from npm."""
    static = src / "_static"
    shutil.copytree(SPHINX_CONF / "_static", static)
    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", static / "plotly.min.js")
    shutil.copytree(mathjax_folder(), static / "mathjax")


def build(output: Path = ROOT / "_build" / "html", notebooks: Path | None = None,
          index_text: str | None = None, stage: Path = STAGE, root: Path = ROOT) -> Path:
    """Stage the sources of the book in `root` (default: this repository) in `stage` and build
    the HTML book into `output`; return the index page's path. Sphinx's warnings go to
    `stage/warnings.txt` (a test reads them)."""
    src = stage / "src"
    stage_sources(src, notebooks, index_text, root)
    stage_static(src)
    if output.exists():
        shutil.rmtree(output)
    status = build_main(["-b", "html", "-E", "-q", "--keep-going", "-w", str(stage / "warnings.txt"),
                         "-d", str(stage / "doctrees"), str(src), str(output)])
    if status != 0:
        raise SystemExit(f"Sphinx failed (exit {status}); see {stage / 'warnings.txt'}")
    return output / f"{Path(yaml.safe_load((root / 'myst.yml').read_text())['project']['toc'][0]['file']).stem}.html"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "_build" / "html", help="default: _build/html")
    parser.add_argument("--results", type=Path, default=None,
                        help="folder of the chapters' results JSON: the built index page gets the table of "
                             "published against reproduced numbers from them (book/index.md is not changed)")
    parser.add_argument("--notebooks", type=Path, default=None,
                        help="folder of executed copies of the chapters (`make execute` writes them to "
                             "_build/executed); chapters without one there use the committed notebook")
    args = parser.parse_args()
    notebooks = None if args.notebooks is None else args.notebooks.resolve()
    index_text = None if args.results is None else results_table.index_with_fresh_table(
        args.results.resolve(), (ROOT / "book" / "index.md").read_text())
    start = time.monotonic()
    index = build(args.output.resolve(), notebooks, index_text)
    print(f"HTML book built in {time.monotonic() - start:.0f} s: {index}\n"
          f"Search shows its snippets only when the book is served: .venv/bin/python -m http.server -d "
          f"{args.output} 8000, then open http://127.0.0.1:8000")


if __name__ == "__main__":
    main()
