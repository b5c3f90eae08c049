"""Rescaling the MLP changes only the temperature of its logits; loss at a common norm, by hand."""

import math

import pytest
import torch

from lib.grokking.circuit_efficiency import alpha_for_norm, loss_along_rescaling, loss_at_norm, rescale
from lib.grokking.mlp import MLPConfig, init_instances, instance_logits, instance_loss, parameter_norm

# All four pairs of N = 2; every pair labelled 0.
LEFT, RIGHT, LABELS = torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1]), torch.tensor([0, 0, 0, 0])


def tiny(bias: bool) -> dict[str, torch.Tensor]:
    """Two hand-written instances, N = 2, d = h = 1, both classifying every pair as 0.

    Instance 0: hidden(a, b) = e_a + f_b with e = (1, 2), f = (1, 0): hidden = 2, 1, 3, 2 on
    (0,0), (0,1), (1,0), (1,1); logits = hidden * (1, -1) (+ (0.5, -0.5)); margin 2 h (+ 1).
    Instance 1: hidden = e_a + 2 f_b with e = f = (0.5, 1): hidden = 1.5, 2.5, 2, 3;
    logits = hidden * (2, -1) (+ (1, 0)); margin 3 h (+ 1).
    """
    params = {
        "embed_left": torch.tensor([[[1.0], [2.0]], [[0.5], [1.0]]]),
        "embed_right": torch.tensor([[[1.0], [0.0]], [[0.5], [1.0]]]),
        "linear_left": torch.tensor([[[1.0]], [[1.0]]]),
        "linear_right": torch.tensor([[[1.0]], [[2.0]]]),
        "unembed": torch.tensor([[[1.0, -1.0]], [[2.0, -1.0]]]),
    }
    if bias:
        params["unembed_bias"] = torch.tensor([[0.5, -0.5], [1.0, 0.0]])
    return params


HIDDEN = [[2.0, 1.0, 3.0, 2.0], [1.5, 2.5, 2.0, 3.0]]
# Squared norms by hand: weights S_w, bias S_c.
S_W = [1 + 4 + 1 + 0 + 1 + 1 + 1 + 1, 0.25 + 1 + 0.25 + 1 + 1 + 4 + 4 + 1]    # 10, 12.5
S_C = [0.25 + 0.25, 1.0]


def hand_margins(instance: int, bias: bool) -> list[float]:
    slope, offset = (2.0, 1.0) if instance == 0 else (3.0, 1.0)
    return [slope * h + (offset if bias else 0.0) for h in HIDDEN[instance]]


def hand_loss(instance: int, bias: bool, alpha: float) -> float:
    # Two classes: cross-entropy = log(1 + exp(-margin)), all logits scaled by alpha^3.
    margins = hand_margins(instance, bias)
    return sum(math.log1p(math.exp(-m * alpha ** 3)) for m in margins) / len(margins)


@pytest.mark.parametrize("bias", [False, True])
def test_rescaled_logits_are_alpha_cubed_times_the_logits(bias):
    params = init_instances([0, 1], MLPConfig(5, 3, 4, unembed_bias=bias))
    left, right = torch.arange(5).repeat_interleave(5), torch.arange(5).repeat(5)
    logits = instance_logits(params, left, right)
    for alpha in (torch.tensor([0.5, 2.0]), 1.7):
        cube = torch.as_tensor(alpha) ** 3
        expected = logits * (cube.view(-1, 1, 1) if cube.dim() else cube)
        torch.testing.assert_close(instance_logits(rescale(params, alpha), left, right), expected,
                                   rtol=1e-5, atol=1e-5)


def test_rescale_scales_weights_by_alpha_and_the_bias_by_alpha_cubed():
    params = tiny(bias=True)
    scaled = rescale(params, torch.tensor([2.0, 0.5]))
    assert torch.equal(scaled["embed_left"][0], 2.0 * params["embed_left"][0])
    assert torch.equal(scaled["unembed"][1], 0.5 * params["unembed"][1])
    assert scaled["unembed_bias"].tolist() == [[4.0, -4.0], [0.125, 0.0]]


@pytest.mark.parametrize("bias", [False, True])
def test_loss_and_norm_along_rescaling_by_hand(bias):
    params = tiny(bias)
    alphas = torch.tensor([0.25, 0.5, 0.75, 1.0, 1.25])   # loss stays above float32 underflow
    losses, norms = loss_along_rescaling(params, LEFT, RIGHT, LABELS, alphas)
    assert losses.shape == norms.shape == (5, 2)
    for k, alpha in enumerate(alphas.tolist()):
        for i in range(2):
            assert losses[k, i].item() == pytest.approx(hand_loss(i, bias, alpha), rel=1e-4, abs=1e-7)
            s_c = S_C[i] if bias else 0.0
            assert norms[k, i].item() == pytest.approx(math.sqrt(alpha ** 2 * S_W[i] + alpha ** 6 * s_c), rel=1e-6)
    # Every margin is positive, so the loss falls as the model is scaled up.
    assert (losses[1:] < losses[:-1]).all()
    assert losses[0, 0] != losses[0, 1]


