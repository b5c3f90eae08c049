"""The study's perturb-and-recover protocol in chapter 1: summaries, the table, the sentences.

`lib.bfs.study_damage.study_protocol` runs the authors' damage and retraining on the study's
construction and on the book's; this module turns its records into what the chapter prints and
what the index page's row reads: per draw, the matrix hit and the held-out MSE before and after;
per construction, the spread over the draws the damage affected; and the comparison with the
study's one published curve at every step where both were measured (`StudyPoint`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from lib.bfs.study_damage import PUBLISHED_RECOVERY
from lib.book.tables import markdown_table

#: Names of the two constructions in the records and in the prose.
CONSTRUCTIONS = {"study": "the study's construction", "book": "the book's construction"}


def mse_at(record: dict, step: int) -> float | None:
    """Held-out MSE of a draw at `step`, or None where it was not recorded."""
    return next((loss for at, loss in record["curve"] if at == step), None)


def spread_text(values: list[float]) -> str:
    """"median (min to max)" of values, "0.4" for one value, "n/a" for none."""
    if not values:
        return "n/a"
    if len(values) == 1:
        return f"{values[0]:.3g}"
    return f"{statistics.median(values):.3g} ({min(values):.3g} to {max(values):.3g})"


@dataclass(frozen=True)
class ConstructionSummary:
    """The draws on one construction: how many, how many the damage left unchanged, and the
    held-out MSE before and after retraining of the others (in draw order)."""

    name: str
    steps: int
    draws: int
    no_effect: int
    before: tuple[float, ...]
    after: tuple[float, ...]

    @property
    def relative_after(self) -> tuple[float, ...]:
        """MSE after retraining over MSE right after damage, per draw with effect."""
        return tuple(a / b for a, b in zip(self.after, self.before))

    def sentence(self) -> str:
        effective = self.draws - self.no_effect
        text = (f"On {CONSTRUCTIONS[self.name]}, {effective} of {self.draws} draws changed the held-out MSE; "
                f"over those, it was {spread_text(list(self.before))} right after the damage and "
                f"{spread_text(list(self.after))} after {self.steps:,} steps (median, then range)")
        if effective:
            text += f", {spread_text(list(self.relative_after))} times its value after the damage"
        return text + "."


def summarize_construction(name: str, records: list[dict]) -> ConstructionSummary:
    effective = [r for r in records if r["damage_had_effect"]]
    return ConstructionSummary(name, records[0]["steps"] if records else 0, len(records),
                               len(records) - len(effective), tuple(r["loss_before"] for r in effective),
                               tuple(r["loss_after"] for r in effective))


@dataclass(frozen=True)
class PublishedInRange:
    """The study's one published draw at one step beside the range of this run's draws that the
    damage affected: `within` says whether it lies inside (the study reports one draw, so the
    range is the interval it is read against)."""

    step: int
    published: float
    low: float
    high: float
    draws: int

    @property
    def within(self) -> bool:
        return self.low <= self.published <= self.high


@dataclass(frozen=True)
class StudyPoint(PublishedInRange):
    """The study's published loss at one step beside this run's draws on the study's construction,
    with the draws' median."""

    median: float


def study_points(records: list[dict]) -> list[StudyPoint]:
    """A `StudyPoint` at every step where both the study and this run measured the loss."""
    effective = [r for r in records if r["damage_had_effect"]]
    points = []
    for step, published in PUBLISHED_RECOVERY.items():
        values = [v for v in (mse_at(r, step) for r in effective) if v is not None]
        if values:
            points.append(StudyPoint(step, published, min(values), max(values), len(values),
                                     statistics.median(values)))
    return points


@dataclass(frozen=True)
class RatioPoint(PublishedInRange):
    """How far retraining had brought the loss by one step, relative to right after the damage:
    the study's one draw beside the range of this run's draws with effect on one construction.

    The study's draw started at 0.403 (one damage, one noise); a ratio compares the speed of
    repair without assuming that this run's draws started where the study's did.
    """


