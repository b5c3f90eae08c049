"""Chapter 3's tables of the tests against the baselines (chapter 3).

`baseline_table` sets each test's MSE over the seeds beside the two model-free baselines at the
book's scale and at the study's (`lib.paths.baseline_comparison`); `vertex_2_table` shows how
often vertex 2 is the on-path target, here and at the study's scale.
"""

from __future__ import annotations

from collections.abc import Sequence

from lib.book.tables import markdown_table
from lib.paths.baseline_comparison import BaselineComparison


def baseline_table(comparisons: Sequence[BaselineComparison]) -> str:
    """Markdown table: the model over seeds, both baselines at both scales, and the study."""
    return markdown_table(
        ["test", "fine-tuned model, mean (min to max) over seeds", "answer d(1,2): here", "mean label: here",
         "model / d(1,2) here", "answer d(1,2): study's scale", "mean label: study's scale",
         "d(1,2), book's graphs, label 15", "the study's MSE", "study / d(1,2) at its scale"],
        [[c.title, f"{c.model.mean:.3g} ({c.model.low:.3g} to {c.model.high:.3g})", c.book.mse_distance_1_2,
          c.book.mse_mean_label, f"{c.ratio_to_baseline.low:.2f} to {c.ratio_to_baseline.high:.2f}",
          c.study.mse_distance_1_2, c.study.mse_mean_label, c.book_graphs_study_label.mse_distance_1_2,
          c.published, f"{c.study_ratio_to_baseline:.2f}"] for c in comparisons])


def vertex_2_table(finetuning_share: float, comparisons: Sequence[BaselineComparison]) -> str:
    """Markdown table: among on-path targets (vertex 2 included), the share that are vertex 2."""
    rows = [["fine-tuning data", finetuning_share, "n/a"]]
    rows += [[c.title, c.book.share_vertex_2_of_on_path, c.study.share_vertex_2_of_on_path] for c in comparisons]
    return markdown_table(["data", "share of on-path targets that are vertex 2: here",
                           "at the study's scale"], rows)


__all__ = ["baseline_table", "vertex_2_table"]
