"""Chapter 3's results objects (lib.chapters.ch3_results), each field against a hand computation."""

from __future__ import annotations

import math

import pytest
import torch

from lib.paths.length_summary import GroupScore, summarize_length_study
from lib.book.record import Record
from lib.chapters.ch3_results import chapter_claims, check_recorded
from lib.paths.finetuning_summary import summarize_finetuning
from lib.paths.generalization_summary import summarize_generalization
from lib.paths.target_kind_scores import KindScore
from lib.paths.generalization_tests import PUBLISHED_SCALE, TARGET_KINDS, TESTS, Scale, score
from lib.paths.length_generalization import Cell, LengthSplit, summarize_cells
from lib.paths.training import PathTrainingConfig

SCALE = Scale(n_min=3, small_n_max=5, large_n_max=8, max_vertex_id=8, unreachable_label=8)
t = torch.tensor


# Held-out fine-tuning examples: two vertex-2 targets and two on-path targets whose graphs have a
# 1-2 distance of 4. The pre-trained model answers 4 (the 1-2 distance) for the on-path ones.
LABELS, KINDS, DISTANCE_12 = t([1.0, 2.0, 3.0, 1.0]), t([0, 1, 1, 0]), t([1, 4, 4, 1])
BEFORE, AFTER = t([1.0, 4.0, 4.0, 1.0]), t([1.0, 2.0, 3.25, 1.0])


# Five tests on the same four examples, one of each kind of target (labels of vertex 2, an on-path
# target, an off-path target and an unreachable one). Test i's predictions are off by i + 1 before
# fine-tuning; after it, the on-path tests are off by 0.1 (i + 1) and the any-target tests miss the
# unreachable target by 5.
EXAMPLE_LABELS, EXAMPLE_KINDS, EXAMPLE_DISTANCE_12 = t([3.0, 1.0, 2.0, 8.0]), t([0, 1, 2, 3]), t([3, 3, 1, 8])
EXAMPLE_TARGETS = t([2, 5, 7, 9])


def five_test_results() -> tuple[list, list]:
    before, after = [], []
    for index, test in enumerate(TESTS.values()):
        before.append(score(test, EXAMPLE_LABELS + index + 1, EXAMPLE_LABELS, 8, EXAMPLE_KINDS,
                            EXAMPLE_DISTANCE_12, EXAMPLE_TARGETS))
        if test.task == "onpath":
            predictions = EXAMPLE_LABELS + 0.1 * (index + 1)
        else:
            predictions = t([3.0, 1.0, 2.0, 3.0])
        after.append(score(test, predictions, EXAMPLE_LABELS, 8, EXAMPLE_KINDS, EXAMPLE_DISTANCE_12,
                           EXAMPLE_TARGETS))
    return before, after



