"""Chapter 4's parameter validation, experiment runs and figures (small and fast)."""

from pathlib import Path

import pytest
import torch

from lib.grokking.pairs import make_pair
from lib.book.params import read_parameters_cell, validate_parameters
from lib.chapters.ch4 import (
    PUBLISHED_COUNTS, Chapter4Parameters, experiments_table, pair_keys, published_for, representative_instances,
    run_experiment,
)
from lib.chapters.ch4_results import pair_outcome
from lib.chapters.ch4_figures import (
    cayley_tables_figure, class_balance_figure, final_accuracy_scatter, outcome_fractions_figure,
    training_curves_figure,
)
from lib.grokking.sweeps import class_balance
from lib.book.params import ParameterError

DEFAULTS = {**read_parameters_cell(Path(__file__).parents[1] / "notebooks" / "04_ambiguous_grokking.py"),
            "device": "cpu", "results_dir": "/tmp/results"}


def test_defaults_build_the_experiments():
    config = validate_parameters(Chapter4Parameters, DEFAULTS)
    assert list(config.experiments) == ["z48", "s4", "s4_no_bias", "s4_second_decay", "s5", "z35_lr0.002",
                                        "z35_lr0.05", "z35_book", "z100", "subsample_s5", "subsample_s4"]
    assert pair_keys(config.experiments) == list(config.experiments)[:-2]
    second = config.experiments["s4_second_decay"]
    assert second.training.weight_decay == 2e-4 and second.n_instances == config.experiments["s4"].n_instances
    assert second.training.checkpoint_epochs == ()
    # The other pairs as the authors' code trained them: one map on summed embeddings, no bias,
    # beta2 0.999, threshold 0.95; Z48 for 20,000 epochs, Z35 at d = h = 128 for 5,000 epochs.
    z48, z35 = config.experiments["z48"], config.experiments["z35_lr0.05"]
    assert z48.model.tied_linear and not z48.model.unembed_bias and z48.model.hidden_dim == 64
    assert (z48.training.epochs, z48.training.beta2, z48.training.weight_decay, z48.grok_threshold) == (
        20_000, 0.999, 2e-4, 0.95)
    assert z35.pair_name == "Z35x|6Z2_vs_Z35x|34Z2" and z35.model.n_elements == 70
    assert z35.model.tied_linear and (z35.model.embed_dim, z35.model.hidden_dim) == (128, 128)
    assert (z35.training.epochs, z35.training.lr, z35.training.beta2, z35.training.weight_decay) == (
        5000, 0.05, 0.999, 1e-4)
    book = config.experiments["z35_book"]
    assert not book.model.tied_linear and book.grok_threshold is None and book.training.epochs == 2000
    s4 = config.experiments["s4"]
    assert s4.n_instances == 1000 and s4.model.embed_dim == 32 and s4.training.epochs == 2000
    assert s4.model.unembed_bias and second.model.unembed_bias and config.experiments["s5"].model.unembed_bias
    no_bias = config.experiments["s4_no_bias"]
    assert not no_bias.model.unembed_bias and no_bias.training.weight_decay == s4.training.weight_decay
    assert no_bias.training.checkpoint_epochs == (0, 500, 1000, 1500, 2000)
    assert s4.training.checkpoint_epochs == ()
    assert not config.experiments["z48"].model.unembed_bias
    assert config.experiments["s5"].model.hidden_dim == 128
    assert config.experiments["subsample_s5"].train_fraction == 0.6
    smoke = validate_parameters(Chapter4Parameters, {**DEFAULTS, "smoke": True})
    assert all(e.training.epochs <= 60 for e in smoke.experiments.values())
    assert smoke.experiments["s4"].n_instances <= 16
    overview = experiments_table(config.experiments).splitlines()
    assert len(overview) == 2 + len(config.experiments)
    cells = {line.split(" | ")[0].strip("| "): line.strip("| ").split(" | ") for line in overview[2:]}
    assert cells["s4"][1:] == ["S4_vs_A4xZ2", "1,000", "32", "32", "two maps", "yes", "2e-5", "2,000", "0.01",
                               "0.98", "100%", "chapter's"]
    assert cells["s4_no_bias"][6] == "no"
    assert cells["subsample_s4"][2] == "200" and cells["subsample_s4"][11] == "60%"
    assert cells["z48"][5:7] == ["one map on summed embeddings", "no"] and cells["z48"][10] == "0.999"


