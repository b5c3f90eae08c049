"""What chapter 7 shows: the tables of the powered probes (`power_table`, `powered_radius_table`,
`margin_table`, `powered_bins_table`, `model_radii_table`), the radius laws (`law_table`) and the
capacity experiment (`capacity_table`), and older tables of the models, reach radii (distance on reachable graphs,
reachability, edge facts; per edge-count bin and per training seed; with their controls),
attention preferences and the layer labels the prose uses (`*_table`, header and rows for one
`lib.book.tables.markdown_table` call, `layers_label`, `edge_bin_names`), and the checks of the
results JSON (`check_results`, which the notebook runs before it writes them). The values they
show are computed in `lib.paths.reach_radii` (radii, their growth against one hop per layer)
and `lib.paths.circuit_effects` (attention, ablation, patching, shortcuts); the notebook
records the numbers its prose cites (`lib.book.record`), and the sentences are markdown in the
notebook."""

from __future__ import annotations

from lib.book.record import share
from lib.book.tables import format_value, markdown_table
from lib.paths.circuit_effects import WEAK_CORRELATION, strongest_preferences
from lib.paths.layer_probes import DISTANCE, REACHABLE_WITH_EDGES, ModelProbes, ProbeGrid
from lib.paths.reach_radii import growth, largest_ks, settled_layer


def _layers(layers: list[int]) -> str:
    return ", ".join(str(layer) for layer in layers)


def _radius_list(radii: list[int | None]) -> str:
    return "[" + ", ".join("disputed" if radius is None else str(radius) for radius in radii) + "]"


def edge_bin_names(boundaries: tuple[float, ...]) -> list[str]:
    """Names of the edge-count bins of `lib.paths.layer_probes.edge_count_bins`."""
    edges = [f"{b:g}" for b in boundaries]
    if not edges:
        return ["all graphs"]
    return ([f"at most {edges[0]} edges"] + [f"more than {a}, at most {b} edges" for a, b in zip(edges, edges[1:])]
            + [f"more than {edges[-1]} edges"])


def model_table(rows: list[dict], unreachable_label: int) -> str:
    """Markdown table of `model_rows`."""
    labels = list(rows[0]["mse_by_label"])
    names = ["unreachable" if label == unreachable_label else f"d = {label}" for label in labels]
    return markdown_table(
        ["model", "layers", "source", "MSE"] + [f"MSE, {name}" for name in names],
        [[r["model"], r["n_layers"], r["source"], format_value(r["mse"], 3, trailing_zeros=True)]
         + [format_value(r["mse_by_label"][label], 3, trailing_zeros=True) for label in labels] for r in rows])


def preference_table(rows: list[dict]) -> str:
    """Markdown table of `strongest_preferences` for both query kinds."""
    lines = []
    for query in ("edge tokens", "target token"):
        for row in strongest_preferences(rows, query):
            lines.append([f"layer {row['layer']} head {row['head']}", query, row["category"],
                          format_value(row["share"], 3, trailing_zeros=True),
                          format_value(row["chance"], 3, trailing_zeros=True), f"{row['ratio']:.1f}x"])
    return markdown_table(["head", "queries at", "favoured keys", "share", "uniform share", "ratio"], lines)


def radius_cell(radii: list[int | None]) -> str:
    """A table cell of stated radii per residual index ("disputed" where none is stated)."""
    return _radius_list(radii)


def statistics_table(statistics: dict[str, ProbeGrid]) -> tuple[list[str], list[list]]:
    """Header and rows: the statistics probe's held-out AUC per fact and k."""
    rows = [[fact, k, auc] for fact, grid in statistics.items()
            for k, auc in zip(grid.ks, grid.scores.auc[0].tolist())]
    return ["fact", "k", "AUC of the statistics probe"], rows


def random_reads_table(rows: list[dict]) -> tuple[list[str], list[list]]:
    """Header and rows of `random_reads` ("-": nothing beyond the statistics probe, or no k probed)."""
    def cell(value):
        return "-" if value is None else value

    return (["fact", "stated radius (beyond the statistics probe)", "from residual index",
             "radius at the tuned cut-off, without the rival", "radius by AUC, without the rival", "best AUC",
             "disputed at some index"],
            [[r["fact"], cell(r["best"]), cell(r["from_index"]), cell(r["tuned"]), cell(r["auc"]),
              "-" if r["best_auc"] is None else f"{r['best_auc']:.3f}", "yes" if r["disputed"] else "no"]
             for r in rows])


