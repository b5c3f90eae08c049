"""The index page's table of what is reproduced: each published number of the two studies beside
this book's, from every chapter's results JSON (written into book/index.md by
`tools/results_table.py`).

One function per chapter turns its results JSON into `Reproduced` rows; a chapter whose JSON is
missing has no rows. Every row carries a verdict: reproduced (the study's number inside this
run's interval), differs (with the reason the chapter measured), not comparable at this scale
(with what would be needed), or pending, the default of a row whose chapter has not judged it. The study's numbers come from the JSON where the chapter recorded them
(`published...` keys) and otherwise from the chapter modules' constants, so each is written once.
The module runs over 400 lines because every chapter's rows and verdict rules sit side by side
here, where one table is built from them.
"""

from __future__ import annotations

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


#: The short verdict words the index shows first, by the prefix of a verdict that maps to each.
VERDICT_WORDS = (("reproduced", "reproduced"), ("consistent", "consistent"), ("too few events", "too few events"),
                 ("differs", "differs"), ("not comparable", "not comparable"), ("not seen", "not comparable"),
                 ("one run", "one run"), (PENDING, PENDING))


def verdict_category(verdict: str) -> str:
    """The leading phrase of a verdict, before its reasons (the text up to the first ":", " (" or
    ";"): what must come out the same on another CPU or seed (`tools/verdict_stability.py`)."""
    cut = min((i for i in (verdict.find(":"), verdict.find(" ("), verdict.find(";")) if i >= 0), default=len(verdict))
    return verdict[:cut].strip()


def verdict_word(verdict: str) -> str:
    """The short word of a verdict for the index (`VERDICT_WORDS`; its leading phrase otherwise)."""
    return next((word for prefix, word in VERDICT_WORDS if verdict.startswith(prefix)), verdict_category(verdict))


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
    distribution = results.get("damage_distribution")
    if distribution:
        p, q, kq = distribution["percentile"], distribution["quantiles"], distribution["answer_key_query"]
        inside = 0.025 <= p["share"] <= 0.975
        rows.append(Reproduced(
            1, "the study's construction, one matrix replaced by N(0, 1): MSE right after the damage",
            f"{distribution['target']:g} (one draw)",
            f"percentile {100 * p['share']:.1f} (95% interval {100 * p['low']:.1f} to {100 * p['high']:.1f}) of "
            f"{p['n']} draws; median {q['0.5']:.3g}, 5% to 95% {q['0.05']:.3g} to {q['0.95']:.3g}",
            f"every matrix of the six weight lists x {distribution['noise_draws']} noise draws, "
            f"{distribution['n_held_out']} held-out graphs",
            (f"reproduced (inside the damage distribution"
             + (", in its lower tail" if p["share"] < 0.25 else ", in its upper tail" if p["share"] > 0.75 else "")
             + f": {p['k']} of {p['n']} draws reach it, "
             f"{kq['k']} of {kq['n']} answer-head key/query hits, {distribution['other']['k']} of "
             f"{distribution['other']['n']} others)") if inside else
            f"differs: in the distribution's extreme tail (percentile {100 * p['share']:.1f})"))
    protocol = results.get("study_protocol")
    if not protocol:
        return rows
    steps, comparison, selection = protocol["steps"], protocol["comparison"], protocol.get("selection")
    near = (f"the {selection['count']} draws nearest {selection['target']:g} ({selection['low']:.3f} to "
            f"{selection['high']:.3f})" if selection else f"{protocol['draws']} draws")
    scale = (f"{near}, Adam lr {protocol['learning_rate']:g}, fresh batch of {protocol['batch_size']}, "
             f"{steps:,} steps")
    at = comparison.get("at_step")
    if at and at["published"] is not None:
        mse, share = at["mse"], at["at_or_below"]
        rows.append(Reproduced(
            1, f"the study's construction, one matrix replaced by N(0, 1): MSE after {at['step']:,} retraining steps",
            f"{at['published']:.3g} (one draw)",
            f"{mse['median']:.3g} ({mse['min']:.3g} to {mse['max']:.3g}); {share['k']} of {share['n']} at or below "
            f"it (95% interval {100 * share['low']:.0f}% to {100 * share['high']:.0f}%)", scale,
            "reproduced (inside the range of the draws that started near it)" if at["within"] else
            f"differs: outside the range of the draws that started near it (their median "
            f"{abs(mse['median'] / at['published'] - 1):.0%} {'above' if mse['median'] > at['published'] else 'below'})"))
        ratio, share = at["ratio"], at["ratio_at_or_below"]
        inside = ratio["min"] <= at["published_ratio"] <= ratio["max"]
        rows.append(Reproduced(
            1, f"the study's construction, the study's damage: MSE after {at['step']:,} steps / right after the damage",
            f"{at['published_ratio']:.2f} (one draw)",
            f"{ratio['median']:.2f} ({ratio['min']:.2g} to {ratio['max']:.2g}); {share['k']} of {share['n']} at or "
            f"below it", scale,
            "reproduced (inside the range of the draws that started near 0.403)" if inside else
            "differs: outside the range of the draws that started near 0.403"))
    pairs = comparison.get("pairs")
    if pairs and pairs["pairs"]:
        slower, book = pairs["book_slower"], pairs["book_ratio"]
        if slower["low"] > 0.5:
            verdict = (f"differs: slower repair than the same draws on the study's construction in {slower['k']} of "
                       f"{slower['n']} pairs (95% interval {100 * slower['low']:.0f}% to {100 * slower['high']:.0f}%), "
                       "on a construction with a margin of 30 and a squash slope of 80n against the study's "
                       "12/30/7 and 5 (the chapter runs both)")
        elif slower["high"] < 0.5:
            verdict = (f"differs: faster repair than the same draws on the study's construction in "
                       f"{slower['n'] - slower['k']} of {slower['n']} pairs")
        else:
            verdict = (f"consistent: slower in {slower['k']} of {slower['n']} pairs, an interval that holds one half "
                       f"({100 * slower['low']:.0f}% to {100 * slower['high']:.0f}%)")
        rows.append(Reproduced(
            1, f"the book's construction (stiff constants), the study's damage: MSE after {pairs['step']:,} steps / "
               "right after the damage",
            f"{at['published_ratio']:.2f} (one draw)" if at and at["published_ratio"] else "n/a",
            f"{book['median']:.3f} ({book['min']:.3f} to {book['max']:.3f}); the same draws on the study's "
            f"construction {pairs['study_ratio']['median']:.3f}", scale, verdict))
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
        study_scale = (f"{study['n_layers']} layers, graphs up to {study['n_max']} vertices, batch "
                       f"{study['batch_size']} (study: {published['n_layers']}, {published['n_max']}, "
                       f"{published['batch_size']})")
        rows.append(_seed_drops_row(study, (1,), FIRST_DROP, PUBLISHED_LENGTH_1_DROP, study_scale))
        rows.append(_seed_drops_row(study, (2, 3), SECOND_DROP, PUBLISHED_SECOND_DROP, study_scale))
    return rows


