"""Numbers for the prose and the results JSON, recorded by one call; the words that flip with the data.

A chapter's markdown states its claims and cites the numbers it needs by key, `{{s5.llc_peak}}`;
the code cell that computes a number records it once:

    record = Record()
    record("s5.llc_peak", peak, ",.0f")            # value, and how the prose shows it
    record("s5.llc_peak_vs_study", direction(peak, study, above="above", below="below"))

`Record.results()` goes into the chapter's results JSON (under "recorded": per key the value, its
format and the text the prose shows). In a kernel each call also displays a bundle that carries
the record (`RECORD_MIME`) with a plain-text line `key = text`, so a reader of the .ipynb sees the
value under the cell that computed it; `tools/build_book.py` reads those bundles when it stages a
chapter, replaces every `{{key}}` of its markdown cells with the text and drops the bundles (the
page shows the prose, not the list). A key no call recorded stops the staging (`substitute`).

Where a word of a sentence depends on the data (above / below, reproduced / differs), the word
is itself recorded, chosen by a small rule here (`direction`, `verdict`, `share`); the sentence
around it stays in the markdown. `lib` returns numbers and booleans, never sentences.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from typing import Any

from lib.book.results import to_jsonable

#: The mime type of a record's display bundle (staging finds the records of a notebook by it).
RECORD_MIME = "application/vnd.book.record+json"
#: A key: lower-case words of letters, digits and underscores, joined by dots ("s5.llc_peak").
KEY_PATTERN = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)*$")
#: A citation in a markdown cell: `{{key}}`, spaces inside the braces allowed.
CITATION = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")


@dataclass(frozen=True)
class Recorded:
    """One recorded number (or word): its value, its format spec and the text the prose shows."""

    key: str
    value: Any
    format: str | None
    text: str

    def as_json(self) -> dict:
        return {"value": to_jsonable(self.value), "format": self.format, "text": self.text}


def format_recorded(value: Any, fmt: str | None = None) -> str:
    """The text of `value` in the prose: `format(value, fmt)`; without a format, a string as it
    is and anything else by `str`. NaN and None read "n/a" whatever the format."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if fmt is None:
        return value if isinstance(value, str) else str(value)
    return format(value, fmt)


class Record:
    """The record of one notebook: `record(key, value, fmt)` stores and (in a kernel) displays.

    Recording a key again replaces it (a cell run twice in a live kernel)."""

    def __init__(self, display: bool = True):
        self.entries: dict[str, Recorded] = {}
        self.display = display

    def __call__(self, key: str, value: Any, fmt: str | None = None) -> Any:
        """Record `value` under `key` (shown as `format(value, fmt)`) and return `value`."""
        if not KEY_PATTERN.match(key):
            raise ValueError(f"Record key {key!r} must be lower-case words of letters, digits and "
                             "underscores joined by dots, like 's5.llc_peak'.")
        if isinstance(value, bool):
            raise TypeError(f"Record key {key!r} got a boolean: record the word a rule chooses "
                            "(lib.book.record.verdict), and put the boolean itself in the results.")
        entry = Recorded(key, value, fmt, format_recorded(value, fmt))
        self.entries[key] = entry
        if self.display:
            _show(entry)
        return value

    def spread(self, key: str, values, fmt: str = ".3g", sd_fmt: str = ".2g") -> None:
        """Record a value over draws or seeds under `key.n`, `.mean`, `.median`, `.min`, `.max`
        and `.sd` (sample SD: n/a below two values; every statistic n/a when there are none).
        Chapters 1 and 3 cite their spreads this way."""
        values = [float(v) for v in values]
        finite = [v for v in values if not math.isnan(v)]
        ok = bool(values) and len(finite) == len(values)
        self(f"{key}.n", len(values), "d")
        self(f"{key}.mean", statistics.fmean(values) if ok else None, fmt)
        self(f"{key}.median", statistics.median(values) if ok else None, fmt)
        self(f"{key}.min", min(values) if ok else None, fmt)
        self(f"{key}.max", max(values) if ok else None, fmt)
        self(f"{key}.sd", statistics.stdev(values) if ok and len(values) > 1 else None, sd_fmt)

    def fields(self, prefix: str, source: Any, **formats: str | None) -> None:
        """Record attributes (or, for a mapping, items) of `source` under `prefix.name`, each with
        the format given for its name: `record.fields("s4", summary, grokked=",", share=".1%")`."""
        for name, fmt in formats.items():
            value = source[name] if isinstance(source, dict) else getattr(source, name)
            self(f"{prefix}.{name}", value, fmt)

    def __getitem__(self, key: str) -> Recorded:
        return self.entries[key]

    def texts(self) -> dict[str, str]:
        """key -> the text the prose shows."""
        return {key: entry.text for key, entry in self.entries.items()}

    def results(self) -> dict:
        """key -> {"value", "format", "text"}, for the results JSON (sorted by key)."""
        return {key: self.entries[key].as_json() for key in sorted(self.entries)}


