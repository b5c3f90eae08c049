"""The training Jacobian at the authors' scale, read through products: the run (chapter 6).

The study computed the training Jacobian of its S4 model (d = h = 32, with the unembedding bias,
P = 4,376 parameters) trained on an iid part of S4's table [@wu2025ambiguous]. `authors_scale_jacobian`
screens seeds at that scale (`lib.grokking.jacobian_sketch.screen_seeds`, and again at the width of
the exact, dense model of `lib.grokking.training_jacobian`), reads the Jacobian of the earliest
grokker through products (`sketched_jacobian_study`, randomized SVD at the boundaries
`spectrum_boundaries` picks), checks its most stretched direction by finite moves
(`finite_amplification`, sizes `AMPLIFICATION_SIZES`), follows the largest singular value of
further grokkers at the schedule's Adam eps and at other values of eps, and runs the read seed
longer in float64 and float32. `SketchSettings` holds the run's sizes; `SketchRun` what it found.
What the run shows (rows, claims) is in `lib.grokking.jacobian_claims`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.book.workers import map_in_workers
from lib.grokking.jacobian_sketch import (
    SketchedJacobianStudy, finite_amplification, screen_seeds, sketched_jacobian_study)
from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import make_pair
from lib.grokking.study import S4_PAIR
from lib.grokking.training import SweepConfig
from lib.grokking.training_jacobian import iid_part

#: Distances theta_0 is moved along the most stretched direction to check the Jacobian's reading.
AMPLIFICATION_SIZES = (1e-14, 1e-12, 1e-10, 1e-8, 1e-6)


@dataclass(frozen=True)
class SketchSettings:
    """The sizes of a run of `authors_scale_jacobian`.

    Attributes:
        width: d = h of the model read through products; small_width: that of the exact (dense)
            model, whose screen is run too.
        steps: full-batch Adam steps; segment: steps per segment of the composition.
        directions: random directions pushed through the read seed's training (the randomized
            SVD reads the largest this many singular values).
        spread_seeds: further grokking seeds whose largest singular value is followed (forward
            only, float64), with `spread_directions` directions each.
        further_eps: further values of Adam's eps at which the same seeds are followed.
        overflow_steps: steps of the read seed's run in float64 and float32 (none below a segment).
        weight_decay: Adam's weight decay; train_fraction: share of S4's table trained on.
    """

    width: int
    small_width: int
    steps: int
    segment: int
    directions: int
    spread_seeds: int
    spread_directions: int
    further_eps: tuple[float, ...]
    overflow_steps: int
    weight_decay: float
    train_fraction: float


@dataclass
class SketchRun:
    """The chapter's training Jacobian at the authors' scale: the screened seeds and their
    grokking steps (-1: not within the run), the seed read, its study, the finite-size checks of
    its most stretched direction (`amplification`, one per step checked: sizes, ratios, the
    derivative ||J u|| and the randomized-SVD estimate), the forward-only float64 studies of
    the next grokking seeds (`spread`), the same seeds' grokking steps at the exact model's
    width `small_width` (`small_grok_steps`), the read seed and the spread seeds again at each
    further Adam eps (`eps_spread`), and the read seed run `overflow_steps` steps in
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