def _seed_drops_row(study: dict, lengths: tuple[int, ...], quantity: str, study_step: int,
                    scale: str) -> Reproduced:
    """A transition row of chapter 2's multi-seed study: per length, the seeds whose drop is a
    transition that holds at every setting of the detector's sensitivity table and beyond the
    constant rival (`held_step`: length -> step or None per seed), beside the seeds with a drop at
    the detector's defaults (`drop_step`). Reproduced when at every length most seeds hold a
    transition and their steps hold the study's; differs otherwise."""
    texts, counts, agrees, seeds = [], [], True, len(study["seeds"])
    for length in lengths:
        held = [step for step in study["held_step"].get(str(length), []) if step is not None]
        drops = sum(step is not None for step in study["drop_step"].get(str(length), []))
        name = f"length {length}: " if len(lengths) > 1 else ""
        texts.append(f"{name}holds in {len(held)} of {seeds}" + (f", at steps {min(held)} to {max(held)}" if held else "")
                     + f" (drops at the detector's defaults: {drops})")
        counts.append(f"{name}{len(held)}")
        agrees = agrees and 2 * len(held) > seeds and min(held) <= study_step <= max(held)
    book = "; ".join(texts)
    verdict = ("reproduced (in most seeds a transition that holds at every detector setting, at steps that hold "
               "the study's), though batch and depth differ from the study's: the step of a drop is not known to "
               "carry over between them" if agrees else
               f"differs: seeds with a transition that holds at every detector setting and beyond the constant "
               f"rival, of {seeds}: {', '.join(counts)} (this run's batch and depth are not the study's; see chapter 2)")
    return Reproduced(2, quantity, f"about {study_step}", book, scale, verdict)


#: The study's length-1 transition: a loss near 16 until step 40, 3.9 at step 50, 0.35 at 60.
PUBLISHED_LENGTH_1_DROP = 50
#: The study's second transition: lengths 2 and 3 fall together around step 80 (length 2: 6.3 at
#: step 90 from 12-13 before; length 3: 2.4 at 100 from 7 at 80).
PUBLISHED_SECOND_DROP = 80
#: The quantities of chapter 2's two transition rows (the published-scale step gives the same rows).
FIRST_DROP = "step of length 1's drop (the first phase transition)"
SECOND_DROP = "steps of lengths 2 and 3's drops (the second phase transition)"


def first_transitions(results: dict) -> list[Reproduced]:
    """Chapter 2's two transition rows from its main run alone (one seed), for a run at the
    study's scale (`tools/published.py` step ch2_first300: 11 layers, graphs up to 15 vertices,
    batches of 2**15, the first 300 steps): each length's drop (`drop_by_length`), whether it beats
    the constant rival at the detector's defaults (`main_run.rival`) and whether it holds at every
    setting of the detector's sensitivity table (`main_run.held_step`)."""
    config, drops, main = results["config"], results["drop_by_length"], results["main_run"]
    scale = (f"one seed, {config['n_layers']} layers, graphs up to {config['n_max']} vertices, batch "
             f"{config['batch_size']:,}, {results['steps']} steps")

    def seen(length: int) -> str:
        drop, held = drops.get(str(length)), main["held_step"].get(str(length))
        if drop is None:
            return f"length {length}: not in the evaluation set"
        if not drop["dropped"]:
            return f"length {length}: no drop ({drop['reason']})"
        rival = main["rival"].get(str(length), [{}])[0]
        text = (f"length {length}: a drop at step {drop['step']} (from {drop['plateau']:.3g} to {drop['after']:.2g})")
        if held is not None:
            return text + f" that holds at every setting of the detector (step {held})"
        return text + (", beyond the constant rival at the detector's defaults but not at every setting"
                       if rival.get("transition") else ", explained by one constant prediction (the rival)")

    def verdict(lengths: tuple[int, ...], study: int) -> str:
        held = [main["held_step"].get(str(n)) for n in lengths]
        found = ", ".join(f"length {n} {'has no transition that holds' if h is None else f'holds at step {h}'}"
                          for n, h in zip(lengths, held))
        return (f"one run at the study's scale: {found} (the study: about step {study}); how far seeds spread at "
                "this scale is not measured")

    return [Reproduced(2, FIRST_DROP, f"about {PUBLISHED_LENGTH_1_DROP}", seen(1), scale,
                       verdict((1,), PUBLISHED_LENGTH_1_DROP)),
            Reproduced(2, SECOND_DROP, f"about {PUBLISHED_SECOND_DROP}", f"{seen(2)}; {seen(3)}", scale,
                       verdict((2, 3), PUBLISHED_SECOND_DROP))]


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


