"""README.md's "What it finds" is written from the committed runs (tools/readme_findings.py): the
committed README holds what tools/readme_findings.md gives with the committed results, so no
number, count or seed list in it is typed by hand; a citation of a missing run or key stops with
one sentence."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import readme_findings  # noqa: E402  (a script folder, not a package)


def test_the_committed_readme_holds_the_findings_the_committed_runs_give():
    findings = readme_findings.render(readme_findings.TEMPLATE.read_text(), ROOT / "notebooks" / "results",
                                      ROOT / "results" / "published")
    readme = readme_findings.README.read_text()
    assert readme == readme_findings.with_findings(readme, findings)
    assert "{{" not in findings and findings.count("\n- **") >= 4


def test_every_number_in_the_template_is_a_citation():
    """Outside its citations the template holds no digit but in names (groups, chapters, lengths,
    layers) and in the study's own claims and settings, listed here."""
    text = readme_findings.CITATION.sub("", readme_findings.TEMPLATE.read_text())
    for named in ("the study's 0.403", "below 1e-6 the study claims", "not the study's 11 and 32,768",
                  "batches of 256", "the study: about 50", "d(1, t) <= k", "layers 0 to 4", "95% interval",
                  "length 1", "vertex 2", "chapter 4", "Chapter 2", "chapter 7", "chapter 8", "S4", "A4 x Z2"):
        text = text.replace(named, "")
    assert not any(character.isdigit() for character in text), [line for line in text.splitlines()
                                                                 if any(c.isdigit() for c in line)]


def test_a_missing_run_or_key_is_one_sentence(tmp_path):
    (tmp_path / "02_training.json").write_text(json.dumps({"recorded": {"a.b": {"text": "7"}}}))
    assert readme_findings.render("- x {{02_training:a.b}}\n  y", tmp_path, tmp_path) == "- x 7 y\n"
    with pytest.raises(SystemExit, match=r"^tools/readme_findings.md cites 02_training:a.c, which that run did not "
                                         r"record\.$"):
        readme_findings.render("{{02_training:a.c}}", tmp_path, tmp_path)
    with pytest.raises(SystemExit, match=r"cites ch9_nothing, which is neither a results JSON"):
        readme_findings.render("{{ch9_nothing:a.b}}", tmp_path, tmp_path)
