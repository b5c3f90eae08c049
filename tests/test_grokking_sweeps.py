"""Pair sweeps: training sets, summaries recomputed by hand, and a save/load round trip."""

import collections

import pytest
import torch

from lib.book.statistics import wilson_interval
from lib.grokking.groups import cyclic, direct_product
from lib.grokking.mlp import MLPConfig, all_pairs_logits, init_instances
from lib.grokking.outcomes import (
    FAILED, GROKKED_G1, GROKKED_G2, MEMORIZED, classify_outcomes,
)
from lib.grokking.pairs import GroupPair, make_pair
from lib.grokking.sweeps import (
    class_balance, intersection_training_set, load_sweep, pair_evaluations, run_group_sweep,
    run_pair_sweep, save_sweep, sweep_outcomes, sweep_summary,
)
from lib.grokking.training import SweepConfig, SweepResult

PAIR = make_pair("S4_vs_A4xZ2")
# Z4 and Z2 x Z2 on the labels x = h + 2k agree except where both h are odd: 12 of 16 pairs.
SMALL = GroupPair("Z4_vs_Z2xZ2", cyclic(4), direct_product(cyclic(2), cyclic(2)))


def test_the_training_set_is_the_intersection_in_row_major_order():
    left, right, labels = intersection_training_set(PAIR)
    expected = [(a, b) for a in range(24) for b in range(24) if PAIR.g1.table[a, b] == PAIR.g2.table[a, b]]
    assert list(zip(left.tolist(), right.tolist())) == expected and len(expected) == 336
    assert torch.equal(labels, PAIR.g1.table[left, right]) and torch.equal(labels, PAIR.g2.table[left, right])


def test_a_subsampled_training_set_is_a_seeded_subset():
    left, right, _ = intersection_training_set(PAIR)
    sub_left, sub_right, sub_labels = intersection_training_set(PAIR, 0.6, torch.Generator().manual_seed(1))
    assert sub_left.numel() == round(0.6 * 336)
    flat, sub_flat = (left * 24 + right).tolist(), (sub_left * 24 + sub_right).tolist()
    assert set(sub_flat) < set(flat) and sub_flat == sorted(sub_flat)
    assert torch.equal(sub_labels, PAIR.g1.table[sub_left, sub_right])
    again = intersection_training_set(PAIR, 0.6, torch.Generator().manual_seed(1))
    other = intersection_training_set(PAIR, 0.6, torch.Generator().manual_seed(2))
    assert torch.equal(again[0], sub_left) and torch.equal(again[1], sub_right)
    assert not (torch.equal(other[0], sub_left) and torch.equal(other[1], sub_right))
    with pytest.raises(ValueError, match="Generator"):
        intersection_training_set(PAIR, 0.6)


def test_pair_evaluations_score_against_each_table_and_the_intersection():
    g1, g2, both = pair_evaluations(PAIR)
    assert (g1.name, g2.name, both.name) == ("g1", "g2", "intersection")
    assert torch.equal(g1.labels, PAIR.g1.table) and g1.mask is None
    assert torch.equal(g2.labels, PAIR.g2.table) and g2.mask is None
    assert torch.equal(both.mask, PAIR.mask) and torch.equal(both.labels[PAIR.mask], PAIR.g2.table[PAIR.mask])


@pytest.mark.parametrize("pair", [SMALL, PAIR], ids=["Z4_vs_Z2xZ2", "S4_vs_A4xZ2"])
def test_class_balance_against_a_direct_count(pair):
    n = pair.n_elements
    counts = class_balance(pair)
    on_intersection = collections.Counter(int(pair.g1.table[a, b]) for a in range(n) for b in range(n)
                                          if pair.mask[a, b])
    assert counts["intersection"].tolist() == [on_intersection[x] for x in range(n)]
    assert torch.equal(counts["g1_full"], torch.full((n,), n)) and torch.equal(counts["g2_full"], torch.full((n,), n))


