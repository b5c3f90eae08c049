"""How the probes' reach radius grows with depth: one hop per layer, doubling or tripling (chapter 7).

Three laws for the radius after layer l: breadth-first search advancing one hop per layer (l,
chapter 1's construction), path merging that doubles the paths known every layer (2^l - 1: each
layer joins two paths of the previous length, as Saparov et al. describe trained models doing),
and the capacity of Ye et al.'s disentangled transformer (3^l). A measured radius cannot exceed
the largest k probed, so each law is capped there before it is compared (`law_radius`).
`fit_laws` scores every law on a set of measured radii (`RadiusPoint`, over models of several
depths and seeds and several facts) by the root mean square and the mean of the measured minus
the predicted radius, and how many points it predicts exactly; `best_laws` names the law, or the
laws, with the smallest root mean square. The laws have no free parameter, so there is nothing
to fit but the choice.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The laws by name: the radius after layer l (before the cap).
LAWS = {"one hop per layer (l)": lambda layer: layer,
        "doubling (2^l - 1)": lambda layer: 2 ** layer - 1,
        "tripling (3^l)": lambda layer: 3 ** layer}


def law_radius(law: str, layer: int, cap: int) -> int:
    """The radius `law` predicts after `layer`, capped at the largest k probed."""
    return min(LAWS[law](layer), cap)


@dataclass(frozen=True)
class RadiusPoint:
    """One measured radius: the model (its depth and seed), the fact, the layer l it was read
    after, the radius and the largest k probed for the fact (the cap)."""

    depth: int
    seed: int
    fact: str
    layer: int
    radius: int
    cap: int


def fit_laws(points: list[RadiusPoint]) -> dict[str, dict]:
    """Per law: "rms" (root mean square of measured minus predicted radius), "mean_error" (the
    mean of that difference: negative where the law runs ahead of the measured radii), "exact"
    (points predicted exactly) and "points"; NaN errors without points."""
    out = {}
    for law in LAWS:
        errors = [p.radius - law_radius(law, p.layer, p.cap) for p in points]
        n = len(errors)
        out[law] = {"rms": (sum(e * e for e in errors) / n) ** 0.5 if n else float("nan"),
                    "mean_error": sum(errors) / n if n else float("nan"),
                    "exact": sum(e == 0 for e in errors), "points": n}
    return out


def best_laws(fits: dict[str, dict], tolerance: float = 1e-9) -> list[str]:
    """The law or laws with the smallest root mean square error (within `tolerance`)."""
    finite = {law: fit["rms"] for law, fit in fits.items() if fit["rms"] == fit["rms"]}
    if not finite:
        return []
    best = min(finite.values())
    return [law for law, rms in finite.items() if rms <= best + tolerance]


def informative(points: list[RadiusPoint]) -> list[RadiusPoint]:
    """The points at which the laws do not all predict the same radius (the others cannot tell
    them apart: after layer 1 one hop and doubling agree, and beyond the cap every law does)."""
    return [p for p in points if len({law_radius(law, p.layer, p.cap) for law in LAWS}) > 1]


__all__ = ["LAWS", "RadiusPoint", "best_laws", "fit_laws", "informative", "law_radius"]
