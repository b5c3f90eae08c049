"""Chapter 5's measures over time: the study's S5 experiment, its rank correlations, table and
the study's claim against them, and what goes to the results JSON.

The study trained ONE S5 model (d = h = 128, no bias, 40% of the S5 table, weight decay 2e-5,
2,000 epochs), computed Jiang et al.'s measures, the training loss and the LLC at a checkpoint
every 3 epochs and compared each with the generalization gap by Spearman over the checkpoints
(`lib.grokking.study.S5_MEASURES_PROTOCOL`). `s5_measures_sweep` trains that model (its seed from
the "ch5_s5_measures" stream, the 40% drawn from a generator seeded by the chapter seed);
`measure_s5_run` computes the cheap measures at every `measures_every`-th epoch and the costly
ones (PAC-Bayes sharpness, LLC) at every `measures_sparse_every`-th (`lib.grokking.measures_over_time`);
`tracking_rows` ranks the measures by their rank correlation with the gap over common checkpoints
on each grid.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from lib.book.seed_streams import stream_seeds
from lib.grokking.generalization_measures import PacBayesSearch
from lib.grokking.groups import symmetric
from lib.grokking.llc import SGLDConfig
from lib.grokking.measures_over_time import MeasuresOverTime, measures_over_time, spearman_over_common
from lib.grokking.outcomes import first_epoch_at_or_above
from lib.grokking.study import S5_MEASURES_CLAIM, S5_MEASURES_MODEL, S5_MEASURES_PROTOCOL
from lib.grokking.sweeps import run_group_sweep
from lib.grokking.training import SweepConfig, SweepResult, snapshot_epochs

#: Display names of the measures followed over time, in the chapter's order.
MEASURE_LABELS = {
    "l2_norm": "L2 norm", "distance_from_init": "distance from initialization",
    "inverse_margin": "inverse margin", "spectral_product": "product of spectral norms",
    "frobenius_product": "product of Frobenius norms", "path_norm": "path norm",
    "train_loss": "training loss", "pac_bayes_sharpness": "PAC-Bayes sharpness", "llc": "LLC",
}


def s5_measures_sweep(config, progress: bool = True) -> SweepResult:
    """The study's one S5 model without the bias (width `measures_dim`), trained
    `measures_epochs` epochs on a random `measures_train_fraction` of the S5 table, with a
    checkpoint (and logged metrics) every `measures_every` epochs. `config`: the chapter's
    `Chapter5Parameters`."""
    epochs = config.measures_epochs
    schedule = SweepConfig(epochs=epochs, log_every=config.measures_every,
                           weight_decay=S5_MEASURES_PROTOCOL["weight_decay"],
                           checkpoint_epochs=snapshot_epochs(epochs, config.measures_every), workers=1)
    model = dataclasses.replace(S5_MEASURES_MODEL, embed_dim=config.measures_dim,
                                hidden_dim=config.measures_dim)
    return run_group_sweep(symmetric(5), stream_seeds("ch5_s5_measures", config.seed, 1), model, schedule,
                           train_fraction=config.measures_train_fraction,
                           generator=torch.Generator().manual_seed(config.seed), device=config.device,
                           progress=progress)


def sparse_epochs(config) -> list[int]:
    """The checkpoints at which the PAC-Bayes sharpness and the LLC are computed too."""
    return list(snapshot_epochs(config.measures_epochs, config.measures_sparse_every))


def measure_s5_run(result: SweepResult, config, generator: torch.Generator) -> MeasuresOverTime:
    """Every measure along the run of `s5_measures_sweep`: the cheap ones at every checkpoint,
    all of them at `sparse_epochs` (LLC: `measures_llc_chains` chains of `measures_llc_steps`
    steps at the chapter's SGLD settings; PAC-Bayes: the study's search with the chapter's
    draws)."""
    sgld = SGLDConfig(step_size=config.llc_step_size, n_beta=config.llc_n_beta,
                      localization=config.llc_localization, steps=config.measures_llc_steps,
                      chains=config.measures_llc_chains, burn_in=config.llc_burn_in)
    search = PacBayesSearch(doubling_draws=config.pac_bayes_doubling_draws,
                            bisection_draws=config.pac_bayes_bisection_draws)
    return measures_over_time(result, sparse_epochs(config), sgld, search, generator, workers=config.workers)


@dataclass(frozen=True)
class TrackingRow:
    """One measure on one grid: its rank correlation with the gap over the grid's common
    checkpoints, how many there are, and how many of its values there are infinite."""

    measure: str
    grid: str
    spearman: float
    checkpoints: int
    infinite: int


def _ranked(correlations: dict[str, float], values: dict[str, torch.Tensor], keep: torch.Tensor,
            grid: str) -> list[TrackingRow]:
    rows = [TrackingRow(name, grid, rho, int(keep.sum()), int(torch.isinf(values[name][keep]).sum()))
            for name, rho in correlations.items()]
    return sorted(rows, key=lambda r: -r.spearman if r.spearman == r.spearman else float("inf"))


def tracking_rows(run: MeasuresOverTime) -> dict[str, list[TrackingRow]]:
    """grid -> its rows, best tracker (largest Spearman with the gap) first: "dense", every
    cheap measure over every checkpoint; "sparse", every measure (PAC-Bayes sharpness and LLC
    included) over the sparse checkpoints. Each grid compares its measures over the same
    checkpoints, infinite values kept as tied top ranks."""
    dense, keep = spearman_over_common(run.measures, run.gap)
    sparse, keep_sparse = spearman_over_common(run.sparse_measures, run.gap[run.sparse])
    return {"dense": _ranked(dense, run.measures, keep, "dense"),
            "sparse": _ranked(sparse, run.sparse_measures, keep_sparse, "sparse")}


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


@dataclass(frozen=True)
class ClaimComparison:
    """The study's claim (the LLC tracks the gap best) against this run's sparse-grid ranking."""

    best: str
    best_spearman: float
    llc_rank: int
    llc_spearman: float
    n_measures: int
    checkpoints: int

    @property
    def reproduced(self) -> bool:
        """Whether the LLC follows the gap at least as closely as every other measure (a tie for
        the first place counts)."""
        return self.llc_rank == 1


def claim_comparison(rows: dict[str, list[TrackingRow]]) -> ClaimComparison:
    """Where the LLC ranks on the sparse grid (1 + the number of measures with a strictly larger
    Spearman; NaN ranks last), beside the best tracker there (the LLC where it ties for first)."""
    sparse = rows["sparse"]
    llc = next(r for r in sparse if r.measure == S5_MEASURES_CLAIM["best"])
    if llc.spearman == llc.spearman:
        rank = 1 + sum(r.spearman > llc.spearman for r in sparse)
    else:
        rank = len(sparse)
    best = llc if rank == 1 else sparse[0]
    return ClaimComparison(best.measure, best.spearman, rank, llc.spearman, len(sparse), sparse[0].checkpoints)


def run_summary(result: SweepResult, threshold: float) -> dict:
    """Training accuracy and accuracy on the whole table at the end, and the first epochs at
    which the model fits its training set and groks S5 (-1: never), from the logged metrics."""
    logged = result.log_epochs
    return {"final_train_accuracy": float(result.final("train_acc")[0]),
            "final_test_accuracy": float(result.final("acc_test")[0]),
            "fitted_epoch": int(first_epoch_at_or_above(result.metrics["train_acc"], logged, threshold)[0]),
            "grok_epoch": int(first_epoch_at_or_above(result.metrics["acc_test"], logged, threshold)[0])}


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


__all__ = ["ClaimComparison", "MEASURE_LABELS", "TrackingRow", "claim_comparison", "measure_s5_run",
           "measures_results", "run_summary", "s5_measures_sweep", "sparse_epochs", "tracking_rows",
           "tracking_table"]
