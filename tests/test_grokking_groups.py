"""Group constructors satisfy the axioms, match known invariants, and refuse non-groups."""

import itertools
import math

import pytest
import torch

from lib.grokking.groups import (
    AutomorphismError, Group, GroupError, alternating, check_group_axioms, cyclic,
    cyclic_semidirect, dihedral, direct_product, multiplier_action, relabel, semidirect_product,
    symmetric, symmetric_coset_labelled,
)


def assert_group(group: Group, order: int) -> None:
    """Re-check the axioms by brute force (independently of check_group_axioms)."""
    t = group.table
    n = t.shape[0]
    assert n == order == group.order
    assert int(t.min()) >= 0 and int(t.max()) < n                     # closure
    a, b, c = torch.meshgrid(torch.arange(n), torch.arange(n), torch.arange(n), indexing="ij")
    assert torch.equal(t[t[a, b], c], t[a, t[b, c]])                   # associativity
    e = group.identity
    assert torch.equal(t[e], torch.arange(n)) and torch.equal(t[:, e], torch.arange(n))
    inv = group.inverses
    assert torch.equal(t[torch.arange(n), inv], torch.full((n,), e))   # inverses, both sides
    assert torch.equal(t[inv, torch.arange(n)], torch.full((n,), e))
    for row in t:                                                      # Latin square
        assert sorted(row.tolist()) == list(range(n))


def element_orders(group: Group) -> list[int]:
    orders = []
    for x in range(group.order):
        k, y = 1, x
        while y != group.identity:
            y, k = int(group.table[y, x]), k + 1
        orders.append(k)
    return sorted(orders)


@pytest.mark.parametrize("n", range(1, 13))
def test_cyclic_groups_are_groups(n):
    g = cyclic(n)
    assert_group(g, n)
    assert g.is_abelian()
    assert max(element_orders(g)) == n


