"""Tables, per-outcome summaries and the checks of chapter 8 (representations).

The readout of every seed comes from `lib.grokking.pair_irreps`; here it is summarized by
outcome group (`OUTCOMES`: chapter 4's groups, then the seeds' own initial weights as the
untrained rival) and turned into markdown tables. `check_results` asserts what holds on any
machine: the character tables and projectors of the two groups, shares that add up to one,
counts that add up, AUCs between 0 and 1, and that each recorded word agrees with the number it
was chosen from.
"""

from __future__ import annotations

import math
from collections import Counter

import torch

from lib.book.tables import markdown_table
from lib.grokking.characters import CharacterTable
from lib.grokking.study_sweep import GROUPS

#: The rows of the per-outcome tables: chapter 4's outcome groups, then the untrained rival.
OUTCOMES = (*GROUPS, "random init")
#: Short keys of those rows in the results and the records.
OUTCOME_KEYS = ("s4", "a4z2", "neither", "init")
#: Short keys of the two groups in the results and the records.
GROUP_KEYS = {"S4": "s4", "A4xZ2": "a4z2"}
#: The degrees of the two groups' irreducible characters (known; the run computes them).
KNOWN_DIMENSIONS = {"S4": [1, 1, 2, 3, 3], "A4xZ2": [1, 1, 1, 1, 1, 1, 3, 3]}


def component_key(name: str) -> str:
    """A component's label as a record key: "1c+1d" -> "1c_1d"."""
    return name.replace("+", "_")


def format_character(value: complex) -> str:
    """A character value for a table: an integer as such, otherwise two decimals (a + bi)."""
    real, imag = round(value.real, 6), round(value.imag, 6)
    if abs(imag) < 1e-6:
        return str(int(round(real))) if abs(real - round(real)) < 1e-6 else f"{real:.2f}"
    return f"{real:.2f}{imag:+.2f}i"


def character_table_markdown(characters: CharacterTable) -> str:
    """The character table: one row per irrep (label, degree, value on each class); columns
    headed by a representative element of each class and the class size."""
    names = characters.group.element_names or tuple(str(i) for i in range(characters.group.order))
    header = ["irrep", "degree"] + [f"{names[int(members[0])]} ({len(members)})" for members in characters.classes]
    labels = {}
    for label, pair in zip(characters.component_names, characters.components):
        for irrep, part in zip(pair, label.split("+")):
            labels[irrep] = part
    rows = [[labels[i], characters.dimensions[i], *(format_character(complex(v)) for v in characters.values[i].tolist())]
            for i in range(characters.n_irreps)]
    return markdown_table(header, rows, formats={i: str for i in range(len(header))})


def overlap_markdown(overlaps: torch.Tensor, first: CharacterTable, second: CharacterTable) -> str:
    """Dimensions shared by each component of the first group (rows) and of the second (columns)."""
    header = [f"{first.group.name} \\ {second.group.name}", *second.component_names]
    rows = [[name, *(int(round(float(v))) for v in row)] for name, row in zip(first.component_names, overlaps)]
    return markdown_table(header, rows, formats={i: str for i in range(len(header))})


def masks(groups: torch.Tensor) -> list[torch.Tensor]:
    """One boolean mask per outcome group of `GROUPS`."""
    return [groups == code for code in range(len(GROUPS))]


def mean_rows(values: torch.Tensor, groups: torch.Tensor, init: torch.Tensor) -> torch.Tensor:
    """(4, K) the mean of `values` (B, K) over each outcome group (NaN when empty), then the mean
    of `init` (the same seeds at initialization) over all seeds."""
    rows = [values[mask].mean(dim=0) if bool(mask.any()) else torch.full(values.shape[1:], float("nan"),
                                                                          dtype=values.dtype)
            for mask in masks(groups)]
    return torch.stack([*rows, init.mean(dim=0)])


def shares_markdown(rows: torch.Tensor, names: tuple[str, ...], counts: list[int]) -> str:
    """Per outcome (with its number of seeds), the mean share in each component."""
    header = ["outcome", "seeds", *names]
    body = [[outcome, count, *(f"{float(v):.3f}" for v in row)] for outcome, count, row in zip(OUTCOMES, counts, rows)]
    return markdown_table(header, body, formats={i: str for i in range(len(header))})


