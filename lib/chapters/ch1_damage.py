"""Chapter 1's tables of the damage distribution and of the draws it retrains (chapter 1).

The numbers come from `lib.bfs.damage_summary`: `distribution_table` shows a
`DistributionSummary` (per weight list, the MSE right after the study's damage and which
matrices reach the study's 0.403), `selection_table` a `Selection` (the draws nearest it that
the chapter retrains).
"""

from __future__ import annotations

from lib.bfs.damage_distribution import quantile_summary
from lib.bfs.damage_summary import DistributionSummary, Selection
from lib.bfs.study_damage import matrix_name
from lib.book.tables import markdown_table


def distribution_table(distribution: DistributionSummary) -> str:
    """Markdown table: per weight list, the MSE's median and 5-95% range, how many draws reach
    the target, and the matrices they hit (each with its draws at or below the target, of its
    noise draws)."""
    rows = []
    for summary in distribution.lists:
        q = quantile_summary(summary.mse, (0.05, 0.5, 0.95))
        matrices = ", ".join(f"{matrix_name(summary.weight_list, index)} ({k} of {n})"
                             for index, k, n in summary.matrices)
        rows.append([summary.weight_list, summary.reaching.n, f"{q['0.5']:.3g}",
                     f"{q['0.05']:.3g} to {q['0.95']:.3g}", f"{summary.reaching.k} of {summary.reaching.n}",
                     matrices or "none"])
    return markdown_table(["weight list", "draws", "median MSE", "5% to 95% of draws",
                           f"at or below {distribution.target:g}", "matrices reaching it (of their noise draws)"],
                          rows)


def selection_table(selection: Selection) -> str:
    """Markdown table: per weight list hit, the draws picked and the matrices they hit."""
    return markdown_table(["weight list", "draws picked", "matrices hit"],
                          [[name, count, selection.matrices[name]] for name, count in selection.hits.items()])


__all__ = ["distribution_table", "selection_table"]
