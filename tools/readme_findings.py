"""Write README.md's "What it finds" from the committed runs (`make notebooks`; issue 50).

The findings' text is `tools/readme_findings.md`; every number, count, seed list or word that
flips with the data in it is a citation `{{SOURCE:KEY}}` of a text a run recorded
(`lib.book.record`): SOURCE is a chapter's results JSON name (`02_training`, read from
`--results`, default notebooks/results/) or a `tools/published.py` step (`ch4_s5_100`, read from
its folder in `--published`, default results/published/), and KEY a recorded key of it. This
writes the rendered text between README.md's findings markers; `tests/test_readme_findings.py`
checks that the committed README holds what the committed runs give, so no number there is typed
by hand. A citation whose source or key is missing stops the command with one sentence.

    .venv/bin/python tools/readme_findings.py [--results notebooks/results] [--published results/published]
"""

from __future__ import annotations

import argparse
import json
import re
import textwrap
from pathlib import Path

from lib.book.reproduced import between_markers

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tools" / "readme_findings.md"
README = ROOT / "README.md"
START = "<!-- findings: written by tools/readme_findings.py from tools/readme_findings.md and the committed runs -->"
END = "<!-- findings: end -->"
CITATION = re.compile(r"\{\{([A-Za-z0-9_]+):([A-Za-z0-9_.]+)\}\}")


def recorded(source: str, results_dir: Path, published_dir: Path) -> dict:
    """The recorded texts of a chapter's results JSON or of a published step's."""
    chapter = results_dir / f"{source}.json"
    if chapter.exists():
        return json.loads(chapter.read_text())["recorded"]
    step = published_dir / source / "step.json"
    if step.exists():
        name = json.loads(step.read_text())["chapter"]
        return json.loads((published_dir / source / f"{name}.json").read_text())["recorded"]
    raise SystemExit(f"tools/readme_findings.md cites {source}, which is neither a results JSON in {results_dir} "
                     f"nor a finished step in {published_dir}.")


def render(template: str, results_dir: Path, published_dir: Path) -> str:
    """`template` with each citation replaced by the text its run recorded."""
    cache: dict[str, dict] = {}

    def text(match: re.Match) -> str:
        source, key = match.groups()
        if source not in cache:
            cache[source] = recorded(source, results_dir, published_dir)
        if key not in cache[source]:
            raise SystemExit(f"tools/readme_findings.md cites {source}:{key}, which that run did not record.")
        return cache[source][key]["text"]

    return reflow(CITATION.sub(text, template))


def reflow(text: str, width: int = 100) -> str:
    """Each "- " item of `text` refilled to `width` columns, its later lines indented by two."""
    items = re.split(r"\n(?=- )", text.strip())
    return "\n".join(textwrap.fill(" ".join(item.split()), width, subsequent_indent="  ", break_long_words=False,
                                    break_on_hyphens=False) for item in items) + "\n"


def with_findings(readme: str, findings: str) -> str:
    """`readme` with the text between the findings markers replaced by `findings`."""
    return between_markers(readme, START, END, f"\n{findings.strip()}\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "notebooks" / "results")
    parser.add_argument("--published", type=Path, default=ROOT / "results" / "published")
    args = parser.parse_args(argv)
    findings = render(TEMPLATE.read_text(), args.results, args.published)
    README.write_text(with_findings(README.read_text(), findings))
    print(f"findings written to {README}")


if __name__ == "__main__":
    main()
