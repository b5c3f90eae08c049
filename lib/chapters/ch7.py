"""Parameters, models and data of chapter 7 (the learned circuit, `notebooks/07_learned_circuit.py`).

The chapter opens chapter 2's trained model (`lib.paths.finetuning.ensure_base_model`: its
checkpoint, or the same training code run here) and models of the same recipe at other depths
and with other seeds (`depth_configs`, `seed_configs`, `recipe_models`), trained with chapter 2's code in
worker processes and kept in `results_dir` (`lib.paths.recipe_models`; chapter 3 leaves the
seeds' models there) so that a rerun, or an interrupted one, picks them up, and reads them on fresh
graphs of their training distribution (`lib.paths.graph_set.GraphSet.draw`). The science lives
in `lib.paths.layer_probes` (the facts probed and the rival's features), `lib.paths.stratified_graphs`
and `lib.paths.powered_probes` (probe sets stratified by distance, probes tuned on a validation split,
the rival's margin in standard errors, one radius rule; wired up in `lib.chapters.ch7_probing`
with `lib.paths.radius_laws` and `lib.paths.capacity_lever`), `lib.paths.causal` and
`lib.paths.circuit_effects` (ablation,
patching, shortcut statistics); chapter 1's hand-built model runs on the same graphs here
(`hand_built_distances`, with `lib.paths.hand_built_comparison`: `lib.paths` does not import
`lib.bfs`), figures in
`lib.chapters.ch7_figures`, tables and checks in `lib.chapters.ch7_results`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from lib.bfs.transformer import bfs_transformer
from lib.book.params import ChapterParameters, ParameterError, at_most, parameter
from lib.book.workers import map_in_workers
from lib.paths.causal import loss_by_label
from lib.paths.finetuning import BaseModel
from lib.paths.graph_set import GraphSet
from lib.paths.hand_built_comparison import HandBuilt, hand_built_adjacency
from lib.paths.model import PathTransformer
from lib.paths.recipe_models import ensure_recipe_run, finished_recipe_run
from lib.paths.token_graphs import TokenGraphs
from lib.paths.training import PathTrainingConfig


@dataclass(frozen=True)
class Chapter7Parameters(ChapterParameters):
    """The papermill parameters of chapter 7, each with its type, bounds, help and smoke value."""

    depths: tuple[int, ...] = parameter(
        "encoder layers of the other models of chapter 2's recipe compared with it (chapter 2: 4)",
        low=1, high=16, smoke=(1,))
    probe_per_stratum: int = parameter(
        "graphs of each distance (and of each kind of unreachable target) in each of the probes' training, "
        "validation and held-out sets", low=32, high=1 << 20, smoke=at_most(60))
    probe_pool: int = parameter("most graphs drawn from the sampler to fill one probe set", low=1000,
                                high=1 << 26, smoke=at_most(100_000))
    probe_l2: float = parameter("L2 penalty of the probes (on standardised activations)", low=0.0,
                                high=10.0)
    reach_threshold: float = parameter(
        "held-out balanced accuracy (at the cut-off tuned on the validation graphs) to read a fact",
        low=0.5, high=1.0)
    auc_threshold: float = parameter("held-out ROC AUC at which a probe reads its fact", low=0.5, high=1.0)
    margin_z: float = parameter(
        "standard errors by which a layer's AUC must beat the graph-statistics probe's to read a fact", low=0.0,
        high=10.0)
    resamples: int = parameter("bootstrap resamples of the held-out graphs for the AUC difference's standard error",
                               low=10, high=100_000, smoke=at_most(40))
    depth_seeds: int = parameter("seeds of each other depth trained with chapter 2's recipe (seed 0 and the next)",
                                 low=1, high=100, smoke=1)
    probe_seeds: int = parameter(
        "models of chapter 2's recipe probed: chapter 2's and ones trained here with the next seeds", low=1,
        high=100, smoke=1)
    capacity_layers: int = parameter(
        "layers of the models of the capacity experiment (capacity 3^L; graphs of up to n_max vertices must exceed it)",
        low=1, high=4)
    capacity_pool: int = parameter("graphs drawn for each of the capacity experiment's training and test sets",
                                   low=1000, high=1 << 24, smoke=at_most(20_000))
    capacity_steps: int = parameter("training steps of each model of the capacity experiment", low=1,
                                    high=1_000_000, smoke=at_most(20))
    capacity_seeds: int = parameter("seeds trained on each side of the capacity", low=1, high=100, smoke=1)
    intervention_graphs: int = parameter("held-out graphs of the ablation and patching experiments",
                                         low=64, high=1 << 20, smoke=at_most(256))
    random_subspaces: int = parameter("random subspaces patched as the control of the probe subspace",
                                       low=1, high=1000, smoke=at_most(2))
    workers: int = parameter("processes that train the missing models of other depths and seeds at once (one "
                             "core each)", low=1, high=64)
    cpu_threads: int = parameter(
        "torch threads on the CPU (one is fastest for these small models on 2 cores)", low=1, high=256)

    def check_consistency(self) -> None:
        if len(set(self.depths)) != len(self.depths):
            raise ParameterError(f"Parameter `depths` must not repeat a depth; got {list(self.depths)}.")


@dataclass(frozen=True)
class TrainedModel:
    """One model the chapter reads: its network (eval mode), recipe and where it came from."""

    model: PathTransformer
    config: PathTrainingConfig
    source: str          # "chapter 2's checkpoint", or a source of `lib.paths.recipe_models`
    seconds: float

    @property
    def n_layers(self) -> int:
        return self.config.n_layers


def from_base(base: BaseModel) -> TrainedModel:
    """Chapter 2's model as this chapter's `TrainedModel`."""
    source = "chapter 2's checkpoint" if base.source == "checkpoint" else "trained here with chapter 2's code"
    return TrainedModel(base.model, base.config, source, base.seconds)


def depth_configs(base_config: PathTrainingConfig, depths: tuple[int, ...]) -> dict[str, PathTrainingConfig]:
    """Chapter 2's recipe at each other depth, by the name the chapter shows ("2 layers")."""
    return {f"{depth} layer{'s' if depth > 1 else ''}": dataclasses.replace(base_config, n_layers=depth)
            for depth in depths if depth != base_config.n_layers}


