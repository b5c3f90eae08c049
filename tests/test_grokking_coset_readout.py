"""The coset readout against known answers: the subgroup counts of small groups, cosets of the
right size, Stander et al.'s ratio 0 on a function constant on cosets and about the number of
cosets on a random one, random functions that keep an exact isotypic profile (chapter 8)."""

import pytest
import torch

from lib.grokking.characters import character_table, isotypic_projectors
from lib.grokking.coset_readout import (
    best_cosets, chance_shares, coarsest_cosets, coset_labels, coset_neuron_share, coset_shares, coset_variance_ratios,
    matched_random_functions, proper_partitions, subgroups,
)
from lib.grokking.groups import cyclic, symmetric
from lib.grokking.irrep_readout import component_norms
from lib.grokking.pairs import make_pair

PAIR = make_pair("S4_vs_A4xZ2")


@pytest.mark.parametrize("group, count", [(PAIR.g1, 30), (PAIR.g2, 26), (symmetric(3), 6), (cyclic(12), 6)])
def test_subgroup_counts_are_the_known_ones(group, count):
    found = subgroups(group)
    assert len(found) == count
    assert all(group.order % int(mask.sum()) == 0 for mask in found)
    assert int(found[0].sum()) == 1 and int(found[-1].sum()) == group.order


def test_cosets_have_the_subgroups_size_and_normal_subgroups_have_equal_sides():
    group = PAIR.g1
    for mask in subgroups(group):
        size = int(mask.sum())
        for side in ("left", "right"):
            labels = coset_labels(group, mask, side)
            assert set(torch.bincount(labels)[torch.unique(labels)].tolist()) == {size}
    a4 = torch.arange(24) < 12                                # A4, normal in S4
    assert torch.equal(coset_labels(group, a4, "left"), coset_labels(group, a4, "right"))


def test_ratios_on_functions_constant_on_cosets_and_on_random_functions():
    group = PAIR.g1
    labels, orders = proper_partitions(group, "right")
    generator = torch.Generator().manual_seed(0)
    target = 20                                                # a subgroup of order 6 (an S3)
    assert int(orders[target]) == 6
    values = torch.randn(24, generator=generator, dtype=torch.float64)
    constant = values[labels[target]].reshape(1, 24, 1)
    ratios = coset_variance_ratios(constant, labels)
    assert float(ratios[0, 0, target]) == pytest.approx(0.0, abs=1e-12)
    best, _ = best_cosets(constant, labels)
    assert float(best[0, 0]) == pytest.approx(0.0, abs=1e-12)
    noise = torch.randn(200, 24, 16, generator=generator, dtype=torch.float64)
    cosets = torch.tensor([len(torch.unique(row)) for row in labels], dtype=torch.float64)
    assert torch.allclose(coset_variance_ratios(noise, labels).mean(dim=(0, 1)), cosets, rtol=0.05)
    assert torch.allclose(coset_shares(noise, labels).mean(dim=(0, 1)), chance_shares(labels), atol=0.01)
    mixed = torch.cat([constant.expand(1, 24, 3), noise[:1, :, :1]], dim=2)   # 3 coset neurons, 1 random
    share = coset_neuron_share(mixed, labels, 0.1)
    weights = mixed.var(dim=1)[0]
    assert float(share[0]) == pytest.approx(float(weights[:3].sum() / weights.sum()))


def test_matched_random_functions_keep_the_isotypic_profile_exactly():
    projectors = isotypic_projectors(character_table(PAIR.g2))
    generator = torch.Generator().manual_seed(1)
    functions = torch.randn(3, 24, 5, generator=generator, dtype=torch.float64)
    functions = projectors[4] @ functions + 0.3 * projectors[1] @ functions
    drawn = matched_random_functions(functions, projectors, generator)
    for column in range(5):
        assert torch.allclose(component_norms(drawn[:, :, column:column + 1], projectors),
                              component_norms(functions[:, :, column:column + 1], projectors), atol=1e-9)
    assert not torch.allclose(drawn, functions)


def test_the_coarsest_fitting_subgroup_names_a_coset_function():
    """A function constant on the cosets of an S3 is constant on those of its subgroups too; the
    coarsest fitting partition is the S3's, and a random function fits none."""
    group = PAIR.g1
    labels, orders = proper_partitions(group, "left")
    generator = torch.Generator().manual_seed(2)
    target = int((orders == 6).nonzero()[0])
    values = torch.randn(24, generator=generator, dtype=torch.float64)
    functions = torch.stack([values[labels[target]], torch.randn(24, generator=generator, dtype=torch.float64)], dim=1)
    assert coarsest_cosets(functions[None], labels, 0.1)[0].tolist() == [target, -1]
