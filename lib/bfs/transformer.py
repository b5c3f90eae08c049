"""A transformer whose weights are set by hand to run breadth-first search (chapter 1).

The sequence is one answer token followed by one token per vertex, vertex v of the study at
position v (index v - 1 among the vertex tokens, as everywhere in `lib.bfs`). The hidden state of width
4n + 2 is cut into sections (see `HiddenLayout`):

    answer flag | neighbours (n) | reach (n) | out (n) | self one-hot (n) | not-answer flag

A vertex token starts with its adjacency row in `neighbours`, its one-hot in `self` and in
`reach`. Each of the n layers has n + 1 heads, all computed in one batched product:

* reach head j (one per vertex j): vertex v attends to vertex w iff v already reaches j and w is a
  neighbour of j; the value is w's one-hot, written into v's reach section. Every token also
  attends to the answer token with a middling score; the answer token's value is zero, so a
  vertex that does not reach j takes nothing from head j.
* answer head: the answer token attends to vertex 1 (the source) and copies its reach bit for
  vertex 2 (the target) into `out[layer]`.

After each layer the reach section is squashed with sigmoid(slope * (x - 1 / (2n))): a vertex
newly reached through a neighbour of degree k arrives with mass 1/k >= 1/(n - 1), an unreached
one with (almost) none, and the threshold 1/(2n) sits between them with a margin of at least
1/(2n) on each side, so small additive noise in the reach pre-activations is absorbed. After layer l the reach
set of v is the ball of radius l around v, so out[l] = [d <= l] and the output
sum_l (1 - out[l]) = min(d, n) is the distance, with n meaning unreachable.

Every error of the construction is a softmax leak of order exp(-attention_gap) or a squash
residue of order exp(-squash_slope / (2n)); both vanish as the constants grow, so the model is
exact in the limit. The defaults make both far smaller than float32 resolution for n <= 32.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from lib.bfs.softmax import underflow_free_softmax

#: Largest graph the construction is offered for (its parameters grow as n^3).
MAX_VERTICES = 32


@dataclass(frozen=True)
class HiddenLayout:
    """Where each section of the residual stream of width 4n + 2 lives."""

    n_vertices: int

    @property
    def width(self) -> int:
        return 4 * self.n_vertices + 2

    @property
    def answer_flag(self) -> int:
        return 0

    @property
    def neighbours(self) -> slice:
        return slice(1, 1 + self.n_vertices)

    @property
    def reach(self) -> slice:
        return slice(1 + self.n_vertices, 1 + 2 * self.n_vertices)

    @property
    def out(self) -> slice:
        return slice(1 + 2 * self.n_vertices, 1 + 3 * self.n_vertices)

    @property
    def self_onehot(self) -> slice:
        return slice(1 + 3 * self.n_vertices, 1 + 4 * self.n_vertices)

    @property
    def not_answer_flag(self) -> int:
        return 4 * self.n_vertices + 1


def embed_graphs(adjacency: torch.Tensor, layout: HiddenLayout, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Token embeddings (batch, n + 1, 4n + 2) of a batch of graphs given as adjacency matrices."""
    batch, n, _ = adjacency.shape
    eye = torch.eye(n, dtype=dtype, device=adjacency.device).expand(batch, n, n)
    tokens = torch.zeros(batch, n + 1, layout.width, dtype=dtype, device=adjacency.device)
    tokens[:, 0, layout.answer_flag] = 1.0
    tokens[:, 1:, layout.neighbours] = adjacency.to(dtype)
    tokens[:, 1:, layout.reach] = eye
    tokens[:, 1:, layout.self_onehot] = eye
    tokens[:, 1:, layout.not_answer_flag] = 1.0
    return tokens


