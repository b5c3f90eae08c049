"""What chapter 4 (ambiguous grokking) reports, as typed results built from its runs, so that
the notebook's prose, tables and checks read fields instead of looking numbers up in dicts:
`PairIntersection` (each pair's intersection size beside the published one), `PairOutcome` (per
sweep, count, fraction and 95% Wilson interval of each outcome beside the published fractions),
`SubsampleOutcome` (a sweep trained on part of the intersection and how well it completes the
rest), `LabelBalance` (how often each label occurs on an intersection). `check_findings` checks
the invariants of a run, `findings` reports (never asserts) which published findings this run
shows; the results JSON and the like-for-like comparisons
with the published counts are built in `lib.chapters.ch4_report`.
`RatesSweep` sums a sweep over learning rates; the notebook records the numbers its prose cites
(`lib.book.record`), and the words that flip with them from the booleans here (`preference_shown`).

It is over 400 lines because each of chapter 4's five result types carries its own table and its
typed fields for the recorded prose; splitting them would scatter one chapter's outcomes over files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch

from lib.book.statistics import wilson_interval
from lib.book.tables import markdown_table, short_scientific
from lib.book.verdict import Never, Order, judge
from lib.chapters.ch4 import ExperimentRun, published_for, representative_instances
from lib.chapters.ch4_figures import outcome_label
from lib.grokking.outcomes import OutcomeFraction, outcome_fractions
from lib.grokking.pairs import PAIR_NAMES, PUBLISHED_INTERSECTION_SIZES, GroupPair, make_pair
from lib.grokking.study import AUTHORS_SCRIPT_THRESHOLD
from lib.grokking.sweeps import class_balance, sweep_outcomes


def rounded(values: Iterable[float], digits: int) -> list[float]:
    """`values` rounded to `digits` decimals, as a list (for printed lines of accuracies)."""
    return [round(value, digits) for value in values]


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2%}"


# --- The pairs and their intersections -----------------------------------------------------


@dataclass(frozen=True)
class PairIntersection:
    """One pair of groups on a common set and the pairs (a, b) on which their products agree."""

    name: str
    g1: str
    g2: str
    n_elements: int
    intersection_size: int
    published_size: int

    @property
    def n_pairs(self) -> int:
        """All N^2 pairs (a, b)."""
        return self.n_elements ** 2

    @property
    def overlap(self) -> float:
        """Intersection size as a share of all N^2 pairs."""
        return self.intersection_size / self.n_pairs

    @property
    def matches_published(self) -> bool:
        """Whether this code's intersection has the size the authors report."""
        return self.intersection_size == self.published_size


def pair_intersection(pair: GroupPair) -> PairIntersection:
    """The intersection facts of one pair, next to the published size (chapter 4's first table)."""
    return PairIntersection(pair.name, pair.g1.name, pair.g2.name, pair.n_elements,
                            pair.intersection_size, PUBLISHED_INTERSECTION_SIZES[pair.name])


def pair_intersections(names: Sequence[str] = PAIR_NAMES) -> tuple[PairIntersection, ...]:
    """`pair_intersection` of each named pair of the study, in order."""
    return tuple(pair_intersection(make_pair(name)) for name in names)


def intersections_table(rows: Sequence[PairIntersection]) -> str:
    """Markdown table of the pairs: groups, order, intersection size and share, published size."""
    return markdown_table(
        ["pair", "G1", "G2", "N", "intersection (this code)", "of N² pairs", "share", "published"],
        [[r.name, r.g1, r.g2, r.n_elements, r.intersection_size, r.n_pairs, r.overlap,
          r.published_size] for r in rows],
        formats={6: lambda share: f"{share:.1%}"})


# --- Outcomes of a sweep -------------------------------------------------------------------


