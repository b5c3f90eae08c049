"""Linear probes trained many at once: logistic for yes/no facts, ridge for numbers (chapter 7).

A probe reads one fact (say "vertex 1 is within 3 steps of this edge") off one layer's residual
stream with a linear map. Chapter 7 needs dozens of them (every layer x every fact x three
models), so they are fitted together: `targets` is (P, N), P probes on N examples each, and
`features` is (N, d) when all P probes read the same activations (one layer, several facts) or
(P, N, d) when each has its own. Features are standardised per probe on the training examples, so the L2 penalty treats
every direction alike and the fitted weights are comparable across layers.

Logistic probes minimise the mean cross-entropy plus l2 / 2 |w|^2 with L-BFGS (the problems
are independent and convex, so one L-BFGS over all of them reaches each one's optimum); ridge
probes are solved in closed form. Scores are computed on held-out examples: balanced accuracy
(the mean of the two classes' recalls, 0.5 for a probe that knows nothing whatever the base
rate) and R^2.

A logistic probe's cut-off at logit 0 is set by the base rate as much as by what the features
hold: with a rare class, a probe that ranks every example right can still call the rare ones
"no". `score_logistic` therefore scores a probe three ways: threshold-free (held-out ROC AUC),
with the cut-off tuned on the training examples (the logit at which the training balanced
accuracy is highest, `tuned_cutoffs`) and with the untuned cut-off 0 (for comparison only).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.book.statistics import roc_auc

#: The probe kinds: a yes/no fact (logistic regression) or a number (ridge regression).
PROBE_KINDS = ("logistic", "linear")


@dataclass(frozen=True)
class Probes:
    """P fitted probes. `weight` (P, d) and `bias` (P,) act on standardised features."""

    kind: str
    weight: torch.Tensor
    bias: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor

    def scores(self, features: torch.Tensor) -> torch.Tensor:
        """(P, N) logits (logistic) or predictions (linear) for features (N, d) or (P, N, d)."""
        standard = (features.double() - self.mean.unsqueeze(1)) / self.std.unsqueeze(1)
        return _apply(standard, self.weight, self.bias)

    def direction(self) -> torch.Tensor:
        """(P, d) unit vectors in the raw residual stream along which each probe's output grows."""
        raw = self.weight / self.std
        return raw / raw.norm(dim=1, keepdim=True).clamp_min(1e-12)


