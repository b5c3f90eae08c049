"""Build the HTML book into _build/html (the `html` step of `make book`).

First tries MyST's own HTML export, whose theme is downloaded on first use. Where that is not
possible (no network), prints one line saying so and builds the offline static book instead
(tools/offline_book.py): same pages, same order, working figures and math, no network needed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import offline_book  # the sibling scripts in tools/ (run as `python tools/build_book.py`)
import results_table

ROOT = offline_book.ROOT


def stage_project(notebooks: Path | None, index: str | None) -> Path:
    """The MyST project to build: the repository itself, or, when `notebooks` holds executed
    copies of the chapters or `index` a fresh index page, a copy of the book's sources in
    _build/site with those in place of the committed ones (so the build never writes to the
    tracked files)."""
    if (notebooks is None or not notebooks.is_dir()) and index is None:
        return ROOT
    site = ROOT / "_build" / "site"
    if site.exists():
        shutil.rmtree(site)
    shutil.copytree(ROOT / "book", site / "book")
    (site / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / "myst.yml", site / "myst.yml")
    for committed in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copy(offline_book.executed_copy(committed, notebooks), site / "notebooks" / committed.name)
    if index is not None:
        (site / "book" / "index.md").write_text(index)
    return site


def try_myst_html(project: Path) -> bool:
    """Run `myst build --html` in `project`; True if it produced the site, which is then moved
    to _build/html."""
    myst = Path(sys.executable).parent / "myst"
    try:
        result = subprocess.run([str(myst), "build", "--html"], cwd=project, capture_output=True, text=True,
                                timeout=600)
    except (OSError, subprocess.SubprocessError):
        return False
    built = project / "_build" / "html"
    if result.returncode != 0 or not (built / "index.html").exists():
        return False
    if project != ROOT:
        target = ROOT / "_build" / "html"
        if target.exists():
            shutil.rmtree(target)
        shutil.move(built, target)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the HTML book.")
    parser.add_argument("--offline", action="store_true", help="skip MyST's theme; build the offline book only")
    parser.add_argument("--output", type=Path, default=ROOT / "_build" / "html",
                        help="folder of the offline book (default: _build/html)")
    parser.add_argument("--results", type=Path, default=None,
                        help="folder of the chapters' results JSON: the built index page gets the table of "
                             "published against reproduced numbers from them (book/index.md is not changed)")
    parser.add_argument("--notebooks", type=Path, default=None,
                        help="folder of executed copies of the chapters (`make execute` writes them to "
                             "_build/executed); chapters without one there use the committed notebook")
    args = parser.parse_args()
    notebooks = None if args.notebooks is None else args.notebooks.resolve()
    index = None if args.results is None else results_table.index_with_fresh_table(
        args.results.resolve(), (ROOT / "book" / "index.md").read_text())
    if not args.offline and try_myst_html(stage_project(notebooks, index)):
        print(f"MyST HTML site built in {ROOT / '_build' / 'html'}")
        return
    if not args.offline:
        print("The MyST theme could not be downloaded (no network), so the offline static HTML book is built instead.")
    built = offline_book.build(args.output, notebooks, {"book/index.md": index} if index else None)
    print(f"Offline HTML book built: {built}")


if __name__ == "__main__":
    main()
