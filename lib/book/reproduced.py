"""The index page's table of what is reproduced: each published number of the two studies beside
this book's, one table per chapter (written into book/index.md by `tools/results_table.py`).

The rows are data, one YAML file per chapter in book/reproduced/, named as the chapter's results
JSON (`02_training.yaml` reads `02_training.json`): its `chapter` and `title`, the study's numbers
the JSON does not record (`study`: literals; those a lib module holds are in `STUDY_NUMBERS`, read
the same way, `study.NAME`), its `rows`, and `steps` (a `tools/published.py` step -> the ids of the
rows it gives at the study's scale, `study_scale_rows` among them). A chapter without results
has no rows. Each row has an `id`, optional `each` (a list: one row per `item`), `when`
(conditions) and `let` (named texts or rule outcomes, evaluated where first used), four texts,
`quantity`, `study` (the study's number), `book` (this run's) and `scale`, and its `verdict`.
A file's `templates` holds the YAML anchors its rows share (`&name`, `*name`, `<<: *name`).

A verdict's word comes from one place, `lib.book.verdict.judge` (the index's legend): the
`verdict` lists the row's comparisons (`judge:`, each one of `interval: {value, low, high,
units, events}`, `rate: {value, count, trials}` (Wilson's interval of the count),
`never: {events, units}`, `always: {count or share, units}`, `seen: {events}`,
`order: [[low, high], ...]`, `one_run:`, `not_comparable:`; each may have `if:` conditions and
a `name:` its texts read its numbers by, e.g. `{never.upper}`), and `texts:` the text for each
word it may give, which leads with that word: reproduced, consistent, too few events, one run,
differs (with the reason the chapter measured) or not comparable (with what would be needed).
A number of a comparison is a path (`a|b`: `b` where `a` is missing) or a literal.

A text is one of:

* a template: `{path:spec}` fields; a path is dotted keys into the results (`a.b[0.5]`, `l[-1]`),
  a `let` name, `item`, `study.NAME` or a rule's number; spec is Python's, or `%spec` (100 times
  the value), `spec|text` (`text` where the value is missing or NaN), `plural` ("s" unless 1), `lower`,
  `len` (a list's length);
* `{rule: NAME, keys: {arg: path}, settings: {arg: value}, texts: {word: text}}`: the rule of
  `lib.book.verdict_rules` with those numbers; the text of the word it returns, which sees the
  rule's numbers by name (without `texts`, a `let` holds the outcome: `LET.word`, `LET.number`);
  `{of: LET, texts: ...}` picks by a `let` outcome's word (its numbers read as `LET.number`);
* `{cases: [{when: conditions, text: ...}, ...]}`: the first case whose conditions all hold;
* `{each: path, join: sep, text: ...}`: a text per item of a list (`item`), joined;
* `{bind: {name: path}, text: ...}`: a text with names bound (a shared text's sweep).

A condition is a path whose value is there (`verdict_rules.present`), `not path`, a list of
conditions, `{not: conditions}`, or a rule (or `of`) with `is:` its word(s).

The module is over 400 lines because the row language above and its walk (`text_parts`, which the
tests read every row through) are one interpreter, and the table is its one output.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path

import _string                 # the parser of field names that str.format itself uses
import yaml

from lib.book.statistics import wilson_interval
from lib.book.tables import markdown_table
from lib.book.verdict import Interval, Never, NotComparable, OneRun, Order, Seen, judge, rate_interval
from lib.book.verdict_rules import RULES, Outcome, present
from lib.grokking.study import PUBLISHED_FLIP_PROTOCOL, PUBLISHED_S5_LLC, PUBLISHED_UNGROK_SHARES, S5_MEASURES_PROTOCOL
from lib.grokking.transplant import AUTHORS_CRITERION, CRITERIA

#: The study's numbers that lib modules hold with their protocol, by the results JSON whose rows
#: read them (`study.NAME`): chapter 5's LLC along training and measures over time, chapter 6's
#: flip protocol, transplant shares, its criteria in the chapter's order and the authors' one.
STUDY_NUMBERS = {
    "05_complexity": {"s5_llc": PUBLISHED_S5_LLC, "measures": S5_MEASURES_PROTOCOL},
    "06_determination": {"flips": PUBLISHED_FLIP_PROTOCOL, "ungrok_shares": PUBLISHED_UNGROK_SHARES,
                         "criteria": CRITERIA, "authors_criterion": AUTHORS_CRITERION},
}
#: The lines of book/index.md between which the table is written.
START_MARKER = "<!-- reproduced-table:start (written by tools/results_table.py) -->"
END_MARKER = "<!-- reproduced-table:end -->"
#: The verdict of a row whose chapter has not yet judged it.
PENDING = "pending"
#: The chapters' rows, one YAML file each, named as their results JSON.
ROWS = Path(__file__).resolve().parents[2] / "book" / "reproduced"


@dataclass(frozen=True)
class Reproduced:
    """One published number next to this book's: chapter, what, the study's value, this run's
    value, this run's scale against the study's, and the verdict.

    `word` is the verdict's word (`lib.book.verdict.WORDS`, or `PENDING` for a row no chapter has
    judged yet); `verdict` the text that leads with it and gives its reasons.
    """

    chapter: int
    quantity: str
    study: str
    book: str
    scale: str
    verdict: str = PENDING
    word: str = PENDING


#: Results JSON name -> its chapter's rows (the YAML file).
CHAPTERS: dict[str, dict] = {path.stem: yaml.safe_load(path.read_text()) for path in sorted(ROWS.glob("*.yaml"))}
#: The chapters' titles in the index's tables of what is reproduced.
CHAPTER_TITLES = {spec["chapter"]: spec["title"] for spec in CHAPTERS.values()}
#: The steps of `tools/published.py` (its STEPS, in priority order) -> (results JSON name, the
#: ids of the rows the step gives at the study's scale).
PUBLISHED_STEPS = {step: (name, ids) for name, spec in CHAPTERS.items() for step, ids in spec.get("steps", {}).items()}


class _Scope:
    """What a text sees: bound names (`item`, a rule's numbers), then the row's `let` (each
    evaluated where first used, so a shared text can read the `item` of its `each`), then the
    results with `study`."""

    def __init__(self, base: dict, lets: dict, bound: dict | None = None):
        self.base, self.lets, self.bound, self.cache = base, lets, bound or {}, {}

    def child(self, **bound) -> _Scope:
        return _Scope(self.base, self.lets, {**self.bound, **bound})

    def get(self, name: str, missing=None):
        if name in self.bound or name not in self.lets:
            return self.bound[name] if name in self.bound else self.base.get(name, missing)
        if name not in self.cache:
            self.cache[name] = _evaluate(self.lets[name], self)
        return self.cache[name]


def resolve(names, path: str, missing=None):
    """The value at `path` (see the module docstring) among `names` (a results JSON, or what a
    text sees); `missing` where a step of the path is not there."""
    first, rest = _string.formatter_field_name_split(path)
    value = names.get(first, missing)
    for _, key in rest:
        value = {"word": value.word, **value.numbers} if isinstance(value, Outcome) else value
        if isinstance(value, dict):
            value = value[key] if key in value else value.get(str(key), missing)
        elif isinstance(value, (list, tuple)) and re.fullmatch(r"-?\d+", str(key)) \
                and -len(value) <= int(key) < len(value):
            value = value[int(key)]
        else:
            return missing
    return value


class _Missing(str):
    """A template field with no value (missing, None or NaN): its path."""


class _Template(string.Formatter):
    """A template's fields filled from a scope, with the spec extensions of the module docstring."""

    def __init__(self, scope: _Scope):
        self.scope = scope

    def get_field(self, field_name, args, kwargs):
        value = resolve(self.scope, field_name)
        return (_Missing(field_name) if value is None or value != value else value), field_name

    def format_field(self, value, spec: str) -> str:
        spec, bar, fallback = spec.partition("|")
        if isinstance(value, _Missing):
            if bar:
                return fallback
            raise ValueError(f"no value at {value!r}")
        if spec in ("plural", "lower", "len"):
            return ("" if value == 1 else "s") if spec == "plural" else value.lower() if spec == "lower" \
                else str(len(value))
        return format(100 * value, spec[1:]) if spec.startswith("%") else format(value, spec)


def _keys(keys, scope: _Scope):
    """Paths (a string, or lists and dicts of them) replaced by their values."""
    if isinstance(keys, str):
        return resolve(scope, keys)
    return [_keys(k, scope) for k in keys] if isinstance(keys, list) else {n: _keys(k, scope) for n, k in keys.items()}


def _holds(conditions: list, scope: _Scope) -> bool:
    """Whether every condition holds (see the module docstring)."""
    def holds(condition) -> bool:
        if isinstance(condition, list):
            return _holds(condition, scope)
        if isinstance(condition, str):
            return present(resolve(scope, condition.removeprefix("not "))) != condition.startswith("not ")
        if "not" in condition:         # {not: conditions}: they do not all hold
            return not _holds(condition["not"], scope)
        words = condition["is"]
        return _evaluate(condition, scope).word in (words if isinstance(words, list) else [words])
    return all(holds(condition) for condition in conditions)


def _evaluate(spec, scope: _Scope):
    """A text (see the module docstring), or the outcome of a rule given no texts."""
    if isinstance(spec, str):
        return _Template(scope).vformat(spec, (), {})
    if "each" in spec:
        return spec.get("join", "").join(_evaluate(spec["text"], scope.child(item=item))
                                         for item in resolve(scope, spec["each"]) or [])
    if "bind" in spec:
        return _evaluate(spec["text"], scope.child(**_keys(spec["bind"], scope)))
    if "cases" in spec:
        return _evaluate(next(case["text"] for case in spec["cases"] if _holds(case.get("when", []), scope)), scope)
    if "of" in spec:                     # a let's outcome: its numbers are read through the let's name
        outcome = scope.get(spec["of"])
    else:
        outcome = RULES[spec["rule"]](**_keys(spec.get("keys", {}), scope), **spec.get("settings", {}))
        scope = scope.child(**outcome.numbers)
    return _evaluate(spec["texts"][outcome.word], scope) if "texts" in spec else outcome


def _value(spec, scope: _Scope):
    """A number of a verdict's evidence: a literal, or a path; `a|b` reads `b` where `a` is missing."""
    if not isinstance(spec, str):
        return spec
    for path in spec.split("|"):
        value = resolve(scope, path.strip())
        if value is not None:
            return value
    return None


def _evidence(spec: dict, scope: _Scope):
    """One comparison of a row's verdict (`judge:`), as `lib.book.verdict` evidence, with the
    numbers its texts may show; None when its `if` conditions do not hold."""
    if not _holds(spec.get("if", []), scope):
        return None
    kind = next(key for key in spec if key not in ("if", "name"))
    args = {name: _value(path, scope) for name, path in (spec[kind] or {}).items()} if isinstance(spec[kind], dict) \
        else {}
    if isinstance(args.get("units"), list):          # a list of values: one unit each
        args["units"] = len(args["units"])
    if kind == "interval":
        evidence = Interval(args["value"], args.get("low"), args.get("high"), args["units"], args.get("events"))
    elif kind == "rate":               # a published rate against this run's count: Wilson's interval
        if not args["trials"]:         # nothing counted: no interval
            evidence = Interval(args["value"], None, None, 0)
        else:
            low, high = wilson_interval(args["count"], args["trials"])
            evidence = rate_interval(args["value"], args["count"], args["trials"], low, high)
    elif kind == "never":
        evidence = Never(args["events"], args["units"])
    elif kind == "always":             # an "always" is a "never" of the units where it did not happen
        happened = args["count"] if "count" in args else round(args["share"] * args["units"])
        evidence = Never(args["units"] - happened, args["units"])
    elif kind == "seen":
        evidence = Seen(args["events"])
    elif kind == "order":
        evidence = Order(tuple(tuple(_value(end, scope) for end in pair) for pair in spec[kind]))
    elif kind == "one_run":
        evidence = OneRun()
    elif kind == "not_comparable":
        evidence = NotComparable()
    else:
        raise ValueError(f"unknown evidence {kind!r} (interval, rate, never, always, seen, order, one_run, "
                         "not_comparable).")
    return evidence


def _numbers(evidence) -> dict:
    """What a verdict text may show of one comparison: its word and its fields (a rate's interval,
    a never's bound and the units that would bound it)."""
    numbers = {"word": judge(evidence), **{k: v for k, v in vars(evidence).items()}}
    if isinstance(evidence, Never):
        numbers.update(upper=evidence.upper, needed=evidence.units_to_bound)
    return numbers


def judged(spec: dict, scope: _Scope) -> tuple[str, str]:
    """A row's verdict: the word `lib.book.verdict.judge` gives its comparisons (`judge:`), and
    the text written for that word (`texts:`), which sees each named comparison's numbers."""
    comparisons = [(item.get("name"), _evidence(item, scope)) for item in spec["judge"]]
    comparisons = [(name, evidence) for name, evidence in comparisons if evidence is not None]
    word = judge(*(evidence for _, evidence in comparisons))
    named = {name: _numbers(evidence) for name, evidence in comparisons if name}
    # A word the row wrote no text for (a smoke run's single seed, say) stands alone.
    return word, _evaluate(spec["texts"][word], scope.child(**named)) if word in spec["texts"] else word


def _study(name: str) -> dict:
    """The study's numbers the rows of the chapter whose results JSON is `name` read (`study.NAME`):
    the literals of its YAML file and those a lib module holds (`STUDY_NUMBERS`)."""
    return {**(CHAPTERS[name].get("study") or {}), **STUDY_NUMBERS.get(name, {})}


def chapter_rows(name: str, results: dict, ids: list[str] | None = None, *, base: dict | None = None) -> list[Reproduced]:
    """The rows of the chapter whose results JSON is `name`, from `results`: its `rows`, or the
    rows (`study_scale_rows` included) with these `ids`, in their order. `base`: what the rows
    read, when not `results` with the study's numbers (`keys_read` passes one that notes reads)."""
    chapter = CHAPTERS[name]
    by_id = {spec["id"]: spec for spec in chapter["rows"] + chapter.get("study_scale_rows", [])}
    base, rows = {**results, "study": _study(name)} if base is None else base, []
    for spec in chapter["rows"] if ids is None else [by_id[i] for i in ids]:
        scope = _Scope(base, spec.get("let", {}))
        for item in [None] if "each" not in spec else resolve(scope, spec["each"]) or []:
            inner = scope if item is None else scope.child(item=item)
            try:
                if _holds(spec.get("when", []), inner):
                    texts = [_evaluate(spec[part], inner) for part in ("quantity", "study", "book", "scale")]
                    word, verdict = judged(spec["verdict"], inner)
                    rows.append(Reproduced(chapter["chapter"], *texts, verdict, word))
            except Exception as error:
                raise ValueError(f"book/reproduced/{name}.yaml, row {spec['id']}: {error}") from error
    return rows


def _key_parts(spec, kind: str):
    if isinstance(spec, str):
        yield kind, spec
    else:
        for key in spec if isinstance(spec, list) else spec.values():
            yield from _key_parts(key, kind)


def _condition_parts(conditions: list, kind: str):
    for condition in conditions:
        if isinstance(condition, str):
            yield kind, condition.removeprefix("not ")
        elif isinstance(condition, list):
            yield from _condition_parts(condition, kind)
        elif "not" in condition:
            yield from _condition_parts(condition["not"], kind)
        else:
            yield "condition", condition
            yield from _key_parts(condition.get("keys", {}), kind)


def text_parts(spec, kind: str = "path"):
    """Every part of a text (see the module docstring), recursively, as (kind, value) pairs:
    ("template", text); ("rule", spec) for a rule or `of` spec; ("condition", spec) for a rule
    used as a condition; and each path it reads, as (`kind`, path) where only the results,
    `study`, the row's `let` and `item` are in scope, else as ("field", path): inside a rule's
    texts or a `bind`, where a rule's numbers or the bound names are in scope too."""
    if isinstance(spec, str):
        yield "template", spec
        yield from ((kind, name) for _, name, _, _ in string.Formatter().parse(spec) if name)
    elif "each" in spec or "bind" in spec:
        yield from _key_parts(spec.get("each", spec.get("bind")), kind)
        yield from text_parts(spec["text"], kind if "each" in spec else "field")
    elif "cases" in spec:
        for case in spec["cases"]:
            yield from _condition_parts(case.get("when", []), kind)
            yield from text_parts(case["text"], kind)
    elif "judge" in spec:
        for item in spec["judge"]:
            yield from _condition_parts(item.get("if", []), kind)
            for name, value in item.items():
                if name not in ("if", "name"):
                    values = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
                    for path in values:
                        for one in (path if isinstance(path, list) else [path]):
                            if isinstance(one, str):
                                yield from ((kind, part.strip()) for part in one.split("|"))
        for inner in spec["texts"].values():
            yield from text_parts(inner, "field")
    else:
        yield "rule", spec
        yield from _key_parts(spec.get("keys", {}), kind)
        for inner in spec.get("texts", {}).values():
            yield from text_parts(inner, "field")


def row_parts(row: dict):
    """Every part of a row, as `text_parts` gives them: its `each`, `when`, five texts and `let`s
    (a `let` is evaluated where first used, so its paths are "field"s). The tests check the
    rules a row names and the paths it reads through this one walk."""
    yield from _key_parts(row.get("each", []), "path")
    yield from _condition_parts(row.get("when", []), "path")
    for part in ("quantity", "study", "book", "scale", "verdict"):
        yield from text_parts(row[part])
    for spec in row.get("let", {}).values():
        yield from text_parts(spec, "field")


class _Reading(dict):
    """A results JSON that notes which of its top-level keys a rendering reads (`keys_read`)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read: set[str] = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)


def keys_read(name: str, results: dict) -> set[str]:
    """The top-level keys of `results` (the results JSON `name`) that its chapter's rows read
    when rendered from it, those it has: what every run of the chapter must write (the notebook
    tests check a smoke run against the committed run's)."""
    base = _Reading({**results, "study": _study(name)})
    chapter_rows(name, results, base=base)
    return {key for key in base.read if key in results}


def reproduced_rows(results: dict[str, dict]) -> list[Reproduced]:
    """The rows of every chapter whose results JSON is in `results` (name -> JSON), in order."""
    return [row for name in CHAPTERS if name in results for row in chapter_rows(name, results[name])]


@dataclass(frozen=True)
class AtStudyScale:
    """A row judged on a run at the study's scale (a finished `tools/published.py` step): the
    row, and where it comes from (the step, its device, its wall time and date)."""

    row: Reproduced
    source: str


def published_rows(steps: dict[str, tuple[dict, dict]], fingerprints: dict[str, str] | None = None
                   ) -> dict[str, AtStudyScale]:
    """The rows at the study's scale by quantity, from finished steps (name -> (its step.json,
    its chapter's results JSON)); a later step of `PUBLISHED_STEPS` replaces an earlier one's row
    of the same quantity (the full chapter-2 run replaces its first 300 steps). With
    `fingerprints` (chapter -> its code fingerprint today), each row's source says whether its
    step ran the chapter's code of today."""
    found = {}
    for step, (name, ids) in PUBLISHED_STEPS.items():
        if step not in steps:
            continue
        record, results = steps[step]
        source = (f"`tools/published.py` step {step} on {record['device']}, {record['wall_s']:.0f} s, "
                  f"{record['date'][:10]}")
        if fingerprints and name in fingerprints:
            ran, today = record.get("code_fingerprint", "unknown"), fingerprints[name]
            source += ("; the chapter's code of today" if ran == today else
                       f"; earlier code of the chapter (fingerprint {ran[:8]}, today {today[:8]}): rerun the step "
                       f"to judge today's")
        found.update({row.quantity: AtStudyScale(row, source) for row in chapter_rows(name, results, ids)})
    return found


#: The verdict words of the rows that wait for a run at the study's scale to be judged.
UNJUDGED_WORDS = ("not comparable", "too few events")


def waiting_rows(results: dict[str, dict], waiting: dict[str, str]) -> dict[str, tuple[str, str]]:
    """The rows of this run that only a step still to run can judge, by quantity: those with
    the step's ids whose verdict is one of `UNJUDGED_WORDS`, each with (the step, what it needs),
    for each step `waiting` names (step -> what it needs: device time, how far it got)."""
    found = {}
    for step, needs in waiting.items():
        name, ids = PUBLISHED_STEPS[step]
        if name in results:
            for row in chapter_rows(name, results[name], ids):
                if row.word in UNJUDGED_WORDS:
                    found.setdefault(row.quantity, (step, needs))
    return found


#: The fifth column of a row that no step runs at the study's scale (not an empty cell).
NO_STUDY_SCALE_RUN = "no run planned"


def reproduced_table(rows: list[Reproduced], smoke: bool, published: dict[str, AtStudyScale] | None = None,
                     waiting: dict[str, tuple[str, str]] | None = None) -> str:
    """The index's tables, one per chapter: the verdict word first (`Reproduced.word`), the
    quantity, the study's number and this book's, and, for a chapter with rows run at the study's
    scale (`published_rows`) or waiting for such a run (`waiting_rows`: quantity -> the step and
    what it needs), their verdict word and number, or "pending", the step and its device time up to
    its reasons, in a fifth column;
    then, folded under each table, every row's scale and full verdict. A warning line leads when
    the results came from smoke runs."""
    published = published or {}
    # A row judged at the study's scale still waits when that verdict is one of UNJUDGED_WORDS.
    waiting = {q: w for q, w in (waiting or {}).items()
               if q not in published or published[q].row.word in UNJUDGED_WORDS}
    parts = ["**These numbers come from smoke runs (tests), not from the book's defaults.**"] if smoke else []
    for chapter in sorted({r.chapter for r in rows} | {p.row.chapter for p in published.values()}):
        mine = [r for r in rows if r.chapter == chapter]
        mine += [Reproduced(chapter, p.row.quantity, p.row.study, "not run at the book's scale", "-",
                            "not comparable at this scale: run at the study's scale only (next column)",
                            "not comparable")
                 for quantity, p in published.items()
                 if p.row.chapter == chapter and quantity not in {r.quantity for r in mine}]
        at_scale = [published.get(r.quantity) for r in mine]
        to_come = [waiting.get(r.quantity) for r in mine]
        header = ["verdict", "quantity", "the study", "this book"]
        cells = [[f"**{r.word}**", r.quantity, r.study, r.book] for r in mine]
        if any(at_scale) or any(to_come):
            header.append("at the study's scale")
            for line, p, w in zip(cells, at_scale, to_come):
                pending = f"**{PENDING}**: step {w[0]}, {w[1].split(' (')[0]}" if w else ""
                line.append(f"**{p.row.word}**: {p.row.book}" + (f"; {pending}" if w else "")
                            if p else pending or NO_STUDY_SCALE_RUN)
        parts.append(f"### {CHAPTER_TITLES.get(chapter, f'Chapter {chapter}')}")
        parts.append(markdown_table(header, cells))
        notes = "\n".join(f"{i}. *{r.quantity}* ({r.scale}): {r.verdict}"
                          + (f". At the study's scale ({p.row.scale}; {p.source}): {p.row.verdict}" if p else "")
                          + ("" if not w else f"; then {PENDING}, waits for step {w[0]}: {w[1]}" if p else
                             f". At the study's scale: {PENDING}, waits for step {w[0]}: {w[1]}")
                          for i, (r, p, w) in enumerate(zip(mine, at_scale, to_come), 1))
        parts.append(f"<details><summary>Scale and full verdict of each row</summary>\n\n{notes}\n\n</details>")
    return "\n\n".join(parts)


def between_markers(page: str, start: str, end: str, text: str) -> str:
    """`page` with what lies between its one `start` line and its one `end` line replaced by
    `text` (the index's table here, the README's findings in tools/readme_findings.py)."""
    if page.count(start) != 1 or page.count(end) != 1:
        raise ValueError(f"the page must hold one {start!r} line and one {end!r} line.")
    head, rest = page.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}{text}{end}{tail}"


def with_table(page: str, table: str) -> str:
    """`page` (the index's markdown) with the text between the markers replaced by `table`."""
    return between_markers(page, START_MARKER, END_MARKER, f"\n\n{table}\n\n")


__all__ = ["CHAPTERS", "CHAPTER_TITLES", "END_MARKER", "PENDING", "PUBLISHED_STEPS", "ROWS", "START_MARKER",
           "STUDY_NUMBERS", "UNJUDGED_WORDS", "AtStudyScale", "Reproduced", "between_markers", "chapter_rows",
           "judged", "published_rows", "reproduced_rows", "reproduced_table", "resolve", "waiting_rows",
           "with_table"]
