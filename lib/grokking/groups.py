"""Finite groups as multiplication tables, checked against the group axioms (chapters 4-6).

A group of order N is stored as an N x N LongTensor `table` with `table[a, b]` the index of the
product a*b. The ambiguous-grokking chapters put two different group operations on one labelled
set, so every constructor fixes its labelling explicitly:

* `cyclic(n)`: the integers 0..n-1 under addition mod n.
* `symmetric(n)`, `alternating(n)`: permutations of 0..n-1 in lexicographic order, with
  (p*q)(i) = p(q(i)) (apply q first).
* `direct_product(G, H)` and `semidirect_product(H, K, action)`: the pair (g, h) gets the index
  g + |G| * h, so the first factor varies fastest. "H x Z2" is therefore "a copy of H, then a
  second copy of H", which is how the authors laid out their pairs (Z100 = Z50 x Z2 as sets via
  x = h + 50 k; S_n = A_n followed by A_n * (1 2)).
* `relabel(G, order)` and `symmetric_coset_labelled(n)` move elements between labellings.

Every `Group` checks closure, associativity, identity and inverses when it is built, and every
action handed to `semidirect_product` is checked to be a homomorphism K -> Aut(H); a violation
raises `GroupError` (or its subclass `AutomorphismError`) with one sentence saying what failed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch


class GroupError(ValueError):
    """A multiplication table or construction that does not define a group."""


class AutomorphismError(GroupError):
    """A map offered as an automorphism (or an action by automorphisms) that is not one."""


@dataclass(frozen=True, eq=False)
class Group:
    """A finite group given by its multiplication table; the axioms are checked on creation.

    Attributes:
        name: short name used in figures and results, e.g. "S4" or "A4xZ2".
        table: (N, N) LongTensor, `table[a, b]` = index of the product of elements a and b.
        element_names: optional printable name of each element (cycle notation, tuples, ...).
    """

    name: str
    table: torch.Tensor
    element_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        table = torch.as_tensor(self.table).to(dtype=torch.long, device="cpu").contiguous()
        object.__setattr__(self, "table", table)
        if self.element_names is not None:
            object.__setattr__(self, "element_names", tuple(self.element_names))
            if len(self.element_names) != table.shape[0]:
                raise GroupError(f"{self.name}: {len(self.element_names)} element names for "
                                 f"{table.shape[0]} elements.")
        check_group_axioms(table, self.name)

    @property
    def order(self) -> int:
        """Number of elements N."""
        return int(self.table.shape[0])

    @property
    def identity(self) -> int:
        """Index of the identity element."""
        return int(_identity_index(self.table))

    @property
    def inverses(self) -> torch.Tensor:
        """LongTensor whose entry a is the index of a's inverse."""
        return (self.table == self.identity).long().argmax(dim=1)

    def is_abelian(self) -> bool:
        """True when a*b = b*a for all pairs."""
        return bool(torch.equal(self.table, self.table.T))

    def __repr__(self) -> str:
        return f"Group({self.name!r}, order={self.order})"


def check_group_axioms(table: torch.Tensor, name: str = "table") -> None:
    """Raise `GroupError` unless `table` is the multiplication table of a group.

    Checks, in order: square shape, closure (entries are element indices), associativity on all
    N^3 triples, a two-sided identity, and a two-sided inverse for every element.
    """
    if table.dim() != 2 or table.shape[0] != table.shape[1] or table.shape[0] == 0:
        raise GroupError(f"{name}: a multiplication table must be a non-empty square matrix; "
                         f"got shape {tuple(table.shape)}.")
    n = table.shape[0]
    if int(table.min()) < 0 or int(table.max()) >= n:
        raise GroupError(f"{name}: not closed, some products are not among the {n} elements.")
    # (a*b)*c == a*(b*c) for every triple, checked in slices of a to bound memory.
    for start in range(0, n, 32):
        rows = table[start:start + 32]                       # a*b for a in the slice
        left = table[rows]                                   # (a*b)*c, shape (s, n, n)
        right = rows[:, table]                               # a*(b*c): rows[a, table[b, c]]
        if not torch.equal(left, right):
            a, b, c = (left != right).nonzero()[0].tolist()
            raise GroupError(f"{name}: not associative, ({start + a}*{b})*{c} differs from "
                             f"{start + a}*({b}*{c}).")
    identity = _identity_index(table)
    if identity is None:
        raise GroupError(f"{name}: no identity element.")
    has_right_inverse = (table == identity).any(dim=1)
    has_left_inverse = (table == identity).any(dim=0)
    if not bool((has_right_inverse & has_left_inverse).all()):
        a = int((~(has_right_inverse & has_left_inverse)).nonzero()[0])
        raise GroupError(f"{name}: element {a} has no inverse.")


def _identity_index(table: torch.Tensor) -> int | None:
    arange = torch.arange(table.shape[0])
    for e in range(table.shape[0]):
        if torch.equal(table[e], arange) and torch.equal(table[:, e], arange):
            return e
    return None


# --- Constructors -------------------------------------------------------------------------