def bins_table(radii: dict[str, dict], boundaries: tuple[float, ...], facts: tuple[str, ...]
               ) -> tuple[list[str], list[list]]:
    """Header and rows: per fact and edge-count bin, the stated radii per residual index and the
    k scored in the bin ("-" where no k has both answers often enough)."""
    rows = [[fact, name, radius_cell(entry["stated"]) if entry["ks"] else "-",
             str(list(entry["ks"])) if entry["ks"] else "-"]
            for fact in facts for name, entry in zip(edge_bin_names(boundaries), radii[fact]["bins"])]
    return ["fact", "edge-count bin", "stated radius per residual index", "k scored"], rows


def seeds_table(spread: dict[str, dict], facts: tuple[str, ...]) -> tuple[list[str], list[list]]:
    """Header and rows: per fact, the range of the stated radii over the seeds per residual index
    and how many seeds' radius is disputed there."""
    def ranges(fact: str) -> str:
        return ", ".join("-" if r is None else (f"{r[0]}" if r[0] == r[1] else f"{r[0]}-{r[1]}")
                         for r in spread[fact]["range"])

    return (["fact", "stated radius per residual index (range over seeds)", "seeds disputed, per index"],
            [[fact, ranges(fact), str(spread[fact]["disputed_seeds"])] for fact in facts])


def layers_label(layers: list[int], none: str = "no layer") -> str:
    """Layers as a label: "layer 2", "layers 3, 4" (`none` where empty)."""
    if not layers:
        return none
    return f"layer{'s' if len(layers) > 1 else ''} {_layers(layers)}"


def radii_table(probes: ModelProbes, radii: dict[str, dict]) -> tuple[list[str], list[list]]:
    """Header and rows: per fact of one model, the largest k probed, the radii per residual index
    under every criterion, and the best held-out AUC of its probes trained on shuffled labels."""
    largest = largest_ks(probes)
    rows = []
    for fact, grid in probes.grids.items():
        r = radii[fact]
        shuffled = (f"{float(grid.shuffled.auc.nan_to_num(0).max()):.3f}" if grid.shuffled is not None and grid.ks
                    else "-")
        rows.append([fact, largest[fact] if grid.ks else "-", radius_cell(r["stated"]), str(r["tuned"]),
                     str(r["auc"]), str(r.get("beyond_statistics", "-")), str(r["untuned"]), shuffled])
    return (["fact", "largest k probed", "stated radius", "tuned cut-off", "AUC", "AUC beyond the statistics probe",
             "untuned cut-off (logit 0)", "best AUC on shuffled labels"], rows)


def depth_table(radii: dict[int, dict[str, dict]], largest: dict[str, int]) -> tuple[list[str], list[list]]:
    """Header and rows: per model depth, the stated radii of the distance and of reachability (1
    and t with an edge), where the distance's radii run ahead of or behind one hop per layer, and
    the first layer from which every k probed has a stated radius ("-": none)."""
    rows = []
    for depth in sorted(radii):
        stated = radii[depth][DISTANCE]["stated"]
        g = growth(stated, largest[DISTANCE])
        settled = settled_layer(stated, largest[DISTANCE])
        rows.append([depth, radius_cell(stated), layers_label(g["faster"], "-"), layers_label(g["slower"], "-"),
                     layers_label(g["unstated"], "-"), radius_cell(radii[depth][REACHABLE_WITH_EDGES]["stated"]),
                     "-" if settled is None else settled])
    return (["layers", f"\"{DISTANCE}\": stated radius", "ahead of one hop after", "behind one hop after",
             "disputed after", f"\"{REACHABLE_WITH_EDGES}\": stated radius", "every k probed stated from layer"],
            rows)


__all__ = [
    "bins_table", "capacity_table", "check_powered", "check_results", "law_table", "margin_table",
    "model_radii_table", "power_table", "powered_bins_table", "powered_radius_table", "depth_table", "edge_bin_names", "layers_label",
    "model_table", "preference_table", "radii_table", "radius_cell", "random_reads_table", "seeds_table",
    "statistics_table",
]


# --- What the notebook checks before it writes its results ---

