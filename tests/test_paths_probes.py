"""Batched linear probes (lib.paths.probes) on synthetic data with a known direction, and their
calibration: the cut-off tuned on the training examples and the threshold-free AUC."""

import pytest
import torch

from lib.paths.probes import balanced_accuracy, fit_probes, r_squared, roc_aucs, score_logistic, tuned_cutoffs


def planted(n: int, width: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(n, width, generator=generator) * torch.linspace(0.5, 3.0, width)  # unequal scales
    direction = torch.randn(width, generator=generator)
    return features, direction


def test_logistic_probes_recover_each_planted_direction_at_once():
    train, first = planted(4000, 8, 0)
    test, _ = planted(2000, 8, 1)
    second = torch.randn(8, generator=torch.Generator().manual_seed(2))
    directions = torch.stack([first, second])
    labels = lambda x: (torch.einsum("nd,pd->pn", x, directions) > 0.3).float()  # noqa: E731
    probes = fit_probes(train, labels(train), kind="logistic")   # two probes reading the same features
    score = balanced_accuracy(probes.scores(test), labels(test))
    separate = fit_probes(train.expand(2, -1, -1), labels(train), kind="logistic")  # each its own copy
    assert torch.allclose(separate.weight, probes.weight, atol=1e-6)
    assert (score > 0.97).all(), score
    # The probe's direction in the raw features is the planted one.
    cosine = (probes.direction().float() * directions / directions.norm(dim=1, keepdim=True)).sum(1)
    assert (cosine > 0.97).all(), cosine


def test_probes_on_shuffled_labels_score_chance_on_average():
    """Each shuffled-label probe points in some random direction (its score on the true labels
    is anywhere between 0 and 1), so the control is judged over many probes fitted at once."""
    train, direction = planted(2000, 8, 3)
    test, _ = planted(2000, 8, 4)
    labels = (train @ direction > 0).float()
    generator = torch.Generator().manual_seed(5)
    shuffled = torch.stack([labels[torch.randperm(len(labels), generator=generator)] for _ in range(48)])
    probes = fit_probes(train.expand(48, -1, -1), shuffled, kind="logistic")
    score = balanced_accuracy(probes.scores(test.expand(48, -1, -1)), (test @ direction > 0).float().expand(48, -1))
    assert abs(float(score.mean()) - 0.5) < 0.08


def test_ridge_probe_recovers_a_linear_target_and_r_squared_is_one():
    train, direction = planted(3000, 6, 6)
    test, _ = planted(1000, 6, 7)
    target = lambda x: x @ direction + 2.0  # noqa: E731
    probes = fit_probes(train.unsqueeze(0), target(train).unsqueeze(0), kind="linear", l2=1e-9)
    predictions = probes.scores(test.unsqueeze(0))
    assert torch.allclose(predictions[0].float(), target(test), atol=1e-3)
    assert float(r_squared(predictions, target(test).unsqueeze(0))[0]) == pytest.approx(1.0, abs=1e-6)


def test_balanced_accuracy_ignores_the_base_rate_and_is_nan_with_one_class():
    labels = torch.tensor([[1, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]).float()
    always_no = -torch.ones(2, 8)
    score = balanced_accuracy(always_no, labels)
    assert float(score[0]) == 0.5 and torch.isnan(score[1])


def test_bad_shapes_and_kinds_are_refused():
    with pytest.raises(ValueError, match="one of"):
        fit_probes(torch.zeros(1, 4, 2), torch.zeros(1, 4), kind="svm")
    with pytest.raises(ValueError, match=r"features \(N, d\) or \(P, N, d\)"):
        fit_probes(torch.zeros(4, 2), torch.zeros(4), kind="linear")
    with pytest.raises(ValueError, match=r"features \(N, d\) or \(P, N, d\)"):
        fit_probes(torch.zeros(3, 4, 2), torch.zeros(2, 4), kind="linear")


def test_a_rare_class_separable_away_from_logit_zero_is_found_by_the_tuned_cut_off_and_the_auc():
    """A heavy penalty pulls every logit towards the base rate: the rare class ranks on top but
    below logit 0, so the untuned cut-off calls everything "no"; a cut-off tuned on the training
    examples and the AUC both see that the classes are apart."""
    def draw(seed: int):
        generator = torch.Generator().manual_seed(seed)
        labels = (torch.rand(3000, generator=generator) < 0.03).float()
        features = (labels * 3.0 + 0.3 * torch.randn(3000, generator=generator)).unsqueeze(1)
        return features, labels.unsqueeze(0)
    (train, train_labels), (test, test_labels) = draw(0), draw(1)
    probes = fit_probes(train, train_labels, kind="logistic", l2=1.0)
    assert float(probes.scores(test).max()) < 0                       # no example above logit 0
    scores = score_logistic(probes.scores(train), train_labels, probes.scores(test), test_labels)
    assert float(scores.untuned[0]) == 0.5
    assert float(scores.tuned[0]) > 0.99 and float(scores.auc[0]) > 0.999


def test_the_tuned_cut_off_maximises_the_training_balanced_accuracy():
    logits = torch.tensor([[3.0, 2.0, 1.0, 0.5, -1.0], [1.0, 1.0, 1.0, 0.0, 0.0]])
    labels = torch.tensor([[1, 1, 0, 1, 0], [1, 1, 1, 0, 0]]).float()
    cutoffs = tuned_cutoffs(logits, labels)
    assert cutoffs.tolist() == [1.5, 0.5]      # midway between neighbours; ties cut between distinct logits
    best = balanced_accuracy(logits, labels, cutoffs)
    for shift in (-2.0, -0.75, 0.0, 0.75, 2.5):
        assert (balanced_accuracy(logits, labels, torch.full((2,), shift)) <= best + 1e-12).all()
    assert roc_aucs(logits, labels).tolist() == pytest.approx([5 / 6, 1.0])
    assert float(tuned_cutoffs(torch.zeros(1, 3), torch.ones(1, 3))[0]) == 0.0   # one class: nothing to tune
