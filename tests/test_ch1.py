"""Chapter 1's summaries, tables and the live slider's callback (lib.chapters.ch1)."""

import math
from pathlib import Path

import pytest

from lib.bfs.transformer import bfs_transformer
from lib.book.params import read_parameters_cell, validate_parameters
from lib.bfs.damage_summary import summarize_distribution, summarize_selection
from lib.bfs.protocol_judgement import fall_factor, index_row_numbers, judge_at_step, judge_pairs, judged_step, study_points
from lib.bfs.recovery_verdicts import mark_effect, mark_recovered
from lib.chapters.ch1 import (
    Chapter1Parameters, PerturbationRerun, damage_label, exactness_table, perturbation_table, scientific_format, verdict_table,
)
from lib.chapters.ch1_results import distribution_table, protocol_table, selection_table
from lib.book.tables import scientific

RECORDS = [
    {"mode": "replace", "scale": 0.01, "hit": {"matrix": "query", "layer": 0, "head": 0, "answer_head": False}, "loss_intact": 0.0, "loss_before": 0.3, "loss_after": 0.01},
    {"mode": "replace", "scale": 0.01, "hit": {"matrix": "value", "layer": 0, "head": 2, "answer_head": False}, "loss_intact": 0.0, "loss_before": 0.0, "loss_after": 0.0},
    {"mode": "replace", "scale": 1.0, "hit": {"matrix": "key", "layer": 1, "head": 1, "answer_head": False}, "loss_intact": 0.0, "loss_before": 3.0, "loss_after": 0.5},
    {"mode": "gaussian", "scale": 0.01, "hit": {"matrix": "all", "layer": None, "head": None, "answer_head": False}, "loss_intact": 0.0, "loss_before": 0.02, "loss_after": 0.04},
]


def test_recovery_verdicts_count_draws_per_scale_and_keep_no_effect_apart():
    records = mark_effect([dict(r) for r in RECORDS] + [
        {"mode": "replace", "scale": 0.01, "hit": {"matrix": "key", "layer": 0, "head": 3, "answer_head": False}, "loss_intact": 0.0, "loss_before": 0.04,
         "loss_after": 0.03}])
    verdicts = mark_recovered(records, recovered_below=0.05)
    assert [r["status"] for r in records] == ["recovered", "no effect", "not recovered", "not broken", "not broken"]
    assert [r["recovered"] for r in records] == [True, False, False, False, False]
    assert [(v.mode, v.scale, v.draws, v.no_effect, v.not_broken, v.recovered, v.not_recovered) for v in verdicts] == [
        ("replace", 0.01, 3, 1, 1, 1, 0), ("replace", 1.0, 1, 0, 0, 0, 1), ("gaussian", 0.01, 1, 0, 1, 0, 0)]
    assert (verdicts[0].broken, verdicts[1].broken, verdicts[2].broken) == (1, 1, 0)
    rows = verdict_table(verdicts).splitlines()
    assert len(rows) == 5 and rows[2].startswith("| replace | 0.01 |")
    table = perturbation_table(records).splitlines()
    assert table[2] == ("| replace | 0.01 | query matrix of the reach head of vertex 1, layer 1 replaced by 0.01 x N(0, 1) "
                        "| 0.3000 | 0.01000 | recovered |") and len(table) == 7
    assert table[3].endswith("| no effect |")


def test_a_damage_is_named_by_its_matrix_head_and_layer_or_as_noise_on_every_weight():
    answer = {"scale": 0.1, "hit": {"matrix": "key", "layer": 2, "head": 8, "answer_head": True}}
    assert damage_label(answer) == "key matrix of the answer head, layer 3 replaced by 0.1 x N(0, 1)"
    noise = {"scale": 0.05, "hit": {"matrix": "all", "layer": None, "head": None, "answer_head": False}}
    assert damage_label(noise) == "all weights + noise of relative Frobenius norm 0.05"


