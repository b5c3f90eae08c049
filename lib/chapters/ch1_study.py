"""The study's perturb-and-recover protocol in chapter 1: the table of its draws (chapter 1).

`lib.bfs.study_damage.protocol_on_draws` retrains the draws chapter 1 picks (those nearest the
study's 0.403 in the damage distribution, `lib.bfs.damage_summary`) on the study's construction
and on the book's; `protocol_table` shows, per draw, the matrix hit and the held-out MSE before
and after. The comparison with the study's published curve and the judgements over all draws
are in `lib.bfs.protocol_judgement`.
"""

from __future__ import annotations

from lib.book.tables import markdown_table

#: Names of the two constructions in the records and in the prose.
CONSTRUCTIONS = {"study": "the study's construction", "book": "the book's construction"}


def protocol_table(records: dict[str, list[dict]]) -> str:
    """Markdown table: one row per draw, the weight list and matrix replaced by N(0, 1) (a reach
    head's matrix in every layer) and each construction's MSE before and after."""
    names = list(records)
    steps = records[names[0]][0]["steps"] if records[names[0]] else 0
    header = ["draw", "weight list", "matrix (reach heads: every layer)"]
    for name in names:
        header += [f"{name}'s: MSE intact", f"{name}'s: after damage", f"{name}'s: after {steps:,} steps"]
    rows = []
    for index, first in enumerate(records[names[0]]):
        row = [index + 1, first["weight_list"], first["matrix"]]
        for name in names:
            record = records[name][index]
            row += [record["loss_intact"], record["loss_before"],
                    record["loss_after"] if record["damage_had_effect"] else "no effect"]
        rows.append(row)
    return markdown_table(header, rows)


__all__ = ["CONSTRUCTIONS", "protocol_table"]
