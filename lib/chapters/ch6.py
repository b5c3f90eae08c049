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
* `transplant_both_ways`: the authors' transplant protocol (`lib.grokking.transplant`) in both
  directions, whole table first, then the intersection;
* `flip_study`: the argmax flips of chosen seeds of a sweep (`lib.grokking.total_variation`);
* `jacobian_run`: the whole training Jacobian composed over segments (`lib.grokking.training_jacobian`)
  of a small MLP on an iid part of S4's table;
* `sketched_jacobian_run`: the authors' model on that part (P = 4,376): seeds screened, the
  earliest grokker's Jacobian read through products (`lib.grokking.jacobian_sketch`), finite
  checks along its most stretched direction, and the largest singular value of a few more;
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
from lib.book.workers import map_in_workers
from lib.chapters.sweep_parameters import SweepChapterParameters
from lib.grokking.jacobian_sketch import (
    SketchedJacobianStudy, finite_amplification, screen_seeds, sketched_jacobian_study)
from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import make_pair
from lib.grokking.perturbation import NOISE_SHAPES
from lib.grokking.study import S4_MODEL, S4_PAIR, S4_SCHEDULE
from lib.grokking.total_variation import TotalVariationStudy, total_variation_study
from lib.grokking.training import SweepConfig, SweepResult
from lib.grokking.training_jacobian import JacobianStudy, iid_part, jacobian_study
from lib.grokking.transplant import Transplant, TransplantFates, transplant, ungrok_criteria