@dataclass(frozen=True)
class PairOutcome:
    """What the seeds of one sweep ended up computing, next to the published fractions.

    Each outcome (`grokked_g1`, `grokked_g2`, `memorized`, `failed`) carries its count, fraction
    and 95% Wilson interval; `published_*` are None where the authors give no number trained and
    classified as this sweep was (same pair, weight decay, unembedding bias and threshold).
    """

    key: str
    name: str
    g1: str
    g2: str
    weight_decay: float
    unembed_bias: bool
    n_instances: int
    epochs: int
    grok_threshold: float
    grokked_g1: OutcomeFraction
    grokked_g2: OutcomeFraction
    memorized: OutcomeFraction
    failed: OutcomeFraction
    fraction_neither: float
    seconds: float
    model_epochs_per_second: float
    final_acc_g1: tuple[float, ...]
    final_acc_g2: tuple[float, ...]
    published_n_instances: int | None
    published_fraction_g1: float | None
    published_fraction_g2: float | None

    @property
    def grokked_either(self) -> int:
        """Seeds that grokked one of the two groups."""
        return self.grokked_g1.count + self.grokked_g2.count

    @property
    def intervals_apart(self) -> bool:
        """Whether the interval of grokking G2 lies wholly below the interval of grokking G1."""
        return self.grokked_g2.high < self.grokked_g1.low

    @property
    def preferred_group(self) -> str | None:
        """The group whose grokking interval lies wholly above the other's, or None."""
        if self.intervals_apart:
            return self.g1
        if self.grokked_g1.high < self.grokked_g2.low:
            return self.g2
        return None

    @property
    def preference_shown(self) -> bool | None:
        """Whether this sweep shows a preference between the two groups (the 95% intervals of
        grokking them do not overlap); None when no seed grokked either, with nothing to compare."""
        if self.grokked_either == 0:
            return None
        return self.preferred_group is not None

    def epoch_cost_relative_to(self, other: PairOutcome) -> float:
        """How many times as long one model-epoch of this sweep took as one of `other`."""
        return other.model_epochs_per_second / self.model_epochs_per_second

    @property
    def published_counts(self) -> tuple[int, int] | None:
        """The published counts of grokking G1 and G2 (fraction times seeds, rounded), or None
        when the authors give none trained and classified as this sweep was."""
        if self.published_fraction_g1 is None or self.published_n_instances is None:
            return None
        n = self.published_n_instances
        return round(self.published_fraction_g1 * n), round(self.published_fraction_g2 * n)

    def published_inside(self) -> tuple[bool, bool] | None:
        """Whether each published fraction lies inside this sweep's 95% interval (None when
        there is no like-for-like published count)."""
        if self.published_fraction_g1 is None:
            return None
        return (self.grokked_g1.low <= self.published_fraction_g1 <= self.grokked_g1.high,
                self.grokked_g2.low <= self.published_fraction_g2 <= self.grokked_g2.high)


def pair_outcome(run: ExperimentRun, threshold: float | None = None) -> PairOutcome:
    """The outcomes of a run's seeds (chapter 4), classified as in the run or at `threshold`, which
    then replaces the run's threshold both for grokking a group and for fitting the training set.
    The published count of the same protocol (`lib.chapters.ch4.published_for`) is attached only
    when its threshold is this one; outcomes are read at the last logged epoch, as the authors'."""
    if threshold is None:
        threshold, codes = run.grok_threshold, run.codes
    else:
        codes = sweep_outcomes(run.result, threshold, threshold)
    shares = outcome_fractions(codes)
    summary, count = run.summary, published_for(run.experiment)
    published = count.as_json() if count is not None and count.grok_threshold == threshold else {}
    return PairOutcome(
        key=run.experiment.key, name=run.pair.name, g1=run.pair.g1.name, g2=run.pair.g2.name,
        weight_decay=run.experiment.training.weight_decay, unembed_bias=run.experiment.model.unembed_bias,
        n_instances=run.result.n_instances, epochs=run.result.training_config.epochs,
        grok_threshold=threshold, grokked_g1=shares["grokked_g1"],
        grokked_g2=shares["grokked_g2"], memorized=shares["memorized"], failed=shares["failed"],
        fraction_neither=shares["memorized"].fraction + shares["failed"].fraction,
        seconds=summary["seconds"], model_epochs_per_second=summary["model_epochs_per_second"],
        final_acc_g1=tuple(run.result.final("acc_g1").tolist()),
        final_acc_g2=tuple(run.result.final("acc_g2").tolist()),
        published_n_instances=published.get("n_instances"),
        published_fraction_g1=published.get("fraction_g1"),
        published_fraction_g2=published.get("fraction_g2"))


