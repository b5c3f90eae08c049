"""Are the probed features used, and does the error follow a shortcut? (chapter 7)

* `ablate_components`: mean ablation of every head, every attention layer and every
  feed-forward block (`lib.paths.interventions`), with the loss per true distance. The means
  come from a reference set of graphs, never from the graphs scored.
* `patch_distance`: pairs of graphs whose targets lie at different distances; the component of
  the recipient's target-token stream along the distance probe's direction is set to the
  donor's, at every residual index, and the prediction's shift is regressed on the label
  difference. The same is done along random directions (the control) and with the donor's
  whole target-token vector (the ceiling).
* `Patching.by_layer`: the patching effect after each layer, the probe subspace against random
  subspaces of its dimension and the whole token. After the last layer the linear readout reads
  the probe subspace almost by construction, so what patching says about the computation is in
  the intermediate layers.
* `shortcut_correlations`: within each true distance, does the error follow a statistic of the
  graph that a network could use instead of a search (`SHORTCUTS`: the edge count, duplicate
  edges, the vertices in the graph, the degrees of 1 and t, the sizes of their components, the
  edges on shortest 1-t paths)?
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.book.statistics import pearson
from lib.paths.activations import capture
from lib.paths.graph_set import GraphSet
from lib.paths.interventions import (
    heads_replaced, mean_head_outputs, mean_module_output, mlp_replaced, patch_along, patch_token,
    residual_edited,
)
from lib.paths.model import PathTransformer
from lib.paths.token_graphs import UNREACHABLE, TokenGraphs


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

    def by_layer(self) -> list[dict]:
        """Per layer l = 1..L: the slopes of the probe subspace, of the random subspaces (mean,
        max) and of the whole token; the probe subspace's share of the token's effect; whether it
        beats every random subspace; and whether l is the last layer (where the readout reads the
        probe subspace almost by construction)."""
        rows = []
        for index, (probe, random, token) in enumerate(zip(self.probe.tolist(), self.random.tolist(),
                                                           self.token.tolist())):
            rows.append({"layer": index + 1, "probe": probe, "random_mean": sum(random) / len(random),
                         "random_max": max(random), "token": token,
                         "share_of_token": probe / token if token else float("nan"),
                         "beats_every_random": probe > max(random), "last": index == len(self.probe) - 1})
        return rows


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
SHORTCUTS = ("edges in the graph", "duplicate edges", "vertices with an edge", "degree of vertex 1", "degree of t",
             "vertices reachable from 1", "vertices reachable from t", "edges on shortest 1-t paths")


def shortcut_values(graphs: TokenGraphs) -> dict[str, torch.Tensor]:
    """Each shortcut statistic of every graph, by the names in SHORTCUTS."""
    ones = torch.ones_like(graphs.target)
    pairs = graphs.low.long() * 10_000 + graphs.high.long()
    distinct = torch.tensor([len(set(row[mask].tolist())) for row, mask in zip(pairs, graphs.is_edge)])
    vertices = torch.zeros(len(pairs), graphs.from_source.shape[1], dtype=torch.bool)
    rows = graphs.is_edge.nonzero(as_tuple=True)[0]
    vertices[rows, graphs.low[graphs.is_edge].long()] = True
    vertices[rows, graphs.high[graphs.is_edge].long()] = True
    # Vertex ids start at 1; index 0 (padding) is never reachable.
    reach_1 = (graphs.from_source[:, 1:] < UNREACHABLE).sum(dim=1)
    reach_t = (graphs.from_target[:, 1:] < UNREACHABLE).sum(dim=1)
    values = (graphs.edge_count, graphs.edge_count - distinct, vertices.sum(dim=1), graphs.degree(ones),
              graphs.degree(graphs.target), reach_1, reach_t, graphs.on_shortest_path.sum(dim=1))
    return dict(zip(SHORTCUTS, values))


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
    # A statistic that is constant within every label (none here, in practice) has no correlation.
    return {name: pearson(centred[name], centred_error) if bool(centred[name].abs().sum() > 0) else 0.0
            for name in SHORTCUTS}


__all__ = ["SHORTCUTS", "Ablation", "Patching", "ablate_components", "loss_by_label", "patch_distance",
           "shortcut_correlations", "shortcut_values"]