def test_per_instance_alphas_along_rescaling():
    params = tiny(bias=False)
    losses, _ = loss_along_rescaling(params, LEFT, RIGHT, LABELS, torch.tensor([[1.0, 2.0]]))
    assert losses[0].tolist() == pytest.approx([hand_loss(0, False, 1.0), hand_loss(1, False, 2.0)], rel=1e-4, abs=1e-7)


def test_loss_at_norm_hits_the_target_with_a_bias():
    params = tiny(bias=True)
    for target in (5.0, 0.3, 40.0, torch.tensor([2.0, 7.0])):
        alpha = alpha_for_norm(params, target)
        reached = parameter_norm(rescale(params, alpha))
        expected = torch.as_tensor(target).expand(2)
        torch.testing.assert_close(reached, expected, rtol=1e-6, atol=0.0)
        # The norm is not linear in alpha: alpha solves alpha^2 S_w + alpha^6 S_c = target^2.
        for i in range(2):
            a = alpha[i].item()
            assert a ** 2 * S_W[i] + a ** 6 * S_C[i] == pytest.approx(expected[i].item() ** 2, rel=1e-5)
        loss = loss_at_norm(params, LEFT, RIGHT, LABELS, target)
        assert loss.tolist() == pytest.approx([hand_loss(i, True, alpha[i].item()) for i in range(2)], rel=1e-4, abs=1e-7)


def test_without_a_bias_alpha_is_target_over_norm():
    params = tiny(bias=False)
    alpha = alpha_for_norm(params, 5.0)
    assert alpha.tolist() == pytest.approx([5.0 / math.sqrt(10.0), 5.0 / math.sqrt(12.5)], rel=1e-6)
    loss = loss_at_norm(params, LEFT, RIGHT, LABELS, 5.0)
    torch.testing.assert_close(loss, instance_loss(rescale(params, alpha), LEFT, RIGHT, LABELS))


def test_loss_at_norm_ranks_a_more_efficient_solution_lower():
    # The same function twice, once with its norm wasted on an unused embedding row: at a
    # common norm the wasteful copy is scaled less and reaches a higher loss.
    params = tiny(bias=False)
    wasteful = {name: torch.cat([value[:1], value[:1]]) for name, value in params.items()}
    wasteful["embed_right"] = wasteful["embed_right"].clone()
    wasteful["embed_right"][1, 1, 0] = -50.0     # only reached by b = 1 ...
    left, right, labels = LEFT[[0, 2]], RIGHT[[0, 2]], LABELS[[0, 2]]   # ... which training never uses
    loss = loss_at_norm(wasteful, left, right, labels, 4.0)
    assert loss[0] < loss[1]


def test_the_study_objective_along_rescaling_and_its_minimum():
    """At alpha = 1 the objective is the cross-entropy plus wd/2 times the squared norm of the
    decayed parameters; without weight decay a model that classifies its pairs correctly lowers
    its objective by growing, so the minimum sits at the largest alpha of the grid; with a large
    decay it sits below 1, and the trained model's objective lies above it."""
    from lib.grokking.circuit_efficiency import objective_along_rescaling, rescaling_optimum
    from lib.grokking.mlp import MLPConfig, init_instances, instance_loss

    params = init_instances([0, 1], MLPConfig(6, 4, 4, unembed_bias=True))
    left, right = torch.arange(6).repeat(6), torch.arange(6).repeat_interleave(6)
    labels = instance_loss(params, left, right, torch.zeros(36, dtype=torch.long)).new_zeros(36).long()
    own = objective_along_rescaling(params, left, right, labels, 0.1, torch.ones(1))[0]
    decayed = sum(params[name].flatten(1).double().pow(2).sum(dim=1) for name in params if name != "unembed_bias")
    assert torch.allclose(own, instance_loss(params, left, right, labels).double() + 0.05 * decayed)
    # Labels the model already predicts: positive margins, so growing lowers the cross-entropy.
    from lib.grokking.mlp import instance_logits
    predicted = instance_logits(params, left, right)[0].argmax(dim=1)
    first = {name: value[:1] for name, value in params.items()}
    free = rescaling_optimum(first, left, right, predicted, 0.0)
    assert float(free.alpha[0]) == 8.0 and float(free.excess[0]) > 0
    heavy = rescaling_optimum(first, left, right, predicted, 10.0)
    grid = 2.0 ** torch.linspace(-6.0, 3.0, 500, dtype=torch.float64)
    curve = objective_along_rescaling(first, left, right, predicted, 10.0, grid)[:, 0]
    assert float(heavy.alpha[0]) == float(grid[curve.argmin()]) < 1.0
    assert float(heavy.lowest[0]) == pytest.approx(float(curve.min())) and float(heavy.excess[0]) > 0