@dataclass(frozen=True)
class RatesSweep:
    """A sweep over learning rates (chapter 4's Z35 pair at the authors' settings), summed: how
    many of all its seeds grokked each group, and the best final accuracy any seed reached."""

    rates: tuple[float, ...]
    seeds_per_rate: int
    seeds: int
    grokked_g1: int
    grokked_g2: int
    grok_threshold: float
    best_acc_g1: float
    best_acc_g2: float


def sweep_of_rates(outcomes: Mapping[float, PairOutcome]) -> RatesSweep:
    """The counts of each group over all seeds of a sweep over learning rates (rate -> outcome),
    the rates, and the best final accuracy against each group."""
    first = next(iter(outcomes.values()))
    return RatesSweep(
        rates=tuple(outcomes), seeds_per_rate=first.n_instances,
        seeds=sum(o.n_instances for o in outcomes.values()),
        grokked_g1=sum(o.grokked_g1.count for o in outcomes.values()),
        grokked_g2=sum(o.grokked_g2.count for o in outcomes.values()),
        grok_threshold=first.grok_threshold,
        best_acc_g1=max(max(o.final_acc_g1) for o in outcomes.values()),
        best_acc_g2=max(max(o.final_acc_g2) for o in outcomes.values()))


def _share(value: OutcomeFraction) -> str:
    return f"{value.count:,} ({value.fraction:.2%}; {value.low:.2%} to {value.high:.2%})"


def fractions_table(outcomes: Iterable[PairOutcome]) -> str:
    """Markdown table: per sweep (its key), the protocol, seeds, epochs and seconds, then each
    outcome as "count (percentage; 95% interval)" (the lines a sweep's cell shows)."""
    return markdown_table(
        ["sweep", "pair", "bias", "weight decay", "seeds", "epochs", "threshold", "seconds", "grokked G1",
         "grokked G2", "memorized only", "did not fit"],
        [[o.key, o.name, "yes" if o.unembed_bias else "no", o.weight_decay, o.n_instances, o.epochs,
          o.grok_threshold, o.seconds, o.grokked_g1, o.grokked_g2, o.memorized, o.failed] for o in outcomes],
        formats={3: short_scientific, 6: lambda threshold: f"{threshold:g}", 7: lambda seconds: f"{seconds:.0f}",
                 8: _share, 9: _share, 10: _share, 11: _share})


def outcomes_table(outcomes: Iterable[PairOutcome]) -> str:
    """Markdown table: per pair, each outcome as "count (percentage; 95% interval)", then the
    published fractions of grokking G1 and G2."""
    share = _share
    rows = [[o.name, o.g1, o.g2, "yes" if o.unembed_bias else "no", o.weight_decay, o.grok_threshold,
             o.n_instances, o.grokked_g1, o.grokked_g2, o.memorized, o.failed,
             o.published_fraction_g1, o.published_fraction_g2] for o in outcomes]
    return markdown_table(
        ["pair", "G1", "G2", "bias", "weight decay", "threshold", "seeds", "grokked G1", "grokked G2",
         "memorized", "did not fit", "published G1", "published G2"],
        rows, formats={4: short_scientific, 5: lambda threshold: f"{threshold:g}", 7: share, 8: share, 9: share, 10: share,
                       11: _percent, 12: _percent})


def published_fraction_marks(runs: Mapping[str, ExperimentRun]) -> dict[str, dict[str, float]]:
    """Experiment key -> the published fractions of grokking G1 and G2 of the same protocol and
    threshold as the run (empty where there is none)."""
    marks = {}
    for key, run in runs.items():
        count = published_for(run.experiment)
        same = count is not None and count.grok_threshold == run.grok_threshold
        marks[key] = {"fraction_g1": count.fraction_g1, "fraction_g2": count.fraction_g2} if same else {}
    return marks


def typical_instance_panels(run: ExperimentRun) -> dict[str, int]:
    """Panel title -> instance for the training-curves figure: one typical seed per outcome."""
    typical = representative_instances(run, run.grok_threshold)
    g1, g2 = run.pair.g1.name, run.pair.g2.name
    return {f"{outcome_label(outcome, g1, g2)} (seed {int(run.result.seeds[i])})": i
            for outcome, i in typical.items()}


# --- Training on part of the intersection --------------------------------------------------


