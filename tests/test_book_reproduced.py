"""The index page's table of published numbers beside this book's: the named rules that gather its
numbers (lib/book/verdict_rules.py) on hand-made numbers, the rows' YAML (book/reproduced/)
against the rules, the one verdict rule (lib/book/verdict.py) and the committed results, and the
rows and tables they give."""

import json
import sys
from pathlib import Path

import pytest

from lib.book import verdict_rules as rules
from lib.book.reproduced import (CHAPTERS, END_MARKER, PUBLISHED_STEPS, START_MARKER, UNJUDGED_WORDS, chapter_rows,
                                 keys_read, published_rows, reproduced_rows, reproduced_table, resolve, row_parts,
                                 text_parts, waiting_rows, with_table)
from lib.book.verdict import WORDS
from lib.book.verdict_rules import RULES

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import published  # noqa: E402
from lib.book.reproduced import _study as reproduced_study  # noqa: E402  (tools/published.py: a script folder, not a package)
import results_table  # noqa: E402

#: One seed's LLC along training that fit its training set at epoch 60 and ended "neither" (chapter 5).
ONE_SEED_LLC = {"epochs": [80, 2000], "llc": [[4600.0, 1200.0]], "fitted_epoch": [60], "chains": 3, "steps": 3000,
                "outcome": [2]}
#: Chapter 2's published scale as its results JSON records it.
CH2_PUBLISHED = {"n_layers": 11, "n_max": 15, "phase_steps": [6400, 3200], "final_loss": 0.001623, "batch_size": 32768}


# The rules, on hand-made numbers.

def test_interval_position_and_side_rules():
    assert rules.interval_contains(0.5, 0.4, 0.6).word == "inside"
    assert rules.interval_contains(0.4, 0.4, 0.6).word == "inside"              # the ends belong to it
    assert rules.interval_contains(0.7, 0.4, 0.6).word == "outside"
    assert rules.interval_contains(0.5, None, 0.6).word == "no interval"
    assert [rules.position(v, 0.25, 0.75).word for v in (0.1, 0.25, 0.5, 0.8)] == ["below", "inside", "inside", "above"]
    assert rules.side(0.36, 0.335).word == "above" and rules.side(0.3, 0.3).word == "below"
    assert rules.side(0.36, 0.3).numbers["distance"] == pytest.approx(0.2)
    assert rules.side(1.0, 0.0).numbers["distance"] is None
    assert rules.below(7.9e-5, 1e-6).word == "not below" and rules.below(1e-7, 1e-6).word == "below"


def test_count_rules():
    assert rules.at_least([6, 8], 5).word == "all" and rules.at_least([6, 4], 5).word == "not all"
    assert rules.at_least([5, 3000], [5, 3000]).word == "all" and rules.at_least(0.99, 1).word == "not all"
    assert rules.few_events([53, 4], ["S4", "A4xZ2"]).numbers["events"] == [{"name": "A4xZ2", "count": 4}]
    assert rules.few_events([5, 6], ["a", "b"]).word == "enough"
    assert rules.count([1]).word == "one" and rules.count([1, 2, 3]).numbers["n"] == 3
    assert rules.count([]).word == "several"                         # zero takes the plural
    assert rules.positive(20).word == "positive" and rules.positive(0).word == rules.positive(None).word == "not positive"
    assert rules.total([6400, 3200]).numbers["total"] == 9600
    assert rules.extent((505, 587, 598)).numbers == {"low": 505, "high": 598}
    chance = rules.chance_of_none([0.04, 0.06], 8).numbers
    assert chance["share"] == pytest.approx(0.1) and f"{chance['chance']:.0%}" == "43%"


def test_flag_equality_and_lookup_rules():
    assert rules.equal([4, 8, 2500], [11, 15, 9600]).word == "different" and rules.equal(1.0, 1).word == "equal"
    assert rules.given(0.0).word == "given" and rules.given([0.1, None]).word == "missing"
    assert rules.starts_with("any_target", "any").word == "starts" and rules.starts_with("on_path", "any").word == "other"
    assert rules.all_true([True, False], ["S4", "A4xZ2"]).numbers["failing"] == ["A4xZ2"]
    assert rules.all_true([True, True], ["S4", "A4xZ2"]).word == "all"
    inside = rules.all_inside([0.04, 0.06], [[0.028, 0.125], [0.07, 0.15]], ["S5", "A5xZ2"])
    assert (inside.word, inside.numbers["failing"]) == ("not all", ["A5xZ2"])
    assert rules.all_have([{"criteria": 1}, {}], "criteria").word == "not all"
    assert rules.first_present([{}, {"a": 1}]).numbers["value"] == {"a": 1}
    assert rules.first_present([0, 5]).word == "first"                             # zero is there
    assert rules.lookup({"t": {"mean": 1}}, "t").numbers == {"mean": 1} and rules.lookup(None, "t").word == "missing"
    assert rules.lookup([{"test": "t", "r": 2}], "t", field="test").numbers["r"] == 2
    assert rules.matching_entries({"a": 336, "b": 7920}, {"a": 336, "b": 7921}).numbers == {"equal": 1, "total": 2}


def test_list_rules():
    items = [{"group": "a", "rate": 0.3}, {"group": "b", "rate": 0.5}, {"group": "c"}]
    assert rules.others_inside(items, items[0], 0.2, 0.6, "rate").numbers["items"] == [items[1]]
    assert rules.others_inside(items, items[1], 0.4, 0.6, "rate").word == "none"
    seeds = [{"grok_step": 1000, "g": 2.0}, {"grok_step": 0, "g": 1.0}]
    assert rules.positive_items(seeds, "grok_step").numbers == {"items": seeds[:1], "count": 1}
    ranked = rules.ranking({"llc": 0.5, "train_loss": 0.8, "l2_norm": float("nan"), "x": 0.6}, "train_loss",
                           {"llc": "LLC", "train_loss": "training loss"}).numbers
    assert ranked == {"order": ["training loss", "x", "LLC", "l2_norm"], "best": "training loss"}


