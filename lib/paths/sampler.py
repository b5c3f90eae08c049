"""Random graphs as edge tokens, with shortest-path labels, sampled in batches (chapters 2 and 3).

A graph on n vertices (n uniform in [n_min, n_max]) is drawn the way the shortest-paths study
draws it [@wang2024shortest]: 2n endpoints uniform in [1, n] are paired into n edges, self-loops
are dropped and duplicate edges are kept. The model sees the graph as a sequence of n_max + 1
token pairs: the edges (a, b) with a < b in the order they were drawn, padding pairs (0, 0) up to
n_max slots, and last the pair (target, TARGET) where TARGET = max_vertex_id + 1 is a token that
is never a vertex. The label is the breadth-first-search distance from vertex 1 to the target.

Everything runs as tensor operations over a whole batch of graphs, on the CPU or a GPU: no
Python loop ever visits one graph. The rejection filters that balance path lengths are applied
by drawing more proposals than needed, keeping those that pass, and repeating in rounds until
the batch is full. `lib.paths.reference_sampler` is the per-graph Python generator of the same
distribution; the benchmark `benchmarks/bench_graph_sampler.py` compares the two and the tests
compare their label histograms.

This module defines the options, the tasks and the sampling loop. Tasks (what the target is,
and which proposals are kept) live in the `TASKS` registry so that chapters can add their own
with `register_task`. The pieces live in three modules, whose public names are importable from
here too: `lib.paths.graph_batch` (drawing graphs, labelling them, laying out tokens),
`lib.paths.graph_search` (the batched breadth-first search) and `lib.paths.pretrain_draw` (the
pre-training task's proposals, drawn only where the length filter can keep them).

Where the published description leaves a choice open, this module decides as follows (each is
repeated where it is implemented):

- Edges keep their drawing order with self-loops removed, and padding comes after the edges.
- The unreachable label defaults to n_max (15, the published MAX_VTXS, at n_max = 15).
- Pre-training filter for n_max != 15: threshold round(6 n_max / 15) (at least 2), unreachable
  kept with probability 1 / n_max; both reduce to the published 6 and 1/15 at n_max = 15.
- On-path targets: the position k runs over 1..d inclusive (k = d makes vertex 2 the target);
  with several shortest paths the target is uniform among the on-path vertices at distance k;
  a label above 7 without `large_targets` rejects the whole proposal; the small-graph filter is
  on by default when n_max <= 7.
- "Any" targets are uniform on [2, target_max] whatever the graph's size, so a target above n is
  unreachable.
- Uniform integers come from 21-bit slices of 64-bit random words (see `random_chunks`), except
  in the pre-training task, whose edges are pair indices drawn from one 31- or 32-bit word each
  (closer to uniform than two 21-bit ends), whose numbers of proposals of each size and coin
  range are Poisson counts, and whose proposals with a coin that rules out distance 1 are drawn
  without a 1-2 edge (see `lib.paths.pretrain_draw`).
- The pre-training task returns its kept proposals shuffled, so `sample_batch` may keep the first
  ones of its last round.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Iterator
from typing import NamedTuple

import torch

from lib.book.params import ParameterError, check_bool, check_choice, check_int
from lib.paths.graph_batch import (
    CHUNK_BITS, GraphProposals, assemble_tokens, distance_to, distances_from, draw_vertex_counts,
    propose_graphs, random_chunks, relabel_tokens, uniform_below,
)
from lib.paths.pretrain_draw import draw_pretrain_graphs

#: The largest number of vertices in the published run; the thresholds below are its values.
PUBLISHED_N_MAX = 15
#: Pre-training filter of the published run: paths of length >= 6 are always kept.
PUBLISHED_LENGTH_THRESHOLD = 6
#: Without "large targets", on-path labels are at most 7 (the published small-graph size).
SMALL_LABEL_MAX = 7
#: The on-path small-graph filter is on by default when graphs have at most this many vertices.
SMALL_GRAPH_FILTER_N_MAX = 7


@dataclasses.dataclass(frozen=True)
class SamplerOptions:
    """Everything that defines one data distribution (see `sample_batch` for the meanings)."""

    task: str
    n_min: int
    n_max: int
    target_max: int
    large_targets: bool
    small_graph_filter: bool
    length_threshold: int
    max_vertex_id: int
    relabel_vertices: bool
    unreachable_label: int

    @property
    def target_token(self) -> int:
        """The token paired with the target vertex in the last row."""
        return self.max_vertex_id + 1

    @property
    def vocabulary_size(self) -> int:
        """Number of distinct token ids: padding 0, vertices 1..max_vertex_id, TARGET."""
        return self.max_vertex_id + 2


def default_length_threshold(n_max: int) -> int:
    """Pre-training filter threshold for graphs of up to `n_max` vertices.

    The published run (n_max = 15) keeps every example with path length >= 6. For other sizes
    the threshold scales with n_max, round(6 n_max / 15), and is at least 2 so that the filter
    still thins out the most common length 1; at n_max = 15 it is exactly 6.
    """
    return max(2, round(PUBLISHED_LENGTH_THRESHOLD * n_max / PUBLISHED_N_MAX))


def make_options(
    task: str, n_min: int = 3, n_max: int = 15, *, target_max: int | None = None,
    large_targets: bool = False, small_graph_filter: bool | None = None,
    length_threshold: int | None = None, max_vertex_id: int | None = None,
    relabel_vertices: bool = False, unreachable_label: int | None = None,
) -> SamplerOptions:
    """Validate the sampler's arguments and fill in defaults (see `sample_batch`)."""
    check_choice("task", task, sorted(TASKS))
    check_int("n_max", n_max, 2, 62)
    check_int("n_min", n_min, 2, n_max)
    target_max = n_max if target_max is None else check_int("target_max", target_max, 2, n_max)
    check_bool("large_targets", large_targets)
    if small_graph_filter is None:
        small_graph_filter = n_max <= SMALL_GRAPH_FILTER_N_MAX
    check_bool("small_graph_filter", small_graph_filter)
    if length_threshold is None:
        length_threshold = default_length_threshold(n_max)
    check_int("length_threshold", length_threshold, 1, n_max)
    max_vertex_id = n_max if max_vertex_id is None else check_int(
        "max_vertex_id", max_vertex_id, n_max, 10_000)
    check_bool("relabel_vertices", relabel_vertices)
    unreachable_label = n_max if unreachable_label is None else check_int(
        "unreachable_label", unreachable_label, 1)
    return SamplerOptions(task, n_min, n_max, target_max, large_targets, small_graph_filter,
                          length_threshold, max_vertex_id, relabel_vertices, unreachable_label)