def _show(entry: Recorded) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython comes with the notebooks' requirements
        return
    if get_ipython() is None:
        return
    display({RECORD_MIME: {"key": entry.key, **entry.as_json()},
             "text/plain": f"{entry.key} = {entry.text}"}, raw=True)


# --- The words that flip with the data --------------------------------------------------------


def direction(value: float, reference: float, *, above: str = "above", below: str = "below",
              equal: str = "equal to", undefined: str = "not comparable with") -> str:
    """The word for where `value` lies against `reference`: `above`, `below`, `equal`, or
    `undefined` when either is NaN or None."""
    if value is None or reference is None or value != value or reference != reference:
        return undefined
    if value > reference:
        return above
    return below if value < reference else equal


def verdict(holds: bool | None, *, yes: str = "reproduced", no: str = "differs",
            undefined: str = "undetermined") -> str:
    """The word for a claim: `yes` where it holds, `no` where not, `undefined` for None."""
    if holds is None:
        return undefined
    return yes if holds else no


def share(count: int, total: int, *, every: str = "all", some: str = "some", none: str = "none") -> str:
    """The word for how many of `total` things hold: `every` (all of them, total > 0), `none`
    (not one) or `some`."""
    if count <= 0:
        return none
    return every if count >= total else some


# --- Markdown that cites recorded keys (tools/build_book.py) ------------------------------------


class UnknownKey(KeyError):
    """A markdown cell cites a key that no `record` call recorded."""

    def __str__(self) -> str:
        return str(self.args[0])


def cited_keys(markdown: str) -> list[str]:
    """The keys `{{key}}` cited in `markdown`, in order."""
    return CITATION.findall(markdown)


def substitute(markdown: str, texts: dict[str, str], where: str = "the page") -> str:
    """`markdown` with every `{{key}}` replaced by `texts[key]`; a key not in `texts` raises
    `UnknownKey` with one sentence naming it and `where`."""
    def replace(match: re.Match) -> str:
        key = match.group(1)
        if key not in texts:
            raise UnknownKey(f"{where} cites {{{{{key}}}}} in a markdown cell, but no record() call of "
                             f"its notebook recorded {key!r}.")
        return texts[key]
    return CITATION.sub(replace, markdown)


def notebook_records(content: dict) -> dict[str, str]:
    """key -> text of every record displayed in a notebook's outputs (`content`: its JSON); a
    later record of a key replaces an earlier one."""
    texts = {}
    for cell in content.get("cells", []):
        for output in cell.get("outputs", []):
            entry = output.get("data", {}).get(RECORD_MIME)
            if entry is not None:
                texts[entry["key"]] = entry["text"]
    return texts


def resolve_notebook(content: dict, where: str = "the notebook") -> dict:
    """Resolve a notebook's citations in place: every markdown cell's `{{key}}` replaced by the
    text its records give (`substitute`), and the record bundles dropped from the outputs."""
    texts = notebook_records(content)
    for cell in content.get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            if CITATION.search(source):
                cell["source"] = substitute(source, texts, where)
        if "outputs" in cell:
            cell["outputs"] = [o for o in cell["outputs"] if RECORD_MIME not in o.get("data", {})]
    return content


__all__ = ["CITATION", "KEY_PATTERN", "RECORD_MIME", "Record", "Recorded", "UnknownKey", "cited_keys",
           "direction", "format_recorded", "notebook_records", "resolve_notebook", "share", "substitute",
           "verdict"]
