"""What fine-tuning did: the held-out on-path loss before and after, the pre-training task's loss,
AdamW's weight shrink and the errors by kind of target before and after (chapter 3).

`summarize_finetuning` builds the `FinetuningSummary` from predictions and labels,
`summarize_finetuning_run` from a finished run of `lib.paths.finetuning`. Both are
deterministic and draw no random numbers.
"""

from __future__ import annotations

import dataclasses

import torch

from lib.paths.finetuning import PUBLISHED_FINETUNING, loss_on, weight_shrink_factor
from lib.paths.generalization_tests import by_target_kind, distance_1_to_2, target_kinds
from lib.paths.model import PathTransformer
from lib.paths.target_kind_scores import TargetKindScores
from lib.paths.training import TrainingRun


def share_with_target(tokens: torch.Tensor, vertex: int) -> float:
    """Share of examples whose target token is `vertex` (chapter 3: how often vertex 2 is the
    fine-tuning target)."""
    return float((tokens[:, -1, 0] == vertex).float().mean())


def _mse(predictions: torch.Tensor, labels: torch.Tensor) -> float:
    # The same operations as `lib.paths.finetuning.held_out_loss`, so the numbers are identical.
    return float(((predictions.double() - labels.cpu().double()) ** 2).mean())


@dataclasses.dataclass(frozen=True)
class FinetuningSummary:
    """What fine-tuning did, on the held-out on-path graphs and on the pre-training task.

    Attributes:
        steps: fine-tuning steps taken.
        loss_before, loss_after: held-out on-path MSE of the pre-trained and fine-tuned model.
        published_loss_before, published_loss_after: the post's values (at its own scale).
        pretrain_task_loss_before, pretrain_task_loss_after: MSE on the pre-training task
            (target 2, the base model's graphs) before and after fine-tuning.
        weight_shrink: factor by which AdamW's decay alone scales every weight over this run.
        published_weight_shrink: the same at the post's stated settings.
        kinds_before, kinds_after: the held-out errors by kind of target.
    """

    steps: int
    loss_before: float
    loss_after: float
    published_loss_before: float
    published_loss_after: float
    pretrain_task_loss_before: float
    pretrain_task_loss_after: float
    weight_shrink: float
    published_weight_shrink: float
    kinds_before: TargetKindScores
    kinds_after: TargetKindScores

    def record(self) -> dict:
        """The fine-tuning entries of chapter 3's results JSON."""
        return {
            "finetune_loss_before": self.loss_before,
            "finetune_loss_after": self.loss_after,
            "published_finetune_loss_before": self.published_loss_before,
            "published_finetune_loss_after": self.published_loss_after,
            "finetune_by_target_kind_before": self.kinds_before.record(),
            "finetune_by_target_kind": self.kinds_after.record(),
            "pretrain_task_loss_before_finetune": self.pretrain_task_loss_before,
            "pretrain_task_loss_after_finetune": self.pretrain_task_loss_after,
        }


def summarize_finetuning(*, labels: torch.Tensor, predictions_before: torch.Tensor,
                         predictions_after: torch.Tensor, kinds: torch.Tensor, distance_12: torch.Tensor,
                         steps: int, pretrain_task_loss_before: float, pretrain_task_loss_after: float,
                         learning_rate: float, weight_decay: float) -> FinetuningSummary:
    """The `FinetuningSummary` of held-out predictions before and after fine-tuning (chapter 3).

    Args:
        labels: (B,) true distances of the held-out on-path examples.
        predictions_before, predictions_after: (B,) predictions of the two models on them.
        kinds, distance_12: `target_kinds` and `distance_1_to_2` of the examples.
        steps, learning_rate, weight_decay: the fine-tuning run's AdamW settings.
        pretrain_task_loss_before, pretrain_task_loss_after: the two models' MSE on the
            pre-training task (measured by the caller on the same graphs).
    """
    return FinetuningSummary(
        steps=steps,
        loss_before=_mse(predictions_before, labels),
        loss_after=_mse(predictions_after, labels),
        published_loss_before=PUBLISHED_FINETUNING["loss_before"],
        published_loss_after=PUBLISHED_FINETUNING["loss_after"],
        pretrain_task_loss_before=pretrain_task_loss_before,
        pretrain_task_loss_after=pretrain_task_loss_after,
        weight_shrink=weight_shrink_factor(learning_rate, weight_decay, steps),
        published_weight_shrink=weight_shrink_factor(PUBLISHED_FINETUNING["learning_rate"],
                                                     PUBLISHED_FINETUNING["weight_decay"],
                                                     PUBLISHED_FINETUNING["steps"]),
        kinds_before=TargetKindScores.from_by_kind(
            by_target_kind(predictions_before, labels, kinds, distance_12)),
        kinds_after=TargetKindScores.from_by_kind(
            by_target_kind(predictions_after, labels, kinds, distance_12)),
    )


def summarize_finetuning_run(run: TrainingRun, base_model: PathTransformer, pretrain_tokens: torch.Tensor,
                             pretrain_labels: torch.Tensor, *, unreachable_label: int,
                             learning_rate: float, weight_decay: float) -> FinetuningSummary:
    """`summarize_finetuning` of a finished fine-tuning run (chapter 3).

    The run's first and last snapshots are the predictions before and after fine-tuning on its
    held-out batch; the pre-training task's loss is measured on `pretrain_tokens` with the base
    model and the fine-tuned one.
    """
    return summarize_finetuning(
        labels=run.eval_labels, predictions_before=run.snapshot_predictions[0],
        predictions_after=run.snapshot_predictions[-1], kinds=target_kinds(run.eval_tokens),
        distance_12=distance_1_to_2(run.eval_tokens, unreachable_label), steps=run.step,
        pretrain_task_loss_before=loss_on(base_model, pretrain_tokens, pretrain_labels),
        pretrain_task_loss_after=loss_on(run.model, pretrain_tokens, pretrain_labels),
        learning_rate=learning_rate, weight_decay=weight_decay)


__all__ = [
    "FinetuningSummary", "share_with_target", "summarize_finetuning", "summarize_finetuning_run",
]
