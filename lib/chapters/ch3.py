"""Parameters and tables of chapter 3 (`notebooks/03_finetuning_generalization.py`).

`Chapter3Parameters` declares the chapter's papermill parameters (validated by
`lib.book.params.validate_parameters`; `smoke=True` shrinks every run to seconds). The two
tables of the chapter are drawn from its `lib.paths.generalization_summary.GeneralizationSummary`
with the book's one table helper, `lib.book.tables.markdown_table`; the results objects that
the prose reads are built in `lib.paths` (see `lib.chapters.ch3_results`).
"""

from __future__ import annotations

import dataclasses

from lib.book.params import at_most, ChapterParameters, check_schedule, parameter
from lib.book.tables import format_value, markdown_table
from lib.paths.generalization_summary import GeneralizationSummary
from lib.paths.target_kind_scores import KindScore
from lib.paths.generalization_tests import TARGET_KINDS
from lib.paths.length_generalization import LengthSplit


@dataclasses.dataclass(frozen=True)
class Chapter3Parameters(ChapterParameters):
    """The papermill parameters of chapter 3, each with its type, bounds, help and smoke value.

    `small_n_max` is checked against the base model's graph sizes later, once the model is
    loaded (`lib.paths.generalization_tests.scale_for`).
    """

    small_n_max: int = parameter(
        "small graphs have 3..small_n_max vertices, small targets have vertex ids at most small_n_max (published: 7)",
        low=3, high=62)
    finetune_steps: int = parameter("fine-tuning steps, each on fresh graphs (published: 100)",
                                    low=1, smoke=at_most(10))
    finetune_batch_size: int = parameter("graphs per fine-tuning step (published: 2**15)",
                                         low=1, high=2**20, smoke=at_most(64))
    finetune_learning_rate: float = parameter(
        "AdamW learning rate of fine-tuning (published, stated: 1e-5)", low=0.0, high=1.0,
        low_inclusive=False)
    finetune_weight_decay: float = parameter(
        "AdamW decoupled weight decay of fine-tuning (published, stated: 1e-5)", low=0.0, high=10.0)
    eval_size: int = parameter("held-out on-path graphs for the loss before and after fine-tuning",
                               low=16, high=2**20, smoke=at_most(256))
    test_graphs: int = parameter("held-out graphs per generalization test", low=16, high=2**20,
                                 smoke=at_most(256))
    n_seeds: int = parameter(
        "seeds of pre-training + fine-tuning behind the tests' spread (the first: chapter 2's model; about 2 min each more)",
        low=1, high=20, smoke=at_most(2))
    graphs_per_size: int = parameter(
        "held-out on-path graphs per graph size for the per-size check of targets other than vertex 2",
        low=16, high=2**20, smoke=at_most(64))
    length_train_n_max: int = parameter(
        "length study: training graphs have 3..length_train_n_max vertices", low=3, high=29)
    length_test_n_max: int = parameter(
        "length study: test graphs have up to this many vertices (all ids seen in training)",
        low=lambda earlier: earlier.length_train_n_max + 1, high=30)
    length_n_layers: int = parameter("encoder layers of the length-study model", low=1, high=64,
                                     smoke=at_most(2))
    length_batch_size: int = parameter("fresh graphs per step of the length-study model", low=1,
                                       high=2**20, smoke=at_most(64))
    length_learning_rates: tuple[float, ...] = parameter(
        "learning rate of each training phase of the length-study model", low=0.0, high=1.0)
    length_phase_steps: tuple[int, ...] = parameter(
        "steps of each phase", low=1, smoke=lambda steps: tuple(min(s, 20) for s in steps))
    length_graphs_per_cell: int = parameter(
        "test graphs per (size, distance) cell, at most", low=1, high=2**16,
        smoke=at_most(32))
    length_n_seeds: int = parameter(
        "seeds of the length-study model (the first is the one the figures show; about 1.5 min each more)",
        low=1, high=20, smoke=at_most(2))
    cpu_threads: int = parameter(
        "torch threads on the CPU (one is fastest for these small models on 2 cores)", low=1, high=256)
    workers: int = parameter(
        "worker processes that train the further seeds at once on a CPU (one per core)", low=1, high=256)

    def check_consistency(self) -> None:
        check_schedule("length_learning_rates", self.length_learning_rates,
                       "length_phase_steps", self.length_phase_steps)

    @property
    def seeds(self) -> tuple[int, ...]:
        """The seeds of pre-training and fine-tuning: `seed`, `seed + 1`, ... (`n_seeds` of them)."""
        return tuple(self.seed + k for k in range(self.n_seeds))

    @property
    def length_seeds(self) -> tuple[int, ...]:
        """The seeds of the length-study model: `seed`, `seed + 1`, ... (`length_n_seeds` of them)."""
        return tuple(self.seed + k for k in range(self.length_n_seeds))

    @property
    def length_split(self) -> LengthSplit:
        return LengthSplit(3, self.length_train_n_max, self.length_test_n_max)

    @property
    def length_lr_schedule(self) -> tuple[tuple[int, float], ...]:
        return tuple(zip(self.length_phase_steps, self.length_learning_rates))

    @property
    def length_max_proposals(self) -> int:
        """Cap on graph proposals per round when collecting the (size, distance) test cells."""
        return 1 << 13 if self.smoke else 1 << 18


def generalization_table(summary: GeneralizationSummary) -> str:
    """Markdown table of the five tests: this run (before / after fine-tuning) beside the post.

    The last two columns are the study's: the MSE its post reports, and the MSE of the authors'
    rerun with an 11-layer model (`REFERENCE.md`), both at the study's scale (graphs of up to 15
    vertices), so they compare with this run's columns in order of magnitude only. The second
    column gives each test's graph sizes and targets at this run's scale.
    """
    return markdown_table(
        ["test", "graphs and targets here", "MSE pre-trained", "MSE fine-tuned", "accuracy fine-tuned",
         "study: MSE in the post", "study: MSE of its 11-layer rerun"],
        [[t.test.title,
          f"n in {t.scale.n_min}..{t.n_max}; "
          + (f"any t in 2..{t.target_id_max}" if t.test.task == "any"
             else "on a shortest 1-2 path, " + (f"target id <= {t.target_id_max}" if t.test.targets == "small"
                                                 else "any target")),
          t.mse_before, t.mse_after, t.accuracy_after, t.test.published_mse, t.test.authors_11_layer_mse]
         for t in summary.tests])


def _kind_cell(score: KindScore) -> str:
    return "n/a" if not score.present else f"{format_value(score.mse, trailing_zeros=True)} ({score.count:,})"


def target_kind_table(summary: GeneralizationSummary) -> str:
    """Markdown table: for each test, the fine-tuned model's MSE (and count) on each kind of target."""
    return markdown_table(["test", *TARGET_KINDS],
                          [[t.test.title, *t.kinds_after.in_order()] for t in summary.tests],
                          formats={column: _kind_cell for column in range(1, len(TARGET_KINDS) + 1)})


__all__ = [
    "Chapter3Parameters", "generalization_table", "target_kind_table",
]
