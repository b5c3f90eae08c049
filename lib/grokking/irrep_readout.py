"""Which irreducible representations a batch of trained MLPs uses (chapter 8).

The readout of Chughtai, Chan and Nanda ("A Toy Model of Universality", ICML 2023; their
`rep_theory/utils/metrics.py`), for the MLP of `lib.grokking.mlp` with a leading instances
dimension, and for any group whose isotypic projectors `lib.grokking.characters` computed:

* `total_embeddings`: the left and right embeddings times their linear maps, L = E_left W_left and
  R = E_right W_right (N x h each): column j of L is neuron j's pre-activation as a function of
  the left input (what Chughtai et al. call the total embedding);
* `component_shares`: the share of a weight matrix's squared norm in each isotypic component,
  reading each column (or row, for the unembedding) as a function on the group;
  `irrep_profile` applies it to L, R and the unembedding U, and pools L and R;
* `logit_similarity`: the mean cosine, over all N^2 input pairs, between a model's centred
  logits and the pattern chi(x y z^-1) of each component (`characters.trace_tensors`), and
  `key_components`: the non-trivial components above Chughtai et al.'s threshold of 0.05;
* `joint_cells`, `overlap_dimensions` and `neuron_cells`: two groups on one labelled set (chapter
  8's S4 and A4 x Z2) each split R^N into components; where the projectors commute the two
  splittings have a common refinement into cells, and each neuron can be placed in them;
* `project_embeddings` and `restriction_losses`: the model with both embeddings projected onto a
  set of components (restricted) or with them removed (excluded), and its cross-entropy on a
  group's full table, as their `restricted_loss` and `total_excluded_loss` compute it (the
  trivial component goes with the excluded part unless it is listed, as theirs does).

Every function takes and returns tensors batched over instances, so one call reads a whole
sweep or every checkpoint of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.grokking.mlp import all_pairs_logits

#: Chughtai et al.'s threshold on the logit similarity above which a non-trivial irrep is "key".
KEY_SIMILARITY = 0.05


def total_embeddings(params: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(L, R), each (B, N, h): E_left @ W_left and E_right @ W_right of every instance."""
    return (torch.bmm(params["embed_left"].double(), params["linear_left"].double()),
            torch.bmm(params["embed_right"].double(), params["linear_right"].double()))


def component_norms(functions: torch.Tensor, projectors: torch.Tensor) -> torch.Tensor:
    """(B, K) squared norm of each instance's (N, m) matrix inside each component: the columns
    are functions on the group, ||P_k F||^2 = tr(F^T P_k F), for K real projectors (K, N, N)."""
    gram = functions.double() @ functions.double().transpose(1, 2)          # (B, N, N)
    return torch.einsum("kxy,bxy->bk", projectors.double(), gram)


def component_shares(functions: torch.Tensor, projectors: torch.Tensor) -> torch.Tensor:
    """(B, K) share of each instance's squared norm in each component (rows sum to 1 when the
    projectors sum to the identity); an all-zero matrix gets NaN."""
    norms = component_norms(functions, projectors)
    return norms / norms.sum(dim=1, keepdim=True)


@dataclass
class IrrepProfile:
    """The shares of one group's components in a batch of models, each (B, K).

    Attributes:
        left, right: the total embeddings L and R (`total_embeddings`).
        unembed: the unembedding, its rows read as functions of the answer.
        embedding: L and R pooled: (||P L||^2 + ||P R||^2) / (||L||^2 + ||R||^2).
    """

    left: torch.Tensor
    right: torch.Tensor
    unembed: torch.Tensor
    embedding: torch.Tensor


def irrep_profile(params: dict[str, torch.Tensor], projectors: torch.Tensor) -> IrrepProfile:
    """The `IrrepProfile` of every instance of `params` for the components `projectors`."""
    left, right = total_embeddings(params)
    left_norms, right_norms = component_norms(left, projectors), component_norms(right, projectors)
    pooled = left_norms + right_norms
    return IrrepProfile(
        left=left_norms / left_norms.sum(dim=1, keepdim=True),
        right=right_norms / right_norms.sum(dim=1, keepdim=True),
        unembed=component_shares(params["unembed"].transpose(1, 2), projectors),
        embedding=pooled / pooled.sum(dim=1, keepdim=True))


def all_logits(params: dict[str, torch.Tensor], chunk: int = 256) -> torch.Tensor:
    """(B, N*N, N) float64 logits of every instance on all pairs, in chunks of instances."""
    count = params["unembed"].shape[0]
    return torch.cat([all_pairs_logits({k: v[start:start + chunk].double() for k, v in params.items()})
                      for start in range(0, count, chunk)])


def similarity_to_traces(logits: torch.Tensor, traces: torch.Tensor) -> torch.Tensor:
    """(B, K) for logits (B, N*N, N): the mean over the N^2 pairs (x, y) of the cosine between the
    logits over z and chi_k(x y z^-1) (`characters.trace_tensors`), both centred over z; 0 for
    the trivial component, whose pattern is constant."""
    logits = logits.double() - logits.double().mean(dim=2, keepdim=True)
    k, n = traces.shape[0], traces.shape[1]
    pattern = traces.reshape(k, n * n, n).double()
    pattern = pattern - pattern.mean(dim=2, keepdim=True)
    pattern_norm = pattern.norm(dim=2)                                          # (K, N^2)
    dots = torch.einsum("bpz,kpz->bkp", logits, pattern)
    cosine = dots / (logits.norm(dim=2)[:, None, :] * pattern_norm[None]).clamp_min(1e-300)
    cosine = torch.where(pattern_norm[None] > 1e-12, cosine, torch.zeros_like(cosine))
    return cosine.mean(dim=2)


