"""Chapter 4's figures plot the numbers they are built from (a hand-made sweep and a small pair)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from lib.chapters.ch4_figures import (
    OUTCOME_COLOURS, cayley_tables_figure, class_balance_figure, final_accuracy_scatter,
    outcome_fractions_figure, sweep_label, training_curves_figure,
)
from lib.grokking.groups import cyclic, direct_product
from lib.grokking.mlp import MLPConfig
from lib.grokking.outcomes import FAILED, GROKKED_G1, GROKKED_G2, MEMORIZED
from lib.grokking.pairs import GroupPair
from lib.grokking.training import SweepConfig, SweepResult


def same(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


# Z4 and Z2 x Z2 on the labels x = h + 2k: they differ exactly where both h are odd (a carry).
PAIR = GroupPair("Z4_vs_Z2xZ2", cyclic(4), direct_product(cyclic(2), cyclic(2)))


def sweep() -> SweepResult:
    """Five instances logged at epochs 0, 10, 20 with hand-chosen accuracies and losses."""
    epochs = torch.tensor([0, 10, 20])
    acc_g1 = torch.tensor([[0.2, 0.3, 0.1, 0.2, 0.1], [0.6, 0.5, 0.5, 0.4, 0.2], [1.0, 0.6, 0.7, 1.0, 0.3]])
    acc_g2 = torch.tensor([[0.2, 0.3, 0.1, 0.2, 0.1], [0.5, 0.9, 0.5, 0.4, 0.2], [0.75, 1.0, 0.7, 0.8, 0.3]])
    train_acc = torch.tensor([[0.3, 0.3, 0.2, 0.3, 0.1], [0.9, 1.0, 0.8, 0.7, 0.2], [1.0, 1.0, 1.0, 1.0, 0.4]])
    train_loss = torch.tensor([[2.0, 2.1, 2.2, 2.3, 2.4], [0.5, 0.4, 0.6, 0.7, 2.0], [0.01, 0.02, 0.03, 0.04, 1.5]])
    return SweepResult(
        seeds=torch.tensor([11, 12, 13, 14, 15]), model_config=MLPConfig(4, 2, 2),
        training_config=SweepConfig(epochs=20, log_every=10), train_left=torch.zeros(0, dtype=torch.long),
        train_right=torch.zeros(0, dtype=torch.long), train_labels=torch.zeros(0, dtype=torch.long),
        log_epochs=epochs, metrics={"acc_g1": acc_g1, "acc_g2": acc_g2, "train_acc": train_acc,
                                    "train_loss": train_loss},
        checkpoints={}, final_params={}, info={"pair": "Z4_vs_Z2xZ2"})


CODES = torch.tensor([GROKKED_G1, GROKKED_G2, MEMORIZED, GROKKED_G1, FAILED])


def test_cayley_tables_show_both_tables_and_where_they_agree():
    fig = cayley_tables_figure(PAIR)
    g1, g2, agree = fig.data
    assert same(g1.z, PAIR.g1.table) and same(g2.z, PAIR.g2.table)
    expected = [[int(PAIR.g1.table[a, b] == PAIR.g2.table[a, b]) for b in range(4)] for a in range(4)]
    assert same(agree.z, expected)
    assert sum(map(sum, expected)) == 12 == sum(1 for a, b in itertools.product(range(4), repeat=2)
                                                  if not (a % 2 and b % 2))
    assert [g1.xaxis, g2.xaxis, agree.xaxis] == ["x", "x2", "x3"]
    assert fig.layout.annotations[2].text == "agree on 12 of 16 pairs<br>(pale: agree; vermillion: differ)"


def test_final_accuracy_scatter_places_each_instance_by_its_final_accuracies():
    result = sweep()
    fig = final_accuracy_scatter(result, CODES, "Z4", "Z2xZ2")
    assert [t.name for t in fig.data] == ["grokked Z4 (2)", "grokked Z2xZ2 (1)",
                                          "memorized (intersection only) (1)", "did not fit (1)"]
    members = {0: [0, 3], 1: [1], 2: [2], 3: [4]}
    for code, trace in enumerate(fig.data):
        index = members[code]
        assert same(trace.x, result.metrics["acc_g1"][-1, index])
        assert same(trace.y, result.metrics["acc_g2"][-1, index])
        assert list(trace.customdata) == result.seeds[index].tolist()
    assert [t.marker.color for t in fig.data] == [OUTCOME_COLOURS[o] for o in
                                                  ("grokked_g1", "grokked_g2", "memorized", "failed")]
    assert fig.layout.title.text == "Z4_vs_Z2xZ2: 5 instances after 20 epochs"
    # Outcomes with no instance get no trace.
    only_g1 = final_accuracy_scatter(result, torch.full((5,), GROKKED_G1), "Z4", "Z2xZ2", title="t")
    assert [t.name for t in only_g1.data] == ["grokked Z4 (5)"] and only_g1.layout.title.text == "t"


SUMMARIES = [
    {"name": "A", "experiment": "a", "weight_decay": 2e-5, "g1": "S4", "g2": "A4xZ2", "n_instances": 100, "fraction_g1": 0.3, "fraction_g2": 0.1,
     "ci_grokked_g1": [0.22, 0.4], "ci_grokked_g2": [0.05, 0.18]},
    {"name": "B", "experiment": "b", "weight_decay": 2e-4, "g1": "Z100", "g2": "Z50xZ2", "n_instances": 50, "fraction_g1": 0.0, "fraction_g2": 0.5,
     "ci_grokked_g1": [0.0, 0.07], "ci_grokked_g2": [0.37, 0.63]},
]


def test_outcome_fractions_bars_carry_fractions_and_interval_widths():
    fig = outcome_fractions_figure(SUMMARIES, {"b": {"fraction_g1": 0.02}})
    g1, g1_published, g2 = fig.data
    # Horizontal bars: one row per sweep, the fractions along x.
    assert g1.orientation == "h" and g2.orientation == "h"
    assert list(g1.y) == ["A", "B"] and same(g1.x, [0.3, 0.0]) and same(g2.x, [0.1, 0.5])
    # Error bars reach exactly from the interval's low to its high end.
    assert g1.error_x.array == pytest.approx([0.1, 0.07]) and g1.error_x.arrayminus == pytest.approx([0.08, 0.0])
    assert g2.error_x.array == pytest.approx([0.08, 0.13]) and g2.error_x.arrayminus == pytest.approx([0.05, 0.13])
    # Every sweep is named by a tick of its own (none thinned out at phone width), first at the top.
    assert list(fig.layout.yaxis.tickvals) == ["A", "B"] == list(fig.layout.yaxis.ticktext)
    assert fig.layout.yaxis.tickmode == "array" and fig.layout.yaxis.autorange == "reversed"
    assert [list(c) for c in g1.customdata] == [["S4", "A4xZ2", 100, "2e-5"], ["Z100", "Z50xZ2", 50, "2e-4"]]
    # Published values only where given: a diamond for B's G1, none for G2.
    assert g1_published.name == "grokked G1, published" and list(g1_published.x) == [None, 0.02]
    assert list(g1_published.y) == ["A", "B"]
    assert [t.name for t in outcome_fractions_figure(SUMMARIES).data] == ["grokked G1", "grokked G2"]


def test_training_curves_show_each_chosen_instance_in_its_own_column():
    result = sweep()
    fig = training_curves_figure(result, {"grokked Z4": 3, "did not fit": 4}, "Z4", "Z2xZ2")
    assert len(fig.data) == 8
    for col, instance in enumerate([3, 4]):
        traces = fig.data[4 * col: 4 * col + 4]
        keys = ["train_acc", "acc_g1", "acc_g2", "train_loss"]
        for trace, key in zip(traces, keys):
            assert same(trace.x, [0, 10, 20]) and same(trace.y, result.metrics[key][:, instance])
        assert [t.name for t in traces] == ["train (intersection)", "all pairs vs Z4", "all pairs vs Z2xZ2",
                                            "training loss"]
        # Accuracies in the top row, loss in the bottom row, of this instance's column.
        assert [t.xaxis for t in traces] == [f"x{col + 1 if col else ''}"] * 3 + [f"x{col + 3}"]
        assert all(t.showlegend == (col == 0) for t in traces)
    assert [a.text for a in fig.layout.annotations] == ["grokked Z4", "did not fit"]
    # Every panel names its quantity (on a phone the panels stand one under another).
    y_titles = {key: fig.layout[key].title.text for key in ("yaxis", "yaxis2", "yaxis3", "yaxis4")}
    assert y_titles == {"yaxis": "accuracy", "yaxis2": "accuracy", "yaxis3": "loss", "yaxis4": "loss"}


def test_class_balance_shows_the_share_of_each_label():
    counts = {"intersection": torch.tensor([4, 2, 2, 4]), "g1_full": torch.tensor([4, 4, 4, 4])}
    fig = class_balance_figure(counts, "Z4_vs_Z2xZ2")
    intersection, full = fig.data
    assert intersection.name == "training set (intersection)" and full.name == "full table of G1"
    assert same(intersection.x, [0, 1, 2, 3]) and same(intersection.y, [1 / 3, 1 / 6, 1 / 6, 1 / 3])
    assert same(full.y, [0.25] * 4)


def test_sweep_labels_are_short_and_tell_the_experiments_of_a_pair_apart():
    def label(name, key, decay=2e-5):
        return sweep_label({"name": name, "experiment": key, "weight_decay": decay})
    assert [label("S4_vs_A4xZ2", k) for k in ("s4", "s4_no_bias")] == ["S4", "S4, no bias"]
    assert label("S4_vs_A4xZ2", "s4_second_decay", 2e-4) == "S4, wd 2e-4"
    assert label("Z48xZ2_vs_Z48x|25Z2", "z48") == "Z48"
    assert [label("Z35x|6Z2_vs_Z35x|34Z2", k) for k in ("z35_lr0.01", "z35_book")] == ["Z35, lr 0.01", "Z35, recipe"]
    assert label("Z100_vs_Z50xZ2", "z100") == "Z100"


def test_class_balance_draws_two_equal_full_tables_as_one_line_named_for_both():
    """Both full tables hold every label equally often: one line named for both, not one hidden
    under the other (issue 51); unequal shares keep a line each."""
    equal = {"intersection": torch.tensor([4, 2, 2, 4]), "g1_full": torch.tensor([4, 4, 4, 4]),
             "g2_full": torch.tensor([4, 4, 4, 4])}
    names = [trace.name for trace in class_balance_figure(equal, "Z4_vs_Z2xZ2").data]
    assert names == ["training set (intersection)", "full tables of G1 and G2 (equal)"]
    unequal = {**equal, "g2_full": torch.tensor([8, 4, 2, 2])}
    assert len(class_balance_figure(unequal, "X").data) == 3
