"""Pair sweeps: training sets, summaries, and a save/load round trip."""

import pytest
import torch

from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import (
    class_balance, intersection_training_set, load_sweep, pair_evaluations, run_pair_sweep,
    save_sweep, sweep_outcomes, sweep_summary,
)
from lib.grokking.training import SweepConfig
from lib.grokking.mlp import MLPConfig

PAIR = make_pair("S4_vs_A4xZ2")


def test_training_sets():
    left, right, labels = intersection_training_set(PAIR)
    assert left.numel() == 336
    assert torch.equal(labels, PAIR.g2.table[left, right])
    sub = intersection_training_set(PAIR, 0.6, torch.Generator().manual_seed(1))
    assert sub[0].numel() == round(0.6 * 336)
    with pytest.raises(ValueError, match="Generator"):
        intersection_training_set(PAIR, 0.6)
    assert [e.name for e in pair_evaluations(PAIR)] == ["g1", "g2", "intersection"]


def test_class_balance_of_the_z100_pair():
    counts = class_balance(make_pair("Z100_vs_Z50xZ2"))
    assert int(counts["intersection"].sum()) == 5100
    assert torch.equal(counts["g1_full"], torch.full((100,), 100))
    assert int(counts["intersection"].max()) == 100 and int(counts["intersection"].min()) == 2


def test_sweep_summary_and_round_trip(tmp_path):
    config = SweepConfig(epochs=30, log_every=10, checkpoint_epochs=(0, 30))
    result = run_pair_sweep(PAIR, [4, 5, 6], MLPConfig(24, 8, 8), config, progress=False)
    codes = sweep_outcomes(result)
    summary = sweep_summary(result, codes)
    for key in ["name", "n_elements", "intersection_size", "n_instances", "epochs",
                "fraction_g1", "fraction_g2", "fraction_neither"]:
        assert key in summary
    assert summary["intersection_size"] == 336 and summary["n_instances"] == 3
    assert summary["fraction_g1"] + summary["fraction_g2"] + summary["fraction_neither"] == pytest.approx(1)
    path = save_sweep(result, tmp_path / "sweep.pt")
    loaded = load_sweep(path)
    assert loaded.training_config == config and loaded.model_config == result.model_config
    assert torch.equal(loaded.seeds, result.seeds)
    for name in result.metrics:
        assert torch.equal(loaded.metrics[name], result.metrics[name])
    for name in result.final_params:
        assert torch.equal(loaded.final_params[name], result.final_params[name])
        assert torch.equal(loaded.checkpoints[30][name], result.final_params[name])
    assert loaded.info["pair"] == "S4_vs_A4xZ2"
    with pytest.raises(ValueError, match="n_elements"):
        run_pair_sweep(PAIR, [0], MLPConfig(25, 8, 8), config, progress=False)
