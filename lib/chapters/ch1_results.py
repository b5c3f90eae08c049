"""The tables of chapter 1 (`notebooks/01_handcrafted_bfs.py`) and the checks of its results.

Tables: where the study's damaged draw falls in the damage distribution (`distribution_table`,
of `lib.bfs.damage_summary.DistributionSummary`), the draws retrained (`selection_table`), and
the study's perturb-and-recover protocol draw by draw on both constructions (`protocol_table`).
The notebook calls `check_results` on its results (the recorded numbers among them) right
before it writes `results_dir/01_handcrafted_bfs.json`; the notebook tests call it again on the
JSON they read back. Which keys the JSON must hold is what `book/reproduced/01_handcrafted_bfs.yaml`
reads.
"""


from __future__ import annotations

from lib.bfs.damage_distribution import quantile_summary
from lib.bfs.damage_summary import DistributionSummary, Selection
from lib.bfs.study_damage import matrix_name
from lib.book.record import verdict
from lib.book.results import to_jsonable
from lib.book.tables import markdown_table


def check_results(results: dict) -> None:
    """Assert what chapter 1's results must satisfy: the shapes and counts of its records, and
    that the recorded numbers and words agree with the results they were recorded from. Takes
    the results as written or as read back (`to_jsonable` makes the two the same)."""
    results = to_jsonable(results)
    assert results["handcrafted_mse"] < 1e-6 and results["n_graphs"] > 0
    assert all({"scale", "loss_before", "loss_after", "damage_had_effect", "status", "recovered"} <= r.keys()
               for r in results["perturbation"])
    # Several draws per (mode, scale): every scale appears draws_per_scale times per mode.
    for mode in {r["mode"] for r in results["perturbation"]}:
        scales = [r["scale"] for r in results["perturbation"] if r["mode"] == mode]
        assert all(scales.count(s) == results["draws_per_scale"] for s in scales)
    # The study's protocol: per draw the damaged matrix, MSE before and after, on both constructions.
    protocol = results["study_protocol"]
    constructions = protocol["constructions"]
    assert set(constructions) == {"study", "book"}
    assert len(constructions["study"]) == len(constructions["book"]) == protocol["draws"] >= 1
    for study_draw, book_draw in zip(constructions["study"], constructions["book"]):
        assert (study_draw["weight_list"], study_draw["index"]) == (book_draw["weight_list"], book_draw["index"])
        for draw in (study_draw, book_draw):
            assert {"weight_list", "index", "matrix", "loss_intact", "loss_before", "loss_after",
                    "damage_had_effect", "curve"} <= draw.keys()
            assert draw["steps"] == protocol["steps"] and draw["curve"][-1][0] == protocol["steps"]
    assert protocol["comparison"]["steps"] == protocol["steps"]
    assert set(protocol["comparison"]["ratios"]) == {"study", "book"}
    assert all(point["step"] <= protocol["steps"] for point in protocol["comparison"]["points"])
    # The damage distribution: every matrix of the six lists, the same number of noise draws each.
    distribution = results["damage_distribution"]
    assert distribution["draws"] == distribution["matrices"] * distribution["noise_draws"] == len(distribution["draws_mse"])
    assert distribution["matrices"] == 6 * results["n_vertices"]
    percentile = distribution["percentile"]
    assert percentile["k"] == sum(d["mse"] <= distribution["target"] for d in distribution["draws_mse"])
    assert percentile["low"] <= percentile["share"] <= percentile["high"] and percentile["n"] == distribution["draws"]
    assert sum(row["k"] for row in distribution["by_list"]) == percentile["k"]
    # The retrained draws are the ones nearest the study's value, and start where the distribution said.
    selection = protocol["selection"]
    assert selection["count"] == protocol["draws"]
    slack = 1e-6 * max(1.0, selection["high"])
    assert all(selection["low"] - slack <= draw["loss_before"] <= selection["high"] + slack
               for draw in constructions["study"])
    comparison = protocol["comparison"]
    assert comparison["at_step"]["step"] <= protocol["steps"] and comparison["pairs"]["step"] == comparison["at_step"]["step"]
    assert comparison["pairs"]["pairs"] + comparison["pairs"]["left_out"] == protocol["draws"]
    # Counted by matrix: every retrained draw belongs to one of the matrices, each counted once.
    matrices = comparison["at_step"]["matrices"]
    assert sum(matrices["draws"].values()) == len(comparison["at_step"]["mse"]["values"]) >= matrices["count"]
    assert matrices["count"] == len(matrices["draws"]) == len(matrices["mse"]["values"])
    # The numbers the prose cites (lib.book.record): each with its format and text, and each
    # agreeing with the result it was recorded from.
    recorded = results["recorded"]
    assert all(entry.keys() == {"value", "format", "text"} for entry in recorded.values())
    assert recorded["exact.graphs"]["value"] == results["n_graphs"]
    assert recorded["distribution.draws"]["value"] == distribution["draws"]
    assert recorded["distribution.reaching"]["value"] == percentile["k"]
    assert recorded["distribution.matrices_reaching"]["value"] == sum(len(row["matrices"])
                                                                     for row in distribution["by_list"])
    assert recorded["selection.count"]["value"] == selection["count"]
    assert recorded["perturb.draws"]["value"] == len(results["perturbation"])
    assert recorded["at_step.step"]["value"] == comparison["at_step"]["step"]
    assert recorded["at_step.mse.n"]["value"] == len(comparison["at_step"]["mse"]["values"])
    assert recorded["at_step.mse.median"]["value"] == comparison["at_step"]["mse"]["median"]
    assert recorded["pairs.pairs"]["value"] == comparison["pairs"]["pairs"]
    assert recorded["at_step.within"]["value"] == verdict(comparison["at_step"]["within"], yes="inside",
                                                          no="outside", undefined="not compared with")


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