def test_exactness_table_has_one_row_per_record():
    records = [{"n_vertices": 4, "sampler": "seed", "n_graphs": 2000, "mse": 0.0, "max_abs_error": 0.0,
                "mean_distance": None, "fraction_unreachable": 1.0}]
    assert exactness_table(records).splitlines()[2] == "| 4 | seed | 2,000 | 0 | 0 | n/a | 1.000 |"


def test_the_slider_callback_reruns_on_the_static_figures_graphs():
    defaults = read_parameters_cell(Path(__file__).parents[1] / "notebooks" / "01_handcrafted_bfs.py")
    config = validate_parameters(Chapter1Parameters, {**defaults, "smoke": True, "device": "cpu"})
    rerun = PerturbationRerun(bfs_transformer(config.n_vertices), config, seed=3)
    small, large = rerun(-3.0, "gaussian", seed=4), rerun(0.0, "gaussian", seed=4)
    assert small["scale"] == pytest.approx(1e-3) and large["scale"] == 1.0
    assert small["loss_before"] < large["loss_before"]
    again = PerturbationRerun(bfs_transformer(config.n_vertices), config, seed=3)(-3.0, "gaussian", seed=4)
    assert again["loss_after"] == small["loss_after"]


def draw(name, before, after, curve, effect=True, steps=100, weight_list="answer key", index=0):
    """A retrained draw's record (`name` only tells the draws of a test apart)."""
    return {"name": name, "weight_list": weight_list, "index": index, "matrix": f"layer {index + 1}",
            "loss_intact": 0.0, "loss_before": before, "loss_after": after, "damage_had_effect": effect,
            "steps": steps, "curve": curve}


def test_the_protocol_comparison_with_the_study_and_the_index_numbers():
    study = [draw("K of answer head 5", 0.5, 0.45, [[0, 0.5], [100, 0.45]]),
             draw("Q of answer head 6", 0.3, 0.2, [[0, 0.3], [100, 0.2]]),
             draw("V of reach head 2", 0.0, 0.0, [[0, 0.0], [100, 0.0]], effect=False)]
    points = study_points(study)
    assert [(p.step, p.published, p.low, p.high, p.within) for p in points] == [
        (0, 0.403, 0.3, 0.5, True), (100, 0.335, 0.2, 0.45, True)]
    numbers = index_row_numbers({"study": study, "book": study}, 100)
    assert numbers["points"][1]["within"] is True
    ratio = numbers["ratios"]["study"][0]
    assert ratio["step"] == 100 and math.isclose(ratio["published"], 0.335 / 0.403)
    assert math.isclose(ratio["low"], 0.2 / 0.3) and math.isclose(ratio["high"], 0.9) and ratio["within"]
    assert numbers["at_step"]["step"] == 100 and numbers["at_step"]["at_or_below"]["k"] == 1
    assert numbers["pairs"]["pairs"] == 2 and numbers["pairs"]["left_out"] == 1
    table = protocol_table({"study": study, "book": study}).splitlines()
    assert len(table) == 5 and table[4].endswith("| no effect |")
    assert table[2].startswith("| 1 | answer key | layer 1 |")          # the weight list and matrix, as columns


