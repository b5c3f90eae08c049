"""Characters computed from Cayley tables match the known tables; the isotypic projectors are
orthogonal projectors that split every function on the group (chapter 8)."""

import cmath

import pytest
import torch

from lib.grokking.characters import (
    character_table, conjugacy_classes, isotypic_projectors, trace_tensors,
)
from lib.grokking.groups import alternating, cyclic, dihedral, direct_product, symmetric
from lib.grokking.pairs import make_pair

S4_PAIR = make_pair("S4_vs_A4xZ2")


def test_conjugacy_classes_of_s4_have_the_sizes_of_its_cycle_types():
    classes, class_of = conjugacy_classes(S4_PAIR.g1)
    assert sorted(len(c) for c in classes) == [1, 3, 6, 6, 8]
    for index, members in enumerate(classes):
        assert bool((class_of[members] == index).all())


@pytest.mark.parametrize("group, dimensions", [
    (S4_PAIR.g1, (1, 1, 2, 3, 3)),
    (S4_PAIR.g2, (1, 1, 1, 1, 1, 1, 3, 3)),
    (symmetric(3), (1, 1, 2)),
    (alternating(4), (1, 1, 1, 3)),
    (dihedral(4), (1, 1, 1, 1, 2)),
    (cyclic(6), (1,) * 6),
])
def test_dimensions_are_the_known_ones_and_squares_sum_to_the_order(group, dimensions):
    table = character_table(group)
    assert table.dimensions == dimensions
    assert sum(d * d for d in table.dimensions) == group.order
    assert table.n_irreps == len(conjugacy_classes(group)[0])


@pytest.mark.parametrize("group", [S4_PAIR.g1, S4_PAIR.g2, symmetric(3), dihedral(5), cyclic(7),
                                   direct_product(cyclic(2), cyclic(4))])
def test_row_and_column_orthogonality(group):
    table = character_table(group)
    sizes = table.class_sizes.to(torch.complex128)
    rows = (table.values * sizes) @ table.values.conj().T / group.order
    assert torch.allclose(rows, torch.eye(table.n_irreps, dtype=torch.complex128), atol=1e-9)
    # sum over irreps of chi(g) conj chi(h) = |C(g)| delta(g ~ h), |C(g)| = |G| / |class of g|
    columns = table.values.T @ table.values.conj()
    expected = torch.diag(group.order / sizes)
    assert torch.allclose(columns, expected, atol=1e-9)


def test_s3_table_is_the_textbook_one():
    table = character_table(symmetric(3))
    sizes = table.class_sizes.tolist()
    by_size = {size: k for k, size in enumerate(sizes)}        # classes: e (1), transpositions (3), 3-cycles (2)
    rows = {tuple(round(float(table.values[i, by_size[s]].real)) for s in (1, 3, 2)) for i in range(3)}
    assert rows == {(1, 1, 1), (1, -1, 1), (2, 0, -1)}


def test_cyclic_characters_are_roots_of_unity():
    n = 5
    table = character_table(cyclic(n))
    generator_class = int(table.class_of[1])
    values = sorted((table.values[:, generator_class]).tolist(), key=lambda z: cmath.phase(z) % (2 * cmath.pi))
    expected = sorted((cmath.exp(2j * cmath.pi * k / n) for k in range(n)), key=lambda z: cmath.phase(z) % (2 * cmath.pi))
    assert all(abs(a - b) < 1e-9 for a, b in zip(values, expected))


def test_complex_characters_pair_with_their_conjugates_into_real_components():
    table = character_table(S4_PAIR.g2)
    assert [len(pair) for pair in table.components] == [1, 1, 2, 2, 1, 1]
    assert table.component_dimensions == (1, 1, 2, 2, 9, 9)
    s4 = character_table(S4_PAIR.g1)
    assert s4.components == ((0,), (1,), (2,), (3,), (4,)) and s4.component_dimensions == (1, 1, 4, 9, 9)


@pytest.mark.parametrize("group", [S4_PAIR.g1, S4_PAIR.g2, dihedral(4)])
@pytest.mark.parametrize("components", [True, False])
def test_projectors_are_idempotent_orthogonal_and_sum_to_the_identity(group, components):
    table = character_table(group)
    projectors = isotypic_projectors(table, components=components)
    identity = torch.eye(group.order, dtype=projectors.dtype)
    assert torch.allclose(projectors.sum(dim=0), identity, atol=1e-12)
    for i, p in enumerate(projectors):
        assert torch.allclose(p @ p, p, atol=1e-12)
        assert torch.allclose(p, p.conj().T, atol=1e-12)
        for j, q in enumerate(projectors):
            if i != j:
                assert float((p @ q).abs().max()) < 1e-12
    ranks = [round(float(torch.diagonal(p).real.sum())) for p in projectors]
    dims = table.component_dimensions if components else tuple(d * d for d in table.dimensions)
    assert tuple(ranks) == dims


def test_projectors_commute_with_left_and_right_translation():
    group = S4_PAIR.g1
    projectors = isotypic_projectors(character_table(group))
    for g in (1, 7, 13, 22):
        left = torch.zeros(group.order, group.order, dtype=torch.float64)
        left[group.table[g], torch.arange(group.order)] = 1.0          # f(x) -> f(g^-1 x) moves x to g x
        right = torch.zeros_like(left)
        right[group.table[:, g], torch.arange(group.order)] = 1.0      # x -> x g
        for p in projectors:
            assert torch.allclose(left @ p, p @ left, atol=1e-12)
            assert torch.allclose(right @ p, p @ right, atol=1e-12)


def test_trace_tensors_of_the_one_dimensional_characters():
    group = S4_PAIR.g1
    table = character_table(group)
    traces = trace_tensors(table)
    assert traces.shape == (5, 24, 24, 24)
    assert torch.equal(traces[0], torch.ones(24, 24, 24, dtype=torch.float64))
    # the sign character: S4 is labelled A4 first (even), then A4 (1 2) (odd)
    sign = torch.where(torch.arange(24) < 12, 1.0, -1.0).double()
    x, y, z = torch.meshgrid(torch.arange(24), torch.arange(24), torch.arange(24), indexing="ij")
    assert torch.equal(traces[1], sign[x] * sign[y] * sign[z])


def test_kernels_and_faithful_sets():
    s4 = character_table(S4_PAIR.g1)
    assert [int(s4.kernel(k).sum()) for k in range(5)] == [24, 12, 4, 1, 1]   # S4, A4, V4, {e}, {e}
    assert s4.is_faithful(torch.tensor([False, False, False, True, False]))
    assert not s4.is_faithful(torch.tensor([True, True, True, False, False]))
    a4z2 = character_table(S4_PAIR.g2)
    assert [int(a4z2.kernel(k).sum()) for k in range(6)] == [24, 12, 8, 4, 2, 1]
    # A4's 3-dim irrep tensored with the trivial character of Z2 misses the Z2; with the sign it does not
    assert not a4z2.is_faithful(torch.tensor([False, False, False, False, True, False]))
    assert a4z2.is_faithful(torch.tensor([False, True, False, False, True, False]))
