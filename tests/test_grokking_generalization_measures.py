"""Jiang et al.'s measures on hand-written MLPs, checked against arithmetic done by hand."""

import math

import pytest
import torch

from lib.grokking.circuit_efficiency import rescale
from lib.grokking.generalization_measures import (
    all_measures, distance_from_init, frobenius_product, inverse_margin, l2_norm, layer_matrices,
    output_margin, pac_bayes_sharpness, pac_bayes_sigma, path_norm, spectral_product,
)
from lib.grokking.mlp import MLPConfig, init_instances, instance_logits, parameter_norm, select_instances


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


def test_the_layers_rebuild_the_model():
    params = norm_model(bias=True)
    a, w, u = layer_matrices(params)
    assert a.shape == (2, 4, 4) and w.shape == (2, 4, 2) and u.shape == (2, 2, 2)
    x = torch.zeros(4, 4)                     # pair (a, b) as concat(one_hot(a), one_hot(b))
    pairs = [(0, 0), (0, 1), (1, 0), (1, 1)]
    for t, (i, j) in enumerate(pairs):
        x[t, i], x[t, 2 + j] = 1.0, 1.0
    logits = torch.relu(x @ a @ w) @ u + params["unembed_bias"][:, None, :]
    left, right = torch.tensor([p[0] for p in pairs]), torch.tensor([p[1] for p in pairs])
    torch.testing.assert_close(logits, instance_logits(params, left, right))


def test_norms_by_hand():
    params = norm_model()
    # Squared entries: instance 0: 5 + 10 + 2 + 2 + 4; instance 1: 4 + 0.25 + 9 + 16 + 4.
    assert l2_norm(params).tolist() == pytest.approx([math.sqrt(23.0), math.sqrt(33.25)], rel=1e-6)
    with_bias = norm_model(bias=True)                     # + (1 + 4), + 9
    assert l2_norm(with_bias).tolist() == pytest.approx([math.sqrt(28.0), math.sqrt(42.25)], rel=1e-6)
    assert torch.equal(l2_norm(with_bias), parameter_norm(with_bias))
    init = {name: value.clone() for name, value in params.items()}
    init["unembed"][0] += torch.tensor([[3.0, 4.0], [0.0, 0.0]])   # distance 5
    init["embed_left"][1] += 1.0                                      # four entries: distance 2
    assert distance_from_init(params, init).tolist() == pytest.approx([5.0, 2.0], rel=1e-6)


@pytest.mark.parametrize("bias", [False, True])
def test_layer_products_by_hand(bias):
    params = norm_model(bias)
    # Instance 0: ||A||_2 = max(2, 3); [W_l; W_r] has orthogonal columns of norm sqrt 2; ||U||_2 = 2.
    # Instance 1: ||A||_2 = max(2, 0.5); [W_l; W_r] has one column (3, 0, 0, 4); ||U||_2 = 2.
    assert spectral_product(params).tolist() == pytest.approx([9.0 * 2.0 * 4.0, 4.0 * 25.0 * 4.0], rel=1e-5)
    # Squared Frobenius norms: (5 + 10) * 4 * 4 and (4 + 0.25) * 25 * 4; the bias is no layer.
    assert frobenius_product(params).tolist() == pytest.approx([240.0, 425.0], rel=1e-6)


def test_path_norm_by_hand():
    # Instance 0: 1^T E_l^2 W_l^2 = (4, 1), 1^T E_r^2 W_r^2 = (9, 1): hidden (13, 2);
    # times U^2 = all ones: (15, 15), sum 30. Instance 1: (2, 2) diag(9, 0) = (18, 0) plus
    # (0, 0.25) [[0, 0], [16, 0]] = (4, 0): hidden (22, 0); times [[0, 4], [0, 0]]: 88.
    assert path_norm(norm_model()).tolist() == pytest.approx([30.0, 88.0], rel=1e-6)
    # The bias adds the sum of its squares: 1 + 4 and 9.
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


def test_margins_by_hand():
    params = margin_model()
    # m = 9 < 20 pairs: the 10th percentile is the smallest margin, 0.5 and 1.
    assert hand_margins(0) == [1.5, 0.5, 0.5, 0.5, 0.5, 1.5, 0.5, 1.5, 2.5]
    assert output_margin(params, LEFT, RIGHT, LABELS).tolist() == pytest.approx([0.5, 1.0])
    assert inverse_margin(params, LEFT, RIGHT, LABELS).tolist() == pytest.approx([4.0, 1.0])
    # quantile 0.7: k = floor(6.3) = 6th smallest of the sorted margins.
    expected = [sorted(hand_margins(i))[5] for i in range(2)]
    assert expected == [1.5, 3.0]
    assert output_margin(params, LEFT, RIGHT, LABELS, quantile=0.7).tolist() == pytest.approx(expected)


