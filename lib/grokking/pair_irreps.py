"""A batch of models read under both groups of a pair at once: irreps, cells, restriction, cosets
(chapter 8).

Chapter 8 reads every seed of the S4 / A4 x Z2 sweep under each group's irreps. `pair_irreps`
computes, once per pair, what the readout needs from the two Cayley tables
(`lib.grokking.characters`): characters, real isotypic projectors, the logit patterns
chi(x y z^-1), the common refinement of the two groups' components into cells
(`irrep_readout.joint_cells`) and the coset partitions of every proper subgroup
(`coset_readout`). Then, for a batch of parameters:

* `read_seeds`: each seed's `IrrepProfile` and logit similarity under each group, its key
  components (Chughtai et al.'s threshold) and whether they are faithful, the shares of its
  pooled embeddings in the cells, and where its neurons sit: the weighted share of each neuron's
  norm in its own largest cell (its purity) and the weight of the neurons whose largest cell is
  each cell;
* `restrict_to_key`: the losses on both tables of the seeds whole, restricted to their key
  components of one group and with those removed (`irrep_readout.restriction_losses`);
* `read_cosets`: for one group, the share of each seed's neuron variance in coset neurons (Stander
  et al.'s ratio at most a threshold; left inputs read with right cosets, right inputs with left
  cosets), the same for random functions with each neuron's isotypic profile
  (`coset_readout.matched_random_functions`), and the orders of the winning subgroups.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.grokking.characters import CharacterTable, character_table, isotypic_projectors, trace_tensors
from lib.grokking.coset_readout import coarsest_cosets, coset_neuron_share, matched_random_functions, proper_partitions
from lib.grokking.irrep_readout import (
    IrrepProfile, irrep_profile, joint_cells, key_components, logit_similarity, neuron_cells, restriction_losses,
    total_embeddings,
)
from lib.grokking.pairs import GroupPair


@dataclass(frozen=True, eq=False)
class PairIrreps:
    """What the readout needs from a pair's two Cayley tables, keyed by group name.

    Attributes:
        pair: the pair; `names` its two group names, first group first.
        characters, projectors, traces: per group, `character_table`, `isotypic_projectors`,
            `trace_tensors`.
        cells: (C, N, N) the common refinement; `cell_components` the component of each group that
            holds each cell, as (index in the first group, index in the second).
        partitions: per group and side ("left", "right"), (coset labels (S, N), orders (S,)).
    """

    pair: GroupPair
    names: tuple[str, str]
    characters: dict[str, CharacterTable]
    projectors: dict[str, torch.Tensor]
    traces: dict[str, torch.Tensor]
    cells: torch.Tensor
    cell_components: list[tuple[int, int]]
    partitions: dict[tuple[str, str], tuple[torch.Tensor, torch.Tensor]]

    @property
    def tables(self) -> dict[str, torch.Tensor]:
        """Each group's multiplication table."""
        return {self.pair.g1.name: self.pair.g1.table, self.pair.g2.name: self.pair.g2.table}

    def cell_names(self) -> list[str]:
        """Each cell as "<first group's component> & <second group's component>"."""
        first, second = (self.characters[name].component_names for name in self.names)
        return [f"{first[i]} & {second[j]}" for i, j in self.cell_components]


def pair_irreps(pair: GroupPair) -> PairIrreps:
    """Characters, projectors, logit patterns, cells and coset partitions of both groups of `pair`."""
    groups = {pair.g1.name: pair.g1, pair.g2.name: pair.g2}
    characters = {name: character_table(group) for name, group in groups.items()}
    projectors = {name: isotypic_projectors(table) for name, table in characters.items()}
    cells, components = joint_cells(projectors[pair.g1.name], projectors[pair.g2.name])
    return PairIrreps(
        pair=pair, names=(pair.g1.name, pair.g2.name), characters=characters, projectors=projectors,
        traces={name: trace_tensors(table) for name, table in characters.items()}, cells=cells,
        cell_components=components,
        partitions={(name, side): proper_partitions(group, side) for name, group in groups.items()
                    for side in ("left", "right")})