def test_the_study_construction_is_judged_at_the_studys_last_step_within_the_run_by_counts():
    study = [draw("a", 0.40, 0.30, [[0, 0.40], [50, 0.35], [100, 0.30]]),
             draw("b", 0.41, 0.38, [[0, 0.41], [50, 0.40], [100, 0.38]]),
             draw("c", 0.39, 0.36, [[0, 0.39], [50, 0.37], [100, 0.36]]),
             draw("d", 0.0, 0.0, [[0, 0.0], [50, 0.0], [100, 0.0]], effect=False)]
    assert judged_step(study) == 100
    assert judged_step([draw("a", 0.4, 0.3, [[0, 0.4], [5, 0.3]], steps=5)]) == 5   # no published step: the last
    judgement = judge_at_step(study, 100)
    assert judgement.values == (0.30, 0.38, 0.36) and judgement.within
    assert (judgement.reaching.k, judgement.reaching.n) == (1, 3)          # 0.30 <= 0.335
    assert math.isclose(judgement.published_ratio, 0.335 / 0.403)
    assert (judgement.ratio_reaching.k, judgement.ratio_reaching.n) == (1, 3)  # only 0.30 / 0.40 = 0.75 <= 0.83
    assert judgement.median == 0.36 and judgement.median_change == pytest.approx(0.36 / 0.335 - 1)  # 7% above
    assert judgement.fall == pytest.approx(1 - 0.36 / 0.39) and judgement.published_fall == pytest.approx(1 - 0.335 / 0.403)
    factor = fall_factor(judgement.fall, judgement.published_fall)
    assert round(1 / factor, 1) == 2.2                                      # 7.7% against 16.9%: 2.2 times less
    outside = judge_at_step(study[1:3], 100)
    assert not outside.within and outside.reaching.k == 0
    empty = judge_at_step(study, 50)
    assert empty.published is None and empty.within is None and empty.median_change is None  # nothing at step 50
    assert fall_factor(0.1, 0.0) is None and fall_factor(None, 0.1) is None
    none_changed = judge_at_step(study[3:], 100)
    assert none_changed.median is None and none_changed.fall is None


def test_pairs_count_where_the_books_construction_repairs_more_slowly():
    study = [draw("a", 0.4, 0.3, [[0, 0.4], [100, 0.3]]), draw("b", 0.4, 0.38, [[0, 0.4], [100, 0.38]]),
             draw("c", 0.4, 0.36, [[0, 0.4], [100, 0.36]])]
    book = [draw("a", 0.2, 0.19, [[0, 0.2], [100, 0.19]]), draw("b", 0.1, 0.09, [[0, 0.1], [100, 0.09]]),
            draw("c", 0.0, 0.0, [[0, 0.0], [100, 0.0]], effect=False)]
    pairs = judge_pairs({"study": study, "book": book}, 100)
    assert pairs.left_out == 1 and pairs.book_ratios == pytest.approx((0.95, 0.9))
    assert (pairs.book_slower.k, pairs.book_slower.n) == (1, 2)             # 0.95 > 0.75, 0.9 < 0.95
    assert (pairs.book_slower_than_published.k, pairs.book_slower_than_published.n) == (2, 2)
    assert pairs.published_ratio == pytest.approx(0.335 / 0.403)
    assert pairs.study_fall == pytest.approx(1 - (0.75 + 0.95) / 2) and pairs.book_fall == pytest.approx(1 - 0.925)
    assert pairs.as_dict()["book_slower"]["k"] == 1


def distribution_record(weight_list, index, noise_draw, mse, standard_error=0.01):
    return {"weight_list": weight_list, "index": index, "noise_draw": noise_draw, "mse": mse,
            "standard_error": standard_error}


def test_the_distribution_summary_counts_what_reaches_the_studys_value_per_list_and_matrix():
    records = [distribution_record(name, index, draw, 0.3 if (name == "answer key" and index == 0) else 5.0)
               for name in ("reach key", "reach query", "reach value", "answer key", "answer query", "answer value")
               for index in range(2) for draw in range(2)]
    records[-1]["mse"] = 0.1                                    # one answer value draw reaches it too
    summary = summarize_distribution(records, 0.403)
    assert (summary.draws, summary.matrices, summary.noise_draws) == (24, 12, 2)
    assert (summary.reaching.k, summary.reaching.n) == (3, 24)
    assert (summary.reaching_answer_key_query.k, summary.reaching_answer_key_query.n) == (2, 8)
    assert (summary.reaching_other.k, summary.reaching_other.n) == (1, 16)
    assert [(s.weight_list, s.matrices) for s in summary.lists if s.matrices] == [
        ("answer key", ((0, 2, 2),)), ("answer value", ((1, 1, 2),))]   # (matrix index, k, n)
    assert (summary.reaching_matrices, summary.reaching_lists) == (2, 2)
    assert summary.reaching.share == 3 / 24                                 # percentile 12.5
    table = distribution_table(summary).splitlines()
    assert table[5] == "| answer key | 4 | 2.65 | 0.3 to 5 | 2 of 4 | layer 1 (2 of 2) |"
    numbers = summary.as_dict()
    assert numbers["percentile"]["k"] == 3 and numbers["quantiles"]["0.5"] == 5.0
    assert [row["k"] for row in numbers["by_list"]] == [0, 0, 0, 2, 0, 1]


