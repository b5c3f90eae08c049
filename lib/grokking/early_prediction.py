"""Predicting a seed's final outcome from what it looks like at epoch t (chapter 6).

Beyond the study: is a seed's fate readable before it is determined? From features of each seed
at one epoch (for example its accuracy against each group on the pairs outside the training
set, its weight norm, its training loss) a logistic regression predicts a binary final outcome
(for example "grokked either group"). Every seed is scored by a model fitted without it
(k-fold cross-validation), and the ROC AUC of those held-out scores says how readable the
outcome is at that epoch.

* `fit_logistic`: L2-regularized logistic regression on standardized features (L-BFGS);
* `held_out_scores`: each seed's predicted probability from the fold that left it out;
* `held_out_auc`: their ROC AUC (`lib.book.statistics.roc_auc`);
* `early_prediction`: the chapter's question over a whole sweep: at every logged epoch, the
  held-out AUC of "grokked either group" against "neither", and of S4 against A4 x Z2 among
  the grokkers, from `PREDICTION_FEATURES`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.book.statistics import roc_auc
from lib.grokking.training import SweepResult


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


#: The features of a seed at one logged epoch from which its outcome is predicted.
PREDICTION_FEATURES = ("accuracy against S4", "accuracy against A4xZ2", "training accuracy",
                       "log10 training loss")


def logged_features(result: SweepResult, row: int) -> torch.Tensor:
    """(B, 4) `PREDICTION_FEATURES` of every seed at the `row`-th logged epoch of `result`."""
    metrics = result.metrics
    return torch.stack([metrics["acc_g1"][row], metrics["acc_g2"][row], metrics["train_acc"][row],
                        metrics["train_loss"][row].clamp_min(1e-12).log10()], dim=1).double()


@dataclass
class EarlyPrediction:
    """How readable each seed's final outcome is from its `PREDICTION_FEATURES` at epoch t.

    Attributes:
        epochs: (T,) the epochs.
        auc_either: (T,) held-out ROC AUC for "grokked either group" against "neither".
        auc_group: (T,) the same for "grokked S4" against "grokked A4xZ2", among the grokkers
            (NaN when one of them has no seed).
        folds: the folds used for the two AUCs.
    """

    epochs: torch.Tensor
    auc_either: torch.Tensor
    auc_group: torch.Tensor
    folds: tuple[int, int]

    def first_epoch_at_or_above(self, auc: float, which: str = "either") -> int:
        """First epoch from which the AUC stays at or above `auc` to the end; -1 if never."""
        values = self.auc_either if which == "either" else self.auc_group
        above = (values >= auc).int().flip(0).cummin(dim=0).values.flip(0).bool()
        return int(self.epochs[above.nonzero()[0, 0]]) if above.any() else -1


def early_prediction(result: SweepResult, groups: torch.Tensor, every: int, folds: int,
                     generator: torch.Generator) -> EarlyPrediction:
    """Held-out AUCs of a logistic regression predicting each seed's outcome group (`groups`:
    0 grokked the first group, 1 the second, 2 neither) from its features at every logged epoch
    that is a multiple of `every` (and the last)."""
    logged = result.log_epochs.tolist()
    rows = [i for i, e in enumerate(logged) if e % every == 0 or i == len(logged) - 1]
    grokked = groups < 2
    either_folds = min(folds, int(grokked.sum()), int((~grokked).sum()))
    group_folds = min(folds, int((groups == 0).sum()), int((groups == 1).sum()))
    auc_either, auc_group = [], []
    for row in rows:
        features = logged_features(result, row)
        auc_either.append(held_out_auc(features, grokked, either_folds, generator)
                          if either_folds >= 2 else float("nan"))
        auc_group.append(held_out_auc(features[grokked], groups[grokked] == 0, group_folds, generator)
                         if group_folds >= 2 else float("nan"))
    return EarlyPrediction(torch.tensor([logged[r] for r in rows]), torch.tensor(auc_either, dtype=torch.float64),
                           torch.tensor(auc_group, dtype=torch.float64), (either_folds, group_folds))


__all__ = ["EarlyPrediction", "Logistic", "PREDICTION_FEATURES", "early_prediction", "fit_logistic",
           "held_out_auc", "held_out_scores", "logged_features"]
