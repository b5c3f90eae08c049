"""Parameters and glue of chapter 8 (representations): which irreps each seed of the ambiguous
pair learns, and whether that decides the group it groks.

The notebook `notebooks/08_representations.py` validates `Chapter8Parameters`, then:

* `seeds_of_the_pair`: chapter 4's S4 sweep without the unembedding bias
  (`lib.grokking.study_sweep.load_s4_sweep`: loaded, or trained with chapter 4's code when
  missing) and `extra_instances` further seeds of chapter 4's seed stream trained here, joined
  into one sweep (`join_sweeps`), so that the rare A4 x Z2 grokkers are more than a handful;
* `single_group_runs`: the known answer, the same model and schedule trained on the whole table of
  one group alone (`lib.grokking.sweeps.run_group_sweep`);
* `retrain_chosen`: every grokker and a sample of the seeds that grokked neither
  (`lib.grokking.study_sweep.choose_seeds`) retrained with dense snapshots
  (`lib.grokking.perturbation.retrain_with_snapshots`), for the profile along training.

The readout itself lives in `lib.grokking` (`characters`, `irrep_readout`, `coset_readout`,
`pair_irreps`, `irrep_trajectory`); tables and checks in `lib.chapters.ch8_results`, figures in
`lib.chapters.ch8_figures`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import torch

from lib.book.params import at_most, parameter
from lib.book.seed_streams import stream_seeds
from lib.chapters.sweep_parameters import SweepChapterParameters
from lib.grokking.pairs import make_pair
from lib.grokking.perturbation import retrain_with_snapshots
from lib.grokking.study import S4_PAIR
from lib.grokking.study_sweep import S4Sweep, choose_seeds, load_s4_sweep
from lib.grokking.sweeps import run_group_sweep, run_pair_sweep
from lib.grokking.training import SweepResult, snapshot_epochs

#: The seed stream of the extra seeds: chapter 4's, after the seeds its sweep trained.
EXTRA_STREAM = "sweep"
#: The seed stream of the models trained on one group alone: the one reserved for models trained
#: on a part of S4's table (chapter 6 trains its Jacobian runs from it).
SINGLE_GROUP_STREAM = "ch5_iid"


@dataclass(frozen=True)
class Chapter8Parameters(SweepChapterParameters):
    """The papermill parameters of chapter 8, each with its type, bounds, help and smoke value."""

    fallback_instances: int = SweepChapterParameters.shared("fallback_instances")
    fallback_epochs: int = SweepChapterParameters.shared("fallback_epochs")
    grok_threshold: float = SweepChapterParameters.shared("grok_threshold")
    extra_instances: int = parameter(
        "further seeds of chapter 4's seed stream, after the sweep's, trained here so that the rare A4 x Z2 "
        "grokkers are more than a handful (0: none)", low=0, high=40_000, smoke=at_most(8))
    neither_sample: int = parameter("seeds that grokked neither group, drawn at random, retrained with "
                                    "snapshots beside every grokker", low=2, high=100_000, smoke=at_most(6))
    snapshot_every: int = parameter("epochs between the snapshots of the retrained seeds", low=1,
                                    smoke=at_most(20))
    single_group_seeds: int = parameter("seeds trained on the whole table of one group alone, for each group "
                                        "(the known answer)", low=1, high=10_000, smoke=at_most(2))
    settle_tolerance: float = parameter(
        "total variation distance from its final irrep profile within which a seed's profile counts as settled",
        low=0.0, high=1.0, low_inclusive=False)
    moved_accuracy: float = parameter(
        "accuracy on the table of its group at which a grokking seed has left the plateau of memorizing "
        "(the intersection alone gives 336 of 576 pairs, 0.583)", low=0.59, high=1.0)
    coset_threshold: float = parameter(
        "Stander et al.'s within-coset variance ratio at or below which a neuron counts as a coset neuron",
        low=0.0, high=10.0, low_inclusive=False)
    predict_folds: int = parameter("folds of the held-out predictions (chapter 6's)", low=2, high=1000)
    workers: int = parameter("single-threaded worker processes training the sweeps on a CPU", low=1, high=256)


@dataclass
class PairSeeds:
    """The seeds this chapter reads: chapter 4's sweep and the extra seeds, joined.

    Attributes:
        sweep: chapter 4's sweep as loaded or trained (`S4Sweep`).
        joined: the sweep followed by the extra seeds, one `SweepResult`.
        extra_seconds: time spent training the extra seeds.
    """

    sweep: S4Sweep
    joined: SweepResult
    extra_seconds: float

    @property
    def n_sweep(self) -> int:
        """Seeds of chapter 4's sweep."""
        return self.sweep.result.n_instances

    @property
    def n_extra(self) -> int:
        """Seeds trained here beyond it."""
        return self.joined.n_instances - self.n_sweep


