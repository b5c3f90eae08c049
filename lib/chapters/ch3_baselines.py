"""Chapter 3's tests against baselines, over seeds, and per graph size: what the prose reads.

Three questions of chapter 3 are answered here from numbers of the run:

* How far does each test's MSE sit from two model-free baselines (`lib.paths.baselines`), and
  do graph size and the unreachable label account for the gap between this book's any-target
  MSEs and the study's? (`BaselineComparison`: the baselines at the book's scale, at the study's,
  and on the book's graphs with the study's unreachable label.)
* How much do the tests move between seeds of pre-training and fine-tuning? (`SeedSpread`, and
  `position_against`, which states an ordering with the study only when every seed agrees.)
* Does the fine-tuned answer on on-path targets other than vertex 2 stay right as graphs grow?
  (`size_trend` over `lib.paths.baselines.onpath_by_graph_size` rows.)
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

from lib.book.tables import markdown_table
from lib.paths.baselines import BaselineScore
from lib.paths.generalization_tests import TESTS


@dataclasses.dataclass(frozen=True)
class SeedSpread:
    """One test's MSE over the seeds: the values in seed order, mean, sample SD, min, max.

    Chapter 3 cites a spread through `lib.book.record.Record.spread(key, spread.values)`."""

    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def sd(self) -> float:
        if len(self.values) < 2 or any(math.isnan(v) for v in self.values):
            return math.nan
        return statistics.stdev(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def record(self) -> dict:
        return {"values": list(self.values), "mean": self.mean, "sd": self.sd, "min": self.low, "max": self.high}


def position_against(spread: SeedSpread, published: float) -> bool | None:
    """Where the seeds sit against the study's value: True above it in every seed, False below it
    in every seed, None on both sides (no ordering can be stated)."""
    if spread.low > published:
        return True
    if spread.high < published:
        return False
    return None


@dataclasses.dataclass(frozen=True)
class OrderCount:
    """In how many of `seeds` seeds one test's MSE was higher than another's."""

    higher: int
    seeds: int


def count_higher(spreads: dict[str, SeedSpread], higher: str, lower: str) -> OrderCount:
    """Seeds (paired by position) in which test `higher` scored a higher MSE than test `lower`."""
    pairs = list(zip(spreads[higher].values, spreads[lower].values))
    return OrderCount(sum(a > b for a, b in pairs), len(pairs))


def spread_by_test(seed_runs: Sequence[dict]) -> dict[str, SeedSpread]:
    """Each test's `SeedSpread` over the records of `lib.paths.seed_replicates.SeedRun`."""
    return {name: SeedSpread(tuple(run["test_mse"][name] for run in seed_runs)) for name in TESTS}


@dataclasses.dataclass(frozen=True)
class BaselineComparison:
    """One test: the model over seeds beside the two baselines at three scales and the study.

    Attributes:
        test: the test's name; title: its title.
        model: the fine-tuned model's MSE over seeds (book's scale).
        book, study, book_graphs_study_label: the baselines at the book's scale, at the study's
            (graphs up to 15, unreachable label 15), and on the book's graphs with label 15.
        published: the study's MSE.
    """

    test: str
    title: str
    model: SeedSpread
    book: BaselineScore
    study: BaselineScore
    book_graphs_study_label: BaselineScore
    published: float

    @property
    def ratio_to_baseline(self) -> SeedSpread:
        """The model's MSE over the distance-1-2 baseline's, per seed (book's scale)."""
        return SeedSpread(tuple(v / self.book.mse_distance_1_2 for v in self.model.values))

    @property
    def study_ratio_to_baseline(self) -> float:
        """The study's MSE over the distance-1-2 baseline's at the study's scale."""
        return self.published / self.study.mse_distance_1_2

    @property
    def share_of_gap_from_scale(self) -> float:
        """How much of the gap between the study's MSE and this book's mean the baseline moves by
        when the scale changes from the book's to the study's: (baseline there - baseline here) /
        (study - book)."""
        return (self.study.mse_distance_1_2 - self.book.mse_distance_1_2) / (self.published - self.model.mean)

    @property
    def share_of_gap_from_label(self) -> float:
        """The same with only the unreachable label changed (the book's graphs, label 15)."""
        return ((self.book_graphs_study_label.mse_distance_1_2 - self.book.mse_distance_1_2)
                / (self.published - self.model.mean))

    @property
    def scale_accounts(self) -> bool:
        """The study's MSE / baseline ratio lies inside the seeds' range of this book's ratio."""
        ratio = self.ratio_to_baseline
        return ratio.low <= self.study_ratio_to_baseline <= ratio.high

    def record(self) -> dict:
        return {"test": self.test, "model": self.model.record(), "baseline_book": dataclasses.asdict(self.book),
                "baseline_study": dataclasses.asdict(self.study),
                "baseline_book_graphs_study_label": dataclasses.asdict(self.book_graphs_study_label),
                "published_mse": self.published, "ratio_to_baseline": self.ratio_to_baseline.record(),
                "study_ratio_to_baseline": self.study_ratio_to_baseline, "scale_accounts": self.scale_accounts,
                "share_of_gap_from_scale": self.share_of_gap_from_scale,
                "share_of_gap_from_label": self.share_of_gap_from_label}


def compare_with_baselines(spreads: dict[str, SeedSpread], book: Sequence[BaselineScore],
                           study: Sequence[BaselineScore], book_graphs_study_label: Sequence[BaselineScore]
                           ) -> list[BaselineComparison]:
    """One `BaselineComparison` per test of `TESTS`, in order."""
    by_name = [{score.test: score for score in scores} for scores in (book, study, book_graphs_study_label)]
    return [BaselineComparison(name, test.title, spreads[name], by_name[0][name], by_name[1][name], by_name[2][name],
                               test.published_mse) for name, test in TESTS.items()]


