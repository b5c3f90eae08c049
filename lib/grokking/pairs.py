"""Pairs of groups on one labelled set, their intersections, and the training sets built from them.

Chapter 4 trains on the pairs (a, b) where two group operations agree and scores the trained
models against each group on all N^2 pairs; chapters 5 and 6 reuse the same pairs. The five pairs
of the ambiguous-grokking study [@wu2025ambiguous] are available by name through `make_pair`;
`PUBLISHED_INTERSECTION_SIZES` holds the intersection sizes the authors report, which the tests
and the chapter assert.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from lib.grokking.groups import (
    Group, GroupError, alternating, cyclic, cyclic_semidirect, direct_product,
    symmetric_coset_labelled,
)


def intersection(g1: Group, g2: Group) -> torch.Tensor:
    """Boolean (N, N) mask of the pairs (a, b) on which the two multiplication tables agree."""
    if g1.order != g2.order:
        raise GroupError(f"{g1.name} and {g2.name} have different orders ({g1.order} and "
                         f"{g2.order}), so they cannot share one labelled set.")
    return g1.table == g2.table


@dataclass(frozen=True, eq=False)
class GroupPair:
    """Two group operations on one labelled set of N elements (G1 is listed first in results)."""

    name: str
    g1: Group
    g2: Group

    def __post_init__(self) -> None:
        intersection(self.g1, self.g2)  # checks the orders match

    @property
    def n_elements(self) -> int:
        """N, the number of elements of each group."""
        return self.g1.order

    @cached_property
    def mask(self) -> torch.Tensor:
        """(N, N) boolean mask of the intersection."""
        return intersection(self.g1, self.g2)

    @property
    def intersection_size(self) -> int:
        """Number of pairs on which the two operations agree."""
        return int(self.mask.sum())

    @property
    def overlap(self) -> float:
        """Intersection size as a fraction of all N^2 pairs."""
        return self.intersection_size / self.n_elements ** 2


def _s4_pair() -> GroupPair:
    return GroupPair("S4_vs_A4xZ2", symmetric_coset_labelled(4),
                     direct_product(alternating(4), cyclic(2)))


def _s5_pair() -> GroupPair:
    return GroupPair("S5_vs_A5xZ2", symmetric_coset_labelled(5),
                     direct_product(alternating(5), cyclic(2)))


def _z48_pair() -> GroupPair:
    return GroupPair("Z48xZ2_vs_Z48x|25Z2", direct_product(cyclic(48), cyclic(2)),
                     cyclic_semidirect(48, 25, 2))


def _z100_pair() -> GroupPair:
    return GroupPair("Z100_vs_Z50xZ2", cyclic(100), direct_product(cyclic(50), cyclic(2)))


def _z35_pair() -> GroupPair:
    return GroupPair("Z35x|6Z2_vs_Z35x|34Z2", cyclic_semidirect(35, 6, 2),
                     cyclic_semidirect(35, 34, 2))


_PAIR_BUILDERS = {
    "Z48xZ2_vs_Z48x|25Z2": _z48_pair,
    "Z100_vs_Z50xZ2": _z100_pair,
    "S5_vs_A5xZ2": _s5_pair,
    "S4_vs_A4xZ2": _s4_pair,
    "Z35x|6Z2_vs_Z35x|34Z2": _z35_pair,
}

#: Names accepted by `make_pair`, in the order the study introduces them.
PAIR_NAMES: tuple[str, ...] = tuple(_PAIR_BUILDERS)

#: Intersection sizes reported by the authors (the Z35 pair is reported as 60%; 2940 = 0.6 * 70^2).
PUBLISHED_INTERSECTION_SIZES: dict[str, int] = {
    "Z48xZ2_vs_Z48x|25Z2": 6912,
    "Z100_vs_Z50xZ2": 5100,
    "S5_vs_A5xZ2": 7920,
    "S4_vs_A4xZ2": 336,
    "Z35x|6Z2_vs_Z35x|34Z2": 2940,
}


def make_pair(name: str) -> GroupPair:
    """Build one of the study's pairs by name (see `PAIR_NAMES`).

    The S_n pairs label S_n as A_n followed by A_n * (1 2) and match it with A_n x Z2; the cyclic
    pairs use the labelling x = h + |H| k of `lib.grokking.groups.direct_product`.
    """
    if name not in _PAIR_BUILDERS:
        raise KeyError(f"Unknown group pair {name!r}; known pairs: {', '.join(PAIR_NAMES)}.")
    return _PAIR_BUILDERS[name]()


def pairs_in_mask(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Left and right element indices of the True entries of an (N, N) mask, in row-major order."""
    left, right = mask.nonzero(as_tuple=True)
    return left.contiguous(), right.contiguous()


def subsample_pairs(
    left: torch.Tensor, right: torch.Tensor, fraction: float, generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A uniformly random subset of round(fraction * len) pairs, kept in their original order."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must lie in (0, 1]; got {fraction}.")
    n_keep = max(1, round(fraction * left.numel()))
    keep = torch.randperm(left.numel(), generator=generator)[:n_keep].sort().values
    return left[keep], right[keep]


def label_counts(group: Group, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """How often each element occurs as the product a*b over the given pairs (length N).

    Chapter 4's class-imbalance check: over all N^2 pairs every element occurs N times, but on
    an intersection the counts can be uneven (Z100 vs Z50 x Z2 keeps small sums only).
    """
    return torch.bincount(group.table[left, right], minlength=group.order)