def key_sets(key: torch.Tensor, names: tuple[str, ...]) -> list[tuple[str, int]]:
    """The key-component sets of the seeds (key (B, K) bool) with how many seeds have each, most
    common first ("none" for a seed without key components)."""
    labels = ["+".join(n for n, k in zip(names, row) if k) or "none" for row in key.tolist()]
    return Counter(labels).most_common()


def median(values: torch.Tensor) -> float:
    """The median, NaN for no values."""
    return float(values.median()) if values.numel() else float("nan")


def first_at_or_above(prediction, auc: float, which: str) -> int:
    """Chapter 6's rule (`EarlyPrediction.first_epoch_at_or_above`), -1 when the AUC is undefined
    at the last epoch (a class with fewer than two seeds)."""
    values = prediction.auc_either if which == "either" else prediction.auc_group
    if not len(values) or math.isnan(float(values[-1])):
        return -1
    return prediction.first_epoch_at_or_above(auc, which)


def at_epoch(prediction, epoch: int, which: str) -> float:
    """The AUC at the latest epoch of `prediction` not after `epoch` (NaN if none)."""
    values = prediction.auc_either if which == "either" else prediction.auc_group
    rows = (prediction.epochs <= epoch).nonzero()
    return float(values[int(rows[-1])]) if len(rows) else float("nan")


def _finite(values) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def check_results(results: dict) -> None:
    """Assert what holds on any machine (see the module docstring)."""
    for group, facts in results["characters"].items():
        assert facts["dimensions"] == KNOWN_DIMENSIONS[group], (group, facts["dimensions"])
        assert facts["orthogonality_error"] < 1e-9 and facts["projector_error"] < 1e-9, facts
        assert sum(facts["component_dimensions"]) == 24
    overlaps = torch.tensor(results["overlap_dimensions"])
    assert torch.allclose(overlaps, overlaps.round(), atol=1e-9) and round(float(overlaps.sum())) == 24
    assert results["known_answers"]["confined_min_share"] > 1 - 1e-6
    seeds = results["seeds"]
    assert sum(seeds["counts"].values()) == seeds["n_sweep"] + seeds["n_extra"]
    for outcome, by_group in results["profiles"].items():
        for group, shares in by_group.items():
            finite = _finite(shares)
            assert not finite or abs(sum(finite) - 1) < 1e-6, (outcome, group, shares)
    for name, values in results["over_training"].items():
        if name.startswith("auc_"):
            assert all(0.0 <= v <= 1.0 for v in _finite(values)), name
    for reading in results["cosets"].values():  # shares of variance
        assert all(0.0 <= v <= 1.0 + 1e-9 for v in _finite([reading["observed"], reading["matched"]])), reading
    recorded = results["recorded"]
    timing = results["over_training"]
    expected = "earlier than" if timing["irreps_before_accuracy"] else "not earlier than"
    assert recorded["time.irreps_before_accuracy"]["value"] == expected
    expected = "keeps" if results["restriction"]["key_irreps_suffice"] else "does not keep"
    assert recorded["restrict.verdict"]["value"] == expected
    expected = "finds what it should" if results["known_answers"]["hold"] else "misses a known answer"
    assert recorded["known.verdict"]["value"] == expected
    claims = results["coset_claims"]
    assert recorded["cosets.beyond_irreps"]["value"] == ("more" if claims["grokkers_beyond_irreps"] else "not more")
    assert recorded["cosets.neither_beyond"]["value"] == ("are" if claims["neither_beyond_irreps"] else "are not")
    specific = claims["grokkers_beyond_irreps"] and not claims["neither_beyond_irreps"]
    assert recorded["cosets.specific"]["value"] == ("is" if specific else "is not")


__all__ = ["GROUP_KEYS", "KNOWN_DIMENSIONS", "OUTCOMES", "OUTCOME_KEYS", "at_epoch", "character_table_markdown",
           "check_results", "component_key", "first_at_or_above", "format_character", "key_sets", "masks",
           "mean_rows", "median", "overlap_markdown", "shares_markdown"]
