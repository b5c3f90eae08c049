"""Parameters and glue of chapter 6 (determination): when does a seed decide which group it groks?

The notebook `notebooks/06_determination.py` validates `Chapter6Parameters`, gets chapter 4's S4
sweep without the unembedding bias (`lib.grokking.study_sweep.load_s4_sweep`: loaded, or trained
with the same code when missing) and runs the chapter's studies, whose science lives in
`lib.grokking`:

* `choose_per_outcome` picks the seeds of each outcome; `lib.grokking.perturbation` retrains
  them with dense snapshots and perturbs them (the authors' noise shaped like the
  initialization, and the book's N(0, s^2) on every entry);
* `lib.grokking.total_variation`: chosen seeds retrained with the same code and seeds, and the
  argmax flips of their logits late in training, by the authors' definition and the book's;
* `transplant_both_ways`: the authors' transplant protocol in both directions, whole table
  first, then the intersection (`lib.grokking.transplant_both_ways`);
* `flip_study`: the argmax flips of chosen seeds of a sweep (`lib.grokking.total_variation`);
* `jacobian_run`: the whole training Jacobian composed over segments (`lib.grokking.training_jacobian`)
  of a small MLP on an iid part of S4's table;
* `sketched_jacobian_run`: the authors' model on that part (P = 4,376): seeds screened, the
  earliest grokker's Jacobian read through products, finite checks along its most stretched
  direction, and the largest singular value of a few more (`lib.grokking.authors_scale_jacobian`;
  what it shows: `lib.grokking.jacobian_claims`);
* `lib.grokking.early_prediction`: how well the final outcome of every seed of the sweep can be
  read from its logged metrics at each epoch.

Tables and the results JSON are built in `lib.chapters.ch6_results`, figures in
`lib.chapters.ch6_figures`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.book.params import ParameterError, at_most, parameter
from lib.book.seed_streams import stream_seeds
from lib.chapters.sweep_parameters import SweepChapterParameters
from lib.grokking.authors_scale_jacobian import SketchRun, SketchSettings, authors_scale_jacobian
from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import make_pair
from lib.grokking.perturbation import NOISE_SHAPES
from lib.grokking.study import S4_PAIR
from lib.grokking.total_variation import TotalVariationStudy, total_variation_study
from lib.grokking.training import SweepConfig, SweepResult
from lib.grokking.training_jacobian import JacobianStudy, jacobian_study
from lib.grokking.transplant_both_ways import TransplantStudy, transplant_in_both_directions

#: The seeds this chapter transplants, by the group they learn first (`lib.book.seed_streams`).
TRANSPLANT_STREAMS = {"g1": "ch6_transplant_g1", "g2": "ch6_transplant_g2"}
#: The seeds screened for the training Jacobian at the authors' scale: models trained on an iid part
#: of S4's table, the stream chapter 5 reserved for that and no longer uses.
JACOBIAN_STREAM = "ch5_iid"



@dataclass(frozen=True)
class Chapter6Parameters(SweepChapterParameters):
    """The papermill parameters of chapter 6, each with its type, bounds, help and smoke value."""

    fallback_instances: int = SweepChapterParameters.shared("fallback_instances")
    fallback_epochs: int = SweepChapterParameters.shared("fallback_epochs")
    grok_threshold: float = SweepChapterParameters.shared("grok_threshold")
    perturb_per_outcome: int = parameter("seeds of each outcome whose weights are perturbed", low=1,
                                         high=1000, smoke=at_most(1))
    perturb_every: int = parameter("epochs between the checkpoints at which they are perturbed",
                                   low=1, smoke=at_most(20))
    log2_scales: tuple[int, ...] = parameter(
        "noise scales as powers of two, k in 2^k (the study: -25 .. 5)", low=-60, high=10,
        smoke=(-20, 0))
    noise_shapes: tuple[str, ...] = parameter(
        'noise shapes: "init" (the authors\': N(0, s^2) on the embeddings, uniform with bound '
        's/sqrt(fan_in) on the weights and the bias; the figures use it) and "gaussian" (N(0, s^2) '
        'on every entry)', choices=NOISE_SHAPES)
    copies: int = parameter("noisy copies per seed, checkpoint, scale and noise shape", low=1, high=10_000,
                            smoke=at_most(2))
    decision_log2_scale: int = parameter(
        "decision epoch: perturbations up to 2^k no longer change the outcome", low=-60, high=10)
    tv_per_outcome: int = parameter("seeds of each outcome whose argmax flips are measured",
                                    low=1, high=100_000, smoke=at_most(2))
    tv_epochs: int = parameter("epochs those seeds are trained for (the study: 3,000)", low=1,
                               high=1_000_000, smoke=at_most(40))
    tv_window: int = parameter("the book's late window of the total variation, its last epochs", low=1,
                               smoke=at_most(20))
    tv_every: int = parameter("epochs between the snapshots inside that window", low=1,
                              smoke=at_most(10))
    flip_every: int = parameter("the authors' definition: epochs between snapshots (the study: 5)", low=1,
                                smoke=at_most(2))
    flip_intervals: int = parameter("the authors' definition: the last intervals averaged (the study: 100)",
                                    low=1, smoke=at_most(5))
    transplant_seeds: int = parameter("seeds transplanted in each direction", low=1, high=100_000,
                                      smoke=at_most(4))
    transplant_train_fraction: float = parameter(
        "share of the group's table they first train on (the authors: 1, the whole table)", low=0.0,
        high=1.0, low_inclusive=False)
    transplant_first_epochs: int = parameter("epochs on the group's table (the authors' default: 2,000)",
                                             low=1, high=1_000_000, smoke=at_most(40))
    transplant_second_epochs: int = parameter("epochs on the intersection after the transplant (the authors: 2,000)",
                                              low=1, high=1_000_000, smoke=at_most(40))
    jacobian_dim: int = parameter("embedding and hidden width (d and h) of the MLP whose training Jacobian "
                                  "is computed (the authors: 32)", low=1, high=64, smoke=at_most(2))
    jacobian_steps: int = parameter("full-batch Adam steps of its training (the authors: 4,000)", low=1,
                                    high=100_000, smoke=at_most(6))
    jacobian_segment: int = parameter("steps per segment of the composed Jacobian (the authors: 100)", low=1,
                                      high=100_000, smoke=at_most(3))
    jacobian_weight_decay: float = parameter("weight decay of that training (the authors: 2e-4)", low=0.0,
                                             high=1.0)
    jacobian_train_fraction: float = parameter(
        "share of S4's table it trains on, drawn at random (the authors: 0.584)", low=0.0, high=1.0,
        low_inclusive=False)
    sketch_dim: int = parameter("width (embedding and hidden alike) of the MLP whose training Jacobian is read through products "
                                "(the authors: 32)", low=1, high=512, smoke=at_most(2))
    sketch_steps: int = parameter("its full-batch Adam steps (the authors: 4,000)", low=1, high=100_000,
                                  smoke=at_most(6))
    sketch_segment: int = parameter("steps per segment of its composition (the authors: 100)", low=1,
                                    high=100_000, smoke=at_most(3))
    sketch_directions: int = parameter("random directions pushed through its training: the randomized SVD "
                                       "reads the largest this many singular values", low=1, high=100_000,
                                       smoke=at_most(4))
    sketch_candidates: int = parameter("seeds screened for it; the one that groks earliest is read", low=1,
                                       high=1000, smoke=at_most(2))
    sketch_spread_seeds: int = parameter("further grokking seeds whose largest singular value is followed too "
                                         "(forward only, float64)", low=0, high=1000, smoke=at_most(1))
    sketch_spread_directions: int = parameter("directions pushed through the training of each of those", low=1,
                                              high=100_000, smoke=at_most(2))
    sketch_adam_eps: tuple[float, ...] = parameter(
        "further values of Adam's eps at which the same seeds' largest singular value is followed (the "
        "authors: torch's 1e-8, the chapter's schedule)", low=1e-12, high=1e-2, smoke=lambda values: values[:1])
    sketch_overflow_steps: int = parameter(
        "steps of a float64 and a float32 run of the read seed, past the authors' epoch 3,100 where their "
        "norm nears float32's largest number (0: none)", low=0, high=100_000, smoke=at_most(6))
    predict_every: int = parameter("epochs between the epochs at which the outcome is predicted",
                                   low=1, smoke=at_most(20))
    predict_folds: int = parameter("folds of the held-out predictions", low=2, high=1000)
    cpu_threads: int = parameter("torch threads of this process on the CPU", low=1, high=256)
    workers: int = parameter("single-threaded worker processes training the perturbed copies, the "
                             "retrained seeds and the runs read through products, on a CPU", low=1, high=256)

    def check_consistency(self) -> None:
        """Lists in increasing order, a decision scale on the grid of scales, distinct noise shapes."""
        super().check_consistency()
        if list(self.log2_scales) != sorted(set(self.log2_scales)):
            raise ParameterError(f"Parameter `log2_scales` must be increasing without repeats; "
                                 f"got {list(self.log2_scales)!r}.")
        if self.decision_log2_scale < self.log2_scales[0]:
            raise ParameterError(f"Parameter `decision_log2_scale` must be at least the smallest of "
                                 f"`log2_scales` ({self.log2_scales[0]}); got {self.decision_log2_scale}.")
        if self.sketch_segment > self.sketch_steps:
            raise ParameterError(f"Parameter `sketch_segment` must be at most `sketch_steps` ({self.sketch_steps}); "
                                 f"got {self.sketch_segment}.")
        if len(set(self.noise_shapes)) != len(self.noise_shapes):
            raise ParameterError(f"Parameter `noise_shapes` must not repeat a shape; got {list(self.noise_shapes)!r}.")

    @property
    def figure_noise_shape(self) -> str:
        """The noise shape of the figures compared with the study: the authors' when it is run."""
        return "init" if "init" in self.noise_shapes else self.noise_shapes[0]


