"""Chapter 8's glue and summaries: sweeps join in seed order, per-outcome means and key sets, the
AUC rules, and `check_results` on the committed run (and that it catches a word that disagrees)."""

import copy
import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch

from lib.chapters.ch8 import join_sweeps
from lib.chapters.ch8_results import (
    at_epoch, check_results, first_at_or_above, format_character, key_sets, mean_rows, median,
)
from lib.grokking.early_prediction import EarlyPrediction
from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import run_pair_sweep
from lib.grokking.training import SweepConfig

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "notebooks" / "results" / "08_representations.json"


def small_sweep(seeds):
    config = SweepConfig(epochs=4, log_every=2, checkpoint_epochs=(0, 4), workers=1)
    return run_pair_sweep(make_pair("S4_vs_A4xZ2"), seeds, MLPConfig(24, 4, 4), config, progress=False)


def test_joined_sweeps_hold_both_sweeps_seeds_in_order():
    first, second = small_sweep([0, 1]), small_sweep([2, 3, 4])
    joined = join_sweeps(first, second)
    assert joined.seeds.tolist() == [0, 1, 2, 3, 4]
    assert joined.metrics["acc_g1"].shape == (3, 5)
    assert torch.equal(joined.final_params["unembed"][2:], second.final_params["unembed"])
    assert sorted(joined.checkpoints) == [0, 4]
    other = dataclasses.replace(second, model_config=MLPConfig(24, 4, 8))
    with pytest.raises(ValueError):
        join_sweeps(first, other)


def test_summaries_of_outcome_groups():
    values = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], dtype=torch.float64)
    groups = torch.tensor([0, 0, 2])
    rows = mean_rows(values, groups, torch.zeros(3, 2, dtype=torch.float64))
    assert rows[0].tolist() == [0.5, 0.5] and bool(rows[1].isnan().all()) and rows[2].tolist() == [0.5, 0.5]
    assert key_sets(torch.tensor([[False, True, True], [False, True, True], [False, False, False]]),
                    ("1a", "1b", "3a")) == [("1b+3a", 2), ("none", 1)]
    assert math.isnan(median(torch.tensor([])))
    assert format_character(complex(-0.5, 0.8660254)) == "-0.50+0.87i" and format_character(complex(3, 0)) == "3"


def test_auc_rules():
    prediction = EarlyPrediction(torch.tensor([0, 50, 100]), torch.tensor([0.5, 0.95, 0.97], dtype=torch.float64),
                                 torch.tensor([float("nan")] * 3, dtype=torch.float64), (5, 1))
    assert first_at_or_above(prediction, 0.9, "either") == 50
    assert first_at_or_above(prediction, 0.9, "group") == -1
    assert at_epoch(prediction, 60, "either") == 0.95


@pytest.mark.skipif(not COMMITTED.exists(), reason="chapter 8 has not been executed yet")
def test_check_results_passes_the_committed_run_and_catches_a_word_that_disagrees():
    results = json.loads(COMMITTED.read_text())
    check_results(results)
    flipped = copy.deepcopy(results)
    flipped["restriction"]["key_irreps_suffice"] = not results["restriction"]["key_irreps_suffice"]
    with pytest.raises(AssertionError):
        check_results(flipped)
    wrong = copy.deepcopy(results)
    wrong["characters"]["S4"]["dimensions"] = [1, 1, 1, 3, 3]
    with pytest.raises(AssertionError):
        check_results(wrong)