def cyclic(n: int) -> Group:
    """Z_n: the integers 0..n-1 under addition mod n."""
    _check_positive("cyclic", n)
    index = torch.arange(n)
    return Group(f"Z{n}", (index[:, None] + index[None, :]) % n, tuple(str(i) for i in range(n)))


def symmetric(n: int) -> Group:
    """S_n: permutations of 0..n-1 in lexicographic order, composed as (p*q)(i) = p(q(i))."""
    _check_positive("symmetric", n)
    return _permutation_group(f"S{n}", list(itertools.permutations(range(n))))


def alternating(n: int) -> Group:
    """A_n: the even permutations of 0..n-1 in lexicographic order, composed as in `symmetric`."""
    _check_positive("alternating", n)
    even = [p for p in itertools.permutations(range(n)) if _parity(p) == 0]
    return _permutation_group(f"A{n}", even)


def dihedral(n: int) -> Group:
    """D_n, the symmetries of a regular n-gon (order 2n), built as Z_n x|_{x -> -x} Z_2.

    Element r^k s^f has index k + n f (rotations first, then reflections).
    """
    _check_positive("dihedral", n)
    return semidirect_product(cyclic(n), cyclic(2), multiplier_action(n, n - 1, 2), name=f"D{n}")


def direct_product(g: Group, h: Group, name: str | None = None) -> Group:
    """G x H with componentwise product; the pair (x, y) has index x + |G| * y."""
    ng, nh = g.order, h.order
    first = g.table[:, None, :, None]                        # x1 * x2 over (x1, y1, x2, y2)
    second = h.table[None, :, None, :]                       # y1 * y2
    product = first + ng * second                            # index of (x1 x2, y1 y2)
    # Rows and columns are ordered (x, y) -> x + ng * y, i.e. y-major: permute to (y, x).
    table = product.permute(1, 0, 3, 2).reshape(ng * nh, ng * nh)
    names = None
    if g.element_names is not None and h.element_names is not None:
        names = tuple(f"({x},{y})" for y in h.element_names for x in g.element_names)
    return Group(name or f"{g.name}x{h.name}", table, names)


def semidirect_product(
    h: Group, k: Group, action: torch.Tensor | Sequence[Sequence[int]], name: str | None = None,
) -> Group:
    """H x|_phi K with (h1, k1)(h2, k2) = (h1 * phi_{k1}(h2), k1 * k2); (x, y) has index x + |H| y.

    Args:
        h: the normal subgroup H.
        k: the acting group K.
        action: (|K|, |H|) integer array; row k is the permutation phi_k of H's indices. It must
            be a homomorphism K -> Aut(H) (checked; `AutomorphismError` otherwise).
        name: group name; default "H x|phi K".
    """
    phi = check_action(h, k, action)
    nh, nk = h.order, k.order
    x1 = torch.arange(nh)[:, None, None, None]
    y1 = torch.arange(nk)[None, :, None, None]
    x2 = torch.arange(nh)[None, None, :, None]
    y2 = torch.arange(nk)[None, None, None, :]
    product_h = h.table[x1, phi[y1, x2]]                     # h1 * phi_{k1}(h2)
    product_k = k.table[y1, y2]
    table = (product_h + nh * product_k).permute(1, 0, 3, 2).reshape(nh * nk, nh * nk)
    names = None
    if h.element_names is not None and k.element_names is not None:
        names = tuple(f"({x},{y})" for y in k.element_names for x in h.element_names)
    return Group(name or f"{h.name}x|{k.name}", table, names)


def check_action(h: Group, k: Group, action: torch.Tensor | Sequence[Sequence[int]]) -> torch.Tensor:
    """Return `action` as a LongTensor after checking it is a homomorphism K -> Aut(H).

    Raises `AutomorphismError` if a row is not a bijection of H, does not preserve H's product,
    the identity of K does not act trivially, or phi_{k1 k2} differs from phi_{k1} o phi_{k2}.
    """
    phi = torch.as_tensor(action, dtype=torch.long)
    if phi.shape != (k.order, h.order):
        raise AutomorphismError(f"An action of {k.name} on {h.name} needs shape "
                                f"({k.order}, {h.order}); got {tuple(phi.shape)}.")
    for y in range(k.order):
        f = phi[y]
        if int(f.min()) < 0 or int(f.max()) >= h.order or len(set(f.tolist())) != h.order:
            raise AutomorphismError(f"phi_{y} is not a bijection of {h.name}, so it is not an "
                                    f"automorphism.")
        if not torch.equal(f[h.table], h.table[f[:, None], f[None, :]]):
            raise AutomorphismError(f"phi_{y} does not preserve the product of {h.name}, so it "
                                    f"is not an automorphism.")
    if not torch.equal(phi[k.identity], torch.arange(h.order)):
        raise AutomorphismError(f"The identity of {k.name} must act as the identity on {h.name}.")
    # composed[k1, k2, x] = phi_k1(phi_k2(x))
    composed = torch.gather(phi[:, None, :].expand(-1, k.order, -1), 2,
                            phi[None, :, :].expand(k.order, -1, -1))
    if not torch.equal(composed, phi[k.table]):
        raise AutomorphismError(f"The action is not a homomorphism from {k.name} to "
                                f"Aut({h.name}): phi_(k1 k2) differs from phi_k1 o phi_k2.")
    return phi


