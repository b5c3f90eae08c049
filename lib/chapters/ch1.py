"""Parameters and tables of chapter 1 (the hand-built BFS transformer).

`Chapter1Parameters` declares the notebook's papermill parameters (validated by
`lib.book.params.validate_parameters`); the chapter's measurements of the construction against
plain BFS are in `lib.bfs.exactness` and the verdicts of the perturbation study (several draws
per scale; a draw that changed nothing is "no effect", never a recovery) in
`lib.bfs.recovery_verdicts`; the tables below show them; `PerturbationRerun` is the live
slider's callback. The study's own protocol is judged in `lib.bfs.protocol_judgement`, its
table is in `lib.chapters.ch1_results`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.bfs.graphs import SAMPLER_NAMES
from lib.bfs.perturbation import (
    PERTURBATION_MODES, RECOVERY_OPTIMIZERS, GraphSet, RecoverySettings, perturb_and_recover,
)
from lib.bfs.recovery_verdicts import RecoveryVerdict
from lib.bfs.study_damage import STUDY_BATCH_SIZE
from lib.bfs.transformer import MAX_VERTICES
from lib.book.params import ChapterParameters, parameter
from lib.book.tables import markdown_table


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
        "torch threads of this process on the CPU while no retraining runs beside it (one while it does)",
        low=1, high=256)
    workers: int = parameter(
        "worker processes that retrain damaged copies on a CPU while this process computes the sections "
        "before; it then retrains beside them (one: one busy process per core)", low=1, high=256)
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


def exactness_table(records: list[dict]) -> str:
    """Markdown table of `measure_exactness` records, one row per (size, sampler)."""
    return markdown_table(
        ["n", "sampler", "graphs", "MSE", "max abs error", "mean finite distance", "unreachable"],
        [[r["n_vertices"], r["sampler"], r["n_graphs"], r["mse"], r["max_abs_error"],
          r["mean_distance"], r["fraction_unreachable"]] for r in records])


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


def head_name(head: int, answer_head: bool) -> str:
    """Chapter 1's name of head index `head`: the reach head of vertex j (1..n) or the answer head."""
    return "the answer head" if answer_head else f"the reach head of vertex {head + 1}"


def damage_label(record: dict) -> str:
    """What a perturb-and-recover record's damage hit, for a table cell or a figure title."""
    hit = record["hit"]
    if hit["matrix"] == "all":
        return f"all weights + noise of relative Frobenius norm {record['scale']:g}"
    return (f"{hit['matrix']} matrix of {head_name(hit['head'], hit['answer_head'])}, layer {hit['layer'] + 1} "
            f"replaced by {record['scale']:g} x N(0, 1)")


def perturbation_table(records: list[dict]) -> str:
    """Markdown table of perturb-and-recover records (after `mark_recovered`).

    The last column is the draw's status: no effect, not broken, recovered or not recovered.
    """
    return markdown_table(
        ["damage", "scale", "what was hit", "MSE after damage", "MSE after retraining", "status"],
        [[r["mode"], r["scale"], damage_label(r), r["loss_before"], r["loss_after"], r["status"]] for r in records],
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