def test_chapter_helpers():
    held = rules.seeds_holding({"1": [45, 60, None, 55]}, {"1": [45, 60, 30, 55]}, [0, 1, 2, 3], [1], 50)
    assert held.word == "holds"
    assert held.numbers["lengths"] == [{"length": 1, "held": 3, "first": 45, "last": 60, "drops": 4,
                                        "drop_first": 30, "drop_last": 60}]    # every seed's drop, held or not
    assert rules.seeds_holding({"1": [None, None, 70, 80]}, {}, [0, 1, 2, 3], [1], 50).word == "fails"
    assert rules.seeds_holding({}, {}, [0, 1], [2], 80).numbers["lengths"][0]["first"] is None
    drops = {"1": {"dropped": True, "step": 70}, "2": {"dropped": False, "reason": "flat"}}
    words = [rules.one_seed_drop(drops, {"1": 70}, {}, n).word for n in (1, 2, 3)]
    assert words == ["holds", "no drop", "not evaluated"]
    assert rules.one_seed_drop(drops, {}, {"1": [{"transition": True}]}, 1).word == "beyond rival"
    assert rules.one_seed_drop(drops, {}, {}, 1).word == "rival"
    pairs = [{"experiment": e, "g1": "G1", "g2": "G2", "count_grokked_g1": g1, "count_grokked_g2": g2, "n_instances": n}
             for e, g1, g2, n in (("z35_lr0.01", 0, 1, 16), ("z35_lr0.05", 0, 0, 16), ("z35_book", 0, 7, 24))]
    z35 = rules.grokked_counts(pairs, prefix="z35_lr")
    assert (z35.word, z35.numbers["n"], z35.numbers["either"], z35.numbers["missing"]) == ("one", 32, 1, ["G1"])
    assert rules.grokked_counts(pairs, experiment="z35_book").numbers["g2"] == 7
    assert rules.grokked_counts(pairs, experiment="z48").word == "absent"
    assert rules.grokked_counts(None, experiment="z48").numbers["first"] is None


def test_llc_and_transplant_helpers():
    from lib.grokking.study import PUBLISHED_S5_LLC
    from lib.grokking.transplant import AUTHORS_CRITERION, CRITERIA
    settings = {"outcomes": ["grokked_g1", "grokked_g2", "neither"], "names": ["grokked S5", "grokked A5xZ2", "neither"]}
    one = rules.llc_courses([[4600.0, 1200.0]], [60], [80, 2000], [2], PUBLISHED_S5_LLC, **settings)
    assert one.word == "too few" and one.numbers["courses"][0]["ratio"] == pytest.approx(1200 / 598)
    unfit = rules.llc_courses([[4600.0, 1200.0]], [-1], [80, 2000], [2], PUBLISHED_S5_LLC, **settings)
    assert unfit.word == "none"
    each = rules.llc_courses([[4580.0, 510.0], [4570.0, 590.0], [4600.0, 596.0]], [60] * 3, [80, 2000], [0, 1, 2],
                             PUBLISHED_S5_LLC, **settings)
    assert each.word == "inside" and each.numbers["seen"] == ["grokked S5", "grokked A5xZ2", "neither"]

    def entry(share, low, high):
        return {"grokked_first": 64, "ungrokked": round(64 * share), "share": share, "low": low, "high": high}
    criteria = {"below 0.999": entry(0.8, 0.7, 0.88), AUTHORS_CRITERION: entry(0.55, 0.41, 0.65),
                "collapse to the intersection": entry(0.05, 0.015, 0.13)}
    table = rules.criteria_against_shares([{"criteria": criteria}] * 2, CRITERIA, [0.07, 0.08], AUTHORS_CRITERION)
    assert table.word == "other criteria" and [c["name"] for c in table.numbers["matching"]] == [
        "collapse to the intersection"]
    assert table.numbers["tried"] == 3 and table.numbers["matching"][0]["few"]


# The rows' YAML, against the rules and the committed results.

def _rows(chapter):
    return chapter["rows"] + chapter.get("study_scale_rows", [])


def test_every_rule_the_yaml_names_exists_and_every_word_it_reads_is_one_the_rule_returns():
    for name, chapter in CHAPTERS.items():
        for row in _rows(chapter):
            lets = row.get("let", {})
            for kind, spec in row_parts(row):
                if kind not in ("rule", "condition"):
                    continue
                if "of" in spec:
                    assert spec["of"] in lets and "rule" in lets[spec["of"]], (name, row["id"], spec["of"])
                rule = RULES[spec["rule"] if "rule" in spec else lets[spec["of"]]["rule"]]
                words = set(spec.get("texts", {}))
                if kind == "condition":
                    words = set(spec["is"] if isinstance(spec["is"], list) else [spec["is"]])
                assert words <= set(rule.words), (name, row["id"], words - set(rule.words))


def test_every_verdict_is_judged_by_the_one_rule_and_each_text_leads_with_its_word():
    """Each row's verdict lists its comparisons (`judge:`) for `lib.book.verdict.judge` and a text
    per word it may give; each text leads with that word, or with a `let` (or `cases`) whose texts
    do: no row picks its word any other way."""
    def leads(spec, word, row, name):
        if isinstance(spec, dict) and "cases" in spec:
            for case in spec["cases"]:
                leads(case["text"], word, row, name)
        elif isinstance(spec, dict) and "bind" in spec:
            leads(spec["text"], word, row, name)
        elif spec.startswith("{"):
            field = spec[1:].split("}")[0]
            assert field in row.get("let", {}), (name, row["id"], spec)
            leads(row["let"][field], word, row, name)
        else:
            assert spec.startswith(word), (name, row["id"], word, spec)

    for name, chapter in CHAPTERS.items():
        for row in _rows(chapter):
            verdict = row["verdict"]
            assert set(verdict) == {"judge", "texts"} and verdict["judge"], (name, row["id"])
            assert set(verdict["texts"]) <= set(WORDS), (name, row["id"], set(verdict["texts"]) - set(WORDS))
            for word, text in verdict["texts"].items():
                leads(text, word, row, name)


