"""The study's five pairs have exactly the published intersection sizes; helpers behave."""

import pytest
import torch

from lib.grokking.pairs import (
    PAIR_NAMES, PUBLISHED_INTERSECTION_SIZES, GroupPair, intersection, label_counts, make_pair,
    pairs_in_mask, subsample_pairs,
)
from lib.grokking.groups import GroupError, cyclic, direct_product, symmetric


@pytest.mark.parametrize("name", PAIR_NAMES)
def test_published_intersection_sizes(name):
    pair = make_pair(name)
    assert pair.intersection_size == PUBLISHED_INTERSECTION_SIZES[name]
    assert not torch.equal(pair.g1.table, pair.g2.table)
    assert pair.overlap >= 0.5
    if name != "Z100_vs_Z50xZ2":
        # H x Z2 versus H x|phi Z2 (or S_n as A_n then A_n (1 2)): the products agree
        # whenever the first element lies in the first copy of H, so overlap >= 1/2.
        assert pair.mask[: pair.n_elements // 2].all()


def test_published_values_as_fractions():
    # The authors report most overlaps as fractions of N^2; the table above must say the same
    # (test_published_intersection_sizes checks the built pairs against the table).
    sizes = PUBLISHED_INTERSECTION_SIZES
    assert sizes["S4_vs_A4xZ2"] / 24 ** 2 == pytest.approx(0.5833, abs=1e-4)
    assert sizes["Z48xZ2_vs_Z48x|25Z2"] / 96 ** 2 == 0.75
    assert sizes["Z100_vs_Z50xZ2"] / 100 ** 2 == 0.51
    assert sizes["S5_vs_A5xZ2"] / 120 ** 2 == 0.55
    assert sizes["Z35x|6Z2_vs_Z35x|34Z2"] / 70 ** 2 == pytest.approx(0.6)
    assert set(sizes) == set(PAIR_NAMES)


def test_which_group_is_which():
    assert make_pair("S4_vs_A4xZ2").g1.name == "S4"
    assert make_pair("S4_vs_A4xZ2").g2.name == "A4xZ2"
    assert make_pair("Z48xZ2_vs_Z48x|25Z2").g1.is_abelian()
    assert not make_pair("Z48xZ2_vs_Z48x|25Z2").g2.is_abelian()
    assert make_pair("Z100_vs_Z50xZ2").g1.name == "Z100"


def test_intersection_of_z4_and_z2xz2_by_hand():
    # Labels x = h + 2k: the sums differ exactly when both h are odd (Z4 carries into k).
    pair = GroupPair("Z4_vs_Z2xZ2", cyclic(4), direct_product(cyclic(2), cyclic(2)))
    expected = torch.tensor([[not (a % 2 and b % 2) for b in range(4)] for a in range(4)])
    assert torch.equal(pair.mask, expected)
    assert torch.equal(intersection(pair.g1, pair.g2), expected)
    assert pair.intersection_size == 12 and pair.overlap == 0.75 and pair.n_elements == 4


def test_intersection_needs_equal_orders_and_unknown_names_fail():
    with pytest.raises(GroupError, match="different orders"):
        intersection(cyclic(6), cyclic(5))
    with pytest.raises(GroupError, match="different orders"):
        GroupPair("bad", cyclic(6), cyclic(5))
    assert intersection(symmetric(3), symmetric(3)).all()
    with pytest.raises(KeyError, match="known pairs"):
        make_pair("S6_vs_A6xZ2")


def test_pairs_in_mask_and_subsample():
    pair = make_pair("S4_vs_A4xZ2")
    left, right = pairs_in_mask(pair.mask)
    assert left.numel() == 336
    assert torch.equal(pair.g1.table[left, right], pair.g2.table[left, right])
    g = torch.Generator().manual_seed(0)
    sub_left, sub_right = subsample_pairs(left, right, 0.6, g)
    assert sub_left.numel() == round(0.6 * 336)
    flat = (left * 24 + right).tolist()
    sub_flat = (sub_left * 24 + sub_right).tolist()
    assert set(sub_flat) <= set(flat) and len(set(sub_flat)) == len(sub_flat), "a subset, no repeats"
    assert sub_flat == sorted(sub_flat), "kept in their original order"
    again = subsample_pairs(left, right, 0.6, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], sub_left) and torch.equal(again[1], sub_right)


def test_pairs_in_mask_lists_the_true_entries_row_by_row():
    mask = torch.tensor([[False, True, True], [False, False, False], [True, False, True]])
    left, right = pairs_in_mask(mask)
    assert list(zip(left.tolist(), right.tolist())) == [(0, 1), (0, 2), (2, 0), (2, 2)]


def test_subsample_keeps_everything_at_one_at_least_one_pair_and_refuses_bad_fractions():
    left, right = torch.arange(10), torch.arange(10, 20)
    whole = subsample_pairs(left, right, 1.0, torch.Generator().manual_seed(0))
    assert torch.equal(whole[0], left) and torch.equal(whole[1], right)
    one = subsample_pairs(left, right, 0.01, torch.Generator().manual_seed(0))
    assert one[0].numel() == 1 and int(one[1]) == int(one[0]) + 10, "pairs stay together"
    for fraction in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="fraction must lie in"):
            subsample_pairs(left, right, fraction, torch.Generator())


def test_subsample_is_uniform_over_pairs():
    # Each of 10 pairs is kept with probability 3/10; over 3000 draws each count is ~900 (sd ~25).
    left, right = torch.arange(10), torch.arange(10)
    generator = torch.Generator().manual_seed(3)
    counts = torch.zeros(10)
    for _ in range(3000):
        kept, _ = subsample_pairs(left, right, 0.3, generator)
        counts[kept] += 1
    assert int(counts.sum()) == 9000 and float((counts - 900).abs().max()) < 130


def test_label_counts_show_the_z100_imbalance():
    pair = make_pair("Z100_vs_Z50xZ2")
    left, right = pairs_in_mask(pair.mask)
    counts = label_counts(pair.g1, left, right)
    assert int(counts.sum()) == 5100
    # No carry: a + b < 50 in the Z50 part; label h + 50k occurs 2(h+1) times.
    expected = torch.tensor([2 * (h + 1) for h in range(50)] * 2)
    assert torch.equal(counts, expected)
    full = label_counts(pair.g1, *pairs_in_mask(torch.ones(100, 100, dtype=torch.bool)))
    assert torch.equal(full, torch.full((100,), 100))
    s4 = make_pair("S4_vs_A4xZ2")
    s4_counts = label_counts(s4.g1, *pairs_in_mask(s4.mask))
    assert torch.equal(s4_counts, torch.full((24,), 14))          # balanced: 336 / 24
