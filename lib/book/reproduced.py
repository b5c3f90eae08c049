"""The index page's table of what is reproduced: each published number of the two studies beside
this book's, from every chapter's results JSON (written into book/index.md by
`tools/results_table.py`).

One function per chapter turns its results JSON into `Reproduced` rows; a chapter whose JSON is
missing has no rows. The study's numbers come from the JSON where the chapter recorded them
(`published...` keys) and otherwise from the chapter modules' constants, so each is written once.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from lib.book.tables import markdown_table

#: The lines of book/index.md between which the table is written.
START_MARKER = "<!-- reproduced-table:start (written by tools/results_table.py) -->"
END_MARKER = "<!-- reproduced-table:end -->"


@dataclass(frozen=True)
class Reproduced:
    """One published number next to this book's: chapter, what, the study's value, this run's
    value, and this run's scale against the study's."""

    chapter: int
    quantity: str
    study: str
    book: str
    scale: str


def _percent(value: float) -> str:
    return f"{100 * value:.3g}%"


def chapter_1(results: dict) -> list[Reproduced]:
    setting = results["study_setting"]
    damaged = [d for d in setting["draws"] if d["damage_had_effect"]]
    if not damaged:
        return []
    before = statistics.median(d["loss_before"] for d in damaged)
    after = statistics.median(d["loss_after"] for d in damaged)
    return [Reproduced(1, "hand-built model, one Q/K/V matrix replaced by noise: loss before -> after retraining",
                       "about 0.40 -> 0.06 in 5,000 steps", f"{before:.3g} -> {after:.3g} (median of "
                       f"{len(damaged)} draws)", f"{setting['steps']} steps of batch {setting['batch_size']}")]


def chapter_2(results: dict) -> list[Reproduced]:
    config, published = results["config"], results["published"]
    scale = (f"{config['n_layers']} layers, graphs up to {config['n_max']} vertices, {results['steps']} steps "
             f"(study: {published['n_layers']}, {published['n_max']}, {sum(published['phase_steps'])})")
    return [Reproduced(2, "final loss of the trained transformer", f"{published['final_loss']:.3g}",
                       f"{results['final_loss']:.3g}", scale)]


def chapter_3(results: dict) -> list[Reproduced]:
    scale = f"graphs up to {results['scale']['large_n_max']} vertices (study: {results['published_scale']['large_n_max']})"
    rows = [Reproduced(3, "fine-tuning loss before -> after",
                       f"{results['published_finetune_loss_before']:.3g} -> {results['published_finetune_loss_after']:.3g}",
                       f"{results['finetune_loss_before']:.3g} -> {results['finetune_loss_after']:.3g}", scale)]
    rows += [Reproduced(3, f"MSE, {test['title'].lower()}", f"{test['published_mse']:.3g}", f"{test['mse']:.3g}", scale)
             for test in results["generalization"]]
    return rows


def chapter_4(results: dict) -> list[Reproduced]:
    sizes_equal = sum(results["intersection_sizes"][name] == size
                      for name, size in results["published_intersection_sizes"].items())
    rows = [Reproduced(4, "intersection sizes of the pairs", "as listed in the study",
                       f"{sizes_equal} of {len(results['published_intersection_sizes'])} equal", "exact")]
    for pair in results["pairs"]:
        published = results["published"].get(pair["experiment"], {})
        if pair["name"] != "S4_vs_A4xZ2" or "fraction_g1" not in published:
            continue
        rows.append(Reproduced(
            4, f"S4 vs A4xZ2, weight decay {pair['weight_decay']:g}: grokked S4 / A4xZ2",
            f"{_percent(published['fraction_g1'])} / {_percent(published['fraction_g2'])}",
            f"{_percent(pair['fraction_g1'])} / {_percent(pair['fraction_g2'])}",
            f"{pair['n_instances']:,} seeds (study: {published['n_instances']:,})"))
    return rows


def chapter_5(results: dict) -> list[Reproduced]:
    s5 = results["s5_llc_over_training"]
    courses = [[value for epoch, value in zip(s5["epochs"], llc) if epoch >= fitted]
               for llc, fitted in zip(s5["llc"], s5["fitted_epoch"]) if fitted >= 0]
    courses = [c for c in courses if c]
    if not courses:
        return []
    peak = statistics.mean(max(c) for c in courses)
    end = statistics.mean(c[-1] for c in courses)
    return [Reproduced(5, "LLC of S5 vs A5xZ2 seeds along training: highest -> final", "about 4,500 -> 500-600",
                       f"{peak:,.0f} -> {end:,.0f}", f"{len(courses)} seed(s), {s5['chains']} chains of "
                       f"{s5['steps']} steps (study: 100 seeds, 100 x 3,000)")]


def chapter_6(results: dict) -> list[Reproduced]:
    from lib.chapters.ch6 import PUBLISHED_UNGROK_SHARES    # the chapter's constant, written once

    tv = results["total_variation"]
    window = f"epochs {tv['epochs'][0]}-{tv['epochs'][-1]}"
    rows = [Reproduced(6, f"argmax-flip rate late in training, {r['group']}", f"{r['published_flip_rate']:.2g}",
                       f"{r['test_flip_rate_mean']:.2g}", f"{r['count']} seeds, {window}")
            for r in tv["by_outcome"]]
    shares = " / ".join(_percent(r["ungrokked_share"]) for r in results["transplant"] if r["ungrokked_share"] is not None)
    if shares:
        rows.append(Reproduced(6, "transplant: share that ungroks (" + " / ".join(
            f"{r['first_group']} first" for r in results["transplant"]) + ")",
            " / ".join(_percent(s) for s in PUBLISHED_UNGROK_SHARES), shares,
            " / ".join(str(r["grokked_first"]) for r in results["transplant"]) + " grokkers"))
    return rows


#: Results JSON name -> its rows.
CHAPTERS: dict[str, Callable[[dict], list[Reproduced]]] = {
    "01_handcrafted_bfs": chapter_1, "02_training": chapter_2, "03_finetuning_generalization": chapter_3,
    "04_ambiguous_grokking": chapter_4, "05_complexity": chapter_5, "06_determination": chapter_6,
}


def reproduced_rows(results: dict[str, dict]) -> list[Reproduced]:
    """The rows of every chapter whose results JSON is in `results` (name -> JSON), in order."""
    return [row for name, rows_of in CHAPTERS.items() if name in results for row in rows_of(results[name])]


def reproduced_table(rows: list[Reproduced], smoke: bool) -> str:
    """The markdown table, with a warning line when the results came from smoke runs."""
    table = markdown_table(["chapter", "quantity", "the study", "this book", "this run's scale"],
                           [[r.chapter, r.quantity, r.study, r.book, r.scale] for r in rows])
    return ("**These numbers come from smoke runs (tests), not from the book's defaults.**\n\n" if smoke
            else "") + table


def with_table(page: str, table: str) -> str:
    """`page` (the index's markdown) with the text between the markers replaced by `table`."""
    if page.count(START_MARKER) != 1 or page.count(END_MARKER) != 1:
        raise ValueError(f"the page must hold one {START_MARKER!r} line and one {END_MARKER!r} line.")
    head, rest = page.split(START_MARKER)
    _, tail = rest.split(END_MARKER)
    return f"{head}{START_MARKER}\n\n{table}\n\n{END_MARKER}{tail}"


__all__ = ["CHAPTERS", "END_MARKER", "START_MARKER", "Reproduced", "reproduced_rows", "reproduced_table",
           "with_table"]