AUTHORS_SETTINGS = "the authors' settings: "


def _pair_counts(pairs: list[dict]) -> tuple[int, int, int]:
    """Seeds that grokked G1, G2, and all seeds, over one or more sweeps of a pair (chapter 4)."""
    return (sum(p["count_grokked_g1"] for p in pairs), sum(p["count_grokked_g2"] for p in pairs),
            sum(p["n_instances"] for p in pairs))


#: Chapter 4: a group "not grokked" by any seed is shown rare once its rate is bounded below this.
RARE_RATE = 0.05
#: A verdict resting on fewer events than this says so.
FEW_EVENTS = 5
#: The normal quantile of a two-sided 95% interval (Wilson's intervals, as chapter 4 computes them).
_Z = 1.959964


def _zero_event_upper(trials: int) -> float:
    """Upper end of the 95% Wilson interval of a rate with no event in `trials`."""
    return _Z ** 2 / (trials + _Z ** 2)


def _seeds_to_bound(rate: float) -> int:
    """Fewest seeds with no event whose 95% Wilson interval lies below `rate`."""
    return int(_Z ** 2 * (1 - rate) / rate) + 1


def _few_events(counts: dict[str, int]) -> str:
    """A clause naming the rates resting on fewer than `FEW_EVENTS` events (empty when none)."""
    few = [f"{name} {count}" for name, count in counts.items() if count < FEW_EVENTS]
    return f"; too few events to measure a rate: {', '.join(few)}" if few else ""


def _settings(pair: dict) -> str:
    """A sweep's model and schedule in a few words (chapter 4's JSON summaries)."""
    model = "one map on summed embeddings" if pair.get("tied_linear") else "two maps"
    return (f"{model}, d={pair['embed_dim']}, h={pair['hidden_dim']}, wd {pair['weight_decay']:g}, "
            f"{pair['epochs']:,} epochs, accuracy >= {pair.get('grok_threshold', 0.999):g}")


def chapter_4(results: dict) -> list[Reproduced]:
    sizes_equal = sum(results["intersection_sizes"][name] == size
                      for name, size in results["published_intersection_sizes"].items())
    n_pairs = len(results["published_intersection_sizes"])
    rows = [Reproduced(4, "intersection sizes of the pairs", "as listed in the study",
                       f"{sizes_equal} of {n_pairs} equal", "exact",
                       "reproduced" if sizes_equal == n_pairs else "differs: see chapter 4's intersections table")]
    # Like for like: the same model (with the unembedding bias), weight decay and threshold.
    for compared in results.get("published_comparisons", []):
        published, g1, g2 = compared["published"], compared["grokked_g1"], compared["grokked_g2"]
        outside = [name for name, key in (("S4", "inside_interval_g1"), ("A4xZ2", "inside_interval_g2"))
                   if not published[key]]
        rows.append(Reproduced(
            4, f"S4 vs A4xZ2, bias, weight decay {compared['weight_decay']:g}, accuracy >= "
               f"{compared['grok_threshold']:g}: grokked S4 / A4xZ2",
            f"{_percent(published['fraction_g1'])} / {_percent(published['fraction_g2'])}",
            f"{_percent(g1['fraction'])} / {_percent(g2['fraction'])} ({g1['count']} / {g2['count']}; 95% intervals "
            f"{_percent(g1['low'])}-{_percent(g1['high'])} / {_percent(g2['low'])}-{_percent(g2['high'])})",
            f"{compared['n_instances']:,} seeds (study: {published['n_instances']:,})",
            ("reproduced (the published fractions lie inside both 95% intervals)" if not outside else
             "differs: the published fraction lies outside the 95% interval of " + " and ".join(outside)
             + " (cause not measured)") + _few_events({"S4": g1["count"], "A4xZ2": g2["count"]})))
    rows += _other_pairs(results)
    return rows


