"""Chapter 6's library on known answers: perturbed copies and decision epochs, total variation,
training Jacobian, transplant fates, early prediction of the outcome."""

import math

import pytest
import torch

from lib.book.params import ParameterError
from lib.grokking.mlp import MLPConfig, init_instances
from lib.grokking.pairs import make_pair
from lib.grokking.perturbation import (
    change_probability, continue_training, decision_epoch, final_outcomes, perturbed_copies,
)
from lib.grokking.early_prediction import fit_logistic, held_out_auc, held_out_scores
from lib.grokking.sweeps import intersection_training_set
from lib.grokking.transplant import transplant, transplant_fates
from lib.grokking.total_variation import argmax_flip_rate, snapshot_logits, total_variation
from lib.grokking.reference_training import train_single
from lib.grokking.training import SweepConfig
from lib.grokking.training_jacobian import (
    adam, adam_start, finite_difference_error, flatten, gradient_descent, mlp_loss, training_jacobian,
    training_map, training_snapshots,
)

pytestmark = pytest.mark.usefixtures("one_thread")


# --- Perturbed copies -----------------------------------------------------------------------

def test_copies_have_the_requested_absolute_scale_and_order():
    params = init_instances([0, 1], MLPConfig(24, 16, 16))
    scales = [0.0, 1e-3, 0.5]
    copies = perturbed_copies(params, scales, copies=50, generator=torch.Generator().manual_seed(0))
    for name, value in params.items():
        grouped = copies[name].view(2, 3, 50, *value.shape[1:])
        noise = grouped - value[:, None, None]
        assert torch.equal(grouped[:, 0], value[:, None].expand_as(grouped[:, 0])), "scale 0 copies are exact"
        for s, scale in enumerate(scales[1:], start=1):
            std = float(noise[:, s].std())
            assert abs(std / scale - 1) < 0.05, (name, scale, std)       # thousands of draws each
    # Row (b * S + s) * K + k: copies 0 and 1 of instance 0 at scale 1e-3 get different noise.
    assert not torch.equal(copies["unembed"][50], copies["unembed"][51])
    assert torch.allclose(copies["unembed"][50], params["unembed"][0], atol=0.01)


def test_relative_scale_follows_each_tensors_size():
    params = init_instances([0], MLPConfig(24, 16, 16))
    params["unembed"] = params["unembed"] * 100                      # a tensor 100 times larger
    copies = perturbed_copies(params, [0.01], copies=40, generator=torch.Generator().manual_seed(1), relative=True)
    for name, value in params.items():
        rms = float(value.pow(2).mean().sqrt())
        std = float((copies[name] - value).std())
        assert abs(std / (0.01 * rms) - 1) < 0.05, (name, std, rms)


def test_bad_copies_and_scales_are_refused():
    params = init_instances([0], MLPConfig(6, 4, 4))
    with pytest.raises(ParameterError, match="`copies`"):
        perturbed_copies(params, [0.1], copies=0, generator=torch.Generator())
    with pytest.raises(ParameterError, match="`scales`"):
        perturbed_copies(params, [-0.1], copies=1, generator=torch.Generator())
    with pytest.raises(ParameterError, match="`scales`"):
        perturbed_copies(params, [math.nan], copies=1, generator=torch.Generator())


def test_zero_scale_copies_continue_exactly_as_the_unperturbed_model():
    """In float64, a scale-0 copy continued beside noisy ones ends where the unperturbed
    checkpoint continued alone ends (to rounding), and the noisy ones end elsewhere."""
    pair = make_pair("S4_vs_A4xZ2")
    train = intersection_training_set(pair)
    params = {k: v.double() for k, v in init_instances([3], MLPConfig(24, 8, 8)).items()}
    schedule = SweepConfig(epochs=30, log_every=10)
    alone = continue_training(params, pair, train, schedule, epochs=30)
    copies = perturbed_copies(params, [0.0, 0.1], copies=2, generator=torch.Generator().manual_seed(0))
    together = continue_training(copies, pair, train, schedule, epochs=30)
    for name, value in alone.final_params.items():
        torch.testing.assert_close(together.final_params[name][:2], value.expand(2, *value.shape[1:]),
                                   rtol=1e-10, atol=1e-12)
        assert not torch.allclose(together.final_params[name][2], value[0])
    outcomes = final_outcomes(together, n_scales=2, copies=2, grok_threshold=0.999)
    assert outcomes.shape == (1, 2, 2)


# --- Outcome changes and decision epochs ------------------------------------------------------

def test_change_probability_counts_copies_that_differ():
    outcomes = torch.tensor([[[0, 0, 0, 0], [0, 1, 2, 0]], [[2, 2, 2, 2], [1, 1, 2, 2]]])
    reference = torch.tensor([0, 2])
    assert change_probability(outcomes, reference).tolist() == [[0.0, 0.5], [0.0, 0.5]]


