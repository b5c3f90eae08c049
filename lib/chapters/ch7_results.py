"""What chapter 7 reports: the models, reach radii (distance on reachable graphs, reachability,
edge facts; each stated only where the tuned balanced accuracy and the AUC agree and the layer
beats the statistics probe; per edge-count bin and per training seed; with their controls),
attention, ablation and patching effects per layer and the comparison with the hand-built model,
as tables, summary sentences and the results JSON. Every sentence is built from numbers of the run; the verdicts (one hop per layer or faster, whether the
probed subspace is used, which heads matter) are computed, not written in advance."""

from __future__ import annotations

from lib.book.tables import format_value, markdown_table, scientific
from lib.chapters.ch7 import grid_results, reach_rows
from lib.paths.causal import SHORTCUTS, Ablation, Patching
from lib.paths.layer_probes import (
    DISTANCE, EDGE_STATISTICS, FACTS, FROM_SOURCE, FROM_TARGET, GRAPH_STATISTICS, REACHABLE, REACHABLE_WITH_EDGES,
    ModelProbes, ProbeGrid, ReadCriteria, doubling_radii, one_hop_radii,
)
from lib.paths.attention_fractions import EDGE_QUERY_CATEGORIES, TARGET_QUERY_CATEGORIES, AttentionFractions


#: Below this size (in absolute value) a within-distance correlation is reported as no shortcut.
WEAK_CORRELATION = 0.1


def growth_verdict(radii: list[int | None], largest: int) -> str:
    """How reach radii (per residual index; None where no radius is stated) compare with one hop
    per layer, in words: where they run ahead of it and the largest single-layer step between
    stated radii."""
    hop = one_hop_radii(len(radii) - 1, largest)
    stated = [layer for layer in range(1, len(radii)) if radii[layer] is not None]
    unstated = [layer for layer in range(1, len(radii)) if radii[layer] is None]
    faster = [layer for layer in stated if radii[layer] > hop[layer]]
    slower = [layer for layer in stated if radii[layer] < hop[layer]]
    tail = (f"; no radius is stated after layer{'s' if len(unstated) > 1 else ''} {_layers(unstated)} (the "
            f"tuned cut-off and the AUC disagree there)" if unstated else "")
    if not faster:
        plural = "s" if len(slower) > 1 else ""
        return ("never ahead of one hop per layer" + (" where a radius is stated" if unstated else "")
                + (f" (behind it after layer{plural} {_layers(slower)})" if slower else "") + tail)
    text = f"ahead of one hop per layer after layer{'s' if len(faster) > 1 else ''} {_layers(faster)}"
    if unstated:   # a step across an unstated layer would hide where the radius grew
        return text + tail
    step = max(stated, key=lambda layer: radii[layer] - radii[layer - 1])
    return text + f"; its largest step is from k = {radii[step - 1]} to k = {radii[step]} in layer {step}"


def settled_layer(radii: list[int | None], largest: int) -> int | None:
    """The first residual index whose stated radius reaches `largest` (None: none)."""
    return next((layer for layer, radius in enumerate(radii) if radius is not None and radius >= largest), None)


def _layers(layers: list[int]) -> str:
    return ", ".join(str(layer) for layer in layers)


def _span(values) -> str:
    """The range of a score grid's values (NaN ignored), as "low-high" (no k: "none")."""
    finite = values[~values.isnan()]
    return "(no k probed)" if not len(finite) else f"{float(finite.min()):.3f}-{float(finite.max()):.3f}"


def _radius_list(radii: list[int | None]) -> str:
    return "[" + ", ".join("disputed" if radius is None else str(radius) for radius in radii) + "]"


def radius_words(radii: dict) -> str:
    """One fact's radii in words: the stated ones, and those of each criterion."""
    text = (f"{_radius_list(radii['stated'])} (balanced accuracy at the tuned cut-off: {radii['tuned']}; AUC: "
            f"{radii['auc']}")
    if "beyond_statistics" in radii:
        text += f"; AUC beyond the statistics probe: {radii['beyond_statistics']}"
    return text + f"; untuned cut-off at logit 0, for comparison: {radii['untuned']})"


