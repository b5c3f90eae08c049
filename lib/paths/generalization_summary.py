"""The study's five generalization tests before and after fine-tuning, and what they show: the
on-path loss on large graphs against small ones, the gap between the two on-path tests with its
interval, the split by target id, whether fine-tuning raised the any-target MSE (chapter 3).

`summarize_generalization` builds the `GeneralizationSummary` from the tests' scores of
`lib.paths.generalization_tests`, one named field per test; it draws no random numbers.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import torch

from lib.paths.generalization_tests import TESTS, GeneralizationResult, GeneralizationTest, Scale
from lib.paths.target_kind_scores import KindScore, TargetKindScores


def _mean_or_nan(values: torch.Tensor) -> float:
    return float(values.mean()) if len(values) else math.nan


@dataclasses.dataclass(frozen=True)
class TestComparison:
    """One generalization test, scored on the pre-trained and on the fine-tuned model.

    Attributes:
        test: the test.
        scale: the run's scale, at which the test drew its graphs (`n_min`..`n_max`) and its
            targets (ids 2..`target_id_max`).
        before, after: the two models' raw scores (with predictions, for the figures).
        kinds_before, kinds_after: their errors by kind of target.
    """

    __test__ = False  # not a pytest test class, despite its name

    test: GeneralizationTest
    scale: Scale
    before: GeneralizationResult
    after: GeneralizationResult
    kinds_before: TargetKindScores
    kinds_after: TargetKindScores

    @property
    def mse_before(self) -> float:
        return self.before.mse

    @property
    def mse_after(self) -> float:
        return self.after.mse

    @property
    def accuracy_before(self) -> float:
        return self.before.accuracy

    @property
    def accuracy_after(self) -> float:
        return self.after.accuracy

    @property
    def n_max(self) -> int:
        """Most vertices of the test's graphs (the fewest: `scale.n_min`)."""
        return self.test.n_max(self.scale)

    @property
    def target_id_max(self) -> int:
        """Largest vertex id of the test's targets (ids 2..this)."""
        return self.test.target_id_max(self.scale)

    @property
    def share_unreachable(self) -> float:
        """Share of the test's graphs whose target is unreachable."""
        return self.after.share_unreachable

    def record(self) -> dict:
        """The test's entry in chapter 3's results JSON: the fine-tuned score and the pre-trained MSE."""
        return {**self.after.record(), "n_min": self.scale.n_min, "n_max": self.n_max,
                "target_id_max": self.target_id_max,
                "mse_pretrained": self.before.mse, "accuracy_pretrained": self.before.accuracy}


@dataclasses.dataclass(frozen=True)
class MseGap:
    """One test's MSE minus another's, with a 95% interval.

    The two tests draw independent graphs, so the standard error of the difference is
    sqrt(var_a / n_a + var_b / n_b), var the variance of a test's squared errors (normal
    approximation to the difference of two means).
    """

    difference: float
    low: float
    high: float

    @classmethod
    def between(cls, higher: GeneralizationResult, lower: GeneralizationResult) -> MseGap:
        """MSE of `higher` minus MSE of `lower`."""
        a, b = higher.squared_errors, lower.squared_errors
        difference = float(a.mean() - b.mean())
        error = math.sqrt(float(a.var()) / len(a) + float(b.var()) / len(b))
        return cls(difference, difference - 1.96 * error, difference + 1.96 * error)

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


@dataclasses.dataclass(frozen=True)
class TargetIdSplit:
    """A test's examples split by the target's vertex id: up to `id_max` or above.

    Attributes:
        id_max: the largest id of a "small" target (the cap of fine-tuning targets).
        count_small, mse_small: examples with target id <= id_max, and their MSE.
        count_large, mse_large: the others (NaN MSE when there are none).
    """

    id_max: int
    count_small: int
    mse_small: float
    count_large: int
    mse_large: float

    @classmethod
    def of(cls, result: GeneralizationResult, id_max: int) -> TargetIdSplit:
        squared, small = result.squared_errors, result.targets <= id_max
        return cls(id_max, int(small.sum()), _mean_or_nan(squared[small]), int((~small).sum()),
                   _mean_or_nan(squared[~small]))


