"""Generalization measures of Jiang et al. (2019) for the grokking MLP, batched over instances (chapter 5).

Jiang et al., "Fantastic generalization measures and where to find them", compare some forty
complexity measures of trained networks; the ambiguous-grokking study tracks a handful of them
over training (L2 norm, distance from initialization, inverse margin, spectral and Frobenius
products, path norm, PAC-Bayes flatness). Chapter 5 computes them with the functions here, each
returning one value per instance (shape (B,)) of a parameter dict of `lib.grokking.mlp`.

The layers. The MLP reads the pair (a, b) as the concatenated one-hot vector x in R^{2N} and is
exactly the three-layer network

    x -> x^T A            A = blockdiag(E_l, E_r)   (2N x 2d)   the two embeddings, no activation
      -> relu(. W)        W = [W_l; W_r]            (2d x h)    the two linear maps, stacked
      -> . U (+ c)        U                         (h x N)     the unembedding

since concat(E_l[a], E_r[b]) @ [W_l; W_r] = E_l[a] W_l + E_r[b] W_r. We take A, W, U as the
layers (depth 3). Each is made of the model's own parameters, unmultiplied, so that the norm
measures, the path norm and the weight noise of the PAC-Bayes measure all act on the same
coordinates that training and weight decay act on; the products E_l W_l, E_r W_r would instead
be a reparametrization that hides how the norm is split between factors. Consequences:
||A||_2 = max(||E_l||_2, ||E_r||_2), ||A||_F^2 = ||E_l||_F^2 + ||E_r||_F^2, and likewise
||W||_F^2 = ||W_l||_F^2 + ||W_r||_F^2. (The other adaptation in use multiplies the norms of the
five tensors E_l, E_r, W_l, W_r, U as if each were a layer; the path norm is the same in both.)

As in Jiang et al., the layer products use the weight matrices only (no bias); the L2 norm and
distance from initialization, the path norm and the PAC-Bayes noise include the bias, like
`lib.grokking.mlp.parameter_norm` (the study's runs have no bias, so this rarely matters).
Jiang et al. also divide each measure by the training-set size m (sqrt(mu / m)); we return the
raw measures, which rank the models of one training set identically.
"""

from __future__ import annotations

import math

import torch

from lib.grokking.mlp import instance_logits, instance_loss, parameter_norm

#: Quantile of the training margins used by `output_margin` (Jiang et al.: the 10th percentile).
MARGIN_QUANTILE = 0.1


