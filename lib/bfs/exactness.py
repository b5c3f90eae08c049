"""The hand-built model against plain BFS: exactness per graph size and sampler, the sweep of its
two constants, the study's own construction on its own sampler, and the example graph
(chapter 1).

`measure_exactness` compares the construction (`lib.bfs.transformer`) with BFS for every
(size, sampler) pair and `pooled_errors` pools the records; `sharpness_sweep` varies the
attention gap and the squash slope one at a time and `summarize_sharpness` reads its two
numbers; `seed_construction_error` measures the study's construction
(`lib.bfs.seed_construction`) at the appendix's graph size `SEED_APPENDIX_N`. Numbers and
records only; chapter 1's tables are in `lib.chapters.ch1`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from lib.bfs.graphs import bfs_distance, bfs_distance_batch, sample_graphs
from lib.bfs.seed_construction import seed_construction_distance
from lib.bfs.transformer import bfs_transformer


#: Graph size of the study's appendix code.
SEED_APPENDIX_N = 8


def evaluate_on(model, adjacency: torch.Tensor, chunk: int = 2048) -> tuple[torch.Tensor, torch.Tensor]:
    """(model prediction, BFS distance) for every graph, evaluated in chunks without gradients."""
    device = model.query.device
    with torch.no_grad():
        predicted = torch.cat([model(part.to(device)).cpu() for part in adjacency.split(chunk)])
    return predicted, bfs_distance_batch(adjacency)


def measure_exactness(sizes, samplers, graphs_per_sampler: int, seed: int,
                      device: torch.device = torch.device("cpu")) -> list[dict]:
    """Compare the hand-built model with BFS for every (size, sampler) pair.

    Returns one record per pair with `n_vertices`, `sampler`, `n_graphs`, `mse`,
    `max_abs_error`, `mean_distance` and `fraction_unreachable`.
    """
    generator = torch.Generator().manual_seed(seed)
    records = []
    for n in tqdm(sizes, desc="exactness", mininterval=5):
        model = bfs_transformer(n).to(device)
        for sampler in samplers:
            predicted, distance = evaluate_on(model, sample_graphs(sampler, graphs_per_sampler, n, generator))
            error = predicted - distance
            records.append({
                "n_vertices": n, "sampler": sampler, "n_graphs": len(distance),
                "mse": float((error ** 2).mean()), "max_abs_error": float(error.abs().max()),
                "mean_distance": float(distance[distance < n].mean()) if (distance < n).any() else None,
                "fraction_unreachable": float((distance == n).float().mean()),
            })
    return records


def pooled_errors(records: list[dict]) -> tuple[float, float, int]:
    """Pool per-pair exactness records into (overall MSE, overall max abs error, graph count)."""
    n_graphs = sum(r["n_graphs"] for r in records)
    mse = sum(r["mse"] * r["n_graphs"] for r in records) / n_graphs
    return mse, max(r["max_abs_error"] for r in records), n_graphs


def sharpness_sweep(n_vertices: int, n_graphs: int, seed: int, gaps, slopes_per_vertex) -> list[dict]:
    """MSE against BFS as one constant of the construction varies and the other stays at its default.

    `gaps` are attention gaps; `slopes_per_vertex` are squash slopes divided by n. Chapter 1
    uses this to show that the construction is exact in the limit of large constants and how
    it degrades when they are small (as the study's constants were).
    """
    adjacency = sample_graphs("seed", n_graphs, n_vertices, torch.Generator().manual_seed(seed))
    distance = bfs_distance_batch(adjacency)
    rows = []
    settings = [("attention gap", g, {"attention_gap": g}) for g in gaps]
    settings += [("squash slope / n", s, {"squash_slope": s * n_vertices}) for s in slopes_per_vertex]
    for knob, value, kwargs in settings:
        with torch.no_grad():
            predicted = bfs_transformer(n_vertices, **kwargs)(adjacency)
        error = predicted - distance
        rows.append({"knob": knob, "value": float(value), "mse": float((error ** 2).mean()),
                     "max_abs_error": float(error.abs().max())})
    return rows


def example_graph(n_vertices: int, seed: int, min_distance: int = 3) -> torch.Tensor:
    """A graph from the study's sampler whose 1 -> 2 distance is at least `min_distance` (if any is found)."""
    generator = torch.Generator().manual_seed(seed)
    adjacency = sample_graphs("seed", 256, n_vertices, generator)
    distance = bfs_distance_batch(adjacency)
    wanted = min(min_distance, n_vertices - 1)
    candidates = torch.nonzero((distance >= wanted) & (distance < n_vertices)).flatten()
    return adjacency[int(candidates[0]) if len(candidates) else 0]


def distances_from_source(adjacency: torch.Tensor) -> list[int]:
    """BFS distance from vertex 1 to every vertex of one graph, in index order (n where unreachable)."""
    return [bfs_distance(adjacency, 0, target) for target in range(adjacency.shape[0])]


@dataclass(frozen=True)
class SharpnessSummary:
    """What the constants sweep shows: the worst MSE with a small constant, the MSE at the defaults."""

    worst_mse_small_constant: float  # largest MSE with either constant at 4 or below
    mse_at_default_gap: float        # MSE with the attention gap at its default (30)


def summarize_sharpness(rows: list[dict], small: float = 4.0, default_gap: float = 30.0) -> SharpnessSummary:
    """Chapter 1's two numbers from `sharpness_sweep` rows."""
    return SharpnessSummary(
        worst_mse_small_constant=max(r["mse"] for r in rows if r["value"] <= small),
        mse_at_default_gap=min(r["mse"] for r in rows
                               if r["knob"] == "attention gap" and r["value"] == default_gap))


def seed_construction_error(n_graphs: int, seed: int, n_vertices: int = SEED_APPENDIX_N) -> tuple[float, float]:
    """(MSE, max abs error) of the study's own construction on its own sampler (chapter 1).

    The labels are BFS distances with n + 1 for unreachable, the appendix's convention.
    """
    adjacency = sample_graphs("seed", n_graphs, n_vertices, torch.Generator().manual_seed(seed))
    labels = torch.tensor([bfs_distance(g, unreachable=n_vertices + 1) for g in adjacency],
                          dtype=torch.float32)
    with torch.no_grad():
        error = seed_construction_distance(adjacency) - labels
    return float((error ** 2).mean()), float(error.abs().max())


__all__ = [
    "distances_from_source", "evaluate_on", "example_graph", "measure_exactness", "pooled_errors",
    "SEED_APPENDIX_N", "seed_construction_error", "sharpness_sweep", "SharpnessSummary", "summarize_sharpness",
]
