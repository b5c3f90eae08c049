"""The batched SGLD estimator of the local learning coefficient: known answers, the plain loop, seeds.

Known answers. The estimator computes n_beta * (E[L(w)] - L(w*)) under the SGLD chains; for
the models below both the learning coefficient lambda and the exact expectation under the
localized tempered posterior exp(-n_beta L(w) - gamma |w - w*|^2 / 2) are known, so each test
checks the sampler against the exact expectation (within 4 standard errors: a statistical
check of the chains) and the estimate against lambda (within a tolerance that covers the
documented gap between the two at these settings: localization, finite n_beta, step size).
"""

import math

import pytest
import torch

from lib.book.params import ParameterError
from lib.grokking.groups import cyclic
from lib.grokking.llc import SGLDConfig, estimate_llc, estimates_at_chain_lengths, single_model_llc
from lib.grokking.mlp_llc import mlp_llc, mlp_llc_in_chunks, mlp_single_llc
from lib.grokking.mlp import MLPConfig, init_instances, instance_loss

pytestmark = pytest.mark.usefixtures("one_thread")


# --- Known answers --------------------------------------------------------------------------

def test_linear_regression_has_half_its_effective_dimension():
    """y = X w + N(0, 1) noise, L(w) = mean (y - X w)^2 / 2 (the Gaussian negative log-likelihood).

    Three instances of d = 6 weights run in one batch: instance 0 uses all six (full-rank X, a
    regular model, lambda = 6/2), instances 1 and 2 only the first 4 and 2 (the other columns of
    X are zero; unused weights add nothing, lambda = 2 and 1). Near w* = the least-squares fit,
    L(w) - L(w*) = (w - w*)^T H (w - w*) / 2 with H = X^T X / n, and SGLD on a quadratic is an
    AR(1) chain with stationary variance 1 / (a (1 - eps a / 4)) along each eigenvector of the
    precision a = n_beta h + gamma. So exactly

        E[n_beta (L - L(w*))] = sum_i n_beta h_i / (2 a_i (1 - eps a_i / 4)),

    which is lambda minus about 1.2% (localization, gamma / (n_beta h)) plus about 2% (step
    size). Tolerance against lambda: 10%, for those 3% and for 4 standard errors of 2-3% each.
    """
    gen = torch.Generator().manual_seed(0)
    n, d, b = 500, 6, 3
    used = torch.tensor([6, 4, 2])
    columns = (torch.arange(d)[None, :] < used[:, None]).double()               # (B, d)
    x = torch.randn(b, n, d, generator=gen, dtype=torch.float64) * columns[:, None, :]
    w_true = torch.randn(b, d, generator=gen, dtype=torch.float64) * columns
    y = (x @ w_true[:, :, None])[:, :, 0] + torch.randn(b, n, generator=gen, dtype=torch.float64)
    w_star = torch.zeros(b, d, dtype=torch.float64)
    for i, k in enumerate(used.tolist()):
        w_star[i, :k] = torch.linalg.lstsq(x[i, :, :k], y[i, :, None]).solution[:, 0]

    def loss_fn(params, batch):
        w = params["w"]                                     # (B * reps, d), instance-major
        residual = y[:, None, :] - w.view(b, -1, d) @ x.transpose(1, 2)      # (B, reps, n)
        return (residual.pow(2) / 2).mean(dim=2).reshape(-1)

    n_beta = n / math.log(n)                                 # devinterp's default_nbeta
    config = SGLDConfig(step_size=1e-3, n_beta=n_beta, localization=1.0, steps=1000, chains=40,
                        burn_in=0.5)
    estimate = estimate_llc(loss_fn, {"w": w_star}, config, torch.Generator().manual_seed(1))

    h = torch.linalg.eigvalsh(x.transpose(1, 2) @ x / n)                     # (B, d)
    a = n_beta * h + config.localization
    exact = (n_beta * h / (2 * a * (1 - config.step_size * a / 4))).sum(dim=1)
    lam = used.double() / 2
    assert torch.all((estimate.mean - exact).abs() < 4 * estimate.sem), (estimate.mean, exact, estimate.sem)
    assert torch.all((estimate.mean - lam).abs() < 0.10 * lam), (estimate.mean, lam)
    torch.testing.assert_close(estimate.init_loss, loss_fn({"w": w_star}, None))
    assert estimate.per_chain.shape == (3, 40) and estimate.loss_trace.shape == (1000, 3)


