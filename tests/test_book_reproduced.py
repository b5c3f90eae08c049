"""The index page's table of published numbers beside this book's."""

from pathlib import Path

import pytest

from lib.book.reproduced import END_MARKER, START_MARKER, reproduced_rows, reproduced_table, with_table

ROOT = Path(__file__).resolve().parents[1]


def test_rows_come_from_each_chapters_results_and_missing_chapters_have_none():
    results = {
        "04_ambiguous_grokking": {
            "intersection_sizes": {"a": 336, "b": 7920}, "published_intersection_sizes": {"a": 336, "b": 7921},
            "published": {"s4": {"fraction_g1": 0.0603, "fraction_g2": 0.0043, "n_instances": 10000}},
            "pairs": [{"experiment": "s4", "name": "S4_vs_A4xZ2", "weight_decay": 2e-5, "fraction_g1": 0.053,
                       "fraction_g2": 0.004, "n_instances": 1000},
                      {"experiment": "z48", "name": "Z48", "weight_decay": 2e-4, "fraction_g1": 0.4,
                       "fraction_g2": 0.0, "n_instances": 24}]},
        "06_determination": {
            "total_variation": {"epochs": [2000, 3000], "by_outcome": [
                {"group": "neither", "published_flip_rate": 6.5e-3, "test_flip_rate_mean": 0.017, "count": 20}]},
            "transplant": [{"first_group": "S4", "ungrokked_share": 0.625, "grokked_first": 40},
                           {"first_group": "A4xZ2", "ungrokked_share": 0.81, "grokked_first": 42}]},
    }
    rows = reproduced_rows(results)
    assert [r.chapter for r in rows] == [4, 4, 6, 6]
    assert rows[0].book == "1 of 2 equal"
    assert (rows[1].study, rows[1].book, rows[1].scale) == ("6.03% / 0.43%", "5.3% / 0.4%", "1,000 seeds (study: 10,000)")
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
