"""Are the probed features used, and where does the learned model part from BFS? (chapter 7)

* `ablate_components`: mean ablation of every head, every attention layer and every
  feed-forward block (`lib.paths.interventions`), with the loss per true distance. The means
  come from a reference set of graphs, never from the graphs scored.
* `patch_distance`: pairs of graphs whose targets lie at different distances; the component of
  the recipient's target-token stream along the distance probe's direction is set to the
  donor's, at every residual index, and the prediction's shift is regressed on the label
  difference. The same is done along random directions (the control) and with the donor's
  whole target-token vector (the ceiling).
* `shortcut_correlations`: within each true distance, does the error follow the number of
  edges or the degrees of 1 and t, heuristics a network can use instead of a search?
* `hand_built_distances`: the hand-built transformer of chapter 1 on the same graphs (vertex t
  relabelled as 2, the target the construction reads), whose layer l knows exactly the
  radius-l balls: the reference against which the learned reach radii are read.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.bfs.transformer import bfs_transformer
from lib.book.statistics import pearson
from lib.chapters.ch7 import GraphSet
from lib.paths.activations import capture
from lib.paths.interventions import (
    heads_replaced, mean_head_outputs, mean_module_output, mlp_replaced, patch_along, patch_token,
    residual_edited,
)
from lib.paths.model import PathTransformer
from lib.paths.token_graphs import TokenGraphs


def loss_by_label(prediction: torch.Tensor, labels: torch.Tensor, values: tuple[int, ...]) -> torch.Tensor:
    """(len(values),) mean squared error among the examples of each label value."""
    error = (prediction.double() - labels.double()) ** 2
    return torch.stack([error[labels == value].mean() for value in values])


@dataclass(frozen=True)
class Ablation:
    """Loss of the model with one component at a time replaced by its mean output.

    Attributes:
        components: "none" first, then "layer l head h", "layer l attention" (all its heads)
            and "layer l MLP" for every layer (layers and heads counted from 1).
        labels: the true labels (distances, then the unreachable label) the columns stand for.
        loss: (components, labels) MSE among the graphs of each label.
        overall: (components,) MSE over all graphs.
    """

    components: tuple[str, ...]
    labels: tuple[int, ...]
    loss: torch.Tensor
    overall: torch.Tensor

    def increase(self) -> torch.Tensor:
        """(components,) overall MSE minus the intact model's."""
        return self.overall - self.overall[0]


@torch.no_grad()
def ablate_components(model: PathTransformer, graphs: GraphSet, reference: GraphSet) -> Ablation:
    """Mean-ablate every head, attention layer and feed-forward block of `model` in turn and
    score it on `graphs`; the means are taken over `reference`."""
    means = mean_head_outputs(model, capture(model, reference.tokens))
    layers = model.encoder.layers
    edits: dict[str, object] = {"none": None}
    for layer in range(len(layers)):
        for head in range(model.config.n_heads):
            edits[f"layer {layer + 1} head {head + 1}"] = ("heads", {(layer, head): means[layer, head]})
        edits[f"layer {layer + 1} attention"] = (
            "heads", {(layer, head): means[layer, head] for head in range(model.config.n_heads)})
        edits[f"layer {layer + 1} MLP"] = (
            "mlp", {layer: mean_module_output(model, layers[layer].linear2, reference.tokens)})
    labels = tuple(sorted(int(v) for v in graphs.labels.unique()))
    losses, overall = [], []
    for edit in edits.values():
        if edit is None:
            prediction = capture(model, graphs.tokens).prediction
        else:
            kind, constants = edit
            with (heads_replaced if kind == "heads" else mlp_replaced)(model, constants):
                prediction = capture(model, graphs.tokens).prediction
        losses.append(loss_by_label(prediction, graphs.labels, labels))
        overall.append(((prediction.double() - graphs.labels.double()) ** 2).mean())
    return Ablation(tuple(edits), labels, torch.stack(losses), torch.stack(overall))


@dataclass(frozen=True)
class Patching:
    """How far predictions follow a donor graph's distance when part of the target token's
    stream is patched in from the donor.

    A slope is the least-squares coefficient (through the origin) of the prediction's shift on
    the label difference (donor minus recipient) over the pairs: 1 means the prediction moves
    all the way to the donor's distance, 0 that the patch is ignored. Index r runs over 1..L:
    at r = 0 the target token is the same embedding in every graph (the target is always 2).

    Attributes:
        dimension: m, the dimension of the probe subspace.
        probe: (L,) slope when patching the probe subspace after layer r.
        random: (L, R) slopes for R random subspaces of the same dimension (the control).
        token: (L,) slope when the donor's whole target-token vector is patched.
        pairs: number of (recipient, donor) pairs.
    """

    dimension: int
    probe: torch.Tensor
    random: torch.Tensor
    token: torch.Tensor
    pairs: int


def _slope(shift: torch.Tensor, difference: torch.Tensor) -> float:
    shift, difference = shift.double(), difference.double()
    return float((shift * difference).sum() / (difference ** 2).sum())


def _patched_prediction(model: PathTransformer, tokens: torch.Tensor, index: int, edit) -> torch.Tensor:
    # One batch, not capture's chunks: the edit holds one donor row per graph of the batch.
    with residual_edited(model, index, edit):
        return model(tokens.to(next(model.parameters()).device)).cpu()