def test_class_balance_of_the_small_pair_by_hand():
    # Agreeing pairs have an even left or right element; products 0 and 2 lose (1, 3), (3, 1)
    # and (1, 1), (3, 3) respectively.
    assert class_balance(SMALL)["intersection"].tolist() == [2, 4, 2, 4]


def hand_made_sweep() -> SweepResult:
    """Eight instances whose final accuracies give each outcome; two logged epochs."""
    final_g1 = torch.tensor([1.0, 0.6, 0.62, 0.3, 1.0, 0.9995, 0.5, 1.0])
    final_g2 = torch.tensor([0.6, 1.0, 0.61, 0.3, 0.58, 0.6, 0.999, 1.0])
    final_train = torch.tensor([1.0, 1.0, 1.0, 0.8, 1.0, 1.0, 1.0, 1.0])
    final_intersection = torch.tensor([1.0, 1.0, 0.999, 0.7, 1.0, 1.0, 0.998, 1.0])
    start = torch.full((8,), 0.1)
    metrics = {name: torch.stack([start, final]) for name, final in
               [("acc_g1", final_g1), ("acc_g2", final_g2), ("train_acc", final_train),
                ("acc_intersection", final_intersection), ("train_loss", 1 - final_train)]}
    return SweepResult(
        seeds=torch.arange(8), model_config=MLPConfig(4, 6, 10),
        training_config=SweepConfig(epochs=40, log_every=40, weight_decay=1e-4),
        train_left=torch.tensor([0, 0, 2]), train_right=torch.tensor([0, 1, 2]),
        train_labels=torch.tensor([0, 1, 0]), log_epochs=torch.tensor([0, 40]), metrics=metrics,
        checkpoints={}, final_params={}, elapsed_s=2.0,
        info={"pair": "Z4_vs_Z2xZ2", "g1": "Z4", "g2": "Z2xZ2", "n_elements": 4, "intersection_size": 12,
              "train_fraction": 0.25})


def test_sweep_outcomes_classify_the_last_logged_epoch():
    result = hand_made_sweep()
    codes = sweep_outcomes(result)
    assert codes.tolist() == [GROKKED_G1, GROKKED_G2, MEMORIZED, FAILED, GROKKED_G1, GROKKED_G1,
                              GROKKED_G2, GROKKED_G1]
    assert torch.equal(codes, classify_outcomes(result.metrics["acc_g1"][1], result.metrics["acc_g2"][1],
                                                result.metrics["train_acc"][1]))
    assert sweep_outcomes(result, grok_threshold=0.9999).tolist()[5:7] == [MEMORIZED, MEMORIZED]
    assert sweep_outcomes(result, fit_threshold=0.75).tolist()[3] == MEMORIZED


def test_sweep_summary_agrees_with_a_count_by_hand():
    result = hand_made_sweep()
    summary = sweep_summary(result, sweep_outcomes(result))
    counts = {"grokked_g1": 4, "grokked_g2": 2, "memorized": 1, "failed": 1}
    for name, count in counts.items():
        assert summary[f"count_{name}"] == count
        assert summary[f"ci_{name}"] == pytest.approx(list(wilson_interval(count, 8)))
    assert (summary["fraction_g1"], summary["fraction_g2"], summary["fraction_neither"]) == (0.5, 0.25, 0.25)
    # Intersection accuracy >= 0.999 (the threshold itself included) for six of eight; the lowest is 0.7.
    assert summary["fraction_intersection_grokked"] == 0.75
    assert summary["min_acc_intersection"] == pytest.approx(0.7)
    assert summary["mean_acc_intersection"] == pytest.approx((5 + 0.999 + 0.7 + 0.998) / 8, rel=1e-6)
    assert {k: summary[k] for k in ("name", "g1", "g2", "n_elements", "intersection_size", "train_fraction",
                                    "n_train_pairs", "n_instances", "epochs", "embed_dim", "hidden_dim",
                                    "weight_decay")} == {
        "name": "Z4_vs_Z2xZ2", "g1": "Z4", "g2": "Z2xZ2", "n_elements": 4, "intersection_size": 12,
        "train_fraction": 0.25, "n_train_pairs": 3, "n_instances": 8, "epochs": 40, "embed_dim": 6,
        "hidden_dim": 10, "weight_decay": 1e-4}
    assert summary["seconds"] == 2.0 and summary["model_epochs_per_second"] == 8 * 40 / 2.0
    # The summary is the results JSON: plain numbers only.
    assert all(isinstance(v, (str, int, float, list)) for v in summary.values())