def join_sweeps(first: SweepResult, second: SweepResult) -> SweepResult:
    """One sweep of `first`'s seeds followed by `second`'s (same model, schedule and logging):
    seeds, metrics, final parameters and the checkpoints both have, concatenated."""
    if first.model_config != second.model_config or not torch.equal(first.log_epochs, second.log_epochs):
        raise ValueError("only sweeps of one model logged at the same epochs can be joined.")
    shared = sorted(set(first.checkpoints) & set(second.checkpoints))
    return dataclasses.replace(
        first, seeds=torch.cat([first.seeds, second.seeds]),
        metrics={k: torch.cat([v, second.metrics[k]], dim=1) for k, v in first.metrics.items()},
        checkpoints={e: {k: torch.cat([v, second.checkpoints[e][k]]) for k, v in first.checkpoints[e].items()}
                     for e in shared},
        final_params={k: torch.cat([v, second.final_params[k]]) for k, v in first.final_params.items()},
        elapsed_s=first.elapsed_s + second.elapsed_s)


def seeds_of_the_pair(config: Chapter8Parameters, progress: bool = True) -> PairSeeds:
    """Chapter 4's S4 sweep without the bias (`load_s4_sweep`) and `extra_instances` further seeds
    of its stream trained here with the same model and schedule (no snapshots), joined."""
    sweep = load_s4_sweep(config, progress=progress)
    result = sweep.result
    if config.extra_instances == 0:
        return PairSeeds(sweep, result, 0.0)
    started = time.perf_counter()
    seeds = stream_seeds(EXTRA_STREAM, config.seed, result.n_instances + config.extra_instances)[result.n_instances:]
    schedule = dataclasses.replace(result.training_config, checkpoint_epochs=(), workers=config.workers)
    extra = run_pair_sweep(make_pair(S4_PAIR), seeds, result.model_config, schedule, device=config.device,
                           progress=progress)
    plain = dataclasses.replace(result, checkpoints={})
    return PairSeeds(sweep, join_sweeps(plain, extra), time.perf_counter() - started)


def single_group_runs(config: Chapter8Parameters, sweep: SweepResult, progress: bool = True) -> dict[str, SweepResult]:
    """The known answer: `single_group_seeds` seeds of `SINGLE_GROUP_STREAM` with the sweep's model
    and schedule, trained on the whole table of each group of the pair alone, by group name."""
    pair = make_pair(S4_PAIR)
    seeds = stream_seeds(SINGLE_GROUP_STREAM, config.seed, config.single_group_seeds)
    schedule = dataclasses.replace(sweep.training_config, checkpoint_epochs=(0,), workers=config.workers)
    return {group.name: run_group_sweep(group, seeds, sweep.model_config, schedule, train_fraction=1.0,
                                        generator=torch.Generator().manual_seed(config.seed), device=config.device,
                                        progress=progress)
            for group in (pair.g1, pair.g2)}


def retrain_chosen(config: Chapter8Parameters, joined: SweepResult, groups: torch.Tensor,
                   generator: torch.Generator) -> tuple[torch.Tensor, SweepResult]:
    """Every grokker of `joined` and `neither_sample` seeds that grokked neither (`choose_seeds`),
    retrained from their initial weights with a snapshot every `snapshot_every` epochs; returns
    (their indices in `joined`, the retrained sweep)."""
    chosen = choose_seeds(groups, config.neither_sample, generator)
    marks = snapshot_epochs(joined.training_config.epochs, config.snapshot_every)
    return chosen, retrain_with_snapshots(joined, chosen, marks, workers=config.workers)


__all__ = ["Chapter8Parameters", "EXTRA_STREAM", "PairSeeds", "SINGLE_GROUP_STREAM", "join_sweeps",
           "retrain_chosen", "seeds_of_the_pair", "single_group_runs"]