def l2_norm(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """L2 norm (B,) of all parameters, bias included (= `parameter_norm`; Jiang et al. omit biases)."""
    return parameter_norm(params)


def distance_from_init(params: dict[str, torch.Tensor], init_params: dict[str, torch.Tensor]) -> torch.Tensor:
    """L2 distance (B,) between all parameters and their initial values (Jiang's L2_DIST)."""
    return parameter_norm({name: params[name] - init_params[name] for name in params})


@torch.no_grad()
def output_margin(
    params: dict[str, torch.Tensor],
    left: torch.Tensor,
    right: torch.Tensor,
    labels: torch.Tensor,
    quantile: float = MARGIN_QUANTILE,
) -> torch.Tensor:
    """The margin gamma (B,) of each instance over the training set.

    The margin of a pair is its correct logit minus the largest other logit (negative when it
    is misclassified). gamma is the k-th smallest margin over the m training pairs with
    k = max(1, floor(quantile * m)): the lower 10th percentile by default, as Jiang et al. use
    (more robust than the minimum, which it equals when m < 20).
    """
    logits = instance_logits(params, left, right)                           # (B, T, N)
    labels = labels.to(logits.device)
    index = labels[None, :, None].expand(logits.shape[0], -1, 1)
    correct = logits.gather(2, index).squeeze(2)
    others = logits.scatter(2, index, float("-inf")).amax(dim=2)
    margins = correct - others                                               # (B, T)
    k = max(1, math.floor(quantile * margins.shape[1]))
    return margins.kthvalue(k, dim=1).values


@torch.no_grad()
def inverse_margin(
    params: dict[str, torch.Tensor],
    left: torch.Tensor,
    right: torch.Tensor,
    labels: torch.Tensor,
    quantile: float = MARGIN_QUANTILE,
) -> torch.Tensor:
    """Jiang et al.'s inverse margin 1 / gamma^2 (B,), gamma from `output_margin`.

    Squared, as in the paper. Where gamma <= 0 (over a tenth of the training pairs
    misclassified) no margin bound exists and the value is +inf; `output_margin` gives gamma.
    """
    gamma = output_margin(params, left, right, labels, quantile)
    return torch.where(gamma > 0, 1.0 / gamma.clamp(min=torch.finfo(gamma.dtype).tiny) ** 2,
                       torch.full_like(gamma, float("inf")))


def layer_matrices(params: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The three layers (A, W, U) of the module docstring, each (B, rows, cols).

    A = blockdiag(E_l, E_r) (B, 2N, 2d), W = [W_l; W_r] (B, 2d, h), U (B, h, N). For reading
    and testing: the measures use the blocks directly instead of building A.
    """
    e_l, e_r = params["embed_left"], params["embed_right"]
    zeros = e_l.new_zeros(e_l.shape)
    a = torch.cat([torch.cat([e_l, zeros], dim=2), torch.cat([zeros, e_r], dim=2)], dim=1)
    w = torch.cat([params["linear_left"], params["linear_right"]], dim=1)
    return a, w, params["unembed"]


@torch.no_grad()
def spectral_product(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """Product (B,) of the squared spectral norms of the layers A, W, U (Jiang's prod of spec).

    prod_i ||L_i||_2^2 over the three weight layers; the bias is not a layer. Jiang et al.
    report its logarithm; take `.log()` for that.
    """
    # ||blockdiag(E_l, E_r)||_2 = max of the two: no need to build the (B, 2N, 2d) matrix A.
    embed = torch.maximum(torch.linalg.matrix_norm(params["embed_left"], ord=2),
                          torch.linalg.matrix_norm(params["embed_right"], ord=2))
    linear = torch.linalg.matrix_norm(torch.cat([params["linear_left"], params["linear_right"]], dim=1), ord=2)
    return (embed * linear * torch.linalg.matrix_norm(params["unembed"], ord=2)) ** 2


@torch.no_grad()
def frobenius_product(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """Product (B,) of the squared Frobenius norms of the layers A, W, U (Jiang's prod of fro).

    = (||E_l||_F^2 + ||E_r||_F^2) (||W_l||_F^2 + ||W_r||_F^2) ||U||_F^2; no bias.
    """
    def squared(*names: str) -> torch.Tensor:
        return sum(params[name].pow(2).sum(dim=(1, 2)) for name in names)

    return squared("embed_left", "embed_right") * squared("linear_left", "linear_right") * squared("unembed")


@torch.no_grad()
def path_norm(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """Squared path norm (B,): Jiang et al.'s sum_j f_{w^2}(1)[j] for this network.

    The network with every parameter squared, run on the all-ones input of both sides (x = 1 in
    R^{2N}, i.e. every left and every right element at once), summed over the N outputs:

        sum_j [ (1^T (E_l^2 W_l^2) + 1^T (E_r^2 W_r^2)) U^2 ]_j  +  sum_j c_j^2

    (squares elementwise; relu is the identity on these nonnegative values). It is the sum over
    every input-to-output path of the product of its squared weights; the bias counts as a path
    of its own (it enters the squared forward pass like any weight, as in the reference code).
    """
    squared = {name: value.pow(2) for name, value in params.items()}
    # 1^T (E^2) W^2 summed over both sides: the hidden layer (B, h) of the all-ones input.
    hidden = torch.bmm(squared["embed_left"].sum(dim=1, keepdim=True), squared["linear_left"]) \
        + torch.bmm(squared["embed_right"].sum(dim=1, keepdim=True), squared["linear_right"])
    total = torch.bmm(hidden, squared["unembed"]).sum(dim=(1, 2))
    if "unembed_bias" in squared:
        total = total + squared["unembed_bias"].sum(dim=1)
    return total


def _train_statistic(params, left, right, labels, criterion: str) -> torch.Tensor:
    """Training accuracy or mean cross-entropy (B,), the quantity the PAC-Bayes noise may move."""
    if criterion == "accuracy":
        logits = instance_logits(params, left, right)
        return (logits.argmax(dim=2) == labels.to(logits.device)[None, :]).to(logits.dtype).mean(dim=1)
    if criterion == "loss":
        return instance_loss(params, left, right, labels)
    raise ValueError(f"criterion must be 'accuracy' or 'loss', not {criterion!r}.")


@torch.no_grad()
def pac_bayes_sigma(
    params: dict[str, torch.Tensor],
    left: torch.Tensor,
    right: torch.Tensor,
    labels: torch.Tensor,
    generator: torch.Generator,
    max_deviation: float = 0.1,
    criterion: str = "accuracy",
    n_samples: int = 10,
    initial_sigma: float = 0.1,
    bracket_steps: int = 40,
    bisection_steps: int = 12,
) -> torch.Tensor:
    """sigma' (B,): the largest noise scale the training statistic tolerates, per instance.

    sigma' is the largest sigma such that adding isotropic Gaussian noise u ~ N(0, sigma^2 I)
    to every parameter moves the Monte Carlo mean over `n_samples` draws of the training
    accuracy (or of the mean cross-entropy, criterion="loss") by at most `max_deviation` from
    its unperturbed value (Jiang et al.: accuracy, 0.1).

    Search, for all instances at once: starting from `initial_sigma`, sigma is doubled or
    halved per instance until it brackets the crossing [lo, hi] with lo tolerated and hi not
    (at most `bracket_steps` steps), then `bisection_steps` bisections on log sigma; lo is
    returned, within a factor 2^(2^-bisection_steps) of the crossing. Every evaluation reuses
    the same standard-normal draws z (u = sigma z: common random numbers), so the searched
    function of sigma is fixed and the result deterministic for the generator's state; the
    generator ends one set of draws past where it started. An instance that tolerates every
    sigma tried gets inf; one that tolerates none gets 0. Draws are made on the generator's
    device.
    """
    base = _train_statistic(params, left, right, labels, criterion)
    start = generator.get_state()
    after_draws: list[torch.Tensor] = []             # generator state after one set of draws
    view = {name: (-1,) + (1,) * (value.dim() - 1) for name, value in params.items()}

    def deviation(sigma: torch.Tensor) -> torch.Tensor:
        # The same z for every sigma: reset the generator to where the search started.
        generator.set_state(start)
        total = torch.zeros_like(base)
        for _ in range(n_samples):
            perturbed = {
                name: value + sigma.view(view[name]) * torch.randn(
                    value.shape, generator=generator, device=generator.device, dtype=value.dtype,
                ).to(value.device)
                for name, value in params.items()
            }
            total += _train_statistic(perturbed, left, right, labels, criterion)
        if not after_draws:
            after_draws.append(generator.get_state())
        return (total / n_samples - base).abs()

    sigma = torch.full_like(base, initial_sigma)
    lo = torch.zeros_like(base)                      # largest sigma seen within the tolerance
    hi = torch.full_like(base, float("inf"))         # smallest sigma seen beyond it
    for _ in range(bracket_steps):
        exceeded = deviation(sigma) > max_deviation
        hi = torch.where(exceeded, torch.minimum(hi, sigma), hi)
        lo = torch.where(exceeded, lo, torch.maximum(lo, sigma))
        bracketed = (lo > 0) & torch.isfinite(hi)
        if bracketed.all():
            break
        # Halve where no tolerated sigma is known yet, double where no exceeding one is.
        sigma = torch.where(bracketed, sigma, torch.where(lo > 0, sigma * 2.0, sigma / 2.0))
    bracketed = (lo > 0) & torch.isfinite(hi)
    for _ in range(bisection_steps if bracketed.any() else 0):
        mid = torch.where(bracketed, (lo * hi).sqrt(), lo)
        exceeded = deviation(mid) > max_deviation
        hi = torch.where(bracketed & exceeded, mid, hi)
        lo = torch.where(bracketed & ~exceeded, mid, lo)
    generator.set_state(after_draws[0])             # one set of draws on, however long the search
    return torch.where(torch.isfinite(hi), lo, hi)


@torch.no_grad()
def pac_bayes_sharpness(
    params: dict[str, torch.Tensor],
    left: torch.Tensor,
    right: torch.Tensor,
    labels: torch.Tensor,
    generator: torch.Generator,
    **search,
) -> torch.Tensor:
    """Jiang et al.'s PAC-Bayes flatness measure 1 / sigma'^2 (B,), sigma' from `pac_bayes_sigma`.

    Larger = sharper: a smaller weight noise already moves the training accuracy by 0.1.
    Keyword arguments go to `pac_bayes_sigma` (max_deviation, criterion, n_samples, ...).
    """
    sigma = pac_bayes_sigma(params, left, right, labels, generator, **search)
    return 1.0 / sigma ** 2


@torch.no_grad()
def all_measures(
    params: dict[str, torch.Tensor],
    init_params: dict[str, torch.Tensor],
    left: torch.Tensor,
    right: torch.Tensor,
    labels: torch.Tensor,
    generator: torch.Generator,
    **search,
) -> dict[str, torch.Tensor]:
    """Every measure of this module, each (B,), keyed by the function's name.

    Keys: l2_norm, distance_from_init, output_margin, inverse_margin, spectral_product,
    frobenius_product, path_norm, pac_bayes_sharpness. `search` goes to `pac_bayes_sigma`.
    """
    return {
        "l2_norm": l2_norm(params),
        "distance_from_init": distance_from_init(params, init_params),
        "output_margin": output_margin(params, left, right, labels),
        "inverse_margin": inverse_margin(params, left, right, labels),
        "spectral_product": spectral_product(params),
        "frobenius_product": frobenius_product(params),
        "path_norm": path_norm(params),
        "pac_bayes_sharpness": pac_bayes_sharpness(params, left, right, labels, generator, **search),
    }