def test_sweep_summary_of_a_sweep_where_no_instance_grokked():
    result = hand_made_sweep()
    codes = torch.full((8,), MEMORIZED)
    summary = sweep_summary(result, codes)
    assert summary["fraction_g1"] == summary["fraction_g2"] == 0 and summary["fraction_neither"] == 1
    assert summary["ci_grokked_g1"][0] == 0 and summary["ci_grokked_g1"][1] == pytest.approx(wilson_interval(0, 8)[1])


@pytest.fixture(scope="module")
def tiny_sweep():
    config = SweepConfig(epochs=30, log_every=10, checkpoint_epochs=(0, 30))
    return run_pair_sweep(PAIR, [4, 5, 6], MLPConfig(24, 8, 8), config, progress=False)


def test_a_sweep_trains_on_the_intersection_and_scores_against_each_group(tiny_sweep):
    result = tiny_sweep
    left, right, labels = intersection_training_set(PAIR)
    assert torch.equal(result.train_left, left) and torch.equal(result.train_right, right)
    assert torch.equal(result.train_labels, labels)
    assert result.seeds.tolist() == [4, 5, 6] and result.log_epochs.tolist() == [0, 10, 20, 30]
    assert result.info == {"pair": "S4_vs_A4xZ2", "g1": "S4", "g2": "A4xZ2", "n_elements": 24,
                           "intersection_size": 336, "train_fraction": 1.0}
    for name, value in init_instances([4, 5, 6], result.model_config).items():
        assert torch.equal(result.checkpoints[0][name], value)
    # Final accuracies are those of the final parameters, against G1 and G2 respectively.
    predictions = all_pairs_logits(result.final_params).argmax(dim=-1).view(3, 24, 24)
    for table, metric in ((PAIR.g1.table, "acc_g1"), (PAIR.g2.table, "acc_g2")):
        direct = (predictions == table).double().mean(dim=(1, 2))
        assert result.final(metric).double() == pytest.approx(direct.tolist(), abs=1e-6)
    on_mask = (predictions == PAIR.g1.table)[:, PAIR.mask].double().mean(dim=1)
    assert result.final("acc_intersection").double() == pytest.approx(on_mask.tolist(), abs=1e-6)
    assert not torch.equal(result.final("acc_g1"), result.final("acc_g2")), "the two groups were told apart"


def test_a_saved_sweep_loads_back_equal(tiny_sweep, tmp_path):
    result = tiny_sweep
    codes = sweep_outcomes(result)
    path = save_sweep(result, tmp_path / "sweep.pt")
    loaded = load_sweep(path)
    assert loaded.training_config == result.training_config and loaded.model_config == result.model_config
    assert loaded.info == result.info and loaded.elapsed_s == result.elapsed_s
    for name in ("seeds", "train_left", "train_right", "train_labels", "log_epochs"):
        assert torch.equal(getattr(loaded, name), getattr(result, name)), name
    assert set(loaded.metrics) == set(result.metrics)
    for name in result.metrics:
        assert torch.equal(loaded.metrics[name], result.metrics[name])
    assert set(loaded.checkpoints) == {0, 30}
    for name in result.final_params:
        assert torch.equal(loaded.final_params[name], result.final_params[name])
        assert torch.equal(loaded.checkpoints[0][name], result.checkpoints[0][name])
        assert torch.equal(loaded.checkpoints[30][name], result.final_params[name])
    assert torch.equal(sweep_outcomes(loaded), codes)
    assert sweep_summary(loaded, codes) == sweep_summary(result, codes)
    without = load_sweep(save_sweep(result, tmp_path / "light.pt", include_checkpoints=False))
    assert without.checkpoints == {} and torch.equal(without.final_params["unembed"], result.final_params["unembed"])