def test_the_index_shows_the_word_the_one_rule_gives_each_rows_recorded_numbers():
    """Every index row's word is `judge` of the comparisons its YAML lists, fed the committed
    run's recorded numbers: rebuilt here outside the table code and compared with book/index.md."""
    from lib.book import reproduced
    from lib.book.verdict import judge

    import verdict_stability   # tools/verdict_stability.py reads the page's table
    shown = {quantity: word for (_, quantity), (word, _) in
             verdict_stability.rows_from_page((ROOT / "book" / "index.md").read_text()).items()}
    results = {name: json.loads((ROOT / "notebooks" / "results" / f"{name}.json").read_text()) for name in CHAPTERS}
    judged = 0
    for name, chapter in CHAPTERS.items():
        base = {**results[name], "study": reproduced._study(name)}
        for spec in chapter["rows"]:
            scope = reproduced._Scope(base, spec.get("let", {}))
            items = [None] if "each" not in spec else resolve(scope, spec["each"]) or []
            for item in items:
                inner = scope if item is None else scope.child(item=item)
                if not reproduced._holds(spec.get("when", []), inner):
                    continue
                evidence = [e for e in (reproduced._evidence(c, inner) for c in spec["verdict"]["judge"]) if e]
                quantity = reproduced._evaluate(spec["quantity"], inner)
                assert shown[quantity] == judge(*evidence), (name, quantity)
                judged += 1
    assert judged == len(reproduced_rows(results))


def test_ids_are_unique_and_every_published_step_has_its_rows_and_smoke_or_unfinished_steps_are_left_out(tmp_path):
    assert set(PUBLISHED_STEPS) == {step.name for step in published.STEPS}
    for step, (name, ids) in PUBLISHED_STEPS.items():
        known = [row["id"] for row in _rows(CHAPTERS[name])]
        assert len(known) == len(set(known)) and set(ids) <= set(known), step
    (tmp_path / "ch2_first300").mkdir()
    (tmp_path / "ch2_first300" / "step.json").write_text(json.dumps({"chapter": "02_training", "smoke": True}))
    (tmp_path / "ch2_first300" / "02_training.json").write_text("{}")
    (tmp_path / "ch4_s5_100").mkdir()                       # no step.json: unfinished
    assert results_table.published_steps(tmp_path) == {}


def test_every_results_key_a_row_reads_is_in_the_committed_results():
    """Each path into a chapter's results JSON (its first name a key of that JSON, not a `let`
    of the row) names a key of the committed run's JSON (notebooks/results/; null is a value)."""
    absent = object()
    for name, chapter in CHAPTERS.items():
        results = json.loads((ROOT / "notebooks" / "results" / f"{name}.json").read_text())
        for row in _rows(chapter):
            for path in {value for kind, value in row_parts(row) if kind in ("path", "field")}:
                root = path.split(".")[0].split("[")[0]
                if root in results and root not in row.get("let", {}):
                    assert resolve(results, path, absent) is not absent, (name, row["id"], path)


def test_the_study_numbers_a_row_reads_are_in_its_file_or_a_lib_module():
    from lib.book.reproduced import STUDY_NUMBERS
    assert set(STUDY_NUMBERS) <= set(CHAPTERS)
    for name, chapter in CHAPTERS.items():
        assert all(not isinstance(v, dict) or "python" not in v for v in (chapter.get("study") or {}).values())
        for row in _rows(chapter):
            for path in {value for kind, value in row_parts(row) if kind in ("path", "field")}:
                if path.startswith("study."):
                    assert resolve({"study": reproduced_study(name)}, path) is not None, (name, row["id"], path)


def test_rows_come_from_each_chapters_results_and_missing_chapters_have_none():
    results = {
        "04_ambiguous_grokking": {
            "intersection_sizes": {"a": 336, "b": 7920}, "published_intersection_sizes": {"a": 336, "b": 7921},
            "published_comparisons": [{
                "experiment": "s4", "weight_decay": 2e-5, "grok_threshold": 0.999, "n_instances": 1000,
                "grokked_g1": {"fraction": 0.053, "count": 53, "low": 0.041, "high": 0.069},
                "grokked_g2": {"fraction": 0.004, "count": 4, "low": 0.0016, "high": 0.0102},
                "published": {"fraction_g1": 0.0603, "fraction_g2": 0.0043, "n_instances": 10000,
                              "inside_interval_g1": True, "inside_interval_g2": False}}]},
        "06_determination": {
            "total_variation": {"epochs": [2000, 3000], "authors_epochs": [2500, 3000], "authors_every": 5,
                                "authors_intervals": 100, "by_outcome": [
                {"group": "neither", "published_flip_rate": 6.5e-3, "test_flip_rate_mean": 0.02, "count": 20,
                 "authors_flip_rate_mean": 0.017, "authors_flip_rate_low": 0.01, "authors_flip_rate_high": 0.02,
                 "seeds_flipping_authors": 18}]},
            "transplant": [{"first_group": "S4", "criteria": {"below 0.999": {
                               "grokked_first": 40, "ungrokked": 25, "share": 0.625, "low": 0.47, "high": 0.76}}},
                           {"first_group": "A4xZ2", "criteria": {"below 0.999": {
                               "grokked_first": 42, "ungrokked": 34, "share": 0.81, "low": 0.67, "high": 0.9}}}],
            "transplant_protocol": {"train_fraction": 1.0, "first_epochs": 2000, "second_epochs": 2000}},
    }
    rows = reproduced_rows(results)
    assert [r.chapter for r in rows] == [4, 4, 6, 6]
    assert (rows[0].book, rows[0].verdict) == ("1 of 2 equal", "differs: see chapter 4's intersections table")
    assert (rows[1].study, rows[1].book, rows[1].scale) == (
        "6.03% / 0.43%", "5.3% / 0.4% (53 / 4; 95% intervals 4.1%-6.9% / 0.16%-1.02%)", "1,000 seeds (study: 10,000)")
    # A4xZ2's rate rests on 4 grokkers: the row takes the weaker word of its two rates.
    assert (rows[1].word, rows[1].verdict) == ("too few events", "too few events (grokkers: A4xZ2 4, fewer than 5 to "
                                               "measure a rate); the published fractions lie outside the 95% "
                                               "interval of A4xZ2")
    assert rows[1].quantity == "S4 vs A4xZ2, bias, weight decay 2e-05, accuracy >= 0.999: grokked S4 / A4xZ2"
    assert (rows[2].study, rows[2].book) == ("0.0065", "0.017") and "epochs 2500-3000" in rows[2].scale
    assert "the authors' definition" in rows[2].quantity and rows[2].verdict.startswith("differs: this run's mean is above")
    assert (rows[3].study, rows[3].book) == ("7% / 8%", "below 0.999: 62.5% (25 of 40) / 81% (34 of 42)")
    # Without the authors' coded criterion among those scored, the row cannot be judged by it.
    assert rows[3].verdict.startswith("not comparable at this scale: the run did not score the authors' coded "
                                      "criterion; no criterion's Wilson interval holds the published share")
    assert reproduced_rows({}) == []
    assert reproduced_table(rows, smoke=True).startswith("**These numbers come from smoke runs")
    table = reproduced_table(rows, smoke=False)
    assert "| **differs** | intersection sizes of the pairs |" in table
    assert table.startswith("### Chapter 4: ambiguous grokking") and "### Chapter 6" in table
    # The full verdict and the scale of each row are folded under its chapter's table.
    assert "1. *intersection sizes of the pairs* (exact): differs: see chapter 4's intersections table" in table


