"""Chapter 6's reported numbers on hand-made studies whose answers are known, and the checks of
its results JSON."""

import json
from pathlib import Path

import pytest
import torch

from lib.chapters.ch6_results import (
    check_results, decision_comparison_rows, decision_leads, decision_rows, decision_table, flip_comparison_table, flips_ordered,
    jacobian_summary, median, total_variation_rows, total_variation_table, transplant_rows, transplant_table,
    transplant_verdict,
)
from lib.grokking.early_prediction import EarlyPrediction
from lib.grokking.jacobian_claims import claim_checks
from lib.grokking.pairs import make_pair
from lib.grokking.perturbation import PerturbationStudy
from lib.grokking.total_variation import TotalVariationStudy
from lib.grokking.training import SweepConfig, SweepResult
from lib.grokking.training_jacobian import JacobianStudy
from lib.grokking.transplant import CRITERIA, Transplant, TransplantFates
from lib.grokking.transplant_both_ways import TransplantStudy


def hand_made_perturbation() -> PerturbationStudy:
    # Two seeds (grokked S4 and neither), three checkpoints, scales 2^-10 and 2^0.
    probability = torch.tensor([[[0.5, 1.0], [0.0, 0.5]],
                                [[0.0, 0.5], [0.0, 0.5]],
                                [[0.0, 0.0], [0.0, 0.5]]], dtype=torch.float64)
    return PerturbationStudy(
        index=torch.tensor([0, 1]), sweep_outcome=torch.tensor([0, 2]), checkpoints=torch.tensor([0, 500, 1000]),
        log2_scales=torch.tensor([-10, 0]), copies=2, noise_shape="init", outcomes=torch.zeros(3, 2, 2, 2, dtype=torch.long),
        reference=torch.zeros(3, 2, dtype=torch.long), probability=probability,
        accuracy_shift=torch.zeros(3, 2, 2, dtype=torch.float64), choice_epoch=torch.tensor([1400, -1]))


def test_decision_rows_give_each_seeds_decision_and_its_lead_over_the_choice():
    rows = decision_rows(hand_made_perturbation(), torch.tensor([11, 12]), log2_scale=-10)
    assert [(r["seed"], r["outcome"], r["decision_epoch"], r["decision_epoch_largest_scale"], r["lead_epochs"])
            for r in rows] == [(11, "grokked S4", 500, 1000, 900), (12, "neither", 0, -1, None)]
    table = decision_table(rows, -10, 0)
    assert "| 11 | grokked S4 | 1,400 | 500 | 1,000 | 900 |" in table and "| 12 | neither | - | 0 | - | - |" in table


def hand_made_total_variation() -> TotalVariationStudy:
    return TotalVariationStudy(
        index=torch.arange(4), outcome=torch.tensor([0, 0, 2, 3]), same_outcome=True, epochs=torch.tensor([0, 10, 20]),
        test_tv=torch.tensor([1.0, 3.0, 5.0, 7.0]), test_flips=torch.tensor([0.0, 0.0, 0.02, 0.04]),
        train_tv=torch.tensor([2.0, 4.0, 6.0, 8.0]), train_flips=torch.tensor([0.0, 0.0, 0.0, 0.3]),
        train_accuracy=torch.tensor([1.0, 1.0, 1.0, 0.5]), authors_epochs=torch.tensor([10, 15, 20]),
        authors_flips=torch.tensor([0.0, 1e-4, 0.01, 0.03]))


def test_total_variation_rows_group_memorizers_and_failures_as_neither():
    rows = {r["group"]: r for r in total_variation_rows(hand_made_total_variation())}
    assert list(rows) == ["grokked S4", "neither"]
    assert rows["grokked S4"]["count"] == 2 and rows["grokked S4"]["test_tv_mean"] == 2.0
    assert rows["grokked S4"]["share_without_flips"] == 1.0 and rows["grokked S4"]["published_flip_rate"] == 5.4e-5
    assert rows["grokked S4"]["seeds_flipping_authors"] == 1 and rows["grokked S4"]["seeds_flipping_book"] == 0
    assert abs(rows["grokked S4"]["authors_flip_rate_mean"] - 5e-5) < 1e-9
    assert rows["grokked S4"]["authors_flip_rate_low"] <= 5e-5 <= rows["grokked S4"]["authors_flip_rate_high"]
    neither = rows["neither"]
    assert neither["count"] == 2 and abs(neither["test_flip_rate_mean"] - 0.03) < 1e-9
    assert abs(neither["authors_flip_rate_mean"] - 0.02) < 1e-9 and neither["seeds_flipping_authors"] == 2
    # Only the seed that fits the training set counts for the training-set columns.
    assert neither["fitted_at_window_start"] == 1 and neither["train_tv_max_fitted"] == 6.0
    assert neither["train_flips_max_fitted"] == 0.0


