"""The index page's table of what is reproduced: each published number of the two studies beside
this book's, from every chapter's results JSON (written into book/index.md by
`tools/results_table.py`).

One function per chapter turns its results JSON into `Reproduced` rows; a chapter whose JSON is
missing has no rows. Every row carries a verdict: reproduced (the study's number inside this
run's interval), differs (with the reason the chapter measured), not comparable at this scale
(with what would be needed), or pending, the default of a row whose chapter has not judged it. The study's numbers come from the JSON where the chapter recorded them
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


#: The verdict of a row whose chapter has not yet judged it.
PENDING = "pending"


@dataclass(frozen=True)
class Reproduced:
    """One published number next to this book's: chapter, what, the study's value, this run's
    value, this run's scale against the study's, and the verdict.

    A verdict is one of: "reproduced" (the study's number lies within this run's interval),
    "differs: <the reason, measured in the chapter>", "not comparable at this scale: <what would
    be needed>", or `PENDING` for a row no chapter has judged yet.
    """

    chapter: int
    quantity: str
    study: str
    book: str
    scale: str
    verdict: str = PENDING


def _percent(value: float) -> str:
    return f"{100 * value:.3g}%"


def chapter_1(results: dict) -> list[Reproduced]:
    rows = []
    seed = results.get("seed_construction")
    if seed:
        exact = seed["mse"] < 1e-6
        rows.append(Reproduced(
            1, "the study's hand-built construction (its constants): MSE against BFS", "below 1e-6 (claimed)",
            f"{seed['mse']:.2g} (largest error {seed['max_abs_error']:.2g})",
            f"n = {seed['n_vertices']}, {seed['n_graphs']:,} graphs of its sampler (the study's)",
            "reproduced" if exact else "differs: its constants (margins 12, 30, 7; squash slope 5) leave "
            "softmax leaks and fractional reach bits (the chapter's constants sweep measures both)"))
    protocol = results.get("study_protocol")
    if not protocol:
        return rows
    steps, points = protocol["steps"], protocol["comparison"]["points"]
    scale = (f"{protocol['draws']} draws of its damage, Adam lr {protocol['learning_rate']:g}, fresh batch of "
             f"{protocol['batch_size']}, {steps:,} steps")
    for point in points:
        if point["step"] not in (0, max(p["step"] for p in points)):
            continue
        what = "right after the damage" if point["step"] == 0 else f"after {point['step']:,} retraining steps"
        rows.append(Reproduced(
            1, f"the study's construction, one matrix replaced by N(0, 1): MSE {what}",
            f"{point['published']:.3g} (one draw)",
            f"{point['low']:.3g} to {point['high']:.3g} (median {point['median']:.3g}, {point['draws']} draws "
            f"with effect)", scale,
            "reproduced (inside the draws' range)" if point["within"] else
            "differs: outside the draws' range (the chapter's table gives the matrix each draw hit)"))
    for name, ratios in protocol["comparison"].get("ratios", {}).items():
        if not ratios:
            continue
        last = ratios[-1]
        construction = "the study's construction" if name == "study" else "the book's construction (stiff constants)"
        if last["within"]:
            verdict = "reproduced (inside the draws' range)"
        elif name == "book":
            verdict = ("differs: slower repair than the study's draw, on a construction with a margin of 30 and a "
                       "squash slope of 80n against the study's 12/30/7 and 5 (the chapter runs both)")
        else:
            verdict = "differs: outside the draws' range (the chapter's table gives the matrix each draw hit)"
        rows.append(Reproduced(
            1, f"{construction}, the study's damage: MSE after {last['step']:,} steps / right after the damage",
            f"{last['published']:.2f} (one draw)", f"{last['low']:.2f} to {last['high']:.2f} ({last['draws']} draws)",
            scale, verdict))
    if steps < 5000:
        rows.append(Reproduced(
            1, "the study's construction, one matrix replaced by N(0, 1): MSE after 5,000 retraining steps",
            "0.062 (one draw)", "not measured", scale,
            f"not comparable at this scale: the run stopped at {steps:,} steps; needs `-p study_steps 5000`"))
    return rows


def chapter_2(results: dict) -> list[Reproduced]:
    config, published = results["config"], results["published"]
    scale = (f"{config['n_layers']} layers, graphs up to {config['n_max']} vertices, {results['steps']} steps "
             f"(study: {published['n_layers']}, {published['n_max']}, {sum(published['phase_steps'])})")
    same = (config["n_layers"], config["n_max"], results["steps"]) == (
        published["n_layers"], published["n_max"], sum(published["phase_steps"]))
    verdict = ("one run at the study's scale, no interval: see chapter 2" if same else
               f"not comparable at this scale: needs {published['n_layers']} layers, graphs up to "
               f"{published['n_max']} vertices and {sum(published['phase_steps']):,} steps (chapter 2's "
               f"published-scale command)")
    rows = [Reproduced(2, "final loss of the trained transformer", f"{published['final_loss']:.3g}",
                       f"{results['final_loss']:.3g}", scale, verdict)]
    study = results.get("transition_study")
    if study and "1" in study.get("drop_step", {}):
        # The transition study: length 1's drop step over seeds against the study's ~50.
        steps = study["drop_step"]["1"]
        dropped = [s for s in steps if s is not None]
        book = ", ".join("no drop" if s is None else str(s) for s in steps) + f" ({len(steps)} seeds)"
        study_scale = (f"{study['n_layers']} layers, graphs up to {study['n_max']} vertices, batch "
                       f"{study['batch_size']} (study: {published['n_layers']}, {published['n_max']}, "
                       f"{published['batch_size']})")
        inside = len(dropped) == len(steps) and min(dropped) <= PUBLISHED_LENGTH_1_DROP <= max(dropped)
        rows.append(Reproduced(
            2, "step of length 1's drop (the first phase transition)", f"about {PUBLISHED_LENGTH_1_DROP}", book,
            study_scale, "reproduced (within the seeds' range), though batch and depth differ from the "
            "study's: the step of a drop is not known to carry over between them" if inside else
            "differs: outside the seeds' range (this run's batch and depth are not the study's; see chapter 2)"))
    return rows


#: The study's length-1 transition: a loss near 16 until step 40, 3.9 at step 50, 0.35 at 60.
PUBLISHED_LENGTH_1_DROP = 50


def _spread_text(spread: dict) -> str:
    if len(spread["values"]) == 1:
        return f"{spread['mean']:.3g} (1 seed)"
    return f"{spread['mean']:.3g} ({spread['min']:.3g} to {spread['max']:.3g}, {len(spread['values'])} seeds)"


def chapter_3(results: dict) -> list[Reproduced]:
    book_scale, study_scale = results["scale"], results["published_scale"]
    same_scale = all(book_scale[key] == study_scale[key] for key in ("large_n_max", "small_n_max", "unreachable_label"))
    scale = (f"graphs up to {book_scale['large_n_max']} vertices, unreachable label {book_scale['unreachable_label']} "
             f"(study: {study_scale['large_n_max']}, {study_scale['unreachable_label']})")
    needed = ("not comparable at this scale: needs a base model on graphs of up to "
              f"{study_scale['large_n_max']} vertices (chapter 2, then chapter 3, at their published scale)")
    finetune = results.get("finetune_loss_over_seeds")
    rows = [Reproduced(3, "fine-tuning loss before -> after",
                       f"{results['published_finetune_loss_before']:.3g} -> {results['published_finetune_loss_after']:.3g}",
                       f"{results['finetune_loss_before']:.3g} -> "
                       + (_spread_text(finetune) if finetune else f"{results['finetune_loss_after']:.3g}"),
                       scale, needed)]
    spreads = results.get("test_mse_over_seeds", {})
    comparisons = {c["test"]: c for c in results.get("baseline_comparison", [])}
    for test in results["generalization"]:
        spread = spreads.get(test["test"])
        book = _spread_text(spread) if spread else f"{test['mse']:.3g}"
        if same_scale and spread:
            verdict = ("reproduced (within the seeds' range)" if spread["min"] <= test["published_mse"] <= spread["max"]
                       else "differs: outside the seeds' range")
        elif test["test"] in comparisons and test["test"].startswith("any"):
            c = comparisons[test["test"]]
            ratio = c["ratio_to_baseline"]
            verdict = (f"{needed}. Relative to answering d(1,2) at each scale: here {ratio['min']:.2f} to "
                       f"{ratio['max']:.2f}, the study {c['study_ratio_to_baseline']:.2f}"
                       + (" (inside: graph size and the unreachable label account for the gap)"
                          if c["scale_accounts"] else " (outside)"))
        else:
            verdict = needed
        rows.append(Reproduced(3, f"MSE, {test['title'].lower()}", f"{test['published_mse']:.3g}", book, scale, verdict))
    return rows


def chapter_4(results: dict) -> list[Reproduced]:
    sizes_equal = sum(results["intersection_sizes"][name] == size
                      for name, size in results["published_intersection_sizes"].items())
    rows = [Reproduced(4, "intersection sizes of the pairs", "as listed in the study",
                       f"{sizes_equal} of {len(results['published_intersection_sizes'])} equal", "exact")]
    # Like for like: the same model (with the unembedding bias), weight decay and threshold.
    for compared in results.get("published_comparisons", []):
        published, g1, g2 = compared["published"], compared["grokked_g1"], compared["grokked_g2"]
        outside = [name for name, key in (("S4", "inside_interval_g1"), ("A4xZ2", "inside_interval_g2"))
                   if not published[key]]
        verdict = ("published inside both 95% intervals" if not outside else
                   "published outside the 95% interval of " + " and ".join(outside))
        rows.append(Reproduced(
            4, f"S4 vs A4xZ2, bias, weight decay {compared['weight_decay']:g}, accuracy >= "
               f"{compared['grok_threshold']:g}: grokked S4 / A4xZ2",
            f"{_percent(published['fraction_g1'])} / {_percent(published['fraction_g2'])}",
            f"{_percent(g1['fraction'])} / {_percent(g2['fraction'])} ({verdict})",
            f"{compared['n_instances']:,} seeds (study: {published['n_instances']:,})"))
    return rows


def chapter_5(results: dict) -> list[Reproduced]:
    s5 = results["s5_llc_over_training"]
    courses = [[value for epoch, value in zip(s5["epochs"], llc) if epoch >= fitted]
               for llc, fitted in zip(s5["llc"], s5["fitted_epoch"]) if fitted >= 0]
    courses = [c for c in courses if c]
    if not courses:
        return []
    from lib.grokking.study import PUBLISHED_S5_LLC    # the study's numbers, written once

    published = PUBLISHED_S5_LLC
    peak = statistics.mean(max(c) for c in courses)
    end = statistics.mean(c[-1] for c in courses)

    def place(value: float, values: tuple[int, ...]) -> str:
        return "within" if min(values) <= value <= max(values) else (
            f"{value / max(values):.2f} times the highest" if value > max(values) else
            f"{value / min(values):.2f} times the lowest")

    verdict = (f"highest {place(peak, published['peaks'])}, final {place(end, published['finals'])} "
               "of the published values")
    return [Reproduced(5, "LLC of S5 vs A5xZ2 along training (bias, SGLD chains of 3,000 steps): highest -> final",
                       f"{min(published['peaks']):,}-{max(published['peaks']):,} -> "
                       f"{min(published['finals'])}-{max(published['finals'])}",
                       f"{peak:,.0f} -> {end:,.0f} ({verdict})",
                       f"{len(courses)} seed(s), {s5['chains']} chains x {s5['steps']:,} steps at epochs "
                       f"{', '.join(str(e) for e in s5['epochs'])} (study: one run of {published['instances']} "
                       f"seeds, {published['chains']} chains x {published['steps']:,} steps every "
                       f"{published['checkpoint_every']} epochs)")]


def chapter_6(results: dict) -> list[Reproduced]:
    from lib.grokking.study import PUBLISHED_UNGROK_SHARES    # the study's numbers, written once

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
    table = markdown_table(["chapter", "quantity", "the study", "this book", "this run's scale", "verdict"],
                           [[r.chapter, r.quantity, r.study, r.book, r.scale, r.verdict] for r in rows])
    return ("**These numbers come from smoke runs (tests), not from the book's defaults.**\n\n" if smoke
            else "") + table


def with_table(page: str, table: str) -> str:
    """`page` (the index's markdown) with the text between the markers replaced by `table`."""
    if page.count(START_MARKER) != 1 or page.count(END_MARKER) != 1:
        raise ValueError(f"the page must hold one {START_MARKER!r} line and one {END_MARKER!r} line.")
    head, rest = page.split(START_MARKER)
    _, tail = rest.split(END_MARKER)
    return f"{head}{START_MARKER}\n\n{table}\n\n{END_MARKER}{tail}"


__all__ = ["CHAPTERS", "END_MARKER", "PENDING", "START_MARKER", "Reproduced", "reproduced_rows", "reproduced_table",
           "with_table"]
