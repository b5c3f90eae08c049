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
import re
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
from lib.book.sphinx_outputs import PLOTLY_MIME, WIDGET_STATE_MIME, WIDGET_VIEW_MIME

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


#: The note each chapter page opens with: how to run it live and where its source is. `{panels}`
#: says what the live kernel adds: the chapter's live panels where it has some (`PANELS_HINT`),
#: else nothing is promised; `{setup}` is the set-up page, linked; `{clone}` the repository.
LAUNCH_HINT = ("```{{tip}}\n**Run this chapter live.** In {clone}: `make venv`, then "
               "`.venv/bin/jupyter lab notebooks/{name}.ipynb` (as root, add `--allow-root`), and run all its "
               "cells{panels}. The download button above gives this notebook with its outputs; its source is "
               "`notebooks/{name}.py`, and {setup} says how to rerun it at another scale.\n```")
PANELS_HINT = ("; its interactive panels (where this page says that a control appears in a live kernel) "
               "then recompute in the kernel")
SETUP_PAGE = "setup.md"

#: A mention of chapters in prose: "chapter 2", "Chapter 4's", "chapters 5 and 6", "chapters 4-6",
#: "chapters 2, 5 and 7" (the numbers are group 3).
CHAPTER_MENTION = re.compile(r"\b([Cc]hapters?)(\s+)(\d+(?:(?:\s*(?:,|,?\s+and|,?\s+or|-|–|--)\s*)\d+)*)(?![\d.]*\d)")
#: What a mention inside is left alone: fenced code, code spans and roles, math, links,
#: HTML tags and comments, targets and `{{key}}` placeholders.
_PROTECTED = re.compile(r"(?ms)^(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>[^\n]*)\n.*?^(?P=fence)[ \t]*$"
                        r"|`+[^`]*`+|\$\$.*?\$\$|\$[^$\n]+\$|!?\[[^\]\n]*\]\([^)\n]*\)|<!--.*?-->|<[^>\n]+>"
                        r"|^\([^)\n]*\)=[ \t]*$|\{\{.*?\}\}")
#: Fenced directives whose body is prose (linked inside); any other fence is code or data.
_PROSE_DIRECTIVES = re.compile(r"^\{(?:note|tip|hint|important|warning|caution|attention|danger|error|seealso|"
                               r"admonition|dropdown|margin|sidebar|topic|epigraph|pull-quote)\}")


def link_chapters(text: str, chapters: dict[int, str], own: int | None = None) -> str:
    """Markdown `text` with each mention of a chapter ("chapter 2", "chapters 5 and 6") linked to
    that chapter's page by file name (`chapters`: number -> staged file name), except the page's
    own chapter `own` and mentions in code, math, links, HTML and directives other than prose
    admonitions (whose bodies are linked too)."""
    def mention(match: re.Match) -> str:
        word, space, numbers = match.groups()
        parts = re.split(r"(\d+)", numbers)
        if not any(int(n) in chapters and int(n) != own for n in parts[1::2]):
            return match.group(0)
        if len(parts) == 3:           # one chapter: the whole mention is the link
            return f"[{word}{space}{numbers}]({chapters[int(numbers)]})"
        out = [word, space]
        for k, part in enumerate(parts):
            linked = k % 2 == 1 and int(part) in chapters and int(part) != own
            out.append(f"[{part}]({chapters[int(part)]})" if linked else part)
        return "".join(out)

    out, position = [], 0
    for match in _PROTECTED.finditer(text):
        out.append(CHAPTER_MENTION.sub(mention, text[position:match.start()]))
        block = match.group(0)
        if match.group("fence") and _PROSE_DIRECTIVES.match(match.group("info").strip()):
            first = block.index("\n") + 1
            last = block.rstrip().rindex("\n") + 1
            block = block[:first] + link_chapters(block[first:last], chapters, own) + block[last:]
        out.append(block)
        position = match.end()
    out.append(CHAPTER_MENTION.sub(mention, text[position:]))
    return "".join(out)


#: An item of the index's list of chapters: its number, then its title in emphasis.
_CHAPTER_ITEM = re.compile(r"(?m)^(?P<indent>[ \t]*)(?P<number>\d+)\.(?P<space>[ \t]+)\*(?P<title>[^*\n]+)\*")


def link_chapter_list(text: str, chapters: dict[int, str]) -> str:
    """The root page's list of chapters with each chapter's title (the emphasised words that open
    the item numbered as the chapter) linked to its page."""
    def item(match: re.Match) -> str:
        number = int(match.group("number"))
        if number not in chapters:
            return match.group(0)
        return (f"{match.group('indent')}{number}.{match.group('space')}"
                f"[*{match.group('title')}*]({chapters[number]})")
    return _CHAPTER_ITEM.sub(item, text)


#: A line of a code cell that only marks the cell for nbval (`# NBVAL_CHECK_OUTPUT`): a test's
#: marker, not code a reader needs.
_NBVAL_MARKER = re.compile(r"(?m)^[ \t]*#[ \t]*NBVAL_[A-Z_]+[ \t]*\n?")