class TaskDraw(NamedTuple):
    """A task's proposals and its decision for each: target vertex, its distance, keep or not.

    `distance` is the BFS distance from vertex 1 to `target` as int64, -1 where unreachable.
    """

    graphs: GraphProposals
    target: torch.Tensor
    distance: torch.Tensor
    keep: torch.Tensor


TaskFunction = Callable[[int, SamplerOptions, torch.Generator], TaskDraw]
#: Registered tasks by name; `sample_batch(task=name)` looks them up here.
TASKS: dict[str, TaskFunction] = {}
#: Rough share of proposals each task keeps, used to size the first round of proposals.
EXPECTED_ACCEPTANCE: dict[str, float] = {}


def register_task(name: str, expected_acceptance: float = 0.1) -> Callable[[TaskFunction], TaskFunction]:
    """Decorator that adds a task to `TASKS` under `name`.

    A task is a function `(count, options, generator) -> TaskDraw` that draws `count`
    proposals (usually with `draw_vertex_counts` and `propose_graphs`), labels them (usually with
    `distance_to`) and says which to keep; `sample_batch` repeats it until the batch is full.
    `expected_acceptance` only sizes the first round; later rounds use the observed rate.
    """
    def add(function: TaskFunction) -> TaskFunction:
        TASKS[name] = function
        EXPECTED_ACCEPTANCE[name] = expected_acceptance
        return function
    return add


