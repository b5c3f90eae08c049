"""Parameters and measurements of chapter 1 (the hand-built BFS transformer).

`Chapter1Parameters` declares the notebook's papermill parameters (validated by
`lib.book.params.validate_parameters`); `measure_exactness` and `sharpness_sweep` are the
chapter's two measurements of the construction against plain BFS; the summaries and tables
below turn them and the perturbation study into the numbers the prose quotes (verdicts count
several draws per scale, and a draw that changed nothing is "no effect", never a recovery);
`PerturbationRerun` is the live slider's callback. The study's own protocol is summarized in
`lib.chapters.ch1_study`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from lib.bfs.graphs import SAMPLER_NAMES, bfs_distance, bfs_distance_batch, sample_graphs
from lib.bfs.seed_construction import seed_construction_distance
from lib.bfs.perturbation import (
    PERTURBATION_MODES, RECOVERY_OPTIMIZERS, GraphSet, RecoverySettings, perturb_and_recover,
)
from lib.bfs.study_damage import STUDY_BATCH_SIZE
from lib.bfs.transformer import MAX_VERTICES, bfs_transformer
from lib.book.params import ChapterParameters, parameter
from lib.book.tables import markdown_table


#: Graph size of the study's appendix code.
SEED_APPENDIX_N = 8


@dataclass(frozen=True)
class Chapter1Parameters(ChapterParameters):
    """The papermill parameters of chapter 1, each with its type, bounds, help and smoke value."""

    n_vertices: int = parameter(
        "graph size of the model used for figures and the perturbation study (2..32)",
        low=2, high=MAX_VERTICES, smoke=5)
    exactness_sizes: tuple[int, ...] = parameter(
        "graph sizes at which the model is checked against BFS", low=2, high=MAX_VERTICES,
        smoke=(4, 5))
    graphs_per_sampler: int = parameter(
        "random graphs per (size, sampler); 5 samplers -> 10,000 per size", low=1, smoke=40)
    sharpness_graphs: int = parameter(
        "graphs used to measure error against the construction's constants", low=1, smoke=64)
    perturbation_modes: tuple[str, ...] = parameter(
        '"replace": one Q/K/V matrix overwritten by scale x N(0, 1); "gaussian": all weights + relative noise',
        choices=PERTURBATION_MODES)
    perturbation_scales: tuple[float, ...] = parameter(
        "noise scales of the perturbation study", low=0.0, low_inclusive=False, smoke=(0.01, 1.0))
    draws_per_scale: int = parameter(
        "random draws of the damage at each (mode, scale); the verdicts count them", low=1, high=100, smoke=1)
    recovery_steps: int = parameter("optimizer steps of retraining after each perturbation",
                                    low=1, smoke=4)
    recovery_batch_size: int = parameter("graphs per retraining step", low=1, smoke=16)
    recovery_learning_rate: float = parameter("learning rate of retraining", low=0.0,
                                              low_inclusive=False)
    recovery_optimizer: str = parameter(
        '"sgd" or "adam" (the study used Adam at learning rate 1e-6)', choices=RECOVERY_OPTIMIZERS)
    n_eval_graphs: int = parameter("held-out graphs on which losses before/after are measured",
                                   low=1, smoke=64)
    cpu_threads: int = parameter(
        "torch threads on the CPU (one is fastest for these small models on 2 cores)",
        low=1, high=256)
    workers: int = parameter(
        "worker processes that retrain damaged copies at once on a CPU (one per core)", low=1, high=256)
    recovered_below: float = parameter(
        "a run counts as recovered if its held-out MSE ends below this (about 1% of the label variance)",
        low=0.0, low_inclusive=False)
    damage_noise_draws: int = parameter(
        "noise draws per matrix of the study's damage (6 lists x n matrices -> N(0, 1)): the distribution of the MSE right after it",
        low=1, high=1000, smoke=1)
    study_draws: int = parameter(
        "draws retrained on both constructions: those whose MSE right after the damage lies nearest the study's 0.403",
        low=1, high=lambda p: 6 * p.n_vertices * p.damage_noise_draws, smoke=2)
    study_steps: int = parameter(
        "Adam steps (lr 1e-6, a fresh batch of 512 graphs each) after each retrained draw (the study: 5,000; 0.1-0.3 s each here)",
        low=1, smoke=5)

    @property
    def study_batch_size(self) -> int:
        """Graphs per retraining step of the study's protocol: the study's 512 (16 in a smoke run)."""
        return 16 if self.smoke else STUDY_BATCH_SIZE

    @property
    def scales_with_draws(self) -> list[float]:
        """Every perturbation scale, repeated `draws_per_scale` times (one perturb-and-recover run each)."""
        return [scale for scale in self.perturbation_scales for _ in range(self.draws_per_scale)]

    @property
    def samplers(self) -> tuple[str, ...]:
        """Every graph sampler of `lib.bfs.graphs`: exactness is checked on all of them."""
        return SAMPLER_NAMES

    @property
    def n_graphs_per_size(self) -> int:
        return self.graphs_per_sampler * len(self.samplers)

    @property
    def recovery(self) -> RecoverySettings:
        """Retraining after each perturbation, from the recovery parameters."""
        return RecoverySettings(
            steps=self.recovery_steps, batch_size=self.recovery_batch_size,
            learning_rate=self.recovery_learning_rate, optimizer=self.recovery_optimizer,
            n_eval_graphs=self.n_eval_graphs,
            n_train_graphs=64 if self.smoke else max(256, 4 * self.recovery_batch_size),
            n_curve_points=min(10, self.recovery_steps))


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


def exactness_table(records: list[dict]) -> str:
    """Markdown table of `measure_exactness` records, one row per (size, sampler)."""
    return markdown_table(
        ["n", "sampler", "graphs", "MSE", "max abs error", "mean finite distance", "unreachable"],
        [[r["n_vertices"], r["sampler"], r["n_graphs"], r["mse"], r["max_abs_error"],
          r["mean_distance"], r["fraction_unreachable"]] for r in records])


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


def mark_effect(records: list[dict], tolerance: float = 1e-6) -> list[dict]:
    """Add `damage_had_effect` to each perturb-and-recover record: the damage moved the held-out
    MSE by more than `tolerance`. A draw without effect (it hit a matrix these graphs never use)
    is "no effect", never a recovery. Returns `records`."""
    for record in records:
        record["damage_had_effect"] = abs(record["loss_before"] - record["loss_intact"]) > tolerance
    return records


@dataclass(frozen=True)
class RecoveryVerdict:
    """What the draws of one (damage mode, scale) did.

    Each draw is one of: "no effect" (the damage left the held-out MSE unchanged), "not broken"
    (it changed the MSE but left it below the threshold already, so there was nothing to
    recover from), "recovered" (above the threshold after the damage, below it after
    retraining) or "not recovered".
    """

    mode: str
    scale: float
    draws: int
    no_effect: int
    not_broken: int
    recovered: int

    @property
    def broken(self) -> int:
        return self.draws - self.no_effect - self.not_broken

    @property
    def not_recovered(self) -> int:
        return self.broken - self.recovered


def draw_status(record: dict, recovered_below: float) -> str:
    """"no effect", "not broken", "recovered" or "not recovered" (see `RecoveryVerdict`)."""
    if not record["damage_had_effect"]:
        return "no effect"
    if record["loss_before"] < recovered_below:
        return "not broken"
    return "recovered" if record["loss_after"] < recovered_below else "not recovered"


def mark_recovered(records: list[dict], recovered_below: float) -> list[RecoveryVerdict]:
    """Add `status` (`draw_status`) and `recovered` (status "recovered") to each record, marking
    `damage_had_effect` first where it is missing.

    Returns one verdict per (mode, scale), modes in the order they first appear, scales sorted.
    """
    for record in records:
        if "damage_had_effect" not in record:
            mark_effect([record])
        record["status"] = draw_status(record, recovered_below)
        record["recovered"] = record["status"] == "recovered"
    verdicts = []
    for mode in dict.fromkeys(r["mode"] for r in records):
        for scale in sorted({r["scale"] for r in records if r["mode"] == mode}):
            runs = [r for r in records if r["mode"] == mode and r["scale"] == scale]
            verdicts.append(RecoveryVerdict(mode, scale, len(runs), sum(r["status"] == "no effect" for r in runs),
                                            sum(r["status"] == "not broken" for r in runs),
                                            sum(r["recovered"] for r in runs)))
    return verdicts


def verdict_table(verdicts: list[RecoveryVerdict]) -> str:
    """Markdown table, one row per (damage mode, scale): how many draws had no effect, were not
    broken, were broken, and how many broken draws retraining brought back below the threshold."""
    return markdown_table(
        ["damage", "scale", "draws", "no effect", "not broken", "broken", "recovered"],
        [[v.mode, v.scale, v.draws, v.no_effect, v.not_broken, v.broken, v.recovered] for v in verdicts],
        formats={1: "{:g}".format})


def scientific_format(value: float, decimals: int = 2) -> str:
    """The format spec that shows `value` as `lib.book.tables.scientific` does: `decimals` digits
    in scientific notation, an exact zero as "0" (for `record`)."""
    return "g" if value == 0 else f".{decimals}e"


def perturbation_table(records: list[dict]) -> str:
    """Markdown table of perturb-and-recover records (after `mark_recovered`).

    The last column is the draw's status: no effect, not broken, recovered or not recovered.
    """
    return markdown_table(
        ["damage", "scale", "what was hit", "MSE after damage", "MSE after retraining", "status"],
        [[r["mode"], r["scale"], r["what"], r["loss_before"], r["loss_after"], r["status"]] for r in records],
        formats={1: "{:g}".format})  # a scale is a setting (0.01), not a measured number


class PerturbationRerun:
    """The live slider's callback: perturb-and-recover at one scale on the chapter's fixed graphs.

    The graph pool is drawn once, from the same seed as `perturbation_study`'s, so a rerun at a
    precomputed scale retrains on the same graphs as the static figure.
    """

    def __init__(self, model, config: Chapter1Parameters, seed: int):
        pool = torch.Generator().manual_seed(seed)
        self.train = GraphSet.sample(config.recovery.n_train_graphs, config.n_vertices, pool)
        self.held_out = GraphSet.sample(config.recovery.n_eval_graphs, config.n_vertices, pool)
        self.model, self.settings = model, config.recovery

    def __call__(self, log10_scale: float, mode: str, seed: int) -> dict:
        """The record of one damaged-and-retrained copy at scale 10**log10_scale."""
        return perturb_and_recover(self.model, mode, 10 ** log10_scale, self.train, self.held_out,
                                   self.settings, seed)


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
