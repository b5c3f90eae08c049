"""What chapter 5 (complexity of the grokked solution) reports, as typed results built from its runs.

* the measures per outcome, their comparisons, correlations and AUCs are computed by
  `lib.grokking.outcome_statistics`; `summary_table` and `auc_table` show them.
* the measures over time (their rank correlations with the generalization gap) are in
  `lib.grokking.measure_ranking` (table: `lib.chapters.ch5_measures`).

* `s5_comparison`: the S5 LLC course beside the study's (`s5_course_table` per seed).

`trajectory_results` gives the results JSON's entry of a trajectory, and `check_results` checks
the JSON the notebook assembles. Everything here
returns numbers, booleans and tables; the sentences are the notebook's markdown, which cites
the numbers the notebook records (`lib.book.record`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from lib.book.record import verdict
from lib.book.statistics import Estimate
from lib.book.tables import format_value, markdown_table
from lib.grokking.llc_trajectory import Trajectory
from lib.grokking.outcome_statistics import MeasureAuc, OutcomeSummary
from lib.grokking.study import PUBLISHED_S5_LLC

#: Display names of the end-of-training measures, in the chapter's order.
MEASURE_NAMES = {"train_loss": "training loss", "weight_norm": "weight norm", "llc": "LLC",
                 "efficiency_loss": "loss at the common norm"}


def _estimate_cell(estimate: Estimate, *, trailing_zeros: bool = False) -> str:
    value, low, high = (format_value(v, trailing_zeros=trailing_zeros)
                        for v in (estimate.value, estimate.low, estimate.high))
    return value if estimate.low != estimate.low else f"{value} ({low} to {high})"  # NaN low: one seed


def summary_table(summaries: list[OutcomeSummary]) -> str:
    """Markdown: one row per outcome, each measure as "mean (95% interval)"."""
    header = ["outcome", "seeds", *MEASURE_NAMES.values()]
    rows = [[s.group, s.count, *(s.means[key] for key in MEASURE_NAMES)] for s in summaries]
    formats = {i: partial(_estimate_cell, trailing_zeros=True) for i in range(2, 2 + len(MEASURE_NAMES))}
    return markdown_table(header, rows, formats=formats)


def auc_table(rows: list[MeasureAuc]) -> str:
    """Markdown: one row per measure, each AUC as "value (95% interval)"."""
    return markdown_table(
        ["measure", "AUC: grokked either vs neither", "AUC: S4 vs A4xZ2 among grokkers"],
        [[MEASURE_NAMES[r.measure], r.either_vs_neither, r.s4_vs_a4] for r in rows],
        formats={1: _estimate_cell, 2: _estimate_cell})


@dataclass(frozen=True)
class S5Comparison:
    """The S5 LLC course of this run beside the study's (`PUBLISHED_S5_LLC`).

    Attributes:
        seeds: S5 seeds followed; fitted: how many of them fit their training set (only their
            snapshots from then on have a meaningful LLC).
        peak, final: the mean over the fitted seeds of their highest and their final LLC (NaN
            when none fits); peak_ratio, final_ratio: those over the middle of the study's ranges.
        study_peak_low ... study_final_high: the study's ranges over its 3 instances.
        same_chains: whether the chains (count and length) are the study's; same_model: whether
            the model is the study's (d = h = 128 with the unembedding bias).
    """

    seeds: int
    fitted: int
    peak: float
    final: float
    peak_ratio: float
    final_ratio: float
    study_peak_low: int
    study_peak_high: int
    study_final_low: int
    study_final_high: int
    same_chains: bool
    same_model: bool


def s5_comparison(trajectory: Trajectory) -> S5Comparison:
    """The numbers that set `trajectory` (S5 seeds) beside the study's S5 run."""
    published = PUBLISHED_S5_LLC
    model, sgld = trajectory.result.model_config, trajectory.sgld
    peak, final = trajectory.peak_and_end()
    fitted = sum(len(trajectory.after_fitting(k)[0]) > 0 for k in range(len(trajectory.labels)))
    peaks, finals = published["peaks"], published["finals"]
    return S5Comparison(
        len(trajectory.labels), fitted, peak, final, peak / ((min(peaks) + max(peaks)) / 2),
        final / ((min(finals) + max(finals)) / 2), min(peaks), max(peaks), min(finals), max(finals),
        (sgld.chains, sgld.steps) == (published["chains"], published["steps"]),
        (model.embed_dim, model.unembed_bias) == (128, True))