#: The seeds this chapter transplants, by the group they learn first (`lib.book.seed_streams`).
TRANSPLANT_STREAMS = {"g1": "ch6_transplant_g1", "g2": "ch6_transplant_g2"}
#: The seeds screened for the training Jacobian at the authors' scale: models trained on an iid part
#: of S4's table, the stream chapter 5 reserved for that and no longer uses.
JACOBIAN_STREAM = "ch5_iid"
#: Distances theta_0 is moved along the most stretched direction to check the Jacobian's reading.
AMPLIFICATION_SIZES = (1e-14, 1e-12, 1e-10, 1e-8, 1e-6)


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
    sketch_dim: int = parameter("width (d = h) of the MLP whose training Jacobian is read through products "
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


@dataclass
class TransplantStudy:
    """Transplants in both directions: group ("g1" or "g2") -> its run, and its seeds' fates
    under each ungrokking criterion (`lib.grokking.transplant.CRITERIA`)."""

    runs: dict[str, Transplant]
    criteria: dict[str, dict[str, TransplantFates]]

    @property
    def fates(self) -> dict[str, TransplantFates]:
        """The fates under the book's criterion (below 0.999 at a logged epoch)."""
        return {group: by_criterion["below 0.999"] for group, by_criterion in self.criteria.items()}


def transplant_both_ways(config: Chapter6Parameters, generator: torch.Generator,
                         progress: bool = True) -> TransplantStudy:
    """The authors' transplant protocol in both directions: `transplant_seeds` seeds of the
    study's S4 model (d = h = 32, the bias, weight decay 2e-5) trained on a random
    `transplant_train_fraction` of each group's table (1: all of it) for
    `transplant_first_epochs`, then on the pair's intersection for `transplant_second_epochs`
    with a fresh Adam, and which of them ungrok the group by each criterion."""
    pair = make_pair(S4_PAIR)

    def schedule(epochs: int) -> SweepConfig:
        return SweepConfig(epochs=epochs, log_every=min(S4_SCHEDULE.log_every, epochs),
                           weight_decay=S4_SCHEDULE.weight_decay, workers=config.workers)

    runs, criteria = {}, {}
    for group, stream in TRANSPLANT_STREAMS.items():
        seeds = stream_seeds(stream, config.seed, config.transplant_seeds)
        runs[group] = transplant(pair, group, seeds, S4_MODEL, schedule(config.transplant_first_epochs),
                                 schedule(config.transplant_second_epochs), config.transplant_train_fraction,
                                 generator, progress=progress)
        criteria[group] = ungrok_criteria(runs[group])
    return TransplantStudy(runs, criteria)


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


@dataclass
class SketchRun:
    """The chapter's training Jacobian at the authors' scale: the screened seeds and their
    grokking steps (-1: not within the run), the seed read, its study, the finite-size checks of
    its most stretched direction (`amplification`, one per step checked: sizes, ratios, the
    derivative ||J u|| and the randomized-SVD estimate), the forward-only float64 studies of
    the next grokking seeds (`spread`), the same seeds' grokking steps at the exact model's
    width `small_width` (`small_grok_steps`), the read seed and the spread seeds again at each
    further Adam eps (`eps_spread`), and the read seed run `sketch_overflow_steps` steps in
    float64 and float32 (`overflow`, None when not run)."""

    seeds: list[int]
    grok_steps: list[int]
    chosen: int
    study: SketchedJacobianStudy
    amplification: list[dict]
    spread: list[SketchedJacobianStudy]
    small_width: int
    small_grok_steps: list[int]
    eps_spread: dict[float, list[SketchedJacobianStudy]]
    overflow: SketchedJacobianStudy | None
    adam_eps: float


def spectrum_boundaries(boundaries: list[int], accuracy: list[float], threshold: float = 0.999) -> list[int]:
    """Where the randomized SVD is read: a third of the way to the first boundary at which the
    accuracy on the whole table reaches `threshold`, the last boundary before it, that boundary,
    and the end (the first boundary and the end when it never does)."""
    first = next((i for i, a in enumerate(accuracy) if a >= threshold), None)
    if first is None or first == 0:
        return sorted({boundaries[min(1, len(boundaries) - 1)], boundaries[-1]})
    return sorted({boundaries[max(first // 3, 1)], boundaries[max(first - 1, 1)], boundaries[first], boundaries[-1]})


def sketched_jacobian_run(config: Chapter6Parameters, schedule: SweepConfig) -> SketchRun:
    """Screen `sketch_candidates` seeds of width `sketch_dim` (with the bias) on a random
    `jacobian_train_fraction` of S4's table (`schedule`'s Adam, `jacobian_weight_decay`), and
    read the training Jacobian of the earliest to grok (the first seed when none does) through
    `sketch_directions` products, composed over segments of `sketch_segment` steps; then follow
    the largest singular value of the next `sketch_spread_seeds` grokkers."""
    pair = make_pair(S4_PAIR)
    model = MLPConfig(pair.n_elements, config.sketch_dim, config.sketch_dim, unembed_bias=True)
    training, test = iid_part(pair.g1, config.jacobian_train_fraction, torch.Generator().manual_seed(config.seed + 10))
    adam_settings = (config.jacobian_weight_decay, schedule.lr, (schedule.beta1, schedule.beta2), schedule.eps)
    seeds = stream_seeds(JACOBIAN_STREAM, config.seed, config.sketch_candidates)
    grok_steps = screen_seeds(model, seeds, training, test, config.sketch_steps, config.sketch_segment,
                              *adam_settings, device=config.device).tolist()
    # The same screen at the width of the exact (dense) model: does a model that small grok here?
    small = MLPConfig(pair.n_elements, config.jacobian_dim, config.jacobian_dim, unembed_bias=True)
    small_grok_steps = screen_seeds(small, seeds, training, test, config.sketch_steps, config.sketch_segment,
                                    *adam_settings, device=config.device).tolist()
    grokked = [(step, seed) for step, seed in zip(grok_steps, seeds) if step > 0]
    chosen = min(grokked)[1] if grokked else seeds[0]
    # One model is one draw: the next grokkers' largest singular value, forward only, in float64.
    others = [seed for _, seed in sorted(grokked) if seed != chosen][:config.sketch_spread_seeds]
    eps_of = {"adam": schedule.eps, **{f"eps {eps:g}": eps for eps in config.sketch_adam_eps}}

    def read(job: tuple[str, int]):
        """One training run read through products: the chosen seed's ("read"), another grokker's
        at the schedule's Adam eps ("adam") or at another ("eps <value>"), or the long run ("overflow")."""
        kind, seed = job
        if kind == "read":
            return sketched_jacobian_study(model, chosen, training, test, config.sketch_steps, config.sketch_segment,
                                           *adam_settings, config.sketch_directions, spectrum_boundaries,
                                           torch.Generator().manual_seed(config.seed + 11), device=config.device)
        if kind == "overflow":
            # The rival "float32 overflow": the authors' norm ends near 1e37, just under float32's
            # largest number; the read seed run past their epoch 3,100 in both dtypes.
            return sketched_jacobian_study(model, chosen, training, test, config.sketch_overflow_steps,
                                           config.sketch_segment, *adam_settings, config.sketch_spread_directions,
                                           [], torch.Generator().manual_seed(config.seed + 13), device=config.device)
        # The rival "an optimizer artefact": Adam divides by sqrt(v-hat) + eps, and v-hat of some
        # weights falls towards eps late in training. The same seeds, the same directions, other eps.
        return sketched_jacobian_study(model, seed, training, test, config.sketch_steps, config.sketch_segment,
                                       config.jacobian_weight_decay, schedule.lr, (schedule.beta1, schedule.beta2),
                                       eps_of[kind], config.sketch_spread_directions, [],
                                       torch.Generator().manual_seed(config.seed + 12), device=config.device,
                                       with_float32=False)

    # The runs are independent: single-threaded worker processes take them two (or more) at once.
    jobs = [("read", chosen), *[("adam", seed) for seed in others],
            *[(f"eps {eps:g}", seed) for eps in config.sketch_adam_eps for seed in [chosen, *others]]]
    if config.sketch_overflow_steps >= config.sketch_segment:
        jobs.append(("overflow", chosen))
    studies = dict(zip(jobs, map_in_workers(read, jobs, config.workers, config.device)))
    study = studies[("read", chosen)]
    spread = [studies[("adam", seed)] for seed in others]
    eps_spread = {eps: [studies[(f"eps {eps:g}", seed)] for seed in [chosen, *others]] for eps in config.sketch_adam_eps}
    overflow = studies.get(("overflow", chosen))
    # Finite moves along the most stretched direction: early, where the products can be checked in
    # their linear regime, and at grokking (only the early one when the model never groks).
    checked = {study.spectra[0].step: study.spectra[0]}
    checked.update({s.step: s for s in study.spectra if s.step == study.grok_step()})
    amplification = []
    for spectrum in checked.values():
        ratios, derivative = finite_amplification(model, chosen, training, spectrum.step, *adam_settings,
                                                  spectrum.top_direction, AMPLIFICATION_SIZES, device=config.device)
        amplification.append({"step": spectrum.step, "sizes": list(AMPLIFICATION_SIZES), "ratios": ratios,
                              "derivative": derivative, "estimate": float(spectrum.top[0])})
    return SketchRun(seeds=seeds, grok_steps=grok_steps, chosen=chosen, study=study, amplification=amplification,
                     spread=spread, small_width=config.jacobian_dim, small_grok_steps=small_grok_steps,
                     eps_spread=eps_spread, overflow=overflow, adam_eps=schedule.eps)


__all__ = ["AMPLIFICATION_SIZES", "Chapter6Parameters", "JACOBIAN_STREAM", "TRANSPLANT_STREAMS", "TransplantStudy", "choose_per_outcome", "flip_study", "jacobian_run",
           "SketchRun", "sketched_jacobian_run", "spectrum_boundaries", "transplant_both_ways"]