@dataclass
class SeedReadout:
    """A batch of B seeds read under both groups (dicts keyed by group name).

    Attributes:
        profile: `IrrepProfile` per group.
        similarity: (B, K) logit similarity per group; key: (B, K) bool key components;
            faithful: (B,) bool, whether each seed's key components are faithful.
        cells: (B, C) shares of the pooled embeddings (L and R) in the cells.
        purity: (B,) each neuron's share of its norm in its own largest cell, weighted by the
            neuron's share of the seed's norm (L's and R's columns together).
        top_cells: (B, C) the weight of the neurons whose largest cell is each cell.
    """

    profile: dict[str, IrrepProfile]
    similarity: dict[str, torch.Tensor]
    key: dict[str, torch.Tensor]
    faithful: dict[str, torch.Tensor]
    cells: torch.Tensor
    purity: torch.Tensor
    top_cells: torch.Tensor


def read_seeds(irreps: PairIrreps, params: dict[str, torch.Tensor]) -> SeedReadout:
    """The `SeedReadout` of every instance of `params`."""
    profile, similarity, key, faithful = {}, {}, {}, {}
    for name in irreps.names:
        profile[name] = irrep_profile(params, irreps.projectors[name])
        similarity[name] = logit_similarity(params, irreps.traces[name])
        key[name] = key_components(similarity[name])
        faithful[name] = torch.tensor([irreps.characters[name].is_faithful(row) for row in key[name]])
    left, right = total_embeddings(params)
    shares, weights = neuron_cells(torch.cat([left, right], dim=2), irreps.cells)
    top = torch.nn.functional.one_hot(shares.argmax(dim=2), shares.shape[2]).double()
    cells = irrep_profile(params, irreps.cells).embedding
    return SeedReadout(profile, similarity, key, faithful, cells,
                       purity=(shares.max(dim=2).values * weights).sum(dim=1),
                       top_cells=(top * weights[:, :, None]).sum(dim=1))


def restrict_to_key(irreps: PairIrreps, params: dict[str, torch.Tensor], key: torch.Tensor,
                    group: str) -> dict[str, dict[str, torch.Tensor]]:
    """Losses on both tables ({"full" | "restricted" | "excluded": {group: (B,)}}) with the
    embeddings whole, restricted to the components `key` marks ((B, K) bool, components of
    `group`) and without them."""
    return restriction_losses(params, irreps.projectors[group], key, irreps.tables)


@dataclass
class CosetReading:
    """The coset readout of a batch of seeds under one group.

    Attributes:
        observed: (B,) share of neuron variance in coset neurons (L and R together).
        matched: (B,) the same for random functions with each neuron's isotypic profile.
        orders: the subgroup orders; by_order: (B, len(orders)) the share of each seed's neuron
            variance in coset neurons whose largest fitting subgroup (`coarsest_cosets`) has each
            order.
    """

    observed: torch.Tensor
    matched: torch.Tensor
    orders: list[int]
    by_order: torch.Tensor


def read_cosets(irreps: PairIrreps, params: dict[str, torch.Tensor], group: str, threshold: float,
                generator: torch.Generator) -> CosetReading:
    """The `CosetReading` of every instance of `params` under `group` (see the module docstring)."""
    left, right = total_embeddings(params)
    right_cosets, orders = irreps.partitions[(group, "right")]
    left_cosets, _ = irreps.partitions[(group, "left")]
    projectors = irreps.projectors[group]
    observed, matched, by_order = [], [], []
    order_list = sorted(set(orders.tolist()))
    for functions, labels in ((left, right_cosets), (right, left_cosets)):
        variance = functions.var(dim=1)
        observed.append((coset_neuron_share(functions, labels, threshold), variance.sum(dim=1)))
        drawn = matched_random_functions(functions, projectors, generator)
        matched.append((coset_neuron_share(drawn, labels, threshold), drawn.var(dim=1).sum(dim=1)))
        winner = coarsest_cosets(functions, labels, threshold)
        fitted = variance * (winner >= 0).double()
        by_order.append(torch.stack([(fitted * (orders[winner.clamp(min=0)] == order).double()).sum(dim=1)
                                     for order in order_list], dim=1))
    total = observed[0][1] + observed[1][1]

    def pooled(parts):
        return (parts[0][0] * parts[0][1] + parts[1][0] * parts[1][1]) / (parts[0][1] + parts[1][1])

    return CosetReading(pooled(observed), pooled(matched), order_list, (by_order[0] + by_order[1]) / total[:, None])


__all__ = ["CosetReading", "PairIrreps", "SeedReadout", "pair_irreps", "read_cosets", "read_seeds", "restrict_to_key"]