def bins_sentence(radii: dict[str, dict], boundaries: tuple[float, ...], facts: tuple[str, ...]) -> str:
    """The stated radii within each edge-count bin, for `facts`."""
    names = edge_bin_names(boundaries)
    parts = []
    for fact in facts:
        cells = [f"{name}: {_radius_list(entry['stated'])} (k scored {entry['ks']})" if entry["ks"] else
                 f"{name}: no k has both answers often enough" for name, entry in zip(names, radii[fact]["bins"])]
        parts.append(f"\"{fact}\" " + "; ".join(cells))
    return ("Within bins of the edge count (each probe scored on the held-out graphs of the bin, its cut-off tuned "
            "on the training graphs of the bin, against the statistics probe in the same bin, over the k with both "
            "answers often enough in the bin; a radius below the first k scored reads none), the stated radii per "
            "residual index are: " + ". ".join(parts) + ".")


def edge_bin_names(boundaries: tuple[float, ...]) -> list[str]:
    """Names of the edge-count bins of `lib.paths.layer_probes.edge_count_bins`."""
    edges = [f"{b:g}" for b in boundaries]
    if not edges:
        return ["all graphs"]
    return ([f"at most {edges[0]} edges"] + [f"more than {a}, at most {b} edges" for a, b in zip(edges, edges[1:])]
            + [f"more than {edges[-1]} edges"])


def largest_ks(probes: ModelProbes) -> dict[str, int]:
    """Per fact, the largest k probed (the cap of its radii)."""
    return {fact: max(grid.ks) if grid.ks else 0 for fact, grid in probes.grids.items()}


def first_index(radii: list[int | None], k: int) -> int | None:
    """The first residual index whose stated radius reaches `k` (None: none)."""
    return next((index for index, radius in enumerate(radii) if radius is not None and radius >= k), None)


def random_reads_sentence(random_radii: dict[str, dict], random_init: ModelProbes) -> str:
    """What a randomly initialised model of the same shape reads, fact by fact, under every
    criterion (the same calibration and rival as the trained model's)."""
    parts = []
    for fact, grid in random_init.grids.items():
        radii = random_radii[fact]
        if not grid.ks:
            parts.append(f"\"{fact}\": no k probed")
            continue
        stated = [r for r in radii["stated"] if r is not None]
        best = max(stated) if stated else None
        read = ("nothing beyond the statistics probe" if best is None or not grid.ks or best < grid.ks[0]
                else f"up to k = {best} (from residual index {first_index(radii['stated'], best)})")
        parts.append(f"\"{fact}\": {read}; without the rival, up to k = {max(radii['tuned'])} at the tuned cut-off "
                     f"and k = {max(radii['auc'])} by AUC (best AUC {float(grid.scores.auc.nan_to_num(0).max()):.3f})")
        if any(radii["disputed"]):
            parts[-1] += ", disputed at some index"
    return ("A randomly initialised model of the same shape, probed and scored the same way, reads " + "; ".join(parts)
            + ". What a trained model reads beyond this is what training added.")


def statistics_sentence(statistics: dict[str, ProbeGrid], criteria: ReadCriteria) -> str:
    """What the statistics probe alone reads: its held-out AUC per k of every fact."""
    parts = [f"\"{fact}\" AUC " + ", ".join(f"{auc:.3f} at k = {k}"
                                           for k, auc in zip(grid.ks, grid.scores.auc[0].tolist()))
             for fact, grid in statistics.items() if grid.ks]
    return (f"The rival probe reads the graph's statistics alone ({', '.join(GRAPH_STATISTICS)}; at edge tokens also "
            f"the {' and '.join(EDGE_STATISTICS)}): " + "; ".join(parts) + f". A layer reads a fact at k only where "
            f"its AUC beats this by at least {criteria.margin:g} (or matches it where it leaves less room than that).")


def seeds_sentence(spread: dict[str, dict], seeds: list[int]) -> str:
    """The spread of the stated radii over the models of chapter 2's recipe with other seeds."""
    if len(seeds) < 2:
        return (f"Only chapter 2's model (seed {seeds[0]}) was probed (`probe_seeds` = 1): the radii above are one "
                f"model's, with no spread over training seeds.")
    parts = []
    for fact in (DISTANCE, REACHABLE_WITH_EDGES):
        ranges = ", ".join("no stated radius" if r is None else (f"{r[0]}" if r[0] == r[1] else f"{r[0]}-{r[1]}")
                           for r in spread[fact]["range"])
        parts.append(f"\"{fact}\" per residual index: {ranges} (seeds whose radius is disputed, per index: "
                     f"{spread[fact]['disputed_seeds']})")
    return (f"Over {len(seeds)} models of chapter 2's recipe (seeds {_layers(seeds)}), the stated radii range over: "
            + "; ".join(parts) + ".")


