"""A model's errors by kind of target (vertex 2, on a shortest 1-2 path, off it, unreachable), and
the same over the replicate seeds (chapter 3).

`TargetKindScores` holds one `KindScore` per kind of `lib.paths.generalization_tests.TARGET_KINDS`
for one model on one set of graphs (a kind that did not occur is `KindScore.absent()`: count 0,
every mean NaN); `kind_spread` reads one kind's score over the seed records of
`lib.paths.seed_replicates`, and `KindContrast` sets on-path targets against the targets
fine-tuning never showed, seed by seed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from lib.paths.generalization_tests import TARGET_KINDS
from lib.paths.seed_spread import SeedSpread


@dataclasses.dataclass(frozen=True)
class KindScore:
    """A model's errors on the examples whose target is of one kind (see `TARGET_KINDS`).

    Attributes:
        count: number of such examples; 0 when the kind did not occur (then every other field
            is NaN).
        mse: mean squared error of the prediction.
        accuracy: share of rounded predictions equal to the label.
        mean_label, mean_prediction: means of the true and predicted distances.
        answers_1_2_distance: share of rounded predictions equal to the graph's 1-2 distance
            (the pre-training answer).
    """

    count: int
    mse: float
    accuracy: float
    mean_label: float
    mean_prediction: float
    answers_1_2_distance: float

    @classmethod
    def absent(cls) -> KindScore:
        """The score of a kind that did not occur: count 0, every mean NaN."""
        return cls(0, math.nan, math.nan, math.nan, math.nan, math.nan)

    @property
    def present(self) -> bool:
        return self.count > 0


#: Field of `TargetKindScores` for each name of `TARGET_KINDS`, in that order.
KIND_FIELDS = dict(zip(TARGET_KINDS, ("vertex_2", "on_path", "off_path", "unreachable"), strict=True))


@dataclasses.dataclass(frozen=True)
class TargetKindScores:
    """`KindScore` of each kind of target, for one model on one set of graphs.

    Attributes:
        vertex_2: the target is vertex 2 (the pre-training target).
        on_path: another vertex on a shortest 1-2 path (the fine-tuning targets).
        off_path: reachable from vertex 1 but on no shortest 1-2 path.
        unreachable: no path from vertex 1 (or not a vertex of the graph).
    """

    vertex_2: KindScore
    on_path: KindScore
    off_path: KindScore
    unreachable: KindScore

    @classmethod
    def from_by_kind(cls, by_kind: Mapping[str, Mapping[str, float]]) -> TargetKindScores:
        """From `lib.paths.generalization_tests.by_target_kind`'s dict; missing kinds are absent."""
        return cls(**{field: KindScore(**by_kind[name]) if name in by_kind else KindScore.absent()
                      for name, field in KIND_FIELDS.items()})

    def in_order(self) -> tuple[KindScore, ...]:
        """The four scores in the order of `TARGET_KINDS`."""
        return tuple(getattr(self, field) for field in KIND_FIELDS.values())

    def record(self) -> dict[str, dict[str, float]]:
        """The results-JSON form: `by_target_kind`'s dict, the kinds that occurred only."""
        return {name: dataclasses.asdict(score)
                for name, score in zip(TARGET_KINDS, self.in_order()) if score.present}


def kind_spread(seed_runs: Sequence[dict], test: str, kind: str, field: str = "mse") -> SeedSpread | None:
    """`field` of one kind of target on one test over the seed records that have that kind
    (None when no seed has it)."""
    values = tuple(run["test_by_kind"][test][kind][field] for run in seed_runs
                   if kind in run["test_by_kind"][test])
    return SeedSpread(values) if values else None


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


__all__ = [
    "kind_contrast", "KIND_FIELDS", "kind_spread", "KindContrast", "KindScore", "TargetKindScores",
]
