"""Length generalization: train on small graphs, test on larger graphs and longer paths (chapter 3).

A model is trained on the pre-training task (distance from vertex 1 to vertex 2) on graphs of
`n_min`..`n_train_max` vertices and tested on graphs of up to `n_test_max` vertices, whose
1-2 distances can exceed anything seen in training. Two things grow together in a larger graph:
the number of edge tokens (the "length" of the input) and the largest possible distance (the
number of hops the model must chain, and a label value never seen). The evaluation separates
them by scoring every (graph size, true distance) cell on its own.

A third difference would spoil the experiment: larger graphs carry vertex ids that a model
trained on small graphs never embedded. The split removes it. Training graphs are relabelled:
vertices 3..n go to distinct ids drawn at random from 3..n_test_max for each graph (vertices 1
and 2 keep their ids, so the task is unchanged), so every id and the TARGET token occur in
training; `vertex_id_coverage` checks this. The model has no positional encodings, so more edge
tokens are simply more tokens.

The study is about distances, so it leaves out graphs where vertex 2 cannot be reached: their
label is a stand-in for infinity whose value would have to grow with the graph size. Training
uses the pre-training filter restricted to reachable targets (the task "pretrain_reachable",
registered here in `lib.paths.sampler.TASKS`), with the length threshold at the longest possible
training distance so that long paths are as frequent as the filter allows.

Test graphs are drawn from the natural distribution (no length filter) and sorted into cells by
their true 1-2 distance, up to `per_cell` graphs per cell (`sample_cells`); long paths in large
graphs are rare, so cells that stay below a minimum count are left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from lib.paths.sampler import (
    TASKS, SamplerOptions, TaskDraw, assemble_tokens, distance_to, make_options, propose_graphs,
    register_task, sample_with_options,
)
from lib.book.params import ParameterError
from lib.paths.prediction import predict
from lib.paths.training import PathTrainingConfig
from lib.paths.model import PathTransformer


@register_task("pretrain_reachable")
def reachable_pretrain_task(proposals_per_size: list[int], options: SamplerOptions,
                            generator: torch.Generator) -> TaskDraw:
    """The "pretrain" task (target 2, length filter) keeping only graphs where 2 is reachable."""
    draw = TASKS["pretrain"](proposals_per_size, options, generator)
    return draw._replace(keep=draw.keep & (draw.distance >= 0))


@dataclasses.dataclass(frozen=True)
class LengthSplit:
    """Which graph sizes are trained on and which are tested.

    Attributes:
        n_min: fewest vertices of any graph.
        n_train_max: most vertices of a training graph.
        n_test_max: most vertices of a test graph; also the largest vertex id.
    """

    n_min: int
    n_train_max: int
    n_test_max: int

    def __post_init__(self):
        if not 2 <= self.n_min <= self.n_train_max < self.n_test_max:
            raise ParameterError(
                "Parameter `length_test_n_max` must exceed `length_train_n_max`, which must be at "
                f"least n_min; got n_min={self.n_min}, n_train_max={self.n_train_max}, "
                f"n_test_max={self.n_test_max}.")

    @property
    def vertex_ids(self) -> int:
        """Largest vertex id, in training and test (TARGET is one more)."""
        return self.n_test_max

    @property
    def unreachable_label(self) -> int:
        """Never a label here (unreachable targets are left out); the sampler needs a value."""
        return self.n_test_max

    @property
    def distance_train_max(self) -> int:
        """The longest 1-2 distance a training graph can have (n_train_max - 1)."""
        return self.n_train_max - 1

    def size_seen(self, n_vertices: int) -> bool:
        return n_vertices <= self.n_train_max

    def distance_seen(self, distance: int) -> bool:
        """Whether a training graph can have this 1-2 distance."""
        return distance <= self.distance_train_max

    def training_options(self) -> tuple[tuple[str, object], ...]:
        """`PathTrainingConfig.sampler_options` of the training graphs."""
        return (("relabel_vertices", True), ("unreachable_label", self.unreachable_label),
                ("length_threshold", max(1, self.distance_train_max)))

    def test_options(self, n_vertices: int) -> SamplerOptions:
        """Options for assembling test graphs of exactly `n_vertices` vertices (target 2)."""
        return make_options("any", n_vertices, n_vertices, target_max=2, max_vertex_id=self.vertex_ids,
                            relabel_vertices=True, unreachable_label=self.unreachable_label)


def training_config(split: LengthSplit, *, n_layers: int, batch_size: int,
                    lr_schedule: tuple[tuple[int, float], ...], seed: int, device: str,
                    n_max: int | None = None, eval_size: int = 1024, log_every: int = 10) -> PathTrainingConfig:
    """Training on relabelled graphs of `split.n_min`..`n_max` vertices (default n_train_max).

    The task is "pretrain_reachable": target 2, reachable only, lengths balanced by the
    pre-training filter. Passing `n_max=split.n_test_max` gives a reference run that sees
    every size.
    """
    n_max = split.n_train_max if n_max is None else n_max
    steps = sum(s for s, _ in lr_schedule)
    return PathTrainingConfig(
        n_layers=n_layers, n_min=split.n_min, n_max=n_max, task="pretrain_reachable", batch_size=batch_size,
        lr_schedule=lr_schedule, max_vertex_id=split.vertex_ids,
        sampler_options=split.training_options(), log_every=log_every, snapshot_every=steps,
        eval_size=eval_size, seed=seed, device=device)


def vertex_id_coverage(config: PathTrainingConfig, n_graphs: int, generator: torch.Generator) -> list[int]:
    """Sorted token ids that occur in `n_graphs` training graphs of `config` (padding 0 left out)."""
    tokens, _ = sample_with_options(n_graphs, config.sampler, generator)
    ids = torch.unique(tokens)
    return [int(i) for i in ids if i > 0]


def sample_cells(split: LengthSplit, n_vertices: int, per_cell: int, generator: torch.Generator, *,
                 max_proposals: int = 1 << 19, round_size: int = 1 << 16
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Test graphs of exactly `n_vertices` vertices, stratified by their 1-2 distance.

    Graphs are drawn from the natural distribution (2n random endpoints, target 2, no filter)
    in rounds; each distance 1..n-1 keeps the first `per_cell` graphs that land in it (graphs
    where 2 is unreachable are dropped). Rounds stop when every cell is full or `max_proposals`
    graphs were drawn, so rare cells (very long paths) may hold fewer.

    Returns:
        tokens (B, n_vertices + 1, 2) relabelled as in training, labels (B,) float32.
    """
    options = split.test_options(n_vertices)
    device = generator.device
    n_labels = n_vertices  # distances 0..n-1; 0 marks "unreachable"
    filled = torch.zeros(n_labels, dtype=torch.int64, device=device)
    possible = torch.zeros(n_labels, dtype=torch.bool, device=device)
    possible[1:n_vertices] = True
    kept_tokens, kept_labels, proposed = [], [], 0
    while proposed < max_proposals and bool((filled[possible] < per_cell).any()):
        count = min(round_size, max_proposals - proposed)
        graphs = propose_graphs(torch.full((count,), n_vertices, device=device), n_vertices, generator)
        distance = distance_to(graphs, 2)
        labels = torch.where(distance < 0, 0, distance)  # 0: unreachable, never kept
        proposed += count
        # Rank of each graph within its cell, counting graphs already kept.
        order = torch.argsort(labels, stable=True)
        sorted_labels = labels[order]
        first = torch.searchsorted(sorted_labels, sorted_labels, side="left")
        rank = torch.arange(count, device=device) - first + filled[sorted_labels]
        chosen = order[(rank < per_cell) & (sorted_labels > 0)]
        chosen = chosen.sort().values
        if len(chosen) == 0:
            continue
        filled += torch.bincount(labels[chosen], minlength=n_labels)
        target = torch.full((len(chosen),), 2, dtype=torch.int64, device=device)
        kept_tokens.append(assemble_tokens(graphs.select(chosen), target, options, generator))
        kept_labels.append(labels[chosen].float())
    return torch.cat(kept_tokens), torch.cat(kept_labels)