def test_the_table_replaces_only_the_text_between_the_markers():
    page = f"# Title\n\nbefore\n\n{START_MARKER}\nold table\n{END_MARKER}\n\nafter\n"
    new = with_table(page, "| a |\n|---|\n| 1 |")
    assert new.startswith("# Title\n\nbefore\n\n") and new.endswith("\n\nafter\n") and "old table" not in new
    assert with_table(new, "| b |") == with_table(page, "| b |")          # rewriting is idempotent
    with pytest.raises(ValueError, match="must hold one"):
        with_table("no markers here", "| a |")


def test_the_committed_index_holds_the_tables_the_committed_results_give():
    """book/index.md's tables are the ones built from the committed run's results JSON
    (notebooks/results/, one per chapter with rows), as `make notebooks` writes them."""
    committed = ROOT / "notebooks" / "results"
    assert {f"{name}.json" for name in CHAPTERS} <= {path.name for path in committed.glob("*.json")}
    results = {name: json.loads((committed / f"{name}.json").read_text()) for name in CHAPTERS}
    assert not any(r.get("smoke") for r in results.values()), "smoke results committed"
    page = (ROOT / "book" / "index.md").read_text()
    between = page.split(START_MARKER)[1].split(END_MARKER)[0]
    assert page == results_table.index_with_fresh_table(committed, page, ROOT / "results" / "published")
    assert between.count("| verdict | quantity | the study | this book |") == len(CHAPTERS)


def test_every_shortest_path_row_has_a_verdict_and_chapter_6_rows_carry_theirs():
    point = {"step": 0, "published": 0.403, "low": 0.3, "high": 0.6, "median": 0.5, "draws": 3, "within": True}
    later = {"step": 100, "published": 0.335, "low": 0.36, "high": 0.5, "median": 0.4, "draws": 3, "within": False}
    spread = {"values": [0.1, 0.2, 0.15], "mean": 0.15, "min": 0.1, "max": 0.2}
    results = {
        "01_handcrafted_bfs": {
            "seed_construction": {"n_vertices": 8, "n_graphs": 2000, "mse": 7.9e-5, "max_abs_error": 0.019},
            "damage_distribution": {
                "target": 0.403, "noise_draws": 10, "n_held_out": 500,
                "percentile": {"k": 49, "n": 480, "share": 0.102, "low": 0.078, "high": 0.132},
                "answer_key_query": {"k": 48, "n": 160, "share": 0.3, "low": 0.23, "high": 0.38},
                "other": {"k": 1, "n": 320, "share": 0.003, "low": 0.0006, "high": 0.017},
                "quantiles": {"0.05": 0.24, "0.5": 13.1, "0.95": 71.8}},
            "study_protocol": {
                "steps": 100, "draws": 20, "batch_size": 512, "learning_rate": 1e-6,
                "selection": {"count": 20, "target": 0.403, "low": 0.38, "high": 0.423},
                "comparison": {"steps": 100, "points": [point, later], "at_step": {
                    "step": 100, "published": 0.335, "published_ratio": 0.83, "within": False,
                    "mse": {"median": 0.36, "min": 0.34, "max": 0.372},
                    "at_or_below": {"k": 0, "n": 20, "low": 0.0, "high": 0.16},
                    "ratio": {"median": 0.87, "min": 4.6e-6, "max": 0.92},
                    "ratio_at_or_below": {"k": 4, "n": 20}},
                    "pairs": {"step": 100, "pairs": 20, "book_slower": {"k": 20, "n": 20, "low": 0.84, "high": 1.0},
                              "book_ratio": {"median": 0.981, "min": 0.961, "max": 0.994},
                              "study_ratio": {"median": 0.873}}}}},
        "03_finetuning_generalization": {
            "scale": {"large_n_max": 8, "small_n_max": 5, "unreachable_label": 8},
            "published_scale": {"large_n_max": 15, "small_n_max": 7, "unreachable_label": 15},
            "published_finetune_loss_before": 0.5531, "published_finetune_loss_after": 0.01472,
            "finetune_loss_before": 0.3, "finetune_loss_after": 0.001, "finetune_loss_over_seeds": spread,
            "test_mse_over_seeds": {"any_target_large_graphs": spread},
            "baseline_comparison": [{"test": "any_target_large_graphs", "study_ratio_to_baseline": 1.01,
                                     "ratio_to_baseline": {"min": 0.98, "max": 1.02}, "scale_accounts": True}],
            "generalization": [{"test": "any_target_large_graphs", "title": "Any target in large graphs",
                                "mse": 17.0, "published_mse": 72.87}]},
        "06_determination": {"total_variation": {"epochs": [1, 2], "authors_epochs": [1, 2], "authors_every": 1,
                                                 "authors_intervals": 1, "by_outcome": [
            {"group": "neither", "published_flip_rate": 6.5e-3, "test_flip_rate_mean": 0.017, "count": 20,
             "authors_flip_rate_mean": 0.017, "authors_flip_rate_low": 0.01, "authors_flip_rate_high": 0.02,
             "seeds_flipping_authors": 18}]},
            "transplant": []},
    }
    rows = reproduced_rows(results)
    verdicts = {(r.chapter, r.quantity): r.verdict for r in rows}
    chapter_1 = [r for r in rows if r.chapter == 1]
    assert chapter_1[0].verdict.startswith("differs")
    # The study's one draw against the whole damage distribution, then against the draws that started near it.
    assert chapter_1[1].verdict.startswith("reproduced (inside the damage distribution, in its lower tail: 49 of "
                                           "480 draws reach it, 48 of 160 answer-head key/query hits, 1 of 320 others)")
    assert chapter_1[1].book.startswith("percentile 10.2 (95% interval 7.8 to 13.2) of 480 draws")
    assert chapter_1[2].verdict.startswith("differs: outside the range over 20 draws (not counted by matrix: "
                                           "earlier code) of the draws that started near it")
    assert "the 20 draws nearest 0.403 (0.380 to 0.423)" in chapter_1[2].scale
    assert chapter_1[3].verdict.startswith("reproduced") and "(4.6e-06 to 0.92)" in chapter_1[3].book
    assert "stiff" in chapter_1[4].quantity
    # The study's number comes from its own construction: the book's is compared with it, not judged by it.
    assert chapter_1[4].verdict.startswith("not comparable: the study's number comes from its own construction")
    assert chapter_1[4].verdict.endswith("slowly here than on the study's construction in 20 of 20 pairs (95% "
                                         "interval 84% to 100%)")
    assert "5,000" in chapter_1[5].quantity and chapter_1[5].verdict.startswith("not comparable")
    assert chapter_1[5].book == "not measured"
    chapter_3 = [r for r in rows if r.chapter == 3]
    assert all(r.verdict.startswith("not comparable") for r in chapter_3)
    assert "graph size and the unreachable label account" in chapter_3[1].verdict
    assert "3 seeds" in chapter_3[1].book
    # Chapter 6's flip row judged on another snapshot spacing than the authors' is not comparable.
    assert [r.verdict.split(":")[0] for r in rows if r.chapter == 6] == ["not comparable at this scale"]
    assert "| verdict | quantity | the study | this book |" in reproduced_table(rows, smoke=False)
    assert len(verdicts) == len(rows)