def s5_course_table(trajectory: Trajectory) -> tuple[list[str], list[list]]:
    """Header and rows: each S5 seed that fits its training set, its highest LLC (and epoch) and
    final LLC beside the study's instance with the same outcome (one seed against one instance)."""
    published = PUBLISHED_S5_LLC
    rows = []
    for label, k in trajectory.labels.items():
        epochs, llc = trajectory.after_fitting(k)
        if len(epochs):
            top = int(llc.argmax())
            same = published["outcomes"].index(("grokked_g1", "grokked_g2", "neither")[int(trajectory.outcome[k])])
            rows.append([label, f"{float(llc[top]):,.0f}", int(epochs[top]), f"{float(llc[-1]):,.0f}",
                         int(epochs[-1]), f"{published['peaks'][same]:,}", published["finals"][same]])
    return (["seed", "highest LLC", "at epoch", "final LLC", "at epoch", "study's instance, same outcome: highest",
             "its final"], rows)


def trajectory_results(trajectory: Trajectory) -> dict:
    """The LLC along training of each seed of `trajectory`, for the results JSON."""
    return {"seeds": trajectory.labels, "epochs": trajectory.epochs.tolist(),
            "llc": trajectory.llc.T.tolist(), "sem": trajectory.llc_sem.T.tolist(),
            "fitted_epoch": trajectory.fitted_epoch.tolist(), "grok_epoch": trajectory.grok_epoch.tolist(),
            "outcome": trajectory.outcome.tolist(),
            "chains": trajectory.sgld.chains, "steps": trajectory.sgld.steps,
            "unembed_bias": trajectory.result.model_config.unembed_bias,
            "same_outcome_as_sweep": trajectory.same_outcome}


__all__ = [
    "MEASURE_NAMES", "S5Comparison", "auc_table", "check_results", "s5_comparison", "s5_course_table",
    "summary_table", "trajectory_results",
]


# --- What the notebook checks before it writes its results ---

def check_results(results: dict) -> None:
    """Assert what chapter 5's results JSON must satisfy (its notebook calls it before writing them)."""
    assert results["regression_check"]["estimate"] > 0
    assert all({"group", "count", "llc", "train_loss", "weight_norm", "efficiency_loss"} <= o.keys()
               for o in results["outcomes"])
    assert sum(o["count"] for o in results["outcomes"]) == results["n_measured"]
    over_time = results["measures_over_time"]
    assert {"settings", "study_protocol", "dense", "sparse", "claim", "seconds_per_checkpoint"} <= over_time.keys()
    assert set(over_time["sparse"]["spearman"]) >= {"llc", "pac_bayes_sharpness", "train_loss", "inverse_margin"}
    assert set(over_time["dense"]["spearman"]) >= {"train_loss", "inverse_margin", "path_norm", "l2_norm"}
    assert set(over_time["sparse"]["epochs"]) <= set(over_time["dense"]["epochs"])
    assert over_time["dense"]["checkpoints"] <= len(over_time["dense"]["epochs"])
    assert over_time["sparse"]["checkpoints"] <= len(over_time["sparse"]["epochs"])
    s5 = results["s5_llc_over_training"]
    assert len(s5["llc"]) == len(s5["seeds"]) and all(len(row) == len(s5["epochs"]) for row in s5["llc"])
    assert s5["epochs"] == results["s5_snapshots"]
    assert results["sweep_correlations"][0]["n_seeds"] == results["n_seeds_in_sweep"]
    assert sum(r["count"] for r in results["study_efficiency"]["by_outcome"]) == len(results["study_efficiency"]["seeds"])
    for row in results["chain_length_study"]:
        assert len(row["lengths"]) == len(row["estimates"]) and row["settled_at"] in row["lengths"]
    # The numbers the prose cites (lib.book.record): each with its format and text, and the words
    # the rules chose agree with the results they were chosen from.
    recorded = results["recorded"]
    assert all(entry.keys() == {"value", "format", "text"} for entry in recorded.values())
    assert recorded["over_time.claim"]["value"] == verdict(over_time["claim"]["reproduced"], yes="reproduced",
                                                           no="not reproduced")
    assert recorded["over_time.llc_rank"]["value"] == over_time["claim"]["llc_rank"]
    assert recorded["check.estimate"]["value"] == results["regression_check"]["estimate"]
    assert recorded["s5.snapshots"]["value"] == ", ".join(str(e) for e in results["s5_snapshots"])
    assert recorded["chains.rows"]["value"] == len(results["chain_length_study"])
    if not results["smoke"]:
        # the study's chain length everywhere in the default run
        assert results["sgld"]["steps"] == 3000 and s5["steps"] == 3000 and s5["chains"] >= 3
        assert results["sgld"]["chains"] >= 5
        # the study's model and task for the measures over time
        settings = over_time["settings"]
        assert (settings["d"], settings["train_fraction"], settings["epochs"]) == (128, 0.4, 2000)
        assert settings["n_train"] == 5760 and settings["unembed_bias"] is False