def _other_pairs(results: dict) -> list[Reproduced]:
    """Chapter 4's rows for the pairs the study describes without counts (Z48, Z35, Z100, S5 and
    the S5 subsample), each judged against what the study says of it."""
    pairs = {p["experiment"]: p for p in results.get("pairs", [])}
    notes, rows = results.get("published_notes", {}), []
    if "z48" in pairs:
        z48 = pairs["z48"]
        g1, g2, n = _pair_counts([z48])
        # "Only the commutative group": no seed of the other is consistent with it, and becomes a
        # reproduction once the seeds bound the other group's rate below `RARE_RATE`.
        upper = z48["ci_grokked_g2"][1]
        needed = _seeds_to_bound(RARE_RATE)
        if g2:
            verdict = f"differs: {g2} seed(s) grokked {z48['g2']}"
        elif not g1:
            verdict = ("not comparable at this scale: no seed grokked either group; needs more seeds (the "
                       "authors ran 100)")
        elif n >= needed:
            verdict = (f"reproduced (no seed of {n} grokked {z48['g2']}: its rate is below {upper:.1%}, 95% "
                       "interval)")
        else:
            verdict = (f"consistent with the study: no seed of {n} grokked {z48['g2']}, but its rate may be up to "
                       f"{upper:.0%} (95% interval); {needed} seeds with none would bound it below "
                       f"{RARE_RATE:.0%} (the authors ran 100)")
        rows.append(Reproduced(4, "Z48xZ2 vs Z48x|25Z2: which group is grokked", notes.get("z48", ""),
                               f"{g1} of {n} grokked {z48['g1']}, {g2} grokked {z48['g2']}",
                               f"{n} seeds, {AUTHORS_SETTINGS if z48.get('tied_linear') else ''}{_settings(z48)} "
                               "(study: 100 seeds)", verdict))
    authors = [p for key, p in pairs.items() if key.startswith("z35_lr")]
    if authors:
        g1, g2, n = _pair_counts(authors)
        rates = ", ".join(f"{p['learning_rate']:g}" for p in authors)
        book = pairs.get("z35_book")
        text = f"{g1} of {n} grokked {authors[0]['g1']}, {g2} grokked {authors[0]['g2']}"
        if book:
            bg1, bg2, bn = _pair_counts([book])
            text += (f"; with the chapter's recipe ({_settings(book)}), {bg1} and {bg2} of {bn}")
        if g1 and g2:
            verdict = "reproduced (both groups grokked at the authors' settings)"
        else:
            missing = [name for name, count in ((authors[0]["g1"], g1), (authors[0]["g2"], g2)) if not count]
            verdict = (f"not comparable at this scale: {' and '.join(missing)} grokked by no seed of {n} at the "
                       f"authors' settings (rate below {_zero_event_upper(n):.0%}, 95% interval)"
                       + (f", the other by {g1 + g2}" if g1 + g2 else "")
                       + "; the authors ran 100 seeds at each of 8 learning rates")
        rows.append(Reproduced(4, "Z35x|6Z2 vs Z35x|34Z2: either group can be grokked", notes.get("z35", ""), text,
                               f"{n} seeds at learning rates {rates}: {_settings(authors[0])} (study: 100 seeds "
                               "at each of 8 rates)", verdict))
    if "z100" in pairs:
        z100 = pairs["z100"]
        g1, g2, n = _pair_counts([z100])
        rows.append(Reproduced(4, "Z100 vs Z50xZ2: grokking", notes.get("z100", ""),
                               f"{g1 + g2} of {n} seeds grokked either group", f"{n} seeds, {_settings(z100)} "
                               "(the study gives no settings or seed count)",
                               "reproduced (no seed grokked)" if not g1 + g2 else
                               f"differs: {g1 + g2} seed(s) grokked a group"))
    if "s5" in pairs:
        rows.append(_s5_row(pairs["s5"]))
    for sub in results.get("subsample", []):
        if not sub["name"].startswith("S5"):
            continue
        rows.append(Reproduced(
            4, f"S5 pair trained on {sub['train_fraction']:.0%} of the intersection: completes the intersection",
            "always", f"{sub['fraction_intersection_grokked']:.0%} of {sub['n_instances']} seeds (lowest accuracy "
                      f"{sub['min_acc_intersection']:.3f})", f"{sub['n_instances']} seeds",
            "reproduced" if sub["fraction_intersection_grokked"] == 1 else
            "differs: some seeds did not complete the intersection"))
    return rows


#: The study's S5 sweep (100 seeds, d = h = 128, bias): about 4% grokked S5 and 6% A5xZ2.
STUDY_S5_GROKKED = (0.04, 0.06)


def _s5_row(s5: dict) -> Reproduced:
    """The S5 sweep's row: the study's two fractions against this run's 95% intervals once each
    group has `FEW_EVENTS` grokkers; with fewer, whether both groups were grokked at all."""
    g1, g2, n = _pair_counts([s5])
    study = STUDY_S5_GROKKED
    book = f"{g1} / {g2} of {n}"
    if min(g1, g2) >= FEW_EVENTS:
        (low1, high1), (low2, high2) = s5["ci_grokked_g1"], s5["ci_grokked_g2"]
        book += f" ({_percent(g1 / n)} / {_percent(g2 / n)}; 95% intervals {_percent(low1)}-{_percent(high1)} / " \
                f"{_percent(low2)}-{_percent(high2)})"
        inside = [low1 <= study[0] <= high1, low2 <= study[1] <= high2]
        verdict = ("reproduced (the study's fractions lie inside both 95% intervals)" if all(inside) else
                   "differs: the study's fraction lies outside the 95% interval of "
                   + " and ".join(name for name, ok in zip((s5["g1"], s5["g2"]), inside) if not ok)
                   + " (cause not measured)")
    elif g1 and g2:
        verdict = "reproduced (both groups grokked)" + _few_events({s5["g1"]: g1, s5["g2"]: g2})
    else:
        # Chance that n seeds show no grokker when 10% of seeds grok (the study: ~4% + ~6%).
        verdict = (f"not comparable at this scale: {n} seeds (study: 100); with {_percent(sum(study))} grokkers, "
                   f"{n} seeds hold none with probability {(1 - sum(study)) ** n:.0%}")
    return Reproduced(4, "S5 vs A5xZ2: grokked S5 / A5xZ2",
                      f"about {_percent(study[0])} / {_percent(study[1])} of 100 seeds", book,
                      f"{n} seeds, {_settings(s5)}, bias", verdict)


