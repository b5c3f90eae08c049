"""Each generalization test's MSE beside the model-free baselines at three scales and the study's
value: how far the model sits from answering d(1,2), and how much of the gap to the study graph
size and the unreachable label account for (chapter 3).

The baselines are scored by `lib.paths.baselines` at the book's scale, at the study's (graphs up
to 15 vertices, unreachable label 15) and on the book's graphs with the study's label;
`compare_with_baselines` sets them beside the model's MSE over seeds (`lib.paths.seed_spread`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from lib.paths.baselines import BaselineScore
from lib.paths.generalization_tests import TESTS
from lib.paths.seed_spread import SeedSpread


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


__all__ = ["BaselineComparison", "compare_with_baselines"]