def test_generalization_summary_by_hand():
    before, after = five_test_results()
    on_path_small = KindScore(10, 0.02, 0.9, 2.0, 2.0, 0.0)
    summary = summarize_generalization(before, after, SCALE, on_path_small_graphs=on_path_small)
    assert [c.test.name for c in summary.tests] == list(TESTS)
    # The graphs and targets of each test at the run's scale, as numbers (the table words them).
    assert [(c.scale.n_min, c.n_max, c.target_id_max) for c in summary.tests] == [
        (3, 8, 5), (3, 8, 8), (3, 5, 5), (3, 8, 5), (3, 8, 8)]
    for index, comparison in enumerate(summary.tests):
        assert comparison.mse_before == pytest.approx((index + 1) ** 2)
        assert comparison.accuracy_before == 0.0
        assert comparison.share_unreachable == 0.25
    assert summary.onpath_small_target.mse_after == pytest.approx(0.01, rel=1e-5)  # float32 predictions
    assert summary.onpath_target.mse_after == pytest.approx(0.04, rel=1e-5)
    assert summary.onpath_target.accuracy_after == 1.0
    any_large = summary.any_target_large_graphs
    assert any_large.mse_after == 25 / 4 and any_large.accuracy_after == 0.75
    # Off the path: predicted 2 for a true 2 (the 1-2 distance is 1); unreachable: 3 for 8, the 1-2 answer is 8.
    assert any_large.kinds_after.off_path == KindScore(1, 0.0, 1.0, 2.0, 2.0, 0.0)
    assert any_large.kinds_after.unreachable == KindScore(1, 25.0, 0.0, 8.0, 3.0, 0.0)
    assert any_large.kinds_before.off_path.mse == 25.0
    assert summary.on_path_small_graphs is on_path_small
    # On large graphs the on-path target (label 1) is off by 0.2: MSE 0.04 > 0.02.
    assert summary.onpath_target.kinds_after.on_path.mse == pytest.approx(0.04, rel=1e-5)
    assert summary.on_path_loss_grows
    # Squared errors 0.01 (x4) and 0.04 (x4), no spread within a test: the interval is a point.
    gap = summary.onpath_gap
    assert gap.difference == pytest.approx(0.03, rel=1e-4) and gap.excludes_zero
    assert gap.high - gap.low == pytest.approx(0.0, abs=1e-6)
    # Targets 2, 5, 7, 9 (EXAMPLE_TARGETS) with the small bound 5: two small, two large, all off by 0.2.
    ids = summary.onpath_target_ids
    assert (ids.id_max, ids.count_small, ids.count_large) == (5, 2, 2)
    assert ids.mse_small == pytest.approx(0.04, rel=1e-4) and ids.mse_large == pytest.approx(0.04, rel=1e-4)
    assert not summary.any_target_large_mse_rose  # 25 before, 6.25 after
    record = summary.record()
    assert record[1] == {**after[1].record(), "n_min": 3, "n_max": 8, "target_id_max": 8,
                         "mse_pretrained": before[1].mse, "accuracy_pretrained": 0.0}


def test_an_absent_on_path_score_makes_no_claim_that_the_loss_grows():
    before, after = five_test_results()
    summary = summarize_generalization(before, after, SCALE, on_path_small_graphs=KindScore.absent())
    assert not summary.on_path_loss_grows


def test_generalization_results_must_follow_the_tests_order():
    before, after = five_test_results()
    with pytest.raises(ValueError, match="order"):
        summarize_generalization(before, after[::-1], SCALE, on_path_small_graphs=KindScore.absent())


SPLIT = LengthSplit(3, 5, 8)  # training sizes 3..5, paths of at most 4
CELLS = [
    Cell(5, 1, 10, 0.01, 1.0, 1.0, True, True),
    Cell(5, 4, 10, 0.5, 3.6, 0.5, True, True),
    Cell(8, 1, 20, 0.04, 1.1, 0.9, False, True),
    Cell(8, 2, 10, 0.1, 2.0, 0.8, False, True),
    Cell(8, 6, 10, 4.0, 4.2, 0.0, False, False),
]
DEPTH_CELLS = [Cell(8, 5, 30, 0.2, 4.9, 0.7, True, True), Cell(8, 6, 30, 0.3, 5.9, 0.6, True, True)]
CHAPTER_2 = PathTrainingConfig(n_layers=4, n_min=3, n_max=8)