def test_the_s5_llc_row_compares_each_seed_with_the_instance_of_its_outcome():
    (row,) = reproduced_rows({"05_complexity": {"s5_llc_over_training": ONE_SEED_LLC}})
    assert row.study == "4,558-4,601 -> 505-598 (3 instances, one per outcome)"
    assert row.book == "neither: 4,600 -> 1,200 against the study's 4,601 -> 598 (2.01 times its final) (1 seed)"
    assert row.scale == ("1 seed; 3 chains x 3,000 steps at epochs 80, 2000 (study: 3 chains x 3,000 steps every "
                         "10 epochs)")
    # One seed is never judged against the study's three instances, wherever it lands.
    assert row.verdict.startswith("not comparable: 1 seed (neither) against the study's one instance per outcome")
    inside = {**ONE_SEED_LLC, "llc": [[4580.0, 597.0]]}
    (row,) = reproduced_rows({"05_complexity": {"s5_llc_over_training": inside}})
    assert row.verdict.startswith("not comparable: 1 seed")
    # A seed of each outcome, as the study's one instance each: one run per outcome, inside its range or not.
    each = {"epochs": [80, 2000], "llc": [[4580.0, 510.0], [4570.0, 590.0], [4600.0, 596.0]],
            "fitted_epoch": [60, 60, 60], "chains": 3, "steps": 3000, "outcome": [0, 1, 2]}
    (row,) = reproduced_rows({"05_complexity": {"s5_llc_over_training": each}})
    assert (row.word, row.verdict) == ("one run", "one run per outcome, as the study's: 3 seeds, finals every one "
                                                  "inside the study's range")
    assert "grokked A5xZ2: 4,570 -> 590 against the study's 4,573 -> 587" in row.book
    (row,) = reproduced_rows({"05_complexity": {"s5_llc_over_training": {**each, "llc": each["llc"][:2] + [[4600.0, 700.0]]}}})
    assert row.word == "one run" and "some outside" in row.verdict


def test_the_measures_over_time_row_compares_the_study_claim_with_the_ranking():
    settings = {"d": 128, "train_fraction": 0.4, "epochs": 2000, "sparse_every": 150, "llc_chains": 2,
                "llc_steps": 300, "pac_bayes_doubling_draws": 10, "pac_bayes_bisection_draws": 30}
    over_time = {"settings": settings,
                 "sparse": {"checkpoints": 15, "spearman": {"llc": 0.5, "train_loss": 0.8, "l2_norm": 0.1}},
                 "claim": {"best": "train_loss", "best_spearman": 0.8, "llc_rank": 2, "llc_spearman": 0.5,
                           "n_measures": 3, "reproduced": False}}
    rows = reproduced_rows({"05_complexity": {"s5_llc_over_training": ONE_SEED_LLC, "measures_over_time": over_time}})
    row = rows[1]
    assert row.book == "best: training loss (0.80); LLC ranks 2 of 3 (0.50); order: training loss, LLC, L2 norm"
    assert "Spearman over 15 common checkpoints (every 150 epochs), LLC 2 chains x 300 steps" in row.scale
    assert row.verdict.startswith("not comparable at this scale: here the LLC ranks 2 (0.50 against 0.80)")
    at_scale = {**over_time, "settings": {**settings, "sparse_every": 3, "llc_chains": 5, "llc_steps": 3000,
                                          "pac_bayes_doubling_draws": 100, "pac_bayes_bisection_draws": 1000}}
    row = reproduced_rows({"05_complexity": {"s5_llc_over_training": ONE_SEED_LLC, "measures_over_time": at_scale}})[1]
    # One model against the study's one model: one run, whichever measure ranks first.
    assert row.verdict == "one run (one model, as the study's): the ranking does not agree with the study's"
    agrees = {**over_time, "claim": {**over_time["claim"], "best": "llc", "reproduced": True}}
    row = reproduced_rows({"05_complexity": {"s5_llc_over_training": ONE_SEED_LLC, "measures_over_time": agrees}})[1]
    assert row.word == "not comparable"           # this run's sparser grid and shorter chains
    from lib.chapters.ch5_results import measures_over_time_verdict
    from lib.grokking.study import S5_MEASURES_PROTOCOL
    for measures in (over_time, at_scale):        # the chapter records the same word
        assert measures_over_time_verdict({**measures, "study_protocol": S5_MEASURES_PROTOCOL}) == reproduced_rows(
            {"05_complexity": {"s5_llc_over_training": ONE_SEED_LLC, "measures_over_time": measures}})[1].word


