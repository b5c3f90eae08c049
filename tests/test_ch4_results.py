"""Chapter 4's results objects, built from hand-made sweeps whose outcomes are chosen here."""

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from lib.book.params import read_parameters_cell, validate_parameters
from lib.chapters.ch4 import Chapter4Parameters, Experiment, classify_run, pair_keys, save_experiments, subsample_keys
from lib.chapters.ch4_results import (
    AUTHORS_SCRIPT_THRESHOLD, FINDINGS, check_findings, findings, fractions_table, intersections_table, label_balance,
    outcomes_table, pair_intersection, pair_intersections, pair_outcome, published_fraction_marks,
    rounded, subsample_outcome, subsample_table, sweep_of_rates, typical_instance_panels,
)
from lib.chapters.ch4_report import (
    FEEDS_LATER_CHAPTERS, FeedingSweep, feeding_sweep, outcome_json, published_comparisons,
)
from lib.grokking.mlp import MLPConfig
from lib.book.statistics import wilson_interval
from lib.grokking.pairs import PAIR_NAMES, make_pair, pairs_in_mask
from lib.grokking.training import SweepConfig, SweepResult

DEFAULTS = {**read_parameters_cell(Path(__file__).parents[1] / "notebooks" / "04_ambiguous_grokking.py"),
            "device": "cpu", "results_dir": "/tmp/results"}

#: Final accuracies (against G1, against G2, on the training set) that give each outcome at the
#: chapter's threshold 0.999; all exact in float32.
GROKS_G1, GROKS_G2, MEMORIZES, FAILS = (1.0, 0.75, 1.0), (0.75, 1.0, 1.0), (0.625, 0.625, 1.0), (0.5, 0.5, 0.5)


def hand_made_run(finals, *, pair_name="S4_vs_A4xZ2", key="s4", seconds=2.0, epochs=10,
                  acc_intersection=None, n_train_pairs=None, fit_epochs=None, threshold=0.999,
                  bias=True, weight_decay=2e-5):
    """A classified run whose instances end with the given (acc_g1, acc_g2, train_acc), its model
    with the unembedding bias unless `bias` is False.

    Metrics are logged at epochs 10, 20, ... (one per entry of `fit_epochs`, else one epoch);
    instance i reaches training accuracy 1 at `fit_epochs[i]` and keeps its final values after.
    """
    pair = make_pair(pair_name)
    n = len(finals)
    log_epochs = list(fit_epochs and sorted(set(fit_epochs)) or [epochs])
    acc_g1, acc_g2, train_acc = (torch.tensor([f[j] for f in finals]) for j in range(3))
    curves = {"acc_g1": acc_g1, "acc_g2": acc_g2, "train_acc": train_acc,
              "acc_intersection": torch.tensor(acc_intersection or [1.0] * n),
              "train_loss": torch.zeros(n)}
    metrics = {name: final.repeat(len(log_epochs), 1) for name, final in curves.items()}
    if fit_epochs:
        for i, fitted in enumerate(fit_epochs):
            metrics["train_acc"][[e < fitted for e in log_epochs], i] = 0.5
    left, right = pairs_in_mask(pair.mask)
    left, right = left[:n_train_pairs], right[:n_train_pairs]
    train_fraction = left.numel() / pair.intersection_size
    model = MLPConfig(pair.n_elements, 4, 4, unembed_bias=bias)
    training = SweepConfig(epochs=epochs, log_every=epochs, weight_decay=weight_decay)
    result = SweepResult(
        seeds=torch.arange(n), model_config=model, training_config=training, train_left=left,
        train_right=right, train_labels=pair.g1.table[left, right],
        log_epochs=torch.tensor(log_epochs), metrics=metrics, checkpoints={}, final_params={},
        elapsed_s=seconds, info={"pair": pair.name, "g1": pair.g1.name, "g2": pair.g2.name,
                                 "n_elements": pair.n_elements,
                                 "intersection_size": pair.intersection_size,
                                 "train_fraction": train_fraction})
    return classify_run(Experiment(key, pair_name, n, model, training, train_fraction), pair,
                        result, threshold)


#: Three seeds grok S4, one A4 x Z2, three memorize, one fails to fit.
EIGHT = [GROKS_G1, GROKS_G2, GROKS_G1, MEMORIZES, MEMORIZES, GROKS_G1, MEMORIZES, FAILS]


