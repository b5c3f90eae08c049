"""Bring each chapter's .ipynb in line with its .py source, keeping its outputs (`make notebooks`).

`jupytext --update` keeps a notebook's outputs, but also the cell tags of its last execution:
a tag added in the .py (`remove-output`, `parameters`) never reached the .ipynb. This does the
same merge with jupytext's own function and then takes every cell's tags from the source.

    python tools/sync_notebooks.py notebooks/06_determination.py [...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupytext
from jupytext.combine import combine_inputs_with_outputs


def sync(source: Path) -> Path:
    """Write source's .ipynb twin: cells, text and tags from `source`, outputs from the old
    .ipynb where a cell's text is unchanged; return its path."""
    paired = source.with_suffix(".ipynb")
    notebook = jupytext.read(source)
    if paired.exists():
        merged = combine_inputs_with_outputs(notebook, jupytext.read(paired))
        for cell, source_cell in zip(merged.cells, notebook.cells, strict=True):
            tags = source_cell.metadata.get("tags")
            if tags:
                cell.metadata["tags"] = list(tags)
            else:
                cell.metadata.pop("tags", None)
        notebook = merged
    jupytext.write(notebook, paired)
    return paired


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python tools/sync_notebooks.py notebooks/NN_topic.py [...]")
    for path in sys.argv[1:]:
        print(f"synced {sync(Path(path))}")