# --- Seeds ----------------------------------------------------------------------------------


def choose_per_outcome(groups: torch.Tensor, per_outcome: int, generator: torch.Generator) -> torch.Tensor:
    """Up to `per_outcome` seeds of each outcome group (`lib.grokking.study_sweep.outcome_groups`),
    drawn at random, as sweep indices ordered by group and then by index."""
    chosen = []
    for code in groups.unique().tolist():
        members = (groups == code).nonzero().squeeze(1)
        chosen.append(members[torch.randperm(len(members), generator=generator)[:per_outcome]].sort().values)
    return torch.cat(chosen)


# --- Transplant ---------------------------------------------------------------------------





def transplant_both_ways(config: Chapter6Parameters, generator: torch.Generator,
                         progress: bool = True) -> TransplantStudy:
    """The authors' transplant protocol in both directions (`lib.grokking.transplant_both_ways`):
    `transplant_seeds` seeds of each group's stream (`TRANSPLANT_STREAMS`) trained on a random
    `transplant_train_fraction` of the group's table for `transplant_first_epochs`, then on the
    pair's intersection for `transplant_second_epochs`."""
    seeds = {group: stream_seeds(stream, config.seed, config.transplant_seeds)
             for group, stream in TRANSPLANT_STREAMS.items()}
    return transplant_in_both_directions(seeds, config.transplant_first_epochs, config.transplant_second_epochs,
                                         config.transplant_train_fraction, generator, workers=config.workers,
                                         progress=progress)


