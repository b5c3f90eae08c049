"""Parameters and text of chapter 3 (`notebooks/03_finetuning_generalization.py`).

The chapter's second cell passes its papermill parameters through `validate_parameters`, which
checks each with `lib.book.params` and returns a frozen `GeneralizationChapterConfig`; `smoke=True`
shrinks every run to seconds. The remaining helpers turn measured numbers into the chapter's
tables and sentences, so that every number in the prose comes from the run.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from lib.paths.generalization_tests import TARGET_KINDS, GeneralizationResult, Scale
from lib.paths.length_generalization import LengthSplit
from lib.book.params import (
    check_common, check_float, check_int, check_schedule,
)


@dataclasses.dataclass(frozen=True)
class GeneralizationChapterConfig:
    """Validated parameters of chapter 3 (see the notebook's parameter cell for meanings)."""

    smoke: bool
    seed: int
    device: str
    results_dir: str
    small_n_max: int
    finetune_steps: int
    finetune_batch_size: int
    finetune_learning_rate: float
    finetune_weight_decay: float
    eval_size: int
    test_graphs: int
    length_split: LengthSplit
    length_n_layers: int
    length_batch_size: int
    length_lr_schedule: tuple[tuple[int, float], ...]
    length_graphs_per_cell: int
    length_max_proposals: int
    cpu_threads: int


def validate_parameters(*, smoke, seed, device, results_dir, small_n_max, finetune_steps,
                        finetune_batch_size, finetune_learning_rate, finetune_weight_decay,
                        eval_size, test_graphs, length_train_n_max, length_test_n_max,
                        length_n_layers, length_batch_size, length_learning_rates,
                        length_phase_steps, length_graphs_per_cell, cpu_threads
                        ) -> GeneralizationChapterConfig:
    """Check chapter 3's parameters and build its configuration.

    `small_n_max` is checked against the base model's graph sizes later, once the model is
    loaded (`lib.paths.generalization_tests.scale_for`).

    Raises:
        ParameterError: with one sentence naming the first bad parameter.
    """
    resolved = check_common(smoke, seed, device, results_dir)
    check_int("small_n_max", small_n_max, 3, 62)
    check_int("finetune_steps", finetune_steps, 1)
    check_int("finetune_batch_size", finetune_batch_size, 1, 2**20)
    check_float("finetune_learning_rate", finetune_learning_rate, 0.0, 1.0, low_inclusive=False)
    check_float("finetune_weight_decay", finetune_weight_decay, 0.0, 10.0)
    check_int("eval_size", eval_size, 16, 2**20)
    check_int("test_graphs", test_graphs, 16, 2**20)
    check_int("length_train_n_max", length_train_n_max, 3, 29)
    check_int("length_test_n_max", length_test_n_max, length_train_n_max + 1, 30)
    check_int("length_n_layers", length_n_layers, 1, 64)
    check_int("length_batch_size", length_batch_size, 1, 2**20)
    rates, steps = check_schedule("length_learning_rates", length_learning_rates, "length_phase_steps", length_phase_steps)
    check_int("length_graphs_per_cell", length_graphs_per_cell, 1, 2**16)
    check_int("cpu_threads", cpu_threads, 1, 256)
    max_proposals = 1 << 18
    if smoke:
        finetune_steps, finetune_batch_size = min(finetune_steps, 10), min(finetune_batch_size, 64)
        eval_size, test_graphs = min(eval_size, 256), min(test_graphs, 256)
        length_n_layers, length_batch_size = min(length_n_layers, 2), min(length_batch_size, 64)
        steps = [min(s, 20) for s in steps]
        length_graphs_per_cell, max_proposals = min(length_graphs_per_cell, 32), 1 << 13
    return GeneralizationChapterConfig(
        smoke, seed, str(resolved), results_dir, small_n_max, finetune_steps, finetune_batch_size,
        float(finetune_learning_rate), float(finetune_weight_decay), eval_size, test_graphs,
        LengthSplit(3, length_train_n_max, length_test_n_max), length_n_layers, length_batch_size,
        tuple(zip(steps, (float(r) for r in rates))), length_graphs_per_cell, max_proposals,
        cpu_threads)



def _format(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.4g}"


def generalization_table(before: Sequence[GeneralizationResult], after: Sequence[GeneralizationResult],
                         scale: Scale) -> str:
    """Markdown table of the five tests: this run (before / after fine-tuning) beside the post."""
    lines = [
        "| test | graphs and targets here | MSE pre-trained | MSE fine-tuned | accuracy fine-tuned "
        "| published MSE | 11-layer rerun |",
        "|---|---|---|---|---|---|---|",
    ]
    for b, a in zip(before, after):
        lines.append(f"| {a.test.title} | {a.test.describe(scale)} | {_format(b.mse)} | {_format(a.mse)} "
                     f"| {a.accuracy:.3f} | {a.test.published_mse} | {a.test.authors_11_layer_mse} |")
    return "\n".join(lines)


def target_kind_table(results: Sequence[GeneralizationResult]) -> str:
    """Markdown table: for each test, MSE (and count) of each kind of target."""
    lines = ["| test | " + " | ".join(TARGET_KINDS) + " |", "|---|" + "---|" * len(TARGET_KINDS)]
    for result in results:
        cells = []
        for kind in TARGET_KINDS:
            entry = result.by_kind.get(kind)
            cells.append("-" if entry is None else f"{entry['mse']:.3g} ({entry['count']})")
        lines.append(f"| {result.test.title} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


__all__ = [
    "GeneralizationChapterConfig", "generalization_table", "target_kind_table",
    "validate_parameters",
]