def test_total_variation_table_says_when_an_outcome_has_no_interval():
    rows = total_variation_rows(hand_made_total_variation())
    rows[0].update(authors_flip_rate_low=float("nan"), authors_flip_rate_high=float("nan"))   # one seed: no bootstrap
    table = total_variation_table(rows)
    assert "nan" not in table and "| none (too few seeds) |" in table
    assert f"| {rows[1]['authors_flip_rate_low']:.2g} to {rows[1]['authors_flip_rate_high']:.2g} |" in table


def hand_made_transplant() -> TransplantStudy:
    pair = make_pair("S4_vs_A4xZ2")

    def run(curves: list[list[float]]) -> SweepResult:
        accuracy = torch.tensor(curves).T                                      # (epochs, seeds)
        metrics = {"acc_g1": accuracy, "acc_g2": accuracy, "train_acc": torch.ones_like(accuracy)}
        return SweepResult(seeds=torch.arange(len(curves)), model_config=None, training_config=SweepConfig(),
                           train_left=torch.zeros(1), train_right=torch.zeros(1), train_labels=torch.zeros(1),
                           log_epochs=torch.arange(accuracy.shape[0]), metrics=metrics, checkpoints={},
                           final_params={}, elapsed_s=0.0, info={})

    second = run([[1.0, 0.8, 1.0], [1.0, 0.6, 0.7], [1.0, 1.0, 1.0], [0.5, 0.5, 0.5]])
    fates = TransplantFates(torch.tensor([True, True, True, False]), torch.tensor([True, True, False, False]),
                            torch.tensor([True, False, False, False]))
    none = TransplantFates(fates.grokked, torch.zeros(4, dtype=torch.bool), torch.zeros(4, dtype=torch.bool))
    criteria = {name: (fates if name == "below 0.999" else none) for name in CRITERIA}
    return TransplantStudy({"g1": Transplant(pair, "g1", second, second)}, {"g1": criteria})


def test_transplant_rows_count_fates_and_how_deep_the_ungrokked_fell():
    (row,) = transplant_rows(hand_made_transplant())
    assert row["first_group"] == "S4" and row["grokked_first"] == 3 and row["ungrokked"] == 2
    assert abs(row["ungrokked_share"] - 2 / 3) < 1e-12 and row["regrokked_share"] == 0.5
    assert abs(row["lowest_accuracy_median"] - 0.7) < 1e-6                 # lowest values 0.8 and 0.6
    book = row["criteria"]["below 0.999"]
    assert (book["grokked_first"], book["ungrokked"], book["regrokked"]) == (3, 2, 1)
    assert book["low"] < 2 / 3 < book["high"]                                # Wilson interval around 2 of 3
    assert row["criteria"]["collapse to the intersection"]["ungrokked"] == 0
    assert "| S4 | below 0.999 | 3 | 2 (66.7%;" in transplant_table([row])
    # 7% lies outside the Wilson interval of 2 of 3, inside that of 0 of 3 (the other criteria here).
    assert transplant_verdict([row])["criteria_matching_both"] == [n for n in CRITERIA if n != "below 0.999"]


def hand_made_jacobian() -> JacobianStudy:
    values = torch.tensor([[1.0, 1.0], [3.0, 0.95], [1e6, 1e-3]], dtype=torch.float64)
    return JacobianStudy(
        n_parameters=2, embed_dim=1, steps=100, segment=50, weight_decay=2e-4, train_fraction=0.584,
        boundaries=torch.tensor([0, 50, 100]), train_accuracy=torch.tensor([0.1, 1.0, 1.0], dtype=torch.float64),
        test_accuracy=torch.tensor([0.1, 0.5, 1.0], dtype=torch.float64),
        singular_values={"float64": values, "float32": values * 2},
        dtype_difference=torch.tensor([0.0, 0.1, 1.0], dtype=torch.float64), finite_difference_error=1e-9,
        seconds_per_step={"float64": 0.1, "float32": 0.05})


def test_jacobian_summary_reads_the_spectrum_either_side_of_grokking():
    facts = jacobian_summary(hand_made_jacobian())
    assert facts["grok_step"] == 100 and facts["before"]["step"] == 50 and facts["after"]["step"] == 100
    assert facts["before"]["share_near_one"] == 0.5 and facts["after"]["top_singular_value"] == 1e6
    assert facts["published"]["n_parameters"] == 4376
    assert abs(facts["cost_ratio_to_published"] - (4376 / 2) ** 2 * 4000 / 100) < 1e-6


def test_decision_leads_count_the_grokkers_decided_before_their_choice_showed():
    studies = {"init": hand_made_perturbation(), "gaussian": hand_made_perturbation()}
    rows = decision_comparison_rows(studies, torch.tensor([11, 12]), log2_scale=-10)
    assert rows[0]["decision_epoch_init"] == rows[0]["decision_epoch_gaussian"] == 500
    leads = decision_leads(rows, "init")
    assert leads == {"shape": "init", "grokkers": 1, "decided_early": 1, "median_lead": 900}
    nobody = decision_leads([{**r, "decision_epoch_init": -1} for r in rows], "init")
    assert nobody["decided_early"] == 0 and nobody["median_lead"] != nobody["median_lead"]      # NaN