@pytest.mark.parametrize("name, value", [
    ("s4_instances", 0), ("epochs", 1.5), ("grok_threshold", 1.2), ("device", "tpu"),
    ("subsample_pairs", ["Z100_vs_Z50xZ2"]), ("subsample_instances", [1]), ("smoke", "no"),
    ("subsample_fraction", 0.0), ("s5_weight_decay", -1.0),
])
def test_bad_parameters_raise_one_sentence_naming_them(name, value):
    with pytest.raises(ParameterError) as info:
        validate_parameters(Chapter4Parameters, {**DEFAULTS, name: value})
    assert f"`{name}`" in str(info.value) or name == "device"


def test_a_smoke_experiment_and_its_figures():
    config = validate_parameters(Chapter4Parameters, {**DEFAULTS, "smoke": True, "epochs": 30})
    run = run_experiment(config.experiments["s4"], config, progress=False)
    assert run.summary["n_instances"] == 16 and run.summary["intersection_size"] == 336
    outcome = pair_outcome(run)
    assert (outcome.name, outcome.unembed_bias, outcome.n_instances) == ("S4_vs_A4xZ2", True, 16)
    assert outcome.published_counts == (603, 43) and outcome.published_n_instances == 10_000
    assert outcome.unembed_bias and outcome.weight_decay == 2e-5 and outcome.grok_threshold == 0.999
    # The outcome object reads the same numbers as the summary written to the results JSON.
    for key in ("grokked_g1", "grokked_g2", "memorized", "failed"):
        share = getattr(outcome, key)
        assert share.count == run.summary[f"count_{key}"]
        assert [share.low, share.high] == run.summary[f"ci_{key}"]
    assert (outcome.grokked_g1.fraction, outcome.grokked_g2.fraction, outcome.fraction_neither) == (
        run.summary["fraction_g1"], run.summary["fraction_g2"], run.summary["fraction_neither"])
    typical = representative_instances(run)
    assert set(typical) <= {"grokked_g1", "grokked_g2", "memorized", "failed"} and typical
    figures = [
        cayley_tables_figure(make_pair("S4_vs_A4xZ2")),
        final_accuracy_scatter(run.result, run.codes, "S4", "A4xZ2"),
        outcome_fractions_figure([run.summary], {"s4": {"fraction_g1": PUBLISHED_COUNTS["s4"].fraction_g1}}),
        training_curves_figure(run.result, {f"instance {i}": i for i in typical.values()}, "S4", "A4xZ2"),
        class_balance_figure(class_balance(make_pair("Z100_vs_Z50xZ2")), "Z100_vs_Z50xZ2"),
    ]
    assert len(figures[0].data) == 3
    assert sum(len(t.x) for t in figures[1].data) == 16
    assert len(figures[3].data) == 4 * len(typical)
    for fig in figures:
        assert fig.layout.title.text
    assert torch.equal(run.result.seeds, torch.arange(16))


def test_published_numbers_are_compared_only_with_the_same_decay_and_bias():
    config = validate_parameters(Chapter4Parameters, DEFAULTS)
    assert published_for(config.experiments["s4"]).fraction_g1 == 603 / 10_000
    second = published_for(config.experiments["s4_second_decay"])
    assert second.fraction_g2 == 42 / 10_000 and second.grok_threshold == 0.95
    other = validate_parameters(Chapter4Parameters, {**DEFAULTS, "s4_weight_decay": 1e-3})
    assert published_for(other.experiments["s4"]) is None
    assert published_for(config.experiments["s4_no_bias"]) is None  # the published runs had the bias
    assert published_for(config.experiments["z35_lr0.05"]) is None  # a note, no counts
