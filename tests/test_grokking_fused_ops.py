"""The private torch kernels of the instance trainer give the numbers of their public fallbacks."""

import pytest
import torch

from lib.grokking import fused_ops
from lib.grokking.fused_ops import FlatAdam
from lib.grokking.mlp import MLPConfig, init_instances
from lib.grokking.pairs import make_pair, pairs_in_mask
from lib.grokking.training import Evaluation, SweepConfig, train_instances

pytestmark = pytest.mark.usefixtures("one_thread")

needs_fused_adam = pytest.mark.skipif(fused_ops._FUSED_ADAM is None,
                                      reason="this torch has no private fused Adam kernel")


def _adam_trajectory(private: bool, monkeypatch, dtype: torch.dtype) -> list[torch.Tensor]:
    """Parameters after each of 20 Adam steps on fixed random gradients, with two decay regions."""
    monkeypatch.setattr(fused_ops, "PRIVATE_OPS", private)
    generator = torch.Generator().manual_seed(0)
    param = torch.randn(1003, generator=generator, dtype=dtype)
    grad = torch.empty_like(param)
    adam = FlatAdam(param, grad, [(slice(0, 900), 2e-4), (slice(900, None), 0.0)],
                    lr=0.01, beta1=0.9, beta2=0.98, eps=1e-8)
    trajectory = []
    for _ in range(20):
        grad.copy_(torch.randn(param.shape, generator=generator, dtype=dtype))
        adam.step()
        trajectory.append(param.clone())
    return trajectory


@needs_fused_adam
@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-6), (torch.float64, 1e-14)])
def test_fused_adam_kernel_equals_the_public_ops(monkeypatch, dtype, tolerance):
    """Equal up to rounding (the fused kernel orders its arithmetic differently)."""
    private = _adam_trajectory(True, monkeypatch, dtype)
    public = _adam_trajectory(False, monkeypatch, dtype)
    for a, b in zip(private, public):
        torch.testing.assert_close(a, b, rtol=tolerance, atol=tolerance)


@needs_fused_adam
def test_a_sweep_on_public_ops_only_follows_the_default_one(monkeypatch):
    pair = make_pair("S4_vs_A4xZ2")
    left, right = pairs_in_mask(pair.mask)
    labels = pair.g1.table[left, right]
    evaluations = [Evaluation("g1", pair.g1.table)]
    model = MLPConfig(24, 8, 8, unembed_bias=True)
    config = SweepConfig(epochs=20, log_every=10, weight_decay=2e-4)

    def sweep():
        return train_instances(init_instances([0, 1], model), left, right, labels, evaluations, config)

    private = sweep()
    monkeypatch.setattr(fused_ops, "PRIVATE_OPS", False)
    public = sweep()
    for name, value in private.final_params.items():
        torch.testing.assert_close(public.final_params[name], value, rtol=1e-4, atol=1e-5)
