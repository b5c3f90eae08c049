"""Irreducible characters of a finite group computed from its multiplication table (chapter 8).

Chapter 8 reads which irreducible representations (irreps) a trained MLP uses. Everything it
needs comes from the Cayley table of a `lib.grokking.groups.Group`, with no representation
matrices written by hand:

* `conjugacy_classes`: the classes {g x g^-1} and the class of every element;
* `character_table`: the irreducible characters by Burnside's method. The class sums C_i of
  the group algebra multiply as C_i C_j = sum_k a_ijk C_k; every irreducible character chi gives
  a common eigenvector w_k = |K_k| chi(g_k) / chi(1) of the matrices (a_ijk)_jk, so the
  eigenvectors of one generic combination of them are the characters up to scale, and the
  orthogonality relation sum_g |chi(g)|^2 = |G| fixes the scale (chi(1) comes out a whole number,
  which is checked);
* `isotypic_projectors`: for each irrep rho the projector P[x, y] = (d_rho / |G|) conj chi(x y^-1)
  on functions of the group (vectors in R^N indexed by element). Its image is the isotypic
  component of rho (the span of rho's matrix coefficients, d_rho^2 dimensions) under left and
  right translation alike; the projectors are idempotent, mutually orthogonal and sum to the
  identity. A complex character and its conjugate are merged into one real component (their
  projectors summed), so every projector is a real symmetric matrix acting on real weights:
  A4 x Z2 has six complex irreps of dimension 1, two conjugate pairs of them, and so six real
  components; S4's five irreps are all real;
* `trace_tensors`: chi(x y z^-1) over all triples, the logit pattern of the representation
  algorithm of Chughtai et al. (a network that computes the product through rho puts logit
  proportional to chi_rho(x y z^-1) on answer z).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from lib.grokking.groups import Group

#: Values closer than this are taken as equal (the characters are computed in float64).
TOLERANCE = 1e-8


def conjugacy_classes(group: Group) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The conjugacy classes of `group` and the class index of every element.

    Returns:
        (classes, class_of): classes[i] is the sorted LongTensor of the elements of class i,
        classes ordered by their smallest element (so the class of element 0 comes first);
        class_of[x] is the index of x's class.
    """
    table, inverses = group.table, group.inverses
    everyone = torch.arange(group.order)
    class_of = torch.full((group.order,), -1, dtype=torch.long)
    classes = []
    for x in range(group.order):
        if class_of[x] >= 0:
            continue
        members = torch.unique(table[table[everyone, x], inverses])   # g x g^-1 for every g
        class_of[members] = len(classes)
        classes.append(members)
    return classes, class_of


