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


def test_every_category_of_the_figures_is_a_tick_of_its_own():
    from lib.chapters.ch8_figures import coset_figure, neuron_cells_figure, over_training_figure, profiles_figure

    names = {"S4": ("1a", "1b", "2a", "3a", "3b"), "A4xZ2": ("1a", "1b", "1c+1d", "1e+1f", "3a", "3b")}
    profiles = profiles_figure({g: torch.rand(4, len(n)) for g, n in names.items()}, names)
    for axis, group in ((profiles.layout.xaxis, "S4"), (profiles.layout.xaxis2, "A4xZ2")):
        assert axis.tickmode == "array" and list(axis.tickvals) == list(names[group]) and axis.dtick == 1
    assert profiles.layout.yaxis2.domain[1] < profiles.layout.yaxis.domain[0]   # one panel per row

    cells = ["1a & 1a", "1b & 1b", "2a & 1c+1d"]
    neurons = neuron_cells_figure(torch.rand(4, 3), cells, torch.rand(4))
    labels = list(neurons.data[0].y)
    assert all(trace.orientation == "h" for trace in neurons.data) and len(labels) == 4
    assert list(neurons.layout.yaxis.tickvals) == labels and neurons.layout.yaxis.dtick == 1
    assert [t.replace("<br>", " ") for t in neurons.layout.yaxis.ticktext] == labels

    sets = ["S4 grokkers", "A4xZ2 grokkers", "neither, read with S4", "neither, read with A4xZ2", "random init",
            "S4 alone", "A4xZ2 alone"]
    coset = coset_figure(sets, [0.5] * 7, [0.2] * 7)
    assert all(trace.orientation == "h" and list(trace.y) == sets for trace in coset.data)
    assert list(coset.layout.yaxis.tickvals) == sets and coset.layout.yaxis.dtick == 1
    assert [t.replace("<br>", " ") for t in coset.layout.yaxis.ticktext] == sets

    over = over_training_figure(torch.arange(3), [torch.rand(3, 3)] * 3, cells)
    assert over.layout.yaxis3.domain[1] < over.layout.yaxis2.domain[0] < over.layout.yaxis.domain[0]


CELLS = ["1a & 1a", "1b & 1b", "2a & 1c+1d", "2a & 1e+1f", "3a & 3a", "3a & 3b", "3b & 3a", "3b & 3b"]


def _colours_told_apart(traces, colour_of):
    """The colours of `traces` (one per series): at most five distinct palette colours, each once,
    and the grey of the one "other pairs" series."""
    from lib.book.ordered_series import MOST_ORDERED, REST_COLOUR

    coloured = [colour_of(t) for t in traces if t.name != "other pairs"]
    assert len(coloured) <= MOST_ORDERED and len(set(coloured)) == len(coloured)
    assert [colour_of(t) for t in traces if t.name == "other pairs"] == [REST_COLOUR]


def test_the_neuron_bars_colour_the_five_largest_cells_and_grey_the_rest():
    from lib.chapters.ch8_figures import neuron_cells_figure

    top = torch.tensor([[0.0, 0.07, 0.01, 0.01, 0.61, 0.30, 0.0, 0.0],
                        [0.0, 0.14, 0.0, 0.02, 0.51, 0.0, 0.33, 0.0],
                        [0.0, 0.07, 0.06, 0.10, 0.19, 0.10, 0.12, 0.36],
                        [0.01, 0.01, 0.04, 0.04, 0.38, 0.08, 0.08, 0.36]], dtype=torch.float64)
    fig = neuron_cells_figure(top, CELLS, torch.rand(4))
    _colours_told_apart(fig.data, lambda t: t.marker.color)
    assert [t.name for t in fig.data] == ["1b & 1b", "3a & 3a", "3a & 3b", "3b & 3a", "3b & 3b", "other pairs"]
    # each bar keeps its total, and the grey segment's hover names the pairs inside it
    totals = torch.tensor([list(t.x) for t in fig.data], dtype=top.dtype).sum(dim=0)
    assert torch.allclose(totals, top.sum(dim=1))
    other = fig.data[-1]
    assert all(all(name in text for name in ("1a & 1a", "2a & 1c+1d", "2a & 1e+1f")) for text in other.customdata)
    assert "%{customdata}" in other.hovertemplate


def test_the_embedding_lines_colour_the_same_five_cells_in_every_panel():
    from lib.chapters.ch8_figures import over_training_figure

    shares = [torch.rand(4, len(CELLS), generator=torch.Generator().manual_seed(o)) for o in range(3)]
    fig = over_training_figure(torch.arange(4) * 50, shares, CELLS)
    legend = [t for t in fig.data if t.showlegend]
    _colours_told_apart(legend, lambda t: t.line.color)
    assert len(fig.data) == 3 * len(legend) == 18
    colour = {t.name: t.line.color for t in legend}
    assert all(t.line.color == colour[t.name] for t in fig.data)
    # the grey line is the sum of the cells it groups
    other = [t for t in fig.data if t.name == "other pairs"][0]
    kept = [CELLS.index(t.name) for t in legend if t.name != "other pairs"]
    rest = [c for c in range(len(CELLS)) if c not in kept]
    assert torch.allclose(torch.tensor(other.y, dtype=shares[0].dtype), shares[0][:, rest].sum(dim=1))


def test_the_auc_axis_holds_every_point():
    from lib.chapters.ch8_figures import prediction_figure

    epochs = torch.tensor([0, 50, 100])
    irreps = EarlyPrediction(epochs, torch.tensor([0.55, 0.72, 1.0], dtype=torch.float64),
                             torch.tensor([0.6, 0.82, 0.9], dtype=torch.float64), (5, 1))
    accuracies = EarlyPrediction(epochs, torch.tensor([0.48, 0.52, 0.8], dtype=torch.float64),
                                 torch.tensor([0.52, 0.27, float("nan")], dtype=torch.float64), (5, 1))
    fig = prediction_figure(irreps, accuracies)
    low, high = fig.layout.yaxis.range
    points = [y for t in fig.data for y in t.y if not math.isnan(y)]
    assert low < min(points) == 0.27 and high > max(points) == 1.0 and low < 0.5 < high


def test_a_coset_row_with_nothing_to_draw_says_what_it_holds():
    from lib.chapters.ch8_figures import coset_figure

    fig = coset_figure(["S4 grokkers", "random init", "S4 alone"], [0.999, 0.0, 0.93], [0.085, 0.0, 0.3])
    labels = {a.y: a.text for a in fig.layout.annotations}
    assert list(labels) == ["random init"] and labels["random init"].startswith("0")
    assert len(fig.layout.xaxis.title.text) <= 36   # fits a phone's width