def depth_seed_configs(base_config: PathTrainingConfig, depths: tuple[int, ...], seeds: int
                       ) -> dict[tuple[int, int], PathTrainingConfig]:
    """Chapter 2's recipe at each other depth with `seeds` seeds (its own and the next), by
    (depth, seed)."""
    return {(config.n_layers, seed): dataclasses.replace(config, seed=seed)
            for config in depth_configs(base_config, depths).values()
            for seed in range(base_config.seed, base_config.seed + seeds)}


def seed_configs(base_config: PathTrainingConfig, count: int) -> dict[str, PathTrainingConfig]:
    """Chapter 2's recipe with the `count` seeds after its own, by name ("seed 1")."""
    seeds = range(base_config.seed + 1, base_config.seed + 1 + count)
    return {f"seed {seed}": dataclasses.replace(base_config, seed=seed) for seed in seeds}


def recipe_models(configs: dict[str, PathTrainingConfig], results_dir: str | Path, *, workers: int,
                  device: str | torch.device = "cpu") -> dict[str, TrainedModel]:
    """The models of `configs` (`depth_configs`, `seed_configs`), each kept in `results_dir` by
    `lib.paths.recipe_models` (where chapter 3 leaves its replicate seeds, the same models): the
    finished ones are loaded here, the missing ones trained, or resumed, in `workers`
    single-threaded processes at once and then loaded. A trained model's source and seconds are
    those of the worker's call."""
    def train_if_missing(config: PathTrainingConfig) -> tuple[str, float]:
        done = ensure_recipe_run(config, results_dir)
        return done.source, done.seconds

    found = {name: finished_recipe_run(config, results_dir) for name, config in configs.items()}
    missing = [name for name, run in found.items() if run is None]
    trained = dict(zip(missing, map_in_workers(train_if_missing, [configs[name] for name in missing], workers,
                                               device)))
    models = {}
    for name, config in configs.items():
        if found[name] is not None:
            run, source, seconds = found[name].run, found[name].source, found[name].seconds
        else:
            (source, seconds), run = trained[name], finished_recipe_run(config, results_dir).run
        models[name] = TrainedModel(run.model, config, source, seconds)
    return models


def model_rows(models: dict[str, TrainedModel], graphs: GraphSet, predictions: dict[str, torch.Tensor]) -> list[dict]:
    """Per model: depth, where it came from, seconds, MSE on the held-out graphs overall and by label."""
    labels = tuple(sorted(int(v) for v in graphs.labels.unique()))
    rows = []
    for name, model in models.items():
        prediction = predictions[name]
        rows.append({"model": name, "n_layers": model.n_layers, "source": model.source, "seconds": model.seconds,
                     "mse": float(((prediction - graphs.labels) ** 2).mean()),
                     "mse_by_label": dict(zip(labels, loss_by_label(prediction, graphs.labels, labels).tolist()))})
    return rows


@torch.no_grad()
def hand_built_distances(graphs: TokenGraphs, n_vertices: int) -> HandBuilt:
    """Run chapter 1's construction for `n_vertices` vertices on the graphs."""
    model = bfs_transformer(n_vertices)
    trace = model.run(hand_built_adjacency(graphs, n_vertices), keep_trace=True)
    vertex_one, t_bit = 1, model.layout.reach.start + 1   # token of vertex 1; reach bit of vertex 2
    return HandBuilt(trace["distance"], trace["hidden"][1:, :, vertex_one, t_bit])


__all__ = [
    "Chapter7Parameters", "depth_configs", "depth_seed_configs", "from_base", "GraphSet", "hand_built_distances", "model_rows",
    "recipe_models", "seed_configs", "TrainedModel",
]
