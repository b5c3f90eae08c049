"""The irrep readout against known answers: models confined to one component read 100% there,
random initializations read each component's share of the dimensions, the logit similarity finds
the component of a logit pattern, restriction and exclusion behave at their extremes, and a
network trained on one group alone uses a faithful set of that group's irreps (chapter 8)."""

import dataclasses
import math

import pytest
import torch

from lib.book.seed_streams import stream_seeds
from lib.grokking.characters import character_table, isotypic_projectors, trace_tensors
from lib.grokking.irrep_readout import (
    all_logits, irrep_profile, joint_cells, key_components, logit_similarity, neuron_cells, overlap_dimensions,
    project_embeddings, restriction_losses, similarity_to_traces, table_loss, total_embeddings,
)
from lib.grokking.mlp import MLPConfig, init_instances, instance_loss
from lib.grokking.pairs import make_pair
from lib.grokking.study import S4_MODEL_NO_BIAS, S4_SCHEDULE
from lib.grokking.sweeps import run_group_sweep

PAIR = make_pair("S4_vs_A4xZ2")
GROUPS = {"S4": PAIR.g1, "A4xZ2": PAIR.g2}
TABLES = {name: character_table(group) for name, group in GROUPS.items()}
PROJECTORS = {name: isotypic_projectors(table) for name, table in TABLES.items()}


@pytest.mark.parametrize("name", GROUPS)
def test_a_model_confined_to_one_component_reads_100_percent_in_it(name):
    params = init_instances(range(3), MLPConfig(24, 16, 16, unembed_bias=True))
    for k, projector in enumerate(PROJECTORS[name]):
        confined = project_embeddings(params, projector.float(), unembed=True)
        profile = irrep_profile(confined, PROJECTORS[name])
        for shares in (profile.left, profile.right, profile.unembed, profile.embedding):
            assert torch.allclose(shares[:, k], torch.ones(3, dtype=torch.float64), atol=1e-5)


@pytest.mark.parametrize("name", GROUPS)
def test_random_initializations_read_each_components_share_of_the_dimensions(name):
    params = init_instances(range(400), S4_MODEL_NO_BIAS)
    profile = irrep_profile(params, PROJECTORS[name])
    expected = torch.tensor(TABLES[name].component_dimensions, dtype=torch.float64) / 24
    assert torch.allclose(profile.embedding.mean(dim=0), expected, atol=0.01)
    assert torch.allclose(profile.unembed.mean(dim=0), expected, atol=0.01)
    assert torch.allclose(profile.left.sum(dim=1), torch.ones(400, dtype=torch.float64))


@pytest.mark.parametrize("name", GROUPS)
def test_logit_similarity_finds_the_component_of_a_logit_pattern(name):
    traces = trace_tensors(TABLES[name])
    for k in range(1, traces.shape[0]):
        logits = (3.0 * traces[k] + 7.0).reshape(1, 24 * 24, 24)
        similarity = similarity_to_traces(logits, traces)[0]
        assert similarity[k] == pytest.approx(1.0)
        others = torch.cat([similarity[:k], similarity[k + 1:]])
        assert float(others.abs().max()) < 1e-9
    assert key_components(torch.tensor([[0.9, 0.06, 0.04]])).tolist() == [[False, True, False]]


def test_total_embeddings_and_table_loss_agree_with_the_model():
    params = init_instances(range(2), MLPConfig(24, 8, 12, unembed_bias=True))
    left, right = total_embeddings(params)
    assert torch.allclose(left.float(), params["embed_left"] @ params["linear_left"], atol=1e-5)
    everything = torch.ones(24, 24, dtype=torch.bool).nonzero()
    a, b = everything[:, 0], everything[:, 1]
    expected = instance_loss(params, a, b, PAIR.g1.table[a, b])
    assert torch.allclose(table_loss(params, PAIR.g1.table).float(), expected, atol=1e-5)
    assert all_logits(params).shape == (2, 576, 24)


def test_restriction_at_its_extremes():
    params = init_instances(range(3), S4_MODEL_NO_BIAS)
    projectors = PROJECTORS["S4"]
    tables = {"S4": PAIR.g1.table}
    everything = restriction_losses(params, projectors, torch.ones(3, 5, dtype=torch.bool), tables)
    assert torch.allclose(everything["restricted"]["S4"], everything["full"]["S4"])
    assert torch.allclose(everything["excluded"]["S4"], torch.full((3,), math.log(24), dtype=torch.float64))
    nothing = restriction_losses(params, projectors, torch.zeros(3, 5, dtype=torch.bool), tables)
    assert torch.allclose(nothing["excluded"]["S4"], nothing["full"]["S4"])


def test_the_two_groups_components_refine_into_eight_cells():
    first, second = PROJECTORS["S4"], PROJECTORS["A4xZ2"]
    overlaps = overlap_dimensions(first, second).round()
    expected = torch.tensor([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 2, 2, 0, 0],
                             [0, 0, 0, 0, 6, 3], [0, 0, 0, 0, 3, 6]], dtype=torch.float64)
    assert torch.equal(overlaps, expected)
    cells, pairs = joint_cells(first, second)
    assert pairs == [(0, 0), (1, 1), (2, 2), (2, 3), (3, 4), (3, 5), (4, 4), (4, 5)]
    assert torch.allclose(cells.sum(dim=0), torch.eye(24, dtype=torch.float64), atol=1e-12)
    for cell in cells:
        assert torch.allclose(cell @ cell, cell, atol=1e-12)
    # a neuron built inside one cell reads 1 there
    functions = torch.randn(1, 24, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    functions[0, :, 0] = cells[5] @ functions[0, :, 0]
    shares, weights = neuron_cells(functions, cells)
    assert float(shares[0, 0, 5]) == pytest.approx(1.0)
    assert torch.allclose(shares.sum(dim=2), torch.ones(1, 3, dtype=torch.float64))
    assert float(weights.sum()) == pytest.approx(1.0)


@pytest.mark.parametrize("name", GROUPS)
def test_a_network_trained_on_one_group_alone_reads_as_that_groups_irreps(name):
    """Four seeds of the sweep's model trained on the whole table of one group (about a second):
    every seed computes the group; its key components form a faithful representation; restricted
    to them its loss stays, without them it is no better than chance (log 24)."""
    group = GROUPS[name]
    schedule = dataclasses.replace(S4_SCHEDULE, checkpoint_epochs=(), workers=1)
    result = run_group_sweep(group, stream_seeds("ch5_iid", 0, 4), S4_MODEL_NO_BIAS, schedule, train_fraction=1.0,
                             generator=torch.Generator().manual_seed(0), progress=False)
    assert bool((result.final("acc_test") == 1.0).all())
    key = key_components(logit_similarity(result.final_params, trace_tensors(TABLES[name])))
    assert all(TABLES[name].is_faithful(row) for row in key)
    losses = restriction_losses(result.final_params, PROJECTORS[name], key, {name: group.table})
    assert bool((losses["full"][name] < 0.05).all())
    assert bool((losses["restricted"][name] < 0.1).all())
    assert bool((losses["excluded"][name] > math.log(24) - 0.05).all())
