"""The module map in lib/__init__.py lists every module of lib, and the README shows the same map."""

import re
from pathlib import Path

import lib

ROOT = Path(__file__).resolve().parents[1]


def map_block() -> str:
    doc = lib.__doc__
    return doc[doc.index("lib.book "):].rstrip()


def test_the_map_lists_every_module_and_nothing_else():
    listed = set()
    package = None
    for line in map_block().splitlines():
        if line.startswith("lib."):
            package = line.split()[0]
        else:
            names = line.strip().split("  ")[0]   # "ch1, ch1_figures" or "params"
            listed |= {f"{package}.{name.strip()}" for name in names.split(",")}
    on_disk = {".".join(p.relative_to(ROOT).with_suffix("").parts)
               for p in (ROOT / "lib").glob("*/*.py") if p.name != "__init__.py"}
    assert listed == on_disk, f"missing from the map: {on_disk - listed}; not on disk: {listed - on_disk}"


def test_modules_are_small_or_say_why():
    for path in (ROOT / "lib").rglob("*.py"):
        text = path.read_text()
        if text.count("\n") > 420:
            assert re.search(r"over 400 lines because", text), f"{path.name} has {text.count(chr(10))} lines"


def test_the_readme_shows_the_same_map():
    assert map_block() in (ROOT / "README.md").read_text()
