"""What chapter 7 reports: the models, reach radii, attention, ablation and patching effects and
the comparison with the hand-built model, as tables, summary sentences and the results JSON.
Every sentence is built from numbers of the run; the verdicts (one hop per layer or faster, which
heads matter) are computed, not written in advance."""

from __future__ import annotations

import torch

from lib.book.tables import format_value, markdown_table, scientific
from lib.chapters.ch7 import GraphSet, TrainedModel
from lib.chapters.ch7_causal import SHORTCUTS, Ablation, HandBuilt, Patching, loss_by_label
from lib.chapters.ch7_probing import FACTS, ModelProbes, doubling_radii, one_hop_radii
from lib.paths.attention_fractions import EDGE_QUERY_CATEGORIES, TARGET_QUERY_CATEGORIES, AttentionFractions


#: Below this size (in absolute value) a within-distance correlation is reported as no shortcut.
WEAK_CORRELATION = 0.1


def growth_verdict(radii: list[int], largest: int) -> str:
    """How reach radii (per residual index) compare with one hop per layer, in words: where they
    run ahead of it and the largest single-layer step."""
    hop = one_hop_radii(len(radii) - 1, largest)
    faster = [layer for layer in range(1, len(radii)) if radii[layer] > hop[layer]]
    slower = [layer for layer in range(1, len(radii)) if radii[layer] < hop[layer]]
    if not faster:
        plural = "s" if len(slower) > 1 else ""
        return "never ahead of one hop per layer" + (f" (behind it after layer{plural} {_layers(slower)})"
                                                    if slower else "")
    step = max(range(1, len(radii)), key=lambda layer: radii[layer] - radii[layer - 1])
    return (f"ahead of one hop per layer after layer{'s' if len(faster) > 1 else ''} {_layers(faster)}; "
            f"its largest step is from k = {radii[step - 1]} to k = {radii[step]} in layer {step}")


def settled_layer(radii: list[int], largest: int) -> int | None:
    """The first residual index whose probes read every threshold up to `largest` (None: none)."""
    return next((layer for layer, radius in enumerate(radii) if radius >= largest), None)


def _layers(layers: list[int]) -> str:
    return ", ".join(str(layer) for layer in layers)


def model_rows(models: dict[str, TrainedModel], graphs: GraphSet, predictions: dict[str, torch.Tensor]) -> list[dict]:
    """Per model: depth, where it came from, seconds, MSE on the held-out graphs overall and by label."""
    labels = tuple(sorted(int(v) for v in graphs.labels.unique()))
    rows = []
    for name, model in models.items():
        prediction = predictions[name]
        rows.append({"model": name, "n_layers": model.n_layers, "source": model.source, "seconds": model.seconds,
                     "mse": float(((prediction - graphs.labels) ** 2).mean()),
                     "mse_by_label": dict(zip(labels, loss_by_label(prediction, graphs.labels, labels).tolist()))})
    return rows


def model_table(rows: list[dict], unreachable_label: int) -> str:
    """Markdown table of `model_rows`."""
    labels = list(rows[0]["mse_by_label"])
    names = ["unreachable" if label == unreachable_label else f"d = {label}" for label in labels]
    return markdown_table(
        ["model", "layers", "source", "MSE"] + [f"MSE, {name}" for name in names],
        [[r["model"], r["n_layers"], r["source"], format_value(r["mse"], 3, trailing_zeros=True)]
         + [format_value(r["mse_by_label"][label], 3, trailing_zeros=True) for label in labels] for r in rows])


def reach_rows(probes: dict[int, ModelProbes], threshold: float) -> dict[int, dict[str, list[int]]]:
    """Reach radius per residual index of every fact, for every model depth."""
    return {depth: {fact: model.grids[fact].reach_radius(threshold) for fact in FACTS}
            for depth, model in probes.items()}


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


