"""Jiang et al.'s measures as the study computes them, on hand-written MLPs, checked against
arithmetic done by hand."""

import math

import pytest
import torch

from lib.grokking.circuit_efficiency import rescale
import lib.grokking.generalization_measures as gm
from lib.grokking.generalization_measures import (
    CHEAP_MEASURES, PacBayesSearch, all_measures, cheap_measures, distance_from_init, frobenius_product,
    inverse_margin, l2_norm, mean_perturbed_accuracy, output_margin, pac_bayes_sharpness, pac_bayes_sigma,
    path_norm, spectral_product, train_accuracy, train_loss,
)
from lib.grokking.mlp import MLPConfig, init_instances, instance_logits, instance_loss, select_instances


def norm_model(bias: bool = False) -> dict[str, torch.Tensor]:
    """Two instances, N = d = h = 2, with spectral norms that can be read off by hand.

    Instance 0: E_l = diag(2, 1), E_r = [[0, 1], [3, 0]], W_l = I, W_r = diag(1, -1),
    U = [[1, -1], [-1, 1]] (rank one, spectral norm 2).
    Instance 1: E_l = ones (spectral norm 2), E_r = diag(0, 0.5), W_l = [[3, 0], [0, 0]],
    W_r = [[0, 0], [4, 0]], U = [[0, 2], [0, 0]].
    """
    params = {
        "embed_left": torch.tensor([[[2.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]]),
        "embed_right": torch.tensor([[[0.0, 1.0], [3.0, 0.0]], [[0.0, 0.0], [0.0, 0.5]]]),
        "linear_left": torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[3.0, 0.0], [0.0, 0.0]]]),
        "linear_right": torch.tensor([[[1.0, 0.0], [0.0, -1.0]], [[0.0, 0.0], [4.0, 0.0]]]),
        "unembed": torch.tensor([[[1.0, -1.0], [-1.0, 1.0]], [[0.0, 2.0], [0.0, 0.0]]]),
    }
    if bias:
        params["unembed_bias"] = torch.tensor([[1.0, 2.0], [0.0, -3.0]])
    return params


def margin_model() -> dict[str, torch.Tensor]:
    """Two instances, N = 3, d = h = 1, with logits linear in hidden(a, b).

    Instance 0: hidden = a + b (embeddings (0, 1, 2), both maps 1), logits = (-h, 1.5, h).
    Instance 1: hidden = 2 (a + b), logits = (-h, 3, h). Both predict 1 where a + b <= 1, else 2.
    """
    return {
        "embed_left": torch.tensor([[[0.0], [1.0], [2.0]], [[0.0], [2.0], [4.0]]]),
        "embed_right": torch.tensor([[[0.0], [1.0], [2.0]], [[0.0], [2.0], [4.0]]]),
        "linear_left": torch.ones(2, 1, 1),
        "linear_right": torch.ones(2, 1, 1),
        "unembed": torch.tensor([[[-1.0, 0.0, 1.0]], [[-1.0, 0.0, 1.0]]]),
        "unembed_bias": torch.tensor([[0.0, 1.5, 0.0], [0.0, 3.0, 0.0]]),
    }


LEFT, RIGHT = torch.arange(3).repeat_interleave(3), torch.arange(3).repeat(3)
LABELS = torch.where(LEFT + RIGHT <= 1, 1, 2)


def hand_margins(instance: int) -> list[float]:
    """Correct minus largest other logit, pair by pair, from the logits of `margin_model`."""
    out = []
    for a, b in zip(LEFT.tolist(), RIGHT.tolist()):
        h = (a + b) * (1 if instance == 0 else 2)
        logits = [-h, 1.5 if instance == 0 else 3.0, h]
        y = 1 if a + b <= 1 else 2
        out.append(logits[y] - max(v for j, v in enumerate(logits) if j != y))
    return out


