"""A chapter's code fingerprint follows its code and its lib imports, through other modules, and
ignores docstrings and comments."""

from pathlib import Path

from lib.book.code_fingerprint import (
    dependencies, fingerprint, machine_description, read_fingerprints, record_fingerprints,
)


def make_tree(root: Path) -> Path:
    """lib/a.py imports lib/b.py; the chapter imports a function of lib.a only."""
    (root / "lib" / "sub").mkdir(parents=True)
    (root / "lib" / "__init__.py").write_text('"""The package."""\n')
    (root / "lib" / "sub" / "__init__.py").write_text("")
    (root / "lib" / "sub" / "a.py").write_text('"""Module a."""\nfrom lib.sub.b import value\n\n'
                                               'def twice():\n    """Twice b."""\n    return 2 * value\n')
    (root / "lib" / "sub" / "b.py").write_text("value = 3  # the number\n")
    (root / "lib" / "sub" / "unused.py").write_text("value = 4\n")
    (root / "notebooks").mkdir()
    chapter = root / "notebooks" / "01_chapter.py"
    chapter.write_text("# %%\nfrom lib.sub.a import twice\nprint(twice())\n")
    return chapter


def test_dependencies_are_found_through_other_modules_and_packages(tmp_path):
    chapter = make_tree(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in dependencies(chapter, tmp_path)] == [
        "lib/__init__.py", "lib/sub/__init__.py", "lib/sub/a.py", "lib/sub/b.py"]


def test_code_changes_change_the_fingerprint_and_docstrings_or_comments_do_not(tmp_path):
    chapter = make_tree(tmp_path)
    before = fingerprint(chapter, tmp_path)
    a, b = tmp_path / "lib" / "sub" / "a.py", tmp_path / "lib" / "sub" / "b.py"
    a.write_text(a.read_text().replace('"""Twice b."""', '"""Two times b, reworded."""'))
    b.write_text("value = 3  # another comment\n")
    (tmp_path / "lib" / "sub" / "unused.py").write_text("value = 5\n")
    assert fingerprint(chapter, tmp_path) == before
    b.write_text("value = 4\n")   # a module imported only through lib.sub.a
    assert fingerprint(chapter, tmp_path) != before
    b.write_text("value = 3\n")
    chapter.write_text(chapter.read_text() + "print('more')\n")
    assert fingerprint(chapter, tmp_path) != before


def test_recording_keeps_the_other_chapters(tmp_path):
    chapter = make_tree(tmp_path)
    (tmp_path / "notebooks" / "fingerprints.json").write_text('{"00_other": {"code": "abc", "machine": "m"}}')
    record = record_fingerprints([chapter], tmp_path)
    assert read_fingerprints(tmp_path / "notebooks") == {"00_other": "abc",
                                                         "01_chapter": fingerprint(chapter, tmp_path)}
    assert record["01_chapter"]["machine"] == machine_description() and "torch" in machine_description()