def test_pair_outcome_counts_fractions_and_intervals_of_each_outcome():
    outcome = pair_outcome(hand_made_run(EIGHT))
    assert (outcome.name, outcome.g1, outcome.g2) == ("S4_vs_A4xZ2", "S4", "A4xZ2")
    assert (outcome.n_instances, outcome.epochs, outcome.grok_threshold) == (8, 10, 0.999)
    for share, count in [(outcome.grokked_g1, 3), (outcome.grokked_g2, 1), (outcome.memorized, 3),
                         (outcome.failed, 1)]:
        assert (share.count, share.n_instances, share.fraction) == (count, 8, count / 8)
        assert (share.low, share.high) == wilson_interval(count, 8)
    assert outcome.fraction_neither == 0.5 and outcome.grokked_either == 4
    assert outcome.final_acc_g1 == (1.0, 0.75, 1.0, 0.625, 0.625, 1.0, 0.625, 0.5)
    assert outcome.final_acc_g2 == (0.75, 1.0, 0.75, 0.625, 0.625, 0.75, 0.625, 0.5)
    assert outcome.seconds == 2.0 and outcome.model_epochs_per_second == 8 * 10 / 2.0
    assert (outcome.published_n_instances, outcome.published_fraction_g1,
            outcome.published_fraction_g2) == (10_000, 0.0603, 0.0043)
    # Intervals of 3 and 1 of 8 overlap: 1 of 8 reaches above 0.5, 3 of 8 starts below 0.2.
    assert not outcome.intervals_apart


def test_the_interval_of_no_seeds_is_the_hand_computed_wilson_bound():
    outcome = pair_outcome(hand_made_run([GROKS_G1] * 60 + [MEMORIZES] * 40))
    z = 1.959963984540054
    assert outcome.grokked_g2.low == 0.0
    assert math.isclose(outcome.grokked_g2.high, z * z / (100 + z * z), rel_tol=1e-9)
    assert outcome.intervals_apart  # 0 of 100 lies wholly below 60 of 100


def test_a_looser_threshold_reclassifies_from_the_final_accuracies():
    almost_g1, almost_fits = (0.96, 0.75, 1.0), (0.625, 0.625, 0.96)
    run = hand_made_run([almost_g1, almost_fits, GROKS_G2, FAILS])
    strict, loose = pair_outcome(run), pair_outcome(run, AUTHORS_SCRIPT_THRESHOLD)
    assert [strict.grokked_g1.count, strict.grokked_g2.count, strict.memorized.count,
            strict.failed.count] == [0, 1, 1, 2]
    assert [loose.grokked_g1.count, loose.grokked_g2.count, loose.memorized.count,
            loose.failed.count] == [1, 1, 1, 1]
    assert loose.grok_threshold == 0.95 and strict.grok_threshold == 0.999


def test_outcome_and_summary_agree_and_the_fractions_table_reads_the_outcome():
    run = hand_made_run(EIGHT)
    outcome = pair_outcome(run)
    assert outcome.grokked_g1.fraction == run.summary["fraction_g1"]
    assert outcome.fraction_neither == run.summary["fraction_neither"]
    assert [outcome.failed.low, outcome.failed.high] == run.summary["ci_failed"]
    low, high = wilson_interval(3, 8)
    lines = fractions_table([outcome]).splitlines()
    assert len(lines) == 3
    cells = lines[2].strip("| ").split(" | ")
    assert cells[:8] == ["s4", "S4_vs_A4xZ2", "yes", "2e-5", "8", "10", "0.999", "2"]
    assert cells[8] == f"3 (37.50%; {low:.2%} to {high:.2%})" and cells[9].startswith("1 (12.50%;")
    assert cells[10].startswith("3 (37.50%;") and cells[11].startswith("1 (12.50%;")


def test_epoch_cost_compares_model_epochs_per_second():
    fast, slow = pair_outcome(hand_made_run(EIGHT, seconds=2.0)), pair_outcome(hand_made_run(EIGHT, seconds=8.0))
    assert slow.epoch_cost_relative_to(fast) == 4.0 and fast.epoch_cost_relative_to(slow) == 0.25


