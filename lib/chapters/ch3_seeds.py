"""Chapter 3's one-model claims read over the replicate seeds: the table and the claims (chapter 3).

The replicate seeds of `lib.paths.seed_replicates` (pre-training and fine-tuning again from
other seeds) are read by `lib.paths.target_kind_scores` (errors by kind of target,
`KindContrast`), `lib.paths.size_trend` (`SizeTrendSeeds`), `lib.paths.length_summary`
(`LengthSeeds`) and `lib.paths.under_prediction_onsets`; what each seed measures beyond the five
tests is `lib.paths.replicate_analysis.seed_analysis`. This module holds the table of each
test's errors by kind of target over the seeds (`kind_spread_table`) and the chapter's claims
over the seeds (`seed_claims`, claim -> holds).
"""

from __future__ import annotations

from collections.abc import Sequence

from lib.book.tables import markdown_table
from lib.paths.generalization_tests import TARGET_KINDS, TESTS
from lib.paths.length_frequency import FrequencyComparison
from lib.paths.length_summary import LengthSeeds
from lib.paths.seed_spread import SeedSpread
from lib.paths.size_trend import SizeTrendSeeds
from lib.paths.target_kind_scores import KindContrast, kind_spread


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
        "onpath_finetuning_ids_over_2x_worse_on_larger_graphs_every_seed": all_seeds(size_seeds.seeds_not_staying_right, size_seeds.seeds),
        "onpath_10x_better_than_offpath_on_large_any_target_every_seed": all_seeds(contrast.seeds_far_better, contrast.seeds),
        "longer_distances_10x_worse_every_length_seed":
            all_seeds(length_seeds.seeds_longer_ten_times_worse, len(length_seeds.seeds)),
        "predictions_stop_within_a_hop_every_length_seed":
            all_seeds(length_seeds.seeds_stopping_within_a_hop, len(length_seeds.seeds)),
        "under_prediction_starts_inside_training_range_every_model":
            all_seeds(frequency.inside_range_count, len(frequency.models)),
        "one_training_share_separates_predicted_from_under_predicted":
            frequency.share_separates,
    }


__all__ = ["all_seeds", "kind_spread_table", "seed_claims"]
