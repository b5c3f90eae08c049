"""Chapter 4's numbers beside the published ones, like for like, and which sweep feeds chapters 5-6.

* `published_comparisons`: each run trained with the protocol of a published count (same pair,
  weight decay and unembedding bias, `lib.chapters.ch4.published_for`), classified at that
  count's threshold (0.999 for wd 2e-5, the authors' 0.95 at the last logged epoch for wd 2e-4);
* `outcome_json`: a sweep's counts, fractions and 95% intervals with its protocol and the
  published count it is compared with, for the results JSON and the index table;
* `feeding_sweep`: the counts behind the S4 sweep chapters 5 and 6 measure (`FEEDS_LATER_CHAPTERS`).

The notebook writes the results JSON from these (the runs' summaries unchanged, the S4 pair with
and without the bias, the published comparisons).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lib.chapters.ch4 import PUBLISHED_COUNTS, ExperimentRun, published_for
from lib.chapters.ch4_results import PairOutcome, pair_outcome
from lib.grokking.outcomes import OutcomeFraction


def outcome_json(outcome: PairOutcome) -> dict:
    """A sweep's counts, fractions and 95% intervals of each grokking outcome at one threshold,
    with its protocol and the like-for-like published count (if any), for the results JSON."""
    def share(value: OutcomeFraction) -> dict:
        return {"count": value.count, "fraction": value.fraction, "low": value.low, "high": value.high}

    inside = outcome.published_inside()
    return {"experiment": outcome.key, "pair": outcome.name, "unembed_bias": outcome.unembed_bias,
            "weight_decay": outcome.weight_decay, "grok_threshold": outcome.grok_threshold,
            "n_instances": outcome.n_instances, "grokked_g1": share(outcome.grokked_g1),
            "grokked_g2": share(outcome.grokked_g2),
            "published": None if outcome.published_fraction_g1 is None else {
                "n_instances": outcome.published_n_instances, "fraction_g1": outcome.published_fraction_g1,
                "fraction_g2": outcome.published_fraction_g2, "inside_interval_g1": inside[0],
                "inside_interval_g2": inside[1]}}


def published_comparisons(runs: Mapping[str, ExperimentRun]) -> list[PairOutcome]:
    """Each experiment of `PUBLISHED_COUNTS` whose run was trained with that count's protocol,
    classified at that count's threshold (chapter 4's like-for-like comparisons: wd 2e-5 at 0.999, wd 2e-4 at 0.95)."""
    compared = []
    for key, count in PUBLISHED_COUNTS.items():
        if key in runs and published_for(runs[key].experiment) == count:
            compared.append(pair_outcome(runs[key], count.grok_threshold))
    return compared


#: The sweep chapters 5 and 6 measure, and why (`lib.grokking.study_sweep.S4_SWEEP_FILE`).
FEEDS_LATER_CHAPTERS = "s4_no_bias"


@dataclass(frozen=True)
class FeedingSweep:
    """Why chapters 5 and 6 measure the S4 sweep without the bias: how many seeds grokked A4 x Z2
    with and without it, and whether the sweep with the bias has too few of them to describe a
    group (under 3)."""

    with_bias_g2: int
    with_bias_seeds: int
    without_bias_g2: int
    too_few_with_bias: bool


def feeding_sweep(with_bias: PairOutcome, without_bias: PairOutcome) -> FeedingSweep:
    """The A4 x Z2 counts of the two S4 sweeps behind the choice of the sweep chapters 5 and 6 measure."""
    return FeedingSweep(with_bias.grokked_g2.count, with_bias.n_instances, without_bias.grokked_g2.count,
                        with_bias.grokked_g2.count < 3)


__all__ = ["FEEDS_LATER_CHAPTERS", "FeedingSweep", "feeding_sweep", "outcome_json", "published_comparisons"]