def check_results(results: dict) -> None:
    """Assert what chapter 7's results JSON must satisfy (its notebook calls it before writing them)."""
    assert results["hand_built"]["hand_built_mse"] < 1e-6
    assert {r["component"] for r in results["ablation"]} >= {"none", "layer 1 head 1", "layer 1 MLP"}
    assert len(results["patching"]["probe"]) == len(results["patching"]["token"]) == \
        len(results["patching"]["by_layer"]) > 0
    check_powered(results)
    # The numbers the prose cites (lib.book.record), each with its format and text, agree with the
    # results they come from, and the words the rules chose with the values they were chosen from.
    recorded = results["recorded"]
    assert all(entry.keys() == {"value", "format", "text"} for entry in recorded.values())
    assert recorded["patching.pairs"]["value"] == results["patching"]["pairs"]
    depth = recorded["summary.depth"]["value"]
    assert recorded["seeds.count"]["value"] == sum(m["depth"] == depth for m in results["powered"]["models"].values())
    assert recorded["depths.models"]["value"] == len(results["powered"]["models"])
    assert recorded["summary.hand_built_layers"]["value"] == results["hand_built"]["hand_built_layers"]
    correlations = results["shortcut_correlations"]
    strongest = max(correlations, key=lambda name: abs(correlations[name]))
    assert recorded["shortcut.strongest"]["value"] == strongest
    assert recorded["shortcut.correlation"]["value"] == correlations[strongest]
    assert recorded["shortcut.verdict"]["value"].startswith("goes with") == \
        (abs(correlations[strongest]) >= WEAK_CORRELATION)
    middle = [row for row in results["patching"]["by_layer"] if not row["last"]]
    used = [row["layer"] for row in middle if row["beats_every_random"] and row["share_of_token"] >= 0.5]
    assert recorded["patching.used_share"]["value"] == share(len(used), len(middle), every="every one",
                                                             some="only some", none="none")


# --- The powered probes, the radius laws and the capacity experiment ---

def _z_cell(value: float | None) -> str:
    if value is None or value != value:
        return "-"
    return "inf" if value == float("inf") else f"{value:.1f}"


def power_table(grids: dict, counts: dict[str, dict[int, int]]) -> tuple[list[str], list[list]]:
    """Header and rows: per fact and k probed, the held-out graphs of the rarer answer and the
    statistics probe's held-out AUC (from `lib.paths.powered_probes.PoweredGrid`s)."""
    rows = [[fact, k, int(grid.rarer_graphs[column]), f"{float(grid.rival_auc[column]):.3f}"]
            for fact, grid in grids.items() for column, k in enumerate(grid.ks)]
    return ["fact", "k", "held-out graphs of the rarer answer", "AUC of the statistics probe"], rows


def powered_radius_table(grids: dict, rule) -> tuple[list[str], list[list]]:
    """Header and rows: per fact of one model, the radius per residual index under `rule`, and per
    index the first k that fails with what fails there and the AUC difference in standard errors."""
    from lib.paths.powered_probes import first_failure, powered_radii

    rows = []
    for fact, grid in grids.items():
        failures = first_failure(grid, rule)
        text = "; ".join("-" if f is None else f"{index}: k={f['k']} ({', '.join(f['fails'])}; z {_z_cell(f['z'])})"
                         for index, f in enumerate(failures))
        rows.append([fact, max(grid.ks), str(powered_radii(grid, rule)), text])
    return ["fact", "largest k probed", "radius per residual index", "first k that fails, per index"], rows


def margin_table(grids: dict) -> tuple[list[str], list[list]]:
    """Header and rows: per fact and residual index, the AUC difference over the statistics probe in
    standard errors at each k ("-": not computed, where the AUC or the balanced accuracy already
    fails or the statistics probe reads k perfectly)."""
    rows = []
    for fact, grid in grids.items():
        z = grid.z
        for index in range(z.shape[0]):
            rows.append([fact, index, ", ".join(f"k={k}: {_z_cell(float(z[index, c]))}" for c, k in enumerate(grid.ks))])
    return ["fact", "residual index", "AUC difference over the statistics probe, in standard errors"], rows


def powered_bins_table(binned: dict, boundaries: tuple[float, ...], rule) -> tuple[list[str], list[list]]:
    """Header and rows: per fact and edge-count bin, the ks scored there (each answer in enough
    graphs of the bin), the fewest graphs of an answer among them and the radius per residual index
    over those ks."""
    from lib.paths.powered_probes import powered_radii, scored_columns

    rows = []
    for fact, grids in binned.items():
        for name, grid in zip(edge_bin_names(boundaries), grids):
            columns = scored_columns(grid)
            ks = [grid.ks[c] for c in columns]
            rows.append([fact, name, str(ks) if ks else "-",
                         min(int(grid.rarer_graphs[c]) for c in columns) if ks else "-",
                         str(powered_radii(grid, rule, scored_only=True)) if ks else "-"])
    return ["fact", "edge-count bin", "k scored", "fewest graphs of an answer", "radius per residual index"], rows


