"""Parameters and runs of chapter 5 (complexity of the grokked solution).

The notebook `notebooks/05_complexity.py` validates `Chapter5Parameters`, gets chapter 4's S4
sweep without the unembedding bias (`lib.grokking.study_sweep.load_s4_sweep`: loaded, or trained
here with the same code when missing), and measures its seeds: local learning coefficient
(`lib.grokking.mlp_llc`), weight norm and circuit efficiency (`lib.grokking.circuit_efficiency`)
at the end of training (`measure_end_of_training`), the LLC along training
(`lib.chapters.ch5_trajectory`: one S4 seed per outcome, and S5 seeds as the study followed
them), how the LLC estimate moves with the length of the SGLD chains
(`lib.chapters.ch5_chain_length`), and the generalization measures of Jiang et al. along the
training of one S5 model on 40% of its table, as the study followed them (`lib.chapters.ch5_measures`). What
the chapter reports about these numbers (summaries per outcome, correlations, AUCs) is built in
`lib.chapters.ch5_results`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from lib.book.params import ParameterError, at_most, parameter
from lib.chapters.sweep_parameters import SweepChapterParameters
from lib.grokking.circuit_efficiency import loss_at_norm
from lib.grokking.llc import LLCEstimate, SGLDConfig, estimate_llc
from lib.grokking.mlp_llc import mlp_llc_in_chunks
from lib.grokking.mlp import instance_loss, parameter_norm, select_instances
from lib.grokking.study_sweep import GROUPS
from lib.grokking.training import SweepResult


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
    measures_dim: int = parameter("its embedding and hidden width d = h (the study: 128)", low=1,
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
    s5_dim: int = parameter("their embedding and hidden width d = h (the study: 128)", low=1,
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


# --- End of training -----------------------------------------------------------------------


@dataclass
class EndOfTraining:
    """The measured seeds at the end of training, one entry per seed (all (K,) tensors).

    Attributes:
        index: the seeds' positions in the sweep; group: their `GROUPS` index.
        train_loss: mean training cross-entropy; weight_norm: L2 norm of all parameters.
        llc: the LLC estimates (mean, spread over chains, per chain).
        efficiency_norm: the common norm at which efficiency is read (median of weight_norm).
        efficiency_loss: training loss after rescaling the weights to `efficiency_norm`
            (circuit efficiency: lower = more efficient).
        llc_seconds: wall-clock time of the LLC estimates.
    """

    index: torch.Tensor
    group: torch.Tensor
    train_loss: torch.Tensor
    weight_norm: torch.Tensor
    llc: LLCEstimate
    efficiency_norm: float
    efficiency_loss: torch.Tensor
    llc_seconds: float

    def measures(self) -> dict[str, torch.Tensor]:
        """The per-seed numbers compared across outcomes, by name."""
        return {"train_loss": self.train_loss, "weight_norm": self.weight_norm,
                "llc": self.llc.mean, "efficiency_loss": self.efficiency_loss}


def first_seed_per_outcome(end: EndOfTraining) -> dict[str, int]:
    """Outcome name -> position in `end` of its first measured seed (outcomes present only);
    the seeds whose rescaling curves chapter 5 draws."""
    return {name: int((end.group == code).nonzero()[0]) for code, name in enumerate(GROUPS)
            if (end.group == code).any()}


def measure_end_of_training(result: SweepResult, index: torch.Tensor, groups: torch.Tensor,
                            config: Chapter5Parameters, generator: torch.Generator) -> EndOfTraining:
    """Training loss, weight norm, LLC and circuit efficiency of the seeds at `index`."""
    device = torch.device(config.device)
    params = {k: v.to(device) for k, v in select_instances(result.final_params, index).items()}
    train = (result.train_left, result.train_right, result.train_labels)
    with torch.no_grad():
        train_loss = instance_loss(params, *(t.to(device) for t in train)).double().cpu()
        norm = parameter_norm(params).double().cpu()
    started = time.perf_counter()
    llc = mlp_llc_in_chunks(params, *train, config.sgld, generator, workers=config.workers)
    seconds = time.perf_counter() - started
    common = float(norm.median())
    with torch.no_grad():
        efficiency = loss_at_norm(params, *(t.to(device) for t in train), common).double().cpu()
    return EndOfTraining(index, groups[index], train_loss, norm, llc, common, efficiency, seconds)


# --- The estimator on a case with a known answer -----------------------------------------


@dataclass(frozen=True)
class RegressionCheck:
    """The LLC estimator on full-rank linear regression, whose learning coefficient is d / 2.

    Attributes:
        estimate, sem: the estimate and its standard error over chains.
        expected: the exact mean of the estimator at these SGLD settings (localization and step
            size move it slightly away from d / 2; see `regression_check`).
        learning_coefficient: d / 2.
    """

    estimate: float
    sem: float
    expected: float
    learning_coefficient: float

    @property
    def passes(self) -> bool:
        """Within 4 standard errors of the exact mean, and within 10% of d / 2."""
        return (abs(self.estimate - self.expected) < 4 * self.sem
                and abs(self.estimate - self.learning_coefficient) < 0.1 * self.learning_coefficient)


def regression_check(generator: torch.Generator, dimension: int = 4, n_data: int = 500) -> RegressionCheck:
    """Run the estimator on linear regression with `dimension` weights and `n_data` points.

    The loss is half the mean squared error (a Gaussian likelihood of unit variance). Near the
    least-squares fit w* it is (w - w*)^T H (w - w*) / 2 with H = X^T X / n, so SGLD is an
    autoregressive chain whose stationary variance along an eigenvector of H (eigenvalue h) is
    1 / (a (1 - eps a / 4)), a = n beta h + gamma: the estimator's exact mean is
    sum_h n beta h / (2 a (1 - eps a / 4)), within a few percent of d / 2. Settings: n beta =
    n / log n (devinterp's default), step 1e-3, 40 chains of 1,000 steps, half of them burn-in.
    """
    x = torch.randn(n_data, dimension, generator=generator, dtype=torch.float64)
    w_true = torch.randn(dimension, generator=generator, dtype=torch.float64)
    y = x @ w_true + torch.randn(n_data, generator=generator, dtype=torch.float64)
    w_star = torch.linalg.lstsq(x, y[:, None]).solution[:, 0]

    def loss_fn(models: dict[str, torch.Tensor], batch: torch.Tensor | None) -> torch.Tensor:
        return (y[None, :] - models["w"] @ x.T).pow(2).mean(dim=1) / 2

    sgld = SGLDConfig(step_size=1e-3, n_beta=n_data / math.log(n_data), localization=1.0,
                      steps=1000, chains=40, burn_in=0.5)
    estimate = estimate_llc(loss_fn, {"w": w_star[None, :]}, sgld, generator, n_data=n_data)
    h = torch.linalg.eigvalsh(x.T @ x / n_data)
    a = sgld.n_beta * h + sgld.localization
    expected = float((sgld.n_beta * h / (2 * a * (1 - sgld.step_size * a / 4))).sum())
    return RegressionCheck(float(estimate.mean[0]), float(estimate.sem[0]), expected, dimension / 2)


__all__ = [
    "Chapter5Parameters", "EndOfTraining", "GROUPS", "RegressionCheck", "first_seed_per_outcome",
    "measure_end_of_training", "regression_check",
]