def model_table(rows: list[dict], unreachable_label: int) -> str:
    """Markdown table of `model_rows`."""
    labels = list(rows[0]["mse_by_label"])
    names = ["unreachable" if label == unreachable_label else f"d = {label}" for label in labels]
    return markdown_table(
        ["model", "layers", "source", "MSE"] + [f"MSE, {name}" for name in names],
        [[r["model"], r["n_layers"], r["source"], format_value(r["mse"], 3, trailing_zeros=True)]
         + [format_value(r["mse_by_label"][label], 3, trailing_zeros=True) for label in labels] for r in rows])


def attention_rows(fractions: AttentionFractions) -> list[dict]:
    """Per head and query kind: each category's share of attention, its chance share and the ratio."""
    rows = []
    for query, shares, chance, categories in (
            ("edge tokens", fractions.from_edges, fractions.edge_chance, EDGE_QUERY_CATEGORIES),
            ("target token", fractions.from_target, fractions.target_chance, TARGET_QUERY_CATEGORIES)):
        for layer in range(shares.shape[0]):
            for head in range(shares.shape[1]):
                for index, category in enumerate(categories):
                    share, base = float(shares[layer, head, index]), float(chance[index])
                    rows.append({"query": query, "layer": layer + 1, "head": head + 1, "category": category,
                                 "share": share, "chance": base, "ratio": share / base})
    return rows


def strongest_preferences(rows: list[dict], query: str) -> list[dict]:
    """For each head, the category of `query` rows it favours most over chance."""
    best: dict[tuple[int, int], dict] = {}
    for row in rows:
        key = (row["layer"], row["head"])
        if row["query"] == query and (key not in best or row["ratio"] > best[key]["ratio"]):
            best[key] = row
    return [best[key] for key in sorted(best)]


def preference_table(rows: list[dict]) -> str:
    """Markdown table of `strongest_preferences` for both query kinds."""
    lines = []
    for query in ("edge tokens", "target token"):
        for row in strongest_preferences(rows, query):
            lines.append([f"layer {row['layer']} head {row['head']}", query, row["category"],
                          format_value(row["share"], 3, trailing_zeros=True),
                          format_value(row["chance"], 3, trailing_zeros=True), f"{row['ratio']:.1f}x"])
    return markdown_table(["head", "queries at", "favoured keys", "share", "uniform share", "ratio"], lines)


def ablation_rows(ablation: Ablation) -> list[dict]:
    """Per ablated component: overall MSE, its increase over the intact model and the MSE by label."""
    return [{"component": name, "mse": float(overall), "increase": float(increase),
             "mse_by_label": dict(zip(ablation.labels, loss.tolist()))}
            for name, overall, increase, loss in zip(ablation.components, ablation.overall, ablation.increase(),
                                                      ablation.loss)]


def _best(rows: list[dict], key: str, skip: str = "none") -> dict:
    return max((r for r in rows if r["component"] != skip), key=lambda r: r[key])


def patching_sentence(patching: Patching) -> str:
    """Patching per layer in words; the verdict rests on the layers before the last."""
    rows = patching.by_layer()
    middle = [row for row in rows if not row["last"]]
    last = rows[-1]

    def values(key: str, group: list[dict]) -> str:
        return "[" + ", ".join(f"{row[key]:.2f}" for row in group) + "]"

    text = (f"Patching the {patching.dimension}-dimensional subspace of the distance probes from a donor graph at "
            f"another distance ({patching.pairs:,} pairs): after layer {last['layer']}, whose stream the readout "
            f"reads, it moves the prediction by {last['probe']:.2f} per unit of label difference (random subspaces of "
            f"that dimension {last['random_mean']:.2f}, the whole token {last['token']:.2f}), which the readout "
            f"makes nearly circular.")
    if not middle:
        return text + " The model has no intermediate layer to test."
    used = [row["layer"] for row in middle if row["beats_every_random"] and row["share_of_token"] >= 0.5]
    above = [row["layer"] for row in middle if row["beats_every_random"]]
    shares = ", ".join(f"{row['share_of_token']:.0%}" for row in middle)
    text += (f" After the intermediate layer{'s' if len(middle) > 1 else ''} {_layers([r['layer'] for r in middle])} "
             f"it moves it by "
             f"{values('probe', middle)}, against {values('random_mean', middle)} for random subspaces (largest "
             f"{values('random_max', middle)}) and {values('token', middle)} for the whole token: the probes' subspace "
             f"carries {shares} of the token's effect. ")
    if len(used) == len(middle):
        text += ("At every intermediate layer it beats every random subspace and carries most of the token's effect: "
                 "the model uses what the probes read before its last layer.")
    elif used:
        text += (f"It beats every random subspace and carries most of the token's effect after layer"
                 f"{'s' if len(used) > 1 else ''} {_layers(used)} only.")
    elif above:
        text += (f"It beats every random subspace after layer{'s' if len(above) > 1 else ''} {_layers(above)}, but "
                 f"carries less than half of the token's effect there: most of what the token passes on lies "
                 f"outside the probed directions.")
    else:
        text += "At no intermediate layer does it beat every random subspace of its dimension."
    return text