def ratio_points(records: list[dict]) -> list[RatioPoint]:
    """A `RatioPoint` at every step after 0 where both the study and this run measured the loss."""
    effective = [r for r in records if r["damage_had_effect"] and r["loss_before"] > 0]
    points = []
    for step, published in PUBLISHED_RECOVERY.items():
        if step == 0:
            continue
        values = [v / r["loss_before"] for r in effective if (v := mse_at(r, step)) is not None]
        if values:
            points.append(RatioPoint(step, published / PUBLISHED_RECOVERY[0], min(values), max(values), len(values)))
    return points


def ratio_sentence(records: dict[str, list[dict]]) -> str:
    """The speed of repair on each construction against the study's, at the last step both measured."""
    parts = []
    for name, runs in records.items():
        points = ratio_points(runs)
        if points:
            p = points[-1]
            parts.append(f"on {CONSTRUCTIONS[name]} {p.low:.2f} to {p.high:.2f} ({'inside' if p.within else 'outside'})")
    if not parts:
        return ""
    last = ratio_points(next(iter(records.values())))[-1]
    return (f"Relative to the loss right after the damage, the study's draw stood at {last.published:.2f} after "
            f"{last.step:,} steps; this run's draws: " + "; ".join(parts) + ".")


def comparison_sentence(points: list[StudyPoint], steps: int) -> str:
    """What the run says about the study's published curve, at the steps both measured."""
    if not points:
        return "No draw on the study's construction changed its loss, so nothing compares with the study."
    parts = [f"step {p.step:,}: the study {p.published:.3g}, this run {p.low:.3g} to {p.high:.3g} "
             f"({'inside' if p.within else 'outside'} that range)" for p in points]
    later = [s for s in PUBLISHED_RECOVERY if s > steps]
    tail = (f" The study's losses after {later[0]:,} steps and more (down to {PUBLISHED_RECOVERY[later[-1]]:.3g} "
            f"at {later[-1]:,}) were not measured here: that needs `study_steps` of at least {later[-1]:,}."
            if later else "")
    return "Against the study's one published curve, on its own construction: " + "; ".join(parts) + "." + tail


def protocol_table(records: dict[str, list[dict]]) -> str:
    """Markdown table: one row per draw, the matrix hit and each construction's MSE before and after."""
    names = list(records)
    steps = records[names[0]][0]["steps"] if records[names[0]] else 0
    header = ["draw", "matrix replaced by N(0, 1)"]
    for name in names:
        header += [f"{name}'s: MSE intact", f"{name}'s: after damage", f"{name}'s: after {steps:,} steps"]
    rows = []
    for index, first in enumerate(records[names[0]]):
        row = [index + 1, first["what"]]
        for name in names:
            record = records[name][index]
            row += [record["loss_intact"], record["loss_before"],
                    record["loss_after"] if record["damage_had_effect"] else "no effect"]
        rows.append(row)
    return markdown_table(header, rows)


def index_row_numbers(records: dict[str, list[dict]], steps: int) -> dict:
    """What the index page's rows of chapter 1 read: the step count, the study's construction's
    losses against the study's (`points`), and each construction's ratios (`ratios`)."""
    points = study_points(records["study"])
    return {"steps": steps,
            "points": [{"step": p.step, "published": p.published, "low": p.low, "high": p.high,
                        "median": p.median, "draws": p.draws, "within": p.within} for p in points],
            "ratios": {name: [{"step": p.step, "published": p.published, "low": p.low, "high": p.high,
                               "draws": p.draws, "within": p.within} for p in ratio_points(runs)]
                       for name, runs in records.items()}}


__all__ = [
    "CONSTRUCTIONS", "ConstructionSummary", "RatioPoint", "StudyPoint", "comparison_sentence", "index_row_numbers",
    "mse_at", "protocol_table", "ratio_points", "ratio_sentence", "spread_text", "study_points",
    "summarize_construction",
]