@torch.no_grad()
def patch_distance(model: PathTransformer, graphs: GraphSet, subspaces: torch.Tensor, *,
                   random_subspaces: int, seed: int) -> Patching:
    """Patch the target token's stream of reachable graphs from a donor at another distance.

    Args:
        subspaces: (L + 1, m, d) orthonormal rows at every residual index (`ModelProbes.distance_subspace`).
        random_subspaces: random m-dimensional subspaces patched at each index as the control.
        seed: draws the pairing and the random subspaces.
    """
    generator = torch.Generator().manual_seed(seed)
    reachable = graphs.select(graphs.reachable)
    donor_rows = torch.randperm(len(reachable.labels), generator=generator)
    differs = reachable.labels[donor_rows] != reachable.labels
    recipient, donor = reachable.select(differs), reachable.select(donor_rows[differs])
    difference = donor.labels - recipient.labels
    clean = _patched_prediction(model, recipient.tokens, 0, lambda stream: stream)
    donor_streams = capture(model, donor.tokens).residual[:, :, -1]  # (L + 1, pairs, d)
    dimension, width = subspaces.shape[1:]
    probe, random, token = [], [], []
    for index in range(1, len(subspaces)):
        def slope_after(edit) -> float:
            return _slope(_patched_prediction(model, recipient.tokens, index, edit) - clean, difference)
        probe.append(slope_after(patch_along(donor_streams[index], subspaces[index])))
        token.append(slope_after(patch_token(donor_streams[index])))
        draws = torch.randn(random_subspaces, width, dimension, generator=generator, dtype=torch.float64)
        random.append([slope_after(patch_along(donor_streams[index], torch.linalg.qr(draw).Q.T))
                       for draw in draws])
    return Patching(dimension, torch.tensor(probe), torch.tensor(random), torch.tensor(token), len(difference))


#: Graph statistics a network could use as a stand-in for searching.
SHORTCUTS = ("edges in the graph", "degree of vertex 1", "degree of t")


def shortcut_values(graphs: TokenGraphs) -> dict[str, torch.Tensor]:
    """Each shortcut statistic of every graph, by the names in SHORTCUTS."""
    return dict(zip(SHORTCUTS, (graphs.edge_count, graphs.degree(torch.ones_like(graphs.target)),
                                graphs.degree(graphs.target))))


def shortcut_correlations(prediction: torch.Tensor, graphs: GraphSet) -> dict[str, float]:
    """Pearson correlation of the prediction error with each shortcut statistic, both centred
    within each true label, so that a statistic that merely goes with distance scores zero."""
    error = prediction.double() - graphs.labels.double()
    centred_error = torch.zeros_like(error)
    centred = {name: torch.zeros_like(error) for name in SHORTCUTS}
    values = shortcut_values(graphs.graphs)
    for label in graphs.labels.unique():
        rows = graphs.labels == label
        centred_error[rows] = error[rows] - error[rows].mean()
        for name in SHORTCUTS:
            centred[name][rows] = values[name][rows].double() - values[name][rows].double().mean()
    return {name: pearson(centred[name], centred_error) for name in SHORTCUTS}


def hand_built_adjacency(graphs: TokenGraphs, n_vertices: int) -> torch.Tensor:
    """(B, n, n) adjacency of each graph with vertices 2 and t swapped, so that the hand-built
    model (which measures the distance from 1 to 2) answers the learned model's question."""
    if (graphs.target == 1).any():
        raise ValueError("The hand-built model cannot be asked for d(1, 1); a target is vertex 1.")
    batch = len(graphs.target)
    relabel = torch.arange(n_vertices + 1).expand(batch, -1).clone()   # old id -> new id
    rows = torch.arange(batch)
    relabel[rows, graphs.target.long()] = 2
    relabel[rows, 2] = graphs.target.long()
    low = relabel.gather(1, graphs.low.long())[graphs.is_edge.nonzero(as_tuple=True)]
    high = relabel.gather(1, graphs.high.long())[graphs.is_edge.nonzero(as_tuple=True)]
    which = graphs.is_edge.nonzero(as_tuple=True)[0]
    adjacency = torch.zeros(batch, n_vertices, n_vertices, dtype=torch.bool)
    adjacency[which, low - 1, high - 1] = True
    adjacency[which, high - 1, low - 1] = True
    return adjacency


@dataclass(frozen=True)
class HandBuilt:
    """The hand-built model on the learned model's graphs.

    Attributes:
        prediction: (B,) its distances (n_vertices where unreachable, the sampler's label).
        knows: (n_vertices, B) after layer l (row l - 1), the reach bit of t in vertex 1's
            token: [d(1, t) <= l]. (The answer token copies it one layer later.)
    """

    prediction: torch.Tensor
    knows: torch.Tensor


@torch.no_grad()
def hand_built_distances(graphs: TokenGraphs, n_vertices: int) -> HandBuilt:
    """Run chapter 1's construction for `n_vertices` vertices on the graphs."""
    model = bfs_transformer(n_vertices)
    trace = model.run(hand_built_adjacency(graphs, n_vertices), keep_trace=True)
    vertex_one, t_bit = 1, model.layout.reach.start + 1   # token of vertex 1; reach bit of vertex 2
    return HandBuilt(trace["distance"], trace["hidden"][1:, :, vertex_one, t_bit])


__all__ = ["SHORTCUTS", "Ablation", "HandBuilt", "Patching", "ablate_components", "hand_built_adjacency",
           "hand_built_distances", "loss_by_label", "patch_distance", "shortcut_correlations",
           "shortcut_values"]
