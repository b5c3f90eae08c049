"""Predicting a seed's final outcome from what it looks like at epoch t (chapter 6).

Beyond the study: is a seed's fate readable before it is determined? From features of each seed
at one epoch (for example its accuracy against each group on the pairs outside the training
set, its weight norm, its training loss) a logistic regression predicts a binary final outcome
(for example "grokked either group"). Every seed is scored by a model fitted without it
(k-fold cross-validation), and the ROC AUC of those held-out scores says how readable the
outcome is at that epoch.

* `fit_logistic`: L2-regularized logistic regression on standardized features (L-BFGS);
* `held_out_scores`: each seed's predicted probability from the fold that left it out;
* `held_out_auc`: their ROC AUC (`lib.book.statistics.roc_auc`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.book.statistics import roc_auc


@dataclass(frozen=True)
class Logistic:
    """A fitted logistic regression: standardization, then weights and bias."""

    mean: torch.Tensor
    scale: torch.Tensor
    weights: torch.Tensor
    bias: torch.Tensor

    def probability(self, features: torch.Tensor) -> torch.Tensor:
        """(n,) predicted probability of the positive class."""
        z = (features.double() - self.mean) / self.scale
        return torch.sigmoid(z @ self.weights + self.bias)


def fit_logistic(features: torch.Tensor, positive: torch.Tensor, l2: float = 1e-2,
                 iterations: int = 100) -> Logistic:
    """Logistic regression of `positive` (n,) on `features` (n, f), standardized, with an L2
    penalty `l2` on the weights (so a separable set still gives finite weights)."""
    x = features.double()
    mean, scale = x.mean(dim=0), x.std(dim=0).clamp_min(1e-12)
    z, y = (x - mean) / scale, positive.double()
    weights = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    bias = torch.zeros((), dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([weights, bias], max_iter=iterations, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z @ weights + bias, y) \
            + l2 * weights.pow(2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return Logistic(mean, scale, weights.detach(), bias.detach())


def held_out_scores(features: torch.Tensor, positive: torch.Tensor, folds: int,
                    generator: torch.Generator, l2: float = 1e-2) -> torch.Tensor:
    """(n,) each seed's probability from a regression fitted on the other folds (folds drawn
    at random from `generator`, stratified by class)."""
    n = len(positive)
    if not 2 <= folds <= n:
        raise ValueError(f"folds must be between 2 and the number of seeds ({n}); got {folds}.")
    # Stratified: each class is dealt round the folds in a random order, so that every fold
    # holds out both classes in proportion (a class of a few seeds would otherwise be missing
    # from some training folds).
    fold = torch.empty(n, dtype=torch.long)
    for value in (False, True):
        members = (positive.bool() == value).nonzero().squeeze(1)
        fold[members[torch.randperm(len(members), generator=generator)]] = torch.arange(len(members)) % folds
    scores = torch.empty(n, dtype=torch.float64)
    for k in range(folds):
        held = fold == k
        scores[held] = fit_logistic(features[~held], positive[~held], l2).probability(features[held])
    return scores


def held_out_auc(features: torch.Tensor, positive: torch.Tensor, folds: int,
                 generator: torch.Generator, l2: float = 1e-2) -> float:
    """ROC AUC of the held-out scores for telling `positive` seeds from the rest."""
    return roc_auc(held_out_scores(features, positive, folds, generator, l2), positive)


__all__ = ["Logistic", "fit_logistic", "held_out_auc", "held_out_scores"]