def quantile_by_hand(values: list[float], q: float) -> float:
    """Linear interpolation between the order statistics at position q (n - 1), as torch.quantile."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])


def test_norms_leave_the_bias_out():
    params = norm_model()
    # Squared entries: instance 0: 5 + 10 + 2 + 2 + 4; instance 1: 4 + 0.25 + 9 + 16 + 4.
    assert l2_norm(params).tolist() == pytest.approx([math.sqrt(23.0), math.sqrt(33.25)], rel=1e-6)
    with_bias = norm_model(bias=True)                     # the bias is not counted (the study's L2)
    assert l2_norm(with_bias).tolist() == pytest.approx([math.sqrt(23.0), math.sqrt(33.25)], rel=1e-6)
    init = {name: value.clone() for name, value in with_bias.items()}
    init["unembed"][0] += torch.tensor([[3.0, 4.0], [0.0, 0.0]])   # distance 5
    init["embed_left"][1] += 1.0                                      # four entries: distance 2
    init["unembed_bias"] += 7.0                                       # not counted
    assert distance_from_init(with_bias, init).tolist() == pytest.approx([5.0, 2.0], rel=1e-6)


@pytest.mark.parametrize("bias", [False, True])
def test_layer_products_take_the_five_weight_tensors_as_layers(bias):
    params = norm_model(bias)
    # Squared spectral norms of E_l, E_r, W_l, W_r, U. Instance 0: 4, 9, 1, 1, 4;
    # instance 1: 4 (ones), 0.25, 9, 16, 4 (rank-one U with entry 2).
    assert spectral_product(params).tolist() == pytest.approx([144.0, 576.0], rel=1e-6)
    # Squared Frobenius norms: 5, 10, 2, 2, 4 and 4, 0.25, 9, 16, 4; the bias is no layer.
    assert frobenius_product(params).tolist() == pytest.approx([800.0, 576.0], rel=1e-6)


def test_path_norm_by_hand():
    # Instance 0: 1^T E_l^2 W_l^2 = (4, 1), 1^T E_r^2 W_r^2 = (9, 1): hidden (13, 2);
    # times U^2 = all ones: (15, 15), sum 30. Instance 1: (2, 2) diag(9, 0) = (18, 0) plus
    # (0, 0.25) [[0, 0], [16, 0]] = (4, 0): hidden (22, 0); times [[0, 4], [0, 0]]: 88.
    assert path_norm(norm_model()).tolist() == pytest.approx([30.0, 88.0], rel=1e-6)
    # The squared bias is added to each output: 1 + 4 and 9.
    assert path_norm(norm_model(bias=True)).tolist() == pytest.approx([35.0, 97.0], rel=1e-6)


def test_path_norm_is_the_sum_over_paths_of_squared_weights():
    g = torch.Generator().manual_seed(0)
    p = {"embed_left": torch.randn(1, 3, 2, generator=g), "embed_right": torch.randn(1, 3, 2, generator=g),
         "linear_left": torch.randn(1, 2, 4, generator=g), "linear_right": torch.randn(1, 2, 4, generator=g),
         "unembed": torch.randn(1, 4, 3, generator=g)}
    total = 0.0
    for side in ("left", "right"):
        e, w, u = p[f"embed_{side}"][0], p[f"linear_{side}"][0], p["unembed"][0]
        for i in range(3):
            for k in range(2):
                for m in range(4):
                    for j in range(3):
                        total += (e[i, k] * w[k, m] * u[m, j]).item() ** 2
    assert path_norm(p).item() == pytest.approx(total, rel=1e-5)


def test_margins_are_the_interpolated_tenth_percentile():
    params = margin_model()
    assert hand_margins(0) == [1.5, 0.5, 0.5, 0.5, 0.5, 1.5, 0.5, 1.5, 2.5]
    expected = [quantile_by_hand(hand_margins(i), 0.1) for i in range(2)]
    assert expected == [0.5, 1.0]
    assert output_margin(params, LEFT, RIGHT, LABELS).tolist() == pytest.approx(expected)
    assert inverse_margin(params, LEFT, RIGHT, LABELS).tolist() == pytest.approx([4.0, 1.0])
    expected = [quantile_by_hand(hand_margins(i), 0.7) for i in range(2)]
    assert output_margin(params, LEFT, RIGHT, LABELS, quantile=0.7).tolist() == pytest.approx(expected)


def test_the_inverse_margin_is_infinite_where_the_percentile_is_not_positive():
    # 25 pairs of N = 5: position 0.1 * 24 = 2.4 between the third and fourth smallest margins.
    n = 5
    left, right = torch.arange(n).repeat_interleave(n), torch.arange(n).repeat(n)
    params = {"embed_left": torch.arange(n, dtype=torch.float32).view(1, n, 1),
              "embed_right": torch.zeros(1, n, 1), "linear_left": torch.ones(1, 1, 1),
              "linear_right": torch.ones(1, 1, 1), "unembed": torch.tensor([[[1.0, 0.0, 0, 0, 0]]]),
              "unembed_bias": torch.tensor([[0.0, 0.5, 0, 0, 0]])}
    # logits (a, 0.5, 0, 0, 0) with labels 0 where a >= 1: margins a - 0.5, five pairs per a;
    # a = 0 labelled 1: margin 0.5. Sorted: 0.5 (x10: a = 0 and a = 1), 1.5, ...
    labels = torch.where(left >= 1, 0, 1)
    assert output_margin(params, left, right, labels).item() == pytest.approx(0.5)
    labels[:2] = 2                                       # two pairs wrong: margins -0.5, -0.5
    assert output_margin(params, left, right, labels).item() == pytest.approx(0.5)
    labels[2] = 2                                        # three: -0.5 + 0.4 (0.5 - (-0.5)) = -0.1
    assert output_margin(params, left, right, labels).item() == pytest.approx(-0.1, abs=1e-6)
    assert inverse_margin(params, left, right, labels).item() == math.inf


def test_accuracy_loss_and_cheap_measures_match_the_model():
    params = init_instances([0, 1, 2], MLPConfig(5, 3, 4, unembed_bias=True))
    left, right = torch.arange(5).repeat_interleave(5), torch.arange(5).repeat(5)
    labels = (left + right) % 5
    logits = instance_logits(params, left, right)
    torch.testing.assert_close(train_accuracy(params, left, right, labels),
                               (logits.argmax(2) == labels).double().mean(1))
    torch.testing.assert_close(train_loss(params, left, right, labels), instance_loss(params, left, right, labels).double())
    init = init_instances([7, 8, 9], MLPConfig(5, 3, 4, unembed_bias=True))
    cheap = cheap_measures(params, init, left, right, labels, instances_per_batch=2)
    assert tuple(cheap) == CHEAP_MEASURES
    torch.testing.assert_close(cheap["inverse_margin"], inverse_margin(params, left, right, labels))
    torch.testing.assert_close(cheap["train_loss"], train_loss(params, left, right, labels))
    torch.testing.assert_close(cheap["distance_from_init"], distance_from_init(params, init))
    for i in range(3):
        one = select_instances(params, i)
        for measure in (l2_norm, spectral_product, frobenius_product, path_norm):
            assert measure(one).item() == pytest.approx(cheap[measure.__name__][i].item(), rel=1e-6)


def fake_search(monkeypatch, scale: list[float]):
    """Replace the noisy accuracy by a known one: training accuracy 1, and under noise sigma
    1 - sigma / scale (the move is sigma / scale, 0 where scale is inf)."""
    monkeypatch.setattr(gm, "train_accuracy", lambda params, *rest: torch.ones(params["scale"].shape[0], dtype=torch.float64))
    calls = []

    def accuracy(params, sigma, left, right, labels, draws, generator, models_per_batch=16):
        calls.append((len(sigma), draws))
        return 1.0 - sigma / params["scale"]
    monkeypatch.setattr(gm, "mean_perturbed_accuracy", accuracy)
    return {"scale": torch.tensor(scale, dtype=torch.float64)}, calls


def test_the_search_doubles_from_one_then_bisects_to_the_crossing(monkeypatch):
    params, calls = fake_search(monkeypatch, [30.0, 20.0, 2.0])
    result = pac_bayes_sigma(params, LEFT, RIGHT, LABELS, torch.Generator(),
                             PacBayesSearch(doubling_draws=3, bisection_draws=5))
    # scale 30: moves 1/30, 2/30 at sigma 1, 2; 4/30 > 0.1 stops the doubling; bisection on [0, 4]:
    # 2 (0.067, below), 3 (0.1: within 0.01) -> 3. Scale 20: doubling to 4 (0.2); mid 2 moves 0.1.
    # Scale 2: sigma 1 moves 0.5 at once; mids 0.5 (0.25), 0.25 (0.125), 0.125 (0.0625),
    # 0.1875 (0.094: within 0.01).
    assert result.sigma.tolist() == pytest.approx([3.0, 2.0, 0.1875])
    assert result.converged.all()
    # Only instances still searching are evaluated: doubling 3, 2, 2 (scale 2 stops at once),
    # then bisection 3, 2 (scale 20 done), 1, 1.
    assert [c[0] for c in calls] == [3, 2, 2, 3, 2, 1, 1]
    assert result.evaluations == 3 * (3 + 2 + 2) + 5 * (3 + 2 + 1 + 1)


def test_an_instance_the_noise_never_moves_ends_at_the_last_midpoint(monkeypatch):
    params, _ = fake_search(monkeypatch, [math.inf])
    result = pac_bayes_sigma(params, LEFT, RIGHT, LABELS, torch.Generator(), PacBayesSearch(depth=3))
    # Doubling 1 -> 8 in three steps; bisection on [0, 8]: 4, 6, 7, every one tolerated.
    assert result.sigma.tolist() == [7.0] and not result.converged.any()
    assert pac_bayes_sharpness(params, LEFT, RIGHT, LABELS, torch.Generator(),
                               PacBayesSearch(depth=3)).tolist() == pytest.approx([1 / 49])


def test_noise_of_scale_zero_leaves_the_accuracy_and_draws_are_reproducible():
    params = margin_model()
    exact = train_accuracy(params, LEFT, RIGHT, LABELS)
    for per_batch in (1, 3, 16):
        same = mean_perturbed_accuracy(params, torch.zeros(2), LEFT, RIGHT, LABELS, 5,
                                       torch.Generator().manual_seed(0), per_batch)
        torch.testing.assert_close(same, exact)
    noisy = [mean_perturbed_accuracy(params, torch.tensor([0.5, 0.5]), LEFT, RIGHT, LABELS, 7,
                                     torch.Generator().manual_seed(4), 4) for _ in range(2)]
    assert torch.equal(noisy[0], noisy[1])


def test_pac_bayes_is_larger_for_the_sharper_copy_of_a_model():
    # Instance 1 computes the same classifier with weights scaled by 1/2 (logits by 1/8):
    # the same noise now moves the logits relatively more, so it is sharper.
    params = rescale(select_instances(margin_model(), [0, 0]), torch.tensor([1.0, 0.5]))
    assert torch.equal(instance_logits(params, LEFT, RIGHT).argmax(2)[0],
                       instance_logits(params, LEFT, RIGHT).argmax(2)[1])
    search = PacBayesSearch(doubling_draws=20, bisection_draws=100)
    sharpness = pac_bayes_sharpness(params, LEFT, RIGHT, LABELS, torch.Generator().manual_seed(0), search)
    assert torch.isfinite(sharpness).all()
    assert sharpness[1] > 2.0 * sharpness[0]
    again = pac_bayes_sharpness(params, LEFT, RIGHT, LABELS, torch.Generator().manual_seed(0), search)
    assert torch.equal(sharpness, again)


def test_all_measures():
    params = margin_model()
    init = {name: torch.zeros_like(value) for name, value in params.items()}
    search = PacBayesSearch(doubling_draws=4, bisection_draws=8)
    measures = all_measures(params, init, LEFT, RIGHT, LABELS, torch.Generator().manual_seed(3), search)
    assert set(measures) == set(CHEAP_MEASURES) | {"pac_bayes_sharpness"}
    assert all(value.shape == (2,) for value in measures.values())
    torch.testing.assert_close(measures["distance_from_init"], measures["l2_norm"])
    assert measures["inverse_margin"].tolist() == pytest.approx([4.0, 1.0])
    alone = pac_bayes_sharpness(params, LEFT, RIGHT, LABELS, torch.Generator().manual_seed(3), search)
    assert torch.equal(measures["pac_bayes_sharpness"], alone)