def pretrain_keep_probability(distance: int, options: SamplerOptions) -> float:
    """Probability that the pre-training filter keeps a proposal at this 1-2 distance (-1: none).

    With threshold T (6 at n_max = 15, see `default_length_threshold`): d >= T is always kept,
    d < T with probability 1 / (2 (T - d)), an unreachable vertex 2 with probability 1 / n_max
    (1/15 in the published run).
    """
    if distance < 0:
        return 1.0 / options.n_max
    if distance >= options.length_threshold:
        return 1.0
    return 1.0 / (2 * (options.length_threshold - distance))


@register_task("pretrain", expected_acceptance=0.12)
def pretrain_task(count: int, options: SamplerOptions, generator: torch.Generator) -> TaskDraw:
    """Target 2, thinned by `pretrain_keep_probability` so that path lengths are balanced.

    Returns only the kept proposals (`keep` is all true), in random order, so that keeping the
    first few of them (as `sample_batch` does in its last round) is a uniform choice. Equivalent
    to drawing `count` proposals one by one and keeping a proposal when its coin, uniform on
    [0, 1), falls below the keep probability of its 1-2 distance; `lib.paths.pretrain_draw`
    draws only the proposals whose coin leaves them a chance.
    """
    # Indexed by the 1-2 distance; entry 0 (no 1-2 distance is 0) holds the unreachable case.
    keep_probability = [pretrain_keep_probability(d, options) for d in [-1, *range(1, options.n_max)]]
    graphs, distance = draw_pretrain_graphs(count, options.n_min, options.n_max, keep_probability,
                                            generator)
    return TaskDraw(graphs, torch.full_like(distance, 2), distance, torch.ones_like(distance, dtype=torch.bool))


