"""Write the index page's table of published numbers beside this book's (`make notebooks`).

Reads every chapter's results JSON in `--results` (default results/), fills the rows of
book/reproduced/<chapter>.yaml from them (`lib.book.reproduced`), adds the rows of the
published-scale runs committed in `--published`
(default results/published/, written by tools/published.py: one folder per finished step, with
its step.json and its chapter's results JSON; each row says whether its step ran the chapter's
code of today), marks the rows of the steps still to run "pending", with the step, the device
time it needs and how far a resumable one got, and writes the table between the markers of
`--page` (default book/index.md). `make book` does not run this (it leaves the tracked files alone); its HTML
build puts the fresh table into the built index page instead (`tools/build_book.py --results`).

    .venv/bin/python tools/results_table.py [--results results] [--published results/published]
                                            [--page book/index.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lib.book.code_fingerprint import fingerprint
from lib.book.reproduced import (CHAPTERS, PUBLISHED_STEPS, published_rows, reproduced_rows, reproduced_table,
                                 waiting_rows, with_table)
from lib.paths.resumable_run import read_progress

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "results" / "published"
sys.path.insert(0, str(ROOT / "tools"))

import published  # noqa: E402  (tools/published.py: the steps, their device time)


def published_steps(folder: Path) -> dict[str, tuple[dict, dict]]:
    """The finished published-scale steps in `folder` (step name -> (its step.json, its chapter's
    results JSON)); smoke runs and unknown steps are left out."""
    steps = {}
    for name in PUBLISHED_STEPS:
        record_file = folder / name / "step.json"
        if not record_file.exists():
            continue
        record = json.loads(record_file.read_text())
        results_file = folder / name / f"{record['chapter']}.json"
        if not record.get("smoke") and results_file.exists():
            steps[name] = (record, json.loads(results_file.read_text()))
    return steps


def steps_to_come(folder: Path) -> dict[str, str]:
    """The steps of `PUBLISHED_STEPS` not finished in `folder` -> the device time each needs
    (`Step.device_time`) and, for a resumable one that ran, how far its main run got."""
    waiting = {}
    for name in PUBLISHED_STEPS:
        step = published.step_named(name)
        if (folder / name / "step.json").exists():
            continue
        text = step.device_time
        progress = read_progress(folder / f".{name}.partial" / step.state_file) if step.state_file else None
        if progress:
            text += (f"; at step {progress['step']:,} of {progress['total_steps']:,} (saved {progress['saved'][:10]} "
                     f"on {progress['device']})")
        waiting[name] = text
    return waiting


def chapter_fingerprints() -> dict[str, str]:
    """Each chapter's code fingerprint today, by the name of its results JSON."""
    return {name: fingerprint(ROOT / "notebooks" / f"{name}.py", ROOT) for name in CHAPTERS
            if (ROOT / "notebooks" / f"{name}.py").exists()}


def index_with_fresh_table(results_dir: Path, page: str, published_dir: Path = PUBLISHED) -> str | None:
    """`page` with the table built from the results JSON in `results_dir` and the published-scale
    steps in `published_dir`; None when there is no chapter results JSON."""
    results = {name: json.loads((results_dir / f"{name}.json").read_text())
               for name in CHAPTERS if (results_dir / f"{name}.json").exists()}
    if not results:
        return None
    smoke = any(r.get("smoke") for r in results.values())
    table = reproduced_table(reproduced_rows(results), smoke,
                             published_rows(published_steps(published_dir), chapter_fingerprints()),
                             waiting_rows(results, steps_to_come(published_dir)))
    return with_table(page, table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--published", type=Path, default=PUBLISHED)
    parser.add_argument("--page", type=Path, default=ROOT / "book" / "index.md")
    args = parser.parse_args()
    text = index_with_fresh_table(args.results, args.page.read_text(), args.published)
    if text is None:
        raise SystemExit(f"no chapter results JSON in {args.results}: execute the chapters first.")
    args.page.write_text(text)
    print(f"table of published against reproduced numbers written to {args.page}")


if __name__ == "__main__":
    main()