def test_the_other_pairs_of_chapter_4_are_judged_against_what_the_study_says():
    def pair(key, g1, g2, n, **settings):
        return {"experiment": key, "g1": "G1", "g2": "G2", "count_grokked_g1": g1, "count_grokked_g2": g2,
                "n_instances": n, "embed_dim": 32, "hidden_dim": 64, "weight_decay": 2e-4, "epochs": 2000,
                "grok_threshold": 0.95, "tied_linear": True, "learning_rate": 0.01,
                "ci_grokked_g2": [0.0, 3.8415 / (n + 3.8415)], **settings}    # Wilson's upper end, no event

    def rows_for(*pairs, subsample=()):
        results = {"intersection_sizes": {}, "published_intersection_sizes": {}, "pairs": list(pairs),
                   "subsample": list(subsample), "published_notes": {"z48": "only G1", "z35": "either"}}
        return {r.quantity.split(":")[0]: r for r in reproduced_rows({"04_ambiguous_grokking": results})}

    rows = rows_for(pair("z48", 3, 0, 4), pair("z35_lr0.01", 0, 0, 2), pair("z35_lr0.05", 0, 0, 2, learning_rate=0.05),
                    pair("z35_book", 0, 7, 24, tied_linear=False, grok_threshold=0.999), pair("z100", 0, 0, 12),
                    pair("s5", 0, 0, 8),
                    subsample=[{"name": "S5_vs_A5xZ2", "train_fraction": 0.6, "fraction_intersection_grokked": 1.0,
                                "min_acc_intersection": 1.0, "n_instances": 2}])
    # No seed of 4 grokked the semidirect group: consistent, not yet a reproduction (its rate may be 49%).
    assert rows["Z48xZ2 vs Z48x|25Z2"].verdict == (
        "consistent with the study: no seed of 4 grokked G2, but its rate may be up to 49% (95% interval); 73 "
        "seeds with none would bound it below 5% (the authors ran 100)")
    assert "the authors' settings: one map on summed embeddings" in rows["Z48xZ2 vs Z48x|25Z2"].scale
    many = rows_for(pair("z48", 30, 0, 100, ci_grokked_g2=[0.0, 0.037]))["Z48xZ2 vs Z48x|25Z2"]
    assert many.verdict == "reproduced (no seed of 100 grokked G2: its rate is below 3.7%, 95% interval)"
    z35 = rows["Z35x|6Z2 vs Z35x|34Z2"]
    assert z35.book.startswith("0 of 4 grokked G1, 0 grokked G2; with the chapter's recipe (two maps")
    assert "learning rates 0.01, 0.05" in z35.scale
    assert z35.verdict.startswith("too few events: G1 and G2 grokked by no seed of 4 at the authors' settings (rate "
                                  "below 49%, 95% interval)")
    one_group = rows_for(pair("z35_lr0.002", 0, 3, 32))["Z35x|6Z2 vs Z35x|34Z2"]
    assert one_group.verdict.startswith("too few events: G1 grokked by no seed of 32 at the authors' settings (rate "
                                        "below 11%, 95% interval), the other by 3")
    assert rows_for(pair("z35_lr0.002", 1, 3, 32))["Z35x|6Z2 vs Z35x|34Z2"].verdict.startswith("reproduced")
    # "never" and "always" from 12 and 2 seeds: consistent, with the bound they leave.
    assert rows["Z100 vs Z50xZ2"].verdict.startswith("consistent with the study: no seed of 12 grokked, but the rate "
                                                     "may be up to 24%")
    assert rows["S5 vs A5xZ2"].word == "too few events"
    assert rows["S5 vs A5xZ2"].verdict.endswith("8 seeds hold none with probability 43%")
    assert rows["S5 pair trained on 60% of the intersection"].verdict.startswith(
        "consistent with the study: every seed of 2 completed it, but the rate of seeds that do not may be up to 66%")
    assert rows_for(pair("z48", 1, 1, 4))["Z48xZ2 vs Z48x|25Z2"].verdict.startswith("differs: 1 seed(s) grokked")
    assert rows_for(pair("z48", 0, 0, 4))["Z48xZ2 vs Z48x|25Z2"].verdict.startswith("not comparable")


def _flips(mean, low, high, seeds_flipping=18, count=20, group="neither", published_rate=6.5e-3, test_rate=0.02):
    return {"group": group, "published_flip_rate": published_rate, "test_flip_rate_mean": test_rate, "count": count,
            "authors_flip_rate_mean": mean, "authors_flip_rate_low": low, "authors_flip_rate_high": high,
            "seeds_flipping_authors": seeds_flipping}


#: Chapter 6's snapshot window, the authors' (every 5 epochs, the last 100 intervals of 3,000).
AUTHORS_WINDOW = {"epochs": [2000, 3000], "authors_epochs": [2500, 3000], "authors_every": 5, "authors_intervals": 100}


def test_flip_rows_prefer_the_sweep_with_the_bias_and_transplant_verdicts_follow_the_authors_criterion():
    entry = lambda share, low, high: {"grokked_first": 64, "ungrokked": round(64 * share), "share": share,  # noqa: E731
                                      "low": low, "high": high}
    criteria = {"below 0.999": entry(0.8, 0.7, 0.88), "peak minus final > 0.1": entry(0.55, 0.41, 0.65),
                "collapse to the intersection": entry(0.05, 0.015, 0.13)}
    results = {"total_variation": {**AUTHORS_WINDOW, "by_outcome": [_flips(0.017, 0.01, 0.02)]},
               "total_variation_with_bias": {"by_outcome": [_flips(0.006, 0.004, 0.008)]},
               "transplant": [{"first_group": "S4", "criteria": criteria}, {"first_group": "A4xZ2", "criteria": criteria}],
               "transplant_protocol": {}}
    flip, transplant = reproduced_rows({"06_determination": results})
    assert flip.book == "0.006" and "sweep with the bias" in flip.scale
    assert flip.verdict == "reproduced (inside the bootstrap interval of this run's mean; model with the bias)"
    assert transplant.verdict.startswith("differs: under the authors' coded criterion (peak minus final > 0.1) "
                                         "55% / 55% (35 / 35 events); the published shares lie inside both intervals "
                                         "only under collapse to the intersection (3 / 3 events: too few), a "
                                         "criterion their code does not use")
    assert "collapse to the intersection: 5% (3 of 64) / 5% (3 of 64)" in transplant.book