def _tempered_mean(n_beta: float, power: float, gamma: float) -> float:
    """E[n_beta |w|^power] under exp(-n_beta |w|^power - gamma w^2 / 2), by quadrature."""
    w = torch.linspace(-6.0, 6.0, 200_001, dtype=torch.float64)
    log_density = -n_beta * w.abs() ** power - gamma * w ** 2 / 2
    density = torch.exp(log_density - log_density.max())
    return float((n_beta * w.abs() ** power * density).sum() / density.sum())


def test_singular_polynomials_have_their_known_coefficient():
    """Two losses with w* = 0 and a degenerate Hessian, run as two instances of one batch.

    K(w) = w1^4 + w2^4 has lambda = 1/4 + 1/4 = 1/2 and K(w) = w1^2 + w2^4 has lambda = 1/2 +
    1/4 = 3/4 (a sum over separate coordinates adds their coefficients; |w|^p alone has 1/p),
    both with multiplicity 1, where a regular model of 2 parameters would have 1. Because the
    coordinates are independent under the posterior, the exact tempered expectation is a sum of
    1-D integrals (`_tempered_mean`): 0.495 and 0.747 at n_beta = 1000, gamma = 1. Tolerance
    against lambda: 15% (4 standard errors are about 13% and 5% here, plus the step-size bias).

    The normal crossing w1^2 w2^2 (lambda = 1/2, multiplicity 2) is left out: its tempered
    expectation approaches 1/2 only as 1/2 - 1/log(n_beta) and its chains mix slowly (along an
    axis only the localization pulls), so it makes a poor fast test.
    """
    powers = torch.tensor([[4.0, 4.0], [2.0, 4.0]], dtype=torch.float64)

    def loss_fn(params, batch):
        w = params["w"].view(2, -1, 2)
        return (w.abs() ** powers[:, None, :]).sum(dim=2).reshape(-1)

    config = SGLDConfig(step_size=5e-5, n_beta=1000.0, localization=1.0, steps=6000, chains=100,
                        burn_in=0.3)
    estimate = estimate_llc(loss_fn, {"w": torch.zeros(2, 2, dtype=torch.float64)}, config,
                            torch.Generator().manual_seed(3))
    exact = torch.tensor([sum(_tempered_mean(1000.0, float(p), 1.0) for p in row) for row in powers],
                         dtype=torch.float64)
    lam = torch.tensor([0.5, 0.75], dtype=torch.float64)
    assert torch.all((estimate.mean - exact).abs() < 4 * estimate.sem), (estimate.mean, exact, estimate.sem)
    assert torch.all((estimate.mean - lam).abs() < 0.15 * lam), (estimate.mean, lam)


# --- The chapter-4 MLP: batched against the plain loop --------------------------------------

GROUP = cyclic(6)
LEFT, RIGHT = (t.flatten() for t in torch.meshgrid(torch.arange(6), torch.arange(6), indexing="ij"))
LABELS = GROUP.table[LEFT, RIGHT]


def _trained_mlps(seeds, dtype=torch.float32, steps=150):
    """Tiny MLPs (N = 6, d = h = 4) trained briefly on all of Z6 with Adam.

    They do not reach a minimum (so their estimates may even be negative); the comparisons below
    need only the same w* on both sides.
    """
    params = {k: v.to(dtype).requires_grad_() for k, v in init_instances(seeds, MLPConfig(6, 4, 4)).items()}
    optimizer = torch.optim.Adam(params.values(), lr=0.05)
    for _ in range(steps):
        optimizer.zero_grad()
        instance_loss(params, LEFT, RIGHT, LABELS).sum().backward()
        optimizer.step()
    return {k: v.detach() for k, v in params.items()}


