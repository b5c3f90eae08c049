"""Write the index page's table of published numbers beside this book's (`make notebooks`).

Reads every chapter's results JSON in `--results` (default results/), builds the rows of
`lib.book.reproduced`, and writes the table between the markers of `--page` (default
book/index.md). `make book` does not run this (it leaves the tracked files alone); its HTML
build puts the fresh table into the built index page instead (`tools/build_book.py --results`).

    .venv/bin/python tools/results_table.py [--results results] [--page book/index.md]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lib.book.reproduced import CHAPTERS, reproduced_rows, reproduced_table, with_table

ROOT = Path(__file__).resolve().parents[1]


def index_with_fresh_table(results_dir: Path, page: str) -> str | None:
    """`page` with the table built from the results JSON in `results_dir`; None when there is
    none there."""
    results = {name: json.loads((results_dir / f"{name}.json").read_text())
               for name in CHAPTERS if (results_dir / f"{name}.json").exists()}
    if not results:
        return None
    smoke = any(r.get("smoke") for r in results.values())
    return with_table(page, reproduced_table(reproduced_rows(results), smoke))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--page", type=Path, default=ROOT / "book" / "index.md")
    args = parser.parse_args()
    text = index_with_fresh_table(args.results, args.page.read_text())
    if text is None:
        raise SystemExit(f"no chapter results JSON in {args.results}: execute the chapters first.")
    args.page.write_text(text)
    print(f"table of published against reproduced numbers written to {args.page}")


if __name__ == "__main__":
    main()