def test_decision_epoch_is_where_the_probability_stays_low():
    # columns: settles at 500; settles at 0; never settles; dips at 500 but rises again, settles at 1500
    probability = torch.tensor([[0.5, 0.0, 0.9, 0.4],
                                [0.2, 0.0, 0.8, 0.0],
                                [0.0, 0.0, 0.7, 0.3],
                                [0.0, 0.0, 0.6, 0.0]])
    epochs = [0, 500, 1000, 1500]
    assert decision_epoch(probability, epochs).tolist() == [1000, 0, -1, 1500]
    assert decision_epoch(probability, epochs, tolerance=0.25).tolist() == [500, 0, -1, 1500]


# --- Total variation --------------------------------------------------------------------------

def test_total_variation_of_a_constant_trajectory_is_zero():
    logits = torch.randn(1, 3, 5, 4, generator=torch.Generator().manual_seed(0)).expand(6, 3, 5, 4)
    assert torch.equal(total_variation(logits), torch.zeros(3, dtype=torch.float64))
    assert torch.equal(argmax_flip_rate(logits), torch.zeros(3, dtype=torch.float64))


def test_total_variation_and_flips_on_hand_made_logits():
    """One model, two pairs, three classes, three snapshots. Pair 0 moves by (3, 4, 0) and then
    back (distance 5 twice); pair 1 stays. The argmax of pair 0 flips from class 0 to 1 and back."""
    logits = torch.zeros(3, 1, 2, 3)
    logits[:, 0, 0] = torch.tensor([[1.0, 0.0, 0.0], [4.0, 4.0 + 0.5, 0.0], [1.0, 0.0, 0.0]])
    logits[1, 0, 0] = torch.tensor([4.0, 4.5, 0.0])
    logits[:, 0, 1] = torch.tensor([0.0, 0.0, 2.0])
    expected = 2 * math.hypot(3.0, 4.5) / 2                     # mean over the 2 pairs, summed over 2 steps
    assert float(total_variation(logits)[0]) == pytest.approx(expected)
    assert float(argmax_flip_rate(logits)[0]) == pytest.approx(2 / 4)   # 2 flips in 2 steps x 2 pairs


def test_snapshot_logits_stack_every_snapshot_and_short_inputs_are_refused():
    snapshots = [init_instances([s, s + 1], MLPConfig(6, 4, 4)) for s in range(3)]
    left, right = torch.tensor([0, 1, 2]), torch.tensor([3, 4, 5])
    logits = snapshot_logits(snapshots, left, right)
    assert logits.shape == (3, 2, 3, 6)
    assert float(total_variation(logits).min()) > 0
    with pytest.raises(ValueError, match="snapshots >= 2"):
        total_variation(logits[:1])


# --- Training Jacobian --------------------------------------------------------------------------

def test_jacobian_of_gradient_descent_on_linear_regression_is_its_closed_form():
    """L(theta) = |X theta - y|^2 / 2n; a step is theta <- A theta + lr X^T y / n with
    A = I - lr X^T X / n, so after T steps d theta_T / d theta_0 is A to the power T."""
    gen = torch.Generator().manual_seed(0)
    n, d, lr, steps = 40, 5, 0.1, 25
    x = torch.randn(n, d, generator=gen, dtype=torch.float64)
    y = torch.randn(n, generator=gen, dtype=torch.float64)
    train = training_map(gradient_descent(lambda theta: (x @ theta - y).pow(2).sum() / (2 * n), lr),
                         lambda theta: (theta,), steps)
    jacobian = training_jacobian(train, torch.randn(d, generator=gen, dtype=torch.float64))
    a = torch.eye(d, dtype=torch.float64) - lr * x.T @ x / n
    torch.testing.assert_close(jacobian, torch.linalg.matrix_power(a, steps), rtol=1e-10, atol=1e-12)


def tiny_mlp():
    pair = make_pair("S4_vs_A4xZ2")
    left, right, labels = intersection_training_set(pair)
    config = MLPConfig(24, 4, 4, unembed_bias=True)
    params = {k: v[0].double() for k, v in init_instances([5], config).items()}
    loss, mask = mlp_loss({k: tuple(v.shape) for k, v in params.items()}, left, right, labels)
    return params, loss, mask, (left, right, labels), config


def test_functional_adam_follows_the_books_trainer():
    """Twenty steps of the functional Adam (weight decay on all but the bias) land where
    torch.optim.Adam in `train_single` lands, in float64."""
    params, loss, mask, train, config = tiny_mlp()
    schedule = SweepConfig(epochs=20, weight_decay=0.01)
    step = adam(loss, schedule.lr, (schedule.beta1, schedule.beta2), schedule.eps, schedule.weight_decay, mask.double())
    ours = training_map(step, adam_start, 20)(flatten(params))
    reference, _, _ = train_single(5, config, *train, schedule, dtype=torch.float64)
    torch.testing.assert_close(ours, flatten({k: v.detach() for k, v in reference.items()}), rtol=1e-9, atol=1e-11)