def chapter_5(results: dict) -> list[Reproduced]:
    from lib.grokking.study import PUBLISHED_S5_LLC, S5_MEASURES_PROTOCOL    # the study's numbers, written once

    rows = []
    s5 = results["s5_llc_over_training"]
    published = PUBLISHED_S5_LLC
    outcome_names = ("grokked S5", "grokked A5xZ2", "neither")
    # Like for like: each seed beside the study's instance with the same outcome (the study picked
    # one instance per outcome); seeds that never fit their training set have no meaningful LLC.
    courses = []
    for k, (llc, fitted) in enumerate(zip(s5["llc"], s5["fitted_epoch"])):
        kept = [value for epoch, value in zip(s5["epochs"], llc) if fitted >= 0 and epoch >= fitted]
        if kept:
            courses.append((s5["outcome"][k], max(kept), kept[-1]))
    if courses:
        seeds, instances = len(courses), published["instances"]
        outcomes_seen = {outcome for outcome, _, _ in courses}
        epochs = ", ".join(str(e) for e in s5["epochs"])
        pairs = []
        for outcome, peak, end in courses:
            i = published["outcomes"].index(("grokked_g1", "grokked_g2", "neither")[outcome])
            pairs.append(f"{outcome_names[outcome]}: {peak:,.0f} -> {end:,.0f} against the study's "
                         f"{published['peaks'][i]:,} -> {published['finals'][i]} ({end / published['finals'][i]:.2f} "
                         "times its final)")
        book = "; ".join(pairs) + f" ({seeds} seed{'s' if seeds != 1 else ''})"
        # One seed per outcome is the study's design; fewer cannot separate the outcome from the seed.
        if seeds < instances or len(outcomes_seen) < instances:
            verdict = (f"not comparable: {seeds} seed{'s' if seeds != 1 else ''} "
                       f"({', '.join(outcome_names[o] for o in sorted(outcomes_seen))}) against the study's one "
                       f"instance per outcome, whose finals span {min(published['finals'])}-{max(published['finals'])} "
                       "by outcome; a verdict needs a seed of each outcome (`-p s5_seeds` at the published scale)")
        else:
            inside = all(min(published["finals"]) <= end <= max(published["finals"]) for _, _, end in courses)
            verdict = (f"reproduced: every seed's final inside the study's range ({seeds} seeds)" if inside else
                       f"differs: a final outside the study's range ({seeds} seeds)")
        rows.append(Reproduced(
            5, "LLC of S5 vs A5xZ2 along training (bias, SGLD chains of 3,000 steps): highest -> final, by outcome",
            f"{min(published['peaks']):,}-{max(published['peaks']):,} -> "
            f"{min(published['finals'])}-{max(published['finals'])} ({instances} instances, one per outcome)",
            book,
            f"{seeds} seed{'s' if seeds != 1 else ''}; {s5['chains']} chains x {s5['steps']:,} steps at epochs "
            f"{epochs} (study: {published['chains']} chains x {published['steps']:,} steps every "
            f"{published['checkpoint_every']} epochs)",
            verdict))
    over_time = results.get("measures_over_time")
    if over_time:
        rows.append(_measures_over_time_row(over_time, S5_MEASURES_PROTOCOL))
    return rows


