"""The module map in lib/__init__.py lists every module of lib, each with what it is for; the
README links to it (rather than keeping a copy). A chapter's own modules (`lib/chapters/chN*.py`)
are covered by one line of the map and say what they hold in their own docstrings, so that a new
chapter adds its modules without editing the map."""

import ast
import re
from pathlib import Path

import lib

ROOT = Path(__file__).resolve().parents[1]


def map_block() -> str:
    doc = lib.__doc__
    return doc[doc.index("lib.book "):].rstrip()


def map_entries() -> dict[str, str]:
    """{"lib.book.params": "papermill parameters: ...", ...}: each listed module and its line's
    description (one line can list several modules: "ch1, ch1_figures  the ...")."""
    entries = {}
    package = None
    for line in map_block().splitlines():
        if line.startswith("lib."):
            package = line.split()[0]
        else:
            names, _, description = line.strip().partition("  ")
            for name in names.split(","):
                entries[f"{package}.{name.strip()}"] = description.strip()
    return entries


#: A chapter's own modules: chN.py and chN_<topic>.py in lib/chapters.
CHAPTER_MODULE = re.compile(r"lib\.chapters\.ch\d+(_[a-z_]+)?")


def chapter_modules() -> list[Path]:
    return sorted(p for p in (ROOT / "lib" / "chapters").glob("ch*.py")
                  if CHAPTER_MODULE.fullmatch("lib.chapters." + p.stem))


def test_the_map_lists_every_module_and_nothing_else():
    listed = set(map_entries())
    on_disk = {".".join(p.relative_to(ROOT).with_suffix("").parts)
               for p in (ROOT / "lib").glob("*/*.py") if p.name != "__init__.py"}
    assert {"lib.chapters.chN", "lib.chapters.chN_*"} <= listed, "the map's line for the chapters' own modules"
    listed -= {"lib.chapters.chN", "lib.chapters.chN_*"}
    on_disk = {name for name in on_disk if not CHAPTER_MODULE.fullmatch(name)}
    assert listed == on_disk, f"missing from the map: {on_disk - listed}; not on disk: {listed - on_disk}"


def test_every_chapter_module_says_what_it_holds_and_names_its_chapter():
    for path in chapter_modules():
        doc = ast.get_docstring(ast.parse(path.read_text()))
        number = re.match(r"ch(\d+)", path.stem).group(1)
        assert doc, f"{path.name} has no docstring"
        assert re.search(rf"chapter {number}\b|notebooks/0?{number}_", doc, re.IGNORECASE), \
            f"{path.name}'s docstring does not name chapter {number}"


def test_every_module_in_the_map_says_what_it_is_for():
    assert all(map_entries().values()), [name for name, text in map_entries().items() if not text]


def test_modules_are_small_or_say_why():
    for path in (ROOT / "lib").rglob("*.py"):
        text = path.read_text()
        if text.count("\n") > 420:
            assert re.search(r"over 400 lines because", text), f"{path.name} has {text.count(chr(10))} lines"


def test_the_readme_links_to_the_map_instead_of_copying_it():
    readme = (ROOT / "README.md").read_text()
    assert "](lib/__init__.py)" in readme
    assert "lib.book.params" not in readme and "\n  params  " not in readme, "the README copies the map"
