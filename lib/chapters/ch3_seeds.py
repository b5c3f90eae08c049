"""Chapter 3's one-model claims read over the replicate seeds (chapter 3).

The chapter's target-kind table, the shares of answers equal to d(1,2), the per-size check of
on-path targets and the length study were first read on one model. The replicate seeds of
`lib.paths.seed_replicates` (pre-training and fine-tuning again from other seeds) record each
test's errors by kind of target and, through the chapter's `Analysis`, the per-size rows and
the depth check of each seed's base model; the length-study model is trained again from other
seeds in the notebook. This module reads them together:

* `kind_spread` / `kind_spread_table`: each test's errors by kind of target over the seeds;
* `KindContrast`: on the any-target test on large graphs, on-path targets against the rest, and
  the shares answering d(1,2), seed by seed;
* `SizeTrendSeeds`: the per-size check (`lib.chapters.ch3_baselines.SizeTrend`) in every seed;
* `LengthSeeds`: the length study's headline numbers over its seeds;
* `seed_analysis`: what each seed's models are measured on beyond the five tests (the per-size
  rows and the depth check), handed to `lib.paths.seed_replicates`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from lib.book.tables import markdown_table
from lib.chapters.ch3_baselines import SeedSpread, SizeTrend, size_trend
from lib.chapters.ch3_length import LengthSummary
from lib.paths.baselines import onpath_by_graph_size
from lib.paths.generalization_tests import TARGET_KINDS, TESTS, Scale
from lib.paths.length_frequency import FrequencyComparison
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


def kind_spread(seed_runs: Sequence[dict], test: str, kind: str, field: str = "mse") -> SeedSpread | None:
    """`field` of one kind of target on one test over the seed records that have that kind
    (None when no seed has it)."""
    values = tuple(run["test_by_kind"][test][kind][field] for run in seed_runs
                   if kind in run["test_by_kind"][test])
    return SeedSpread(values) if values else None


def _spread_cell(spread: SeedSpread | None) -> str:
    if spread is None:
        return "n/a"
    if len(spread.values) == 1:
        return f"{spread.values[0]:.3g}"
    return f"{spread.mean:.3g} ({spread.low:.3g} to {spread.high:.3g})"


def kind_spread_table(seed_runs: Sequence[dict]) -> str:
    """Markdown table: each test's MSE by kind of target, mean (min to max) over the seeds."""
    rows = [[test.title, *(kind_spread(seed_runs, name, kind) for kind in TARGET_KINDS)]
            for name, test in TESTS.items()]
    return markdown_table(["test", *TARGET_KINDS], rows,
                          formats={column: _spread_cell for column in range(1, len(TARGET_KINDS) + 1)})


@dataclasses.dataclass(frozen=True)
class KindContrast:
    """One test's on-path targets against the targets fine-tuning never showed, over the seeds.

    Attributes:
        test: the test's name.
        on_path, off_path, unreachable: MSE of each kind over the seeds (None when absent).
        off_path_answers_1_2, unreachable_answers_1_2: share of rounded predictions equal to
            d(1,2) (or the unreachable label when 2 cannot be reached) over the seeds.
        seeds_far_better: seeds in which the on-path MSE is more than `factor` times lower than
            both the off-path and the unreachable MSE.
        seeds: seeds read.
        factor: that factor.
    """

    test: str
    on_path: SeedSpread | None
    off_path: SeedSpread | None
    unreachable: SeedSpread | None
    off_path_answers_1_2: SeedSpread | None
    unreachable_answers_1_2: SeedSpread | None
    seeds_far_better: int
    seeds: int
    factor: float

    def record(self) -> dict:
        def rec(spread):
            return None if spread is None else spread.record()
        return {"test": self.test, "on_path_mse": rec(self.on_path), "off_path_mse": rec(self.off_path),
                "unreachable_mse": rec(self.unreachable),
                "off_path_answers_1_2_distance": rec(self.off_path_answers_1_2),
                "unreachable_answers_1_2_distance": rec(self.unreachable_answers_1_2),
                "seeds_far_better": self.seeds_far_better, "seeds": self.seeds, "factor": self.factor}


