"""Execute the chapters whose code changed (make book), or every one from nothing (make reproduce).

    .venv/bin/python tools/execute_chapters.py [--mode cached|all] [--out DIR] [--results DIR] [chapter ...]

`--mode cached` (default; out `_build/executed`, results `results`): a chapter whose code
fingerprint (`lib.book.code_fingerprint.fingerprint`: its .py source and every `lib` module it
imports, docstrings and comments aside) equals the one `notebooks/fingerprints.json` records for
the run that produced its committed notebook is reused: the committed .ipynb is copied into
`--out` as it is, and its committed results JSON (`notebooks/results/<chapter>.json`) into
`--results` unless one is there already. Every other chapter is executed: a fresh .ipynb made
from its .py by jupytext, executed by papermill with the notebooks folder as working directory.
`--mode all` (out `_build/reproduce`, results `<out>/results`, which must be empty) executes
every chapter, in order, and writes their wall times to `<out>/timings.md`.

Some chapters read what an earlier one left in the results folder (`DEPENDENCIES`); when such a
chapter is executed and the chapter it reads was not, and its files are not in `--results`, that
chapter is executed first as well.

Why not MyST-NB's own execution (`nb_execution_mode = "cache"`, jupyter-cache): it keys each
notebook on the text of its code cells, so a change in a `lib` module a chapter imports would
not re-execute it, while editing a comment in a cell would; it also executes inside the Sphinx
build, without papermill's parameters (`results_dir`) or the notebooks folder as working
directory. The rule here is the code fingerprint that the tests already check the committed
notebooks against, and the execution is the same papermill call as `make notebooks`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lib.book.code_fingerprint import fingerprint, machine_description, read_fingerprints  # noqa: E402
from lib.book.params import read_parameters_cell  # noqa: E402
from lib.grokking.study_sweep import S4_BIAS_SWEEP_FILE, S4_SWEEP_FILE  # noqa: E402
from lib.paths.finetuning import CHAPTER_2_CHECKPOINT  # noqa: E402

#: Which earlier chapter's outputs in `results_dir` a chapter reads (it trains them itself when
#: they are missing, which is slower and not the same model): chapter -> (upstream chapter, files).
DEPENDENCIES: dict[str, tuple[str, tuple[str, ...]]] = {
    # notebooks/03_*.py calls lib.paths.finetuning.ensure_base_model(results_dir, ...), which loads
    # results_dir/CHAPTER_2_CHECKPOINT (written by chapter 2's training cell).
    "03_finetuning_generalization": ("02_training", (CHAPTER_2_CHECKPOINT,)),
    # notebooks/07_*.py: lib.chapters.ch7.from_base(ensure_base_model(results_dir, ...)), the same file.
    "07_learned_circuit": ("02_training", (CHAPTER_2_CHECKPOINT,)),
    # notebooks/05_*.py: lib.grokking.study_sweep.load_s4_sweep(config) reads results_dir/S4_SWEEP_FILE,
    # saved by chapter 4 (lib.chapters.ch4: results_dir/04_sweep_<key>.pt).
    "05_complexity": ("04_ambiguous_grokking", (S4_SWEEP_FILE,)),
    # notebooks/06_*.py: load_s4_sweep(config) and load_s4_sweep(config, with_bias=True), which
    # reads S4_BIAS_SWEEP_FILE too.
    "06_determination": ("04_ambiguous_grokking", (S4_SWEEP_FILE, S4_BIAS_SWEEP_FILE)),
    # notebooks/08_*.py: lib.chapters.ch8.seeds_of_the_pair calls load_s4_sweep(config), the same file.
    "08_representations": ("04_ambiguous_grokking", (S4_SWEEP_FILE,)),
}

REPRODUCE_HINT = "make reproduce"


@dataclass(frozen=True)
class Step:
    """What happens to one chapter: executed (with the reason) or reused."""

    chapter: str       # the notebook stem, e.g. "02_training"
    source: Path       # its .py
    execute: bool
    reason: str

    def describe(self) -> str:
        return f"executed ({self.reason})" if self.execute else f"reused ({self.reason})"


def number(chapter: str) -> str:
    """'3' for '03_finetuning_generalization' (the stem itself when it has no number)."""
    prefix = chapter.split("_", 1)[0]
    return str(int(prefix)) if prefix.isdigit() else chapter


def chapter_sources(notebooks_dir: Path, names: list[str] | None = None) -> list[Path]:
    """The .py sources of the chapters in `notebooks_dir`, in order; only those `names` gives
    (a stem, a .py path or a chapter number) when it is not empty. Bad input stops here, with
    one sentence, before any work."""
    if not notebooks_dir.is_dir():
        raise SystemExit(f"no notebooks folder at {notebooks_dir}: run this in the repository (or give --notebooks).")
    sources = sorted(notebooks_dir.glob("[0-9][0-9]_*.py"))
    if not sources:
        raise SystemExit(f"{notebooks_dir} holds no chapter (NN_topic.py).")
    if not names:
        return sources
    chosen = []
    for name in names:
        stem = Path(name).stem
        match = [s for s in sources if s.stem == stem or (stem.isdigit() and int(s.stem[:2]) == int(stem))]
        if not match:
            raise SystemExit(f"unknown chapter {name!r}: the chapters are {', '.join(s.stem for s in sources)}.")
        chosen += [s for s in match if s not in chosen]
    return sorted(chosen)


def missing_outputs(chapter: str, results_dir: Path,
                    dependencies: dict[str, tuple[str, tuple[str, ...]]] = DEPENDENCIES) -> list[str]:
    """The files `chapter` reads from its upstream chapter that are not in `results_dir`."""
    if chapter not in dependencies:
        return []
    return [name for name in dependencies[chapter][1] if not (results_dir / name).exists()]


def plan(sources: list[Path], results_dir: Path, mode: str = "cached", *, root: Path | None = None,
         recorded: dict[str, str] | None = None, all_sources: list[Path] | None = None,
         dependencies: dict[str, tuple[str, tuple[str, ...]]] = DEPENDENCIES) -> list[Step]:
    """Which chapters to execute and why, and which to reuse, in execution order.

    `sources`: the chapters asked for; `root`: the repository (for the fingerprints; default the
    notebooks folder's parent); `recorded`: chapter -> fingerprint of its committed run (default
    read from the notebooks folder); `all_sources`: every chapter an upstream may be taken from
    (default the notebooks folder's chapters). In mode "all" every chapter asked for is executed.
    """
    notebooks_dir = Path(sources[0]).parent
    root = notebooks_dir.parent if root is None else root
    recorded = read_fingerprints(notebooks_dir) if recorded is None else recorded
    known = {s.stem: s for s in (sorted(notebooks_dir.glob("[0-9][0-9]_*.py")) if all_sources is None else all_sources)}
    known.update({s.stem: s for s in sources})
    steps: dict[str, Step] = {}
    for source in sources:
        chapter = source.stem
        if mode == "all":
            steps[chapter] = Step(chapter, source, True, "re-executing every chapter")
        elif chapter not in recorded:
            steps[chapter] = Step(chapter, source, True, "no recorded fingerprint")
        elif fingerprint(source, root) != recorded[chapter]:
            steps[chapter] = Step(chapter, source, True, "code changed")
        elif not source.with_suffix(".ipynb").exists():
            steps[chapter] = Step(chapter, source, True, "no committed notebook")
        else:
            steps[chapter] = Step(chapter, source, False, "fingerprint matches the committed run")
    # An executed chapter whose upstream was not executed and left no outputs: execute it too
    # (repeated until nothing changes, for chains).
    while True:
        needed: dict[str, list[str]] = {}
        for step in steps.values():
            if step.execute and step.chapter in dependencies:
                upstream = dependencies[step.chapter][0]
                runs = upstream in steps and steps[upstream].execute
                if not runs and upstream in known and missing_outputs(step.chapter, results_dir, dependencies):
                    needed.setdefault(upstream, []).append(step.chapter)
        if not needed:
            break
        for upstream, downstream in needed.items():
            names = [number(c) for c in sorted(downstream)]
            reason = (f"needed by chapter {names[0]}" if len(names) == 1 else
                      f"needed by chapters {', '.join(names[:-1])} and {names[-1]}")
            files = sorted({f for c in downstream for f in missing_outputs(c, results_dir, dependencies)})
            reason += f": {', '.join(files)} not in {results_dir}"
            steps[upstream] = Step(upstream, known[upstream], True, reason)
    return [steps[chapter] for chapter in sorted(steps)]


def atomic_copy(source: Path, target: Path) -> None:
    """Copy `source` to `target` through a temporary file beside it, so that `target` is either
    the old file or the whole new one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    shutil.copyfile(source, partial)
    os.replace(partial, target)


def reuse_chapter(step: Step, out_dir: Path, results_dir: Path) -> str:
    """Copy a reused chapter's committed notebook into `out_dir`, and its committed results JSON
    (notebooks/results/<chapter>.json) into `results_dir` unless one is there; returns what
    happened to the results JSON, in words."""
    atomic_copy(step.source.with_suffix(".ipynb"), out_dir / f"{step.chapter}.ipynb")
    committed = step.source.parent / "results" / f"{step.chapter}.json"
    target = results_dir / f"{step.chapter}.json"
    if target.exists():
        return f"results JSON: kept {target} (already there)"
    if not committed.exists():
        return f"results JSON: none committed ({committed}), so the book's reproduced table lacks its rows"
    atomic_copy(committed, target)
    return f"results JSON: copied {committed} to {target}"


def results_parameter(source: Path, results_dir: Path) -> list[str]:
    """Papermill's `-p results_dir` for `results_dir`, or nothing when it is the chapter's default
    (then the executed notebook has no injected-parameters cell, like the committed one)."""
    try:
        default = read_parameters_cell(source).get("results_dir")
    except (StopIteration, SyntaxError, ValueError):
        default = None
    if default is not None and (source.parent / default).resolve() == results_dir.resolve():
        return []
    return ["-p", "results_dir", str(results_dir.resolve())]


def notebook_error(notebook: Path) -> str | None:
    """The error that stopped executed notebook `notebook` as its cell shows it, "ename: evalue"
    (a chapter's bad parameter: "ParameterError: Parameter `n_vertices` must be an integer
    between 2 and 32; got -3."), or None when no cell holds one (a kernel that died)."""
    try:
        cells = json.loads(notebook.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return None
    for cell in cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}".rstrip(": ")
    return None


def execute_chapter(step: Step, out_dir: Path, results_dir: Path) -> float:
    """Execute a chapter as `make execute` always did: a fresh .ipynb from its .py (jupytext),
    executed by papermill in the notebooks folder, written to `out_dir/<chapter>.ipynb` only once
    the run succeeded; returns the seconds it took. A failure stops with one sentence, the error
    the chapter stopped on as its last line (papermill's traceback of its own code, which says
    nothing about the chapter, is not shown; it is, whole, when no cell holds an error)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results_dir.mkdir(parents=True, exist_ok=True)
    partial = out_dir / f"{step.chapter}.partial.ipynb"
    # An older executed copy goes first: should this run fail, `make html` falls back to the
    # committed notebook instead of an earlier run's copy.
    (out_dir / f"{step.chapter}.ipynb").unlink(missing_ok=True)
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "jupytext", "--quiet", "--to", "ipynb", "--output", str(partial),
                    str(step.source)], check=True)
    run = subprocess.run([sys.executable, "-m", "papermill", "--no-progress-bar", "--log-level", "WARNING",
                          "--cwd", str(step.source.parent), "-k", "python3", str(partial), str(partial),
                          *results_parameter(step.source, results_dir)],
                         capture_output=True, text=True, errors="replace")
    error = notebook_error(partial) if run.returncode != 0 else None
    if error is None:   # what papermill said (its warnings; all of it when no cell holds the error)
        sys.stderr.write(run.stdout + run.stderr)
        sys.stderr.flush()
    if run.returncode != 0:
        raise SystemExit(f"{step.chapter} failed after {duration(time.monotonic() - started)}; the notebook "
                         f"with the error is {partial} (the chapters after it were not executed). It stopped on:"
                         + (f"\n{error}" if error else " no cell holds an error (see above)."))
    os.replace(partial, out_dir / f"{step.chapter}.ipynb")
    return time.monotonic() - started


def duration(seconds: float) -> str:
    """'12 min 5 s', or '40 s' under a minute."""
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def write_timings(path: Path, seconds: dict[str, float], mode: str, machine: str) -> None:
    """The wall time of each executed chapter, with the machine, as a markdown table."""
    lines = [f"# Chapter wall times ({datetime.date.today().isoformat()}, --mode {mode})", "",
             "| chapter | seconds | machine |", "|---|---|---|"]
    lines += [f"| {chapter} | {value:.0f} | {machine} |" for chapter, value in seconds.items()]
    if seconds:
        lines.append(f"| total | {sum(seconds.values()):.0f} | |")
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text("\n".join(lines) + "\n")
    os.replace(partial, path)


def summary(steps: list[Step], seconds: dict[str, float], mode: str, out_dir: Path, results_dir: Path) -> str:
    """The closing paragraph: what was executed and reused, and how to re-execute everything."""
    executed = [s.chapter for s in steps if s.execute]
    reused = [s.chapter for s in steps if not s.execute]
    text = (f"Executed {len(executed)} of {len(steps)} chapters"
            + (f" ({', '.join(executed)}) in {duration(sum(seconds.values()))}" if executed else "") + ". ")
    if reused:
        text += (f"Reused {len(reused)} ({', '.join(reused)}): their code has the fingerprint recorded in "
                 f"notebooks/fingerprints.json for the run that produced their committed notebooks, so "
                 f"their outputs are that run's, on the machine recorded there. ")
    text += f"Notebooks are in {out_dir}, results JSON in {results_dir}. "
    if mode == "all":
        text += f"Wall times: {out_dir / 'timings.md'}."
    else:
        text += (f"To re-execute every chapter from nothing (about 75 minutes on 2 cores, benchmarks/RESULTS.md): "
                 f"`{REPRODUCE_HINT}`.")
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="chapters to consider (stem, .py or number); default all")
    parser.add_argument("--mode", choices=("cached", "all"), default="cached",
                        help="cached: reuse the chapters whose code fingerprint matches their committed run; "
                             "all: execute every chapter from nothing")
    parser.add_argument("--out", type=Path, default=None,
                        help="executed notebooks (default _build/executed, or _build/reproduce with --mode all)")
    parser.add_argument("--results", type=Path, default=None,
                        help="the chapters' results_dir (default results, or <out>/results with --mode all)")
    parser.add_argument("--notebooks", type=Path, default=ROOT / "notebooks", help="default: notebooks")
    args = parser.parse_args(argv)
    out_dir = (args.out or ROOT / "_build" / ("reproduce" if args.mode == "all" else "executed")).resolve()
    results_dir = (args.results or (out_dir / "results" if args.mode == "all" else ROOT / "results")).resolve()
    sources = chapter_sources(args.notebooks.resolve(), args.chapters)
    if args.mode == "all" and results_dir.exists() and any(results_dir.iterdir()):
        raise SystemExit(f"--mode all executes from nothing, but {results_dir} is not empty: "
                         f"remove it or give another --results.")
    steps = plan(sources, results_dir, args.mode)
    print("plan: " + "; ".join(f"{s.chapter} {'executed' if s.execute else 'reused'}" for s in steps), flush=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    results_dir.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    for step in steps:
        if step.execute:
            print(f"{step.chapter}: executing ({step.reason}) ...", flush=True)
            seconds[step.chapter] = execute_chapter(step, out_dir, results_dir)
            print(f"{step.chapter}: {step.describe()} in {duration(seconds[step.chapter])}", flush=True)
        else:
            note = reuse_chapter(step, out_dir, results_dir)
            print(f"{step.chapter}: {step.describe()}; {note}", flush=True)
    write_timings(out_dir / "timings.md", seconds, args.mode, machine_description())
    print()
    for step in steps:
        print(f"  {step.chapter}: {step.describe()}"
              + (f", {duration(seconds[step.chapter])}" if step.execute else ""))
    print()
    print(summary(steps, seconds, args.mode, out_dir, results_dir))


if __name__ == "__main__":
    main()