def logit_similarity(params: dict[str, torch.Tensor], traces: torch.Tensor, chunk: int = 256) -> torch.Tensor:
    """(B, K) `similarity_to_traces` of every instance's logits on all pairs (in chunks of
    instances, so a sweep of thousands of seeds never holds all its logits at once)."""
    count = params["unembed"].shape[0]
    return torch.cat([similarity_to_traces(all_logits({k: v[start:start + chunk] for k, v in params.items()}), traces)
                      for start in range(0, count, chunk)])


def key_components(similarity: torch.Tensor, trivial: int = 0,
                   threshold: float = KEY_SIMILARITY) -> torch.Tensor:
    """(B, K) bool: the non-trivial components whose logit similarity exceeds `threshold`."""
    key = similarity > threshold
    key[:, trivial] = False
    return key


def joint_cells(first: torch.Tensor, second: torch.Tensor) -> tuple[torch.Tensor, list[tuple[int, int]]]:
    """The common refinement of two groups' components on one labelled set.

    When every projector of `first` (K1, N, N) commutes with every one of `second` (K2, N, N)
    (checked), the products P_i Q_j are the projectors onto the intersections of the components;
    those of nonzero rank split R^N into cells, each inside one component of each group.

    Returns:
        (cells (C, N, N) float64, [(i, j)] the pair of components of each cell).

    Raises:
        ValueError: when two projectors do not commute (there is then no common refinement).
    """
    cells, pairs = [], []
    for i, p in enumerate(first.double()):
        for j, q in enumerate(second.double()):
            if float((p @ q - q @ p).abs().max()) > 1e-9:
                raise ValueError(f"component {i} of the first group and {j} of the second do not commute.")
            product = p @ q
            if float(torch.diagonal(product).sum()) > 0.5:
                cells.append(product)
                pairs.append((i, j))
    return torch.stack(cells), pairs


def overlap_dimensions(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """(K1, K2) tr(P_i Q_j): the dimension shared by each pair of components of two groups on
    one labelled set (when the projectors commute, the dimension of their intersection)."""
    return torch.einsum("ixy,jyx->ij", first.double(), second.double())


def neuron_cells(functions: torch.Tensor, cells: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each neuron's place in the cells: for functions (B, N, m) (columns = neurons),
    (shares (B, m, C) of each column's squared norm in each cell, weights (B, m) each column's
    share of the instance's squared norm)."""
    norms = torch.stack([(cell @ functions.double()).pow(2).sum(dim=1) for cell in cells.double()], dim=2)
    total = norms.sum(dim=2)
    return norms / total[:, :, None].clamp_min(1e-300), total / total.sum(dim=1, keepdim=True)


def project_embeddings(params: dict[str, torch.Tensor], projector: torch.Tensor,
                       unembed: bool = False) -> dict[str, torch.Tensor]:
    """The parameters with both embeddings replaced by P E (P: (N, N) or one per instance,
    (B, N, N)); with `unembed`, the unembedding by U P too. P (E W) = (P E) W, so the total
    embeddings are projected alike. A model projected onto one component reads 100% in it."""
    projector = projector.to(params["embed_left"].dtype)
    batched = projector if projector.dim() == 3 else projector.expand(params["unembed"].shape[0], -1, -1)
    out = dict(params)
    out["embed_left"] = torch.bmm(batched, params["embed_left"])
    out["embed_right"] = torch.bmm(batched, params["embed_right"])
    if unembed:
        out["unembed"] = torch.bmm(params["unembed"], batched.transpose(1, 2))
    return out


def table_loss(params: dict[str, torch.Tensor], table: torch.Tensor, chunk: int = 256) -> torch.Tensor:
    """(B,) mean cross-entropy of every instance over all N^2 pairs against a group's table."""
    targets = table.flatten()
    losses = []
    for start in range(0, params["unembed"].shape[0], chunk):
        log_probs = torch.log_softmax(all_logits({k: v[start:start + chunk] for k, v in params.items()}), dim=2)
        picked = log_probs.gather(2, targets.to(log_probs.device)[None, :, None].expand(log_probs.shape[0], -1, 1))
        losses.append(-picked.squeeze(2).mean(dim=1))
    return torch.cat(losses)


def restriction_losses(params: dict[str, torch.Tensor], projectors: torch.Tensor, keep: torch.Tensor,
                       tables: dict[str, torch.Tensor]) -> dict[str, dict[str, torch.Tensor]]:
    """Each instance's loss on every table with its embeddings whole, restricted to the
    components `keep` marks ((B, K) bool) and with those components removed.

    Returns:
        {"full" | "restricted" | "excluded": {table name: (B,) loss}}.
    """
    inside = torch.einsum("bk,kxy->bxy", keep.double(), projectors.double())
    outside = torch.eye(projectors.shape[1], dtype=torch.float64) - inside
    variants = {"full": {k: v.double() for k, v in params.items()},
                "restricted": project_embeddings({k: v.double() for k, v in params.items()}, inside),
                "excluded": project_embeddings({k: v.double() for k, v in params.items()}, outside)}
    return {name: {group: table_loss(variant, table) for group, table in tables.items()}
            for name, variant in variants.items()}


__all__ = ["IrrepProfile", "KEY_SIMILARITY", "all_logits", "component_norms", "component_shares", "irrep_profile",
           "joint_cells", "key_components", "logit_similarity", "neuron_cells", "overlap_dimensions",
           "project_embeddings", "restriction_losses", "similarity_to_traces", "table_loss", "total_embeddings"]
