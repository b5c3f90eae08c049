"""The named rules that gather the numbers the index's rows show (`book/reproduced/*.yaml`).

A row's verdict word is not decided here: `lib.book.verdict.judge`, the one rule of the legend,
decides it from the evidence the row lists (`judge:`). These rules gather and compare the numbers
its texts show: a row names a rule, the results keys it reads (`keys`) and its constants
(`settings`); `lib.book.reproduced` calls it with those numbers. Each rule returns an `Outcome`:
a word, which picks one of the texts written for it in the YAML, and the numbers it used or
computed, which that text may show. A rule writes no sentence: every word a reader sees is in the
YAML. The generic rules compare numbers (an interval that holds a value, counts against their
Wilson intervals, too few events); the helpers after them gather the numbers of one kind of
result that the chapters record in several places (per length, per sweep, per seed, per
criterion) and say which chapter's rows use them. `tests/test_book_reproduced.py` checks that
every rule the YAML names is here and that every word it gives a text for is one the rule returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lib.book.statistics import zero_event_upper
from lib.book.verdict import FEW_EVENTS


@dataclass(frozen=True)
class Outcome:
    """What a rule found: `word` (which of the row's texts follows) and the numbers it used or
    computed, which that text may show by name."""

    word: str
    numbers: dict = field(default_factory=dict)


#: Every rule by name, as the YAML names it; each rule's `words` are the words it may return.
RULES: dict[str, Callable[..., Outcome]] = {}



def rule(*words: str):
    """Register a rule under its function's name, with the words it may return."""
    def register(function):
        function.words = words
        RULES[function.__name__] = function
        return function
    return register


def _listed(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def present(value) -> bool:
    """Whether a results value is there: not missing (None), not False, not an empty dict or list
    (a number, zero included, is there)."""
    return value is not None and value is not False and not (isinstance(value, (dict, list)) and not value)


# The generic rules: numbers against numbers.

@rule("below", "not below")
def below(value: float, bound: float) -> Outcome:
    """Whether `value` is below `bound` (chapter 1's construction error, too few events)."""
    return Outcome("below" if value < bound else "not below", {"value": value, "bound": bound})


@rule("all", "not all")
def at_least(values, bounds) -> Outcome:
    """Whether every value is at least its bound (one bound, or one per value): enough grokkers
    for an interval (chapter 4), chains as long as the study's (chapter 5)."""
    values, bounds = _listed(values), _listed(bounds)
    bounds = bounds * len(values) if len(bounds) == 1 else bounds
    return Outcome("all" if all(v >= b for v, b in zip(values, bounds)) else "not all")


@rule("inside", "outside", "no interval")
def interval_contains(value: float, low: float | None, high: float | None) -> Outcome:
    """Whether `low <= value <= high`; "no interval" where an end is missing (NaN is written to
    the JSON as null). The study's number against this run's interval or range (chapters 1, 3, 6)."""
    if low is None or high is None:
        return Outcome("no interval", {"value": value})
    return Outcome("inside" if low <= value <= high else "outside", {"value": value, "low": low, "high": high})


@rule("below", "inside", "above")
def position(value: float, low: float, high: float) -> Outcome:
    """Where `value` lies against `low` and `high`: below `low`, above `high`, or between them
    (chapter 1: the tail of the damage distribution the study's draw lies in)."""
    return Outcome("below" if value < low else "above" if value > high else "inside")


@rule("above", "below")
def side(value: float, reference: float) -> Outcome:
    """Whether `value` is above `reference` (else below, equal included), and `distance`, their
    ratio's distance from 1 (chapter 1's median against the study's draw, chapter 6's mean)."""
    return Outcome("above" if value > reference else "below",
                   {"distance": abs(value / reference - 1) if reference else None})


@rule("equal", "different")
def equal(values, references) -> Outcome:
    """Whether the values equal the references, in order: this run's scale against the study's
    (chapters 2, 3, 5, 6)."""
    return Outcome("equal" if _listed(values) == _listed(references) else "different")


@rule("given", "missing")
def given(value) -> Outcome:
    """Whether a value (or every value of a list) is given, not None (NaN is written as null)."""
    return Outcome("given" if all(v is not None for v in _listed(value)) else "missing")


@rule("positive", "not positive")
def positive(value: float | None) -> Outcome:
    """Whether `value` is given and above zero (a count of pairs, the step a seed grokked at, a
    recorded ratio)."""
    return Outcome("positive" if value is not None and value > 0 else "not positive")


@rule("starts", "other")
def starts_with(text: str, prefix: str) -> Outcome:
    """Whether `text` starts with `prefix` (chapter 3's tests of any target, chapter 4's S5 runs)."""
    return Outcome("starts" if text.startswith(prefix) else "other")


@rule("all", "not all")
def all_true(flags, names) -> Outcome:
    """Whether every flag holds; `failing`: the names of those that do not (chapter 4: the
    published fraction inside each group's 95% interval, as the chapter recorded it)."""
    failing = [name for name, flag in zip(names, flags) if not flag]
    return Outcome("not all" if failing else "all", {"failing": failing})


@rule("all inside", "not all")
def all_inside(values, intervals, names) -> Outcome:
    """Whether each value lies inside its interval (`[low, high]`); `failing`: the names of
    those outside (chapter 4: the study's S5 fractions against this run's Wilson intervals)."""
    failing = [name for name, value, (low, high) in zip(names, values, intervals) if not low <= value <= high]
    return Outcome("not all" if failing else "all inside", {"failing": failing})


@rule("few", "enough")
def few_events(counts, names, fewer_than: int = FEW_EVENTS) -> Outcome:
    """Whether some count rests on fewer than `fewer_than` events; `events`: each such
    `{name, count}` (chapter 4's rates with only a handful of grokkers)."""
    events = [{"name": name, "count": count} for name, count in zip(names, counts) if count < fewer_than]
    return Outcome("few" if events else "enough", {"events": events})


@rule("all", "not all")
def all_have(items: list, key: str) -> Outcome:
    """Whether every item (a dict) holds `key` (chapter 6: every transplant direction scored)."""
    return Outcome("all" if all(key in item for item in items) else "not all")


@rule("one", "several")
def count(items: list) -> Outcome:
    """How many items there are (`n`): one, or several (any other number: the plural) (chapter
    3's seeds)."""
    return Outcome("one" if len(items) == 1 else "several", {"n": len(items)})


@rule("first", "second", "third", "none")
def first_present(values: list) -> Outcome:
    """The first of `values` that is there (`present`) as `value`, and which it was (chapter 6:
    the sweep with the bias where measured, else the one without; the authors' spacing where
    recorded, else the run's)."""
    for word, value in zip(("first", "second", "third"), values):
        if present(value):
            return Outcome(word, {"value": value})
    return Outcome("none", {"value": None})


@rule("found", "missing")
def lookup(table, key, field: str | None = None) -> Outcome:
    """The entry of `table` under `key`: a dict's value, or the first dict of a list whose
    `field` equals `key`; its items are the numbers (chapter 3: a test's spread over seeds and
    its baseline comparison)."""
    if isinstance(table, list):
        table = {entry.get(field): entry for entry in table}
    entry = (table or {}).get(key)
    return Outcome("found", dict(entry)) if entry is not None else Outcome("missing")


@rule("all equal", "some differ")
def matching_entries(values: dict, references: dict) -> Outcome:
    """How many of `references`' entries `values` gives the same (`equal` of `total`) (chapter 4's
    intersection sizes)."""
    same = sum(values.get(name) == reference for name, reference in references.items())
    return Outcome("all equal" if same == len(references) else "some differ", {"equal": same, "total": len(references)})


@rule("range")
def extent(values) -> Outcome:
    """The smallest and largest of `values` (`low`, `high`): the study's range (chapter 5)."""
    return Outcome("range", {"low": min(values), "high": max(values)})


@rule("sum")
def total(values) -> Outcome:
    """The sum of `values` (`total`): the study's steps over its phases (chapter 2)."""
    return Outcome("sum", {"total": sum(values)})


@rule("chance")
def chance_of_none(shares, trials: int) -> Outcome:
    """The chance that `trials` seeds show none of outcomes with these `shares` (their sum
    `share`): `(1 - share) ** trials` (chapter 4: S5 grokkers in a few seeds)."""
    share = sum(shares)
    return Outcome("chance", {"share": share, "chance": (1 - share) ** trials})


@rule("some", "none")
def others_inside(items: list, current: dict, low: float, high: float, field: str) -> Outcome:
    """The `items` other than `current` whose `field` lies inside `low`-`high` (`items`):
    chapter 6's flip rates of other outcomes that one interval also holds."""
    others = [o for o in items if o is not current and field in o and low <= o[field] <= high]
    return Outcome("some" if others else "none", {"items": others})


@rule("some", "none")
def positive_items(items: list, field: str) -> Outcome:
    """The items whose `field` is above zero (`items`, `count`): chapter 6's seeds that grokked."""
    kept = [item for item in items if item[field] > 0]
    return Outcome("some" if kept else "none", {"items": kept, "count": len(kept)})


# Helpers that gather one kind of result, each for the rows named in its docstring.

@rule("holds", "fails")
def seeds_holding(held: dict, drops: dict, seeds: list, lengths: list, step: int) -> Outcome:
    """Chapter 2's multi-seed transition rows: per length (`lengths`: `{length, held, first,
    last, drops, drop_first, drop_last}`), the seeds whose drop is a transition that holds at every
    setting of the detector's sensitivity table and beyond the constant rival (`held`: length ->
    step or None per seed; `first`/`last` their steps), beside the seeds with a drop at the
    detector's defaults (`drops`, at steps `drop_first` to `drop_last`): the range over every seed,
    not cut by whether its drop holds. "holds" when at every length most seeds hold a transition and their steps
    hold the study's `step`."""
    rows, agrees = [], True
    for length in lengths:
        steps = [s for s in held.get(str(length), []) if s is not None]
        dropped = [s for s in drops.get(str(length), []) if s is not None]
        rows.append({"length": length, "held": len(steps), "first": min(steps) if steps else None,
                     "last": max(steps) if steps else None, "drops": len(dropped),
                     "drop_first": min(dropped) if dropped else None, "drop_last": max(dropped) if dropped else None})
        agrees = agrees and 2 * len(steps) > len(seeds) and min(steps) <= step <= max(steps)
    return Outcome("holds" if agrees else "fails", {"seeds": len(seeds), "lengths": rows})


@rule("not evaluated", "no drop", "holds", "beyond rival", "rival")
def one_seed_drop(drops: dict, held: dict, rivals: dict, length: int) -> Outcome:
    """Chapter 2's transition rows at the study's scale (one seed): length `length`'s drop
    (`drops`: the detector's `drop_by_length`), whether it holds at every setting of the
    detector's sensitivity table (`held`, the step), else whether it beats the constant rival at
    the detector's defaults (`rivals`). Numbers: the drop's own (`step`, `plateau`, `after`,
    `reason`), `length` and `held`."""
    drop, step = drops.get(str(length)), held.get(str(length))
    if drop is None:
        return Outcome("not evaluated", {"length": length})
    numbers = {**drop, "length": length, "held": step}
    if not drop["dropped"]:
        return Outcome("no drop", numbers)
    if step is not None:
        return Outcome("holds", numbers)
    return Outcome("beyond rival" if rivals.get(str(length), [{}])[0].get("transition") else "rival", numbers)


@rule("both", "one", "neither", "absent")
def grokked_counts(pairs: list | None, experiment: str | None = None, prefix: str | None = None) -> Outcome:
    """Chapter 4: the seeds that grokked each group over the sweeps of one pair (`pairs`' entries
    whose `experiment` is `experiment`, or starts with `prefix`): `g1`, `g2`, `n` seeds,
    `either` (g1 + g2), their shares `g1_share`/`g2_share`, `missing` (the groups no seed
    grokked), `none_upper` (the 95% Wilson upper end of a rate with no event in n), the `sweeps`
    and the `first`. Words: both groups grokked, one, neither, or no such sweep ("absent")."""
    sweeps = [p for p in pairs or []
              if p["experiment"] == experiment or (prefix and p["experiment"].startswith(prefix))]
    if not sweeps:
        return Outcome("absent", {"sweeps": [], "first": None})
    g1, g2 = sum(p["count_grokked_g1"] for p in sweeps), sum(p["count_grokked_g2"] for p in sweeps)
    n, first = sum(p["n_instances"] for p in sweeps), sweeps[0]
    word = "both" if g1 and g2 else "one" if g1 + g2 else "neither"
    return Outcome(word, {"g1": g1, "g2": g2, "n": n, "either": g1 + g2, "g1_share": g1 / n if n else None,
                          "g2_share": g2 / n if n else None,
                          "missing": [first.get(g) for g, c in (("g1", g1), ("g2", g2)) if not c],
                          "none_upper": zero_event_upper(n), "sweeps": sweeps, "first": first})


@rule("too few", "inside", "outside", "none")
def llc_courses(llc: list, fitted: list, epochs: list, outcome: list, study: dict, outcomes: list,
                names: list) -> Outcome:
    """Chapter 5's LLC along training: each seed that fit its training set, from its fitting on
    (`courses`: `{name, peak, end, study_peak, study_final, ratio}`, beside the study's instance
    of the same outcome; `outcomes` maps the JSON's outcome codes to the study's, `names` to the
    reader's), `seeds`, and the outcomes `seen`. "too few" below one seed of each of the study's
    instances; else whether every final lies inside the study's range of finals; "none" when no
    seed fit."""
    courses = []
    for k, (course, epoch_fitted) in enumerate(zip(llc, fitted)):
        kept = [value for epoch, value in zip(epochs, course) if epoch_fitted >= 0 and epoch >= epoch_fitted]
        if kept:
            i = study["outcomes"].index(outcomes[outcome[k]])
            courses.append({"code": outcome[k], "name": names[outcome[k]], "peak": max(kept), "end": kept[-1],
                            "study_peak": study["peaks"][i], "study_final": study["finals"][i],
                            "ratio": kept[-1] / study["finals"][i]})
    seen = sorted({c["code"] for c in courses})
    numbers = {"courses": courses, "seeds": len(courses), "seen": [names[code] for code in seen]}
    if not courses:
        return Outcome("none", numbers)
    if len(courses) < study["instances"] or len(seen) < study["instances"]:
        return Outcome("too few", numbers)
    inside = all(min(study["finals"]) <= c["end"] <= max(study["finals"]) for c in courses)
    return Outcome("inside" if inside else "outside", numbers)


@rule("ranked")
def ranking(values: dict, best: str, names: dict) -> Outcome:
    """Chapter 5's measures over time: their names (`names`, else their keys) in order of
    `values`, highest first and missing ones (None, NaN) last (`order`), and the name of `best`."""
    def missing(value) -> bool:
        return value is None or value != value

    order = sorted(values, key=lambda m: (missing(values[m]), 0.0 if missing(values[m]) else -values[m]))
    return Outcome("ranked", {"order": [names.get(m, m) for m in order], "best": names.get(best, best)})


@rule("none learned", "authors' criterion", "other criteria", "no criterion")
def criteria_against_shares(transplant: list, order: list, shares: list, authors: str,
                            fewer_than: int = FEW_EVENTS) -> Outcome:
    """Chapter 6's transplant: per ungrokking criterion (in `order`, those the run scored), each
    direction's entry (`directions`: share, ungrokked of grokked_first, Wilson `low`-`high`), its
    `events` (ungrokked seeds per direction), `few` (some below `fewer_than`) and `inside`
    (every direction's interval holds the published share, `shares`, in order). Words: no seed
    learned the group in phase 1 (first criterion); the `authors`' criterion inside; only others
    (`matching`); none. Numbers: `criteria`, `matching`, `authors` (its entry), `tried`, `first`."""
    scored = transplant[0]["criteria"]
    names = [name for name in order if name in scored] or list(scored)
    criteria = []
    for name in names:
        entries = [r["criteria"][name] for r in transplant]
        inside = all(e["low"] is not None and e["high"] is not None and e["low"] <= share <= e["high"]
                     for e, share in zip(entries, shares))
        events = [e["ungrokked"] for e in entries]
        criteria.append({"name": name, "directions": entries, "events": events, "few": min(events) < fewer_than,
                         "inside": inside})
    matching = [c for c in criteria if c["inside"]]
    by_name = {c["name"]: c for c in criteria}
    word = ("none learned" if any(e["grokked_first"] == 0 for e in criteria[0]["directions"]) else
            "authors' criterion" if by_name.get(authors, {}).get("inside") else
            "other criteria" if matching else "no criterion")
    return Outcome(word, {"criteria": criteria, "matching": matching, "authors": by_name.get(authors),
                          "tried": len(names), "first": criteria[0]})


__all__ = ["RULES", "Outcome", "present", "rule"] + sorted(RULES)
