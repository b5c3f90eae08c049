"""The training Jacobian composed over segments against the Jacobian of the whole run (chapter 6)."""

import pytest
import torch

from lib.grokking.mlp import MLPConfig, init_single
from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import intersection_training_set
from lib.grokking.training_jacobian import (
    adam, adam_start, composed_jacobian, flatten, jacobian_study, mlp_loss, product_of_segment_jacobians,
    training_jacobian, training_map,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def tiny_adam(weight_decay: float = 2e-4):
    left, right, labels = intersection_training_set(make_pair("S4_vs_A4xZ2"))
    params = init_single(0, MLPConfig(24, 2, 2, unembed_bias=True))
    loss, mask = mlp_loss({n: tuple(v.shape) for n, v in params.items()}, left, right, labels)
    theta0 = flatten(params).double()
    return adam(loss, 0.01, (0.9, 0.98), 1e-8, weight_decay, mask.double()), theta0


def test_segments_compose_to_the_jacobian_of_the_whole_run():
    step, theta0 = tiny_adam()
    whole = training_jacobian(training_map(step, adam_start, 7), theta0)
    for segment in (1, 3, 7, 10):                      # 7 = 3 + 3 + 1 when segment is 3
        torch.testing.assert_close(composed_jacobian(step, adam_start, theta0, 7, segment), whole,
                                   rtol=1e-10, atol=1e-10)
    # The authors' way: explicit (3P, 3P) Jacobians of each segment over the whole Adam state.
    torch.testing.assert_close(product_of_segment_jacobians(step, adam_start, theta0, 7, 3), whole,
                               rtol=1e-10, atol=1e-10)


def test_composition_reports_every_boundary_and_starts_at_the_identity():
    step, theta0 = tiny_adam()
    seen = []
    composed_jacobian(step, adam_start, theta0, 5, 2, lambda done, state, jacobian: seen.append((done, jacobian)))
    assert [done for done, _ in seen] == [0, 2, 4, 5]
    torch.testing.assert_close(seen[0][1], torch.eye(theta0.numel(), dtype=torch.float64))
    torch.testing.assert_close(seen[2][1], training_jacobian(training_map(step, adam_start, 4), theta0))
    with pytest.raises(ValueError, match="segment >= 1"):
        composed_jacobian(step, adam_start, theta0, 5, 0)


def test_jacobian_study_matches_the_whole_run_and_compares_the_dtypes():
    pair = make_pair("S4_vs_A4xZ2")
    study = jacobian_study(pair.g1, MLPConfig(24, 2, 2, unembed_bias=True), 0, 5, 2, 2e-4, 0.584, 0.01,
                           (0.9, 0.98), 1e-8, [torch.float32, torch.float64], torch.Generator().manual_seed(0))
    assert study.boundaries.tolist() == [0, 2, 4, 5] and study.n_parameters == 24 * 4 + 8 + 48 + 24
    assert study.finite_difference_error < 1e-6
    assert study.dtype_difference[0] == 0 and torch.all(study.dtype_difference[1:] < 1e-4)
    assert set(study.seconds_per_step) == {"float64", "float32"}
    assert torch.all((study.test_accuracy >= 0) & (study.test_accuracy <= 1))
