"""Random graphs as edge tokens, with shortest-path labels, sampled in batches (chapters 2 and 3).

A graph on n vertices (n uniform in [n_min, n_max]) is drawn the way the shortest-paths study
draws it [@wang2024shortest]: 2n endpoints uniform in [1, n] are paired into n edges, self-loops
are dropped and duplicate edges are kept. The model sees the graph as a sequence of n_max + 1
token pairs: the edges (a, b) with a < b in the order they were drawn, padding pairs (0, 0) up to
n_max slots, and last the pair (target, TARGET) where TARGET = max_vertex_id + 1 is a token that
is never a vertex. The label is the breadth-first-search distance from vertex 1 to the target.

Everything runs as tensor operations over a whole batch of graphs, on the CPU or a GPU: no
Python loop ever visits one graph. As in the authors' code, each example's size n is drawn
first and only its graph is redrawn until the task's filter keeps it (n is not redrawn on
rejection, which would skew kept graphs towards the sizes the filter favours). In tensors: the
batch's sizes are drawn, proposals of each size are drawn in rounds of oversized batches, and
rounds repeat until every size has as many kept examples as the batch has slots of that size.
`lib.paths.reference_sampler` is the per-graph Python generator of the same distribution; the
benchmark `benchmarks/bench_graph_sampler.py` compares the two and the tests compare their
label histograms.

This module validates the options (`make_options`) and runs the sampling loop; the options
themselves, `SamplerOptions`, live in `lib.paths.sampler_options`, below every module that reads
them. Tasks (what the target is, and which proposals are kept) live in `lib.paths.tasks`, in the
`TASKS` registry, so that chapters can add their own with `register_task`. The other pieces live
in three modules: `lib.paths.graph_batch` (drawing graphs, labelling them, laying out tokens),
`lib.paths.graph_search` (the batched breadth-first search) and `lib.paths.pretrain_draw` (the
pre-training task's proposals, drawn only where the length filter can keep them). `SamplerOptions`
and the public names of `lib.paths.tasks` and `lib.paths.graph_batch` are importable from here
too.

Where the published description leaves a choice open, this module decides as follows (each is
repeated where it is implemented):

- Edges keep their drawing order with self-loops removed, and padding comes after the edges.
- The unreachable label defaults to n_max (15, the published MAX_VTXS, at n_max = 15).
- Pre-training filter for n_max != 15: threshold round(6 n_max / 15) (at least 2), unreachable
  kept with probability 1 / n_max; both reduce to the published 6 and 1/15 at n_max = 15.
- On-path targets: the position k runs over 1..d inclusive (k = d makes vertex 2 the target, as
  in the authors' code; the post's text says vertex 2 is excluded); with several shortest paths
  the target is uniform among the on-path vertices at distance k; a target whose vertex id is
  above `target_max` rejects the graph (the authors' `path[k] <= MAX_TUNE_VTXS`, 7 published:
  a cap on the vertex id, not on the label); the small-graph filter is on by default when
  n_max <= 7.
- "Any" targets are uniform on [2, target_max] whatever the graph's size, so a target above n is
  unreachable.
- Uniform integers come from 21-bit slices of 64-bit random words (see `random_chunks`), except
  in the pre-training task, whose edges are pair indices drawn from one 31- or 32-bit word each
  (closer to uniform than two 21-bit ends), whose numbers of proposals of each size and coin
  range are Poisson counts, and whose proposals with a coin that rules out distance 1 are drawn
  without a 1-2 edge (see `lib.paths.pretrain_draw`).
- The pre-training task returns its kept proposals shuffled, so `sample_batch` may keep the first
  ones of each size in its last round.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from typing import NamedTuple

import torch

from lib.book.params import ParameterError, check_bool, check_choice, check_int
from lib.paths.graph_batch import (
    CHUNK_BITS, GraphProposals, assemble_tokens, distance_to, distances_from, draw_vertex_counts,
    propose_graphs, random_chunks, relabel_tokens, uniform_below,
)
from lib.paths.sampler_options import SamplerOptions
from lib.paths.tasks import (
    TASKS, TaskDraw, TaskFunction, pretrain_keep_probability, proposal_sizes,
    register_task,
)

#: The largest number of vertices in the published run; the thresholds below are its values.
PUBLISHED_N_MAX = 15
#: Pre-training filter of the published run: paths of length >= 6 are always kept.
PUBLISHED_LENGTH_THRESHOLD = 6
#: The authors' MAX_TUNE_VTXS: without "large targets" an on-path target's vertex id is at most 7.
PUBLISHED_TUNE_TARGET_MAX = 7
#: The on-path small-graph filter is on by default when graphs have at most this many vertices.
SMALL_GRAPH_FILTER_N_MAX = 7


def default_length_threshold(n_max: int) -> int:
    """Pre-training filter threshold for graphs of up to `n_max` vertices.

    The published run (n_max = 15) keeps every example with path length >= 6. For other sizes
    the threshold scales with n_max, round(6 n_max / 15), and is at least 2 so that the filter
    still thins out the most common length 1; at n_max = 15 it is exactly 6.
    """
    return max(2, round(PUBLISHED_LENGTH_THRESHOLD * n_max / PUBLISHED_N_MAX))


def make_options(
    task: str, n_min: int = 3, n_max: int = 15, *, target_max: int | None = None,
    small_graph_filter: bool | None = None,
    length_threshold: int | None = None, max_vertex_id: int | None = None,
    relabel_vertices: bool = False, unreachable_label: int | None = None,
) -> SamplerOptions:
    """Validate the sampler's arguments and fill in defaults (see `sample_batch`)."""
    check_choice("task", task, sorted(TASKS))
    check_int("n_max", n_max, 2, 62)
    check_int("n_min", n_min, 2, n_max)
    target_max = n_max if target_max is None else check_int("target_max", target_max, 2, n_max)
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
    return SamplerOptions(task, n_min, n_max, target_max, small_graph_filter,
                          length_threshold, max_vertex_id, relabel_vertices, unreachable_label)