def test_length_summary_by_hand():
    summary = summarize_length_study(CELLS, SPLIT, t([1, 2, 4, 4, 3]), DEPTH_CELLS, CHAPTER_2)
    assert summary.training_sizes == GroupScore(pytest.approx(0.255), 0.75, 20)
    assert summary.larger_graphs_seen_distances == GroupScore(pytest.approx(0.06), pytest.approx(26 / 30), 30)
    assert summary.longer_distances == GroupScore(4.0, 0.0, 10)
    assert [name for name, _ in summary.groups()] == [
        "training sizes", "larger graphs, distances seen in training", "larger graphs, longer distances"]
    assert summary.largest_size == 8
    rows = summary.short_distance_rows
    assert [r.distance for r in rows] == [1, 2, 3]
    assert (rows[0].mse_at_training_size, rows[0].mse_at_largest_size) == (0.01, 0.04)
    assert (rows[0].training_size, rows[0].largest_size) == (5, 8) and rows[0].measured
    assert rows[1].mse_at_training_size is None and not rows[1].measured  # no distance-2 cell at n = 5
    assert not rows[2].measured
    assert summary.top_prediction == 4.2
    assert summary.longest_training_cells == (CELLS[1],)
    assert [(c.mean_prediction, c.n_vertices) for c in summary.longest_training_cells] == [(3.6, 5)]
    assert summary.share_longest_training_distance == pytest.approx(0.4)
    assert (summary.depth_n_layers, summary.depth_n_max) == (4, 8)
    assert summary.depth_top_prediction == 5.9 and summary.depth_reaches_further  # 5.9 > 4.2 + 0.5
    assert [(c.distance, c.mean_prediction) for c in summary.depth_cells] == [(5, 4.9), (6, 5.9)]
    record = summary.record()
    assert record["length_generalization_summary"] == summarize_cells(CELLS)
    assert record["length_generalization"][0] == CELLS[0].record()
    assert record["length_split"] == {"n_min": 3, "n_train_max": 5, "n_test_max": 8}
    assert len(record["length_depth_check"]) == 2


def test_a_length_group_without_cells_is_absent():
    summary = summarize_length_study(CELLS[:2], SPLIT, t([1, 2]), DEPTH_CELLS[:1], CHAPTER_2)
    assert summary.longer_distances.count == 0 and math.isnan(summary.longer_distances.mse)
    assert [name for name, _ in summary.groups()] == ["training sizes"]
    assert "larger graphs, longer distances" not in summary.record()["length_generalization_summary"]
    assert summary.largest_size == 5 and summary.short_distance_rows[0].measured


def test_depth_reaches_further_only_by_more_than_half_a_hop():
    close = [Cell(8, 6, 30, 0.3, 4.6, 0.6, True, True)]  # top prediction of CELLS: 4.2
    assert not summarize_length_study(CELLS, SPLIT, t([1, 2]), close, CHAPTER_2).depth_reaches_further
    no_depth_cells = summarize_length_study(CELLS, SPLIT, t([1, 2]), [], CHAPTER_2)
    assert math.isnan(no_depth_cells.depth_top_prediction) and not no_depth_cells.depth_reaches_further

def test_claims_are_reported_true_or_false_never_raised():
    before, after = five_test_results()
    generalization = summarize_generalization(before, after, SCALE, on_path_small_graphs=KindScore.absent())
    finetuning = summarize_finetuning(labels=LABELS, predictions_before=BEFORE, predictions_after=AFTER,
                                      kinds=KINDS, distance_12=DISTANCE_12, steps=2, pretrain_task_loss_before=0.1,
                                      pretrain_task_loss_after=0.3, learning_rate=0.1, weight_decay=0.5)
    length = summarize_length_study(CELLS, SPLIT, t([1, 2]), DEPTH_CELLS, CHAPTER_2)
    claims = chapter_claims(finetuning, generalization, length)
    assert len(claims) == 5 and all(claims.values())
    worse = summarize_finetuning(labels=LABELS, predictions_before=AFTER, predictions_after=BEFORE,
                                 kinds=KINDS, distance_12=DISTANCE_12, steps=2, pretrain_task_loss_before=0.1,
                                 pretrain_task_loss_after=0.3, learning_rate=0.1, weight_decay=0.5)
    assert not chapter_claims(worse, generalization, length)["finetuning_lowers_onpath_loss"]
    short = summarize_length_study(CELLS[:2], SPLIT, t([1, 2]), DEPTH_CELLS, CHAPTER_2)
    assert not chapter_claims(finetuning, generalization, short)[
        "longer_distances_10x_worse_than_training_sizes"]