def test_the_tenth_percentile_of_a_larger_training_set():
    # 25 pairs of N = 5: k = floor(2.5) = 2, the second smallest margin.
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
    labels[0] = 2                                        # one pair wrong: margin -0.5, the minimum
    assert output_margin(params, left, right, labels).item() == pytest.approx(0.5)
    labels[1] = 2                                        # two wrong: the second smallest is < 0
    assert output_margin(params, left, right, labels).item() == pytest.approx(-0.5)
    assert inverse_margin(params, left, right, labels).item() == math.inf


def test_measures_are_batched_instance_by_instance():
    params, params_m = norm_model(bias=True), margin_model()
    init = {name: value.clone() for name, value in params_m.items()}
    for i in range(2):
        one = select_instances(params, i)
        for measure in (l2_norm, spectral_product, frobenius_product, path_norm):
            assert measure(one).item() == pytest.approx(measure(params)[i].item(), rel=1e-6)
        one_m = select_instances(params_m, i)
        assert output_margin(one_m, LEFT, RIGHT, LABELS).item() == output_margin(params_m, LEFT, RIGHT, LABELS)[i]
        assert distance_from_init(one_m, select_instances(init, i)).item() == 0.0


def test_pac_bayes_is_larger_for_the_sharper_copy_of_a_model():
    # Instance 1 computes the same classifier with weights scaled by 1/2 (logits by 1/8):
    # the same noise now moves the logits relatively more, so it is sharper.
    params = rescale(select_instances(margin_model(), [0, 0]), torch.tensor([1.0, 0.5]))
    assert torch.equal(instance_logits(params, LEFT, RIGHT).argmax(2)[0],
                       instance_logits(params, LEFT, RIGHT).argmax(2)[1])
    sharpness = pac_bayes_sharpness(params, LEFT, RIGHT, LABELS, torch.Generator().manual_seed(0))
    assert torch.isfinite(sharpness).all()
    assert sharpness[1] > 2.0 * sharpness[0]


def test_pac_bayes_sigma_is_where_the_accuracy_deviation_crosses_the_threshold():
    params = margin_model()
    sigma = pac_bayes_sigma(params, LEFT, RIGHT, LABELS, torch.Generator().manual_seed(1), n_samples=8)
    # Redo the Monte Carlo estimate with the same draws: at sigma the accuracy falls by <= 0.1.
    g = torch.Generator().manual_seed(1)
    accuracy = torch.zeros(2)
    for _ in range(8):
        noisy = {name: value + sigma.view(-1, *[1] * (value.dim() - 1)) * torch.randn(value.shape, generator=g)
                 for name, value in params.items()}
        accuracy += (instance_logits(noisy, LEFT, RIGHT).argmax(2) == LABELS).float().mean(1)
    assert ((1.0 - accuracy / 8).abs() <= 0.1).all()
    assert (sigma > 0).all() and torch.isfinite(sigma).all()


def test_pac_bayes_is_deterministic_for_a_seed():
    params = margin_model()
    first = pac_bayes_sharpness(params, LEFT, RIGHT, LABELS, torch.Generator().manual_seed(5))
    again = pac_bayes_sharpness(params, LEFT, RIGHT, LABELS, torch.Generator().manual_seed(5))
    assert torch.equal(first, again)
    by_loss = pac_bayes_sharpness(params, LEFT, RIGHT, LABELS, torch.Generator().manual_seed(5),
                                  criterion="loss", max_deviation=0.5)
    assert torch.isfinite(by_loss).all() and (by_loss > 0).all()


def test_all_measures():
    params = margin_model()
    init = {name: torch.zeros_like(value) for name, value in params.items()}
    measures = all_measures(params, init, LEFT, RIGHT, LABELS, torch.Generator().manual_seed(3))
    assert set(measures) == {"l2_norm", "distance_from_init", "output_margin", "inverse_margin",
                             "spectral_product", "frobenius_product", "path_norm", "pac_bayes_sharpness"}
    assert all(value.shape == (2,) for value in measures.values())
    torch.testing.assert_close(measures["distance_from_init"], measures["l2_norm"])
    assert measures["inverse_margin"].tolist() == pytest.approx([4.0, 1.0])
    alone = pac_bayes_sharpness(params, LEFT, RIGHT, LABELS, torch.Generator().manual_seed(3))
    assert torch.equal(measures["pac_bayes_sharpness"], alone)


def test_layer_products_equal_those_of_the_built_layers():
    params = init_instances([0, 1, 2], MLPConfig(5, 3, 4))
    layers = layer_matrices(params)
    spectral = math.prod(torch.linalg.matrix_norm(layer, ord=2) ** 2 for layer in layers)
    frobenius = math.prod(layer.pow(2).sum(dim=(1, 2)) for layer in layers)
    torch.testing.assert_close(spectral_product(params), spectral)
    torch.testing.assert_close(frobenius_product(params), frobenius)