def test_mlp_training_jacobian_agrees_with_finite_differences():
    params, loss, mask, _, _ = tiny_mlp()
    step = adam(loss, 0.01, (0.9, 0.98), 1e-8, 2e-5, mask.double())
    train = training_map(step, adam_start, 15)
    theta0 = flatten(params)
    jacobian = training_jacobian(train, theta0)
    assert jacobian.shape == (theta0.numel(), theta0.numel()) and torch.isfinite(jacobian).all()
    error = finite_difference_error(train, theta0, jacobian, directions=3, h=1e-6,
                                    generator=torch.Generator().manual_seed(0))
    assert error < 1e-5, error


def test_snapshots_of_one_run_give_the_training_map_and_jacobian_of_every_length():
    params, loss, mask, _, _ = tiny_mlp()
    step = adam(loss, 0.01, (0.9, 0.98), 1e-8, 2e-5, mask.double())
    theta0 = flatten(params)
    lengths = [0, 3, 7]
    snapshots = training_snapshots(step, adam_start, lengths)
    jacobians = training_jacobian(snapshots, theta0)
    assert jacobians.shape == (3, theta0.numel(), theta0.numel())
    for i, length in enumerate(lengths):
        train = training_map(step, adam_start, length)
        torch.testing.assert_close(snapshots(theta0)[i], train(theta0), rtol=0, atol=0)
        torch.testing.assert_close(jacobians[i], training_jacobian(train, theta0), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="increasing"):
        training_snapshots(step, adam_start, [5, 2])


# --- Transplant -----------------------------------------------------------------------------------

def test_transplant_runs_both_phases_and_reads_fates_from_the_curves():
    pair = make_pair("S4_vs_A4xZ2")
    schedule = SweepConfig(epochs=20, log_every=10)
    run = transplant(pair, "g2", [0, 1, 2], MLPConfig(24, 8, 8), schedule, schedule, 0.5,
                     torch.Generator().manual_seed(0))
    assert run.first.info["group"] == pair.g2.name and run.second.n_instances == 3
    assert run.second.train_left.numel() == int(pair.mask.sum())
    # The second phase starts from the first phase's final weights.
    torch.testing.assert_close(run.second.metrics["acc_g2"][0], run.first.final("acc_test"))
    with pytest.raises(ValueError, match="'g1' or 'g2'"):
        transplant(pair, "S4", [0], MLPConfig(24, 8, 8), schedule, schedule, 0.5, torch.Generator())

    # Hand-made curves: seed 0 groks then keeps the group; seed 1 ungroks while fitting the
    # intersection, then regroks; seed 2 ungroks and stays so; seed 3 never grokked it at all.
    run.first.metrics = {"acc_test": torch.tensor([[1.0, 1.0, 1.0, 0.5]])}
    run.second.metrics = {"acc_g2": torch.tensor([[1.0, 1.0, 1.0, 0.5], [1.0, 0.8, 0.9, 0.5], [1.0, 1.0, 0.7, 0.5]]),
                          "train_acc": torch.ones(3, 4)}
    fates = transplant_fates(run, 0.999)
    assert fates.grokked.tolist() == [True, True, True, False]
    assert fates.ungrokked.tolist() == [False, True, True, False]
    assert fates.regrokked.tolist() == [False, True, False, False]
    assert fates.fractions() == {"grokked_first": 3, "ungrokked": 2 / 3, "regrokked": 1 / 2}
    # Losing the group while no longer fitting the intersection is not ungrokking.
    run.second.metrics["train_acc"] = torch.tensor([[1.0] * 4, [1.0, 0.5, 1.0, 1.0], [1.0, 1.0, 0.5, 1.0]])
    assert transplant_fates(run, 0.999).ungrokked.tolist() == [False, False, True, False]


# --- Early prediction --------------------------------------------------------------------------------

def test_held_out_auc_is_one_on_a_separable_case_and_near_chance_on_noise():
    gen = torch.Generator().manual_seed(0)
    n = 200
    positive = torch.arange(n) % 3 == 0
    features = torch.randn(n, 3, generator=gen, dtype=torch.float64)
    separable = features.clone()
    separable[:, 0] += 6.0 * positive                          # class means 6 standard deviations apart
    assert held_out_auc(separable, positive, folds=5, generator=torch.Generator().manual_seed(1)) == 1.0
    chance = held_out_auc(features, positive, folds=5, generator=torch.Generator().manual_seed(1))
    assert 0.35 < chance < 0.65, chance
    model = fit_logistic(separable, positive)
    probability = model.probability(separable)
    assert probability[positive].min() > probability[~positive].max()      # ranks every seed right
    assert probability[positive].mean() > 0.5 > probability[~positive].mean()
    with pytest.raises(ValueError, match="folds"):
        held_out_scores(features, positive, folds=1, generator=gen)
