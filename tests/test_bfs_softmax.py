"""The constructions' softmax: torch's softmax, written out, without denormal weights."""

import torch

from lib.bfs.softmax import smallest_normal_log, underflow_free_softmax


def test_equals_torch_softmax_where_no_weight_underflows():
    scores = torch.randn(64, 9, 9, 9, generator=torch.Generator().manual_seed(0)) * 5
    torch.testing.assert_close(underflow_free_softmax(scores), torch.softmax(scores, dim=-1), rtol=1e-6, atol=1e-7)


def test_stiff_rows_get_the_smallest_normal_weight_instead_of_a_denormal():
    scores = torch.tensor([[0.0, -30.0, -95.0, -200.0]])
    weights = underflow_free_softmax(scores)
    tiny = torch.finfo(torch.float32).tiny
    assert torch.all(weights >= tiny)                       # nothing denormal, nothing zero
    assert torch.allclose(weights[0, :2], torch.softmax(scores, dim=-1)[0, :2], rtol=1e-6)
    assert torch.allclose(weights[0, 2:], torch.tensor(smallest_normal_log(torch.float32)).exp(), rtol=1e-5)
    assert (weights - torch.softmax(scores, dim=-1)).abs().max() < 1e-37
    assert abs(float(weights.sum()) - 1.0) < 1e-7


def test_the_gradient_is_the_softmax_gradient():
    scores = torch.randn(4, 3, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(1), requires_grad=True)
    assert torch.autograd.gradcheck(underflow_free_softmax, (scores,))
    weights = torch.randn(4, 3, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    ours = torch.autograd.grad((underflow_free_softmax(scores) * weights).sum(), scores)[0]
    theirs = torch.autograd.grad((torch.softmax(scores, dim=-1) * weights).sum(), scores)[0]
    torch.testing.assert_close(ours, theirs)


def test_the_input_is_left_untouched():
    scores = torch.tensor([[1.0, -200.0, 3.0]])
    before = scores.clone()
    underflow_free_softmax(scores)
    assert torch.equal(scores, before)