@dataclasses.dataclass(frozen=True)
class Cell:
    """A model's errors on the test graphs of one (size, true distance) cell."""

    n_vertices: int
    distance: int
    count: int
    mse: float
    mean_prediction: float
    accuracy: float
    seen_size: bool
    seen_distance: bool

    def record(self) -> dict:
        return dataclasses.asdict(self)


def evaluate_cells(model: PathTransformer, split: LengthSplit, *, per_cell: int, seed: int,
                   min_count: int = 20, max_proposals: int = 1 << 19,
                   sizes: Sequence[int] | None = None) -> list[Cell]:
    """Score `model` on every (size, distance) cell for sizes n_min..n_test_max (or `sizes`).

    Each size draws its graphs from its own generator (seeded from `seed` and the size), so
    the result is deterministic for a seed. Cells with fewer than `min_count` graphs are left
    out.
    """
    device = next(model.parameters()).device
    cells = []
    sizes = range(split.n_min, split.n_test_max + 1) if sizes is None else sizes
    for n_vertices in sizes:
        generator = torch.Generator(device=device).manual_seed(seed * 1_000_081 + 7_727 * n_vertices + 3)
        tokens, labels = sample_cells(split, n_vertices, per_cell, generator, max_proposals=max_proposals)
        predictions = predict(model, tokens).double().cpu()
        labels = labels.double().cpu()
        for label in sorted(set(labels.long().tolist())):
            chosen = labels == label
            count = int(chosen.sum())
            if count < min_count:
                continue
            error = predictions[chosen] - label
            cells.append(Cell(
                n_vertices, label, count,
                float((error ** 2).mean()), float(predictions[chosen].mean()),
                float((predictions[chosen].round() == label).double().mean()),
                split.size_seen(n_vertices), split.distance_seen(label)))
    return cells


