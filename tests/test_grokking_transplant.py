"""The ungrokking criteria of chapter 6's transplant, and the authors' flip rate, on hand-made curves."""

import torch

from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import make_pair
from lib.grokking.total_variation import authors_flip_rate
from lib.grokking.training import SweepConfig
from lib.grokking.transplant import CRITERIA, transplant, ungrok_criteria, ungrok_share


def test_each_criterion_counts_the_seeds_it_should():
    pair = make_pair("S4_vs_A4xZ2")
    schedule = SweepConfig(epochs=4, log_every=2)
    run = transplant(pair, "g1", [0, 1, 2, 3, 4], MLPConfig(24, 4, 4, unembed_bias=True), schedule, schedule, 1.0,
                     torch.Generator().manual_seed(0))
    assert run.first.train_left.numel() == 576                       # the whole table, the authors' protocol
    share = 336 / 576
    assert abs(run.intersection_share - share) < 1e-12
    # Seeds: 0 keeps the group; 1 dips to 0.98 and comes back; 2 falls to 0.9 and ends at 0.92;
    # 3 collapses to the intersection's share; 4 learned the group only to 0.96 in phase 1.
    run.first.metrics = {"acc_test": torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.96]])}
    run.second.metrics = {"acc_g1": torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.96],
                                                  [1.0, 0.98, 0.9, 0.8, 0.96],
                                                  [1.0, 1.0, 0.92, share, 0.80]]),
                          "train_acc": torch.ones(3, 5)}
    fates = ungrok_criteria(run)
    assert list(fates) == list(CRITERIA)
    assert fates["below 0.999"].ungrokked.tolist() == [False, True, True, True, False]
    assert fates["below 0.999"].regrokked.tolist() == [False, True, False, False, False]
    assert fates["below 0.95"].ungrokked.tolist() == [False, False, True, True, True]   # seed 4 learned it at 0.95
    assert fates["peak minus final > 0.1"].grokked.tolist() == [True] * 5
    assert fates["peak minus final > 0.1"].ungrokked.tolist() == [False, False, False, True, True]
    assert fates["collapse to the intersection"].ungrokked.tolist() == [False, False, False, True, False]
    entry = ungrok_share(fates["below 0.95"])
    assert (entry["grokked_first"], entry["ungrokked"]) == (5, 3) and entry["low"] < 0.6 < entry["high"]


def test_authors_flip_rate_averages_the_last_intervals_over_all_pairs():
    # 2 models, 4 pairs, 5 snapshots; model 0 flips one pair in the last interval only.
    predicted = torch.zeros(5, 2, 4, dtype=torch.long)
    predicted[4, 0, 1] = 3
    predicted[0, 1, :] = 1                                            # model 1 flips only in the first interval
    torch.testing.assert_close(authors_flip_rate(predicted, intervals=2), torch.tensor([1 / 8, 0.0], dtype=torch.float64))
    torch.testing.assert_close(authors_flip_rate(predicted, intervals=4), torch.tensor([1 / 16, 1 / 4], dtype=torch.float64))