def _measures_over_time_row(over_time: dict, protocol: dict) -> Reproduced:
    """Chapter 5: the study's claim that the LLC tracks the generalization gap best, against the
    book's Spearman ranking over the sparse grid's common checkpoints."""
    settings, claim, sparse = over_time["settings"], over_time["claim"], over_time["sparse"]
    names = {"llc": "LLC", "inverse_margin": "inverse margin", "train_loss": "training loss",
             "pac_bayes_sharpness": "PAC-Bayes sharpness", "path_norm": "path norm", "l2_norm": "L2 norm",
             "distance_from_init": "distance from init", "spectral_product": "spectral product",
             "frobenius_product": "Frobenius product"}
    def missing(value) -> bool:                      # NaN is written to the JSON as null
        return value is None or value != value

    def text(value) -> str:
        return "undefined" if missing(value) else f"{value:.2f}"

    order = sorted(sparse["spearman"], key=lambda m: (missing(sparse["spearman"][m]),
                                                      0.0 if missing(sparse["spearman"][m]) else -sparse["spearman"][m]))
    book = (f"best: {names.get(claim['best'], claim['best'])} ({text(claim['best_spearman'])}); LLC ranks "
            f"{claim['llc_rank']} of {claim['n_measures']} ({text(claim['llc_spearman'])}); order: "
            + ", ".join(names.get(m, m) for m in order))
    study_scale = (settings["sparse_every"] == protocol["checkpoint_every"] and settings["llc_chains"] >= protocol["llc_chains"]
                   and settings["llc_steps"] >= protocol["llc_steps"]
                   and settings["pac_bayes_bisection_draws"] >= protocol["pac_bayes_bisection_draws"])
    scale = (f"one S5 model (d = {settings['d']}, no bias, {settings['train_fraction']:.0%} of the table, "
             f"{settings['epochs']:,} epochs); Spearman over {sparse['checkpoints']} common checkpoints "
             f"(every {settings['sparse_every']} epochs), LLC {settings['llc_chains']} chains x "
             f"{settings['llc_steps']:,} steps, PAC-Bayes {settings['pac_bayes_doubling_draws']}/"
             f"{settings['pac_bayes_bisection_draws']} draws (study: {protocol['checkpoints']} checkpoints every "
             f"{protocol['checkpoint_every']} epochs, {protocol['llc_chains']} x {protocol['llc_steps']:,}, "
             f"{protocol['pac_bayes_doubling_draws']}/{protocol['pac_bayes_bisection_draws']} draws)")
    if claim["reproduced"]:
        verdict = "reproduced" + ("" if study_scale else " (on this run's sparser grid and shorter chains)")
    elif study_scale:
        verdict = (f"differs: the {names.get(claim['best'], claim['best'])} follows the gap more closely "
                   f"({text(claim['best_spearman'])} against the LLC's {text(claim['llc_spearman'])})")
    else:
        verdict = (f"not comparable at this scale: here the LLC ranks {claim['llc_rank']} ({text(claim['llc_spearman'])} "
                   f"against {text(claim['best_spearman'])}) with {settings['llc_chains']} x {settings['llc_steps']:,}-step "
                   f"chains at {sparse['checkpoints']} checkpoints; the study's grid needs `-p measures_sparse_every 3 "
                   "-p measures_llc_chains 5 -p measures_llc_steps 3000 -p pac_bayes_doubling_draws 100 "
                   "-p pac_bayes_bisection_draws 1000` (a GPU)")
    # One trained model, as in the study: the verdict says so itself.
    return Reproduced(5, "measures over time: which follows the generalization gap best (Spearman over checkpoints)",
                      "the LLC; inverse margin and training loss also do well (plots of 667 checkpoints)",
                      book, scale, verdict + " (one model, as the study's)")


