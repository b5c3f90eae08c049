"""No chapter reads another chapter's modules: a chapter's notebook and its `lib/chapters/chN*`
modules import only `lib/chapters/chN*` modules of their own chapter (and shared ones such as
`registry`, `sweep_parameters`); what two chapters share lives in a study package or `lib.book`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_MODULE = re.compile(r"^lib\.chapters\.ch(\d+)")


def chapter_imports(path: Path) -> set[tuple[int, str]]:
    """(chapter number, module) of every `lib.chapters.chN...` module a source file imports."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {(int(match.group(1)), name) for name in names if (match := CHAPTER_MODULE.match(name))}


def owner(path: Path) -> int:
    """The chapter a notebook source (NN_topic.py) or a chapter module (chN*.py) belongs to."""
    match = re.match(r"^(\d+)_", path.name) or re.match(r"^ch(\d+)", path.name)
    return int(match.group(1))


SOURCES = sorted(ROOT.glob("notebooks/[0-9][0-9]_*.py")) + sorted(ROOT.glob("lib/chapters/ch[0-9]*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_chapter_imports_no_other_chapters_modules(path):
    foreign = sorted(name for chapter, name in chapter_imports(path) if chapter != owner(path))
    assert not foreign, f"{path.relative_to(ROOT)} imports another chapter's modules: {foreign}"


def test_the_check_sees_a_foreign_import(tmp_path):
    """The detector itself: a chapter-3 source importing chapter 2's module is caught."""
    source = tmp_path / "03_topic.py"
    source.write_text("from lib.chapters.ch2 import format_example\nfrom lib.chapters.ch3 import x\n")
    assert {chapter for chapter, _ in chapter_imports(source) if chapter != owner(source)} == {2}
