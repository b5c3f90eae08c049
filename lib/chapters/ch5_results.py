"""What chapter 5 (complexity of the grokked solution) reports: tables and results-JSON entries
built from its runs, and the checks of its results.

* the measures per outcome, their comparisons, correlations and AUCs are computed by
  `lib.grokking.outcome_statistics`; `summary_table` and `auc_table` show them;
* the sweep's population and the study's circuit efficiency: `efficiency_table`, `population_results`;
* the LLC along training: `course_table`, `trajectory_results`; the S5 LLC course beside the
  study's: `s5_comparison` (`s5_course_table` per seed);
* the chain-length study: `trajectory_rows`, `end_of_training_rows`, `chain_length_table`,
  `chain_length_results`;
* the measures over time (their rank correlations with the generalization gap, ranked by
  `lib.grokking.measure_ranking`): `tracking_table`, `measures_results`;
* `check_results` checks the JSON the notebook assembles.

Everything here returns numbers, booleans and tables; the sentences are the notebook's markdown,
which cites the numbers the notebook records (`lib.book.record`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from functools import partial

from lib.book.statistics import Estimate
from lib.book.tables import format_value, markdown_table
from lib.book.verdict import NotComparable, OneRun, judge
from lib.grokking.chain_length import (
    ChainLengthRow, SETTLED_WITHIN, fitted_seed_estimates, group_mean_estimates,
)
from lib.grokking.efficiency_by_outcome import EfficiencySummary, StudyEfficiency, grid_step
from lib.grokking.end_of_training import EndOfTraining
from lib.grokking.llc_trajectory import Trajectory
from lib.grokking.measure_ranking import TrackingRow, claim_comparison
from lib.grokking.measures_over_time import MeasuresOverTime
from lib.grokking.outcome_statistics import MeasureAuc, OutcomeSummary
from lib.grokking.s5_measures_run import run_summary
from lib.grokking.study import PUBLISHED_S5_LLC, S5_MEASURES_CLAIM, S5_MEASURES_PROTOCOL
from lib.grokking.sweep_correlations import PopulationCorrelation
from lib.grokking.training import SweepResult


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
    assert recorded["over_time.claim"]["value"] == measures_over_time_verdict(over_time)
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


def course_table(trajectory: Trajectory) -> tuple[list[str], list[list]]:
    """Header and rows of `Trajectory.course`, one row per seed ("-" where a number is missing:
    a seed that never fits, or never groks after a snapshot)."""
    def cell(value, fmt: str):
        return "-" if value is None or value == -1 else format(value, fmt)

    rows = []
    for label, k in trajectory.labels.items():
        c = trajectory.course(k)
        rows.append([label, cell(c["fitted_epoch"], "d"), cell(c["first"], ".1f"), cell(c["highest"], ".1f"),
                     cell(c["highest_epoch"], "d"), cell(c["final"], ".1f"), cell(c["final_epoch"], "d"),
                     cell(c["grok_epoch"], "d"), cell(c["before"], ".1f"), cell(c["before_epoch"], "d"),
                     cell(c["after"], ".1f"), cell(c["after_epoch"], "d"), cell(c["change_across_grokking"], "+.0%"),
                     cell(c["change_from_highest"], "+.0%")])
    return (["seed", "fits at epoch", "LLC at the first snapshot from there", "highest LLC", "at epoch", "final LLC", "at epoch",
             "groks at epoch", "LLC before", "at epoch", "LLC after", "at epoch", "change across grokking",
             "change from highest to before"], rows)


#: Display names of the measures followed over time, in the chapter's order.
MEASURE_LABELS = {
    "l2_norm": "L2 norm", "distance_from_init": "distance from initialization",
    "inverse_margin": "inverse margin", "spectral_product": "product of spectral norms",
    "frobenius_product": "product of Frobenius norms", "path_norm": "path norm",
    "train_loss": "training loss", "pac_bayes_sharpness": "PAC-Bayes sharpness", "llc": "LLC",
}


def tracking_table(rows: dict[str, list[TrackingRow]]) -> tuple[list[str], list[list]]:
    """Header and rows: each measure's Spearman with the gap on both grids (in the sparse
    grid's order), with its rank on each."""
    dense = {r.measure: (i + 1, r) for i, r in enumerate(rows["dense"])}
    n_dense, n_sparse = rows["dense"][0].checkpoints, rows["sparse"][0].checkpoints
    header = ["measure", f"Spearman, sparse grid ({n_sparse} checkpoints)", "rank there",
              f"Spearman, dense grid ({n_dense} checkpoints)", "rank there"]
    table = []
    for i, r in enumerate(rows["sparse"]):
        rank, row = dense.get(r.measure, (None, None))
        table.append([MEASURE_LABELS[r.measure], f"{r.spearman:.3f}", i + 1,
                      f"{row.spearman:.3f}" if row else "not computed", rank if rank else "-"])
    return header, table