def shortcut_sentence(shortcuts: dict[str, float]) -> str:
    """The within-distance correlations of the error with every statistic tested, in words."""
    strongest = max(shortcuts, key=lambda name: abs(shortcuts[name]))
    others = "; ".join(f"{name} {value:+.3f}" for name, value in shortcuts.items() if name != strongest)
    if abs(shortcuts[strongest]) < WEAK_CORRELATION:
        return (f"Within each true distance, the error follows none of the {len(shortcuts)} graph statistics tested: "
                f"its largest correlation is {shortcuts[strongest]:+.3f}, with the {strongest} ({others}). Other "
                f"shortcuts are not ruled out by this.")
    return (f"Within each true distance, the error goes with the {strongest} (correlation {shortcuts[strongest]:+.3f}; "
            f"{others}; {len(shortcuts)} statistics tested): a shortcut in place of part of the search.")


def summary_lines(*, base: ModelProbes, random_init: ModelProbes, statistics: dict[str, ProbeGrid],
                  radii: dict[int, dict[str, dict]], random_radii: dict[str, dict], base_depth: int,
                  criteria: ReadCriteria, bins: tuple[float, ...], spread: dict[str, dict], seeds: list[int],
                  attention: list[dict], ablation: list[dict], patching: Patching, shortcuts: dict[str, float],
                  agreement: dict) -> list[str]:
    """The chapter's conclusions, each from the run's numbers. A radius is stated only where the
    tuned balanced accuracy and the AUC agree and the layer beats the statistics probe."""
    largest = largest_ks(base)
    own = radii[base_depth]
    rule = (f"a layer reads a fact up to k when, for every k' <= k, the held-out balanced accuracy at the cut-off "
            f"tuned on the training graphs is at least {criteria.balanced_accuracy:g}, the held-out AUC at least "
            f"{criteria.auc:g}, and the AUC beats the statistics probe by {criteria.margin:g}; where the first two "
            f"give different radii, the radius is disputed")
    lines = [
        f"Reading rule: {rule}.",
        f"On graphs whose target is reachable, the probes of chapter 2's {base_depth}-layer model read \"{DISTANCE}\" "
        f"(k probed up to {largest[DISTANCE]}) up to k = {radius_words(own[DISTANCE])} after residual index "
        f"0..{base_depth}; one hop per layer would give {one_hop_radii(base_depth, largest[DISTANCE])} and doubling "
        f"{doubling_radii(base_depth, largest[DISTANCE])}: the stated radii are "
        f"{growth_verdict(own[DISTANCE]['stated'], largest[DISTANCE])}.",
        f"Reachability on all graphs is read up to k = {radius_words(own[REACHABLE])}, where the statistics probe "
        f"alone scores AUC {_span(statistics[REACHABLE].scores.auc)}; on the graphs where 1 and t both have an edge "
        f"(statistics probe: AUC {_span(statistics[REACHABLE_WITH_EDGES].scores.auc)}) up to "
        f"k = {radius_words(own[REACHABLE_WITH_EDGES])}: "
        f"{growth_verdict(own[REACHABLE_WITH_EDGES]['stated'], largest[REACHABLE_WITH_EDGES])}.",
        statistics_sentence(statistics, criteria),
        bins_sentence(own, bins, (DISTANCE, REACHABLE_WITH_EDGES)),
    ]
    shuffled = {fact: float(grid.shuffled.auc.nan_to_num(0).max()) for fact, grid in base.grids.items()
                if grid.shuffled is not None and grid.ks}
    lines.append(
        "Controls: trained on shuffled labels, no probe's held-out AUC exceeds "
        + ", ".join(f"{value:.3f} for \"{fact}\"" for fact, value in shuffled.items()) + ". "
        + random_reads_sentence(random_radii, random_init))
    edge_facts = [fact for fact in (FROM_SOURCE, FROM_TARGET) if base.grids[fact].ks]
    if edge_facts:
        lines.append("At edge tokens, among edges reachable from that end: "
                     + " and ".join(f"\"{fact}\" is read up to k = {radius_words(own[fact])}" for fact in edge_facts)
                     + ".")
    lines.append(seeds_sentence(spread, seeds))
    for depth in sorted(radii):
        if depth != base_depth:
            lines.append(
                f"The {depth}-layer model of the same recipe, on the same reachable graphs, reads \"{DISTANCE}\" up "
                f"to k = {_radius_list(radii[depth][DISTANCE]['stated'])}, "
                f"{growth_verdict(radii[depth][DISTANCE]['stated'], largest[DISTANCE])}; it reads reachability "
                f"(1 and t with an edge) up to k = {_radius_list(radii[depth][REACHABLE_WITH_EDGES]['stated'])}.")
    done = {depth: layer for depth in sorted(radii)
            if (layer := settled_layer(radii[depth][DISTANCE]["stated"], largest[DISTANCE])) is not None}
    if done:
        lines.append(
            f"Every threshold probed (up to {largest[DISTANCE]}) has a stated radius from layer "
            + "; ".join(f"{layer} of the {depth}-layer model" for depth, layer in done.items())
            + ". The last layer's stream is what the linear readout reads, so an accurate model's probes read "
              "every k there; the informative layers are the earlier ones.")
    for query in ("target token", "edge tokens"):
        top = max(strongest_preferences(attention, query), key=lambda r: r["ratio"])
        lines.append(f"Attention from the {query}: the most selective head is layer {top['layer']} head "
                     f"{top['head']}, which gives {top['share']:.2f} of its attention to {top['category']} "
                     f"({top['ratio']:.1f} times the {top['chance']:.2f} of uniform attention).")
    worst, mildest = _best(ablation, "increase"), min((r for r in ablation if r["component"] != "none"),
                                                      key=lambda r: r["increase"])
    intact = next(r for r in ablation if r["component"] == "none")["mse"]
    lines.append(f"Mean-ablating {worst['component']} raises the MSE most, from {intact:.3f} to {worst['mse']:.2f}; "
                 f"{mildest['component']} least (to {mildest['mse']:.3f}).")
    lines.append(patching_sentence(patching))
    lines.append(shortcut_sentence(shortcuts))
    exact = agreement["trained_exact"]
    lines.append(
        f"The hand-built model answers every graph exactly (MSE {scientific(agreement['hand_built_mse'])}) with "
        f"{agreement['hand_built_layers']} layers; the trained one, rounded, is exact on {exact['within_depth']:.1%} "
        f"of the reachable graphs whose distance is at most its depth, {exact['beyond_depth']:.1%} of those beyond "
        f"({agreement['counts']['beyond_depth']} graphs) and {exact['unreachable']:.1%} of the unreachable ones.")
    return lines