def test_a_flip_rate_from_few_flipping_seeds_is_too_few_events_and_says_what_its_interval_holds():
    rows = [_flips(2.2e-4, 0.0, 6e-4, seeds_flipping=2, count=50, group="grokked S4", published_rate=5.4e-5, test_rate=0.0),
            _flips(0.0, None, None, seeds_flipping=0, count=1, group="grokked A4xZ2", published_rate=4e-4, test_rate=0.0)]
    results = {"total_variation": {**AUTHORS_WINDOW, "by_outcome": []},
               "total_variation_with_bias": {"by_outcome": rows}, "transplant": []}
    s4, _ = reproduced_rows({"06_determination": results})
    assert s4.verdict == ("too few events: 2 of 50 seeds flip at all; the 95% interval 0 to 0.0006 holds the "
                          "published 5.4e-05 and also grokked A4xZ2's 0.0004, so it separates nothing")


def test_a_flip_rate_from_one_seed_has_no_interval_and_no_verdict_beyond_scale():
    one = _flips(0.0, None, None, seeds_flipping=0, count=1, group="grokked A4xZ2", published_rate=4e-4, test_rate=0.0)
    results = {"total_variation": {**AUTHORS_WINDOW, "by_outcome": []},
               "total_variation_with_bias": {"by_outcome": [one]}, "transplant": []}
    (row,) = reproduced_rows({"06_determination": results})
    assert (row.word, row.verdict.split(":")[0]) == ("one run", "one run")     # no interval: one run, never judged


def _drop(step, plateau=14.0, after=0.01):
    return {"dropped": step is not None, "step": step, "start": step and step - 10, "end": step and step + 50,
            "plateau": plateau, "after": after, "reason": "" if step else "falls 0.41 decades, less than 0.5"}


def _first300(drops: dict, held: dict | None = None, beats_rival: tuple[int, ...] = ()) -> dict:
    held = held or {}
    return {"config": {"n_layers": 11, "n_max": 15, "batch_size": 32768}, "steps": 300,
            "drop_by_length": {str(n): _drop(step) for n, step in drops.items()},
            "main_run": {"held_step": {str(n): held.get(n) for n in drops},
                         "rival": {str(n): [{"transition": n in beats_rival}] for n in drops}}}


def first_transitions(results: dict):
    """Chapter 2's two transition rows from its main run alone (one seed), as the step
    ch2_first300 of tools/published.py gives them."""
    return chapter_rows("02_training", results, PUBLISHED_STEPS["ch2_first300"][1])


def test_a_run_at_the_study_scale_gives_chapter_2s_transition_rows_from_its_one_seed():
    first, second = first_transitions(_first300({1: 70, 2: 170, 3: None}, held={1: 70}, beats_rival=(1, 2)))
    assert first.book == "length 1: a drop at step 70 (from 14 to 0.01) that holds at every setting of the detector (step 70)"
    assert first.verdict.startswith("one run at the study's scale: length 1 holds at step 70 (the study: about step 50)")
    assert second.book.startswith("length 2: a drop at step 170 (from 14 to 0.01), beyond the constant rival at the "
                                  "detector's defaults but not at every setting; length 3: no drop (falls 0.41")
    assert second.verdict.startswith("one run at the study's scale: length 2 has no transition that holds, length 3 "
                                     "has no transition that holds (the study: about step 80)")
    assert "one seed, 11 layers" in second.scale
    explained = first_transitions(_first300({1: 70, 2: 170}, held={1: 70}))[1]
    assert "length 2: a drop at step 170 (from 14 to 0.01), explained by one constant prediction" in explained.book


def test_the_multi_seed_transition_rows_count_the_seeds_whose_transition_holds():
    def study(held: dict, drops: dict) -> dict:
        return {"seeds": list(range(4)), "n_layers": 4, "n_max": 15, "batch_size": 256,
                "held_step": {str(n): steps for n, steps in held.items()},
                "drop_step": {str(n): steps for n, steps in drops.items()}}

    results = {"config": {"n_layers": 4, "n_max": 8}, "steps": 100, "final_loss": 0.03,
               "published": {**CH2_PUBLISHED, "final_loss": 0.0016},
               "transition_study": study({1: [45, 60, None, 55], 2: [None] * 4, 3: [None, 90, None, None]},
                                         {1: [45, 60, 30, 55], 2: [100, None, 120, 90], 3: [None, 90, None, None]})}
    _, first, second = reproduced_rows({"02_training": results})
    assert first.book == "holds in 3 of 4, at steps 45 to 60 (drops at the detector's defaults: 4)"
    # Batch and depth are not the study's: not comparable, with every seed's drop (held or not) stated.
    assert first.verdict.startswith("not comparable at this scale: batch 256 and 4 layers against the study's 32,768 "
                                    "and 11")
    assert "length 1: 4 seeds drop at steps 30 to 60" in first.verdict
    assert second.book.startswith("length 2: holds in 0 of 4 (drops at the detector's defaults: 3); length 3: holds "
                                  "in 1 of 4, at steps 90 to 90")
    assert second.verdict.endswith("of 4: length 2: 0, length 3: 1)")
    # At the study's batch and depth the drops' range over every seed is judged.
    at_scale = {**results, "transition_study": {**results["transition_study"], "batch_size": 32768, "n_layers": 11}}
    assert reproduced_rows({"02_training": at_scale})[1].word == "reproduced"                # 30 to 60 holds 50
    at_scale["transition_study"]["drop_step"] = {**at_scale["transition_study"]["drop_step"], "1": [60, 70, 65, 80]}
    assert reproduced_rows({"02_training": at_scale})[1].word == "differs"


def test_rows_at_the_study_scale_fill_a_fifth_column_and_a_later_step_replaces_an_earlier_one():
    record = {"device": "cuda (a GPU)", "wall_s": 118.5, "date": "2026-11-27T02:09:19+00:00"}
    steps = {"ch2_first300": (record, _first300({1: 70, 2: 170, 3: None}, held={1: 70})),
             "ch2_published": (dict(record, wall_s=9000.0), {**_first300({1: 55, 2: 85, 3: 90}), "final_loss": 0.002,
                                                                "published": CH2_PUBLISHED})}
    found = published_rows(steps)
    assert found["step of length 1's drop (the first phase transition)"].row.book.startswith("length 1: a drop at step 55")
    assert "step ch2_published on cuda (a GPU), 9000 s, 2026-11-27" in found["final loss of the trained transformer"].source
    results = json.loads((ROOT / "notebooks" / "results" / "02_training.json").read_text())
    table = reproduced_table(reproduced_rows({"02_training": results}), False, published_rows({"ch2_first300": steps["ch2_first300"]}))
    assert "| verdict | quantity | the study | this book | at the study's scale |" in table
    assert "| **one run**: length 1: a drop at step 70" in table and ". At the study's scale (one seed, 11 layers" in table
    without = reproduced_table(reproduced_rows({"02_training": results}), False)
    assert "at the study's scale" not in without            # no fifth column without such rows


