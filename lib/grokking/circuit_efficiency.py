"""Circuit efficiency: the training loss each MLP instance reaches at a given weight norm (chapter 5).

Once a model classifies its training set correctly, scaling its weights up lowers the training
cross-entropy without end, and weight decay charges for the norm. The circuit-efficiency
hypothesis of the ambiguous-grokking study says a model prefers the solution with the best
training loss per unit of weight norm. Chapter 5 measures it by moving each trained instance
along its own rescaling curve and reading the loss at a norm common to all instances
(`loss_at_norm`, e.g. at the median final norm of the sweep): lower loss there = more efficient.

The rescaling. The MLP (`lib.grokking.mlp`)

    logits = relu(E_l[a] @ W_l + E_r[b] @ W_r) @ U (+ c)

is positively homogeneous apart from the unembedding bias c: multiplying E_l, E_r, W_l, W_r and
U by alpha > 0 multiplies the bias-free logits by alpha^3 (relu commutes with positive scaling).
We define the rescaled model

    theta_alpha = (alpha E_l, alpha E_r, alpha W_l, alpha W_r, alpha U, alpha^3 c)

so that *all* logits, bias included, are exactly alpha^3 times the original ones. The rescaling
then changes nothing but the temperature of the softmax: argmax, margins' signs and the ranking
of classes are those of the trained model, and only their sharpness changes. The alternative,
keeping c fixed, would mix a temperature change with a shift of the logits by (1 - alpha^3) c,
so the curve would no longer compare one function at different scales. The study's authors scale
the bias by alpha^3 too; the sweep chapter 5 measures has no bias, where the choices coincide.

The study's own quantity (`objective_along_rescaling`, `rescaling_optimum`): the training
objective, cross-entropy plus (wd / 2) ||theta_alpha||^2, along the curve alpha = 2^linspace(-6,
3, 500), and where its minimum sits against the objective of the model as trained.

Norms are `lib.grokking.mlp.parameter_norm` of the rescaled parameters: the L2 norm of every
parameter, bias included. With a bias the norm is sqrt(alpha^2 S_w + alpha^6 S_c) (S_w, S_c the
squared norms of the weights and of the bias), strictly increasing in alpha but not linear, so
`alpha_for_norm` solves for alpha per instance (Newton's method, batched). Everything here is
batched over the leading instances dimension B.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.grokking.mlp import instance_loss, n_instances, parameter_norm

#: Parameters that scale by alpha^3 under the rescaling (everything else scales by alpha).
CUBIC_PARAMETERS: frozenset[str] = frozenset({"unembed_bias"})


def _per_instance(value: torch.Tensor | float, params: dict[str, torch.Tensor]) -> torch.Tensor:
    """`value` as a (B,) tensor on the parameters' device and dtype (a float is broadcast)."""
    like = params["unembed"]
    value = torch.as_tensor(value, dtype=like.dtype, device=like.device)
    return value.expand(n_instances(params)) if value.dim() == 0 else value


def rescale(params: dict[str, torch.Tensor], alpha: torch.Tensor | float) -> dict[str, torch.Tensor]:
    """The rescaled parameters theta_alpha: weights times alpha, the bias times alpha^3.

    alpha is a float or a (B,) tensor (one factor per instance). The logits of the result are
    exactly alpha^3 times those of `params`, with or without a bias. Differentiable.
    """
    alpha = _per_instance(alpha, params)
    scaled = {}
    for name, value in params.items():
        factor = alpha ** 3 if name in CUBIC_PARAMETERS else alpha
        scaled[name] = value * factor.view(-1, *([1] * (value.dim() - 1)))
    return scaled