def own_graphs_by_distance(model: PathTransformer, sampler: SamplerOptions, *, per_cell: int, seed: int,
                           min_count: int = 20, max_proposals: int = 1 << 19) -> list[Cell]:
    """A pre-trained model (chapter 2's) on its own largest graphs, one cell per true distance.

    This is the depth check of the chapter: how far a model of the same depth gets on long
    paths when such paths were in its training data. Graphs have `sampler.n_max` vertices,
    drawn like `sample_cells` draws them; at that size relabelling ids 3..n_max is a
    permutation, which leaves the distribution of graphs unchanged, so the test graphs are
    exactly the model's own graphs of that size.
    """
    if sampler.max_vertex_id != sampler.n_max:
        raise ValueError("the model's vocabulary must be its graph size for this check")
    split = LengthSplit(sampler.n_min, sampler.n_max - 1, sampler.n_max)
    return evaluate_cells(model, split, per_cell=per_cell, seed=seed, min_count=min_count,
                          max_proposals=max_proposals, sizes=[sampler.n_max])


#: Groups of cells that the chapter compares (name, which cells).
GROUPS = (
    ("training sizes", lambda c: c.seen_size),
    ("larger graphs, distances seen in training", lambda c: not c.seen_size and c.seen_distance),
    ("larger graphs, longer distances", lambda c: not c.seen_distance),
)


def summarize_cells(cells: list[Cell]) -> dict[str, dict[str, float]]:
    """MSE and accuracy over each group of `GROUPS`, every test graph weighted equally.

    Returns:
        {group name: {"mse", "accuracy", "count"}} for the groups that have cells.
    """
    summary = {}
    for name, belongs in GROUPS:
        members = [c for c in cells if belongs(c)]
        count = sum(c.count for c in members)
        if count:
            summary[name] = {"mse": sum(c.mse * c.count for c in members) / count,
                             "accuracy": sum(c.accuracy * c.count for c in members) / count,
                             "count": count}
    return summary


__all__ = [
    "Cell", "GROUPS", "LengthSplit", "evaluate_cells", "own_graphs_by_distance", "reachable_pretrain_task",
    "sample_cells",
    "summarize_cells", "training_config", "vertex_id_coverage",
]