def hand_built_rows(prediction: torch.Tensor, hand_built: HandBuilt, graphs: GraphSet, n_layers: int) -> dict:
    """Where the trained model and the hand-built one agree: exactness of each, by whether the
    distance fits within the trained model's depth."""
    rounded = prediction.round()
    reachable = graphs.reachable
    within = reachable & (graphs.graphs.distance <= n_layers)
    beyond = reachable & (graphs.graphs.distance > n_layers)
    unreachable = ~reachable

    def share(mask: torch.Tensor, predicted: torch.Tensor) -> float:
        return float((predicted[mask] == graphs.labels[mask]).double().mean()) if mask.any() else float("nan")

    return {
        "hand_built_mse": float(((hand_built.prediction - graphs.labels) ** 2).mean()),
        "hand_built_layers": int(hand_built.knows.shape[0]),
        "counts": {"within_depth": int(within.sum()), "beyond_depth": int(beyond.sum()),
                   "unreachable": int(unreachable.sum())},
        "trained_exact": {"within_depth": share(within, rounded), "beyond_depth": share(beyond, rounded),
                          "unreachable": share(unreachable, rounded)},
        "hand_built_exact": {"within_depth": share(within, hand_built.prediction.round()),
                             "beyond_depth": share(beyond, hand_built.prediction.round()),
                             "unreachable": share(unreachable, hand_built.prediction.round())},
    }


def _best(rows: list[dict], key: str, skip: str = "none") -> dict:
    return max((r for r in rows if r["component"] != skip), key=lambda r: r[key])


def summary_lines(*, base: ModelProbes, random_init: ModelProbes, radii: dict[int, dict[str, list[int]]],
                  base_depth: int, threshold: float, largest: int, attention: list[dict], ablation: list[dict],
                  patching: Patching, shortcuts: dict[str, float], agreement: dict) -> list[str]:
    """The chapter's conclusions, each from the run's numbers."""
    target = FACTS[0]
    lines = []
    own = radii[base_depth][target]
    lines.append(
        f"At the target token, the probes of chapter 2's {base_depth}-layer model read \"d(1, t) <= k\" "
        f"(balanced accuracy >= {threshold:g}) up to k = {own} after residual index 0..{base_depth}; one hop per "
        f"layer would give {one_hop_radii(base_depth, largest)} and doubling {doubling_radii(base_depth, largest)}: "
        f"the model is {growth_verdict(own, largest)}.")
    shuffled = float(base.grids[target].shuffled.max())
    lines.append(
        f"Controls: the same probes on shuffled labels never score above {shuffled:.3f}; on a randomly "
        f"initialised model of the same shape they reach k = {random_init.grids[target].reach_radius(threshold)}.")
    edge_best = {fact: float(base.grids[fact].accuracy[1:].nanmean(dim=1).max()) for fact in FACTS[1:]}
    edge_radii = {fact: max(radii[base_depth][fact]) for fact in FACTS[1:]}
    lines.append(
        "At edge tokens the facts a search would keep are read less well: the best layer's mean balanced accuracy "
        "over k is " + " and ".join(f"{edge_best[f]:.3f} for \"{f}\" (radius at most {edge_radii[f]})"
                                    for f in FACTS[1:]) + ".")
    for depth in sorted(radii):
        if depth != base_depth:
            lines.append(f"The {depth}-layer model of the same recipe reads k = {radii[depth][target]} at its target "
                         f"token: {growth_verdict(radii[depth][target], largest)}.")
    settled = {depth: settled_layer(radii[depth][target], largest) for depth in sorted(radii)}
    done = {depth: layer for depth, layer in settled.items() if layer is not None}
    if done:
        lines.append(
            "Every threshold up to the largest distance (" + str(largest) + ") is read from layer "
            + "; ".join(f"{layer} of the {depth}-layer model" for depth, layer in done.items())
            + ". The last layer's stream is what the linear readout reads, so an accurate model's probes read "
            "every k there; the informative layers are the earlier ones."
            + ("" if not any(layer < largest for layer in done.values()) else
               " Where the distance is settled in fewer layers than it has hops, the model is not running "
               "one-hop-per-layer search to the end."))
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
    last = len(patching.probe) - 1
    lines.append(
        f"Patching the {patching.dimension}-dimensional subspace of the distance probes from a donor graph moves "
        f"the prediction by {patching.probe[last]:.2f} per unit of label difference after the last layer "
        f"({patching.probe.tolist()[0]:.2f} after layer 1), against {patching.random[last].mean():.2f} for random "
        f"subspaces of that dimension and {patching.token[last]:.2f} for the whole target token: the probes' "
        f"subspace carries {patching.probe[last] / patching.token[last]:.0%} of the token's effect there, "
        f"{patching.probe[last] / patching.random[last].mean():.1f} times a random subspace's.")
    strongest = max(shortcuts, key=lambda name: abs(shortcuts[name]))
    others = "; ".join(f"{name} {value:+.3f}" for name, value in shortcuts.items() if name != strongest)
    if abs(shortcuts[strongest]) < WEAK_CORRELATION:
        lines.append(f"Within each true distance, the error follows none of the graph statistics: its largest "
                     f"correlation is {shortcuts[strongest]:+.3f}, with the {strongest} ({others}).")
    else:
        lines.append(f"Within each true distance, the error goes with the {strongest} (correlation "
                     f"{shortcuts[strongest]:+.3f}; {others}): a shortcut in place of part of the search.")
    exact = agreement["trained_exact"]
    lines.append(
        f"The hand-built model answers every graph exactly (MSE {scientific(agreement['hand_built_mse'])}) with "
        f"{agreement['hand_built_layers']} layers; the trained one, rounded, is exact on {exact['within_depth']:.1%} "
        f"of the reachable graphs whose distance is at most its depth, {exact['beyond_depth']:.1%} of those beyond "
        f"({agreement['counts']['beyond_depth']} graphs) and {exact['unreachable']:.1%} of the unreachable ones.")
    return lines