@dataclass(frozen=True, eq=False)
class CharacterTable:
    """The irreducible characters of a group and the real components they make.

    Attributes:
        group: the group.
        classes: the conjugacy classes (`conjugacy_classes`).
        class_of: (N,) class index of every element.
        values: (r, r) complex128, values[i, k] = chi_i on class k; irreps ordered by dimension,
            then real before complex, then by their values (the trivial character first).
        dimensions: (r,) chi_i(1), whole numbers.
    """

    group: Group
    classes: list[torch.Tensor]
    class_of: torch.Tensor
    values: torch.Tensor
    dimensions: tuple[int, ...]

    @property
    def n_irreps(self) -> int:
        """Number of irreducible characters (= number of classes)."""
        return len(self.dimensions)

    @property
    def class_sizes(self) -> torch.Tensor:
        """(r,) number of elements in each class."""
        return torch.tensor([len(members) for members in self.classes])

    @cached_property
    def on_elements(self) -> torch.Tensor:
        """(r, N) complex128: chi_i(x) for every element x."""
        return self.values[:, self.class_of]

    def is_real(self, irrep: int) -> bool:
        """Whether chi_irrep takes only real values."""
        return bool(self.values[irrep].imag.abs().max() < 1e-6)

    def conjugate_of(self, irrep: int) -> int:
        """The index of the character conj(chi_irrep) (itself when real)."""
        target = self.values[irrep].conj()
        distance = (self.values - target).abs().amax(dim=1)
        return int(distance.argmin())

    @cached_property
    def components(self) -> tuple[tuple[int, ...], ...]:
        """The real components: each real irrep alone, each complex irrep with its conjugate."""
        seen, out = set(), []
        for irrep in range(self.n_irreps):
            if irrep in seen:
                continue
            pair = tuple(sorted({irrep, self.conjugate_of(irrep)}))
            seen.update(pair)
            out.append(pair)
        return tuple(out)

    @cached_property
    def component_names(self) -> tuple[str, ...]:
        """A label per real component: dimension and a letter in the table's order ("1a", "3b"),
        a conjugate pair as "1c+1d"."""
        letters, labels = {}, []
        for irrep, dim in enumerate(self.dimensions):
            letters[irrep] = f"{dim}{chr(ord('a') + sum(1 for d in self.dimensions[:irrep] if d == dim))}"
        for pair in self.components:
            labels.append("+".join(letters[irrep] for irrep in pair))
        return tuple(labels)

    @cached_property
    def component_dimensions(self) -> tuple[int, ...]:
        """Dimension of each real component's space of functions: sum of d^2 over its irreps."""
        return tuple(sum(self.dimensions[irrep] ** 2 for irrep in pair) for pair in self.components)

    def kernel(self, component: int) -> torch.Tensor:
        """(N,) bool: the elements that act as the identity in a real component (chi(g) = chi(1)
        for each of its characters)."""
        chars = self.on_elements[list(self.components[component])]
        dims = torch.tensor([self.dimensions[i] for i in self.components[component]], dtype=torch.float64)
        return ((chars - dims[:, None]).abs() < 1e-6).all(dim=0)

    def is_faithful(self, chosen: torch.Tensor) -> bool:
        """Whether the direct sum of the components marked in `chosen` ((K,) bool) is a faithful
        representation: no element but the identity acts trivially in all of them. A model that
        computes the product must use a faithful set."""
        acting_trivially = torch.ones(self.group.order, dtype=torch.bool)
        for component in chosen.nonzero().flatten().tolist():
            acting_trivially &= self.kernel(component)
        return int(acting_trivially.sum()) == 1

    def component_characters(self) -> torch.Tensor:
        """(K, N) float64: the character of each real component on every element (a conjugate
        pair's two characters summed, which is real)."""
        chars = self.on_elements
        return torch.stack([chars[list(pair)].sum(dim=0).real for pair in self.components])


def character_table(group: Group, seed: int = 0) -> CharacterTable:
    """The irreducible characters of `group` by Burnside's method (see the module docstring).

    `seed` draws the generic combination of the class matrices whose eigenvectors are the
    characters; a draw whose eigenvalues are not well separated is replaced by the next one.

    Raises:
        ValueError: when the computed dimensions are not whole numbers or the characters fail
            the orthogonality relations (a bug, never a property of the group).
    """
    classes, class_of = conjugacy_classes(group)
    r, n = len(classes), group.order
    table, inverses = group.table, group.inverses
    sizes = torch.tensor([len(members) for members in classes], dtype=torch.float64)
    representatives = [int(members[0]) for members in classes]
    # a[i, j, k] = #{x in K_i : x^-1 z_k in K_j}: the coefficient of C_k in C_i C_j.
    coefficients = torch.zeros(r, r, r, dtype=torch.float64)
    for k, z in enumerate(representatives):
        for i, members in enumerate(classes):
            rest = class_of[table[inverses[members], z]]
            coefficients[i, :, k] += torch.bincount(rest, minlength=r).double()
    generator = torch.Generator().manual_seed(seed)
    identity_class = int(class_of[group.identity])
    for _ in range(20):
        weights = torch.rand(r, generator=generator, dtype=torch.float64) + 0.5
        combined = torch.einsum("i,ijk->jk", weights, coefficients)
        eigenvalues, vectors = torch.linalg.eig(combined)
        gaps = (eigenvalues[:, None] - eigenvalues[None, :]).abs() + torch.eye(r) * 1e9
        if r == 1 or float(gaps.min()) > 1e-6:
            break
    else:  # pragma: no cover - 20 draws with a repeated eigenvalue do not happen
        raise ValueError(f"{group.name}: no generic combination of the class matrices found.")
    vectors = vectors / vectors[identity_class]                      # w[identity class] = 1
    dims = torch.sqrt(n / (vectors.abs() ** 2 / sizes[:, None]).sum(dim=0))
    rounded = dims.round()
    if float((dims - rounded).abs().max()) > 1e-6:
        raise ValueError(f"{group.name}: character degrees {dims.tolist()} are not whole numbers.")
    values = (vectors * rounded / sizes[:, None]).T                   # (irrep, class)
    values = torch.complex(_clean(values.real), _clean(values.imag))
    order = sorted(range(r), key=lambda i: _sort_key(values[i], int(rounded[i])))
    values = values[order]
    result = CharacterTable(group, classes, class_of, values, tuple(int(rounded[i]) for i in order))
    _check_orthogonality(result)
    return result