def test_flips_are_ordered_when_every_grokker_flips_less_than_neither():
    rows = total_variation_rows(hand_made_total_variation())
    by_group = {r["group"]: r for r in rows}
    assert flips_ordered(rows) is True
    neither = by_group["neither"]["authors_flip_rate_mean"]
    flipped = [{**r, "authors_flip_rate_mean": neither * 2} if r["group"] != "neither" else r for r in rows]
    assert flips_ordered(flipped) is False
    assert flips_ordered([r for r in rows if r["group"] != "neither"]) is None
    table = flip_comparison_table(rows, rows)
    assert "| grokked S4 | 5e-05 | 1 of 2 | 5e-05 | 1 of 2 |" in table and "5.4e-05" in table


def test_median_averages_the_two_middle_values_of_an_even_count():
    assert median([1400, 940, 1200, 1580]) == 1300 and median([3, 1, 2]) == 2
    assert median([]) != median([])                                           # NaN


def test_the_transplant_verdict_checks_the_authors_criterion_and_lists_a_lucky_other():
    def row(group, authors, collapse):
        entry = lambda share, low, high: {"share": share, "low": low, "high": high}  # noqa: E731
        return {"first_group": group, "criteria": {"below 0.999": entry(0.8, 0.7, 0.88), "below 0.95": entry(0.75, 0.6, 0.85),
                                                   "peak minus final > 0.1": authors,
                                                   "collapse to the intersection": collapse}}
    far, near = {"share": 0.55, "low": 0.41, "high": 0.65}, {"share": 0.05, "low": 0.015, "high": 0.13}
    transplanted = [row("S4", far, near), row("A4xZ2", far, near)]
    verdict = transplant_verdict(transplanted)
    assert verdict["criteria_matching_both"] == ["collapse to the intersection"]
    assert not verdict["authors_criterion_matches"] and verdict["authors_criterion_shares"] == [0.55, 0.55]
    matched = transplant_verdict([row("S4", near, far), row("A4xZ2", near, far)])
    assert matched["authors_criterion_matches"] and matched["criteria_matching_both"] == ["peak minus final > 0.1"]


def committed_results() -> dict:
    """The committed run's results JSON, with the Jacobian claims derived from their evidence where
    it predates them (a run before the claims replaced the recorded verdicts)."""
    results = json.loads((Path(__file__).parents[1] / "notebooks" / "results" / "06_determination.json").read_text())
    sketch = results["jacobian_sketch"]
    sketch.pop("verdicts", None)
    sketch.setdefault("claims", claim_checks(sketch))
    return results


def test_check_results_holds_the_claims_to_their_evidence_and_the_recorded_words_to_the_claims():
    results = committed_results()
    check_results(results)
    claims = results["jacobian_sketch"]["claims"]
    assert claims["blow_up"] is True and claims["no_bulk"] is False
    with pytest.raises(AssertionError):                      # a claim the evidence does not support
        check_results({**results, "jacobian_sketch": {**results["jacobian_sketch"],
                                                      "claims": {**claims, "no_bulk": True}}})
    with pytest.raises(AssertionError):                      # a word the prose shows against its claim
        recorded = {**results["recorded"], "sketch.blow_up": {**results["recorded"]["sketch.blow_up"],
                                                              "text": "differs"}}
        check_results({**results, "recorded": recorded})
    with pytest.raises(AssertionError):                      # a claim that is a word, not a boolean
        check_results({**results, "jacobian_sketch": {**results["jacobian_sketch"],
                                                      "claims": {**claims, "blow_up": "reproduced"}}})


def test_chapter_6_words_its_bulk_and_transplant_verdicts_by_the_one_rule_as_its_index_rows_do():
    from lib.book.reproduced import chapter_rows
    from lib.chapters.ch6_results import no_bulk_word, transplant_word
    from lib.grokking.transplant import AUTHORS_CRITERION

    assert [no_bulk_word(v) for v in (True, False, None)] == ["one run", "not comparable", "not comparable"]

    def direction(ungrokked, grokked):
        return {"criteria": {AUTHORS_CRITERION: {"ungrokked": ungrokked, "grokked_first": grokked}}}
    assert transplant_word([direction(5, 64), direction(5, 64)], [0.07, 0.08], AUTHORS_CRITERION) == "reproduced"
    assert transplant_word([direction(34, 64), direction(5, 64)], [0.07, 0.08], AUTHORS_CRITERION) == "differs"
    assert transplant_word([direction(2, 64), direction(5, 64)], [0.07, 0.08], AUTHORS_CRITERION) == "too few events"
    results = committed_results()
    words = {r.quantity.split(":")[0]: r.word for r in chapter_rows("06_determination", results)}
    claims = results["jacobian_sketch"]["claims"]
    assert no_bulk_word(claims["no_bulk"]) == next(
        r.word for r in chapter_rows("06_determination", results) if "no bulk" in r.quantity)
    from lib.grokking.study import PUBLISHED_UNGROK_SHARES
    assert transplant_word(results["transplant"], PUBLISHED_UNGROK_SHARES, AUTHORS_CRITERION) == words["transplant"]
