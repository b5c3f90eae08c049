"""Local learning coefficient (LLC) of many models at once, estimated by SGLD (chapter 5).

Chapter 5 measures how degenerate each trained MLP instance of chapter 4 is by its LLC, the
estimate of the ambiguous-grokking study (step 8e-4, inverse temperature n*beta = 1e3,
localization 1, 3,000 full-batch steps, 100 chains, 60% burn-in; the defaults of `SGLDConfig`).
For one model at w* with training loss L (mean over the n training points), chain c runs SGLD on
the localized, tempered posterior exp(-n_beta L(w) - localization/2 |w - w*|^2) and

    llc_c = n_beta * (mean of L(w_t) over the steps t after burn-in - L(w*)).

The estimate of the model is the mean of llc_c over its chains, reported with their standard
deviation (ddof 1) and standard error (std / sqrt(chains)). It assumes w* is a local minimum of
L: from elsewhere the chains drift downhill and the estimate can come out negative.

The SGLD step (one model; eps = step_size, gamma = localization, xi ~ N(0, I)):

    w_{t+1} = w_t - (eps / 2) * (n_beta * grad L_batch(w_t) + gamma * (w_t - w*)) + sqrt(eps) * xi

where L_batch is the mean loss over the step's batch (all n points by default). This is
exactly devinterp's SGLD (checked in the code of devinterp 1.3.2's `devinterp.optim.SGLD` and
2.0.1's `SGLD` and `SGMCMC.sgld`) with lr = eps, nbeta = n_beta, localization = gamma,
noise_level 1, no weight decay and no bounding box: devinterp multiplies the gradient of the
batch-mean loss by nbeta, adds localization * (w - w_0), steps by -lr/2 times that, then adds
sqrt(lr) * N(0, 1). The recorded loss of step t is, as in devinterp, the loss at w_t *before*
its update, on the batch its gradient comes from (with minibatches a batch loss, not the full
loss). So `SGLDConfig()` matches devinterp 1.3.2's `estimate_learning_coeff_with_summary` with
a full-batch loader, optimizer_kwargs lr=8e-4, nbeta=1e3, localization=1, num_burnin_steps=1800,
num_draws=1200, num_chains=100. Where we differ: L(w*) is always the full-batch loss (devinterp
averages the first batches of its loader unless given init_loss); devinterp 2.0.1's
`compute_llc` averages every step, burn-in included, and its `llc_std` has ddof 0 (1.3.2's
`llc/std` has ddof 1, as here); a minibatch is a fresh subset drawn without replacement at
every step and shared by all chains and instances (devinterp cycles a DataLoader); and the
random numbers differ (devinterp reseeds torch's global generator per chain).

Batched over models. `estimate_llc` takes the parameters of B independent models (every tensor
with a leading instances dimension, as in `lib.grokking.mlp`), replicates each model `chains`
times into M = B * chains models (instance-major: model b * chains + c is chain c of instance
b), and moves all M at once: one loss evaluation and one `torch.autograd.grad` of the summed
losses per step (the models share no parameters, so the gradient of the sum is each model's own
gradient). All randomness comes from one `torch.Generator`, so the same seed gives the same
numbers; per step it draws the batch (if any), then one noise tensor per parameter in dict
order. An instance's numbers therefore depend on the other instances run beside it (as
training's depend on the chunking), and memory grows with B * chains: pass chunks of
instances. `single_model_llc` is the plain loop over chains of one model, drawing in the same
order, so one chain of one instance follows it draw for draw. `lib.grokking.mlp_llc` applies
both to the MLP of chapter 4 (with a faster full-batch path that reuses the pieces of the step
here: `sgld_drift_step`, `noise_like`, `ChainRecord`). `estimates_at_chain_lengths` reads, from
one run of long chains, the estimates that shorter chains with the same draws give: a chain's
loss first overshoots and then settles, so short chains overestimate (they are not lower bounds).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from lib.book.params import ParameterError, check_float, check_int

#: loss_fn(params, batch) -> losses: params hold M models (leading dim M), batch is None for
#: all training points or a LongTensor of training-point indices; returns the (M,) mean losses.
LossFn = Callable[[dict[str, torch.Tensor], torch.Tensor | None], torch.Tensor]


@dataclass(frozen=True)
class SGLDConfig:
    """Settings of the SGLD chains (defaults: the ambiguous-grokking study's).

    Attributes:
        step_size: eps, the SGLD step size (devinterp's lr).
        n_beta: n * beta, the inverse temperature multiplying the mean training loss.
        localization: gamma, the strength of the pull back to w*.
        steps: SGLD steps per chain.
        chains: independent chains per model.
        burn_in: fraction of the steps discarded before averaging the loss (0 <= burn_in < 1).
        batch_size: training points per step; None uses all of them (full batch).
    """

    step_size: float = 8e-4
    n_beta: float = 1e3
    localization: float = 1.0
    steps: int = 3000
    chains: int = 100
    burn_in: float = 0.6
    batch_size: int | None = None

    def __post_init__(self) -> None:
        check_float("step_size", self.step_size, 0.0, low_inclusive=False)
        check_float("n_beta", self.n_beta, 0.0, low_inclusive=False)
        check_float("localization", self.localization, 0.0)
        check_int("steps", self.steps, 1)
        check_int("chains", self.chains, 1)
        if check_float("burn_in", self.burn_in, 0.0, 1.0) == 1.0:
            raise ParameterError("Parameter `burn_in` must be a finite number of at least 0 and "
                                 "below 1 (the fraction of steps discarded); got 1.0.")
        if self.batch_size is not None:
            check_int("batch_size", self.batch_size, 1)

    @property
    def burn_in_steps(self) -> int:
        """Number of initial steps whose losses are not averaged: floor(burn_in * steps), read
        forgivingly (0.29 * 100 is 28.999... in floating point but gives 29), at most steps - 1."""
        return burn_in_steps(self.burn_in, self.steps)


@dataclass(frozen=True)
class LLCEstimate:
    """LLC estimates of B models (CPU float64 tensors).

    Attributes:
        mean: (B,) mean over chains of each model's per-chain estimates.
        std: (B,) standard deviation over chains (ddof 1; NaN with one chain).
        sem: (B,) standard error of the mean, std / sqrt(chains).
        per_chain: (B, chains) n_beta * (mean loss after burn-in - init_loss).
        init_loss: (B,) full-batch loss at w*.
        loss_trace: (steps, B) the recorded loss of every step, averaged over chains.
        burn_in_steps: the number of initial steps left out of the averages.
    """

    mean: torch.Tensor
    std: torch.Tensor
    sem: torch.Tensor
    per_chain: torch.Tensor
    init_loss: torch.Tensor
    loss_trace: torch.Tensor
    burn_in_steps: int


def _check_batch(config: SGLDConfig, n_data: int | None) -> None:
    if config.batch_size is None:
        return
    if n_data is None:
        raise ValueError("estimating the LLC with minibatches needs n_data, the number of training points.")
    if config.batch_size > n_data:
        raise ParameterError(f"Parameter `batch_size` must be at most the number of training points "
                             f"({n_data}); got {config.batch_size}.")


def _draw_batch(config: SGLDConfig, n_data: int | None, generator: torch.Generator,
                device: torch.device) -> torch.Tensor | None:
    """The training-point indices of one step (None: all of them), drawn without replacement."""
    if config.batch_size is None:
        return None
    return torch.randperm(n_data, generator=generator, device=generator.device)[:config.batch_size].to(device)


def noise_like(like: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Standard normal noise shaped like `like`, drawn on the generator's device."""
    return torch.randn(like.shape, generator=generator, device=generator.device,
                       dtype=like.dtype).to(like.device)


def sgld_drift_step(value: torch.Tensor, grad: torch.Tensor, center: torch.Tensor,
                    config: SGLDConfig) -> None:
    """The deterministic half of an SGLD step, in place: value -= eps/2 * (n_beta * grad +
    gamma * (value - center)). `grad` is overwritten (it becomes the drift)."""
    drift = grad.mul_(config.n_beta).add_(value, alpha=config.localization)
    drift.sub_(center, alpha=config.localization)
    value.sub_(drift, alpha=config.step_size / 2)


class ChainRecord:
    """The losses of M = B * chains SGLD chains as they run (model m is chain m % chains of
    instance m // chains): the chain-averaged trace of every step and the per-chain sums after
    burn-in, turned into an `LLCEstimate` at the end."""

    def __init__(self, config: SGLDConfig, n_models: int, device: torch.device):
        self.config, self.n_models = config, n_models
        self.trace = torch.empty(config.steps, n_models, dtype=torch.float64, device=device)
        self.total = torch.zeros(n_models * config.chains, dtype=torch.float64, device=device)

    def add(self, step: int, losses: torch.Tensor) -> None:
        """Record the (M,) losses of step `step` (at w_t, before its update)."""
        losses = losses.double()
        self.trace[step] = losses.view(self.n_models, self.config.chains).mean(dim=1)
        if step >= self.config.burn_in_steps:
            self.total += losses

    def estimate(self, init_loss: torch.Tensor) -> LLCEstimate:
        """The estimate from the recorded steps, given the (B,) loss at w*."""
        config, burn = self.config, self.config.burn_in_steps
        mean_loss = (self.total / (config.steps - burn)).view(self.n_models, config.chains)
        per_chain = config.n_beta * (mean_loss - init_loss.double()[:, None])
        return summarise_chains(per_chain.cpu(), init_loss.double().cpu(), self.trace.cpu(), burn)


def summarise_chains(per_chain: torch.Tensor, init_loss: torch.Tensor, trace: torch.Tensor,
                     burn_in_steps: int) -> LLCEstimate:
    """The `LLCEstimate` of B models from their (B, chains) per-chain estimates, (B,) losses at
    w* and (steps, B) chain-averaged trace."""
    chains = per_chain.shape[1]
    std = per_chain.std(dim=1) if chains > 1 else torch.full_like(per_chain[:, 0], math.nan)
    return LLCEstimate(mean=per_chain.mean(dim=1), std=std, sem=std / math.sqrt(chains),
                       per_chain=per_chain, init_loss=init_loss, loss_trace=trace,
                       burn_in_steps=burn_in_steps)


def burn_in_steps(burn_in: float, steps: int) -> int:
    """floor(burn_in * steps), read forgivingly, at most steps - 1 (`SGLDConfig.burn_in_steps`)."""
    return min(math.floor(burn_in * steps + 1e-9), steps - 1)


def estimates_at_chain_lengths(loss_trace: torch.Tensor, init_loss: torch.Tensor, config: SGLDConfig,
                               lengths: list[int] | tuple[int, ...]) -> torch.Tensor:
    """(len(lengths), ...) the estimate each model would get from chains of each length (chapter
    5's chain-length study), read from the first steps of its chains: `loss_trace` (steps, ...)
    is the chain-averaged loss of every step (`LLCEstimate.loss_trace`), `init_loss` (...) the
    loss at w*, `config` the settings the chains ran with.

    A chain of L steps is the first L steps of a longer chain drawn from the same generator (the
    noise of step t does not depend on the chain's length), so its estimate, n_beta * (mean loss
    over steps burn_in * L .. L - 1 minus L(w*)), averaged over chains, is read exactly from the
    chain-averaged `loss_trace` of the long run, with burn-in `config.burn_in` of each length.
    """
    trace, init = loss_trace.double(), init_loss.double()
    rows = []
    for length in lengths:
        if not 1 <= length <= trace.shape[0]:
            raise ValueError(f"a chain length must lie between 1 and the chains' {trace.shape[0]} steps; got {length}.")
        burn = burn_in_steps(config.burn_in, length)
        rows.append(config.n_beta * (trace[burn:length].mean(dim=0) - init))
    return torch.stack(rows)


def estimate_llc(
    loss_fn: LossFn, params: dict[str, torch.Tensor], config: SGLDConfig,
    generator: torch.Generator, n_data: int | None = None,
) -> LLCEstimate:
    """LLC of each of the B models in `params` (leading dim B), all chains run as one batch.

    `loss_fn` is called with B models (at w*, full batch) and with M = B * chains models (the
    chains; model m belongs to instance m // chains); it must return the (M,) mean losses,
    differentiable. `n_data` (the number of training points) is needed with minibatches only.
    Runs on the parameters' device; noise and batches are drawn on the generator's device (a
    generator on the parameters' device is fastest) and the results come back on the CPU.
    """
    _check_batch(config, n_data)
    names = list(params)
    n_models = params[names[0]].shape[0]
    chains, device = config.chains, params[names[0]].device
    if any(value.shape[0] != n_models for value in params.values()):
        raise ValueError("every parameter tensor needs the same leading instances dimension.")
    with torch.no_grad():
        init_loss = loss_fn({k: v.detach() for k, v in params.items()}, None).double()
    center = {k: v.detach().repeat_interleave(chains, dim=0) for k, v in params.items()}
    current = {k: v.clone().requires_grad_(True) for k, v in center.items()}
    record = ChainRecord(config, n_models, device)
    for step in range(config.steps):
        batch = _draw_batch(config, n_data, generator, device)
        losses = loss_fn(current, batch)
        grads = torch.autograd.grad(losses.sum(), [current[k] for k in names], materialize_grads=True)
        with torch.no_grad():
            record.add(step, losses.detach())
            for name, grad in zip(names, grads):
                sgld_drift_step(current[name], grad, center[name], config)
                current[name].add_(noise_like(current[name], generator), alpha=math.sqrt(config.step_size))
    return record.estimate(init_loss)


def single_model_llc(
    loss_fn: Callable[[dict[str, torch.Tensor], torch.Tensor | None], torch.Tensor],
    params: dict[str, torch.Tensor], config: SGLDConfig, generator: torch.Generator,
    n_data: int | None = None,
) -> LLCEstimate:
    """LLC of one model (no instances dimension), one chain after another: the plain reference.

    `loss_fn(params, batch)` returns the scalar mean loss of the one model. The result has B = 1.
    """
    _check_batch(config, n_data)
    device = next(iter(params.values())).device
    center = {k: v.detach() for k, v in params.items()}
    with torch.no_grad():
        init_loss = float(loss_fn(center, None))
    traces, per_chain = [], []
    for _ in range(config.chains):
        w = {k: v.clone().requires_grad_(True) for k, v in center.items()}
        losses = []
        for _ in range(config.steps):
            batch = _draw_batch(config, n_data, generator, device)
            loss = loss_fn(w, batch)
            loss.backward()
            losses.append(float(loss.detach()))
            with torch.no_grad():
                for name, value in w.items():
                    drift = config.n_beta * value.grad + config.localization * (value - center[name])
                    value -= config.step_size / 2 * drift
                    value += math.sqrt(config.step_size) * noise_like(value, generator)
                    value.grad = None
        traces.append(losses)
        kept = losses[config.burn_in_steps:]
        per_chain.append(config.n_beta * (sum(kept) / len(kept) - init_loss))
    trace = torch.tensor(traces, dtype=torch.float64).mean(dim=0)[:, None]
    return summarise_chains(torch.tensor([per_chain], dtype=torch.float64),
                            torch.tensor([init_loss], dtype=torch.float64), trace, config.burn_in_steps)