def chapter_6(results: dict) -> list[Reproduced]:
    # the study's numbers and protocols, written once
    from lib.grokking.study import PUBLISHED_FLIP_PROTOCOL, PUBLISHED_UNGROK_SHARES
    from lib.grokking.transplant import AUTHORS_CRITERION

    rows = []
    tv = results["total_variation"]
    # Like for like: the flips of the sweep with the bias (the study's model) where the chapter
    # measured them, else those of the sweep without it, which the verdict then names.
    biased = results.get("total_variation_with_bias")
    model = "with the bias" if biased else "without the bias"
    protocol = PUBLISHED_FLIP_PROTOCOL
    first, last = tv.get("authors_epochs", tv["epochs"][:1] + tv["epochs"][-1:])
    every, intervals = tv.get("authors_every", protocol["every"]), tv.get("authors_intervals", protocol["intervals"])
    same_window = (every, intervals) == (protocol["every"], protocol["intervals"]) and last == protocol["epochs"]
    for r in (biased or tv)["by_outcome"]:
        if "authors_flip_rate_mean" not in r:
            continue
        published, mean = r["published_flip_rate"], r["authors_flip_rate_mean"]
        low, high = r["authors_flip_rate_low"], r["authors_flip_rate_high"]
        scale = (f"{r['count']} seeds of the sweep {model} ({r['seeds_flipping_authors']} flip at all); "
                 f"all 576 pairs, every {every} epochs, last {intervals} intervals (epochs {first}-{last}); the "
                 f"study: {protocol['instances']:,} seeds with the bias, every {protocol['every']}, last "
                 f"{protocol['intervals']}")
        if not same_window:
            verdict = (f"not comparable at this scale: needs the authors' spacing (every {protocol['every']} epochs, "
                       f"last {protocol['intervals']} intervals of {protocol['epochs']:,} epochs)")
        elif low is None or high is None:           # one seed: no interval (NaN is written as null)
            verdict = (f"not comparable at this scale: {r['count']} seed(s), too few for an interval (the study's run "
                       f"had {protocol['a4_seeds']} A4xZ2 grokkers among {protocol['instances']:,} seeds)")
        elif r["seeds_flipping_authors"] < FEW_EVENTS:
            # A mean over seeds of which only a handful flip at all moves with each of them.
            others = [f"{o['group']}'s {o['published_flip_rate']:.2g}" for o in (biased or tv)["by_outcome"]
                      if o is not r and "published_flip_rate" in o and low <= o["published_flip_rate"] <= high]
            verdict = (f"too few events: {r['seeds_flipping_authors']} of {r['count']} seeds flip at all; the 95% "
                       f"interval {low:.2g} to {high:.2g} holds the published {published:.2g}"
                       if low <= published <= high else
                       f"too few events: {r['seeds_flipping_authors']} of {r['count']} seeds flip at all; the 95% "
                       f"interval {low:.2g} to {high:.2g} misses the published {published:.2g}")
            if others:
                verdict += f" and also {', '.join(others)}, so it separates nothing"
        elif low <= published <= high:
            verdict = f"reproduced (inside the bootstrap interval of this run's mean; model {model})"
        else:
            where = "above" if mean > published else "below"
            verdict = (f"differs: this run's mean is {where} the study's, 95% interval {low:.2g} to {high:.2g} over "
                       f"{r['count']} seeds, {r['seeds_flipping_authors']} of which flip at all"
                       + ("" if biased else "; the model here has no bias (the study's had it)"))
        rows.append(Reproduced(6, f"argmax-flip rate late in training, the authors' definition, {r['group']}",
                               f"{published:.2g}", f"{mean:.2g}", scale, verdict))
    transplanted = results["transplant"]
    if transplanted and all("criteria" in r for r in transplanted):
        directions = " / ".join(f"{r['first_group']} first" for r in transplanted)
        from lib.grokking.transplant import CRITERIA       # the criteria in the chapter's order
        names = [name for name in CRITERIA if name in transplanted[0]["criteria"]] or list(transplanted[0]["criteria"])
        def inside(entry: dict, share: float) -> bool:     # NaN is written to the JSON as null
            return entry["low"] is not None and entry["high"] is not None and entry["low"] <= share <= entry["high"]

        book = "; ".join(f"{name}: " + " / ".join("-" if r["criteria"][name]["share"] is None else
                                                  f"{_percent(r['criteria'][name]['share'])} "
                                                  f"({r['criteria'][name]['ungrokked']} of "
                                                  f"{r['criteria'][name]['grokked_first']})" for r in transplanted)
                         for name in names)

        def events(name: str) -> str:                     # ungrokked seeds per direction, flagged when few
            counts = [r["criteria"][name]["ungrokked"] for r in transplanted]
            return " / ".join(map(str, counts)) + (" events: too few" if min(counts) < FEW_EVENTS else " events")
        matching = [name for name in names
                    if all(inside(r["criteria"][name], share) for r, share in zip(transplanted, PUBLISHED_UNGROK_SHARES))]
        transplant_protocol = results.get("transplant_protocol", {})
        scale = (" / ".join(str(r["criteria"][names[0]]["grokked_first"]) for r in transplanted)
                 + f" seeds that learned the group; phase 1 on {transplant_protocol.get('train_fraction', '?')} of "
                 f"its table for {transplant_protocol.get('first_epochs', '?')} epochs, then "
                 f"{transplant_protocol.get('second_epochs', '?')} on the intersection (the authors' protocol)")
        authors = AUTHORS_CRITERION                      # the criterion the authors' code records
        if any(r["criteria"][names[0]]["grokked_first"] == 0 for r in transplanted):
            verdict = "not comparable at this scale: no seed learned the group in phase 1"
        elif authors in matching:
            verdict = (f"reproduced under the authors' coded criterion ({authors}; inside both Wilson intervals; "
                       f"{events(authors)})")
        elif matching:
            verdict = (f"differs: under the authors' coded criterion ({authors}) "
                       + " / ".join(_percent(r["criteria"][authors]["share"]) for r in transplanted)
                       + f" ({events(authors)}); the published shares lie inside both intervals only under "
                       + ", ".join(f"{name} ({events(name)})" for name in matching)
                       + f", a criterion their code does not use (one of {len(names)} tried)")
        else:
            verdict = ("differs: not reproduced with the authors' own protocol (no criterion's Wilson interval holds "
                       "the published share in both directions); the number is not stored in their repository, and "
                       "getting it needs the run it came from (seeds, phase-1 length, criterion) or a sweep of those "
                       "choices at the published scale")
        rows.append(Reproduced(6, f"transplant: share that ungroks ({directions})",
                               " / ".join(_percent(s) for s in PUBLISHED_UNGROK_SHARES), book, scale, verdict))
    sketch = results.get("jacobian_sketch", {})
    if "verdicts" in sketch:
        authors = sketch["published"]
        scale = (f"P = {sketch['n_parameters']:,}, {sketch['steps']:,} steps, segments of {sketch['segment']}, "
                 f"{sketch['directions']} directions; seed {sketch['chosen_seed']}, earliest to grok of "
                 f"{sketch['seeds_screened']} screened")
        grokked = f"groks at step {sketch['grok_step']:,}; " if sketch["grok_step"] > 0 else "does not grok; "
        study = f"P = {authors['n_parameters']:,}, {authors['steps']:,} steps"
        rows.append(Reproduced(
            6, "training Jacobian: no bulk of singular values near 1", f"no bulk ({study})",
            grokked + f"at step {sketch['end_step']:,} at least {sketch['end_estimates_above_bulk']} singular values "
            f"exceed 1.1; at most {sketch['end_bulk_share_bound']:.1%} reach 0.9"
            + (" (the tail bound is empty)" if sketch["end_bulk_share_bound"] >= 1 else ""),
            scale, sketch["verdicts"]["no_bulk"] + " (one seed read)"))
        growths = [r["growth_after_grokking"] for r in sketch["growth_by_seed"] if r["grok_step"] > 0]
        rows.append(Reproduced(
            6, "training Jacobian: blow-up late in training", f"blows up to infinity ({study})",
            grokked + (f"largest singular value from grokking to step {sketch['steps']:,}: x"
                       + ", x".join(f"{g:.2g}" for g in growths) + f" ({len(growths)} grokking seeds; ratios of "
                       "two lower bounds, estimates)"
                       if growths else "no growth read"),
            scale, sketch["verdicts"]["blow_up"]))
    return rows


#: Results JSON name -> its rows.
CHAPTERS: dict[str, Callable[[dict], list[Reproduced]]] = {
    "01_handcrafted_bfs": chapter_1, "02_training": chapter_2, "03_finetuning_generalization": chapter_3,
    "04_ambiguous_grokking": chapter_4, "05_complexity": chapter_5, "06_determination": chapter_6,
}


