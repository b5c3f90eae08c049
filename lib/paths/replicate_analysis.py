"""What is measured on each replicate seed's models beyond the five tests: the per-size check of
on-path targets and the depth check of the base model, as an `Analysis` of
`lib.paths.seed_replicates` (chapter 3).
"""

from __future__ import annotations

from lib.paths.baselines import onpath_by_graph_size
from lib.paths.generalization_tests import TESTS, Scale
from lib.paths.length_generalization import own_graphs_by_distance
from lib.paths.sampler import SamplerOptions
from lib.paths.seed_replicates import Analysis


def seed_analysis(sampler: SamplerOptions, scale: Scale, *, graphs_per_size: int, per_cell: int, seed: int,
                  max_proposals: int) -> Analysis:
    """What chapter 3 measures on each seed's models beyond the five tests, as an `Analysis` of
    `lib.paths.seed_replicates` (called with the seed's base model and its fine-tuned model):

    * "onpath_by_graph_size": the fine-tuned model on on-path targets other than vertex 2, one
      graph size at a time (`lib.paths.baselines.onpath_by_graph_size`, `graphs_per_size` graphs
      per size; read by `size_trends_over_seeds`);
    * "depth_check": the base model on its own largest graphs (those of `sampler`), one cell per
      true distance (`lib.paths.length_generalization.own_graphs_by_distance`, at most `per_cell`
      graphs per cell; the length study's depth check), as cell records.

    Both draw their graphs from `seed`, so every seed's models meet the same graphs.
    """
    def analyse(base_model, tuned_model) -> dict:
        return {"onpath_by_graph_size": onpath_by_graph_size(tuned_model, TESTS["onpath_target"], scale,
                                                             graphs_per_size, seed),
                "depth_check": [c.record() for c in own_graphs_by_distance(
                    base_model, sampler, per_cell=per_cell, seed=seed, max_proposals=max_proposals)]}
    return analyse


__all__ = ["seed_analysis"]