def chapter_results(*, config, models: list[dict], largest: int, probes: dict[int, ModelProbes],
                    random_init: ModelProbes, radii: dict[int, dict[str, list[int]]], attention: list[dict],
                    ablation: list[dict], patching: Patching, shortcuts: dict[str, float], agreement: dict,
                    conclusions: list[str], seconds: dict[str, float]) -> dict:
    """The chapter's results JSON (`conclusions`: the summary sentences)."""
    def grids(model: ModelProbes, controls: bool) -> dict:
        return {fact: {"ks": list(grid.ks), "accuracy": grid.accuracy.tolist(),
                       **({"shuffled": grid.shuffled.tolist()} if controls and grid.shuffled is not None else {})}
                for fact, grid in model.grids.items()}

    return {
        "seed": config.seed, "smoke": config.smoke, "models": models, "largest_distance": largest,
        "reach_threshold": config.reach_threshold,
        "probes": {str(depth): {"accuracy": grids(model, True), "distance_r2": model.distance_r2.tolist()}
                   for depth, model in probes.items()},
        "probes_random_init": grids(random_init, False),
        "reach_radius": {str(depth): value for depth, value in radii.items()},
        "attention": attention, "ablation": ablation,
        "patching": {"dimension": patching.dimension, "pairs": patching.pairs, "probe": patching.probe.tolist(),
                     "random": patching.random.tolist(), "token": patching.token.tolist()},
        "shortcut_correlations": shortcuts, "shortcuts": list(SHORTCUTS), "hand_built": agreement,
        "conclusions": conclusions, "seconds": seconds,
    }


__all__ = ["WEAK_CORRELATION", "ablation_rows", "attention_rows", "chapter_results",
           "growth_verdict", "hand_built_rows", "model_rows", "model_table", "preference_table",
           "reach_rows", "settled_layer", "strongest_preferences", "summary_lines"]


# --- What the notebook tests check (tests/test_notebooks.py finds these by chapter number) ---

#: Keys chapter 7's results JSON must contain (it may write more).
REQUIRED_KEYS = frozenset({"models", "probes", "probes_random_init", "reach_radius", "attention", "ablation",
                           "patching", "shortcut_correlations", "hand_built", "conclusions"})


def check_results(results: dict) -> None:
    """Assert what chapter 7's results JSON must satisfy beyond holding `REQUIRED_KEYS`."""
    assert results["hand_built"]["hand_built_mse"] < 1e-6
    for depth, probes in results["probes"].items():
        for grid in probes["accuracy"].values():
            assert len(grid["accuracy"]) == int(depth) + 1 and len(grid["accuracy"][0]) == len(grid["ks"])
    assert {r["component"] for r in results["ablation"]} >= {"none", "layer 1 head 1", "layer 1 MLP"}
    assert len(results["patching"]["probe"]) == len(results["patching"]["token"]) > 0
