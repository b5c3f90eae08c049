"""Find a chapter's parts from its notebook's file name (tests and tools; no notebook imports it).

A chapter registers itself by its own files: `notebooks/NN_topic.py` validates its parameters
with a dataclass of `lib.chapters` (named in its `validate_parameters(..., globals())` call),
which the tests and `tools/sync_parameter_comments.py` find here, so adding a chapter touches no
list in the tests. What its results JSON must hold is what its rows of the index read
(`lib.book.reproduced.keys_read`) and what its notebook's own `check_results` asserts.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import lib.chapters
from lib.book.params import ChapterParameters


def chapter_number(notebook: str | Path) -> int:
    """The chapter number of `notebooks/NN_topic.{py,ipynb}` (NN)."""
    match = re.fullmatch(r"(\d\d)_\w+", Path(notebook).stem)
    if match is None:
        raise ValueError(f"{Path(notebook).name} is not named like a chapter (NN_topic).")
    return int(match.group(1))


def parameters_class(notebook: str | Path) -> type[ChapterParameters]:
    """The parameters dataclass that the chapter's notebook validates with (found by its name)."""
    source = Path(notebook).with_suffix(".py").read_text()
    match = re.search(r"validate_parameters\((\w+), globals\(\)\)", source)
    if match is None:
        raise LookupError(f"{Path(notebook).name} never calls validate_parameters(..., globals()).")
    # The chapter's own module first, so that one broken module elsewhere breaks only its chapter.
    own = f"ch{chapter_number(notebook)}"
    names = [own] + sorted(m.name for m in pkgutil.iter_modules(lib.chapters.__path__)
                           if m.name not in (own, "registry"))
    for name in names:
        try:
            module = importlib.import_module(f"lib.chapters.{name}")
        except ModuleNotFoundError:
            continue
        found = getattr(module, match.group(1), None)
        if isinstance(found, type) and issubclass(found, ChapterParameters):
            return found
    raise LookupError(f"{Path(notebook).name} validates with {match.group(1)}, which no lib.chapters "
                      f"module defines.")