def authors_scale_jacobian(seeds: list[int], settings: SketchSettings, schedule: SweepConfig, chapter_seed: int, *,
                           workers: int, device: str) -> SketchRun:
    """Screen `seeds` at width `settings.width` (with the bias) on a random `train_fraction` of
    S4's table (`schedule`'s Adam, `settings.weight_decay`; the part drawn from a generator seeded
    `chapter_seed + 10`, the other runs' from `chapter_seed` + 11, 12, 13), and read the training
    Jacobian of the earliest to grok (the first seed when none does) through `directions`
    products, composed over segments of `segment` steps; then follow the largest singular value
    of the next `spread_seeds` grokkers, at the schedule's Adam eps and at each of `further_eps`,
    and (with `overflow_steps` of at least a segment) the read seed
    longer in both dtypes. The independent runs go to `workers` worker processes."""
    pair = make_pair(S4_PAIR)
    model = MLPConfig(pair.n_elements, settings.width, settings.width, unembed_bias=True)
    training, test = iid_part(pair.g1, settings.train_fraction, torch.Generator().manual_seed(chapter_seed + 10))
    adam_settings = (settings.weight_decay, schedule.lr, (schedule.beta1, schedule.beta2), schedule.eps)
    grok_steps = screen_seeds(model, seeds, training, test, settings.steps, settings.segment,
                              *adam_settings, device=device).tolist()
    # The same screen at the width of the exact (dense) model: does a model that small grok here?
    small = MLPConfig(pair.n_elements, settings.small_width, settings.small_width, unembed_bias=True)
    small_grok_steps = screen_seeds(small, seeds, training, test, settings.steps, settings.segment,
                                    *adam_settings, device=device).tolist()
    grokked = [(step, seed) for step, seed in zip(grok_steps, seeds) if step > 0]
    chosen = min(grokked)[1] if grokked else seeds[0]
    # One model is one draw: the next grokkers' largest singular value, forward only, in float64.
    others = [seed for _, seed in sorted(grokked) if seed != chosen][:settings.spread_seeds]
    eps_of = {"adam": schedule.eps, **{f"eps {eps:g}": eps for eps in settings.further_eps}}

    def read(job: tuple[str, int]):
        """One training run read through products: the chosen seed's ("read"), another grokker's
        at the schedule's Adam eps ("adam") or at another ("eps <value>"), or the long run ("overflow")."""
        kind, seed = job
        if kind == "read":
            return sketched_jacobian_study(model, chosen, training, test, settings.steps, settings.segment,
                                           *adam_settings, settings.directions, spectrum_boundaries,
                                           torch.Generator().manual_seed(chapter_seed + 11), device=device)
        if kind == "overflow":
            # The rival "float32 overflow": the authors' norm ends near 1e37, just under float32's
            # largest number; the read seed run past their epoch 3,100 in both dtypes.
            return sketched_jacobian_study(model, chosen, training, test, settings.overflow_steps,
                                           settings.segment, *adam_settings, settings.spread_directions,
                                           [], torch.Generator().manual_seed(chapter_seed + 13), device=device)
        # The rival "an optimizer artefact": Adam divides by sqrt(v-hat) + eps, and v-hat of some
        # weights falls towards eps late in training. The same seeds, the same directions, other eps.
        return sketched_jacobian_study(model, seed, training, test, settings.steps, settings.segment,
                                       settings.weight_decay, schedule.lr, (schedule.beta1, schedule.beta2),
                                       eps_of[kind], settings.spread_directions, [],
                                       torch.Generator().manual_seed(chapter_seed + 12), device=device,
                                       with_float32=False)

    # The runs are independent: single-threaded worker processes take them two (or more) at once.
    jobs = [("read", chosen), *[("adam", seed) for seed in others],
            *[(f"eps {eps:g}", seed) for eps in settings.further_eps for seed in [chosen, *others]]]
    if settings.overflow_steps >= settings.segment:
        jobs.append(("overflow", chosen))
    studies = dict(zip(jobs, map_in_workers(read, jobs, workers, device)))
    study = studies[("read", chosen)]
    spread = [studies[("adam", seed)] for seed in others]
    eps_spread = {eps: [studies[(f"eps {eps:g}", seed)] for seed in [chosen, *others]] for eps in settings.further_eps}
    overflow = studies.get(("overflow", chosen))
    # Finite moves along the most stretched direction: early, where the products can be checked in
    # their linear regime, and at grokking (only the early one when the model never groks).
    checked = {study.spectra[0].step: study.spectra[0]}
    checked.update({s.step: s for s in study.spectra if s.step == study.grok_step()})
    amplification = []
    for spectrum in checked.values():
        ratios, derivative = finite_amplification(model, chosen, training, spectrum.step, *adam_settings,
                                                  spectrum.top_direction, AMPLIFICATION_SIZES, device=device)
        amplification.append({"step": spectrum.step, "sizes": list(AMPLIFICATION_SIZES), "ratios": ratios,
                              "derivative": derivative, "estimate": float(spectrum.top[0])})
    return SketchRun(seeds=seeds, grok_steps=grok_steps, chosen=chosen, study=study, amplification=amplification,
                     spread=spread, small_width=settings.small_width, small_grok_steps=small_grok_steps,
                     eps_spread=eps_spread, overflow=overflow, adam_eps=schedule.eps)


__all__ = ["AMPLIFICATION_SIZES", "SketchRun", "SketchSettings", "authors_scale_jacobian", "spectrum_boundaries"]
