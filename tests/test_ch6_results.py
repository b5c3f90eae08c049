"""Chapter 6's reported numbers on hand-made studies whose answers are known."""

import torch

from lib.chapters.ch6 import (
    EarlyPrediction, JacobianSpectra, TotalVariationStudy, TransplantStudy,
)
from lib.chapters.ch6_perturbation import PerturbationStudy
from lib.chapters.ch6_results import (
    decision_rows, decision_table, median, summary_lines, total_variation_rows, transplant_rows,
)
from lib.grokking.pairs import make_pair
from lib.grokking.training import SweepConfig, SweepResult
from lib.grokking.transplant import Transplant, TransplantFates


def hand_made_perturbation() -> PerturbationStudy:
    # Two seeds (grokked S4 and neither), three checkpoints, scales 2^-10 and 2^0.
    probability = torch.tensor([[[0.5, 1.0], [0.0, 0.5]],
                                [[0.0, 0.5], [0.0, 0.5]],
                                [[0.0, 0.0], [0.0, 0.5]]], dtype=torch.float64)
    return PerturbationStudy(
        index=torch.tensor([0, 1]), sweep_outcome=torch.tensor([0, 2]), checkpoints=torch.tensor([0, 500, 1000]),
        log2_scales=torch.tensor([-10, 0]), copies=2, outcomes=torch.zeros(3, 2, 2, 2, dtype=torch.long),
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
        train_accuracy=torch.tensor([1.0, 1.0, 1.0, 0.5]))


def test_total_variation_rows_group_memorizers_and_failures_as_neither():
    rows = {r["group"]: r for r in total_variation_rows(hand_made_total_variation())}
    assert list(rows) == ["grokked S4", "neither"]
    assert rows["grokked S4"]["count"] == 2 and rows["grokked S4"]["test_tv_mean"] == 2.0
    assert rows["grokked S4"]["share_without_flips"] == 1.0 and rows["grokked S4"]["published_flip_rate"] == 5.4e-5
    neither = rows["neither"]
    assert neither["count"] == 2 and abs(neither["test_flip_rate_mean"] - 0.03) < 1e-9
    # Only the seed that fits the training set counts for the training-set columns.
    assert neither["fitted_at_window_start"] == 1 and neither["train_tv_max_fitted"] == 6.0
    assert neither["train_flips_max_fitted"] == 0.0


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
    return TransplantStudy({"g1": Transplant(pair, "g1", second, second)}, {"g1": fates})


def test_transplant_rows_count_fates_and_how_deep_the_ungrokked_fell():
    (row,) = transplant_rows(hand_made_transplant())
    assert row["first_group"] == "S4" and row["grokked_first"] == 3 and row["ungrokked"] == 2
    assert abs(row["ungrokked_share"] - 2 / 3) < 1e-12 and row["regrokked_share"] == 0.5
    assert abs(row["lowest_accuracy_median"] - 0.7) < 1e-6                 # lowest values 0.8 and 0.6


def test_summary_lines_state_the_runs_numbers_next_to_the_studys():
    values = torch.tensor([[1.0, 1.0], [3.0, 0.9], [1e6, 1e-3]], dtype=torch.float64)
    spectra = JacobianSpectra(2, [0, 10, 100], {(0.0, "float64"): values, (0.0, "float32"): values * 2}, 1e-9, 0.5)
    prediction = EarlyPrediction(torch.tensor([0, 500, 1000]), torch.tensor([0.5, 0.95, 0.97], dtype=torch.float64),
                                 torch.tensor([0.5, 0.5, 0.5], dtype=torch.float64), (2, 2))
    rows = decision_rows(hand_made_perturbation(), torch.tensor([11, 12]), log2_scale=-10)
    lines = summary_lines(rows, -10, total_variation_rows(hand_made_total_variation()),
                          transplant_rows(hand_made_transplant()), spectra, prediction)
    text = "\n".join(lines)
    assert "1 of the 1 perturbed grokkers were decided" in text and "900 epochs earlier" in text
    assert "flip less than those that grokked neither, as in the study" in text
    assert "2 (67%) ungrokked it" in text and "8 to 10 times as common" in text
    assert "50% after 10 steps and 0% after 100" in text and "2 times the float64 value" in text
    assert "miss the exact Jacobian by 50%" in text
    assert "from epoch 500 on" in text and "read the fate at the median decision epoch" in text


def test_median_averages_the_two_middle_values_of_an_even_count():
    assert median([1400, 940, 1200, 1580]) == 1300 and median([3, 1, 2]) == 2
    assert median([]) != median([])                                           # NaN