def reproduced_rows(results: dict[str, dict]) -> list[Reproduced]:
    """The rows of every chapter whose results JSON is in `results` (name -> JSON), in order."""
    return [row for name, rows_of in CHAPTERS.items() if name in results for row in rows_of(results[name])]


#: The chapters' titles in the index's tables of what is reproduced.
CHAPTER_TITLES = {1: "Chapter 1: the hand-built BFS transformer", 2: "Chapter 2: training on shortest paths",
                  3: "Chapter 3: fine-tuning and generalization", 4: "Chapter 4: ambiguous grokking",
                  5: "Chapter 5: complexity of the grokked solutions", 6: "Chapter 6: when the choice is made"}


#: The steps of `tools/published.py` (its STEPS, in priority order) and the rows each gives: the
#: chapter's rows for what the step ran at the study's scale. A chapter-4 step runs its other
#: sweeps at a few seeds, so only its own sweep's rows are taken; chapter 2's transition rows at
#: the study's scale come from its main run (one seed).
PUBLISHED_STEPS: dict[str, Callable[[dict], list[Reproduced]]] = {
    "ch2_first300": first_transitions,
    "ch2_published": lambda results: chapter_2(results)[:1] + first_transitions(results),
    "ch3_published": lambda results: chapter_3(results),
    "ch4_s4_10k": lambda results: [r for r in chapter_4(results) if r.quantity.startswith("S4 vs A4xZ2")],
    "ch4_s5_100": lambda results: [r for r in chapter_4(results) if r.quantity.startswith("S5 vs A5xZ2")],
}


@dataclass(frozen=True)
class AtStudyScale:
    """A row judged on a run at the study's scale (a finished `tools/published.py` step): the
    row, and where it comes from (the step, its device, its wall time and date)."""

    row: Reproduced
    source: str


def published_rows(steps: dict[str, tuple[dict, dict]]) -> dict[str, AtStudyScale]:
    """The rows at the study's scale by quantity, from finished steps (name -> (its step.json,
    its chapter's results JSON)); a later step of `PUBLISHED_STEPS` replaces an earlier one's row
    of the same quantity (the full chapter-2 run replaces its first 300 steps)."""
    found = {}
    for name, rows_of in PUBLISHED_STEPS.items():
        if name not in steps:
            continue
        record, results = steps[name]
        source = (f"`tools/published.py` step {name} on {record['device']}, {record['wall_s']:.0f} s, "
                  f"{record['date'][:10]}")
        found.update({row.quantity: AtStudyScale(row, source) for row in rows_of(results)})
    return found


def reproduced_table(rows: list[Reproduced], smoke: bool, published: dict[str, AtStudyScale] | None = None) -> str:
    """The index's tables, one per chapter: the short verdict word first (`verdict_word`), the
    quantity, the study's number and this book's, and, for a chapter with rows run at the study's
    scale (`published_rows`), their verdict word and number in a fifth column; then, folded
    under each table, every row's scale and full verdict. A warning line leads when the results
    came from smoke runs."""
    published = published or {}
    parts = ["**These numbers come from smoke runs (tests), not from the book's defaults.**"] if smoke else []
    for chapter in sorted({r.chapter for r in rows} | {p.row.chapter for p in published.values()}):
        mine = [r for r in rows if r.chapter == chapter]
        mine += [Reproduced(chapter, p.row.quantity, p.row.study, "not run at the book's scale", "-",
                            "not comparable at this scale: run at the study's scale only (next column)")
                 for quantity, p in published.items()
                 if p.row.chapter == chapter and quantity not in {r.quantity for r in mine}]
        at_scale = [published.get(r.quantity) for r in mine]
        header = ["verdict", "quantity", "the study", "this book"]
        cells = [[f"**{verdict_word(r.verdict)}**", r.quantity, r.study, r.book] for r in mine]
        if any(at_scale):
            header.append("at the study's scale")
            for line, p in zip(cells, at_scale):
                line.append(f"**{verdict_word(p.row.verdict)}**: {p.row.book}" if p else "")
        parts.append(f"### {CHAPTER_TITLES.get(chapter, f'Chapter {chapter}')}")
        parts.append(markdown_table(header, cells))
        notes = "\n".join(f"{i}. *{r.quantity}* ({r.scale}): {r.verdict}"
                          + (f". At the study's scale ({p.row.scale}; {p.source}): {p.row.verdict}" if p else "")
                          for i, (r, p) in enumerate(zip(mine, at_scale), 1))
        parts.append(f"<details><summary>Scale and full verdict of each row</summary>\n\n{notes}\n\n</details>")
    return "\n\n".join(parts)


def with_table(page: str, table: str) -> str:
    """`page` (the index's markdown) with the text between the markers replaced by `table`."""
    if page.count(START_MARKER) != 1 or page.count(END_MARKER) != 1:
        raise ValueError(f"the page must hold one {START_MARKER!r} line and one {END_MARKER!r} line.")
    head, rest = page.split(START_MARKER)
    _, tail = rest.split(END_MARKER)
    return f"{head}{START_MARKER}\n\n{table}\n\n{END_MARKER}{tail}"


__all__ = ["CHAPTERS", "CHAPTER_TITLES", "END_MARKER", "PENDING", "PUBLISHED_STEPS", "START_MARKER", "VERDICT_WORDS",
           "AtStudyScale", "Reproduced", "published_rows", "reproduced_rows", "reproduced_table", "verdict_category",
           "verdict_word", "with_table"]