@dataclass(frozen=True)
class SubsampleOutcome:
    """A sweep trained on a random part of the intersection, and how well it completes the rest."""

    name: str
    n_instances: int
    n_elements: int
    intersection_size: int
    n_train_pairs: int
    train_fraction: float
    grok_threshold: float
    fraction_intersection_grokked: float
    min_acc_intersection: float
    final_acc_intersection: tuple[float, ...]
    outcome: PairOutcome

    @property
    def share_of_all_pairs(self) -> float:
        """Training pairs as a share of all N^2 pairs."""
        return self.n_train_pairs / self.n_elements ** 2


def subsample_outcome(run: ExperimentRun) -> SubsampleOutcome:
    """The subsample findings of a run (chapter 4); the numbers are those of its JSON summary."""
    summary = run.summary
    return SubsampleOutcome(
        name=summary["name"], n_instances=summary["n_instances"],
        n_elements=summary["n_elements"], intersection_size=summary["intersection_size"],
        n_train_pairs=summary["n_train_pairs"], train_fraction=summary["train_fraction"],
        grok_threshold=run.grok_threshold,
        fraction_intersection_grokked=summary["fraction_intersection_grokked"],
        min_acc_intersection=summary["min_acc_intersection"],
        final_acc_intersection=tuple(run.result.final("acc_intersection").tolist()),
        outcome=pair_outcome(run))


def subsample_table(subsamples: Iterable[SubsampleOutcome]) -> str:
    """Markdown table: per subsample sweep, its training pairs and their share of the
    intersection, its seeds, the share of them that reached the threshold on the whole
    intersection, and the lowest intersection accuracy."""
    return markdown_table(
        ["pair", "training pairs", "of the intersection", "seeds", "threshold",
         "reached it on the whole intersection", "lowest intersection accuracy"],
        [[s.name, s.n_train_pairs, s.train_fraction, s.n_instances, s.grok_threshold,
          s.fraction_intersection_grokked, s.min_acc_intersection] for s in subsamples],
        formats={2: lambda share: f"{share:.0%}", 4: lambda threshold: f"{threshold:g}",
                 5: lambda share: f"{share:.2%}", 6: lambda share: f"{share:.3%}"})


# --- Class balance -------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelBalance:
    """How often each label occurs on a pair's intersection and on each full table.

    `counts` maps "intersection", "g1_full" and "g2_full" to (N,) counts, as
    `lib.grokking.sweeps.class_balance` returns them.
    """

    pair_name: str
    n_elements: int
    counts: Mapping[str, torch.Tensor]
    intersection_min: int
    intersection_max: int

    @property
    def uniform(self) -> bool:
        """Whether every label occurs equally often on the intersection."""
        return self.intersection_min == self.intersection_max

    def counts_json(self) -> dict[str, list[int]]:
        """The counts as lists, for the results JSON."""
        return {key: values.tolist() for key, values in self.counts.items()}


def label_balance(pair: GroupPair) -> LabelBalance:
    """The label counts of a pair's intersection and full tables (chapter 4's class balance)."""
    counts = class_balance(pair)
    return LabelBalance(pair.name, pair.n_elements, counts, int(counts["intersection"].min()),
                        int(counts["intersection"].max()))


# --- The results JSON and the checks -------------------------------------------------------


def check_findings(intersections: Sequence[PairIntersection], outcomes: Mapping[str, PairOutcome],
                   subsamples: Mapping[str, SubsampleOutcome]) -> None:
    """Check what must hold on any machine: each intersection has the published size and each
    sweep's outcome fractions add up to 1. What training produced (which seeds fit, which group
    they grok) is reported by `findings`, never asserted: it can change with the CPU.

    Raises:
        AssertionError: with a sentence naming the invariant that does not hold.
    """
    def require(holds: bool, finding: str) -> None:
        if not holds:
            raise AssertionError(f"Chapter 4 check failed: {finding}")

    for row in intersections:
        require(row.matches_published, f"the intersection of {row.name} has {row.intersection_size} "
                                       f"pairs, the authors report {row.published_size}.")
    for outcome in [*outcomes.values(), *(s.outcome for s in subsamples.values())]:
        total = outcome.grokked_g1.fraction + outcome.grokked_g2.fraction + outcome.fraction_neither
        require(abs(total - 1) < 1e-9, f"the outcome fractions of {outcome.name} add up to {total}.")