def model_radii_table(radii: dict[tuple[int, int], dict[str, list[int]]], facts: tuple[str, ...]
                      ) -> tuple[list[str], list[list]]:
    """Header and rows: per model (depth, seed), the radius per residual index of each fact."""
    rows = [[depth, seed] + [str(by_fact[fact]) if fact in by_fact else "-" for fact in facts]
            for (depth, seed), by_fact in sorted(radii.items())]
    return ["layers", "seed"] + [f"{fact}: radius per index" for fact in facts], rows


def law_table(fits: dict[str, dict[str, dict]]) -> tuple[list[str], list[list]]:
    """Header and rows: per set of points (name -> `lib.paths.radius_laws.fit_laws`) and law, the
    root mean square and mean error of the radius and the points predicted exactly."""
    rows = [[name, law, f"{fit['rms']:.2f}", f"{fit['mean_error']:+.2f}", f"{fit['exact']} of {fit['points']}"]
            for name, by_law in fits.items() for law, fit in by_law.items()]
    return ["radii", "law", "RMS error", "mean error (measured - law)", "predicted exactly"], rows


def capacity_table(result: dict) -> tuple[list[str], list[list]]:
    """Header and rows of `lib.chapters.ch7_probing.capacity_experiment`: per model, its MSE and the
    R^2 of the statistics probe on its answers, on held-out graphs within and beyond the capacity;
    last, the R^2 of the statistics probe on the true answers."""
    rows = [[f"trained {row['trained on']} the capacity", row["seed"], f"{row['mse_within']:.3f}",
             f"{row['mse_beyond']:.3f}", f"{row['r2_within']:.3f}", f"{row['r2_beyond']:.3f}"]
            for row in result["rows"]]
    rows.append(["the true answer", "-", "-", "-", f"{result['truth_r2']['within']:.3f}",
                 f"{result['truth_r2']['beyond']:.3f}"])
    return (["model", "seed", "MSE, graphs within", "MSE, graphs beyond", "R^2 of the statistics probe, within",
             "R^2 of the statistics probe, beyond"], rows)


def check_powered(results: dict) -> None:
    """Assert what the powered probes, the laws and the capacity experiment must satisfy on any
    machine: every k probed holds at least the minimum of graphs of its rarer answer, radii lie in
    [first k - 1, largest k], one radius per residual index, the law fits count their points, the
    capacity sets are matched."""
    powered = results["powered"]
    minimum = powered["min_graphs"]
    for model in powered["models"].values():
        depth = model["depth"]
        for fact, grid in model["grids"].items():
            assert all(count >= minimum for count in grid["rarer_graphs"]), fact
            assert len(grid["radii"]) == depth + 1 and len(grid["auc"]) == depth + 1
            assert all(grid["ks"][0] - 1 <= r <= grid["ks"][-1] for r in grid["radii"])
    for name, by_law in results["laws"]["fits"].items():
        assert len({fit["points"] for fit in by_law.values()}) == 1
        assert all(0 <= fit["exact"] <= fit["points"] for fit in by_law.values())
    capacity = results["capacity"]
    assert capacity["training_graphs"] > 0 and capacity["test_graphs"] > 0
    assert all(0 <= row["mse_within"] and 0 <= row["mse_beyond"] for row in capacity["rows"])
    recorded = results["recorded"]
    assert recorded["laws.best"]["value"] == " and ".join(results["laws"]["best"])


def margin_extremes(grids: dict, rule) -> tuple[dict, dict | None]:
    """The passing cell with the smallest AUC margin over the rival in standard errors (where the
    rival is below 1), and the cell that fails on the rival alone with the largest margin (None
    where none does): fact, residual index, k and z."""
    from lib.paths.powered_probes import passes

    passing, near = [], []
    for fact, grid in grids.items():
        ok, z = passes(grid, rule), grid.z
        reads = (grid.auc >= rule.auc) & (grid.balanced >= rule.balanced_accuracy)
        for index in range(z.shape[0]):
            for column, k in enumerate(grid.ks):
                value = float(z[index, column])
                if value != value or not float(grid.rival_auc[column]) < 1:
                    continue
                cell = {"fact": fact, "index": index, "k": k, "z": value}
                if bool(ok[index, column]):
                    passing.append(cell)
                elif bool(reads[index, column]):
                    near.append(cell)
    weakest = min(passing, key=lambda c: c["z"]) if passing else {"fact": "-", "index": "-", "k": "-",
                                                                  "z": float("nan")}
    return weakest, (max(near, key=lambda c: c["z"]) if near else None)