def measures_results(result: SweepResult, run: MeasuresOverTime, rows: dict[str, list[TrackingRow]],
                     config) -> dict:
    """The run's settings, the study's, and every measure's Spearman on both grids."""
    claim = claim_comparison(rows)
    return {
        "settings": {"group": "S5", "d": config.measures_dim, "unembed_bias": False,
                     "train_fraction": config.measures_train_fraction, "n_train": int(result.train_left.numel()),
                     "epochs": config.measures_epochs, "weight_decay": result.training_config.weight_decay,
                     "seed": int(result.seeds[0]), "dense_every": config.measures_every,
                     "sparse_every": config.measures_sparse_every,
                     "llc_chains": run.sgld.chains, "llc_steps": run.sgld.steps,
                     "pac_bayes_doubling_draws": run.search.doubling_draws,
                     "pac_bayes_bisection_draws": run.search.bisection_draws,
                     "pac_bayes_depth": run.search.depth},
        "study_protocol": dict(S5_MEASURES_PROTOCOL),
        "run": run_summary(result, config.grok_threshold),
        "dense": {"epochs": run.epochs.tolist(), "checkpoints": rows["dense"][0].checkpoints,
                  "spearman": {r.measure: r.spearman for r in rows["dense"]},
                  "infinite": {r.measure: r.infinite for r in rows["dense"]}},
        "sparse": {"epochs": run.sparse_epochs.tolist(), "checkpoints": rows["sparse"][0].checkpoints,
                   "spearman": {r.measure: r.spearman for r in rows["sparse"]},
                   "infinite": {r.measure: r.infinite for r in rows["sparse"]},
                   "pac_bayes_converged": int(run.pac_bayes_converged.sum())},
        "claim": {**dataclasses.asdict(claim), "study_best": S5_MEASURES_CLAIM["best"],
                  "reproduced": claim.reproduced},
        "seconds_per_checkpoint": run.seconds_per_checkpoint(),
    }


def measures_over_time_verdict(measures: dict) -> str:
    """The verdict on the study's "the LLC tracks the gap best" (chapter 5 and the index, one
    word): the book's one rule on a ranking read on one model, as the study's ("one run"), and "not
    comparable" where this run's grid or chains are coarser than the study's (`measures`: the
    results JSON's `measures_over_time`)."""
    settings, study = measures["settings"], measures["study_protocol"]
    at_study_grid = (settings["sparse_every"] == study["checkpoint_every"]
                     and settings["llc_chains"] >= study["llc_chains"] and settings["llc_steps"] >= study["llc_steps"]
                     and settings["pac_bayes_bisection_draws"] >= study["pac_bayes_bisection_draws"])
    return judge(OneRun()) if at_study_grid else judge(OneRun(), NotComparable())


def efficiency_table(rows: list[EfficiencySummary]) -> tuple[list[str], list[list]]:
    """Header and rows of the study's circuit-efficiency table."""
    def text(estimate: Estimate) -> str:
        return f"{estimate.value:.4g} ({estimate.low:.4g} to {estimate.high:.4g})"

    return (["outcome", "seeds", "best factor alpha", "objective as trained", "above the curve's minimum",
             "minimum objective: mean", "median"],
            [[r.group, r.count, text(r.alpha), text(r.own), text(r.excess), text(r.lowest),
              f"{r.lowest_median:.4g}"] for r in rows])


def population_results(correlations: list[PopulationCorrelation], study: StudyEfficiency,
                       summaries: list[EfficiencySummary], auc: Estimate) -> dict:
    """The correlations and the study's circuit efficiency, for the results JSON."""
    return {"sweep_correlations": [asdict(c) for c in correlations],
            "study_efficiency": {"weight_decay": study.weight_decay, "alphas": "2^linspace(-6, 3, 500)",
                                 "seeds": study.index.tolist(),
                                 "by_outcome": [asdict(r) for r in summaries],
                                 "largest_excess": float(study.optimum.excess.max()),
                                 "grid_step": grid_step(),
                                 "auc_s4_vs_others": asdict(auc)}}


def trajectory_rows(trajectory: Trajectory, lengths: tuple[int, ...], name: str) -> list[ChainLengthRow]:
    """For each seed of `trajectory` that fits its training set: its estimate at each chain
    length at the first snapshot after fitting (early) and at the last snapshot (final)."""
    lengths, read = fitted_seed_estimates(trajectory, lengths)
    rows = []
    for at in read:
        seed = at.label.split("(seed ")[-1].rstrip(")")
        rows.append(ChainLengthRow(f"{name} seed {seed} ({at.label.split(' (')[0]}), {at.snapshot} snapshot, "
                                   f"epoch {at.epoch}", lengths, at.estimates))
    return rows


def end_of_training_rows(end: EndOfTraining, sgld, lengths: tuple[int, ...]) -> list[ChainLengthRow]:
    """Per outcome group, the mean estimate at the end of training at each chain length."""
    lengths, groups = group_mean_estimates(end, sgld, lengths)
    rows = []
    for group in groups:
        outcome = group.group if group.group.startswith("grokked") else "grokked neither"
        rows.append(ChainLengthRow(f"S4, end of training, mean over the {group.count} measured "
                                   f"seeds that {outcome}", lengths, group.estimates))
    return rows


def chain_length_table(rows: list[ChainLengthRow]) -> tuple[list[str], list[list]]:
    """Header and rows of the chain-length table: each estimate at each length and where it settles."""
    lengths = rows[0].lengths
    header = ["estimate", *(f"{length:,} steps" for length in lengths),
              f"settled (within {SETTLED_WITHIN:.0%}) from"]
    return header, [[r.what, *r.estimates, f"{r.settled_at():,} steps"] for r in rows]


def chain_length_results(rows: list[ChainLengthRow]) -> list[dict]:
    """The rows with where each settles, for the results JSON."""
    return [asdict(r) | {"settled_at": r.settled_at(), "settled_within": SETTLED_WITHIN} for r in rows]


__all__ = [
    "auc_table", "chain_length_results", "chain_length_table", "check_results", "course_table",
    "efficiency_table", "end_of_training_rows", "MEASURE_LABELS", "MEASURE_NAMES", "measures_results",
    "population_results", "s5_comparison", "s5_course_table", "S5Comparison", "summary_table",
    "tracking_table", "trajectory_results", "trajectory_rows",
]
