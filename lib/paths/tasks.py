"""The tasks of the edge-token sampler: which target each graph gets and which graphs are kept
(chapters 2 and 3).

A task is a function `(proposals_per_size, options, generator) -> TaskDraw` registered by name in
`TASKS` (`register_task`); `lib.paths.sampler.sample_batch(task=name)` calls it in rounds until
every example of a batch has a kept graph of its size. Three tasks are the study's
[@wang2024shortest]: "pretrain" (target 2, a filter that balances path lengths), "onpath" (a
target on a shortest 1-2 path, the fine-tuning task) and "any" (a uniform target). Chapters may
register their own (chapter 3 adds "pretrain_reachable").

The choices that the published description leaves open are listed in `lib.paths.sampler`'s
docstring and repeated here where they are implemented.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from lib.paths.graph_batch import (
    GraphProposals, distance_to, distances_from, propose_graphs, random_chunks, uniform_below,
)
from lib.paths.pretrain_draw import draw_pretrain_graphs
from lib.paths.sampler_options import SamplerOptions


class TaskDraw(NamedTuple):
    """A task's proposals and its decision for each: target vertex, its distance, keep or not.

    `distance` is the BFS distance from vertex 1 to `target` as int64, -1 where unreachable.
    """

    graphs: GraphProposals
    target: torch.Tensor
    distance: torch.Tensor
    keep: torch.Tensor


TaskFunction = Callable[[list[int], SamplerOptions, torch.Generator], TaskDraw]
#: Registered tasks by name; `sample_batch(task=name)` looks them up here.
TASKS: dict[str, TaskFunction] = {}


def register_task(name: str) -> Callable[[TaskFunction], TaskFunction]:
    """Decorator that adds a task to `TASKS` under `name`.

    A task is a function `(proposals_per_size, options, generator) -> TaskDraw` that draws
    `proposals_per_size[i]` proposals with n_min + i vertices (usually with `proposal_sizes`
    and `propose_graphs`), labels them (usually with `distance_to`) and says which to keep;
    `sample_batch` repeats it until every size has its examples.
    """
    def add(function: TaskFunction) -> TaskFunction:
        TASKS[name] = function
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


def proposal_sizes(proposals_per_size: list[int], n_min: int, device: torch.device) -> torch.Tensor:
    """(proposals,) int64 numbers of vertices: `proposals_per_size[i]` times n_min + i, in order."""
    counts = torch.tensor(proposals_per_size, device=device)
    sizes = torch.arange(n_min, n_min + len(proposals_per_size), device=device)
    return torch.repeat_interleave(sizes, counts, output_size=sum(proposals_per_size))


@register_task("pretrain")
def pretrain_task(proposals_per_size: list[int], options: SamplerOptions,
                  generator: torch.Generator) -> TaskDraw:
    """Target 2, thinned by `pretrain_keep_probability` so that path lengths are balanced.

    Returns only the kept proposals (`keep` is all true), in random order, so that keeping the
    first few of a size (as `sample_batch` does in its last round) is a uniform choice.
    Equivalent to drawing the proposals one by one and keeping a proposal when its coin, uniform
    on [0, 1), falls below the keep probability of its 1-2 distance; `lib.paths.pretrain_draw`
    draws only the proposals whose coin leaves them a chance.
    """
    # Indexed by the 1-2 distance; entry 0 (no 1-2 distance is 0) holds the unreachable case.
    keep_probability = [pretrain_keep_probability(d, options) for d in [-1, *range(1, options.n_max)]]
    graphs, distance = draw_pretrain_graphs(proposals_per_size, options.n_min, keep_probability,
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


@register_task("onpath")
def onpath_task(proposals_per_size: list[int], options: SamplerOptions,
                generator: torch.Generator) -> TaskDraw:
    """Target on a shortest path from 1 to 2; the label is its distance from 1.

    Graphs where 2 is unreachable from 1 are rejected. With the small-graph filter (on by
    default when n_max <= 7, the published "small graphs"), a 1-2 distance d < 4 is kept with
    probability 1 / (3 (4 - d)). The position k on the path is drawn from {1, ..., d} with
    probability proportional to k, so k = d (the target is vertex 2 itself) is allowed. Where
    several shortest paths exist, the target is uniform among the vertices at distance k from 1
    that lie on some shortest 1-2 path (d(1, v) + d(v, 2) = d). A target whose vertex id is
    above `target_max` rejects the proposal (its graph is redrawn; the authors' MAX_TUNE_VTXS).
    """
    device = generator.device
    n_vertices = proposal_sizes(proposals_per_size, options.n_min, device)
    count = len(n_vertices)
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
    if options.target_max < options.n_max:
        keep &= target <= options.target_max
    return TaskDraw(graphs, target, torch.where(keep, k, path_length), keep)


@register_task("any")
def any_target_task(proposals_per_size: list[int], options: SamplerOptions,
                    generator: torch.Generator) -> TaskDraw:
    """Target uniform on [2, target_max], every proposal kept.

    As in the published sampler the target is drawn without looking at the graph's size, so a
    target above n is not a vertex of the graph and gets the unreachable label.
    """
    n_vertices = proposal_sizes(proposals_per_size, options.n_min, generator.device)
    chunk = random_chunks(len(n_vertices), 1, generator)[:, 0]
    target = (2 + uniform_below(chunk, options.target_max - 1)).long()
    graphs = propose_graphs(n_vertices, options.n_max, generator)
    distance = distance_to(graphs, target)
    return TaskDraw(graphs, target, distance, torch.ones_like(target, dtype=torch.bool))


__all__ = [
    "TASKS", "TaskDraw", "TaskFunction", "any_target_task", "onpath_task",
    "pretrain_keep_probability", "pretrain_task", "proposal_sizes", "register_task",
]
