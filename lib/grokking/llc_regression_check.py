"""The LLC estimator on a case with a known answer: full-rank linear regression (chapter 5).

The learning coefficient of linear regression with d weights is d / 2. `regression_check` runs
`lib.grokking.llc.estimate_llc` on such a model and compares the estimate with the estimator's
exact mean at the SGLD settings used (`RegressionCheck`); chapter 5 runs it before it trusts the
estimator on its MLPs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lib.grokking.llc import SGLDConfig, estimate_llc


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


__all__ = ["RegressionCheck", "regression_check"]
