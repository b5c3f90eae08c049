"""Perturb-and-recover study of chapter 1: what is damaged, what is recorded, and that retraining repairs."""

import copy

import pytest
import torch

from lib.bfs.graphs import bfs_distance_batch
from lib.bfs.transformer import bfs_transformer
from lib.bfs.perturbation import (
    GraphSet, RecoverySettings, mse, perturb_and_recover, perturb_weights, perturbation_study,
    recover,
)

# Tiny models: one thread is faster than two that wait for each other.
pytestmark = pytest.mark.usefixtures("one_thread")

SETTINGS = RecoverySettings(steps=20, batch_size=16, learning_rate=1e-3, n_eval_graphs=64,
                            n_train_graphs=64, n_curve_points=4)


@pytest.fixture(scope="module")
def graphs():
    generator = torch.Generator().manual_seed(2)
    return GraphSet.sample(64, 4, generator), GraphSet.sample(64, 4, generator)


def changed_slices(before, after):
    return [(name, index) for name in ("query", "key", "value", "output")
            for index in torch.nonzero((getattr(before, name) != getattr(after, name)).flatten(2).any(-1)).tolist()]


def test_graph_sets_carry_bfs_distances():
    graphs = GraphSet.sample(30, 5, torch.Generator().manual_seed(0), sampler="tree")
    assert torch.equal(graphs.distance, bfs_distance_batch(graphs.adjacency))
    assert graphs.distance.max() < 5, "trees are connected"


def test_replace_hits_the_one_head_matrix_it_names_with_scaled_noise():
    intact = bfs_transformer(5)
    damaged = {}
    for scale in (1.0, 3.0):
        damaged[scale] = bfs_transformer(5)
        hit = perturb_weights(damaged[scale], "replace", scale, torch.Generator().manual_seed(0))
        changed = changed_slices(intact, damaged[scale])
        assert len(changed) == 1
        name, (layer, head) = changed[0]
        assert hit == {"matrix": name, "layer": layer, "head": head, "answer_head": head == 5}
    # The same seed draws the same matrix and the same noise; the scale multiplies it.
    block = {s: getattr(damaged[s], name)[layer, head].detach() for s in damaged}
    torch.testing.assert_close(block[3.0], 3 * block[1.0])
    assert abs(float(block[1.0].std()) - 1) < 0.35, "standard normal entries"


def test_replace_chooses_among_query_key_and_value_of_every_layer_and_head():
    intact = bfs_transformer(3)
    hits = set()
    for seed in range(200):
        model = bfs_transformer(3)
        perturb_weights(model, "replace", 1.0, torch.Generator().manual_seed(seed))
        ((name, (layer, head)),) = changed_slices(intact, model)
        hits.add((name, layer, head))
    assert {name for name, _, _ in hits} == {"query", "key", "value"}
    assert {(layer, head) for _, layer, head in hits} == {(l, h) for l in range(3) for h in range(4)}


def test_gaussian_noise_has_the_requested_relative_norm():
    intact, model = bfs_transformer(5), bfs_transformer(5)
    hit = perturb_weights(model, "gaussian", 0.1, torch.Generator().manual_seed(1))
    assert hit == {"matrix": "all", "layer": None, "head": None, "answer_head": False}
    for before, after in zip(intact.parameters(), model.parameters()):
        assert torch.isclose((after - before).norm(), 0.1 * before.norm(), rtol=1e-4)


def test_unknown_mode_and_optimizer_are_refused(graphs):
    with pytest.raises(ValueError, match="Unknown perturbation mode 'shuffle'"):
        perturb_weights(bfs_transformer(4), "shuffle", 1.0, torch.Generator())
    with pytest.raises(ValueError, match="Unknown optimizer 'lbfgs'"):
        recover(bfs_transformer(4), *graphs, RecoverySettings(optimizer="lbfgs"), torch.Generator())


def test_mse_of_the_exact_model_against_shifted_labels_is_one(graphs):
    _, held_out = graphs
    model = bfs_transformer(4)
    assert mse(model, held_out) < 1e-6
    assert mse(model, GraphSet(held_out.adjacency, held_out.distance + 1)) == pytest.approx(1.0, abs=1e-4)


