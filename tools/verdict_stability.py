"""Which verdicts and conclusions moved between two runs of the book (on two machines, or with two
seeds): prints every index row whose verdict word changed, every word a chapter recorded for its
prose that changed, and the rows only one run has.

    .venv/bin/python tools/verdict_stability.py notebooks/results results            # committed run vs yours
    .venv/bin/python tools/verdict_stability.py book/index.md _build/reproduce/results

Each side is a folder of chapter results JSON (`make book` writes results/, `make reproduce`
_build/reproduce/results/, the committed run's are in notebooks/results/) or an index page with
the reproduced table (book/index.md). Rows are matched by chapter and quantity; a verdict "moved"
when its word changed (`lib.book.verdict.judge`'s word: "reproduced", "differs", "too few
events", ...; the reasons and numbers after it may change). Between two folders the chapters'
conclusions are compared too: every recorded value of a chapter's prose that is a word, not a
number (`lib.book.record`: the words its rules chose, "holds", "inside", "disputed", a verdict),
matched by chapter and key. Exit status 0, or 1 with `--strict` when a verdict or a conclusion
moved.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lib.book.reproduced import CHAPTERS, reproduced_rows  # noqa: E402

#: A row of the index: (chapter, quantity) -> (verdict, this book's number).
Rows = dict[tuple[int, str], tuple[str, str]]


def _results(folder: Path) -> dict[str, dict]:
    return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("[0-9][0-9]_*.json"))}


def rows_from_results(folder: Path) -> Rows:
    """The index rows built from the chapter results JSON in `folder`: (verdict word, book)."""
    results = {name: value for name, value in _results(folder).items() if name in CHAPTERS}
    return {(r.chapter, r.quantity): (r.word, r.book) for r in reproduced_rows(results)}


def conclusions_from_results(folder: Path) -> Rows:
    """Every word a chapter recorded for its prose (a recorded value that is text, not a number),
    by (chapter, key): (the word, "")."""
    found: Rows = {}
    for name, results in _results(folder).items():
        for key, entry in results.get("recorded", {}).items():
            if isinstance(entry.get("value"), str):
                found[(int(name[:2]), key)] = (entry["value"], "")
    return found


def _cells(line: str) -> list[str]:
    """The cells of one markdown table line ("\\|" inside a cell is a literal bar)."""
    parts = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [part.strip().replace("\\|", "|") for part in parts]


def rows_from_page(text: str) -> Rows:
    """The index rows of a page's reproduced table, in either layout: one table with a chapter
    column, or one table per chapter under a "### Chapter N" heading, verdict word first."""
    rows: Rows = {}
    chapter, header = 0, None
    for line in text.splitlines():
        heading = re.match(r"#+\s*Chapter (\d+)", line)
        if heading:
            chapter, header = int(heading.group(1)), None
        elif line.startswith("|") and header is None:
            header = _cells(line)
        elif line.startswith("|") and not set(line) <= set("|-: "):
            row = dict(zip(header, _cells(line)))
            key = (int(row.get("chapter", chapter)), row["quantity"])
            # an older page's cell holds the whole verdict: its word is the phrase before its reasons
            word = re.split(r" \(|:|;", row["verdict"].strip("*"))[0].strip()
            rows[key] = (word, row.get("this book", ""))
        elif not line.startswith("|"):
            header = None
    return rows


def read_rows(source: Path) -> Rows:
    """Rows from a results folder or an index page; one clear sentence when it is neither."""
    if source.is_dir():
        if not _results(source):
            raise SystemExit(f"{source} holds no chapter results JSON (expected e.g. 04_ambiguous_grokking.json).")
        return rows_from_results(source)
    if source.is_file():
        rows = rows_from_page(source.read_text())
        if not rows:
            raise SystemExit(f"{source} holds no reproduced table.")
        return rows
    raise SystemExit(f"{source} is neither a results folder nor an index page.")


def compare(old: Rows, new: Rows) -> list[dict]:
    """Every row whose word moved, or that only one side has: chapter, quantity, the two words
    (None where missing) and the two numbers."""
    changes = []
    for key in sorted(old.keys() | new.keys()):
        before, after = old.get(key), new.get(key)
        if before and after and before[0] == after[0]:
            continue
        changes.append({"chapter": key[0], "quantity": key[1],
                        "old": before and before[0], "new": after and after[0],
                        "old_book": before and before[1], "new_book": after and after[1]})
    return changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="results folder or index page of the first run")
    parser.add_argument("new", type=Path, help="results folder or index page of the second run")
    parser.add_argument("--strict", action="store_true", help="exit with status 1 when a verdict moved")
    args = parser.parse_args(argv)
    old, new = read_rows(args.old), read_rows(args.new)
    changes = compare(old, new)
    moved = [c for c in changes if c["old"] and c["new"]]
    for c in changes:
        if c["old"] and c["new"]:
            print(f"moved   ch{c['chapter']} {c['quantity']}\n        {c['old']} -> {c['new']}\n"
                  f"        book: {c['old_book']} -> {c['new_book']}")
        else:
            print(f"{'only in ' + ('first' if c['old'] else 'second'):<8} ch{c['chapter']} {c['quantity']}: "
                  f"{c['old'] or c['new']}")
    compared = len(old.keys() & new.keys())
    print(f"{compared} rows in both runs, {len(moved)} moved (verdict words compared); "
          f"{len(changes) - len(moved)} in one run only")
    conclusions_moved = []
    if args.old.is_dir() and args.new.is_dir():
        before, after = conclusions_from_results(args.old), conclusions_from_results(args.new)
        conclusions_moved = [c for c in compare(before, after) if c["old"] and c["new"]]
        for c in conclusions_moved:
            print(f"moved   ch{c['chapter']} recorded {c['quantity']}: {c['old']} -> {c['new']}")
        print(f"{len(before.keys() & after.keys())} recorded words in both runs, {len(conclusions_moved)} moved")
    return 1 if args.strict and (moved or conclusions_moved) else 0


if __name__ == "__main__":
    sys.exit(main())
