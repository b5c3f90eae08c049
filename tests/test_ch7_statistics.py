"""The AUC difference and its standard error (lib.book.statistics.auc_difference), which chapter 7
uses to state a layer's margin over the graph-statistics probe."""

import math

import torch

from lib.book.statistics import auc_difference, roc_auc, weighted_roc_aucs


def delong_difference_se(a: torch.Tensor, b: torch.Tensor, positive: torch.Tensor) -> float:
    """DeLong's standard error of AUC(a) - AUC(b) (the analytic reference)."""
    def components(scores):
        pos, neg = scores[positive], scores[~positive]
        greater = (pos.unsqueeze(1) > neg.unsqueeze(0)).double() + 0.5 * (pos.unsqueeze(1) == neg.unsqueeze(0)).double()
        return greater.mean(1), greater.mean(0)
    (va, wa), (vb, wb) = components(a.double()), components(b.double())
    n_pos, n_neg = len(va), len(wa)
    var_v = torch.cov(torch.stack([va, vb]))
    var_w = torch.cov(torch.stack([wa, wb]))
    variance = (var_v[0, 0] + var_v[1, 1] - 2 * var_v[0, 1]) / n_pos + (var_w[0, 0] + var_w[1, 1] - 2 * var_w[0, 1]) / n_neg
    return float(variance.sqrt())


def test_weighted_auc_with_unit_weights_is_the_auc_ties_included():
    generator = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 5, (300,), generator=generator).double()
    positive = torch.rand(300, generator=generator) < 0.4
    assert math.isclose(float(weighted_roc_aucs(scores, positive, torch.ones(1, 300))[0]), roc_auc(scores, positive),
                        abs_tol=1e-12)
    # Weight 2 on an example is the example twice.
    weights = torch.ones(1, 300)
    weights[0, :10] = 2
    doubled = torch.cat([scores, scores[:10]]), torch.cat([positive, positive[:10]])
    assert math.isclose(float(weighted_roc_aucs(scores, positive, weights)[0]), roc_auc(*doubled), abs_tol=1e-12)


def test_the_bootstrap_standard_error_matches_delong_on_a_known_case():
    generator = torch.Generator().manual_seed(1)
    n = 2000
    positive = torch.rand(n, generator=generator) < 0.3
    shared = torch.randn(n, generator=generator)
    a = shared + 1.2 * positive + 0.5 * torch.randn(n, generator=generator)
    b = shared + 0.8 * positive + 0.5 * torch.randn(n, generator=generator)
    result = auc_difference(a, b, positive, resamples=400, generator=torch.Generator().manual_seed(2))
    assert math.isclose(result.difference, roc_auc(a, positive) - roc_auc(b, positive), abs_tol=1e-12)
    reference = delong_difference_se(a, b, positive)
    assert 0.8 * reference < result.standard_error < 1.2 * reference
    assert result.z > 2 and result.resamples == 400


def test_identical_scores_differ_by_nothing_and_clusters_widen_the_error():
    generator = torch.Generator().manual_seed(3)
    n = 600
    positive = torch.rand(n, generator=generator) < 0.5
    a = positive + torch.randn(n, generator=generator)
    b = positive + torch.randn(n, generator=generator)
    same = auc_difference(a, a, positive, resamples=50, generator=torch.Generator().manual_seed(0))
    assert same.difference == 0 and same.standard_error == 0 and math.isnan(same.z)
    # Every example twice: ignoring that the copies belong together understates the error by
    # about sqrt(2); resampling them as clusters gives the error of the original sample.
    twice = [torch.cat([x, x]) for x in (a, b, positive)]
    clusters = torch.arange(n).repeat(2)
    alone = auc_difference(a, b, positive, resamples=400, generator=torch.Generator().manual_seed(1))
    naive = auc_difference(*twice, resamples=400, generator=torch.Generator().manual_seed(1))
    clustered = auc_difference(*twice, resamples=400, generator=torch.Generator().manual_seed(1), clusters=clusters)
    assert 0.85 * alone.standard_error < clustered.standard_error < 1.15 * alone.standard_error
    assert naive.standard_error < 0.85 * clustered.standard_error