def flip_study(config: Chapter6Parameters, sweep: SweepResult, chosen: torch.Tensor) -> TotalVariationStudy:
    """The argmax flips of the seeds `chosen` of `sweep`, retrained for `tv_epochs` (at least the
    sweep's epochs), by the book's definition (the last `tv_window` epochs, every `tv_every`) and
    the authors' (every `flip_every` epochs over the last `flip_intervals` intervals), each
    clipped to the run's length."""
    epochs = max(config.tv_epochs, sweep.training_config.epochs)
    window = min(config.tv_window, epochs)
    return total_variation_study(sweep, chosen, epochs, window, min(config.tv_every, window), config.grok_threshold,
                                 config.workers, authors_every=config.flip_every,
                                 authors_intervals=min(config.flip_intervals, epochs // config.flip_every))


# --- The training Jacobian ----------------------------------------------------------------------


def jacobian_run(config: Chapter6Parameters, schedule: SweepConfig) -> JacobianStudy:
    """The chapter's training Jacobian: seed `seed`'s MLP of width `jacobian_dim` with the
    unembedding bias, trained on a random `jacobian_train_fraction` of S4's table with
    `schedule`'s Adam settings and `jacobian_weight_decay`, composed over segments of
    `jacobian_segment` steps, in float64 and float32, on the chapter's device."""
    pair = make_pair(S4_PAIR)
    model = MLPConfig(pair.n_elements, config.jacobian_dim, config.jacobian_dim, unembed_bias=True)
    return jacobian_study(pair.g1, model, config.seed, config.jacobian_steps, config.jacobian_segment,
                          config.jacobian_weight_decay, config.jacobian_train_fraction, schedule.lr,
                          (schedule.beta1, schedule.beta2), schedule.eps, (torch.float64, torch.float32),
                          torch.Generator().manual_seed(config.seed + 5), device=config.device)








def sketched_jacobian_run(config: Chapter6Parameters, schedule: SweepConfig) -> SketchRun:
    """The training Jacobian at the authors' scale (`lib.grokking.authors_scale_jacobian`):
    `sketch_candidates` seeds of the `JACOBIAN_STREAM` screened at width `sketch_dim` (and at
    `jacobian_dim`) on a random `jacobian_train_fraction` of S4's table (`schedule`'s Adam,
    `jacobian_weight_decay`), the earliest grokker read through `sketch_directions` products over
    segments of `sketch_segment` steps, the next `sketch_spread_seeds` grokkers followed."""
    settings = SketchSettings(
        width=config.sketch_dim, small_width=config.jacobian_dim, steps=config.sketch_steps,
        segment=config.sketch_segment, directions=config.sketch_directions,
        spread_seeds=config.sketch_spread_seeds, spread_directions=config.sketch_spread_directions,
        further_eps=config.sketch_adam_eps, overflow_steps=config.sketch_overflow_steps,
        weight_decay=config.jacobian_weight_decay, train_fraction=config.jacobian_train_fraction)
    seeds = stream_seeds(JACOBIAN_STREAM, config.seed, config.sketch_candidates)
    return authors_scale_jacobian(seeds, settings, schedule, config.seed, workers=config.workers,
                                  device=config.device)


__all__ = ["Chapter6Parameters", "JACOBIAN_STREAM", "TRANSPLANT_STREAMS", "choose_per_outcome", "flip_study",
           "jacobian_run", "sketched_jacobian_run", "transplant_both_ways"]
