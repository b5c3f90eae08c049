"""Parameters and runs of chapter 5 (complexity of the grokked solution).

The notebook `notebooks/05_complexity.py` validates `Chapter5Parameters`, gets chapter 4's S4
sweep without the unembedding bias (`lib.grokking.study_sweep.load_s4_sweep`: loaded, or trained
here with the same code when missing), and measures its seeds: local learning coefficient
(`lib.grokking.mlp_llc`), weight norm and circuit efficiency (`lib.grokking.circuit_efficiency`)
at the end of training (`lib.grokking.end_of_training`), the LLC along training
(`lib.grokking.llc_trajectory`: one S4 seed per outcome, and S5 seeds as the study followed
them), how the LLC estimate moves with the length of the SGLD chains
(`lib.grokking.chain_length`), and the generalization measures of Jiang et al. along the
training of one S5 model on 40% of its table, as the study followed them (`lib.grokking.s5_measures_run`,
`lib.grokking.measure_ranking`); the LLC estimator is first checked on linear regression
(`lib.grokking.llc_regression_check`). The runs that need the chapter's parameters are here
(`s5_llc_over_training`, `s5_measures_sweep`, `measure_s5_run`); the tables and results-JSON
entries of what they give are in `lib.chapters.ch5_results`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from lib.book.params import ParameterError, at_most, parameter
from lib.book.seed_streams import stream_seeds
from lib.chapters.sweep_parameters import SweepChapterParameters
from lib.grokking.generalization_measures import PacBayesSearch
from lib.grokking.llc import SGLDConfig
from lib.grokking.llc_trajectory import Trajectory, s5_llc_trajectory, s5_snapshot_epochs
from lib.grokking.measures_over_time import MeasuresOverTime, measures_over_time
from lib.grokking.s5_measures_run import train_s5_measures_model
from lib.grokking.training import SweepResult, snapshot_epochs


@dataclass(frozen=True)
class Chapter5Parameters(SweepChapterParameters):
    """The papermill parameters of chapter 5, each with its type, bounds, help and smoke value."""

    llc_chains: int = parameter("SGLD chains per S4 seed (published: 100)", low=2, high=10_000,
                                smoke=at_most(2))
    llc_steps: int = parameter("SGLD steps per chain (published: 3,000)", low=2, high=1_000_000,
                               smoke=at_most(20))
    llc_step_size: float = parameter("SGLD step size (published: 8e-4)", low=0.0, high=1.0,
                                     low_inclusive=False)
    llc_n_beta: float = parameter("SGLD inverse temperature n * beta (published: 1e3)", low=0.0,
                                  high=1e9, low_inclusive=False)
    llc_localization: float = parameter("SGLD localization strength gamma (published: 1)", low=0.0,
                                        high=1e6)
    llc_burn_in: float = parameter("share of each chain's steps left out as burn-in (published: 0.6)",
                                   low=0.0, high=0.99)
    neither_sample: int = parameter(
        "seeds that grokked neither group measured beside every grokker", low=1, high=1_000_000,
        smoke=at_most(4))
    efficiency_per_outcome: int = parameter(
        "seeds per outcome whose training objective is followed along the rescaling curve (the study: 20)",
        low=1, high=1_000_000, smoke=at_most(2))
    bootstrap_resamples: int = parameter("bootstrap resamples of every interval", low=100,
                                         high=1_000_000, smoke=at_most(100))
    fallback_instances: int = SweepChapterParameters.shared("fallback_instances")
    fallback_epochs: int = SweepChapterParameters.shared("fallback_epochs")
    trajectory_every: int = parameter(
        "epochs between the snapshots at which one seed per outcome is measured over training",
        low=1, smoke=at_most(20))
    measures_epochs: int = parameter(
        "epochs of the S5 model whose measures are followed over training (the study: 2,000)", low=1,
        high=1_000_000, smoke=at_most(30))
    measures_train_fraction: float = parameter("share of S5's table it trains on (the study: 0.4)",
                                               low=0.0, high=1.0, low_inclusive=False)
    measures_dim: int = parameter("its embedding and hidden width, the two alike (the study: 128)", low=1,
                                  high=4096, smoke=at_most(16))
    measures_every: int = parameter(
        "epochs between its checkpoints, where the cheap measures are computed (the study: 3)", low=1,
        smoke=at_most(3))
    measures_sparse_every: int = parameter(
        "epochs between the checkpoints where the PAC-Bayes sharpness and the LLC are computed too, "
        "a multiple of measures_every (the study: 3)", low=1, smoke=at_most(15))
    measures_llc_chains: int = parameter("SGLD chains per sparse checkpoint (the study: 5)", low=2,
                                         high=10_000, smoke=at_most(2))
    measures_llc_steps: int = parameter("SGLD steps per chain there (the study: 3,000)", low=2,
                                        high=1_000_000, smoke=at_most(20))
    pac_bayes_doubling_draws: int = parameter(
        "noise draws per doubling step of the PAC-Bayes sigma search (the study: 100)", low=1,
        high=1_000_000, smoke=at_most(4))
    pac_bayes_bisection_draws: int = parameter(
        "noise draws per bisection step of the PAC-Bayes sigma search (the study: 1,000)", low=1,
        high=1_000_000, smoke=at_most(8))
    grok_threshold: float = SweepChapterParameters.shared("grok_threshold")
    s5_seeds: int = parameter("S5 vs A5 x Z2 seeds whose LLC is followed along training", low=1,
                              high=10_000, smoke=at_most(1))
    s5_dim: int = parameter("their embedding and hidden width, the two alike (the study: 128)", low=1,
                            high=4096, smoke=at_most(8))
    s5_epochs: int = parameter("their epochs (the study: 2,000)", low=1, high=1_000_000,
                               smoke=at_most(20))
    s5_snapshots: tuple[int, ...] = parameter(
        "epochs at which their LLC is estimated, with the last epoch (published: every 10)", low=0,
        high=1_000_000, smoke=lambda epochs: (10, 20))
    s5_every: int = parameter(
        "epochs between further snapshots on a regular grid, 0 for none (published: 10)", low=0,
        high=1_000_000, smoke=at_most(0))
    s5_llc_chains: int = parameter("SGLD chains per S5 snapshot (published: 3)", low=2,
                                   high=10_000, smoke=at_most(2))
    s5_llc_steps: int = parameter("SGLD steps per chain at each S5 snapshot (published: 3,000)",
                                  low=2, high=1_000_000, smoke=at_most(20))
    chain_lengths: tuple[int, ...] = parameter(
        "chain lengths at which every estimate is also read from the first steps of its chains",
        low=1, high=1_000_000, smoke=lambda lengths: (5, 10, 20))
    cpu_threads: int = parameter("torch threads of this process on the CPU (the measures)", low=1,
                                 high=256)
    workers: int = parameter("single-threaded worker processes for the LLC chains and the "
                             "training here, on a CPU", low=1, high=256)

    @property
    def sgld(self) -> SGLDConfig:
        """The SGLD settings of every LLC estimate of the chapter (full batch)."""
        return SGLDConfig(step_size=self.llc_step_size, n_beta=self.llc_n_beta,
                          localization=self.llc_localization, steps=self.llc_steps,
                          chains=self.llc_chains, burn_in=self.llc_burn_in)

    def check_consistency(self) -> None:
        super().check_consistency()
        if self.measures_sparse_every % self.measures_every:
            raise ParameterError(
                f"Parameter `measures_sparse_every` must be a multiple of `measures_every` "
                f"({self.measures_every}); got {self.measures_sparse_every}.")
        longest = min(self.llc_steps, self.s5_llc_steps)
        if max(self.chain_lengths) > longest:
            raise ParameterError(
                f"Parameter `chain_lengths` must not exceed the chains' steps (llc_steps and "
                f"s5_llc_steps, at least {longest}); got {max(self.chain_lengths)}.")


def s5_llc_over_training(config: Chapter5Parameters, generator: torch.Generator,
                         progress: bool = True) -> Trajectory:
    """Train `s5_seeds` seeds (the "ch5_s5_trajectory" seed stream) of the S5 pair at the study's
    setting (width `s5_dim`, epochs `s5_epochs`) with snapshots at `s5_snapshot_epochs` (of
    `s5_snapshots` and `s5_every`), and
    estimate the LLC at each snapshot with `s5_llc_chains` chains of `s5_llc_steps` steps (the
    other SGLD settings as for S4)."""
    marks = s5_snapshot_epochs(config.s5_snapshots, config.s5_epochs, config.s5_every)
    seeds = stream_seeds("ch5_s5_trajectory", config.seed, config.s5_seeds)
    sgld = dataclasses.replace(config.sgld, chains=config.s5_llc_chains, steps=config.s5_llc_steps)
    return s5_llc_trajectory(seeds, config.s5_dim, config.s5_epochs, marks, sgld, config.grok_threshold, generator,
                             workers=config.workers, device=config.device, progress=progress)


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


__all__ = [
    "Chapter5Parameters", "measure_s5_run", "s5_llc_over_training", "s5_measures_sweep", "sparse_epochs",
]
