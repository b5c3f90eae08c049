"""The fine-tuning summary by hand, from its numbers and from a run's snapshots (lib.paths.finetuning_summary)."""

from types import SimpleNamespace

import pytest
import torch

from lib.paths.finetuning_summary import share_with_target, summarize_finetuning, summarize_finetuning_run
from lib.paths.generalization_tests import by_target_kind
from lib.paths.target_kind_scores import KindScore

t = torch.tensor

# Held-out fine-tuning examples: two vertex-2 targets and two on-path targets whose graphs have a
# 1-2 distance of 4. The pre-trained model answers 4 (the 1-2 distance) for the on-path ones.
LABELS, KINDS, DISTANCE_12 = t([1.0, 2.0, 3.0, 1.0]), t([0, 1, 1, 0]), t([1, 4, 4, 1])
BEFORE, AFTER = t([1.0, 4.0, 4.0, 1.0]), t([1.0, 2.0, 3.25, 1.0])


def test_share_with_target_reads_the_last_token():
    tokens = torch.zeros(4, 3, 2, dtype=torch.long)
    tokens[:, -1, 0] = t([2, 3, 2, 2])
    assert share_with_target(tokens, 2) == 0.75


def test_finetuning_summary_by_hand():
    summary = summarize_finetuning(labels=LABELS, predictions_before=BEFORE, predictions_after=AFTER,
                                   kinds=KINDS, distance_12=DISTANCE_12, steps=2, pretrain_task_loss_before=0.1,
                                   pretrain_task_loss_after=0.3, learning_rate=0.1, weight_decay=0.5)
    assert summary.steps == 2
    assert summary.loss_before == pytest.approx((0 + 4 + 1 + 0) / 4)
    assert summary.loss_after == pytest.approx(0.25 ** 2 / 4)
    assert (summary.published_loss_before, summary.published_loss_after) == (0.5531, 0.01472)
    assert (summary.pretrain_task_loss_before, summary.pretrain_task_loss_after) == (0.1, 0.3)
    assert summary.weight_shrink == pytest.approx(0.95 ** 2)
    assert summary.published_weight_shrink == pytest.approx((1 - 1e-10) ** 100)
    on_path_before, on_path_after = summary.kinds_before.on_path, summary.kinds_after.on_path
    assert (on_path_before.count, on_path_before.mse, on_path_before.accuracy) == (2, 2.5, 0.0)
    assert on_path_before.answers_1_2_distance == 1.0  # the pre-training answer
    assert (on_path_after.mse, on_path_after.accuracy, on_path_after.answers_1_2_distance) == (0.03125, 1.0, 0.0)
    assert summary.kinds_after.vertex_2 == KindScore(2, 0.0, 1.0, 1.0, 1.0, 1.0)
    assert not summary.kinds_after.off_path.present and not summary.kinds_after.unreachable.present
    record = summary.record()
    assert record["finetune_loss_before"] == summary.loss_before
    assert record["finetune_by_target_kind"] == by_target_kind(AFTER, LABELS, KINDS, DISTANCE_12)
    assert record["finetune_by_target_kind_before"] == by_target_kind(BEFORE, LABELS, KINDS, DISTANCE_12)
    assert record["pretrain_task_loss_after_finetune"] == 0.3


class ConstantModel(torch.nn.Module):
    """Predicts the same distance for every graph."""

    def __init__(self, value: float):
        super().__init__()
        self.value = value

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return torch.full((len(tokens),), self.value)


def test_finetuning_summary_of_a_run_reads_its_snapshots_and_finds_the_kinds():
    target_token = 4  # vertex ids 1..3; edges are written (low, high) as the sampler writes them
    tokens = t([[[1, 3], [2, 3], [0, 0], [3, target_token]],   # path 1-3-2, target 3: on the path
                [[1, 2], [0, 0], [0, 0], [2, target_token]]])  # edge 1-2, target 2: vertex 2
    run = SimpleNamespace(eval_tokens=tokens, eval_labels=t([1.0, 1.0]), step=3,
                          snapshot_predictions=[t([2.0, 1.0]), t([1.0, 1.5])], model=ConstantModel(2.0))
    pretrain_tokens, pretrain_labels = tokens, t([2.0, 1.0])
    summary = summarize_finetuning_run(run, ConstantModel(1.0), pretrain_tokens, pretrain_labels,
                                       unreachable_label=3, learning_rate=0.1, weight_decay=0.1)
    expected = summarize_finetuning(labels=t([1.0, 1.0]), predictions_before=t([2.0, 1.0]),
                                    predictions_after=t([1.0, 1.5]), kinds=t([1, 0]), distance_12=t([2, 1]),
                                    steps=3, pretrain_task_loss_before=(1 + 0) / 2,
                                    pretrain_task_loss_after=(0 + 1) / 2, learning_rate=0.1, weight_decay=0.1)
    assert summary == expected
    assert summary.kinds_before.on_path.answers_1_2_distance == 1.0  # answered 2, the 1-2 distance
