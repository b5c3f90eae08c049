"""Chapter 5's measures over time: its parameters wired to the study's S5 experiment, the table of
the measures' rank correlations, and what goes to the results JSON.

`s5_measures_sweep` trains the study's one S5 model (`lib.grokking.s5_measures_run`; its seed from
the "ch5_s5_measures" stream, the share of the table drawn from a generator seeded by the chapter
seed); `measure_s5_run` computes the cheap measures at every `measures_every`-th epoch and the
costly ones (PAC-Bayes sharpness, LLC) at every `measures_sparse_every`-th
(`lib.grokking.measures_over_time`); `lib.grokking.measure_ranking` ranks the measures by their
rank correlation with the gap and sets the study's claim against the ranking.
"""

from __future__ import annotations

import dataclasses

import torch

from lib.book.seed_streams import stream_seeds
from lib.grokking.generalization_measures import PacBayesSearch
from lib.grokking.llc import SGLDConfig
from lib.grokking.measure_ranking import TrackingRow, claim_comparison
from lib.grokking.measures_over_time import MeasuresOverTime, measures_over_time
from lib.grokking.s5_measures_run import run_summary, train_s5_measures_model
from lib.grokking.study import S5_MEASURES_CLAIM, S5_MEASURES_PROTOCOL
from lib.grokking.training import SweepResult, snapshot_epochs

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
    return train_s5_measures_model(stream_seeds("ch5_s5_measures", config.seed, 1), config.measures_epochs,
                                   config.measures_every, config.measures_dim, config.measures_train_fraction,
                                   torch.Generator().manual_seed(config.seed), device=config.device,
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


__all__ = ["MEASURE_LABELS", "measure_s5_run", "measures_results", "s5_measures_sweep", "sparse_epochs",
           "tracking_table"]