@dataclasses.dataclass(frozen=True)
class GeneralizationSummary:
    """The five tests before and after fine-tuning, and what the chapter's text concludes.

    Attributes:
        onpath_small_target, onpath_target, any_target_small_graphs,
        any_small_target_large_graphs, any_target_large_graphs: the five tests of `TESTS`.
        on_path_small_graphs: the fine-tuned model on on-path targets other than vertex 2 in the
            small fine-tuning graphs (`FinetuningSummary.kinds_after.on_path`), beside which
            `onpath_target.kinds_after.on_path` is the same on large graphs.
        on_path_loss_grows: the on-path MSE (vertex 2 excluded) is higher on large graphs than
            on the small fine-tuning graphs; False when it is not or either was not measured.
        onpath_gap: MSE of the on-path test with any target minus that of the test with small
            target ids, with a 95% interval (the post: 0.1451 - 0.1020).
        onpath_target_ids: the on-path test with any target, split by whether the target's
            vertex id is small (a fine-tuning target id) or not.
        any_target_large_mse_rose: fine-tuning raised the MSE of "any target in large graphs".
    """

    onpath_small_target: TestComparison
    onpath_target: TestComparison
    any_target_small_graphs: TestComparison
    any_small_target_large_graphs: TestComparison
    any_target_large_graphs: TestComparison
    on_path_small_graphs: KindScore
    on_path_loss_grows: bool
    onpath_gap: MseGap
    onpath_target_ids: TargetIdSplit
    any_target_large_mse_rose: bool

    @property
    def tests(self) -> tuple[TestComparison, ...]:
        """The five tests in the order of `TESTS`."""
        return tuple(getattr(self, name) for name in TESTS)

    def record(self) -> list[dict]:
        """The "generalization" entry of chapter 3's results JSON."""
        return [test.record() for test in self.tests]


def summarize_generalization(before: Sequence[GeneralizationResult], after: Sequence[GeneralizationResult],
                             scale: Scale, *, on_path_small_graphs: KindScore) -> GeneralizationSummary:
    """The `GeneralizationSummary` of the five tests' scores (chapter 3).

    Args:
        before, after: the pre-trained and fine-tuned model's results, in the order of `TESTS`.
        scale: the run's scale (the tests' graph sizes and target ids, and the small-target bound).
        on_path_small_graphs: the fine-tuned model's on-path score on the fine-tuning graphs.

    Raises:
        ValueError: if `before` or `after` is not one result per test in the order of `TESTS`.
    """
    for results in (before, after):
        if [r.test.name for r in results] != list(TESTS):
            raise ValueError(f"Expected one result per test in the order {list(TESTS)}; "
                             f"got {[r.test.name for r in results]}.")
    tests = {b.test.name: TestComparison(
        b.test, scale, b, a, TargetKindScores.from_by_kind(b.by_kind),
        TargetKindScores.from_by_kind(a.by_kind)) for b, a in zip(before, after)}
    on_path_large = tests["onpath_target"].kinds_after.on_path
    return GeneralizationSummary(
        **tests,
        on_path_small_graphs=on_path_small_graphs,
        on_path_loss_grows=bool(on_path_large.mse > on_path_small_graphs.mse),  # False if either is NaN
        onpath_gap=MseGap.between(tests["onpath_target"].after, tests["onpath_small_target"].after),
        onpath_target_ids=TargetIdSplit.of(tests["onpath_target"].after, scale.small_n_max),
        any_target_large_mse_rose=(tests["any_target_large_graphs"].mse_after
                                   > tests["any_target_large_graphs"].mse_before),
    )


__all__ = [
    "GeneralizationSummary", "MseGap", "summarize_generalization", "TargetIdSplit", "TestComparison",
]