def test_a_pair_without_published_fractions_reads_none():
    outcome = pair_outcome(hand_made_run([MEMORIZES], pair_name="Z100_vs_Z50xZ2", key="z100"))
    assert outcome.published_n_instances is None
    assert outcome.published_fraction_g1 is None and outcome.published_fraction_g2 is None  # a note, no count
    runs = {"s5": hand_made_run([MEMORIZES], pair_name="S5_vs_A5xZ2", key="s5"), "s4": hand_made_run(EIGHT)}
    assert published_fraction_marks(runs) == {"s5": {}, "s4": {"fraction_g1": 0.0603, "fraction_g2": 0.0043}}
    assert pair_outcome(runs["s5"]).published_counts is None
    assert pair_outcome(runs["s4"]).published_counts == (603, 43)  # of 10,000


def test_the_feeding_sweep_reads_the_a4_counts_of_both_s4_sweeps():
    with_bias = pair_outcome(hand_made_run([GROKS_G1] * 3 + [GROKS_G2] * 2 + [MEMORIZES] * 3))
    without = pair_outcome(hand_made_run([GROKS_G2] * 4 + [MEMORIZES] * 4, bias=False, key="s4_no_bias"))
    assert feeding_sweep(with_bias, without) == FeedingSweep(2, 8, 4, True)
    assert not feeding_sweep(without, with_bias).too_few_with_bias  # 4 of them: enough


def test_preference_is_claimed_only_when_the_intervals_separate():
    apart = pair_outcome(hand_made_run([GROKS_G1] * 30 + [MEMORIZES] * 70))
    assert apart.preferred_group == "S4"
    assert apart.preference_shown is True and apart.intervals_apart
    reversed_ = pair_outcome(hand_made_run([GROKS_G2] * 30 + [MEMORIZES] * 70))
    assert reversed_.preferred_group == "A4xZ2" and reversed_.preference_shown is True
    assert not reversed_.intervals_apart  # G2 above G1: a preference, not G1's
    overlapping = pair_outcome(hand_made_run(EIGHT))  # 3 against 1 of 8
    assert overlapping.preferred_group is None and overlapping.preference_shown is False
    none = pair_outcome(hand_made_run([MEMORIZES] * 4))
    assert none.grokked_either == 0 and none.preference_shown is None  # nothing to compare


def test_outcomes_table_shows_counts_percentages_intervals_and_published_fractions():
    outcome = pair_outcome(hand_made_run(EIGHT))
    lines = outcomes_table([outcome]).splitlines()
    assert lines[0].startswith("| pair | G1 | G2 | bias | weight decay | threshold | seeds | grokked G1 |")
    assert len(lines) == 3
    low, high = wilson_interval(3, 8)
    assert lines[2].startswith(f"| S4_vs_A4xZ2 | S4 | A4xZ2 | yes | 2e-5 | 0.999 | 8 | 3 (37.50%; {low:.2%} to {high:.2%}) |")
    assert lines[2].endswith("| 6.03% | 0.43% |")


def test_subsample_outcome_reads_the_completion_of_the_intersection():
    run = hand_made_run([MEMORIZES] * 4, key="subsample_s4", n_train_pairs=202,
                        acc_intersection=[1.0, 0.75, 0.998, 0.625])
    sub = subsample_outcome(run)
    assert (sub.name, sub.n_instances, sub.n_elements, sub.intersection_size) == ("S4_vs_A4xZ2", 4, 24, 336)
    assert sub.n_train_pairs == 202 and sub.train_fraction == 202 / 336
    assert sub.share_of_all_pairs == 202 / 576
    # Only 1.0 reaches the threshold 0.999.
    assert sub.fraction_intersection_grokked == 0.25 and sub.min_acc_intersection == 0.625
    assert rounded(sub.final_acc_intersection, 3) == [1.0, 0.75, 0.998, 0.625]
    assert sub.grok_threshold == 0.999 and sub.outcome.memorized.count == 4


def test_the_subsample_table_has_one_row_per_sweep_with_its_completion():
    run = hand_made_run([MEMORIZES] * 4, key="subsample_s4", n_train_pairs=202,
                        acc_intersection=[1.0, 0.75, 0.998, 0.625])
    lines = subsample_table([subsample_outcome(run)]).splitlines()
    assert len(lines) == 3
    assert lines[2] == "| S4_vs_A4xZ2 | 202 | 60% | 4 | 0.999 | 25.00% | 62.500% |"


