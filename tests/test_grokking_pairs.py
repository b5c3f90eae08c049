"""The study's five pairs have exactly the published intersection sizes; helpers behave."""

import pytest
import torch

from lib.grokking.pairs import (
    PAIR_NAMES, PUBLISHED_INTERSECTION_SIZES, intersection, label_counts, make_pair,
    pairs_in_mask, subsample_pairs,
)
from lib.grokking.groups import GroupError, cyclic, symmetric


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
    sizes = {name: make_pair(name).intersection_size for name in PAIR_NAMES}
    assert sizes["S4_vs_A4xZ2"] == 336 and 336 / 576 == pytest.approx(0.5833, abs=1e-4)
    assert sizes["Z48xZ2_vs_Z48x|25Z2"] / 96 ** 2 == 0.75
    assert sizes["Z100_vs_Z50xZ2"] / 100 ** 2 == 0.51
    assert sizes["S5_vs_A5xZ2"] == 7920
    assert sizes["Z35x|6Z2_vs_Z35x|34Z2"] / 70 ** 2 == pytest.approx(0.6)


def test_which_group_is_which():
    assert make_pair("S4_vs_A4xZ2").g1.name == "S4"
    assert make_pair("S4_vs_A4xZ2").g2.name == "A4xZ2"
    assert make_pair("Z48xZ2_vs_Z48x|25Z2").g1.is_abelian()
    assert not make_pair("Z48xZ2_vs_Z48x|25Z2").g2.is_abelian()
    assert make_pair("Z100_vs_Z50xZ2").g1.name == "Z100"


def test_intersection_needs_equal_orders_and_unknown_names_fail():
    with pytest.raises(GroupError):
        intersection(cyclic(6), cyclic(5))
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
    flat = set((left * 24 + right).tolist())
    assert set((sub_left * 24 + sub_right).tolist()) <= flat
    again = subsample_pairs(left, right, 0.6, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], sub_left) and torch.equal(again[1], sub_right)


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
