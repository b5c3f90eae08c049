"""Chapter 4's S4 sweep as chapters 5 and 6 read it, and its outcome groups.

Chapter 4 saves its sweep of the S4 pair without the unembedding bias (`S4_SWEEP_FILE`): with
the bias (the study's model) seeds that grok A4 x Z2 are about 0.05% of a sweep, too rare in a
CPU-sized sweep for the per-outcome measures of chapters 5 and 6, against about 0.4% without it
(`lib.grokking.study`). `load_s4_sweep` loads it, or trains the same sweep with the same code when
it is missing (never written back, so it is never taken for chapter 4's output);
`outcome_groups` sorts its seeds into `GROUPS`, and `choose_seeds` picks every grokker and a
sample of the rest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch

from lib.book.seed_streams import stream_seeds
from lib.grokking.outcomes import GROKKED_G1, GROKKED_G2
from lib.grokking.pairs import make_pair
from lib.grokking.study import S4_MODEL, S4_MODEL_NO_BIAS, S4_PAIR, S4_SCHEDULE
from lib.grokking.sweeps import load_sweep, run_pair_sweep, sweep_outcomes
from lib.grokking.training import SweepConfig, SweepResult

#: Chapter 4's saved S4 sweep (no bias) in `results_dir`, the one chapters 5 and 6 measure.
S4_SWEEP_FILE = "04_sweep_s4_no_bias.pt"
#: Chapter 4's saved S4 sweep with the bias (the study's model): chapter 6 measures its argmax
#: flips, to compare them with the study's like for like.
S4_BIAS_SWEEP_FILE = "04_sweep_s4.pt"
#: The three outcome groups of chapters 5 and 6, in the order of their codes (`outcome_groups`).
GROUPS = ("grokked S4", "grokked A4xZ2", "neither")


@dataclass
class S4Sweep:
    """Chapter 4's S4 sweep and where it came from: "checkpoint" (loaded) or "trained" (here)."""

    result: SweepResult
    source: str
    path: str | None
    seconds: float

    @property
    def file_name(self) -> str | None:
        """The loaded file's name without its folder (what a page prints); None when trained here."""
        return Path(self.path).name if self.path else None


class FallbackSweepParameters(Protocol):
    """The parameters `load_s4_sweep` reads (chapters 5 and 6 both have them)."""

    seed: int
    device: str
    results_dir: str
    fallback_instances: int
    fallback_epochs: int
    workers: int


def load_s4_sweep(config: FallbackSweepParameters, progress: bool = True, with_bias: bool = False) -> S4Sweep:
    """Chapter 4's S4 sweep from `config.results_dir`, or the same sweep trained here when
    missing (chapters 5 and 6); `with_bias`: the sweep of the study's model (`S4_BIAS_SWEEP_FILE`,
    fallback on `S4_MODEL`) instead of the one without the bias.

    The fallback trains `fallback_instances` seeds of the "sweep" seed stream with chapter 4's
    code (`run_pair_sweep`) on `S4_MODEL_NO_BIAS` and `S4_SCHEDULE`, its epochs replaced by
    `fallback_epochs`.
    """
    started = time.perf_counter()
    path = Path(config.results_dir) / (S4_BIAS_SWEEP_FILE if with_bias else S4_SWEEP_FILE)
    if path.exists():
        return S4Sweep(load_sweep(path), "checkpoint", str(path), time.perf_counter() - started)
    epochs = config.fallback_epochs
    marks = tuple(sorted({e for e in S4_SCHEDULE.checkpoint_epochs if e <= epochs} | {epochs}))
    schedule = SweepConfig(epochs=epochs, log_every=min(S4_SCHEDULE.log_every, epochs),
                           weight_decay=S4_SCHEDULE.weight_decay, checkpoint_epochs=marks,
                           workers=config.workers)
    result = run_pair_sweep(make_pair(S4_PAIR), stream_seeds("sweep", config.seed, config.fallback_instances),
                            S4_MODEL if with_bias else S4_MODEL_NO_BIAS, schedule, device=config.device,
                            progress=progress)
    return S4Sweep(result, "trained", None, time.perf_counter() - started)


def outcome_groups(result: SweepResult, grok_threshold: float) -> torch.Tensor:
    """Each seed's group (index into `GROUPS`): grokked the pair's first group, its second, or
    neither (memorized or did not fit)."""
    codes = sweep_outcomes(result, grok_threshold, grok_threshold)
    groups = torch.full_like(codes, 2)
    groups[codes == GROKKED_G1] = 0
    groups[codes == GROKKED_G2] = 1
    return groups


def choose_seeds(groups: torch.Tensor, neither_sample: int, generator: torch.Generator) -> torch.Tensor:
    """Every seed that grokked a group and a uniform sample of `neither_sample` of the others,
    as sorted sweep indices (chapter 5; the LLC of every seed of a 10,000-seed sweep is a GPU job)."""
    grokked = (groups < 2).nonzero().squeeze(1)
    neither = (groups == 2).nonzero().squeeze(1)
    sample = neither[torch.randperm(len(neither), generator=generator)[:neither_sample]]
    return torch.cat([grokked, sample]).sort().values


__all__ = ["FallbackSweepParameters", "GROUPS", "S4Sweep", "S4_BIAS_SWEEP_FILE", "S4_SWEEP_FILE", "choose_seeds", "load_s4_sweep", "outcome_groups"]