def chapter_results(*, config, models: list[dict], largest: int, probes: dict[int, ModelProbes],
                    base_depth: int, criteria: ReadCriteria, random_init: ModelProbes,
                    statistics: dict[str, ProbeGrid], radii: dict[int, dict[str, dict]],
                    random_radii: dict[str, dict], bins: tuple[float, ...], seed_results: dict[int, dict],
                    spread: dict[str, dict], attention: list[dict], ablation: list[dict], patching: Patching,
                    shortcuts: dict[str, float], agreement: dict, conclusions: list[str],
                    seconds: dict[str, float]) -> dict:
    """The chapter's results JSON (`conclusions`: the summary sentences; `largest`: the largest
    finite distance in the probe graphs). Every probe grid carries its ks, its held-out AUC and
    tuned and untuned balanced accuracy, the statistics probe's scores, the scores per edge-count
    bin and its radii under every criterion, for the trained models and the random one;
    `seed_results`: per seed of chapter 2's recipe, the `grid_results` of its model."""
    return {
        "seed": config.seed, "smoke": config.smoke, "models": models, "largest_distance": largest,
        "reach_threshold": config.reach_threshold, "auc_threshold": config.auc_threshold,
        "statistics_margin": criteria.margin, "facts": list(FACTS),
        "held_out_graphs": config.probe_test_graphs, "edge_count_bins": list(bins),
        "edge_count_bin_names": edge_bin_names(bins),
        "statistics_features": {"graph": list(GRAPH_STATISTICS), "edge": list(EDGE_STATISTICS)},
        "probes": {str(depth): {"grids": grid_results(model, statistics, radii[depth]),
                                "distance_r2": model.distance_r2.tolist()} for depth, model in probes.items()},
        "probes_random_init": grid_results(random_init, None, random_radii),
        "reach_radius": {str(depth): value for depth, value in reach_rows(radii).items()},
        "reach_radius_random_init": {fact: value["stated"] for fact, value in random_radii.items()},
        "reachable_with_edges_radius": radii[base_depth][REACHABLE_WITH_EDGES],
        "probes_by_seed": {str(seed): value for seed, value in seed_results.items()}, "seed_spread": spread,
        "attention": attention, "ablation": ablation,
        "patching": {"dimension": patching.dimension, "pairs": patching.pairs, "probe": patching.probe.tolist(),
                     "random": patching.random.tolist(), "token": patching.token.tolist(),
                     "by_layer": patching.by_layer()},
        "shortcut_correlations": shortcuts, "shortcuts": list(SHORTCUTS), "hand_built": agreement,
        "conclusions": conclusions, "seconds": seconds,
    }


