"""Which code produced a committed notebook's outputs: a fingerprint of a chapter's source and of
every `lib` module it imports, directly or through other modules (used by `make notebooks` and by
the test that catches notebooks left unexecuted after their code changed).

Only code counts: each module is hashed as its syntax tree with docstrings removed, so editing a
docstring or a comment does not ask for an hour of re-execution, while any change to what runs
(including the strings a chapter prints) does.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

#: The file, next to the notebooks, that records each chapter's fingerprint at its last execution.
FINGERPRINTS_FILE = "fingerprints.json"


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _lib_imports(tree: ast.AST, package: str = "lib") -> set[str]:
    """Dotted names of the `package` modules and packages a syntax tree imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == package:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)  # `from lib.x import module`
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.split(".")[0] == package)
    return names


def _module_file(name: str, root: Path) -> Path | None:
    """The file of module or package `name` under `root`, None for a name that is not a module
    (for example a function imported from a module)."""
    path = root.joinpath(*name.split("."))
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return None


def dependencies(source: Path, root: Path) -> list[Path]:
    """Every `lib` file (modules and the `__init__.py` of their packages) that `source` imports,
    directly or through each other, sorted by path relative to `root` (the repository)."""
    found: set[Path] = set()
    pending = [ast.parse(Path(source).read_text())]
    while pending:
        for name in _lib_imports(pending.pop()):
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):   # the packages on the way are imported too
                path = _module_file(".".join(parts[:depth]), root)
                if path is not None and path not in found:
                    found.add(path)
                    pending.append(ast.parse(path.read_text()))
    return sorted(found, key=lambda path: path.relative_to(root).as_posix())


def fingerprint(source: Path, root: Path) -> str:
    """SHA-256 over the code (docstrings removed) of `source` and of its `lib` dependencies."""
    digest = hashlib.sha256()
    for path in [Path(source), *dependencies(source, root)]:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(ast.dump(_without_docstrings(ast.parse(path.read_text()))).encode())
    return digest.hexdigest()


def read_fingerprints(notebooks_dir: Path) -> dict[str, str]:
    """The recorded fingerprint of each chapter (by notebook stem); empty when none is recorded."""
    path = Path(notebooks_dir) / FINGERPRINTS_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def record_fingerprints(sources: list[Path], root: Path) -> dict[str, str]:
    """Record the current fingerprint of each chapter source (its .py) beside the notebooks,
    keeping the other chapters' entries; returns the whole record."""
    notebooks_dir = Path(sources[0]).parent
    record = read_fingerprints(notebooks_dir)
    record.update({Path(source).stem: fingerprint(Path(source), root) for source in sources})
    (notebooks_dir / FINGERPRINTS_FILE).write_text(json.dumps(dict(sorted(record.items())), indent=1) + "\n")
    return record


__all__ = ["FINGERPRINTS_FILE", "dependencies", "fingerprint", "read_fingerprints", "record_fingerprints"]
