"""Parameters, models and data of chapter 7 (the learned circuit, `notebooks/07_learned_circuit.py`).

The chapter opens chapter 2's trained model (`lib.paths.finetuning.ensure_base_model`: its
checkpoint, or the same training code run here) and models of the same recipe at other depths
(`depth_model`, trained with chapter 2's code and kept in `results_dir` so that a rerun, or an
interrupted one, picks them up), and reads them on fresh graphs of their training distribution
(`lib.paths.graph_set.GraphSet.draw`). The science lives in `lib.paths.layer_probes` (what each
layer knows) and `lib.paths.causal` (ablation, patching, shortcut statistics); the hand-built
model of chapter 1 on the same graphs in `lib.chapters.ch7_hand_built`, figures in
`lib.chapters.ch7_figures`, sentences and the results JSON in `lib.chapters.ch7_results`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from lib.book.params import at_most, ChapterParameters, parameter, ParameterError
from lib.paths.finetuning import BaseModel
from lib.paths.graph_set import GraphSet
from lib.paths.model import PathTransformer
from lib.paths.training import PathTrainingConfig, load_training_run, start_training, train


@dataclass(frozen=True)
class Chapter7Parameters(ChapterParameters):
    """The papermill parameters of chapter 7, each with its type, bounds, help and smoke value."""

    depths: tuple[int, ...] = parameter(
        "encoder layers of the other models of chapter 2's recipe compared with it (chapter 2: 4)",
        low=1, high=16, smoke=(1,))
    probe_graphs: int = parameter("fresh graphs the probes are trained on", low=64, high=1 << 20,
                                  smoke=at_most(256))
    probe_test_graphs: int = parameter("held-out graphs the probes are scored on", low=64,
                                       high=1 << 20, smoke=at_most(256))
    probe_l2: float = parameter("L2 penalty of the probes (on standardised activations)", low=0.0,
                                high=10.0)
    reach_threshold: float = parameter(
        "held-out balanced accuracy at which a probe counts as reading its fact", low=0.5, high=1.0)
    intervention_graphs: int = parameter("held-out graphs of the ablation and patching experiments",
                                         low=64, high=1 << 20, smoke=at_most(256))
    random_subspaces: int = parameter("random subspaces patched as the control of the probe subspace",
                                       low=1, high=1000, smoke=at_most(2))
    cpu_threads: int = parameter(
        "torch threads on the CPU (one is fastest for these small models on 2 cores)", low=1, high=256)

    def check_consistency(self) -> None:
        if len(set(self.depths)) != len(self.depths):
            raise ParameterError(f"Parameter `depths` must not repeat a depth; got {list(self.depths)}.")


#: Where the models of other depths are kept between runs, by number of layers.
DEPTH_CHECKPOINT = "07_depth_{layers}_layers.pt"


@dataclass(frozen=True)
class TrainedModel:
    """One model the chapter reads: its network (eval mode), recipe and where it came from."""

    model: PathTransformer
    config: PathTrainingConfig
    source: str          # "chapter 2's checkpoint", "trained here", "this chapter's checkpoint"
    seconds: float

    @property
    def n_layers(self) -> int:
        return self.config.n_layers


def from_base(base: BaseModel) -> TrainedModel:
    """Chapter 2's model as this chapter's `TrainedModel`."""
    source = "chapter 2's checkpoint" if base.source == "checkpoint" else "trained here with chapter 2's code"
    return TrainedModel(base.model, base.config, source, base.seconds)


def _same_recipe(saved: PathTrainingConfig, wanted: PathTrainingConfig) -> bool:
    return dataclasses.replace(saved, device="cpu") == dataclasses.replace(wanted, device="cpu")


def depth_model(base_config: PathTrainingConfig, n_layers: int, results_dir: str | Path, *,
                checkpoint_every: int = 250, progress: bool = True) -> TrainedModel:
    """Chapter 2's recipe with `n_layers` layers: loaded from `results_dir` when a finished run
    of exactly this recipe is there, continued when an interrupted one is, else trained (with a
    checkpoint every `checkpoint_every` steps, written atomically)."""
    started = time.perf_counter()
    config = dataclasses.replace(base_config, n_layers=n_layers)
    path = Path(results_dir) / DEPTH_CHECKPOINT.format(layers=n_layers)
    source = "trained here with chapter 2's code"
    run = None
    if path.exists():
        saved = load_training_run(path, device=config.device)
        if _same_recipe(saved.config, config):
            run = saved
            source = "this chapter's checkpoint" if saved.step >= config.total_steps else \
                f"resumed from this chapter's checkpoint at step {saved.step}"
    if run is None:
        run = start_training(config)
    if run.step < config.total_steps:
        Path(results_dir).mkdir(parents=True, exist_ok=True)
        run = train(run, checkpoint_path=path, checkpoint_every=checkpoint_every, progress=progress)
    run.model.eval()
    return TrainedModel(run.model, config, source, time.perf_counter() - started)


__all__ = ["DEPTH_CHECKPOINT", "Chapter7Parameters", "GraphSet", "TrainedModel", "depth_model", "from_base"]
