"""Write each chapter's parameter help into its notebook's parameters cell (`make notebooks`).

A parameter's help is written once, in the chapter's dataclass (`parameter(help=...)` in
`lib/chapters/chN.py`); the comment on its line in the notebook's parameters cell is generated
from it by this tool. `tests/test_book_params.py` fails, naming this command, when a comment
and its help differ.

    python tools/sync_parameter_comments.py notebooks/02_training.py [...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lib.book.params import parameter_help  # noqa: E402
from lib.chapters.registry import parameters_class  # noqa: E402

#: One line of a parameters cell: `name = value  # comment` (the comment may be missing).
PARAMETER_LINE = re.compile(r"^(?P<name>\w+) = (?P<value>.*?)(?:  # .*)?$")


def sync(source: Path) -> bool:
    """Rewrite the comments of `source`'s parameters cell from its dataclass; True if it changed."""
    helps = parameter_help(parameters_class(source))
    text = source.read_text()
    head, marker, rest = text.partition('# %% tags=["parameters"]\n')
    if not marker:
        raise SystemExit(f"{source} has no cell tagged parameters.")
    cell, separator, tail = rest.partition("\n# %%")
    lines = []
    for line in cell.splitlines():
        match = PARAMETER_LINE.match(line)
        if match and match["name"] in helps:
            line = f"{match['name']} = {match['value']}  # {helps[match['name']]}"
        lines.append(line)
    updated = head + marker + "\n".join(lines) + ("\n" if cell.endswith("\n") else "") + separator + tail
    if updated != text:
        source.write_text(updated)
    return updated != text


if __name__ == "__main__":
    sources = [Path(arg) for arg in sys.argv[1:]]
    if not sources or any(path.suffix != ".py" or not path.exists() for path in sources):
        sys.exit("Give the chapters' .py sources, e.g. notebooks/02_training.py.")
    for path in sources:
        print(f"{'updated' if sync(path) else 'unchanged'} {path}")