def _draw_index(weights: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One index per row, drawn with probability proportional to the row's weights.

    Inverse-CDF sampling on the cumulative weights (torch.multinomial does a slow loop per row
    on the CPU). Weights are small integers here, so float64 sums are exact.
    """
    cumulative = weights.cumsum(dim=1)
    level = torch.rand(len(weights), 1, generator=generator, device=weights.device,
                       dtype=torch.float64) * cumulative[:, -1:]
    return (cumulative <= level).sum(dim=1)


@register_task("onpath", expected_acceptance=0.3)
def onpath_task(count: int, options: SamplerOptions, generator: torch.Generator) -> TaskDraw:
    """Target on a shortest path from 1 to 2; the label is its distance from 1.

    Graphs where 2 is unreachable from 1 are rejected. With the small-graph filter (on by
    default when n_max <= 7, the published "small graphs"), a 1-2 distance d < 4 is kept with
    probability 1 / (3 (4 - d)). The position k on the path is drawn from {1, ..., d} with
    probability proportional to k, so k = d (the target is vertex 2 itself) is allowed. Where
    several shortest paths exist, the target is uniform among the vertices at distance k from 1
    that lie on some shortest 1-2 path (d(1, v) + d(v, 2) = d). Without `large_targets` the
    label k must be at most 7, otherwise the proposal is rejected (the whole graph is redrawn).
    """
    device = generator.device
    n_vertices = draw_vertex_counts(random_chunks(count, 1, generator)[:, 0], options.n_min, options.n_max)
    graphs = propose_graphs(n_vertices, options.n_max, generator)
    from_1 = distances_from(graphs, 1)
    path_length = from_1[:, 2]
    keep = path_length > 0
    if options.small_graph_filter:
        coin = torch.rand(count, generator=generator, device=device)
        keep &= (path_length >= 4) | (coin < 1.0 / (3.0 * (4 - path_length).clamp(min=1)))
    from_2 = distances_from(graphs, 2)
    d = path_length.clamp(min=1).unsqueeze(1)
    positions = torch.arange(from_1.shape[1], device=device)
    weights = torch.where((positions >= 1) & (positions <= d), positions, 0).double()
    k = _draw_index(weights, generator).unsqueeze(1)
    on_layer = (from_1 == k) & (from_2 >= 0) & (from_1 + from_2 == d)
    on_layer[:, 2] |= ~on_layer.any(dim=1)  # rows rejected anyway still need something to draw
    target = _draw_index(on_layer.double(), generator)
    k = k.squeeze(1)
    if not options.large_targets:
        keep &= k <= SMALL_LABEL_MAX
    return TaskDraw(graphs, target, torch.where(keep, k, path_length), keep)


@register_task("any", expected_acceptance=1.0)
def any_target_task(count: int, options: SamplerOptions, generator: torch.Generator) -> TaskDraw:
    """Target uniform on [2, target_max], every proposal kept.

    As in the published sampler the target is drawn without looking at the graph's size, so a
    target above n is not a vertex of the graph and gets the unreachable label.
    """
    head = random_chunks(count, 2, generator)
    n_vertices = draw_vertex_counts(head[:, 0], options.n_min, options.n_max)
    target = (2 + uniform_below(head[:, 1], options.target_max - 1)).long()
    graphs = propose_graphs(n_vertices, options.n_max, generator)
    distance = distance_to(graphs, target)
    return TaskDraw(graphs, target, distance, torch.ones_like(target, dtype=torch.bool))


def sample_batch(
    batch_size: int, task: str, n_min: int = 3, n_max: int = 15,
    generator: torch.Generator | None = None, *, device: torch.device | str | None = None,
    **options,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of edge-token graphs with shortest-path labels (chapter 2 trains on it).

    Proposals are drawn in rounds of oversized batches; each task's filter keeps some; rounds
    repeat until `batch_size` examples are kept (a loop over rounds, never over graphs). The
    computation runs on the generator's device.

    Args:
        batch_size: number of examples.
        task: a name in `TASKS`: "pretrain" (target 2, length-balancing filter), "onpath"
            (target on a shortest 1-2 path) or "any" (target uniform on [2, target_max]).
        n_min, n_max: the number of vertices is uniform in [n_min, n_max]; n_max is also the
            number of edge slots.
        generator: torch.Generator; the batch is computed on its device. If None, a generator
            on `device` (default CPU) seeded from torch's global generator.
        device: where to compute when no generator is given.
        **options: keyword options, all defaulting to the published setting:
            target_max (int, default n_max): largest target of the "any" task.
            large_targets (bool, default False): "onpath" keeps labels above 7.
            small_graph_filter (bool, default n_max <= 7): "onpath" thins out d < 4.
            length_threshold (int, default `default_length_threshold(n_max)`): "pretrain" keeps
                every length >= threshold.
            max_vertex_id (int, default n_max): largest vertex id; TARGET = max_vertex_id + 1.
            relabel_vertices (bool, default False): send vertex ids 3..n_max to random distinct
                ids in 3..max_vertex_id (1 and 2 fixed), independently per graph.
            unreachable_label (int, default n_max): the label when the target is unreachable.

    Returns:
        tokens: (batch_size, n_max + 1, 2) int64; rows 0..n_max-1 are edges (a < b) then
            (0, 0) padding, the last row is (target, TARGET).
        labels: (batch_size,) float32 distances from vertex 1 to the target.
    """
    check_int("batch_size", batch_size, 1)
    spec = make_options(task, n_min, n_max, **options)
    if generator is None:
        # Seeded from torch's global generator, so torch.manual_seed makes it reproducible.
        seed = int(torch.randint(0, 2**62, (), dtype=torch.int64))
        generator = torch.Generator(device=device or "cpu").manual_seed(seed)
    elif device is not None and torch.device(device) != generator.device:
        raise ParameterError(f"Parameter `device` must match the generator's device "
                             f"{generator.device}; got {device!r}.")
    return sample_with_options(batch_size, spec, generator)


@contextlib.contextmanager
def _one_cpu_thread(device: torch.device) -> Iterator[None]:
    """Run CPU tensor operations on one thread inside the block.

    The sampler's operations are many and small; splitting each across threads costs more in
    synchronisation than it saves, and on a shared machine it made sampling up to 30 times
    slower in wall-clock time (measured here with 2 threads on 2 busy cores).
    """
    if device.type != "cpu":
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def sample_with_options(batch_size: int, spec: SamplerOptions,
                        generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """`sample_batch` for already validated options."""
    with _one_cpu_thread(generator.device):
        return _sample_rounds(batch_size, spec, generator)


def _sample_rounds(batch_size: int, spec: SamplerOptions,
                   generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    # Rounds of proposals: sized from the acceptance rate seen so far (5% to spare, as a round
    # that falls short costs only a small extra round), capped for memory.
    max_round = 1 << 19 if generator.device.type == "cpu" else 1 << 21
    task = TASKS[spec.task]
    kept_tokens, kept_labels = [], []
    n_kept, n_proposed, n_accepted = 0, 0, 0
    while n_kept < batch_size:
        missing = batch_size - n_kept
        rate = max(n_accepted / n_proposed if n_proposed else EXPECTED_ACCEPTANCE[spec.task], 0.005)
        count = min(max_round, max(1024, math.ceil(1.05 * missing / rate)))
        draw = task(count, spec, generator)
        n_proposed += count
        if bool(draw.keep.all()):  # the task returned only kept proposals: take the first ones
            n_accepted += len(draw.keep)
            accepted = slice(0, missing)
        else:
            accepted = draw.keep.nonzero().squeeze(1)
            n_accepted += len(accepted)
            accepted = accepted[:missing]
        distance = draw.distance[accepted]
        if len(distance) == 0:
            continue
        graphs = GraphProposals(*(part[accepted] for part in draw.graphs))
        kept_tokens.append(assemble_tokens(graphs, draw.target[accepted], spec, generator))
        kept_labels.append(torch.where(distance < 0, spec.unreachable_label, distance).float())
        n_kept += len(distance)
    if len(kept_tokens) == 1:
        return kept_tokens[0], kept_labels[0]
    return torch.cat(kept_tokens), torch.cat(kept_labels)


def describe_filter(options: SamplerOptions) -> str:
    """One sentence saying which filter a sampler applies (chapters print it)."""
    if options.task == "pretrain":
        return (f"target 2; paths of length >= {options.length_threshold} always kept, shorter "
                f"ones with probability 1/(2({options.length_threshold} - d)), unreachable "
                f"with probability 1/{options.n_max}")
    if options.task == "onpath":
        rule = "" if options.large_targets else f", labels <= {SMALL_LABEL_MAX}"
        small = ", d < 4 thinned" if options.small_graph_filter else ""
        return f"target on a shortest 1-2 path, position weighted by k{rule}{small}"
    if options.task == "any":
        return f"target uniform on [2, {options.target_max}], no filter"
    return options.task


__all__ = [
    "CHUNK_BITS", "EXPECTED_ACCEPTANCE", "GraphProposals", "PUBLISHED_LENGTH_THRESHOLD", "PUBLISHED_N_MAX",
    "ParameterError", "SMALL_GRAPH_FILTER_N_MAX", "SMALL_LABEL_MAX", "SamplerOptions", "TASKS",
    "TaskDraw", "assemble_tokens", "default_length_threshold", "describe_filter", "distance_to",
    "distances_from", "draw_vertex_counts", "make_options", "pretrain_keep_probability",
    "propose_graphs", "random_chunks", "register_task", "relabel_tokens", "sample_batch",
    "sample_with_options", "uniform_below",
]