def check_adjacency(adjacency: torch.Tensor, n_vertices: int) -> None:
    """Raise ValueError with one sentence if `adjacency` is not a batch of simple graphs on n vertices."""
    if adjacency.dtype != torch.bool:
        raise ValueError(f"adjacency must be a bool tensor; got dtype {adjacency.dtype}.")
    if adjacency.dim() != 3 or adjacency.shape[1] != adjacency.shape[2]:
        raise ValueError(f"adjacency must have shape (batch, n, n); got {tuple(adjacency.shape)}.")
    if adjacency.shape[1] != n_vertices:
        raise ValueError(
            f"This model holds graphs of exactly {n_vertices} vertices; got graphs of "
            f"{adjacency.shape[1]} (build one with bfs_transformer({adjacency.shape[1]}))."
        )
    if not torch.equal(adjacency, adjacency.transpose(1, 2)):
        raise ValueError("adjacency must be symmetric (the graphs are undirected).")
    if adjacency.diagonal(dim1=1, dim2=2).any():
        raise ValueError("adjacency must have no self-loops (its diagonal must be False).")


class BFSTransformer(nn.Module):
    """The hand-built BFS transformer; see the module docstring for the construction.

    Parameters, with leading (layer, head) dimensions so a layer's heads run as one matrix product:
    `query`, `key` (n, n + 1, 2, 4n + 2), `value` (n, n + 1, n, 4n + 2) and `output`
    (n, n + 1, 4n + 2, n). Head index n (the last) is the answer head.
    """

    def __init__(self, n_vertices: int, attention_gap: float, squash_slope: float):
        super().__init__()
        self.layout = HiddenLayout(n_vertices)
        self.n_vertices = n_vertices
        self.squash_slope = squash_slope
        n, width = n_vertices, self.layout.width
        n_heads = n + 1
        shape = (n, n_heads)
        self.query = nn.Parameter(torch.zeros(*shape, 2, width))
        self.key = nn.Parameter(torch.zeros(*shape, 2, width))
        self.value = nn.Parameter(torch.zeros(*shape, n, width))
        self.output = nn.Parameter(torch.zeros(*shape, width, n))
        with torch.no_grad():
            self._set_weights(attention_gap)

    def _set_weights(self, gap: float) -> None:
        lay, n = self.layout, self.n_vertices
        heads = torch.arange(n)
        reach = torch.arange(lay.reach.start, lay.reach.stop)
        nbrs = torch.arange(lay.neighbours.start, lay.neighbours.stop)
        selves = torch.arange(lay.self_onehot.start, lay.self_onehot.stop)
        outs = torch.arange(lay.out.start, lay.out.stop)
        # Reach heads, identical in every layer. Score(v, w) = 2*gap*[v reaches j][w ~ j]
        # + gap*[w is the answer token]: neighbours of a reached j beat the answer token by
        # `gap`, and the answer token (value 0) beats everyone else by `gap` otherwise.
        self.query[:, heads, 0, reach] = 2 * gap
        self.key[:, heads, 0, nbrs] = 1.0
        self.query[:, :n, 1, lay.answer_flag] = gap
        self.query[:, :n, 1, lay.not_answer_flag] = gap
        self.key[:, :n, 1, lay.answer_flag] = 1.0
        self.value[:, :n, torch.arange(n), selves] = 1.0       # value = one-hot of w
        self.output[:, :n, reach, torch.arange(n)] = 1.0       # ... added to v's reach section
        # Answer head of layer l: the answer token attends to vertex 1 (index 0) and copies its
        # reach bit for vertex 2 (index 1).
        self.query[:, n, 0, lay.answer_flag] = gap
        self.key[:, n, 0, selves[0]] = 1.0
        self.value[:, n, 0, reach[1]] = 1.0
        self.output[torch.arange(n), n, outs, 0] = 1.0

    def squash(self, reach: torch.Tensor) -> torch.Tensor:
        """Map reach mass to {0, 1}: below 1/(2n) to ~0, above to ~1 (within exp(-slope/(2n)))."""
        return torch.sigmoid(self.squash_slope * (reach - 0.5 / self.n_vertices))

    def layer(self, hidden: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Apply one layer; return the new hidden state and the attention (batch, head, query, key)."""
        batch, tokens, width = hidden.shape
        n_heads = self.n_vertices + 1
        # Every head's query, key and value maps in one matrix product, then one (batch, head)
        # block of each: (batch, head, token, 2), (..., 2) and (..., n).
        maps = torch.cat([self.query[layer].flatten(0, 1), self.key[layer].flatten(0, 1),
                          self.value[layer].flatten(0, 1)])
        q, k, v = (
            part.view(batch, tokens, n_heads, -1).transpose(1, 2)
            for part in (hidden @ maps.T).split([2 * n_heads, 2 * n_heads, self.n_vertices * n_heads], dim=-1)
        )
        attention = underflow_free_softmax(q @ k.transpose(-1, -2))
        mixed = (attention @ v).transpose(1, 2).flatten(2)               # (batch, token, head*f)
        # Each head's output map, stacked so all heads write the residual in one matmul.
        hidden = hidden + mixed @ self.output[layer].transpose(1, 2).flatten(0, 1)
        reach = self.layout.reach
        hidden[..., reach] = self.squash(hidden[..., reach])
        return hidden, attention

    def forward(self, adjacency: torch.Tensor) -> torch.Tensor:
        """Distance from vertex 1 to vertex 2 for each graph, n_vertices where unreachable."""
        return self.run(adjacency)["distance"]

    def run(self, adjacency: torch.Tensor, keep_trace: bool = False) -> dict[str, torch.Tensor]:
        """Forward pass that can also return every layer's hidden state and attention.

        Returns a dict with "distance" (batch,) and, if `keep_trace`, "hidden"
        (layers + 1, batch, n + 1, 4n + 2) and "attention" (layers, batch, heads, n + 1, n + 1).
        Chapter 1 uses the trace for its reach-set and attention figures.
        """
        check_adjacency(adjacency, self.n_vertices)
        hidden = embed_graphs(adjacency, self.layout, self.query.dtype).to(self.query.device)
        hiddens, attentions = [hidden], []
        for layer in range(self.n_vertices):
            hidden, attention = self.layer(hidden, layer)
            if keep_trace:
                hiddens.append(hidden)
                attentions.append(attention)
        reached = hidden[:, 0, self.layout.out]
        result = {"distance": (1.0 - reached).sum(dim=-1)}
        if keep_trace:
            result["hidden"] = torch.stack(hiddens)
            result["attention"] = torch.stack(attentions)
        return result


def reach_by_layer(model: BFSTransformer, adjacency: torch.Tensor) -> torch.Tensor:
    """Reach sections of the vertex tokens of one graph after each layer: (layers + 1, n, n), row =
    vertex (chapter 1's reach slider; chapter 7 compares the trained model's probes with it)."""
    with torch.no_grad():
        trace = model.run(adjacency.unsqueeze(0), keep_trace=True)
    return trace["hidden"][:, 0, 1:, model.layout.reach].cpu()


def bfs_transformer(n_vertices: int, attention_gap: float = 30.0, squash_slope: float | None = None) -> BFSTransformer:
    """Build the hand-set BFS transformer for graphs on `n_vertices` vertices (2 to MAX_VERTICES).

    Args:
        n_vertices: number of vertices of the graphs the model reads.
        attention_gap: score margin between the attended and the ignored keys; the softmax
            leak is about exp(-attention_gap) per key.
        squash_slope: slope of the reach squash; defaults to 80 * n so that every reach bit lands
            within exp(-40) of 0 or 1 (the threshold margin is 1/(2n) on each side).
    """
    if isinstance(n_vertices, bool) or not isinstance(n_vertices, int) or not 2 <= n_vertices <= MAX_VERTICES:
        raise ValueError(
            f"n_vertices must be an integer between 2 and {MAX_VERTICES}; got {n_vertices!r}."
        )
    if not attention_gap > 0:
        raise ValueError(f"attention_gap must be positive; got {attention_gap!r}.")
    slope = 80.0 * n_vertices if squash_slope is None else squash_slope
    if not slope > 0:
        raise ValueError(f"squash_slope must be positive; got {squash_slope!r}.")
    return BFSTransformer(n_vertices, float(attention_gap), float(slope))
