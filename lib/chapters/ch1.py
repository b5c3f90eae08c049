"""Parameters and measurements of chapter 1 (the hand-built BFS transformer).

`validate_parameters` turns the notebook's papermill parameters into a frozen config (or stops
with one sentence naming the bad parameter); `measure_exactness` and `sharpness_sweep` are the
chapter's two measurements of the construction against plain BFS.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from lib.book import params
from lib.bfs.graphs import SAMPLER_NAMES, bfs_distance_batch, sample_graphs
from lib.bfs.transformer import MAX_VERTICES, bfs_transformer
from lib.bfs.perturbation import PERTURBATION_MODES, RECOVERY_OPTIMIZERS, RecoverySettings

#: What the smoke run uses instead of the defaults (well under 30 seconds on 2 cores).
SMOKE = {
    "n_vertices": 5, "exactness_sizes": [4, 5], "graphs_per_sampler": 40,
    "perturbation_scales": [0.01, 1.0], "recovery_steps": 4, "recovery_batch_size": 16,
    "n_eval_graphs": 64, "sharpness_graphs": 64,
}


@dataclass(frozen=True)
class Chapter1Config:
    """Validated parameters of chapter 1."""

    smoke: bool
    seed: int
    device: torch.device
    results_dir: str
    n_vertices: int
    exactness_sizes: tuple[int, ...]
    graphs_per_sampler: int
    samplers: tuple[str, ...]
    sharpness_graphs: int
    perturbation_modes: tuple[str, ...]
    perturbation_scales: tuple[float, ...]
    recovery: RecoverySettings
    recovered_below: float
    cpu_threads: int

    @property
    def n_graphs_per_size(self) -> int:
        return self.graphs_per_sampler * len(self.samplers)


def validate_parameters(
    *, smoke, seed, device, results_dir, n_vertices, exactness_sizes, graphs_per_sampler,
    sharpness_graphs, perturbation_modes, perturbation_scales, recovery_steps,
    recovery_batch_size, recovery_learning_rate, recovery_optimizer, n_eval_graphs, recovered_below,
    cpu_threads,
) -> Chapter1Config:
    """Check every chapter-1 parameter; raise `ParameterError` naming the first bad one."""
    resolved_device = params.check_common(smoke, seed, device, results_dir)
    params.check_int("n_vertices", n_vertices, 2, MAX_VERTICES)
    params.check_int_list("exactness_sizes", exactness_sizes, 2, MAX_VERTICES)
    params.check_int("graphs_per_sampler", graphs_per_sampler, 1)
    params.check_int("sharpness_graphs", sharpness_graphs, 1)
    if not isinstance(perturbation_modes, (list, tuple)) or not perturbation_modes or any(
            m not in PERTURBATION_MODES for m in perturbation_modes):
        raise params.ParameterError(
            f"Parameter `perturbation_modes` must be a non-empty list drawn from "
            f"{', '.join(repr(m) for m in PERTURBATION_MODES)}; got {perturbation_modes!r}.")
    params.check_float_list("perturbation_scales", perturbation_scales, 0.0)
    if any(s <= 0 for s in perturbation_scales):
        raise params.ParameterError(
            f"Parameter `perturbation_scales` must hold positive numbers; got {perturbation_scales!r}.")
    params.check_int("recovery_steps", recovery_steps, 1)
    params.check_int("recovery_batch_size", recovery_batch_size, 1)
    params.check_float("recovery_learning_rate", recovery_learning_rate, 0.0, low_inclusive=False)
    params.check_choice("recovery_optimizer", recovery_optimizer, RECOVERY_OPTIMIZERS)
    params.check_int("n_eval_graphs", n_eval_graphs, 1)
    params.check_float("recovered_below", recovered_below, 0.0, low_inclusive=False)
    params.check_int("cpu_threads", cpu_threads, 1, 256)
    values = dict(
        n_vertices=n_vertices, exactness_sizes=list(exactness_sizes), graphs_per_sampler=graphs_per_sampler,
        perturbation_scales=list(perturbation_scales), recovery_steps=recovery_steps,
        recovery_batch_size=recovery_batch_size, n_eval_graphs=n_eval_graphs,
        sharpness_graphs=sharpness_graphs,
    )
    if smoke:
        values.update(SMOKE)
    recovery = RecoverySettings(
        steps=values["recovery_steps"], batch_size=values["recovery_batch_size"],
        learning_rate=float(recovery_learning_rate), optimizer=recovery_optimizer, n_eval_graphs=values["n_eval_graphs"],
        n_train_graphs=max(256, 4 * values["recovery_batch_size"]) if not smoke else 64,
        n_curve_points=min(10, values["recovery_steps"]),
    )
    return Chapter1Config(
        smoke=smoke, seed=seed, device=resolved_device, results_dir=results_dir,
        n_vertices=values["n_vertices"], exactness_sizes=tuple(values["exactness_sizes"]),
        graphs_per_sampler=values["graphs_per_sampler"], samplers=SAMPLER_NAMES,
        sharpness_graphs=values["sharpness_graphs"],
        perturbation_modes=tuple(perturbation_modes),
        perturbation_scales=tuple(float(s) for s in values["perturbation_scales"]),
        recovery=recovery, recovered_below=float(recovered_below), cpu_threads=cpu_threads,
    )


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


def distances_from_source(adjacency: torch.Tensor) -> list[float]:
    """BFS distance from vertex 0 to every vertex of one graph (n where unreachable)."""
    from lib.bfs.graphs import bfs_distance
    return [float(bfs_distance(adjacency, 0, target)) for target in range(adjacency.shape[0])]
