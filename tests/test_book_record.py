"""lib.book.record: numbers recorded once for the prose and the results JSON, the word rules, and
the substitution of `{{key}}` in markdown cells (tools/build_book.py stages with it)."""

import json

import pytest

from lib.book.record import (
    RECORD_MIME, Record, UnknownKey, cited_keys, direction, format_recorded, notebook_records,
    resolve_notebook, share, substitute, verdict,
)
from lib.book.results import read_results, write_results


def test_a_recorded_value_reaches_the_results_json_with_its_format(tmp_path):
    record = Record()
    assert record("s4.grokked_fraction", 0.0312, ".1%") == 0.0312      # the value passes through
    record("s4.seeds", 10_000, ",")
    record("s4.verdict", verdict(True))
    write_results(tmp_path, "04_test", {"count": 3, "recorded": record.results()})
    recorded = read_results(tmp_path, "04_test")["recorded"]
    assert recorded["s4.grokked_fraction"] == {"value": 0.0312, "format": ".1%", "text": "3.1%"}
    assert recorded["s4.seeds"] == {"value": 10000, "format": ",", "text": "10,000"}
    assert recorded["s4.verdict"] == {"value": "reproduced", "format": None, "text": "reproduced"}
    assert list(recorded) == sorted(recorded)


def test_recording_again_replaces_and_bad_keys_or_booleans_stop():
    record = Record()
    record("a.b", 1.0, ".1f")
    record("a.b", 2.0, ".1f")                                          # a cell run twice
    assert record.texts() == {"a.b": "2.0"}
    with pytest.raises(ValueError, match="lower-case words"):
        record("S5 peak", 1.0)
    with pytest.raises(TypeError, match="boolean"):
        record("a.flag", True)


def test_missing_numbers_read_na_whatever_the_format():
    assert format_recorded(float("nan"), ".2f") == "n/a" and format_recorded(None, ",") == "n/a"
    assert format_recorded("lower") == "lower" and format_recorded(3) == "3"
    assert format_recorded(-0.333, "+.0%") == "-33%"


def test_the_word_rules():
    assert direction(2.0, 1.0) == "above" and direction(1.0, 2.0) == "below" and direction(1.0, 1.0) == "equal to"
    assert direction(float("nan"), 1.0) == "not comparable with" and direction(None, 1.0, undefined="?") == "?"
    assert direction(0.3, 0.5, above="higher", below="lower") == "lower"
    assert verdict(True) == "reproduced" and verdict(False) == "differs" and verdict(None) == "undetermined"
    assert verdict(False, yes="are apart", no="overlap") == "overlap"
    assert share(3, 3) == "all" and share(1, 3) == "some" and share(0, 3) == "none"
    assert share(0, 0) == "none"


def test_substitution_renders_the_formatted_value_and_an_unknown_key_fails_with_one_sentence():
    record = Record(display=False)
    record("s5.llc_peak", 4558.4, ",.0f")
    text = "The LLC peaked at {{s5.llc_peak}} ({{ s5.llc_peak }} again)."
    assert cited_keys(text) == ["s5.llc_peak", "s5.llc_peak"]
    assert substitute(text, record.texts()) == "The LLC peaked at 4,558 (4,558 again)."
    with pytest.raises(UnknownKey) as error:
        substitute("{{s5.llc_final}}", record.texts(), "05_complexity.ipynb")
    assert str(error.value) == ("05_complexity.ipynb cites {{s5.llc_final}} in a markdown cell, but no "
                                "record() call of its notebook recorded 's5.llc_final'.")


def bundle(key: str, text: str) -> dict:
    return {"output_type": "display_data", "metadata": {},
            "data": {RECORD_MIME: {"key": key, "value": None, "format": None, "text": text},
                     "text/plain": f"{key} = {text}"}}


def test_a_notebook_resolves_its_citations_from_its_own_records_and_drops_them():
    content = {"cells": [
        {"cell_type": "code", "source": "record(...)", "metadata": {},
         "outputs": [bundle("a.x", "1.5"), {"output_type": "stream", "name": "stdout", "text": "kept\n"},
                     bundle("a.x", "2.5")]},
        {"cell_type": "markdown", "source": ["x is ", "{{a.x}}."], "metadata": {}},
        {"cell_type": "markdown", "source": "no citation, {not a key}", "metadata": {}},
    ]}
    assert notebook_records(content) == {"a.x": "2.5"}                  # the later record wins
    resolve_notebook(json.loads(json.dumps(content)))                     # a copy resolves
    resolve_notebook(content)
    assert content["cells"][1]["source"] == "x is 2.5."
    assert content["cells"][2]["source"] == "no citation, {not a key}"
    assert [o["output_type"] for o in content["cells"][0]["outputs"]] == ["stream"]


def test_in_a_kernel_each_record_displays_a_bundle_with_a_plain_text_line(monkeypatch):
    shown = []
    import IPython
    import IPython.display

    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", lambda data, raw: shown.append(data))
    Record()("a.y", 0.25, ".0%")
    assert shown == [{RECORD_MIME: {"key": "a.y", "value": 0.25, "format": ".0%", "text": "25%"},
                      "text/plain": "a.y = 25%"}]


def test_spread_records_every_statistic_and_na_when_undefined():
    record = Record(display=False)
    record.spread("x", [1.0, 2.0, 6.0], ".3g")
    texts = record.texts()
    assert [texts[f"x.{k}"] for k in ("n", "mean", "median", "min", "max")] == ["3", "3", "2", "1", "6"]
    assert record["x.sd"].value == pytest.approx(2.6457513, rel=1e-6)
    record.spread("one", [0.5])
    assert record.texts()["one.sd"] == "n/a" and record.texts()["one.mean"] == "0.5"
    record.spread("none", [])
    assert record.texts()["none.n"] == "0" and record.texts()["none.median"] == "n/a"


def test_fields_records_attributes_and_items_with_their_formats():
    from types import SimpleNamespace
    record = Record(display=False)
    record.fields("a", SimpleNamespace(share=0.25, count=1200), share=".0%", count=",")
    record.fields("b", {"word": "above"}, word=None)
    assert record.texts() == {"a.share": "25%", "a.count": "1,200", "b.word": "above"}