def kind_contrast(seed_runs: Sequence[dict], test: str = "any_target_large_graphs",
                  factor: float = 10.0) -> KindContrast:
    """The `KindContrast` of `test` over the seed records."""
    on, off, unreachable = TARGET_KINDS[1], TARGET_KINDS[2], TARGET_KINDS[3]
    far_better = 0
    for run in seed_runs:
        kinds = run["test_by_kind"][test]
        if on in kinds and off in kinds and unreachable in kinds:
            far_better += factor * kinds[on]["mse"] < min(kinds[off]["mse"], kinds[unreachable]["mse"])
    return KindContrast(test, kind_spread(seed_runs, test, on), kind_spread(seed_runs, test, off),
                        kind_spread(seed_runs, test, unreachable),
                        kind_spread(seed_runs, test, off, "answers_1_2_distance"),
                        kind_spread(seed_runs, test, unreachable, "answers_1_2_distance"),
                        int(far_better), len(seed_runs), factor)


@dataclasses.dataclass(frozen=True)
class SizeTrendSeeds:
    """The per-size check of on-path targets other than vertex 2 in every seed.

    Attributes:
        trends: one `SizeTrend` per seed, in seed order.
    """

    trends: tuple[SizeTrend, ...]

    @property
    def seeds(self) -> int:
        return len(self.trends)

    @property
    def mse_small(self) -> SeedSpread:
        """MSE on the fine-tuning sizes over the seeds."""
        return SeedSpread(tuple(t.mse_small for t in self.trends))

    @property
    def mse_large_small_ids(self) -> SeedSpread:
        """MSE on larger sizes with the fine-tuning target ids, over the seeds."""
        return SeedSpread(tuple(t.mse_large_small_ids for t in self.trends))

    @property
    def mse_large_large_ids(self) -> SeedSpread:
        """MSE on larger sizes with target ids fine-tuning never used, over the seeds."""
        return SeedSpread(tuple(t.mse_large_large_ids for t in self.trends))

    @property
    def growth_small_ids(self) -> SeedSpread:
        """MSE on larger sizes (fine-tuning ids) over MSE on the fine-tuning sizes, per seed."""
        return SeedSpread(tuple(t.growth_small_ids for t in self.trends))

    @property
    def seeds_not_staying_right(self) -> int:
        """Seeds in which the MSE with fine-tuning ids is more than twice as high on larger graphs."""
        return sum(not t.stays_right_small_ids for t in self.trends)

    @property
    def seeds_new_ids_worse(self) -> int:
        """Seeds in which targets with new ids score a higher MSE than those with fine-tuning ids."""
        return sum(t.mse_large_large_ids > t.mse_large_small_ids for t in self.trends)

    def record(self) -> dict:
        return {"per_seed": [t.record() for t in self.trends], "mse_small": self.mse_small.record(),
                "mse_large_small_ids": self.mse_large_small_ids.record(),
                "mse_large_large_ids": self.mse_large_large_ids.record(),
                "growth_small_ids": self.growth_small_ids.record(),
                "seeds_not_staying_right": self.seeds_not_staying_right,
                "seeds_new_ids_worse": self.seeds_new_ids_worse, "seeds": self.seeds}


def size_trends_over_seeds(seed_runs: Sequence[dict], small_n_max: int,
                           key: str = "onpath_by_graph_size") -> SizeTrendSeeds:
    """`SizeTrendSeeds` from the per-size rows each seed's analysis recorded under `key`."""
    return SizeTrendSeeds(tuple(size_trend(run["analysis"][key], small_n_max) for run in seed_runs))