#: The published findings `findings` reports, by name, each with what would show it.
FINDINGS = {
    "every_seed_fits": "every seed trained on a whole intersection fits its training set",
    "z48_no_semidirect": "no seed groks the semidirect product of the Z48 pair",
    "s4_order": "grokking S4 is rarer than memorizing and more common than grokking A4 x Z2 (every S4 sweep)",
    "z100_no_grokking": "no seed groks either group of the Z100 pair",
    "s5_subsample_completes": "every seed trained on 60% of the S5 intersection completes it to 99%",
}


def findings(outcomes: Mapping[str, PairOutcome], subsamples: Mapping[str, SubsampleOutcome]) -> dict[str, dict]:
    """Each of the study's findings (`FINDINGS`) judged in this run by the book's one verdict rule
    (`lib.book.verdict.judge`): name -> {"word": its verdict, "exceptions": the seeds that go
    against it, "seeds": the seeds it was read on, "bound": for a "never", the upper end of the
    95% interval of its rate with no exception (None otherwise)}. A "never" (or "every") on a few
    seeds with no exception is "consistent", bounded below 5% "reproduced", seen even once
    "differs"; the S4 order is read from the Wilson intervals. A finding whose sweep did not run
    is left out. Chapter 4 records these; none is asserted (an outcome of training can change
    with the CPU)."""
    def never(exceptions: int, seeds: int) -> dict:
        evidence = Never(exceptions, seeds)
        return {"word": judge(evidence), "exceptions": exceptions, "seeds": seeds,
                "bound": evidence.upper if not exceptions else None}

    found, whole = {}, list(outcomes.values())
    found["every_seed_fits"] = never(sum(o.failed.count for o in whole), sum(o.n_instances for o in whole))
    if "z48" in outcomes:
        found["z48_no_semidirect"] = never(outcomes["z48"].grokked_g2.count, outcomes["z48"].n_instances)
    s4s = [outcomes[key] for key in ("s4", "s4_no_bias", "s4_second_decay") if key in outcomes]
    if s4s:
        # Per sweep: A4 x Z2 grokkers below S4 grokkers below the seeds that grokked neither.
        orders = [Order(((o.grokked_g2.low, o.grokked_g2.high), (o.grokked_g1.low, o.grokked_g1.high),
                         wilson_interval(round(o.fraction_neither * o.n_instances), o.n_instances)))
                  for o in s4s]
        found["s4_order"] = {"word": judge(*orders), "exceptions": sum(
            not o.grokked_g2.fraction < o.grokked_g1.fraction < o.fraction_neither for o in s4s),
            "seeds": sum(o.n_instances for o in s4s), "bound": None}
    if "z100" in outcomes:
        found["z100_no_grokking"] = never(outcomes["z100"].grokked_either, outcomes["z100"].n_instances)
    if "subsample_s5" in subsamples:
        sub = subsamples["subsample_s5"]
        found["s5_subsample_completes"] = never(sum(a < 0.99 for a in sub.final_acc_intersection), sub.n_instances)
    return found


# --- What the notebook checks before it writes its results ---

#: Keys chapter 4's results JSON must contain (it may write more).
def check_results(results: dict) -> None:
    """Assert what chapter 4's results JSON must satisfy (its notebook calls it before writing them)."""
    assert results["intersection_sizes"] == results["published_intersection_sizes"]
    for pair in results["pairs"]:
        assert {"name", "n_elements", "intersection_size", "n_instances", "epochs", "fraction_g1",
                "fraction_g2", "fraction_neither"} <= pair.keys()
    with_bias, without = results["s4_bias_comparison"]
    assert with_bias["unembed_bias"] and not without["unembed_bias"]
    assert with_bias["n_instances"] == without["n_instances"]
    for compared in results["published_comparisons"]:
        assert compared["unembed_bias"] and compared["published"] is not None
        assert compared["grok_threshold"] == results["published"][compared["experiment"]]["grok_threshold"]
        for share in (compared["grokked_g1"], compared["grokked_g2"]):
            assert share["low"] <= share["fraction"] <= share["high"]
    assert results["feeds_chapters_5_6"] in results["saved_sweeps"] or not results["saved_sweeps"]
