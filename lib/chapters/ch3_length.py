"""Chapter 3's table of prediction against training frequency (chapter 3).

`frequency_table` shows, per true distance, each model family's training share and mean
prediction over its seeds, from the rows of `lib.paths.under_prediction_onsets.under_prediction`.
The length study itself is summarized in `lib.paths.length_summary`.
"""

from __future__ import annotations

from collections.abc import Sequence

from lib.book.tables import markdown_table
from lib.paths.length_frequency import UnderPrediction


def _family_cell(models: Sequence[UnderPrediction], distance: int, field: str) -> str:
    rows = [r for m in models for r in m.rows if r.distance == distance]
    if not rows:
        return "n/a"
    values = [getattr(r, field) for r in rows]
    if field == "training_share":
        share = values[0]
        return "0 (outside)" if not rows[0].in_training_range else f"{100 * share:.2g}%"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{sum(values) / len(values):.2f} ({min(values):.2f} to {max(values):.2f})"


def frequency_table(length_models: Sequence[UnderPrediction], depth_models: Sequence[UnderPrediction]) -> str:
    """Markdown table: per true distance, each model family's training share and mean prediction
    (mean, min to max over its seeds)."""
    distances = sorted({r.distance for m in (*length_models, *depth_models) for r in m.rows})
    return markdown_table(
        ["true distance", "length study: share of training paths", "length study: mean prediction",
         "chapter 2's model: share of training paths", "chapter 2's model: mean prediction"],
        [[d, _family_cell(length_models, d, "training_share"), _family_cell(length_models, d, "mean_prediction"),
          _family_cell(depth_models, d, "training_share"), _family_cell(depth_models, d, "mean_prediction")]
         for d in distances])


