"""The matrix-free training Jacobian against the dense one of a small model (chapter 6)."""

import pytest
import torch

from lib.grokking.jacobian_sketch import (
    BULK_FLOOR, finite_amplification, frobenius_estimate, norm_lower_bound, screen_seeds, sketched_jacobian_study,
    transposed_product)
from lib.grokking.mlp import MLPConfig, init_single
from lib.grokking.pairs import make_pair
from lib.grokking.training_jacobian import (
    adam, adam_start, advance, flatten, iid_part, mlp_loss, training_jacobian, training_map)

pytestmark = pytest.mark.usefixtures("one_thread")

MODEL = MLPConfig(24, 2, 2, unembed_bias=True)     # P = 176: the dense Jacobian is cheap


def small_run():
    training, test = iid_part(make_pair("S4_vs_A4xZ2").g1, 0.584, torch.Generator().manual_seed(3))
    params = init_single(0, MODEL)
    loss, mask = mlp_loss({n: tuple(v.shape) for n, v in params.items()}, *training)
    return adam(loss, 0.01, (0.9, 0.98), 1e-8, 2e-4, mask.double()), flatten(params).double(), training, test


def test_transposed_product_pulls_back_through_segments_to_the_dense_jacobian():
    step, theta0, _, _ = small_run()
    dense = training_jacobian(training_map(step, adam_start, 7), theta0)
    states, state = [], adam_start(theta0)
    for length in (3, 3, 1):
        states.append(state)
        state = advance(step, state, length)
    u = torch.randn(4, theta0.numel(), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    torch.testing.assert_close(transposed_product(step, states, [3, 3, 1], u), u @ dense, rtol=1e-9, atol=1e-10)


def test_norm_lower_bound_never_exceeds_the_norm_and_is_exact_with_all_directions():
    gen = torch.Generator().manual_seed(2)
    j = torch.randn(30, 30, generator=gen, dtype=torch.float64) @ torch.diag(torch.logspace(-3, 2, 30, dtype=torch.float64))
    norm = float(torch.linalg.matrix_norm(j, ord=2))
    for k in (1, 5, 30):
        omega = torch.randn(k, 30, generator=gen, dtype=torch.float64)
        bound = norm_lower_bound((j @ omega.T).T, omega)
        assert bound <= norm * (1 + 1e-12)
    assert bound == pytest.approx(norm, rel=1e-10)
    # A sketch whose tangents overflowed (float32 past its largest number) has no finite bound.
    overflowed = (j @ omega.T).T.float()
    overflowed[0, 0] = float("inf")
    assert norm_lower_bound(overflowed.double(), omega) == float("inf")
    overflowed[0, 0] = float("nan")
    assert norm_lower_bound(overflowed.double(), omega) == float("inf")


def test_hutchinson_estimate_is_unbiased_for_the_frobenius_norm():
    gen = torch.Generator().manual_seed(4)
    j = torch.randn(20, 20, generator=gen, dtype=torch.float64)
    omega = torch.randn(20_000, 20, generator=gen, dtype=torch.float64)
    estimate, error = frobenius_estimate(omega @ j.T)
    truth = float(j.pow(2).sum())
    assert abs(estimate - truth) < 4 * error and error < 0.05 * truth


def test_sketched_study_matches_the_dense_spectrum_and_bounds_the_bulk():
    step, theta0, training, test = small_run()
    p = theta0.numel()
    study = sketched_jacobian_study(MODEL, 0, training, test, 7, 3, 2e-4, 0.01, (0.9, 0.98), 1e-8, p,
                                    [3, 7], torch.Generator().manual_seed(5))
    assert study.boundaries.tolist() == [0, 3, 6, 7] and study.n_parameters == p == 176
    dense = {t: torch.linalg.svdvals(training_jacobian(training_map(step, adam_start, t), theta0)) for t in (3, 7)}
    for spectrum in study.spectra:
        # K = P directions span everything: the randomized SVD is the exact spectrum, and the
        # bulk bound counts the singular values at or above the floor (plus K, here all of them)
        torch.testing.assert_close(spectrum.top, dense[spectrum.step], rtol=1e-7, atol=1e-9)
        assert spectrum.bulk_share_bound == 1.0
    for i, t in enumerate(study.boundaries.tolist()):
        norm = float(torch.linalg.matrix_norm(training_jacobian(training_map(step, adam_start, t), theta0), ord=2)) \
            if t else 1.0
        assert study.norm_lower_bound["float64"][i] == pytest.approx(norm, rel=1e-7)
    assert study.dtype_difference[0] < 1e-6 and torch.all(study.dtype_difference < 1e-3)


def test_with_few_directions_the_estimates_stay_below_the_truth_and_the_bound_above():
    step, theta0, training, test = small_run()
    study = sketched_jacobian_study(MODEL, 0, training, test, 30, 10, 2e-4, 0.01, (0.9, 0.98), 1e-8, 12,
                                    lambda boundaries, accuracy: [boundaries[-1]], torch.Generator().manual_seed(6))
    truth = torch.linalg.svdvals(training_jacobian(training_map(step, adam_start, 30), theta0))
    (spectrum,) = study.spectra
    assert spectrum.step == 30 and spectrum.top.numel() == 12
    assert torch.all(spectrum.top <= truth[:12] * (1 + 1e-9))
    assert study.norm_lower_bound["float64"][-1] <= truth[0] * (1 + 1e-9)
    # with ||J||_F^2 known exactly the bound is a guarantee; the estimate stays within its error
    share = float((truth >= BULK_FLOOR).double().mean())
    exact_tail = float(truth.pow(2).sum()) - float(spectrum.top.pow(2).sum())
    assert share <= (12 + exact_tail / BULK_FLOOR ** 2) / truth.numel()
    assert abs(spectrum.frobenius_squared - float(truth.pow(2).sum())) < 4 * float(study.frobenius_error[-1])


def test_bad_settings_are_refused_before_any_work():
    _, _, training, test = small_run()
    with pytest.raises(ValueError, match="segment <= steps"):
        sketched_jacobian_study(MODEL, 0, training, test, 5, 10, 2e-4, 0.01, (0.9, 0.98), 1e-8, 4, [5],
                                torch.Generator())
    with pytest.raises(ValueError, match="not a segment boundary"):
        sketched_jacobian_study(MODEL, 0, training, test, 6, 3, 2e-4, 0.01, (0.9, 0.98), 1e-8, 4, [4],
                                torch.Generator())


def test_screen_finds_the_grokking_steps_of_the_study_trainer():
    """The screen trains seeds together with torch.optim.Adam in float32; a seed's trajectory is
    the one `adam` gives it alone (the same rule), so at a threshold its accuracy crosses, the
    screen finds the boundary the study's own (float64) accuracy gives."""
    _, _, training, test = small_run()
    wider = MLPConfig(24, 8, 8, unembed_bias=True)        # its accuracy climbs within 100 steps
    study = sketched_jacobian_study(wider, 0, training, test, 100, 10, 2e-4, 0.01, (0.9, 0.98), 1e-8, 1, [],
                                    torch.Generator().manual_seed(0), with_float32=False)
    threshold = float(study.test_accuracy[5])            # the accuracy the study reaches at step 50
    assert float(study.test_accuracy[0]) < threshold      # the crossing is not at the start
    grokked = screen_seeds(wider, [0, 1], training, test, 100, 10, 2e-4, 0.01, (0.9, 0.98), 1e-8, threshold=threshold)
    assert int(grokked[0]) == study.grok_step(threshold) == 50
    never = screen_seeds(MODEL, [0], training, test, 20, 5, 2e-4, 0.01, (0.9, 0.98), 1e-8, threshold=1.01)
    assert never.tolist() == [-1]


def test_finite_amplification_tends_to_the_jacobian_along_the_direction():
    step, theta0, training, _ = small_run()
    dense = training_jacobian(training_map(step, adam_start, 12), theta0)
    u = torch.linalg.svd(dense).Vh[0]                         # the most stretched direction
    ratios, derivative = finite_amplification(MODEL, 0, training, 12, 2e-4, 0.01, (0.9, 0.98), 1e-8, u, [1e-7, 1e-5])
    assert derivative == pytest.approx(float((dense @ u).norm()), rel=1e-10)
    assert ratios[0] == pytest.approx(float((dense @ u).norm()), rel=1e-4)
    assert ratios[1] == pytest.approx(float((dense @ u).norm()), rel=1e-2)


def test_the_spectrum_keeps_the_direction_its_largest_value_stretches():
    step, theta0, training, test = small_run()
    study = sketched_jacobian_study(MODEL, 0, training, test, 6, 3, 2e-4, 0.01, (0.9, 0.98), 1e-8, 176, [6],
                                    torch.Generator().manual_seed(5))
    dense = training_jacobian(training_map(step, adam_start, 6), theta0)
    (spectrum,) = study.spectra
    assert float((dense @ spectrum.top_direction).norm()) == pytest.approx(float(spectrum.top[0]), rel=1e-8)