def recorded_results() -> dict:
    """A small results JSON of chapter 3 with the records its notebook makes from it (two seeds)."""
    on_path = TARGET_KINDS[1]
    values = {name: [1.0 + i, 1.5 + i] for i, name in enumerate(TESTS)}
    results = {
        "finetune_loss_before": 0.7, "finetune_loss_after": 0.2, "base_model": {"source": "trained"},
        "scale": {"n_min": 3, "small_n_max": 5, "large_n_max": 8, "unreachable_label": 8},
        "published_scale": {"n_min": 3, "small_n_max": 7, "large_n_max": 15, "unreachable_label": 15},
        "generalization": [{"test": name, "mse": v[0], "mse_pretrained": 2 * v[0],
                            "published_mse": TESTS[name].published_mse, "by_target_kind": {on_path: {"mse": 0.6}}}
                           for name, v in values.items()],
        "finetune_by_target_kind": {on_path: {"mse": 0.4}},
        "test_mse_over_seeds": {name: {"values": v, "mean": sum(v) / 2, "min": min(v), "max": max(v)}
                                for name, v in values.items()},
        "seed_runs": [{}, {}],
        "onpath_by_graph_size": {"mse_small": 0.3, "mse_large_small_ids": float("nan")},
        "onpath_by_graph_size_over_seeds": {"seeds_not_staying_right": 1},
        "baseline_comparison": [{"test": name, "scale_accounts": name == "any_target_large_graphs",
                                 "ratio_to_baseline": {"min": 0.5, "max": 0.9}} for name in TESTS],
        "length_over_seeds": {"seeds": [0, 1], "longer_distances_mse": {"mean": 12.0}},
        "length_frequency": {"models": [{}, {}, {}, {}], "supports": "rare data"},
    }
    record = Record(display=False)
    record("finetune.loss_before", 0.7, ".4f")
    record("finetune.loss_after", 0.2, ".5f")
    record("summary.finetune_effect", "lowers")
    record("base_model.origin", "No chapter 2 checkpoint was found, so a base model was trained here")
    for prefix, scale in (("scale", results["scale"]), ("published_scale", PUBLISHED_SCALE)):
        record.fields(prefix, scale, n_min="d", small_n_max="d", large_n_max="d", unreachable_label="d")
    for name, v in values.items():
        record(f"tests.{name}.mse_after", v[0], ".4f")
        record.spread(f"seeds.{name}.mse", v)
        record(f"seeds.{name}.side", "below" if name.startswith("any") else "above")
        record.spread(f"base.{name}.ratio", [0.5, 0.9], ".2f")
    record("read.loss_grows", "grows")  # 0.6 on large graphs against 0.4 on the fine-tuning graphs
    record("read.any_target_large_graphs.rose", "lower")  # fine-tuning halved every MSE here
    record("read.onpath_order.higher", 2, "d")
    record("read.onpath_order.seeds", 2, "d")
    record("sizes.mse_small", 0.3, ".3g")
    record("sizes.mse_large_small_ids", float("nan"), ".3g")
    record("size_seeds.not_staying_right", 1, "d")
    record("base.any_accounted", 1, "d")
    record("length_seeds.seeds", 2, "d")
    record("length_seeds.longer_distances_mse.mean", 12.0, ".3g")
    record("freq.models", 4, "d")
    record("summary.favours_over", "over the data stopping")
    results["recorded"] = record.results()
    return results


def test_the_recorded_numbers_and_words_agree_with_the_results_they_come_from():
    results = recorded_results()
    check_recorded(results)
    for key, wrong in (("read.loss_grows", "does not grow"), ("seeds.onpath_target.side", "below"),
                       ("finetune.loss_after", 0.3), ("summary.favours_over", "over rare data")):
        changed = recorded_results()
        changed["recorded"][key]["value"] = wrong
        with pytest.raises(AssertionError):
            check_recorded(changed)