def _apply(standard: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """(P, N) = standard (1 or P, N, d) times weight (P, d), plus bias (P,)."""
    return (standard @ weight.unsqueeze(-1)).squeeze(-1) + bias.unsqueeze(1)


def fit_probes(features: torch.Tensor, targets: torch.Tensor, *, kind: str, l2: float = 1e-3,
               iterations: int = 200) -> Probes:
    """Fit P probes on (N, d) or (P, N, d) features and (P, N) targets (0/1 for logistic).

    Args:
        kind: "logistic" or "linear".
        l2: penalty on the squared weight norm (per example, on standardised features).
        iterations: L-BFGS iterations of the logistic fit.
    """
    if kind not in PROBE_KINDS:
        raise ValueError(f"Probe kind must be one of {PROBE_KINDS}; got {kind!r}.")
    shared = features.dim() == 2
    if targets.dim() != 2 or features.dim() not in (2, 3) or \
            features.shape[-2] != targets.shape[1] or (not shared and features.shape[0] != targets.shape[0]):
        raise ValueError(f"Need features (N, d) or (P, N, d) and targets (P, N); got {tuple(features.shape)} "
                         f"and {tuple(targets.shape)}.")
    features = (features.unsqueeze(0) if shared else features).double()
    targets = targets.double()
    n_probes, (n_examples, width) = targets.shape[0], features.shape[1:]
    mean, std = features.mean(dim=1), features.std(dim=1).clamp_min(1e-6)
    standard = (features - mean.unsqueeze(1)) / std.unsqueeze(1)
    mean, std = mean.expand(n_probes, -1), std.expand(n_probes, -1)
    if kind == "linear":
        # Ridge regression on centred targets: (X'X / N + l2 I) w = X'y / N; the bias is the mean.
        gram = standard.transpose(1, 2) @ standard / n_examples + l2 * torch.eye(width, dtype=torch.float64)
        target_mean = targets.mean(dim=1)
        moment = standard.transpose(1, 2) @ (targets - target_mean.unsqueeze(1)).unsqueeze(-1) / n_examples
        weight = torch.linalg.solve(gram, moment).squeeze(-1)
        return Probes(kind, weight.expand(n_probes, -1), target_mean, mean, std)
    weight = torch.zeros(n_probes, width, dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(n_probes, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], max_iter=iterations, line_search_fn="strong_wolfe",
                                  tolerance_grad=1e-9, tolerance_change=1e-12, history_size=20)

    def loss() -> torch.Tensor:
        optimizer.zero_grad()
        logits = _apply(standard, weight, bias)
        value = (torch.nn.functional.binary_cross_entropy_with_logits(logits, targets, reduction="none").mean(1)
                 + 0.5 * l2 * (weight ** 2).sum(1)).sum()
        value.backward()
        return value

    optimizer.step(loss)
    return Probes(kind, weight.detach(), bias.detach(), mean, std)


def balanced_accuracy(logits: torch.Tensor, labels: torch.Tensor, cutoffs: torch.Tensor | None = None
                      ) -> torch.Tensor:
    """(P,) mean of the recall of each class, from (P, N) logits and 0/1 labels, calling "yes"
    where the logit exceeds the probe's cut-off (`cutoffs` (P,); 0 without them); NaN for a
    probe whose held-out labels are all one class (nothing to tell apart)."""
    cut = torch.zeros(logits.shape[0], dtype=torch.float64) if cutoffs is None else cutoffs.double()
    predicted, labels = logits.double() > cut.unsqueeze(1), labels.bool()
    positives, negatives = labels.sum(1), (~labels).sum(1)
    recall_yes = (predicted & labels).sum(1) / positives.clamp_min(1)
    recall_no = (~predicted & ~labels).sum(1) / negatives.clamp_min(1)
    score = 0.5 * (recall_yes + recall_no).double()
    return torch.where((positives > 0) & (negatives > 0), score, torch.nan)


def tuned_cutoffs(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """(P,) per probe, the logit cut-off that maximises the balanced accuracy on these (training)
    examples: midway between the two neighbouring logits where it is best (the highest such cut
    on ties); 0 where the labels are all one class."""
    cutoffs = []
    for scores, yes in zip(logits.double(), labels.bool()):
        positives, negatives = int(yes.sum()), int((~yes).sum())
        if positives == 0 or negatives == 0:
            cutoffs.append(0.0)
            continue
        order = torch.argsort(scores, descending=True)
        ranked, ranked_yes = scores[order], yes[order].double()
        # Calling the first i + 1 ranked examples "yes": both recalls after each position.
        accuracy = 0.5 * (ranked_yes.cumsum(0) / positives + 1 - (1 - ranked_yes).cumsum(0) / negatives)
        # Only a cut between two distinct logits (or below the lowest) can be realised.
        distinct = torch.cat([ranked[:-1] > ranked[1:], torch.tensor([True])])
        best = int(torch.argmax(torch.where(distinct, accuracy, -1.0)))
        below = ranked[best + 1] if best + 1 < len(ranked) else ranked[best] - 1
        cutoffs.append(float((ranked[best] + below) / 2))
    return torch.tensor(cutoffs, dtype=torch.float64)


def roc_aucs(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """(P,) held-out ROC AUC of each probe's (P, N) logits for its 0/1 labels (NaN with one class)."""
    return torch.tensor([roc_auc(scores, yes) for scores, yes in zip(logits, labels.bool())], dtype=torch.float64)


@dataclass(frozen=True)
class LogisticScores:
    """Held-out scores of logistic probes, each of the same shape: `auc` (ROC AUC, free of any
    cut-off), `tuned` (balanced accuracy at the cut-off tuned on the training examples) and
    `untuned` (balanced accuracy at logit 0)."""

    auc: torch.Tensor
    tuned: torch.Tensor
    untuned: torch.Tensor

    @staticmethod
    def stack(rows: list[LogisticScores]) -> LogisticScores:
        """The scores of `rows` stacked along a new first dimension."""
        return LogisticScores(*(torch.stack([getattr(row, name) for row in rows])
                                for name in ("auc", "tuned", "untuned")))


def score_logistic(train_logits: torch.Tensor, train_labels: torch.Tensor, test_logits: torch.Tensor,
                   test_labels: torch.Tensor) -> LogisticScores:
    """(P,) scores of P probes: the cut-off is tuned on the training logits and labels, every
    score is computed on the held-out ones."""
    return LogisticScores(roc_aucs(test_logits, test_labels),
                          balanced_accuracy(test_logits, test_labels, tuned_cutoffs(train_logits, train_labels)),
                          balanced_accuracy(test_logits, test_labels))


def r_squared(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(P,) coefficient of determination of (P, N) predictions on held-out targets."""
    targets = targets.double()
    residual = ((predictions.double() - targets) ** 2).sum(1)
    total = ((targets - targets.mean(1, keepdim=True)) ** 2).sum(1)
    return 1 - residual / total.clamp_min(1e-12)


__all__ = ["PROBE_KINDS", "LogisticScores", "Probes", "balanced_accuracy", "fit_probes", "r_squared", "roc_aucs",
           "score_logistic", "tuned_cutoffs"]