def test_a_hand_made_sweep_loads_back_with_its_description_and_outcomes(tmp_path):
    result = hand_made_sweep()
    loaded = load_sweep(save_sweep(result, tmp_path / "hand.pt"))
    assert loaded.info == result.info and loaded.info["train_fraction"] == 0.25
    assert loaded.training_config == result.training_config and loaded.model_config == result.model_config
    assert torch.equal(sweep_outcomes(loaded), sweep_outcomes(result))
    assert sweep_summary(loaded, sweep_outcomes(loaded)) == sweep_summary(result, sweep_outcomes(result))


def test_load_refuses_a_file_that_is_not_a_sweep(tmp_path):
    torch.save({"seeds": torch.arange(3)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a sweep"):
        load_sweep(tmp_path / "other.pt")


def test_a_subsampled_sweep_trains_on_the_drawn_subset():
    config = SweepConfig(epochs=2, log_every=1)
    result = run_pair_sweep(PAIR, [0, 1], MLPConfig(24, 4, 4), config, train_fraction=0.25,
                            generator=torch.Generator().manual_seed(7), progress=False)
    left, right, labels = intersection_training_set(PAIR, 0.25, torch.Generator().manual_seed(7))
    assert torch.equal(result.train_left, left) and torch.equal(result.train_right, right)
    assert torch.equal(result.train_labels, labels)
    summary = sweep_summary(result, sweep_outcomes(result))
    assert summary["n_train_pairs"] == 84 == round(0.25 * 336) and summary["train_fraction"] == 0.25
    assert summary["intersection_size"] == 336
    with pytest.raises(ValueError, match="Generator"):
        run_pair_sweep(PAIR, [0], MLPConfig(24, 4, 4), config, train_fraction=0.25, progress=False)


def test_a_model_of_the_wrong_order_is_refused():
    with pytest.raises(ValueError, match="n_elements is 25 but S4_vs_A4xZ2 has 24"):
        run_pair_sweep(PAIR, [0], MLPConfig(25, 8, 8), SweepConfig(epochs=1), progress=False)



def test_a_group_sweep_trains_every_seed_on_one_random_part_of_the_table():
    group = cyclic(5)
    config = SweepConfig(epochs=20, log_every=10, checkpoint_epochs=(0, 20))
    result = run_group_sweep(group, [3, 4], MLPConfig(5, 4, 4), config, train_fraction=0.6,
                             generator=torch.Generator().manual_seed(0), progress=False)
    assert result.train_left.numel() == 15  # round(0.6 * 25) pairs, shared by both seeds
    assert torch.equal(result.train_labels, group.table[result.train_left, result.train_right])
    assert set(result.metrics) >= {"train_acc", "train_loss", "acc_test"}
    assert result.metrics["acc_test"].shape == (3, 2) and sorted(result.checkpoints) == [0, 20]
    again = run_group_sweep(group, [3, 4], MLPConfig(5, 4, 4), config, train_fraction=0.6,
                            generator=torch.Generator().manual_seed(0), progress=False)
    assert torch.equal(again.final_params["unembed"], result.final_params["unembed"])
    with pytest.raises(ValueError, match="n_elements"):
        run_group_sweep(group, [0], MLPConfig(6, 4, 4), config, train_fraction=0.5,
                        generator=torch.Generator(), progress=False)