def _squared_norms(params: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(S_w, S_c): squared norms (B,) of the alpha-scaled and of the alpha^3-scaled parameters."""
    zero = torch.zeros(n_instances(params), dtype=torch.float64, device=params["unembed"].device)
    linear, cubic = zero.clone(), zero.clone()
    for name, value in params.items():
        squared = value.detach().flatten(1).double().pow(2).sum(dim=1)
        if name in CUBIC_PARAMETERS:
            cubic += squared
        else:
            linear += squared
    return linear, cubic


@torch.no_grad()
def alpha_for_norm(
    params: dict[str, torch.Tensor], target_norm: torch.Tensor | float, iterations: int = 60,
) -> torch.Tensor:
    """The factor alpha (B,) with parameter_norm(rescale(params, alpha)) == target_norm.

    With u = alpha^2 the squared norm is S_c u^3 + S_w u, increasing and convex in u >= 0.
    Newton's method started at an upper bound of the root (the smaller of target^2 / S_w and
    (target^2 / S_c)^(1/3), each the root when the other term is dropped) then decreases
    monotonically to the root, for every instance at once. Without a bias it returns
    target / norm at the first step. Computed in float64. An instance whose parameters are
    all zero has no such alpha and gets inf.
    """
    linear, cubic = _squared_norms(params)
    target2 = _per_instance(target_norm, params).double().pow(2)
    inf = torch.full_like(linear, float("inf"))
    # Both bounds are >= the root, because dropping a nonnegative term can only move it right.
    u = torch.minimum(torch.where(linear > 0, target2 / linear, inf),
                      torch.where(cubic > 0, (target2 / cubic).pow(1.0 / 3.0), inf))
    solvable = torch.isfinite(u)
    u = torch.where(solvable, u, torch.zeros_like(u))
    for _ in range(iterations):
        f = cubic * u ** 3 + linear * u - target2
        slope = 3.0 * cubic * u ** 2 + linear
        step = torch.where(slope > 0, f / slope, torch.zeros_like(f))
        u = u - step
    alpha = torch.where(solvable, u.clamp(min=0.0).sqrt(), inf)
    return alpha.to(params["unembed"].dtype)


@torch.no_grad()
def loss_along_rescaling(
    params: dict[str, torch.Tensor],
    left: torch.Tensor,
    right: torch.Tensor,
    labels: torch.Tensor,
    alphas: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Training loss and weight norm of theta_alpha for each alpha, each (K, B).

    alphas: (K,) factors shared by all instances, or (K, B) per instance. Row k holds the
    mean cross-entropy (`instance_loss`) on the pairs (left, right) with `labels`, and the
    L2 norm of all parameters of rescale(params, alphas[k]) (the bias included, as in
    `parameter_norm`). For an instance with positive margins on every training pair the loss
    decreases with alpha towards 0; the loop runs over the K factors, never over instances.
    """
    alphas = torch.as_tensor(alphas, dtype=params["unembed"].dtype, device=params["unembed"].device)
    losses, norms = [], []
    for alpha in alphas:
        scaled = rescale(params, alpha)
        losses.append(instance_loss(scaled, left, right, labels))
        norms.append(parameter_norm(scaled))
    return torch.stack(losses), torch.stack(norms)


@torch.no_grad()
def loss_at_norm(
    params: dict[str, torch.Tensor],
    left: torch.Tensor,
    right: torch.Tensor,
    labels: torch.Tensor,
    target_norm: torch.Tensor | float,
) -> torch.Tensor:
    """Circuit efficiency: the training loss (B,) of each instance rescaled to L2 norm target_norm.

    Each instance is moved along its own rescaling curve to the common norm (a float, or (B,)
    per instance) and its mean training cross-entropy is read there. At a common norm a lower
    loss means a more efficient solution: it buys more confidence per unit of weight norm.
    """
    alpha = alpha_for_norm(params, target_norm)
    return instance_loss(rescale(params, alpha), left, right, labels)


#: The study's rescaling grid: alpha = 2^linspace(-6, 3, 500) (`gen_measures_intersect.ipynb`).
STUDY_ALPHAS = 2.0 ** torch.linspace(-6.0, 3.0, 500, dtype=torch.float64)


@torch.no_grad()
def objective_along_rescaling(
    params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor, labels: torch.Tensor,
    weight_decay: float, alphas: torch.Tensor,
) -> torch.Tensor:
    """The training objective along each instance's rescaling curve, (K, B): the mean training
    cross-entropy of rescale(params, alphas[k]) plus (weight_decay / 2) times its squared L2 norm
    over the decayed parameters (the bias, which takes no weight decay, left out). This is the
    study's circuit-efficiency curve (chapter 5); its minimum over alpha is the lowest objective
    any rescaling of the solution reaches."""
    alphas = torch.as_tensor(alphas, dtype=params["unembed"].dtype, device=params["unembed"].device)
    rows = []
    for alpha in alphas:
        scaled = rescale(params, alpha)
        decayed = sum(value.flatten(1).double().pow(2).sum(dim=1) for name, value in scaled.items()
                      if name not in CUBIC_PARAMETERS)
        rows.append(instance_loss(scaled, left, right, labels).double() + weight_decay / 2 * decayed)
    return torch.stack(rows)


@dataclass(frozen=True)
class RescalingOptimum:
    """Where the training objective is lowest along each instance's rescaling curve (all (B,)).

    Attributes:
        alpha: the factor of the lowest objective on the grid.
        lowest: that objective; own: the objective of the instance as trained (alpha = 1).
    """

    alpha: torch.Tensor
    lowest: torch.Tensor
    own: torch.Tensor

    @property
    def excess(self) -> torch.Tensor:
        """How far the trained instance's objective lies above the lowest of its curve (>= 0)."""
        return self.own - torch.minimum(self.lowest, self.own)


def rescaling_optimum(
    params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor, labels: torch.Tensor,
    weight_decay: float, alphas: torch.Tensor = STUDY_ALPHAS,
) -> RescalingOptimum:
    """The minimum of `objective_along_rescaling` over `alphas` for each instance, beside its own
    objective at alpha = 1 (the study's circuit efficiency, chapter 5)."""
    curve = objective_along_rescaling(params, left, right, labels, weight_decay, alphas).cpu()
    own = objective_along_rescaling(params, left, right, labels, weight_decay, torch.ones(1))[0].cpu()
    best = curve.argmin(dim=0)
    grid = torch.as_tensor(alphas, dtype=torch.float64).cpu()
    return RescalingOptimum(grid[best], curve.gather(0, best[None, :])[0], own)
