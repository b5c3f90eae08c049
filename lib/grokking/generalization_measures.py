"""Generalization measures of Jiang et al. (2019) for the grokking MLP, batched over instances (chapter 5).

Jiang et al., "Fantastic generalization measures and where to find them", compare some forty
complexity measures of trained networks; the ambiguous-grokking study tracks a handful of them
along the training of one S5 model (chapter 5). The functions here compute them as the study's
code does (`src/generalization_measures.py` of the authors' repository, adapted from Jiang et
al.'s), each returning one value per instance (shape (B,)) of a parameter dict of
`lib.grokking.mlp`:

* the layers are the model's five weight tensors, E_l, E_r, W_l, W_r and U (`WEIGHT_NAMES`),
  each taken as a layer of its own for the products of spectral and of Frobenius norms (the
  unembedding bias is not a layer);
* the L2 norm and the distance from initialization are over those five tensors: the bias is
  left out;
* the margin is the 10th percentile (linear interpolation, `torch.quantile`) of the training
  margins, clamped at 0, and the inverse margin 1 / margin^2 is +inf where that percentile is
  not positive;
* the path norm runs the network with every parameter squared on the all-ones input, the
  squared bias added to each output;
* the PAC-Bayes sigma is found by the study's search (`pac_bayes_sigma`): start at 1, double
  while the training accuracy under N(0, sigma^2) noise on every parameter moves by at most 0.1,
  then bisect on [0, upper] until the move is within 0.01 of 0.1.

Jiang et al. and the study also rescale each measure by the training-set size m (sqrt(mu / m),
or (log mu - log m) / 2 for the logarithms); that is monotone for one training set, so we return
the raw measures, which rank the checkpoints of one run identically.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

#: Quantile of the training margins used by `output_margin` (Jiang et al.: the 10th percentile).
MARGIN_QUANTILE = 0.1
#: The five weight tensors, each a layer of its own in the study's products of norms.
WEIGHT_NAMES = ("embed_left", "embed_right", "linear_left", "linear_right", "unembed")


def _logits(params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """Logits (B, T, N), as `lib.grokking.mlp.instance_logits` computes them, with the rows of
    the hidden layer gathered by `index_select` (about four times faster on a CPU at S5's size)."""
    left_rows = torch.bmm(params["embed_left"], params["linear_left"])      # (B, N, h)
    right_rows = torch.bmm(params["embed_right"], params["linear_right"])
    device = left_rows.device
    hidden = left_rows.index_select(1, left.to(device)) + right_rows.index_select(1, right.to(device))
    logits = torch.bmm(torch.relu(hidden), params["unembed"])
    if "unembed_bias" in params:
        logits = logits + params["unembed_bias"][:, None, :]
    return logits


@torch.no_grad()
def train_accuracy(params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor,
                   labels: torch.Tensor) -> torch.Tensor:
    """Accuracy (B,) of every instance on the pairs (left, right) with `labels`."""
    logits = _logits(params, left, right)
    return (logits.argmax(dim=2) == labels.to(logits.device)[None, :]).double().mean(dim=1)


def _squared_norm(tensors: list[torch.Tensor]) -> torch.Tensor:
    return sum(t.flatten(1).double().pow(2).sum(dim=1) for t in tensors)


@torch.no_grad()
def l2_norm(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """L2 norm (B,) of the five weight tensors, the bias left out (the study's L2)."""
    return _squared_norm([params[name] for name in WEIGHT_NAMES]).sqrt()


@torch.no_grad()
def distance_from_init(params: dict[str, torch.Tensor], init_params: dict[str, torch.Tensor]) -> torch.Tensor:
    """L2 distance (B,) of the five weight tensors from their initial values, the bias left out
    (the study's L2_DIST)."""
    return _squared_norm([params[name] - init_params[name] for name in WEIGHT_NAMES]).sqrt()


@torch.no_grad()
def training_margins(params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor,
                     labels: torch.Tensor) -> torch.Tensor:
    """(B, T): the correct logit minus the largest other logit of every training pair (negative
    where the pair is misclassified)."""
    return _margins_of(_logits(params, left, right), labels)


def _margins_of(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    index = labels.to(logits.device)[None, :, None].expand(logits.shape[0], -1, 1)
    correct = logits.gather(2, index).squeeze(2)
    others = logits.scatter(2, index, float("-inf")).amax(dim=2)
    return correct - others


def _inverse_square(gamma: torch.Tensor) -> torch.Tensor:
    """1 / gamma^2 where gamma > 0, +inf elsewhere (the study divides by the margin clamped at 0)."""
    return torch.where(gamma > 0, 1.0 / gamma.clamp(min=torch.finfo(gamma.dtype).tiny) ** 2,
                       torch.full_like(gamma, float("inf")))


@torch.no_grad()
def output_margin(
    params: dict[str, torch.Tensor],
    left: torch.Tensor,
    right: torch.Tensor,
    labels: torch.Tensor,
    quantile: float = MARGIN_QUANTILE,
) -> torch.Tensor:
    """The margin gamma (B,): the `quantile` (the 10th percentile) of the training margins,
    linearly interpolated (`torch.quantile`), unclamped (negative when over a tenth of the
    training pairs are misclassified)."""
    margins = training_margins(params, left, right, labels).double()
    return torch.quantile(margins, quantile, dim=1)


@torch.no_grad()
def inverse_margin(
    params: dict[str, torch.Tensor],
    left: torch.Tensor,
    right: torch.Tensor,
    labels: torch.Tensor,
    quantile: float = MARGIN_QUANTILE,
) -> torch.Tensor:
    """The study's inverse margin 1 / max(gamma, 0)^2 (B,), gamma from `output_margin`: +inf
    where gamma <= 0 (the study clamps the margin at 0 and divides by it)."""
    return _inverse_square(output_margin(params, left, right, labels, quantile))


@torch.no_grad()
def spectral_product(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """Product (B,) of the squared spectral norms of the five weight tensors, each a layer
    (the study's LOG_PROD_OF_SPEC, before its logarithm); the bias is not a layer."""
    return torch.stack([torch.linalg.matrix_norm(params[name].double(), ord=2) ** 2
                        for name in WEIGHT_NAMES]).prod(dim=0)


@torch.no_grad()
def frobenius_product(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """Product (B,) of the squared Frobenius norms of the five weight tensors, each a layer
    (the study's LOG_PROD_OF_FRO, before its logarithm); no bias."""
    return torch.stack([_squared_norm([params[name]]) for name in WEIGHT_NAMES]).prod(dim=0)


@torch.no_grad()
def path_norm(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """Squared path norm (B,): Jiang et al.'s sum_j f_{w^2}(1)[j] for this network.

    The network with every parameter squared, run on the all-ones input of both sides (every
    left and every right element at once), summed over the N outputs:

        sum_j [ (1^T (E_l^2 W_l^2) + 1^T (E_r^2 W_r^2)) U^2 ]_j  +  sum_j c_j^2

    (squares elementwise; relu is the identity on these nonnegative values): the sum over every
    input-to-output path of the product of its squared weights, the squared bias added to each
    output as in the study's code.
    """
    squared = {name: value.double().pow(2) for name, value in params.items()}
    hidden = torch.bmm(squared["embed_left"].sum(dim=1, keepdim=True), squared["linear_left"]) \
        + torch.bmm(squared["embed_right"].sum(dim=1, keepdim=True), squared["linear_right"])
    total = torch.bmm(hidden, squared["unembed"]).sum(dim=(1, 2))
    if "unembed_bias" in squared:
        total = total + squared["unembed_bias"].sum(dim=1)
    return total


@torch.no_grad()
def train_loss(params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor,
               labels: torch.Tensor) -> torch.Tensor:
    """Mean training cross-entropy (B,) (= `lib.grokking.mlp.instance_loss`)."""
    logits = _logits(params, left, right)
    target = labels.to(logits.device)[None, :].expand(logits.shape[0], -1)
    return torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="none").double().mean(dim=1)


@dataclass(frozen=True)
class PacBayesSearch:
    """The settings of the study's PAC-Bayes sigma search (`pac_bayes_sigma`).

    Attributes:
        target: the move of the training accuracy that defines sigma (0.1).
        tolerance: the bisection stops where the move is within this of `target` (0.01).
        depth: most doubling steps, and most bisection steps (15 each).
        doubling_draws: noise draws averaged per doubling step (the study: 100).
        bisection_draws: noise draws averaged per bisection step (the study: 1,000).
        models_per_batch: perturbed copies evaluated in one batch (speed only, not the numbers'
            meaning; the draws' order depends on it).
    """

    target: float = 0.1
    tolerance: float = 0.01
    depth: int = 15
    doubling_draws: int = 100
    bisection_draws: int = 1000
    models_per_batch: int = 16


@dataclass(frozen=True)
class PacBayesSigma:
    """The result of `pac_bayes_sigma`: `sigma` (B,), whether each instance's bisection met the
    tolerance (`converged`, (B,) bool), and how many perturbed models were evaluated in all."""

    sigma: torch.Tensor
    converged: torch.Tensor
    evaluations: int


@torch.no_grad()
def mean_perturbed_accuracy(
    params: dict[str, torch.Tensor], sigma: torch.Tensor, left: torch.Tensor, right: torch.Tensor,
    labels: torch.Tensor, draws: int, generator: torch.Generator, models_per_batch: int = 16,
) -> torch.Tensor:
    """(B,) the training accuracy of params + sigma z, z ~ N(0, I) on every parameter (the bias
    included, as in the study), averaged over `draws` draws per instance; noise from
    `generator`, on its device."""
    n = sigma.shape[0]
    total = torch.zeros(n, dtype=torch.float64)
    width = min(n, models_per_batch)
    for start in range(0, n, width):
        chunk = slice(start, min(start + width, n))
        rows = chunk.stop - chunk.start
        done = 0
        while done < draws:
            copies = min(max(1, models_per_batch // rows), draws - done)
            scale = sigma[chunk].repeat(copies)
            perturbed = {}
            for name, value in params.items():
                base = value[chunk].repeat(copies, *([1] * (value.dim() - 1)))
                noise = torch.randn(base.shape, generator=generator, device=generator.device,
                                    dtype=base.dtype).to(base.device)
                perturbed[name] = base + scale.to(base).view((-1,) + (1,) * (base.dim() - 1)) * noise
            total[chunk] += train_accuracy(perturbed, left, right, labels).cpu().view(copies, rows).sum(dim=0)
            done += copies
    return total / draws


@torch.no_grad()
def pac_bayes_sigma(
    params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor, labels: torch.Tensor,
    generator: torch.Generator, search: PacBayesSearch = PacBayesSearch(),
) -> PacBayesSigma:
    """The study's PAC-Bayes sigma of every instance (`pacbayes_sigma` of the authors' code).

    The move of an instance at sigma is |mean training accuracy under N(0, sigma^2) noise on
    every parameter - its own training accuracy|, the mean over the search's draws. Doubling:
    sigma starts at 1 and doubles while the move is at most `target` (at most `depth` steps,
    `doubling_draws` draws each; an instance never moved that far ends at 2^depth). Bisection on
    [0, that sigma]: the midpoint is tried with `bisection_draws` draws and replaces the bound on
    its side, until the move is within `tolerance` of `target` (at most `depth` steps); sigma is
    the last midpoint tried. Only instances still searching are evaluated at each step.
    """
    base = train_accuracy(params, left, right, labels).cpu()
    n = base.shape[0]

    def moved(active: torch.Tensor, sigma: torch.Tensor, draws: int) -> torch.Tensor:
        chosen = {name: value[active.to(value.device)] for name, value in params.items()}
        accuracy = mean_perturbed_accuracy(chosen, sigma, left, right, labels, draws, generator,
                                           search.models_per_batch)
        return (accuracy - base[active]).abs()

    evaluations = 0
    sigma = torch.ones(n, dtype=torch.float64)
    exceeded = torch.zeros(n, dtype=torch.bool)
    for _ in range(search.depth):
        active = (~exceeded).nonzero().squeeze(1)
        if not len(active):
            break
        hit = moved(active, sigma[active], search.doubling_draws) > search.target
        evaluations += len(active) * search.doubling_draws
        exceeded[active[hit]] = True
        sigma[active[~hit]] *= 2
    lower, upper = torch.zeros_like(sigma), sigma.clone()
    done = torch.zeros(n, dtype=torch.bool)
    mid = (lower + upper) / 2
    for _ in range(search.depth):
        mid = (lower + upper) / 2
        active = (~done).nonzero().squeeze(1)
        if not len(active):
            break
        delta = moved(active, mid[active], search.bisection_draws)
        evaluations += len(active) * search.bisection_draws
        close = (delta - search.target).abs() < search.tolerance
        done[active[close]] = True
        below, above = active[~close & (delta < search.target)], active[~close & (delta >= search.target)]
        lower[below], upper[above] = mid[below], mid[above]
    return PacBayesSigma(mid, done, evaluations)


@torch.no_grad()
def pac_bayes_sharpness(
    params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor, labels: torch.Tensor,
    generator: torch.Generator, search: PacBayesSearch = PacBayesSearch(),
) -> torch.Tensor:
    """The study's PACBAYES_FLATNESS 1 / sigma^2 (B,), sigma from `pac_bayes_sigma` (larger =
    sharper: a smaller weight noise already moves the training accuracy by 0.1)."""
    return 1.0 / pac_bayes_sigma(params, left, right, labels, generator, search).sigma ** 2


#: The measures `cheap_measures` returns, in the chapter's order.
CHEAP_MEASURES = ("l2_norm", "distance_from_init", "inverse_margin", "spectral_product",
                  "frobenius_product", "path_norm", "train_loss")


@torch.no_grad()
def cheap_measures(
    params: dict[str, torch.Tensor], init_params: dict[str, torch.Tensor], left: torch.Tensor,
    right: torch.Tensor, labels: torch.Tensor, instances_per_batch: int = 16,
) -> dict[str, torch.Tensor]:
    """Every measure of `CHEAP_MEASURES`, each (B,) float64, computed `instances_per_batch`
    instances at a time (the logits of S5's training set take 2.8 MB per instance)."""
    n = params["unembed"].shape[0]
    parts: dict[str, list[torch.Tensor]] = {name: [] for name in CHEAP_MEASURES}
    for start in range(0, n, instances_per_batch):
        chunk = {k: v[start:start + instances_per_batch] for k, v in params.items()}
        init = {k: v[start:start + instances_per_batch] for k, v in init_params.items()}
        logits = _logits(chunk, left, right)                       # one forward pass for both
        target = labels.to(logits.device)[None, :].expand(logits.shape[0], -1)
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="none")
        gamma = torch.quantile(_margins_of(logits, labels).double(), MARGIN_QUANTILE, dim=1)
        values = {"l2_norm": l2_norm(chunk), "distance_from_init": distance_from_init(chunk, init),
                  "inverse_margin": _inverse_square(gamma),
                  "spectral_product": spectral_product(chunk), "frobenius_product": frobenius_product(chunk),
                  "path_norm": path_norm(chunk), "train_loss": loss.double().mean(dim=1)}
        for name in CHEAP_MEASURES:
            parts[name].append(values[name].double().cpu())
    return {name: torch.cat(parts[name]) for name in CHEAP_MEASURES}


@torch.no_grad()
def all_measures(
    params: dict[str, torch.Tensor], init_params: dict[str, torch.Tensor], left: torch.Tensor,
    right: torch.Tensor, labels: torch.Tensor, generator: torch.Generator,
    search: PacBayesSearch = PacBayesSearch(),
) -> dict[str, torch.Tensor]:
    """`cheap_measures` and the PAC-Bayes sharpness (`pac_bayes_sharpness`), each (B,)."""
    return {**cheap_measures(params, init_params, left, right, labels),
            "pac_bayes_sharpness": pac_bayes_sharpness(params, left, right, labels, generator, search)}


__all__ = [
    "CHEAP_MEASURES", "MARGIN_QUANTILE", "PacBayesSearch", "PacBayesSigma", "WEIGHT_NAMES",
    "all_measures", "cheap_measures", "distance_from_init", "frobenius_product", "inverse_margin",
    "l2_norm", "mean_perturbed_accuracy", "output_margin", "pac_bayes_sharpness", "pac_bayes_sigma",
    "path_norm", "spectral_product", "train_accuracy", "train_loss", "training_margins",
]