def test_typical_panels_name_the_outcome_and_seed_of_the_median_fitter():
    run = hand_made_run([GROKS_G1, GROKS_G1, GROKS_G1, MEMORIZES], fit_epochs=[30, 10, 20, 10])
    assert typical_instance_panels(run) == {"grokked S4 (seed 2)": 2,
                                            "memorized (intersection only) (seed 3)": 3}


def test_intersections_next_to_the_published_sizes_and_their_table():
    s4 = pair_intersection(make_pair("S4_vs_A4xZ2"))
    assert (s4.g1, s4.g2, s4.n_elements, s4.intersection_size, s4.n_pairs) == ("S4", "A4xZ2", 24, 336, 576)
    assert s4.overlap == 336 / 576 and s4.matches_published
    rows = pair_intersections()
    assert [r.name for r in rows] == list(PAIR_NAMES) and all(r.matches_published for r in rows)
    table = intersections_table(rows).splitlines()
    assert len(table) == 2 + len(rows)
    assert "| S4_vs_A4xZ2 | S4 | A4xZ2 | 24 | 336 | 576 | 58.3% | 336 |" in table
    assert "| Z48xZ2_vs_Z48x\\|25Z2 | Z48xZ2 | Z48x\\|25Z2 | 96 | 6,912 | 9,216 | 75.0% | 6,912 |" in table


def test_label_balance_of_z100_is_two_per_no_carry_sum():
    balance = label_balance(make_pair("Z100_vs_Z50xZ2"))
    # Label h + 50k is the product of the pairs whose Z50 parts sum to h without carrying:
    # h + 1 splits of h, times 2 ways for the Z2 parts to add up to k.
    expected = [2 * (h + 1) for k in range(2) for h in range(50)]
    assert balance.counts["intersection"].tolist() == expected
    assert balance.counts["g1_full"].tolist() == [100] * 100 == balance.counts["g2_full"].tolist()
    assert (balance.intersection_min, balance.intersection_max, balance.uniform) == (2, 100, False)
    assert balance.counts_json()["intersection"] == expected
    s4 = label_balance(make_pair("S4_vs_A4xZ2"))
    assert s4.uniform and s4.intersection_min == s4.intersection_max == 14  # 336 / 24


def chapter_runs():
    """Hand-made runs under the chapter's keys, with the published findings true of them."""
    return {"z48": hand_made_run([GROKS_G1, MEMORIZES], key="z48"),
            "s4": hand_made_run([GROKS_G1] * 2 + [GROKS_G2] + [MEMORIZES] * 5, key="s4"),
            "s4_no_bias": hand_made_run([GROKS_G1] * 3 + [GROKS_G2] * 2 + [MEMORIZES] * 6, key="s4_no_bias",
                                        bias=False),
            "s4_second_decay": hand_made_run([GROKS_G1] + [MEMORIZES] * 3, key="s4_second_decay",
                                             weight_decay=2e-4),
            "s5": hand_made_run([MEMORIZES], key="s5"),
            "z35_lr0.01": hand_made_run([MEMORIZES], pair_name="Z35x|6Z2_vs_Z35x|34Z2", key="z35_lr0.01"),
            "z35_book": hand_made_run([GROKS_G2, MEMORIZES], pair_name="Z35x|6Z2_vs_Z35x|34Z2", key="z35_book"),
            "z100": hand_made_run([MEMORIZES] * 2, key="z100"),
            "subsample_s4": hand_made_run([MEMORIZES] * 2, key="subsample_s4", n_train_pairs=202,
                                          acc_intersection=[0.75, 0.625])}


