"""What the learned circuit's heads, blocks and layers do, as numbers: each head's attention
preference against uniform (`attention_rows`, `strongest_preferences`, `top_attention`), the
effect of ablating each component (`ablation_rows`, `ablation_extremes`), patching per layer
against random subspaces (`patching_summary`) and the strongest shortcut statistic
(`strongest_shortcut`) (chapter 7).

They read the outputs of `lib.paths.attention_fractions` and `lib.paths.causal`.
"""

from __future__ import annotations

from lib.paths.attention_fractions import EDGE_QUERY_CATEGORIES, TARGET_QUERY_CATEGORIES, AttentionFractions
from lib.paths.causal import Ablation, Patching


#: Below this size (in absolute value) a within-distance correlation is reported as no shortcut.
WEAK_CORRELATION = 0.1


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


def ablation_rows(ablation: Ablation) -> list[dict]:
    """Per ablated component: overall MSE, its increase over the intact model and the MSE by label."""
    return [{"component": name, "mse": float(overall), "increase": float(increase),
             "mse_by_label": dict(zip(ablation.labels, loss.tolist()))}
            for name, overall, increase, loss in zip(ablation.components, ablation.overall, ablation.increase(),
                                                      ablation.loss)]


def patching_summary(patching: Patching) -> dict:
    """Patching per layer as numbers: the last layer's row, the intermediate layers (those
    before the last, on which the verdict rests), those where the probes' subspace beats every
    random subspace (`above`) and those where it also carries at least half the token's effect
    (`used`)."""
    rows = patching.by_layer()
    middle = [row for row in rows if not row["last"]]
    return {"last": rows[-1], "middle": middle,
            "above": [row["layer"] for row in middle if row["beats_every_random"]],
            "used": [row["layer"] for row in middle if row["beats_every_random"] and row["share_of_token"] >= 0.5]}


def strongest_shortcut(shortcuts: dict[str, float]) -> dict:
    """The statistic the error correlates with most (within each true distance), its correlation,
    and whether that is below `WEAK_CORRELATION` in size (no shortcut)."""
    strongest = max(shortcuts, key=lambda name: abs(shortcuts[name]))
    return {"name": strongest, "correlation": shortcuts[strongest],
            "weak": abs(shortcuts[strongest]) < WEAK_CORRELATION, "tested": len(shortcuts)}


def top_attention(rows: list[dict], query: str) -> dict:
    """The most selective head for `query` rows: its row of `attention_rows` (largest ratio)."""
    return max(strongest_preferences(rows, query), key=lambda r: r["ratio"])


def ablation_extremes(rows: list[dict]) -> dict:
    """The intact model's MSE and the rows of the ablations that raise it most and least."""
    ablated = [r for r in rows if r["component"] != "none"]
    return {"intact": next(r for r in rows if r["component"] == "none")["mse"],
            "worst": max(ablated, key=lambda r: r["increase"]), "mildest": min(ablated, key=lambda r: r["increase"])}


__all__ = [
    "ablation_extremes", "ablation_rows", "attention_rows", "patching_summary", "strongest_preferences",
    "strongest_shortcut", "top_attention", "WEAK_CORRELATION",
]