def test_the_selection_reports_its_band_in_standard_errors_of_the_studys_batch():
    picked = [distribution_record("answer key", 0, 0, 0.39, 0.02), distribution_record("answer query", 3, 1, 0.42, 0.021)]
    selection = summarize_selection(picked, 0.403, n_held_out=512)
    assert (selection.low, selection.high, selection.count) == (0.39, 0.42, 2)
    assert math.isclose(selection.half_width, 0.42 / 0.403 - 1)
    assert math.isclose(selection.relative_standard_error, 0.05 * 1.0, rel_tol=0.05)
    assert selection.hits == {"answer key": 1, "answer query": 1}
    assert selection.matrices == {"answer key": 1, "answer query": 1}
    assert selection_table(selection).splitlines()[2:] == ["| answer key | 1 | 1 |", "| answer query | 1 | 1 |"]
    assert selection.widths <= 2 and selection.within_two
    assert not summarize_selection(picked, 0.2, n_held_out=512).within_two   # far from 0.2: resolvable


def test_the_recorded_format_shows_a_number_as_scientific_does():
    for value in (0.0, 1.234e-9, 0.5, 7.0):
        for decimals in (1, 2):
            assert format(value, scientific_format(value, decimals)) == scientific(value, decimals)


def test_a_draw_without_effect_is_not_shown_as_a_recovery():
    records = mark_effect([{"mode": "replace", "scale": 1.0, "hit": {"matrix": "query", "layer": 0, "head": 0, "answer_head": False}, "loss_intact": 0.0, "loss_before": 0.0,
                            "loss_after": 0.0}])
    mark_recovered(records, recovered_below=0.05)
    assert records[0]["recovered"] is False
    assert perturbation_table(records).splitlines()[2].endswith("| no effect |")


def test_the_retrained_draws_are_counted_by_matrix_and_their_repair_split_in_two():
    """Draws that repeat a matrix count once (their median), and the draws that repair almost
    completely are named by matrix (chapter 1's bimodal recovery)."""
    from lib.bfs.protocol_judgement import REPAIRED_BELOW, judge_at_step

    def draw(weight_list, matrix, before, after):
        return {"weight_list": weight_list, "matrix": matrix, "damage_had_effect": True, "loss_before": before,
                "curve": [(0, before), (100, after)]}

    records = [draw("answer query", "layer 7", 0.4, 1e-4), draw("answer query", "layer 7", 0.4, 3e-4),
               draw("answer key", "layer 2", 0.4, 0.36), draw("answer key", "layer 2", 0.4, 0.34),
               draw("answer key", "layer 2", 0.4, 0.35), draw("answer query", "layer 2", 0.4, 0.30)]
    judged = judge_at_step(records, 100)
    by_matrix = judged.as_dict()["matrices"]
    assert by_matrix["count"] == 3 and by_matrix["draws"]["answer key, layer 2"] == 3
    assert judged.matrix_values["answer key, layer 2"] == 0.35          # the median of its three draws
    assert by_matrix["repaired_draws"] == 2 and by_matrix["repaired_matrices"] == ["answer query, layer 7"]
    assert by_matrix["unrepaired_ratio"]["min"] == 0.30 / 0.4 and REPAIRED_BELOW == 0.1
    assert judged.matrix_within == (min(judged.matrix_values.values()) <= 0.335 <= max(judged.matrix_values.values()))