def isotypic_projectors(characters: CharacterTable, components: bool = True) -> torch.Tensor:
    """Projectors onto the isotypic components, acting on functions of the group (R^N).

    Args:
        characters: the group's `CharacterTable`.
        components: True: one real projector per real component (`CharacterTable.components`),
            float64 (K, N, N); False: one complex projector per irreducible character, complex128
            (r, N, N).

    P_rho[x, y] = (d_rho / |G|) conj chi_rho(x y^-1). A function f (a column vector indexed by
    element) splits as f = sum_rho P_rho f; `lib.grokking.irrep_readout` reads the share of a
    weight matrix's squared norm in each part.
    """
    group = characters.group
    quotient = group.table[:, group.inverses]                            # x y^-1
    dims = torch.tensor(characters.dimensions, dtype=torch.float64)
    chars = characters.on_elements[:, quotient]                            # (r, N, N)
    per_irrep = (dims[:, None, None] / group.order) * chars.conj()
    if not components:
        return per_irrep
    return torch.stack([per_irrep[list(pair)].sum(dim=0).real for pair in characters.components])


def trace_tensors(characters: CharacterTable) -> torch.Tensor:
    """(K, N, N, N) float64: the real component's character at x y z^-1 for every triple.

    The representation algorithm of Chughtai et al. sets the logit of answer z for the pair
    (x, y) to tr(rho(x) rho(y) rho(z^-1)) = chi_rho(x y z^-1); `lib.grokking.irrep_readout`
    compares a model's logits with this pattern to find its key irreps.
    """
    group = characters.group
    product_then_inverse = group.table[group.table, :][:, :, group.inverses]   # (x y) z^-1 over (x, y, z)
    chars = characters.component_characters()
    return chars[:, product_then_inverse]


# --- Helpers -------------------------------------------------------------------------------


def _clean(values: torch.Tensor) -> torch.Tensor:
    """Entries within TOLERANCE of a whole number are set to it (characters of small groups are
    mostly integers; the rest, such as cube roots of unity, are left as computed)."""
    nearest = values.round()
    return torch.where((values - nearest).abs() < 1e-9, nearest, values)


def _sort_key(values: torch.Tensor, dim: int) -> tuple:
    real = values.imag.abs().max() < 1e-6
    return (dim, not bool(real), tuple(-round(float(v), 6) for v in values.real),
            tuple(-round(float(v), 6) for v in values.imag))


def _check_orthogonality(characters: CharacterTable) -> None:
    sizes = characters.class_sizes.to(torch.complex128)
    gram = (characters.values * sizes) @ characters.values.conj().T / characters.group.order
    if float((gram - torch.eye(characters.n_irreps)).abs().max()) > 1e-6:
        raise ValueError(f"{characters.group.name}: the computed characters are not orthonormal.")
    if sum(d * d for d in characters.dimensions) != characters.group.order:
        raise ValueError(f"{characters.group.name}: the squared degrees do not sum to the order.")


__all__ = ["CharacterTable", "character_table", "conjugacy_classes", "isotypic_projectors", "trace_tensors"]
