"""Scores by kind of target, each field by hand; a kind that did not occur is absent (lib.paths.target_kind_scores)."""

import math

import torch

from lib.paths.generalization_tests import by_target_kind
from lib.paths.target_kind_scores import KindScore, TargetKindScores

t = torch.tensor


def test_a_kind_that_did_not_occur_is_absent_and_left_out_of_the_record():
    # Two vertex-2 targets (kind 0) and one unreachable target (kind 3), nothing else.
    by_kind = by_target_kind(t([1.0, 2.0, 5.0]), t([1.0, 3.0, 8.0]), t([0, 0, 3]), t([1, 3, 8]))
    scores = TargetKindScores.from_by_kind(by_kind)
    assert scores.vertex_2 == KindScore(count=2, mse=0.5, accuracy=0.5, mean_label=2.0, mean_prediction=1.5,
                                        answers_1_2_distance=0.5)
    assert scores.unreachable == KindScore(1, 9.0, 0.0, 8.0, 5.0, 0.0)
    assert scores.on_path.count == 0 and not scores.on_path.present
    assert all(math.isnan(v) for v in (scores.off_path.mse, scores.off_path.accuracy,
                                        scores.off_path.mean_prediction, scores.off_path.answers_1_2_distance))
    assert scores.in_order() == (scores.vertex_2, scores.on_path, scores.off_path, scores.unreachable)
    assert scores.record() == by_kind  # the results JSON keeps by_target_kind's dict