@pytest.mark.parametrize("n", range(3, 9))
def test_dihedral_groups_are_nonabelian_groups_with_n_reflections(n):
    g = dihedral(n)
    assert_group(g, 2 * n)
    assert not g.is_abelian()
    assert element_orders(g).count(2) == n + (1 if n % 2 == 0 else 0)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_symmetric_groups(n):
    g = symmetric(n)
    assert_group(g, math.factorial(n))
    assert not g.is_abelian()
    # Number of transpositions and other involutions of S_n.
    involutions = sum(math.comb(n, 2 * k) * math.factorial(2 * k) // (2 ** k * math.factorial(k))
                      for k in range(1, n // 2 + 1))
    assert element_orders(g).count(2) == involutions


@pytest.mark.parametrize("n, order", [(3, 3), (4, 12), (5, 60)])
def test_alternating_groups(n, order):
    g = alternating(n)
    assert_group(g, order)
    if n == 4:
        assert element_orders(g) == [1, 2, 2, 2] + [3] * 8
    if n == 5:
        assert element_orders(g).count(5) == 24 and element_orders(g).count(3) == 20


def test_composition_convention_applies_right_factor_first():
    g = symmetric(3)
    names = g.element_names
    a, b = names.index("(1 2)"), names.index("(2 3)")
    # (1 2)(2 3) applies (2 3) first: 1 -> 2, 2 -> 3, 3 -> 1.
    assert names[int(g.table[a, b])] == "(1 2 3)"


@pytest.mark.parametrize("first, second", [(cyclic(4), cyclic(6)), (symmetric(3), cyclic(2)),
                                           (alternating(4), cyclic(2)), (dihedral(4), cyclic(3))])
def test_direct_products(first, second):
    g = direct_product(first, second)
    assert_group(g, first.order * second.order)
    assert g.is_abelian() == (first.is_abelian() and second.is_abelian())
    # (x, y) has index x + |G| y and multiplies componentwise, on every pair of elements.
    for x1, y1, x2, y2 in itertools.product(range(first.order), range(second.order), repeat=2):
        product = int(g.table[x1 + first.order * y1, x2 + first.order * y2])
        assert product == int(first.table[x1, x2]) + first.order * int(second.table[y1, y2])


def test_direct_product_of_coprime_cyclics_is_cyclic():
    assert max(element_orders(direct_product(cyclic(5), cyclic(7)))) == 35
    assert max(element_orders(direct_product(cyclic(50), cyclic(2)))) == 50


def test_semidirect_products():
    for n, a in [(48, 25), (35, 6), (35, 34), (7, 2)]:
        k_order = 3 if (n, a) == (7, 2) else 2
        g = cyclic_semidirect(n, a, k_order)
        assert_group(g, n * k_order)
        assert not g.is_abelian()
    # Z_n x| Z_2 with x -> -x is the dihedral group, element for element.
    assert torch.equal(cyclic_semidirect(9, 8).table, dihedral(9).table)
    # Trivial action gives the direct product.
    trivial = torch.arange(5)[None].repeat(3, 1)
    assert torch.equal(semidirect_product(cyclic(5), cyclic(3), trivial).table,
                       direct_product(cyclic(5), cyclic(3)).table)


@pytest.mark.parametrize("n, a, k", [(48, 25, 2), (35, 6, 2), (35, 34, 2), (7, 2, 3), (9, 8, 2)])
def test_cyclic_semidirect_products_multiply_by_the_formula(n, a, k):
    # (x1, y1)(x2, y2) = (x1 + a^y1 x2 mod n, y1 + y2 mod k), the pair (x, y) at index x + n y.
    table = cyclic_semidirect(n, a, k).table
    x1, y1, x2, y2 = torch.meshgrid(torch.arange(n), torch.arange(k), torch.arange(n), torch.arange(k),
                                    indexing="ij")
    power = torch.tensor([pow(a, j, n) for j in range(k)])
    expected = (x1 + power[y1] * x2) % n + n * ((y1 + y2) % k)
    assert torch.equal(table[x1 + n * y1, x2 + n * y2], expected)


def test_identity_and_inverses_of_a_cyclic_group_and_of_a_relabelling():
    g = cyclic(7)
    assert g.identity == 0 and g.inverses.tolist() == [(-a) % 7 for a in range(7)]
    shuffled = relabel(g, [3, 0, 6, 1, 5, 2, 4])    # new i is old order[i]; old 0 is new 1
    assert shuffled.identity == 1
    # new 0 is old 3, whose inverse old 4 is new 6.
    assert int(shuffled.inverses[0]) == 6


def test_semidirect_product_with_a_nonabelian_normal_subgroup():
    s3 = symmetric(3)
    # Conjugation by the transposition (1 2) is an automorphism of order 2.
    t = s3.element_names.index("(1 2)")
    conj = [int(s3.table[s3.table[t, x], t]) for x in range(6)]
    g = semidirect_product(s3, cyclic(2), [list(range(6)), conj])
    assert_group(g, 12)


@pytest.mark.parametrize("n, a, message", [
    (50, 26, "x -> 26x is not an automorphism of Z50: 26 is not a unit mod 50."),
    (50, 3, "x -> 3x does not define an action of Z2 on Z50: 3^2 is not 1 mod 50."),
    (48, 6, "x -> 6x is not an automorphism of Z48: 6 is not a unit mod 48."),
])
def test_non_automorphisms_are_refused_with_one_sentence(n, a, message):
    with pytest.raises(AutomorphismError) as info:
        cyclic_semidirect(n, a)
    assert str(info.value) == message


def test_general_action_checks():
    z5, z2 = cyclic(5), cyclic(2)
    with pytest.raises(AutomorphismError, match="does not preserve the product"):
        semidirect_product(z5, z2, [list(range(5)), [0, 2, 1, 3, 4]])      # a bijection, not a hom
    with pytest.raises(AutomorphismError, match="not a bijection"):
        semidirect_product(z5, z2, [list(range(5)), [0, 0, 1, 2, 3]])
    with pytest.raises(AutomorphismError, match="identity"):
        semidirect_product(z5, z2, [[0, 4, 3, 2, 1], list(range(5))])
    with pytest.raises(AutomorphismError, match="not a homomorphism"):
        # x -> 2x has order 4 in Aut(Z5), so it cannot be the image of the generator of Z2.
        semidirect_product(z5, z2, [list(range(5)), [0, 2, 4, 1, 3]])
    with pytest.raises(AutomorphismError, match="shape"):
        semidirect_product(z5, z2, [list(range(5))])
    assert multiplier_action(5, 4, 2).tolist() == [[0, 1, 2, 3, 4], [0, 4, 3, 2, 1]]


def test_tables_that_are_not_groups_are_refused():
    with pytest.raises(GroupError, match="not closed"):
        Group("bad", torch.tensor([[0, 1], [1, 2]]))
    with pytest.raises(GroupError, match="not associative"):
        # A Latin square with identity 0 that is not associative (the smallest loop of order 5).
        Group("loop", torch.tensor([[0, 1, 2, 3, 4], [1, 0, 3, 4, 2], [2, 4, 0, 1, 3],
                                    [3, 2, 4, 0, 1], [4, 3, 1, 2, 0]]))
    with pytest.raises(GroupError, match="no identity"):
        Group("const", torch.zeros(3, 3, dtype=torch.long))
    with pytest.raises(GroupError, match="square"):
        check_group_axioms(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(GroupError, match="no inverse"):
        # The monoid ({0, 1}, max) has an identity but 1 has no inverse.
        Group("monoid", torch.tensor([[0, 1], [1, 1]]))


def test_relabel_preserves_structure():
    g = dihedral(5)
    order = torch.randperm(10, generator=torch.Generator().manual_seed(0))
    r = relabel(g, order)
    assert_group(r, 10)
    for i, j in itertools.product(range(10), repeat=2):
        assert int(order[int(r.table[i, j])]) == int(g.table[int(order[i]), int(order[j])])
    with pytest.raises(GroupError):
        relabel(g, [0] * 10)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_symmetric_coset_labelling_matches_alternating_times_z2(n):
    s = symmetric_coset_labelled(n)
    a = alternating(n)
    assert_group(s, math.factorial(n))
    half = a.order
    # The first half is A_n with its own labels, closed under the product.
    assert torch.equal(s.table[:half, :half], a.table)
    # Element half + i is a_i * (1 2).
    t = s.element_names.index("(1 2)")
    assert t == half
    for i in range(half):
        assert int(s.table[i, t]) == half + i
    # S_n and A_n x Z2 agree whenever the first factor lies in A_n.
    product = direct_product(a, cyclic(2))
    assert torch.equal(s.table[:half], product.table[:half])
