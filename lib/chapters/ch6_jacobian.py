"""Chapter 6's tables of the training Jacobian at the authors' scale.

The run is `lib.grokking.authors_scale_jacobian` (wired to the chapter's parameters by
`lib.chapters.ch6.sketched_jacobian_run`); its rows, results-JSON entry and the study's two claims
as booleans are `lib.grokking.jacobian_claims`. Here are their markdown tables.
"""

from __future__ import annotations

from lib.book.tables import markdown_table
from lib.grokking.jacobian_claims import LINEAR_TOLERANCE
from lib.grokking.jacobian_sketch import BULK_FLOOR


def sketch_table(rows: list[dict]) -> str:
    """Markdown table of `sketch_rows`."""
    return markdown_table(
        ["step", "training accuracy", "accuracy on the whole table", "largest singular value (lower bound)",
         "same, float32", "root-mean-square singular value", "float32 vs float64 (relative)"],
        [[r["step"], r["train_accuracy"], r["test_accuracy"], r["largest_lower_bound"],
          r["largest_lower_bound_float32"], r["rms_singular_value"], r["float32_relative_difference"]] for r in rows])


def sketch_spectrum_table(rows: list[dict]) -> str:
    """Markdown table of `sketch_spectrum_rows`."""
    return markdown_table(
        ["step", "accuracy on the whole table", "largest (estimate)", "K-th largest (estimate)",
         "estimates within 0.1 of 1", "estimates above 1.1", f"share of all reaching {BULK_FLOOR} (at most)"],
        [[r["step"], r["test_accuracy"], r["largest"], r["kth"], f"{r['estimates_near_one']} of {r['k']}",
          f"{r['estimates_above_bulk']} of {r['k']}", f"{r['bulk_share_bound']:.1%}"] for r in rows])


def growth_table(rows: list[dict]) -> str:
    """Markdown table of `growth_row` over the seeds read."""
    def number(value):
        return "-" if value is None else value
    return markdown_table(
        ["seed", "directions", "groks at step", "after the first segment", "at grokking", "largest after grokking",
         "at the end", "end / at grokking"],
        [[r["seed"], r["directions"], r["grok_step"] if r["grok_step"] > 0 else "never", r["first_segment"],
          number(r["at_grok"]), number(r["largest_after_grok"]), r["end"], number(r["growth_after_grokking"])]
         for r in rows])


def amplification_table(checks: list[dict]) -> str:
    """Markdown table of the finite checks (`amplification_check`): per step checked, the products'
    ||J u|| and the randomized-SVD estimate, each move of the initial weights along u with the move
    it makes there, and the largest move whose ratio agrees with ||J u|| within `LINEAR_TOLERANCE`
    ("none": no move tried is small enough to be linear)."""
    return markdown_table(
        ["step", "||J u|| (products)", "randomized-SVD estimate", "move at the start -> move at the step",
         f"linear (within {LINEAR_TOLERANCE:.0%}) up to"],
        [[f"{c['step']:,}", f"{c['derivative']:.3g}", f"{c['estimate']:.3g}",
          ", ".join(f"{size:.0e} -> {move:.2g}" for size, move in zip(c["sizes"], c["moves"])),
          "none" if c["linear_up_to"] is None else f"{c['linear_up_to']:.0e}"] for c in checks])


__all__ = ["amplification_table", "growth_table", "sketch_spectrum_table", "sketch_table"]
