"""What chapter 7 reports: the models, reach radii (distance on reachable graphs, reachability,
edge facts, with their controls), attention, ablation and patching effects per layer and the
comparison with the hand-built model, as tables, summary sentences and the results JSON. Every
sentence is built from numbers of the run; the verdicts (one hop per layer or faster, whether the
probed subspace is used, which heads matter) are computed, not written in advance."""

from __future__ import annotations

import torch

from lib.book.tables import format_value, markdown_table, scientific
from lib.chapters.ch7 import GraphSet, TrainedModel
from lib.chapters.ch7_hand_built import HandBuilt
from lib.paths.causal import SHORTCUTS, Ablation, Patching, loss_by_label
from lib.paths.layer_probes import (
    DISTANCE, FACTS, FROM_SOURCE, FROM_TARGET, REACHABLE, ModelProbes, doubling_radii, one_hop_radii,
)
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


def largest_ks(probes: ModelProbes) -> dict[str, int]:
    """Per fact, the largest k probed (the cap of its radii)."""
    return {fact: max(grid.ks) if grid.ks else 0 for fact, grid in probes.grids.items()}


def first_index(radii: list[int], k: int) -> int | None:
    """The first residual index whose radius reaches `k` (None: none)."""
    return next((index for index, radius in enumerate(radii) if radius >= k), None)


def random_reads_sentence(random_init: ModelProbes, threshold: float) -> str:
    """What a randomly initialised model of the same shape already reads, fact by fact."""
    parts = []
    for fact in FACTS:
        radii = random_init.grids[fact].reach_radius(threshold)
        best = max(radii)
        grid = random_init.grids[fact]
        if not grid.ks or best < grid.ks[0]:
            parts.append(f"nothing of \"{fact}\" (best balanced accuracy {float(grid.accuracy.nan_to_num(0).max()):.3f})")
        else:
            parts.append(f"\"{fact}\" up to k = {best} (from residual index {first_index(radii, best)}; "
                         f"radii {radii})")
    return ("A randomly initialised model of the same shape already reads " + "; ".join(parts)
            + ": what a trained model reads beyond this is what training added.")


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


