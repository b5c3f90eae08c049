"""Chapter 1's summaries, tables and the live slider's callback (lib.chapters.ch1)."""

import math
from pathlib import Path

import pytest

from lib.bfs.transformer import bfs_transformer
from lib.book.params import read_parameters_cell, validate_parameters
from lib.chapters.ch1 import (
    Chapter1Parameters, PerturbationRerun, exactness_table, mark_effect, mark_recovered, perturbation_table,
    scales_text, seed_construction_error, sharpness_sweep, summarize_sharpness, verdict_lines,
)
from lib.chapters.ch1_study import (
    comparison_sentence, index_row_numbers, protocol_table, ratio_sentence, study_points, summarize_construction,
)

RECORDS = [
    {"mode": "replace", "scale": 0.01, "what": "Q of head 1", "loss_intact": 0.0, "loss_before": 0.3, "loss_after": 0.01},
    {"mode": "replace", "scale": 0.01, "what": "V of head 3", "loss_intact": 0.0, "loss_before": 0.0, "loss_after": 0.0},
    {"mode": "replace", "scale": 1.0, "what": "K of head 2", "loss_intact": 0.0, "loss_before": 3.0, "loss_after": 0.5},
    {"mode": "gaussian", "scale": 0.01, "what": "all weights", "loss_intact": 0.0, "loss_before": 0.02, "loss_after": 0.04},
]


def test_recovery_verdicts_count_draws_per_scale_and_keep_no_effect_apart():
    records = mark_effect([dict(r) for r in RECORDS] + [
        {"mode": "replace", "scale": 0.01, "what": "K of head 4", "loss_intact": 0.0, "loss_before": 0.04,
         "loss_after": 0.03}])
    verdicts = mark_recovered(records, recovered_below=0.05)
    assert [r["status"] for r in records] == ["recovered", "no effect", "not recovered", "not broken", "not broken"]
    assert [r["recovered"] for r in records] == [True, False, False, False, False]
    assert [(v.mode, v.scale, v.draws, v.no_effect, v.not_broken, v.recovered, v.not_recovered) for v in verdicts] == [
        ("replace", 0.01, 3, 1, 1, 1, 0), ("replace", 1.0, 1, 0, 0, 0, 1), ("gaussian", 0.01, 1, 0, 1, 0, 0)]
    assert verdicts[0].describe() == "scale 0.01: 1 of 1 broken draws recovered, 1 with no effect, 1 not broken"
    lines = verdict_lines(verdicts, 0.05, 100, "sgd").splitlines()
    assert lines[0].startswith("- **replace**, broken draws back below MSE 0.05 after 100 SGD steps: scale 0.01")
    assert scales_text(()) == "none"
    table = perturbation_table(records).splitlines()
    assert table[2] == "| replace | 0.01 | Q of head 1 | 0.3000 | 0.01000 | recovered |" and len(table) == 7
    assert table[3].endswith("| no effect |")


def test_sharpness_summary_reads_the_small_constants_and_the_default():
    rows = [{"knob": "attention gap", "value": 2.0, "mse": 5.0},
            {"knob": "attention gap", "value": 30.0, "mse": 1e-12},
            {"knob": "squash slope / n", "value": 4.0, "mse": 7.0},
            {"knob": "squash slope / n", "value": 80.0, "mse": 0.0}]
    summary = summarize_sharpness(rows)
    assert summary.worst_mse_small_constant == 7.0 and summary.mse_at_default_gap == 1e-12


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


def test_sharpness_sweep_error_falls_as_each_constant_grows():
    rows = sharpness_sweep(6, 200, seed=0, gaps=[2, 8, 30], slopes_per_vertex=[0.5, 4, 80])
    for knob in ("attention gap", "squash slope / n"):
        mse = [r["mse"] for r in rows if r["knob"] == knob]
        assert mse[0] > mse[1] > mse[2] and mse[2] < 1e-6 and mse[0] > 1e-2, (knob, mse)


def draw(what, before, after, curve, effect=True, steps=100):
    return {"what": what, "weight_list": "answer key", "index": 0, "loss_intact": 0.0, "loss_before": before,
            "loss_after": after, "damage_had_effect": effect, "steps": steps, "curve": curve}


def test_the_protocol_summary_and_the_comparison_with_the_study():
    study = [draw("K of answer head 5", 0.5, 0.45, [[0, 0.5], [100, 0.45]]),
             draw("Q of answer head 6", 0.3, 0.2, [[0, 0.3], [100, 0.2]]),
             draw("V of reach head 2", 0.0, 0.0, [[0, 0.0], [100, 0.0]], effect=False)]
    summary = summarize_construction("study", study)
    assert (summary.draws, summary.no_effect, summary.before, summary.after) == (3, 1, (0.5, 0.3), (0.45, 0.2))
    assert "2 of 3 draws changed" in summary.sentence() and "after 100 steps" in summary.sentence()
    points = study_points(study)
    assert [(p.step, p.published, p.low, p.high, p.within) for p in points] == [
        (0, 0.403, 0.3, 0.5, True), (100, 0.335, 0.2, 0.45, True)]
    text = comparison_sentence(points, 100)
    assert "step 100: the study 0.335, this run 0.2 to 0.45 (inside that range)" in text
    assert "were not measured here" in text and "5,000" in text
    numbers = index_row_numbers({"study": study, "book": study}, 100)
    assert numbers["points"][1]["within"] is True
    ratio = numbers["ratios"]["study"][0]
    assert ratio["step"] == 100 and math.isclose(ratio["published"], 0.335 / 0.403)
    assert math.isclose(ratio["low"], 0.2 / 0.3) and math.isclose(ratio["high"], 0.9) and ratio["within"]
    assert "stood at 0.83 after 100 steps" in ratio_sentence({"study": study})
    table = protocol_table({"study": study, "book": study}).splitlines()
    assert len(table) == 5 and table[4].endswith("| no effect |")


def test_the_study_construction_error_is_measured_not_quoted():
    mse, max_abs = seed_construction_error(500, seed=0)
    assert 2e-5 < mse < 3e-4 and 0.005 < max_abs < 0.05   # REFERENCE.md: 7.9e-5 and 0.019 on 2,000 graphs


def test_a_draw_without_effect_is_not_shown_as_a_recovery():
    records = mark_effect([{"mode": "replace", "scale": 1.0, "what": "Q", "loss_intact": 0.0, "loss_before": 0.0,
                            "loss_after": 0.0}])
    mark_recovered(records, recovered_below=0.05)
    assert records[0]["recovered"] is False
    assert perturbation_table(records).splitlines()[2].endswith("| no effect |")