def test_a_run_records_the_damage_and_retraining_repairs_it(graphs):
    train, held_out = graphs
    intact = bfs_transformer(4)
    pristine = copy.deepcopy(intact)
    record = perturb_and_recover(intact, "gaussian", 0.05, train, held_out, SETTINGS, seed=0)
    # The damage is the one perturb_weights does with the run's seed.
    damaged = copy.deepcopy(intact)
    hit = perturb_weights(damaged, "gaussian", 0.05, torch.Generator().manual_seed(0))
    assert record["mode"] == "gaussian" and record["scale"] == 0.05 and record["hit"] == hit
    assert record["loss_intact"] == mse(intact, held_out) < 1e-6
    assert record["loss_before"] == pytest.approx(mse(damaged, held_out), rel=1e-6)
    assert [step for step, _ in record["curve"]] == [0, 5, 10, 15, 20]
    assert record["curve"][0][1] == record["loss_before"] and record["curve"][-1][1] == record["loss_after"]
    assert record["loss_after"] < record["loss_before"] / 3
    # The intact model is not touched by the study.
    for before, after in zip(pristine.parameters(), intact.parameters()):
        assert torch.equal(before, after)


def test_runs_are_deterministic_for_a_seed(graphs):
    train, held_out = graphs
    model = bfs_transformer(4)
    short = RecoverySettings(steps=2, batch_size=8, learning_rate=1e-3, n_curve_points=2)
    first = perturb_and_recover(model, "replace", 1.0, train, held_out, short, seed=7)
    assert first == perturb_and_recover(model, "replace", 1.0, train, held_out, short, seed=7)
    assert first != perturb_and_recover(model, "replace", 1.0, train, held_out, short, seed=8)


def test_the_record_reports_the_last_loss_even_when_retraining_made_it_worse(graphs):
    train, held_out = graphs
    too_large = RecoverySettings(steps=1, batch_size=8, learning_rate=1.0, n_curve_points=1)
    record = perturb_and_recover(bfs_transformer(4), "gaussian", 0.05, train, held_out, too_large, seed=0)
    assert record["loss_after"] == record["curve"][-1][1] > 2 * record["loss_before"]


def test_a_zero_learning_rate_changes_nothing(graphs):
    train, held_out = graphs
    model = bfs_transformer(4)
    perturb_weights(model, "gaussian", 0.1, torch.Generator().manual_seed(3))
    before = copy.deepcopy(model)
    curve = recover(model, train, held_out, RecoverySettings(steps=3, batch_size=8, learning_rate=0.0,
                                                              n_curve_points=3), torch.Generator())
    assert [step for step, _ in curve] == [0, 1, 2, 3]
    assert len({loss for _, loss in curve}) == 1 and curve[0][1] == mse(before, held_out)
    for a, b in zip(before.parameters(), model.parameters()):
        assert torch.equal(a, b)


def test_one_retraining_step_is_one_clipped_sgd_step_on_the_mse(graphs):
    # With one training graph every batch is that graph, so the step can be computed by hand.
    _, held_out = graphs
    single = GraphSet(held_out.adjacency[:1], held_out.distance[:1])
    model = bfs_transformer(4)
    perturb_weights(model, "gaussian", 0.05, torch.Generator().manual_seed(4))
    expected = copy.deepcopy(model)
    loss = torch.nn.functional.mse_loss(expected(single.adjacency), single.distance)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(expected.parameters(), max_norm=10.0)
    settings = RecoverySettings(steps=1, batch_size=4, learning_rate=1e-3, n_curve_points=1)
    curve = recover(model, single, held_out, settings, torch.Generator())
    for after, before in zip(model.parameters(), expected.parameters()):
        torch.testing.assert_close(after.detach(), (before - 1e-3 * before.grad).detach())
    assert curve[-1] == (1, mse(model, held_out))


def test_a_study_runs_every_mode_at_every_scale():
    settings = RecoverySettings(steps=1, batch_size=4, n_eval_graphs=8, n_train_graphs=8, n_curve_points=1)
    records = perturbation_study(bfs_transformer(3), ["replace", "gaussian"], [0.1, 1.0], settings, seed=0,
                                 progress=False)
    assert [(r["mode"], r["scale"]) for r in records] == [("replace", 0.1), ("replace", 1.0),
                                                         ("gaussian", 0.1), ("gaussian", 1.0)]
    for r in records:
        assert [step for step, _ in r["curve"]] == [0, 1]
        assert (r["loss_before"], r["loss_after"]) == (r["curve"][0][1], r["curve"][-1][1])
        assert (r["hit"]["matrix"] == "all") == (r["mode"] == "gaussian")
    # Two worker processes on one thread each give every record as one thread here does.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        here = perturbation_study(bfs_transformer(3), ["replace", "gaussian"], [0.1, 1.0], settings, seed=0,
                                  progress=False)
    finally:
        torch.set_num_threads(threads)
    forked = perturbation_study(bfs_transformer(3), ["replace", "gaussian"], [0.1, 1.0], settings, seed=0,
                                progress=False, workers=2)
    assert forked == here