def has_live_panel(content: dict) -> bool:
    """Whether notebook `content` shows an ipywidgets panel (a saved widget view that is not
    tqdm's progress bar, a box holding a FloatProgress)."""
    state = content.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE_MIME, {}).get("state", {})
    for cell in content["cells"]:
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW_MIME)
            if not view:
                continue
            children = state.get(view.get("model_id", ""), {}).get("state", {}).get("children", [])
            if not any(state.get(str(c).removeprefix("IPY_MODEL_"), {}).get("model_name") == "FloatProgressModel"
                       for c in children):
                return True
    return False


def repository_url(root: Path = ROOT) -> str | None:
    """The book's own repository: myst.yml's `project.github`, CITATION.cff's top-level
    `repository-code`, or pyproject.toml's [project.urls] Repository / Source (None when none
    of them gives one)."""
    config = yaml.safe_load((root / "myst.yml").read_text())["project"]
    if config.get("github"):
        return str(config["github"])
    citation = root / "CITATION.cff"
    if citation.exists() and (url := (yaml.safe_load(citation.read_text()) or {}).get("repository-code")):
        return str(url)
    pyproject = root / "pyproject.toml"
    if pyproject.exists():
        import tomllib
        urls = tomllib.loads(pyproject.read_text()).get("project", {}).get("urls", {})
        for key in ("Repository", "Source", "repository", "source"):
            if urls.get(key):
                return str(urls[key])
    return None


def staged_chapter(notebook: Path, target: Path, chapters: dict[int, str] | None = None,
                   setup: str | None = SETUP_PAGE, repository: str | None = None) -> None:
    """Copy chapter `notebook` to `target` with `LAUNCH_HINT` as a markdown cell after its title
    cell, its parameters cell's input hidden behind a toggle (MyST-NB's hide-input; the source
    keeps the tag list `["parameters"]`, the one `lib.book.params.read_parameters_cell` reads) and
    every plotly figure in the book's figure style (`lib.book.figure_style.restyle`: the style is
    presentation, applied here so that it reaches outputs executed before it existed), and every
    `{{key}}` of its markdown cells replaced by the text its `lib.book.record.Record` calls
    recorded (their display bundles dropped: the prose shows the values). A key no call recorded
    stops the staging with one sentence naming it. Each mention of another chapter in its
    markdown (`chapters`: number -> staged file name) becomes a link to that chapter's page, and
    nbval's marker lines (`# NBVAL_CHECK_OUTPUT`) leave the code cells."""
    content = json.loads(notebook.read_text())
    try:
        resolve_notebook(content, where=notebook.name)
    except UnknownKey as error:
        raise SystemExit(str(error)) from None
    own = int(m.group(1)) if (m := re.match(r"(\d+)_", notebook.name)) else None
    for cell in content["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "parameters" in tags and "hide-input" not in tags:
            tags.append("hide-input")
        if cell.get("cell_type") == "code":
            source = "".join(cell.get("source", ""))
            if _NBVAL_MARKER.search(source):
                cell["source"] = _NBVAL_MARKER.sub("", source)
        if cell.get("cell_type") == "markdown" and chapters:
            cell["source"] = link_chapters("".join(cell.get("source", "")), chapters, own)
        for output in cell.get("outputs", []):
            if PLOTLY_MIME in output.get("data", {}):
                output["data"][PLOTLY_MIME] = restyle(output["data"][PLOTLY_MIME])
    hint = {"cell_type": "markdown", "id": "launch-hint", "metadata": {},
            "source": LAUNCH_HINT.format(
                name=notebook.stem, panels=PANELS_HINT if has_live_panel(content) else "",
                setup=f"[the set-up page]({setup})" if setup else "the set-up page (`book/setup.md`)",
                clone=f"a clone of the book's repository, <{repository}>" if repository
                else "a clone of the book's repository")}
    content["cells"].insert(1, hint)
    target.write_text(json.dumps(content, indent=1))


def stage_sources(src: Path, notebooks: Path | None, index_text: str | None, root: Path = ROOT) -> None:
    """Fill `src` with what Sphinx reads: conf.py, `root`'s myst.yml, every toc page under its file
    name (chapters from their executed copies where present, each with `LAUNCH_HINT` after its
    title; the first page's text replaced by `index_text` when given, its list of chapters
    linked), the bibliography and the references page. Every mention of a chapter in the pages'
    prose links to that chapter (`link_chapters`)."""
    config = yaml.safe_load((root / "myst.yml").read_text())["project"]
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    shutil.copy(SPHINX_CONF / "conf.py", src / "conf.py")
    shutil.copy(root / "myst.yml", src / "myst.yml")
    names = [Path(entry["file"]).name for entry in config["toc"]]
    if len(set(names)) != len(names):
        raise SystemExit(f"two pages of myst.yml's toc share a file name: {names}")
    chapters = {int(m.group(1)): name for name in names
                if name.endswith(".ipynb") and (m := re.match(r"(\d+)_", name))}
    setup = SETUP_PAGE if SETUP_PAGE in names else None
    repository = repository_url(root)
    for position, entry in enumerate(config["toc"]):
        source = root / entry["file"]
        target = src / source.name
        if source.suffix == ".ipynb":
            staged_chapter(executed_copy(source, notebooks), target, chapters, setup, repository)
            continue
        text = index_text if position == 0 and index_text is not None else source.read_text()
        if position == 0:
            text = link_chapter_list(text, chapters)
        target.write_text(link_chapters(text, chapters))
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