def baseline_table(comparisons: Sequence[BaselineComparison]) -> str:
    """Markdown table: the model over seeds, both baselines at both scales, and the study."""
    return markdown_table(
        ["test", "fine-tuned model, mean (min to max) over seeds", "answer d(1,2): here", "mean label: here",
         "model / d(1,2) here", "answer d(1,2): study's scale", "mean label: study's scale",
         "d(1,2), book's graphs, label 15", "the study's MSE", "study / d(1,2) at its scale"],
        [[c.title, f"{c.model.mean:.3g} ({c.model.low:.3g} to {c.model.high:.3g})", c.book.mse_distance_1_2,
          c.book.mse_mean_label, f"{c.ratio_to_baseline.low:.2f} to {c.ratio_to_baseline.high:.2f}",
          c.study.mse_distance_1_2, c.study.mse_mean_label, c.book_graphs_study_label.mse_distance_1_2,
          c.published, f"{c.study_ratio_to_baseline:.2f}"] for c in comparisons])


def vertex_2_table(finetuning_share: float, comparisons: Sequence[BaselineComparison]) -> str:
    """Markdown table: among on-path targets (vertex 2 included), the share that are vertex 2."""
    rows = [["fine-tuning data", finetuning_share, "n/a"]]
    rows += [[c.title, c.book.share_vertex_2_of_on_path, c.study.share_vertex_2_of_on_path] for c in comparisons]
    return markdown_table(["data", "share of on-path targets that are vertex 2: here",
                           "at the study's scale"], rows)


@dataclasses.dataclass(frozen=True)
class SizeTrend:
    """The fine-tuned model's MSE on on-path targets other than vertex 2, by graph size.

    Graphs larger than the fine-tuning graphs also bring target ids that fine-tuning never used
    (above `small_n_max`), so the larger sizes are also read with the ids held to the fine-tuning
    ones: `mse_large_small_ids` against `mse_small` changes the graph size alone.

    Attributes:
        rows: `onpath_by_graph_size` rows (n_vertices, count, mse, accuracy, and the split by
            target id, `small_id` and `large_id`).
        small_n_max: the largest fine-tuning graph (and target id).
        mse_small, mse_large: pooled MSE over sizes up to small_n_max and above it.
        count_small, count_large: the targets behind each.
        mse_large_small_ids, count_large_small_ids: sizes above small_n_max, target ids up to it.
        mse_large_large_ids, count_large_large_ids: sizes above small_n_max, larger target ids.
    """

    rows: tuple[dict, ...]
    small_n_max: int
    mse_small: float
    mse_large: float
    count_small: int
    count_large: int
    mse_large_small_ids: float = math.nan
    count_large_small_ids: int = 0
    mse_large_large_ids: float = math.nan
    count_large_large_ids: int = 0

    @property
    def stays_right(self) -> bool:
        """The MSE on sizes beyond fine-tuning is at most twice that on the fine-tuning sizes."""
        return self.mse_large <= 2 * self.mse_small

    @property
    def stays_right_small_ids(self) -> bool:
        """The same with the larger sizes' target ids held to the fine-tuning ones."""
        return self.mse_large_small_ids <= 2 * self.mse_small

    @property
    def growth_small_ids(self) -> float:
        """MSE on larger sizes (fine-tuning ids) over MSE on the fine-tuning sizes."""
        return self.mse_large_small_ids / self.mse_small if self.mse_small > 0 else math.nan

    def record(self) -> dict:
        return {"rows": list(self.rows), "small_n_max": self.small_n_max, "mse_small": self.mse_small,
                "mse_large": self.mse_large, "count_small": self.count_small, "count_large": self.count_large,
                "mse_large_small_ids": self.mse_large_small_ids, "count_large_small_ids": self.count_large_small_ids,
                "mse_large_large_ids": self.mse_large_large_ids, "count_large_large_ids": self.count_large_large_ids,
                "stays_right": self.stays_right, "stays_right_small_ids": self.stays_right_small_ids,
                "growth_small_ids": self.growth_small_ids}


def _pooled(parts: Sequence[dict]) -> tuple[float, int]:
    count = sum(p["count"] for p in parts)
    return (sum(p["mse"] * p["count"] for p in parts if p["count"]) / count if count else math.nan), count


def size_trend(rows: Sequence[dict], small_n_max: int) -> SizeTrend:
    """Pool `onpath_by_graph_size` rows into fine-tuning sizes and larger sizes, and the larger
    sizes by target id (rows without the id split count as ids up to `small_n_max`)."""
    small, large = ([r for r in rows if r["n_vertices"] <= small_n_max],
                    [r for r in rows if r["n_vertices"] > small_n_max])
    (mse_small, count_small), (mse_large, count_large) = _pooled(small), _pooled(large)
    empty = {"count": 0, "mse": math.nan}
    mse_small_ids, count_small_ids = _pooled([r.get("small_id", r) for r in large])
    mse_large_ids, count_large_ids = _pooled([r.get("large_id", empty) for r in large])
    return SizeTrend(tuple(rows), small_n_max, mse_small, mse_large, count_small, count_large,
                     mse_small_ids, count_small_ids, mse_large_ids, count_large_ids)


__all__ = [
    "BaselineComparison", "OrderCount", "SeedSpread", "count_higher", "SizeTrend", "baseline_table",
    "compare_with_baselines", "position_against", "size_trend", "spread_by_test", "vertex_2_table",
]