def summary_lines(*, base: ModelProbes, random_init: ModelProbes, radii: dict[int, dict[str, list[int]]],
                  base_depth: int, threshold: float, attention: list[dict], ablation: list[dict],
                  patching: Patching, shortcuts: dict[str, float], agreement: dict) -> list[str]:
    """The chapter's conclusions, each from the run's numbers."""
    largest = largest_ks(base)
    lines = []
    own = radii[base_depth][DISTANCE]
    lines.append(
        f"On graphs whose target is reachable, the probes of chapter 2's {base_depth}-layer model read \"d(1, t) <= k\" "
        f"(balanced accuracy >= {threshold:g}, k probed up to {largest[DISTANCE]}) up to k = {own} after residual "
        f"index 0..{base_depth}; one hop per layer would give {one_hop_radii(base_depth, largest[DISTANCE])} and "
        f"doubling {doubling_radii(base_depth, largest[DISTANCE])}: the model is "
        f"{growth_verdict(own, largest[DISTANCE])}.")
    reach = radii[base_depth][REACHABLE]
    lines.append(
        f"Reachability, probed on its own, is read for targets at every distance up to k = {reach} after residual "
        f"index 0..{base_depth} (k probed up to {largest[REACHABLE]}): "
        f"{growth_verdict(reach, largest[REACHABLE])}.")
    shuffled = {fact: float(base.grids[fact].shuffled.nan_to_num(0).max()) for fact in FACTS
                if base.grids[fact].shuffled is not None and base.grids[fact].ks}
    lines.append(
        "Controls: every probe is scored on held-out graphs; trained on shuffled labels, no probe scores above "
        + ", ".join(f"{value:.3f} for \"{fact}\"" for fact, value in shuffled.items()) + ". "
        + random_reads_sentence(random_init, threshold))
    edge_best = {fact: float(base.grids[fact].accuracy[1:].nanmean(dim=1).max()) for fact in (FROM_SOURCE, FROM_TARGET)
                 if base.grids[fact].ks}
    if edge_best:
        lines.append(
            "At edge tokens, among edges reachable from that end: "
            + " and ".join(f"\"{fact}\" is read up to k = {radii[base_depth][fact]} (best layer's mean balanced "
                           f"accuracy over k {edge_best[fact]:.3f})" for fact in edge_best) + ".")
    for depth in sorted(radii):
        if depth != base_depth:
            lines.append(
                f"The {depth}-layer model of the same recipe, on the same reachable graphs, reads \"d(1, t) <= k\" up "
                f"to k = {radii[depth][DISTANCE]}, {growth_verdict(radii[depth][DISTANCE], largest[DISTANCE])}; "
                f"it reads reachability up to k = {radii[depth][REACHABLE]}.")
    done = {depth: layer for depth in sorted(radii)
            if (layer := settled_layer(radii[depth][DISTANCE], largest[DISTANCE])) is not None}
    if done:
        lines.append(
            f"Every threshold probed (up to {largest[DISTANCE]}) is read from layer "
            + "; ".join(f"{layer} of the {depth}-layer model" for depth, layer in done.items())
            + ". The last layer's stream is what the linear readout reads, so an accurate model's probes read "
              "every k there; the informative layers are the earlier ones."
            + ("" if not any(layer < min(depth, largest[DISTANCE]) for depth, layer in done.items()) else
               " A model that reads every k up to " + str(largest[DISTANCE]) + " before its last layer, in fewer "
               "layers than the distance has hops, is not running one-hop-per-layer search to the end."))
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
                    random_init: ModelProbes, radii: dict[int, dict[str, list[int]]], attention: list[dict],
                    ablation: list[dict], patching: Patching, shortcuts: dict[str, float], agreement: dict,
                    conclusions: list[str], seconds: dict[str, float]) -> dict:
    """The chapter's results JSON (`conclusions`: the summary sentences; `largest`: the largest
    finite distance in the probe graphs). Every probe grid carries its ks, its held-out accuracy,
    its shuffled-label control and the radii of both, for the trained models and the random one."""
    threshold = config.reach_threshold

    def grids(model: ModelProbes) -> dict:
        return {fact: {"ks": list(grid.ks), "accuracy": grid.accuracy.tolist(),
                       "radius": grid.reach_radius(threshold),
                       **({"shuffled": grid.shuffled.tolist(), "shuffled_radius": grid.shuffled_radius(threshold)}
                          if grid.shuffled is not None else {})}
                for fact, grid in model.grids.items()}

    return {
        "seed": config.seed, "smoke": config.smoke, "models": models, "largest_distance": largest,
        "reach_threshold": threshold, "facts": list(FACTS), "held_out_graphs": config.probe_test_graphs,
        "probes": {str(depth): {"accuracy": grids(model), "distance_r2": model.distance_r2.tolist()}
                   for depth, model in probes.items()},
        "probes_random_init": grids(random_init),
        "reach_radius": {str(depth): value for depth, value in radii.items()},
        "reach_radius_random_init": {fact: random_init.grids[fact].reach_radius(threshold) for fact in FACTS},
        "attention": attention, "ablation": ablation,
        "patching": {"dimension": patching.dimension, "pairs": patching.pairs, "probe": patching.probe.tolist(),
                     "random": patching.random.tolist(), "token": patching.token.tolist(),
                     "by_layer": patching.by_layer()},
        "shortcut_correlations": shortcuts, "shortcuts": list(SHORTCUTS), "hand_built": agreement,
        "conclusions": conclusions, "seconds": seconds,
    }


__all__ = ["WEAK_CORRELATION", "ablation_rows", "attention_rows", "chapter_results", "first_index",
           "growth_verdict", "hand_built_rows", "largest_ks", "model_rows", "model_table", "patching_sentence",
           "preference_table", "random_reads_sentence", "reach_rows", "settled_layer", "shortcut_sentence",
           "strongest_preferences", "summary_lines"]


# --- What the notebook tests check (tests/test_notebooks.py finds these by chapter number) ---

#: Keys chapter 7's results JSON must contain (it may write more).
REQUIRED_KEYS = frozenset({"models", "probes", "probes_random_init", "reach_radius", "reach_radius_random_init",
                           "attention", "ablation", "patching", "shortcut_correlations", "hand_built", "conclusions"})


def check_results(results: dict) -> None:
    """Assert what chapter 7's results JSON must satisfy beyond holding `REQUIRED_KEYS`."""
    assert results["hand_built"]["hand_built_mse"] < 1e-6
    for depth, probes in results["probes"].items():
        assert set(probes["accuracy"]) == set(results["facts"])
        for grid in probes["accuracy"].values():
            assert len(grid["accuracy"]) == int(depth) + 1 and len(grid["accuracy"][0]) == len(grid["ks"])
            assert len(grid["radius"]) == int(depth) + 1 and len(grid["shuffled_radius"]) == int(depth) + 1
    assert set(results["probes_random_init"]) == set(results["facts"])
    assert {r["component"] for r in results["ablation"]} >= {"none", "layer 1 head 1", "layer 1 MLP"}
    assert len(results["patching"]["probe"]) == len(results["patching"]["token"]) == \
        len(results["patching"]["by_layer"]) > 0
