"""The index page's table of published numbers beside this book's."""

from pathlib import Path

import pytest

from lib.book.reproduced import END_MARKER, START_MARKER, reproduced_rows, reproduced_table, with_table

ROOT = Path(__file__).resolve().parents[1]


def test_rows_come_from_each_chapters_results_and_missing_chapters_have_none():
    results = {
        "04_ambiguous_grokking": {
            "intersection_sizes": {"a": 336, "b": 7920}, "published_intersection_sizes": {"a": 336, "b": 7921},
            "published_comparisons": [{
                "experiment": "s4", "weight_decay": 2e-5, "grok_threshold": 0.999, "n_instances": 1000,
                "grokked_g1": {"fraction": 0.053}, "grokked_g2": {"fraction": 0.004},
                "published": {"fraction_g1": 0.0603, "fraction_g2": 0.0043, "n_instances": 10000,
                              "inside_interval_g1": True, "inside_interval_g2": False}}]},
        "06_determination": {
            "total_variation": {"epochs": [2000, 3000], "by_outcome": [
                {"group": "neither", "published_flip_rate": 6.5e-3, "test_flip_rate_mean": 0.017, "count": 20}]},
            "transplant": [{"first_group": "S4", "ungrokked_share": 0.625, "grokked_first": 40},
                           {"first_group": "A4xZ2", "ungrokked_share": 0.81, "grokked_first": 42}]},
    }
    rows = reproduced_rows(results)
    assert [r.chapter for r in rows] == [4, 4, 6, 6]
    assert rows[0].book == "1 of 2 equal"
    assert (rows[1].study, rows[1].book, rows[1].scale) == (
        "6.03% / 0.43%", "5.3% / 0.4% (published outside the 95% interval of A4xZ2)", "1,000 seeds (study: 10,000)")
    assert rows[1].quantity == "S4 vs A4xZ2, bias, weight decay 2e-05, accuracy >= 0.999: grokked S4 / A4xZ2"
    assert (rows[2].study, rows[2].book) == ("0.0065", "0.017") and "epochs 2000-3000" in rows[2].scale
    assert (rows[3].study, rows[3].book) == ("7% / 8%", "62.5% / 81%")
    assert reproduced_rows({}) == []
    assert reproduced_table(rows, smoke=True).startswith("**These numbers come from smoke runs")
    assert "| 4 | intersection sizes of the pairs |" in reproduced_table(rows, smoke=False)


def test_the_table_replaces_only_the_text_between_the_markers():
    page = f"# Title\n\nbefore\n\n{START_MARKER}\nold table\n{END_MARKER}\n\nafter\n"
    new = with_table(page, "| a |\n|---|\n| 1 |")
    assert new.startswith("# Title\n\nbefore\n\n") and new.endswith("\n\nafter\n") and "old table" not in new
    assert with_table(new, "| b |") == with_table(page, "| b |")          # rewriting is idempotent
    with pytest.raises(ValueError, match="must hold one"):
        with_table("no markers here", "| a |")


def test_the_committed_index_holds_a_table_between_its_markers():
    page = (ROOT / "book" / "index.md").read_text()
    between = page.split(START_MARKER)[1].split(END_MARKER)[0]
    assert between.count("\n| ") >= 10 and "| chapter | quantity | the study | this book |" in between


def test_every_shortest_path_row_has_a_verdict_and_grokking_rows_default_to_pending():
    point = {"step": 0, "published": 0.403, "low": 0.3, "high": 0.6, "median": 0.5, "draws": 3, "within": True}
    later = {"step": 100, "published": 0.335, "low": 0.36, "high": 0.5, "median": 0.4, "draws": 3, "within": False}
    spread = {"values": [0.1, 0.2, 0.15], "mean": 0.15, "min": 0.1, "max": 0.2}
    results = {
        "01_handcrafted_bfs": {
            "seed_construction": {"n_vertices": 8, "n_graphs": 2000, "mse": 7.9e-5, "max_abs_error": 0.019},
            "study_protocol": {"steps": 100, "draws": 5, "batch_size": 512, "learning_rate": 1e-6,
                               "comparison": {"steps": 100, "points": [point, later], "ratios": {
                                   "study": [{"step": 100, "published": 0.83, "low": 0.6, "high": 0.99, "draws": 5,
                                              "within": True}],
                                   "book": [{"step": 100, "published": 0.83, "low": 0.96, "high": 0.99, "draws": 5,
                                             "within": False}]}}}},
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
        "06_determination": {"total_variation": {"epochs": [1, 2], "by_outcome": [
            {"group": "neither", "published_flip_rate": 6.5e-3, "test_flip_rate_mean": 0.017, "count": 20}]},
            "transplant": []},
    }
    rows = reproduced_rows(results)
    verdicts = {(r.chapter, r.quantity): r.verdict for r in rows}
    chapter_1 = [r for r in rows if r.chapter == 1]
    assert chapter_1[0].verdict.startswith("differs")
    assert chapter_1[1].verdict.startswith("reproduced") and chapter_1[2].verdict.startswith("differs")
    assert chapter_1[3].verdict.startswith("reproduced") and "stiff" in chapter_1[4].quantity
    assert chapter_1[4].verdict.startswith("differs: slower repair")
    assert "5,000" in chapter_1[5].quantity and chapter_1[5].verdict.startswith("not comparable")
    assert chapter_1[5].book == "not measured"
    chapter_3 = [r for r in rows if r.chapter == 3]
    assert all(r.verdict.startswith("not comparable") for r in chapter_3)
    assert "graph size and the unreachable label account" in chapter_3[1].verdict
    assert "3 seeds" in chapter_3[1].book
    assert [r.verdict for r in rows if r.chapter == 6] == ["pending"]
    assert "| verdict |" in reproduced_table(rows, smoke=False).splitlines()[0] + " |"
    assert len(verdicts) == len(rows)


def test_the_s5_llc_row_says_how_its_protocol_differs_and_where_it_lands():
    s5 = {"epochs": [80, 2000], "llc": [[4600.0, 1200.0]], "fitted_epoch": [60], "chains": 3, "steps": 3000}
    (row,) = reproduced_rows({"05_complexity": {"s5_llc_over_training": s5}})
    assert row.study == "4,558-4,601 -> 505-598"
    assert row.book == "4,600 -> 1,200 (highest within, final 2.01 times the highest of the published values)"
    assert row.scale == ("1 seed(s), 3 chains x 3,000 steps at epochs 80, 2000 (study: one run of 3 seeds, "
                         "3 chains x 3,000 steps every 10 epochs)")