def test_the_s5_sweep_is_judged_by_its_intervals_once_each_group_has_enough_grokkers():
    def s5(g1, g2, n, ci1, ci2):
        pair = {"experiment": "s5", "g1": "S5", "g2": "A5xZ2", "count_grokked_g1": g1, "count_grokked_g2": g2,
                "n_instances": n, "ci_grokked_g1": ci1, "ci_grokked_g2": ci2, "embed_dim": 128, "hidden_dim": 128,
                "weight_decay": 2e-5, "epochs": 2000, "grok_threshold": 0.999}
        results = {"intersection_sizes": {}, "published_intersection_sizes": {}, "pairs": [pair], "subsample": [],
                   "published_notes": {}}
        return next(r for r in chapter_rows("04_ambiguous_grokking", results) if r.quantity.startswith("S5 vs A5xZ2"))

    inside = s5(6, 8, 100, [0.028, 0.125], [0.041, 0.150])
    assert inside.verdict == "reproduced (the study's fractions lie inside both 95% intervals)"
    assert inside.book.startswith("6 / 8 of 100 (6% / 8%; 95% intervals 2.8%-12.5% / 4.1%-15%)")
    outside = s5(20, 8, 100, [0.13, 0.29], [0.041, 0.150])
    assert outside.verdict.startswith("differs: the study's fraction lies outside the 95% interval of S5")
    few = s5(1, 2, 16, [0.01, 0.28], [0.03, 0.36])
    assert few.word == "too few events" and few.verdict.startswith("too few events to judge a rate (1 and 2 grokkers")


def test_a_row_that_reads_a_missing_value_names_its_file_row_and_path():
    with pytest.raises(ValueError, match=r"02_training.yaml, row final_loss: no value at 'published.final_loss'"):
        chapter_rows("02_training", {"config": {"n_layers": 4, "n_max": 8}, "steps": 100, "final_loss": 0.03,
                                     "published": {"n_layers": 11, "n_max": 15, "phase_steps": [1]}})


def test_the_row_walk_tells_results_paths_from_names_a_rule_or_a_bind_brings():
    row = {"id": "x", "each": "items", "when": ["a.b", {"rule": "present", "keys": {"value": "c"}, "is": "yes"}],
           "quantity": "{item.name}", "study": "1", "book": {"bind": {"sweep": "d"}, "text": "{sweep.n}"},
           "scale": "{e:,}", "verdict": {"rule": "below", "keys": {"value": "f"}, "texts": {"below": "reproduced {bound}"}},
           "let": {"g": "{h}"}}
    parts = list(row_parts(row))
    assert [v for k, v in parts if k == "path"] == ["items", "a.b", "c", "item.name", "d", "e", "f"]
    assert [v for k, v in parts if k == "field"] == ["sweep.n", "bound", "h"]
    assert [k for k, _ in parts].count("rule") == 1 and [k for k, _ in parts].count("condition") == 1


def test_keys_read_are_the_top_level_keys_a_rendering_reads_that_the_results_have():
    results = json.loads((ROOT / "notebooks" / "results" / "04_ambiguous_grokking.json").read_text())
    read = keys_read("04_ambiguous_grokking", results)
    assert {"pairs", "published_comparisons", "intersection_sizes"} <= read <= results.keys()
    assert "seconds" not in read


def test_a_row_only_a_step_still_to_run_can_judge_is_pending_with_its_step_and_device_time():
    results = json.loads((ROOT / "notebooks" / "results" / "02_training.json").read_text())
    waiting = waiting_rows({"02_training": results}, {"ch2_published": "about 37 GPU-minutes (basis); at step 400"})
    # The final loss (not comparable here) waits; the drop rows, judged at this scale, do not.
    assert list(waiting) == ["final loss of the trained transformer"]
    table = reproduced_table(reproduced_rows({"02_training": results}), False, None, waiting)
    assert "| **pending**: step ch2_published, about 37 GPU-minutes |" in table
    assert ". At the study's scale: pending, waits for step ch2_published: about 37 GPU-minutes (basis); at step 400" \
        in table
    # A finished step's row replaces the waiting one.
    record = {"device": "cuda (a GPU)", "wall_s": 9000.0, "date": "2026-11-27T02:09:19+00:00",
              "code_fingerprint": "abc"}
    done = published_rows({"ch2_published": (record, {**_first300({1: 55, 2: 85, 3: 90}), "final_loss": 0.002,
                                                      "published": CH2_PUBLISHED})}, {"02_training": "abc"})
    assert done["final loss of the trained transformer"].source.endswith("; the chapter's code of today")
    table = reproduced_table(reproduced_rows({"02_training": results}), False, done, waiting)
    judged = done["final loss of the trained transformer"].row.word
    assert f"| **{judged}**: " in table
    # It waits still only where the finished step could not judge it either.
    assert ("**pending**: step ch2_published" in table) == (judged in UNJUDGED_WORDS)
    changed = published_rows({"ch2_published": (record, {**_first300({1: 55, 2: 85, 3: 90}), "final_loss": 0.002,
                                                         "published": CH2_PUBLISHED})}, {"02_training": "def"})
    assert "earlier code of the chapter (fingerprint abc, today def)" in changed["final loss of the trained transformer"].source


def test_the_steps_to_come_say_how_far_a_resumable_one_got(tmp_path):
    partial = tmp_path / ".ch2_published.partial"
    partial.mkdir()
    (partial / "02_training_state.pt").write_bytes(b"")
    (partial / "02_training_state_progress.json").write_text(json.dumps(
        {"step": 2400, "total_steps": 9600, "seconds": 500.0, "device": "cuda", "saved": "2026-12-01T10:00:00Z"}))
    (tmp_path / "ch2_first300").mkdir()
    (tmp_path / "ch2_first300" / "step.json").write_text("{}")
    waiting = results_table.steps_to_come(tmp_path)
    assert "ch2_first300" not in waiting
    assert waiting["ch2_published"].endswith("; at step 2,400 of 9,600 (saved 2026-12-01 on cuda)")
    assert all(text for text in waiting.values())          # every step says what it needs