def test_the_results_parts_are_the_summaries_the_comparisons_and_the_saved_sweeps(tmp_path):
    runs = chapter_runs()
    config = validate_parameters(Chapter4Parameters, {**DEFAULTS, "smoke": True,
                                                      "results_dir": str(tmp_path)})
    saved = save_experiments(runs, config)
    assert saved["s4"] == "04_sweep_s4.pt" and (tmp_path / "04_sweep_s4.pt").exists()
    assert pair_keys(runs) == ["z48", "s4", "s4_no_bias", "s4_second_decay", "s5", "z35_lr0.01", "z35_book", "z100"]
    assert subsample_keys(runs) == ["subsample_s4"]
    with_bias, without = (outcome_json(pair_outcome(runs[key])) for key in ("s4", "s4_no_bias"))
    assert (with_bias["unembed_bias"], without["unembed_bias"]) == (True, False)
    assert (with_bias["grokked_g2"]["count"], without["grokked_g2"]["count"]) == (1, 2)
    assert with_bias["published"]["fraction_g1"] == 0.0603 and without["published"] is None
    # wd 2e-5 compared at 0.999, wd 2e-4 at the authors' 0.95; each published count once.
    compared = {c["experiment"]: c for c in map(outcome_json, published_comparisons(runs))}
    assert set(compared) == {"s4", "s4_second_decay"}
    assert compared["s4_second_decay"]["grok_threshold"] == 0.95
    assert compared["s4_second_decay"]["published"]["fraction_g1"] == 0.067
    assert FEEDS_LATER_CHAPTERS == "s4_no_bias"
    assert label_balance(make_pair("Z100_vs_Z50xZ2")).counts_json()["intersection"][:3] == [2, 4, 6]
    assert save_experiments(runs, validate_parameters(Chapter4Parameters, {**DEFAULTS, "save_sweeps": False})) == {}


def test_findings_are_reported_with_their_counts_and_never_asserted():
    runs = chapter_runs()
    outcomes = {key: pair_outcome(runs[key]) for key in pair_keys(runs)}
    subsamples = {"subsample_s4": subsample_outcome(runs["subsample_s4"])}
    intersections = pair_intersections()
    check_findings(intersections, outcomes, subsamples)
    found = findings(outcomes, subsamples)
    assert set(found) <= set(FINDINGS) and "s5_subsample_completes" not in found   # its sweep did not run
    # The smoke sweeps' few seeds bound nothing: every "never" without an exception is "consistent".
    assert {name: f["word"] for name, f in found.items() if name != "s4_order"} == {
        name: "consistent" for name in found if name != "s4_order"}
    assert found["s4_order"]["exceptions"] == 0 and found["s4_order"]["seeds"] == 23
    assert found["s4_order"]["word"] in ("reproduced", "too few events")
    # A training outcome that contradicts the study is a finding that does not hold, not a failure.
    outcomes["z48"] = pair_outcome(hand_made_run([GROKS_G1, GROKS_G2], key="z48"))
    outcomes["s4_second_decay"] = pair_outcome(hand_made_run([GROKS_G2, MEMORIZES], key="s4_second_decay",
                                                             weight_decay=2e-4))
    s5_short = {"subsample_s5": subsample_outcome(hand_made_run(
        [MEMORIZES], pair_name="S5_vs_A5xZ2", key="subsample_s5", acc_intersection=[0.9]))}
    check_findings(intersections, outcomes, s5_short)
    found = findings(outcomes, s5_short)
    assert found["z48_no_semidirect"] == {"word": "differs", "exceptions": 1, "seeds": 2, "bound": None}
    assert found["s4_order"]["exceptions"] == 1 and found["s4_order"]["word"] != "reproduced"
    assert found["s5_subsample_completes"] == {"word": "differs", "exceptions": 1, "seeds": 1, "bound": None}


def test_check_findings_fails_on_a_broken_invariant():
    runs = chapter_runs()
    outcomes = {key: pair_outcome(runs[key]) for key in pair_keys(runs)}
    wrong = [dataclasses.replace(pair_intersections()[0], intersection_size=1)]
    with pytest.raises(AssertionError, match="the authors report"):
        check_findings(wrong, outcomes, {})


def test_a_sweep_over_learning_rates_is_summed_with_its_best_accuracies():
    z35 = "Z35x|6Z2_vs_Z35x|34Z2"
    outcomes = {0.001: pair_outcome(hand_made_run([(0.6, 0.7, 1.0), (0.61, 0.9, 1.0)], pair_name=z35, threshold=0.95)),
                0.01: pair_outcome(hand_made_run([(0.6, 1.0, 1.0), MEMORIZES], pair_name=z35, threshold=0.95))}
    summed = sweep_of_rates(outcomes)
    assert (summed.grokked_g1, summed.grokked_g2, summed.seeds, summed.seeds_per_rate) == (0, 1, 4, 2)
    assert summed.rates == (0.001, 0.01) and summed.grok_threshold == 0.95
    assert (summed.best_acc_g1, summed.best_acc_g2) == (0.625, 1.0)  # MEMORIZES: 0.625