#: Proposals per size from which `acceptance_by_size` estimates how many a task keeps.
CALIBRATION_PROPOSALS = 16384


@functools.lru_cache(maxsize=64)
def acceptance_by_size(task: TaskFunction, spec: SamplerOptions) -> tuple[float, ...]:
    """The share of proposals of each size n_min..n_max that `task` keeps, estimated once per
    task and options from `CALIBRATION_PROPOSALS` proposals per size.

    It only sizes the first round of `sample_examples` (later rounds use the rates they
    observe). Its proposals come from a generator of its own with a fixed seed, so it neither
    draws from nor depends on the caller's generator: a seed gives the same batches whether or
    not the estimate was already cached.
    """
    n_sizes = spec.n_max - spec.n_min + 1
    draw = task([CALIBRATION_PROPOSALS] * n_sizes, spec, torch.Generator().manual_seed(0))
    kept = torch.bincount(draw.graphs.n_vertices[draw.keep] - spec.n_min, minlength=n_sizes)
    return tuple(max(int(k) / CALIBRATION_PROPOSALS, 0.005) for k in kept)


def sample_batch(
    batch_size: int, task: str, n_min: int = 3, n_max: int = 15,
    generator: torch.Generator | None = None, *, device: torch.device | str | None = None,
    **options,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of edge-token graphs with shortest-path labels (chapter 2 trains on it).

    Each example's number of vertices is drawn first; proposals of each size are drawn in rounds
    of oversized batches, each task's filter keeps some, and rounds repeat until every example
    has a kept graph of its size (a loop over rounds, never over graphs). The computation runs
    on the generator's device.

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
            target_max (int, default n_max): largest target vertex id: "any" draws its target
                uniformly on [2, target_max], "onpath" redraws a graph whose target's id is
                larger (the authors' fine-tuning sampler: 7, `PUBLISHED_TUNE_TARGET_MAX`).
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
        examples = sample_examples(batch_size, spec, generator)
        labels = torch.where(examples.distance < 0, spec.unreachable_label, examples.distance).float()
        return assemble_tokens(examples.graphs, examples.target, spec, generator), labels


class KeptExamples(NamedTuple):
    """Examples of a batch before they are laid out as tokens: graphs, targets, distances (-1:
    unreachable)."""

    graphs: GraphProposals
    target: torch.Tensor
    distance: torch.Tensor


def sample_examples(batch_size: int, spec: SamplerOptions, generator: torch.Generator) -> KeptExamples:
    """The kept examples of one batch, in batch order (`sample_batch` lays them out as tokens).

    Example i's size n_i is drawn uniformly on [n_min, n_max] first; then proposals are drawn
    in rounds (sized by `_AcceptanceRates`) until every size has as many kept graphs as examples. Kept
    graphs of one size are exchangeable, so they fill that size's examples in the order they
    were drawn.
    """
    device = generator.device
    n_sizes = spec.n_max - spec.n_min + 1
    size_of_example = uniform_below(random_chunks(batch_size, 1, generator)[:, 0], n_sizes).long()
    wanted = torch.bincount(size_of_example, minlength=n_sizes)
    # The examples of each size, in batch order: those of size i are slots[start[i]:][:wanted[i]].
    slots = torch.argsort(size_of_example, stable=True)
    start = wanted.cumsum(0) - wanted
    got = torch.zeros_like(wanted)
    task = TASKS[spec.task]
    rates = _AcceptanceRates(acceptance_by_size(task, spec))
    parts, destinations = [], []
    while bool((got < wanted).any()):
        proposals = rates.proposals_for((wanted - got).tolist(), device)
        draw = task(proposals, spec, generator)
        kept = draw.keep.nonzero().squeeze(1)
        kept_size = draw.graphs.n_vertices.index_select(0, kept) - spec.n_min
        kept_per_size = torch.bincount(kept_size, minlength=n_sizes)
        rates.observe(proposals, kept_per_size.tolist())
        rows, size, rank = _first_of_each_size(kept_size, wanted - got)
        destinations.append(slots.index_select(0, start.index_select(0, size) + got.index_select(0, size) + rank))
        rows = kept.index_select(0, rows)
        parts.append([column.index_select(0, rows) for column in (*draw.graphs, draw.target, draw.distance)])
        got += torch.minimum(kept_per_size, wanted - got)
    # Example i is the kept graph that was sent to destination i.
    source = torch.empty_like(slots)
    source[torch.cat(destinations)] = torch.arange(batch_size, device=device)
    columns = [torch.cat(column).index_select(0, source) for column in zip(*parts)]
    return KeptExamples(GraphProposals(*columns[:3]), *columns[3:])


class _AcceptanceRates:
    """How many proposals of each size a round draws, from the share kept so far.

    Before the first round the shares are `acceptance_by_size`; after it, those observed in
    this call. A round draws 5% more than the expected need (a round that falls short costs
    only a small extra round), at least 64 per size still missing, and at most 2^19 in all on
    a CPU (2^21 on a GPU) to bound memory.
    """

    def __init__(self, prior: tuple[float, ...]):
        self.prior = prior
        self.proposed = [0] * len(prior)
        self.accepted = [0] * len(prior)

    def proposals_for(self, missing: list[int], device: torch.device) -> list[int]:
        proposals = []
        for i, need in enumerate(missing):
            if self.proposed[i]:
                rate = max(self.accepted[i] / self.proposed[i], 0.005)
            else:
                rate = self.prior[i]
            spare = 1.05 if rate < 1 else 1.0
            proposals.append(max(64, math.ceil(spare * need / rate)) if need else 0)
        most = 1 << 19 if device.type == "cpu" else 1 << 21
        if sum(proposals) > most:
            proposals = [math.ceil(count * most / sum(proposals)) for count in proposals]
        return proposals

    def observe(self, proposals: list[int], kept: list[int]) -> None:
        for i, (count, kept_count) in enumerate(zip(proposals, kept)):
            self.proposed[i] += count
            self.accepted[i] += kept_count


def _first_of_each_size(size: torch.Tensor, wanted: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The first `wanted[s]` entries of `size` equal to s, for each s: their positions in
    `size`, their value s and their rank among the entries equal to s."""
    order = torch.argsort(size, stable=True)
    sorted_size = size.index_select(0, order)
    counts = torch.bincount(size, minlength=len(wanted))
    rank = torch.arange(len(size), device=size.device) - (counts.cumsum(0) - counts).index_select(0, sorted_size)
    chosen = rank < wanted.index_select(0, sorted_size)
    return order[chosen], sorted_size[chosen], rank[chosen]


__all__ = [
    "CALIBRATION_PROPOSALS", "CHUNK_BITS", "GraphProposals", "KeptExamples",
    "PUBLISHED_LENGTH_THRESHOLD", "PUBLISHED_N_MAX", "PUBLISHED_TUNE_TARGET_MAX", "ParameterError",
    "SMALL_GRAPH_FILTER_N_MAX", "SamplerOptions", "TASKS", "TaskDraw", "acceptance_by_size",
    "assemble_tokens", "default_length_threshold", "distance_to", "distances_from",
    "draw_vertex_counts", "make_options", "pretrain_keep_probability", "proposal_sizes",
    "propose_graphs", "random_chunks", "register_task", "relabel_tokens", "sample_batch",
    "sample_examples", "sample_with_options", "uniform_below",
]