def multiplier_action(n: int, multiplier: int, k_order: int) -> torch.Tensor:
    """The action of Z_{k_order} on Z_n in which the generator maps x -> multiplier * x.

    Returns the (k_order, n) table phi_j(x) = multiplier^j x mod n. Refuses, with one sentence,
    a multiplier that is not a unit mod n (x -> 26x on Z50) or whose order does not divide
    k_order (then j -> phi_j is not a homomorphism from Z_{k_order}).
    """
    _check_positive("multiplier_action", n)
    _check_positive("multiplier_action", k_order)
    if math.gcd(multiplier, n) != 1:
        raise AutomorphismError(f"x -> {multiplier}x is not an automorphism of Z{n}: "
                                f"{multiplier} is not a unit mod {n}.")
    if pow(multiplier, k_order, n) != 1 % n:
        raise AutomorphismError(f"x -> {multiplier}x does not define an action of Z{k_order} on "
                                f"Z{n}: {multiplier}^{k_order} is not 1 mod {n}.")
    powers = torch.tensor([pow(multiplier, j, n) for j in range(k_order)])
    return (powers[:, None] * torch.arange(n)[None, :]) % n


def cyclic_semidirect(n: int, multiplier: int, k_order: int = 2) -> Group:
    """Z_n x|_phi Z_{k_order} with the generator acting as x -> multiplier * x; named "Zn x|a Zm"."""
    return semidirect_product(cyclic(n), cyclic(k_order), multiplier_action(n, multiplier, k_order),
                              name=f"Z{n}x|{multiplier}Z{k_order}")


# --- Relabelling ---------------------------------------------------------------------------


def relabel(group: Group, order: Sequence[int] | torch.Tensor, name: str | None = None) -> Group:
    """The same group with new labels: new element i is old element `order[i]`.

    Returns a group whose table is new[i, j] = position of old[order[i], order[j]] in `order`.
    """
    order = torch.as_tensor(order, dtype=torch.long)
    if sorted(order.tolist()) != list(range(group.order)):
        raise GroupError(f"A relabelling of {group.name} must list each of its {group.order} "
                         f"elements exactly once.")
    position = torch.empty_like(order)
    position[order] = torch.arange(group.order)
    table = position[group.table[order[:, None], order[None, :]]]
    names = None if group.element_names is None else tuple(group.element_names[i] for i in order.tolist())
    return Group(name or group.name, table, names)


def symmetric_coset_labelled(n: int) -> Group:
    """S_n labelled as A_n then A_n * (1 2), to share its labels with A_n x Z2.

    Element i < |A_n| is the i-th element a of `alternating(n)`; element |A_n| + i is a * (1 2)
    (apply the transposition of the first two points, then a). Under these labels S_n and
    `direct_product(alternating(n), cyclic(2))` agree whenever the first factor lies in A_n.
    """
    if n < 2:
        raise GroupError("symmetric_coset_labelled needs n >= 2 so that (1 2) exists.")
    perms = list(itertools.permutations(range(n)))
    index_of = {p: i for i, p in enumerate(perms)}
    even = [p for p in perms if _parity(p) == 0]
    swap = (1, 0) + tuple(range(2, n))
    odd = [tuple(a[swap[i]] for i in range(n)) for a in even]   # a o (1 2)
    return relabel(symmetric(n), [index_of[p] for p in even + odd], name=f"S{n}")


# --- Helpers -------------------------------------------------------------------------------


def _permutation_group(name: str, perms: list[tuple[int, ...]]) -> Group:
    index_of = {p: i for i, p in enumerate(perms)}
    n = len(perms)
    table = torch.empty(n, n, dtype=torch.long)
    for i, p in enumerate(perms):
        for j, q in enumerate(perms):
            composed = tuple(p[q[x]] for x in range(len(q)))
            if composed not in index_of:
                raise GroupError(f"{name}: the permutations are not closed under composition.")
            table[i, j] = index_of[composed]
    return Group(name, table, tuple(_cycle_notation(p) for p in perms))


def _parity(perm: Sequence[int]) -> int:
    inversions = sum(1 for i in range(len(perm)) for j in range(i + 1, len(perm)) if perm[i] > perm[j])
    return inversions % 2


def _cycle_notation(perm: Sequence[int]) -> str:
    """Cycles of `perm` on points 1..n, e.g. "(1 2)(3 4)"; the identity is "e"."""
    seen, cycles = set(), []
    for start in range(len(perm)):
        if start in seen:
            continue
        cycle, x = [], start
        while x not in seen:
            seen.add(x)
            cycle.append(x + 1)
            x = perm[x]
        if len(cycle) > 1:
            cycles.append("(" + " ".join(map(str, cycle)) + ")")
    return "".join(cycles) or "e"


def _check_positive(func: str, n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise GroupError(f"{func} needs a positive integer; got {n!r}.")