__all__ = ["WEAK_CORRELATION", "ablation_rows", "attention_rows", "bins_sentence", "chapter_results",
           "edge_bin_names", "first_index", "growth_verdict", "largest_ks", 
           "model_table", "patching_sentence", "preference_table", "radius_words", "random_reads_sentence",
           "seeds_sentence", "settled_layer", "shortcut_sentence", "statistics_sentence", "strongest_preferences",
           "summary_lines"]


# --- What the notebook tests check (tests/test_notebooks.py finds these by chapter number) ---

#: Keys chapter 7's results JSON must contain (it may write more).
REQUIRED_KEYS = frozenset({"models", "probes", "probes_random_init", "reach_radius", "reach_radius_random_init",
                           "auc_threshold", "statistics_margin", "edge_count_bins", "reachable_with_edges_radius",
                           "probes_by_seed", "seed_spread", "attention", "ablation", "patching",
                           "shortcut_correlations", "hand_built", "conclusions"})


def check_results(results: dict) -> None:
    """Assert what chapter 7's results JSON must satisfy beyond holding `REQUIRED_KEYS`."""
    assert results["hand_built"]["hand_built_mse"] < 1e-6
    bins = len(results["edge_count_bins"]) + 1
    for depth, probes in results["probes"].items():
        assert set(probes["grids"]) == set(results["facts"])
        for grid in probes["grids"].values():
            for name in ("auc", "tuned", "untuned"):
                assert len(grid[name]) == int(depth) + 1 and len(grid[name][0]) == len(grid["ks"])
                assert len(grid["statistics"][name]) == 1 and len(grid["shuffled"][name]) == int(depth) + 1
            radii = grid["radii"]
            assert all(len(radii[key]) == int(depth) + 1 for key in ("tuned", "auc", "stated", "beyond_statistics"))
            # A radius is stated only where both criteria agree, and never beyond the statistics probe.
            for stated, tuned, auc, beyond in zip(radii["stated"], radii["tuned"], radii["auc"],
                                                  radii["beyond_statistics"]):
                assert (stated is None) == (tuned != auc) and (stated is None or stated <= min(tuned, beyond))
            assert len(radii["bins"]) == len(grid["by_bin"]) == bins
    assert set(results["probes_random_init"]) == set(results["facts"])
    assert set(results["seed_spread"]) == set(results["facts"]) and len(results["probes_by_seed"]) >= 1
    assert {r["component"] for r in results["ablation"]} >= {"none", "layer 1 head 1", "layer 1 MLP"}
    assert len(results["patching"]["probe"]) == len(results["patching"]["token"]) == \
        len(results["patching"]["by_layer"]) > 0
