"""The irrep profile along training, and how early it tells a seed's outcome (chapter 8).

Chapter 8 retrains chosen seeds of chapter 4's S4 sweep with dense snapshots and reads their
embeddings at every snapshot with `lib.grokking.irrep_readout`:

* `profiles_over_training`: the pooled embedding shares of every seed in each component, at
  every snapshot, (C, B, K);
* `settle_epochs`: for each seed, the first snapshot from which its profile stays within a total
  variation distance of its final profile (half the L1 distance between the share vectors);
* `auc_over_epochs`: at every snapshot, the held-out ROC AUC of a logistic regression from the
  profile to the final outcome (grokked either group against neither; S4 against A4 x Z2 among
  the grokkers), with chapter 6's regression and folds (`lib.grokking.early_prediction`), so the
  curve sits beside chapter 6's curve from accuracies and losses; the result is chapter 6's
  `EarlyPrediction`.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from lib.grokking.early_prediction import EarlyPrediction, held_out_auc
from lib.grokking.irrep_readout import irrep_profile


def profiles_over_training(checkpoints: Mapping[int, dict[str, torch.Tensor]],
                           projectors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """((C,) snapshot epochs in order, (C, B, K) pooled embedding shares of every seed at each)."""
    epochs = sorted(checkpoints)
    shares = torch.stack([irrep_profile(checkpoints[epoch], projectors).embedding for epoch in epochs])
    return torch.tensor(epochs), shares


def settle_epochs(profiles: torch.Tensor, epochs: torch.Tensor, tolerance: float) -> torch.Tensor:
    """(B,) the first snapshot epoch from which each seed's profile (profiles (C, B, K)) stays
    within total variation `tolerance` of its last one at every later snapshot."""
    distance = 0.5 * (profiles - profiles[-1:]).abs().sum(dim=2)                    # (C, B)
    within = distance <= tolerance
    from_here = within.int().flip(0).cummin(dim=0).values.flip(0).bool()
    return epochs[from_here.double().argmax(dim=0)]


def auc_over_epochs(features: torch.Tensor, epochs: torch.Tensor, groups: torch.Tensor, folds: int,
                    generator: torch.Generator) -> EarlyPrediction:
    """Held-out AUCs at every snapshot from features (C, B, F) of each seed, for its outcome group
    (`groups`: 0 grokked the first group, 1 the second, 2 neither); NaN where a class has fewer
    than two seeds. Folds: `folds`, or the size of the smaller class when it is smaller."""
    grokked = groups < 2
    either_folds = min(folds, int(grokked.sum()), int((~grokked).sum()))
    group_folds = min(folds, int((groups == 0).sum()), int((groups == 1).sum()))
    auc_either, auc_group = [], []
    for snapshot in features.double():
        auc_either.append(held_out_auc(snapshot, grokked, either_folds, generator)
                          if either_folds >= 2 else float("nan"))
        auc_group.append(held_out_auc(snapshot[grokked], groups[grokked] == 0, group_folds, generator)
                         if group_folds >= 2 else float("nan"))
    return EarlyPrediction(epochs.clone(), torch.tensor(auc_either, dtype=torch.float64),
                           torch.tensor(auc_group, dtype=torch.float64), (either_folds, group_folds))


__all__ = ["auc_over_epochs", "profiles_over_training", "settle_epochs"]