@dataclasses.dataclass(frozen=True)
class LengthSeeds:
    """The length study's headline numbers over the seeds of its model.

    Attributes:
        seeds: the seeds, in order (the first is the model the chapter's figures show).
        summaries: one `LengthSummary` per seed.
    """

    seeds: tuple[int, ...]
    summaries: tuple[LengthSummary, ...]

    @property
    def top_prediction(self) -> SeedSpread:
        """The highest mean prediction of any cell, over the seeds."""
        return SeedSpread(tuple(s.top_prediction for s in self.summaries))

    @property
    def training_sizes_mse(self) -> SeedSpread:
        return SeedSpread(tuple(s.training_sizes.mse for s in self.summaries))

    @property
    def larger_graphs_seen_distances_mse(self) -> SeedSpread:
        return SeedSpread(tuple(s.larger_graphs_seen_distances.mse for s in self.summaries))

    @property
    def longer_distances_mse(self) -> SeedSpread:
        return SeedSpread(tuple(s.longer_distances.mse for s in self.summaries))

    @property
    def seeds_stopping_within_a_hop(self) -> int:
        """Seeds whose highest mean prediction stays below the longest training distance + 1."""
        return sum(s.top_prediction < s.split.distance_train_max + 1 for s in self.summaries)

    @property
    def seeds_longer_ten_times_worse(self) -> int:
        """Seeds whose MSE on longer distances is more than 10 times that on the training sizes."""
        return sum(s.longer_distances.mse > 10 * s.training_sizes.mse for s in self.summaries)

    def record(self) -> dict:
        return {"seeds": list(self.seeds), "top_prediction": self.top_prediction.record(),
                "training_sizes_mse": self.training_sizes_mse.record(),
                "larger_graphs_seen_distances_mse": self.larger_graphs_seen_distances_mse.record(),
                "longer_distances_mse": self.longer_distances_mse.record(),
                "seeds_stopping_within_a_hop": self.seeds_stopping_within_a_hop,
                "seeds_longer_ten_times_worse": self.seeds_longer_ten_times_worse}


def all_seeds(count: int, total: int) -> bool:
    """Whether a count of seeds is every seed (and there is at least one)."""
    return total > 0 and count == total


def seed_claims(size_seeds: SizeTrendSeeds, contrast: KindContrast, length_seeds: LengthSeeds,
                frequency: FrequencyComparison) -> dict[str, bool]:
    """Whether each over-seeds claim of chapter 3's text holds in this run: claim -> holds.

    Recorded beside `lib.chapters.ch3_results.chapter_claims` and asserted nowhere (each is an
    outcome of training). The evidence of each is in the results JSON (`onpath_by_graph_size_over_seeds`,
    `kind_contrast_over_seeds`, `length_over_seeds`, `length_frequency`).
    """
    return {
        "on-path targets with fine-tuning ids score more than twice the fine-tuning sizes' MSE on larger "
        "graphs in every seed": all_seeds(size_seeds.seeds_not_staying_right, size_seeds.seeds),
        "on the any-target test on large graphs, on-path targets score more than 10 times lower MSE than "
        "off-path and unreachable ones in every seed": all_seeds(contrast.seeds_far_better, contrast.seeds),
        "longer distances are more than 10 times worse than the training sizes in every length-study seed":
            all_seeds(length_seeds.seeds_longer_ten_times_worse, len(length_seeds.seeds)),
        "predictions stop within a hop of the longest training path in every length-study seed":
            all_seeds(length_seeds.seeds_stopping_within_a_hop, len(length_seeds.seeds)),
        "the under-prediction starts inside the training range in every model":
            all_seeds(frequency.inside_range_count, len(frequency.models)),
        "one training share separates the distances predicted within half a hop from the under-predicted ones":
            frequency.share_separates,
    }


__all__ = [
    "KindContrast", "LengthSeeds", "SizeTrendSeeds", "all_seeds", "kind_contrast", "kind_spread",
    "kind_spread_table", "seed_analysis", "seed_claims", "size_trends_over_seeds",
]