@pytest.mark.parametrize("batch_size", [None, 10])
def test_one_chain_follows_the_plain_loop_draw_for_draw(batch_size):
    """With one instance and one chain both consume the generator in the same order."""
    params = _trained_mlps([0], torch.float64, steps=50)
    config = SGLDConfig(steps=200, chains=1, batch_size=batch_size)
    batched = mlp_llc(params, LEFT, RIGHT, LABELS, config, torch.Generator().manual_seed(5))
    single = mlp_single_llc({k: v[0] for k, v in params.items()}, LEFT, RIGHT, LABELS, config,
                            torch.Generator().manual_seed(5))
    torch.testing.assert_close(batched.loss_trace, single.loss_trace, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(batched.per_chain, single.per_chain, rtol=1e-8, atol=1e-8)
    torch.testing.assert_close(batched.init_loss, single.init_loss, rtol=1e-12, atol=1e-12)


def test_full_batch_hand_written_gradient_follows_autograd():
    """The full-batch path (the trainer's hand-written gradient) runs the same chains as the
    generic autograd estimator: several instances and chains, float64, to rounding."""
    params = _trained_mlps([0, 1, 2], torch.float64, steps=30)
    config = SGLDConfig(steps=100, chains=3)

    def loss_fn(models, batch):
        return instance_loss(models, LEFT, RIGHT, LABELS)

    fast = mlp_llc(params, LEFT, RIGHT, LABELS, config, torch.Generator().manual_seed(2))
    generic = estimate_llc(loss_fn, params, config, torch.Generator().manual_seed(2))
    torch.testing.assert_close(fast.loss_trace, generic.loss_trace, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(fast.per_chain, generic.per_chain, rtol=1e-7, atol=1e-7)


def test_chunks_give_the_same_numbers_with_any_number_of_workers(monkeypatch):
    """Chunk k draws from its own generator, seeded from the caller's before any chunk runs: one
    worker or two (processes), the numbers are the same, and each chunk's equal `mlp_llc` of
    that chunk with its seed."""
    # 2 instances per chunk: an instance is 4 chains x 36 pairs x 6 elements of activations
    monkeypatch.setattr("lib.grokking.mlp_llc.MAX_SGLD_ACTIVATIONS", 2 * 4 * 36 * 6)
    params = _trained_mlps([0, 1, 2, 3, 4], steps=20)
    config = SGLDConfig(steps=40, chains=4)
    runs = [mlp_llc_in_chunks(params, LEFT, RIGHT, LABELS, config, torch.Generator().manual_seed(9),
                              workers=workers) for workers in (1, 2, 1)]
    for field in ("mean", "std", "sem", "per_chain", "init_loss", "loss_trace"):
        assert torch.equal(getattr(runs[0], field), getattr(runs[1], field)), field
        assert torch.equal(getattr(runs[0], field), getattr(runs[2], field)), field
    seeds = torch.randint(0, 2**62, (3,), generator=torch.Generator().manual_seed(9)).tolist()
    last = mlp_llc({k: v[4:5] for k, v in params.items()}, LEFT, RIGHT, LABELS, config,
                   torch.Generator().manual_seed(seeds[2]))
    assert torch.equal(runs[0].per_chain[4:5], last.per_chain)
    assert runs[0].loss_trace.shape == (40, 5)


def test_shorter_chains_are_read_exactly_from_the_first_steps_of_long_ones():
    """The estimate of chains of L steps equals the one read from the first L steps of longer
    chains drawn from the same generator, for several L (the burn-in share of each length)."""
    params = _trained_mlps([0, 1, 2], steps=20)
    long = mlp_llc_in_chunks(params, LEFT, RIGHT, LABELS, SGLDConfig(steps=60, chains=3, burn_in=0.5),
                             torch.Generator().manual_seed(4))
    read = estimates_at_chain_lengths(long.loss_trace, long.init_loss, SGLDConfig(steps=60, chains=3, burn_in=0.5), [7, 20, 60])
    for row, length in zip(read, (7, 20, 60)):
        short = mlp_llc_in_chunks(params, LEFT, RIGHT, LABELS, SGLDConfig(steps=length, chains=3, burn_in=0.5),
                                  torch.Generator().manual_seed(4))
        assert torch.allclose(row, short.mean, rtol=1e-9, atol=1e-9), length
    assert torch.allclose(read[-1], long.mean, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="chain length"):
        estimates_at_chain_lengths(long.loss_trace, long.init_loss, SGLDConfig(steps=60, chains=3), [61])


def test_batched_and_single_estimates_agree_within_their_errors():
    params = _trained_mlps([0, 1])
    batched = mlp_llc(params, LEFT, RIGHT, LABELS, SGLDConfig(steps=300, chains=24),
                      torch.Generator().manual_seed(0))
    single = mlp_single_llc({k: v[0] for k, v in params.items()}, LEFT, RIGHT, LABELS,
                            SGLDConfig(steps=300, chains=12), torch.Generator().manual_seed(1))
    combined = math.hypot(float(batched.sem[0]), float(single.sem[0]))
    assert abs(float(batched.mean[0] - single.mean[0])) < 3 * combined, (batched.mean, single.mean, combined)


def test_copies_of_one_model_agree_within_their_errors():
    one = _trained_mlps([2])
    copies = {k: v.expand(3, *v.shape[1:]).clone() for k, v in one.items()}
    estimate = mlp_llc(copies, LEFT, RIGHT, LABELS, SGLDConfig(steps=300, chains=24),
                       torch.Generator().manual_seed(0))
    assert not torch.equal(estimate.per_chain[0], estimate.per_chain[1])   # independent noise
    for i in range(3):
        for j in range(i):
            combined = math.hypot(float(estimate.sem[i]), float(estimate.sem[j]))
            assert abs(float(estimate.mean[i] - estimate.mean[j])) < 3 * combined


# --- Seeds, summaries, bad values -----------------------------------------------------------

def test_same_seed_same_numbers_and_consistent_summaries():
    params = _trained_mlps([0, 1], steps=20)
    config = SGLDConfig(steps=60, chains=5, burn_in=0.5, batch_size=20)
    runs = [mlp_llc(params, LEFT, RIGHT, LABELS, config, torch.Generator().manual_seed(s)) for s in (7, 7, 8)]
    for field in ("mean", "std", "sem", "per_chain", "init_loss", "loss_trace"):
        assert torch.equal(getattr(runs[0], field), getattr(runs[1], field)), field
    assert not torch.equal(runs[0].per_chain, runs[2].per_chain)
    estimate = runs[0]
    assert estimate.burn_in_steps == 30
    torch.testing.assert_close(estimate.mean, estimate.per_chain.mean(dim=1))
    torch.testing.assert_close(estimate.sem, estimate.per_chain.std(dim=1) / math.sqrt(5))
    torch.testing.assert_close(estimate.init_loss, instance_loss(params, LEFT, RIGHT, LABELS).double())
    # the loss recorded at step 0 is the loss at w* (before the update) on that step's batch
    batch = torch.randperm(36, generator=torch.Generator().manual_seed(7))[:20]
    torch.testing.assert_close(estimate.loss_trace[0],
                               instance_loss(params, LEFT[batch], RIGHT[batch], LABELS[batch]).double())
    assert estimate.loss_trace.shape == (60, 2)


def test_single_model_loop_on_a_quadratic():
    """The plain loop alone recovers d/2 for L(w) = |w|^2 / 2 (H = I, d = 3).

    Exact value as in the regression test: 3 n_beta / (2 a (1 - eps a / 4)) = 1.564 with
    a = n_beta + gamma = 101 (lambda = 1.5). Tolerance 10%: the chain-to-chain spread of this
    AR(1) chain gives a standard error of about 0.044 (2.8%), so 10% is about 3.6 of them.
    """
    config = SGLDConfig(step_size=2e-3, n_beta=100.0, localization=1.0, steps=250, chains=40, burn_in=0.2)
    estimate = single_model_llc(lambda p, batch: p["w"].pow(2).sum() / 2, {"w": torch.zeros(3)},
                                config, torch.Generator().manual_seed(0))
    a = config.n_beta + config.localization
    exact = 3 * config.n_beta / (2 * a * (1 - config.step_size * a / 4))
    assert abs(float(estimate.mean[0]) - exact) < 0.10 * exact, (estimate.mean, exact)
    assert estimate.per_chain.shape == (1, 40) and estimate.loss_trace.shape == (250, 1)


def test_burn_in_steps_and_the_study_defaults():
    config = SGLDConfig()
    assert (config.step_size, config.n_beta, config.localization, config.steps, config.chains,
            config.burn_in, config.batch_size) == (8e-4, 1e3, 1.0, 3000, 100, 0.6, None)
    assert config.burn_in_steps == 1800
    assert SGLDConfig(burn_in=0.29, steps=100).burn_in_steps == 29       # 28.999... in floats
    assert SGLDConfig(burn_in=0.9, steps=1).burn_in_steps == 0           # one step is kept


@pytest.mark.parametrize("field, value", [
    ("step_size", 0.0), ("step_size", float("nan")), ("n_beta", -1.0), ("localization", -0.1),
    ("steps", 0), ("steps", 10.5), ("chains", 0), ("burn_in", 1.0), ("burn_in", -0.1),
    ("batch_size", 0), ("batch_size", 2.0),
])
def test_bad_settings_name_the_field(field, value):
    with pytest.raises(ParameterError, match=f"`{field}`"):
        SGLDConfig(**{field: value})


def test_a_batch_larger_than_the_training_set_is_refused():
    params = _trained_mlps([0], steps=0)
    with pytest.raises(ParameterError, match="`batch_size`.*36"):
        mlp_llc(params, LEFT, RIGHT, LABELS, SGLDConfig(steps=2, chains=2, batch_size=37),
                torch.Generator().manual_seed(0))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_runs_on_the_parameters_device():
    params = {k: v.cuda() for k, v in _trained_mlps([0, 1], steps=20).items()}
    config = SGLDConfig(steps=50, chains=4, batch_size=20)
    runs = [mlp_llc(params, LEFT, RIGHT, LABELS, config, torch.Generator(device="cuda").manual_seed(0))
            for _ in range(2)]
    assert runs[0].mean.device.type == "cpu" and torch.isfinite(runs[0].mean).all()
    assert torch.equal(runs[0].per_chain, runs[1].per_chain)
