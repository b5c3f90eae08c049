"""The straightforward per-graph generator of the edge-token data (chapter 2's baseline).

This is the data generator as one would first write it: a Python loop over graphs, Python's
`random` for the edges, an adjacency list and a `collections.deque` breadth-first search for the
label, and the same rejection filters as `lib.paths.sampler`: each example's size n is drawn
once and only its graph is redrawn until the filter keeps it, as in the authors' code. It exists for two reasons: the benchmark
(`benchmarks/bench_graph_sampler.py`) measures how much faster the vectorized sampler is, and
the tests compare the vectorized sampler's label histograms with this one's. The distribution
and every documented choice are those of `lib.paths.sampler.sample_batch`; read its docstring for them.
"""

from __future__ import annotations

import random
from collections import deque

import torch

from lib.paths.sampler import SamplerOptions, make_options


def random_edge_list(n_vertices: int, rng: random.Random) -> list[tuple[int, int]]:
    """Draw 2n endpoints uniform in [1, n], pair them, drop self-loops, keep duplicates."""
    edges = []
    for _ in range(n_vertices):
        a, b = rng.randint(1, n_vertices), rng.randint(1, n_vertices)
        if a != b:
            edges.append((min(a, b), max(a, b)))
    return edges


def bfs_distances(n_vertices: int, edges: list[tuple[int, int]], source: int) -> list[int | None]:
    """Distances from `source` to vertices 0..n (index 0 unused); None where unreachable."""
    neighbours: list[list[int]] = [[] for _ in range(n_vertices + 1)]
    for a, b in edges:
        neighbours[a].append(b)
        neighbours[b].append(a)
    distance: list[int | None] = [None] * (n_vertices + 1)
    distance[source] = 0
    queue = deque([source])
    while queue:
        vertex = queue.popleft()
        for other in neighbours[vertex]:
            if distance[other] is None:
                distance[other] = distance[vertex] + 1
                queue.append(other)
    return distance


def draw_proposal(n_vertices: int, options: SamplerOptions, rng: random.Random):
    """One proposal on `n_vertices` vertices: (edges, target, distance or None), or None when
    the filter rejects it."""
    edges = random_edge_list(n_vertices, rng)
    from_1 = bfs_distances(n_vertices, edges, 1)
    task = options.task
    if task == "pretrain":
        distance = from_1[2]
        if distance is None:
            keep = rng.random() < 1.0 / options.n_max
        elif distance < options.length_threshold:
            keep = rng.random() < 1.0 / (2 * (options.length_threshold - distance))
        else:
            keep = True
        return (edges, 2, distance) if keep else None
    if task == "onpath":
        path_length = from_1[2]
        if path_length is None:
            return None
        if options.small_graph_filter and path_length < 4 \
                and not rng.random() < 1.0 / (3 * (4 - path_length)):
            return None
        k = rng.choices(range(1, path_length + 1), weights=range(1, path_length + 1))[0]
        from_2 = bfs_distances(n_vertices, edges, 2)
        layer = [v for v in range(1, n_vertices + 1) if from_1[v] == k
                 and from_2[v] is not None and from_2[v] == path_length - k]
        target = rng.choice(layer)
        return None if target > options.target_max else (edges, target, k)
    if task == "any":
        target = rng.randint(2, options.target_max)
        distance = from_1[target] if target <= n_vertices else None
        return edges, target, distance
    raise ValueError(f"the reference generator has no task {task!r}")


def reference_examples(batch_size: int, spec: SamplerOptions, rng: random.Random):
    """`batch_size` kept examples as (n, edges, target, distance or None), one at a time.

    Each example's size n is drawn once; only its graph is redrawn until the filter keeps it.
    """
    for _ in range(batch_size):
        n_vertices = rng.randint(spec.n_min, spec.n_max)
        example = None
        while example is None:
            example = draw_proposal(n_vertices, spec, rng)
        yield (n_vertices, *example)


def reference_sample_batch(batch_size: int, task: str, n_min: int = 3, n_max: int = 15,
                           rng: random.Random | None = None, **options) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-graph Python version of `lib.paths.sampler.sample_batch` (same arguments, same format).

    Args:
        batch_size: number of accepted examples to return.
        task: "pretrain", "onpath" or "any".
        n_min, n_max: range of the number of vertices (n_max is also the number of edge slots).
        rng: a `random.Random`; a fresh unseeded one if None.
        **options: the keyword options of `lib.paths.sampler.sample_batch` (target_max,
            small_graph_filter, length_threshold, max_vertex_id, relabel_vertices,
            unreachable_label).

    Returns:
        (tokens, labels) exactly as `lib.paths.sampler.sample_batch` lays them out.
    """
    spec = make_options(task, n_min, n_max, **options)
    rng = rng or random.Random()
    target_token = spec.max_vertex_id + 1
    rows, labels = [], []
    for _, edges, target, distance in reference_examples(batch_size, spec, rng):
        if spec.relabel_vertices:
            new_ids = [0, 1, 2] + rng.sample(range(3, spec.max_vertex_id + 1), spec.n_max - 2)
            edges = [tuple(sorted((new_ids[a], new_ids[b]))) for a, b in edges]
            target = new_ids[target]
        padding = [(0, 0)] * (spec.n_max - len(edges))
        rows.append(edges + padding + [(target, target_token)])
        labels.append(spec.unreachable_label if distance is None else distance)
    return torch.tensor(rows, dtype=torch.long), torch.tensor(labels, dtype=torch.float32)


__all__ = ["bfs_distances", "draw_proposal", "random_edge_list", "reference_examples", "reference_sample_batch"]
