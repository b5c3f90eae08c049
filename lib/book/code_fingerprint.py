"""Which code produced a committed notebook's outputs: a fingerprint of a chapter's source and of
every `lib` module it imports, directly or through other modules (used by `make notebooks` and by
the test that catches notebooks left unexecuted after their code changed), recorded with the
machine that executed it.

Only code counts: each module is hashed as its syntax tree with docstrings removed, so editing a
docstring or a comment does not ask for an hour of re-execution, while any change to what runs
(including the strings a chapter prints) does.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import platform
from pathlib import Path

import torch

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


def machine_description() -> str:
    """The CPU, its vector instructions as torch uses them, its cores and the torch version:
    float results can change with any of them (kernels differ by instruction set), so the
    record says on what a chapter's committed numbers were computed."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (f"{model}, {torch.backends.cpu.get_cpu_capability()}, {os.cpu_count()} cores, "
            f"torch {torch.__version__}")


def _read_record(notebooks_dir: Path) -> dict[str, dict[str, str]]:
    path = Path(notebooks_dir) / FINGERPRINTS_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def read_fingerprints(notebooks_dir: Path) -> dict[str, str]:
    """The recorded code fingerprint of each chapter (by notebook stem); empty when none is recorded."""
    return {name: entry["code"] for name, entry in _read_record(notebooks_dir).items()}


def record_fingerprints(sources: list[Path], root: Path) -> dict[str, dict[str, str]]:
    """Record the current code fingerprint of each chapter source (its .py) beside the notebooks,
    with the machine it was executed on, keeping the other chapters' entries; returns the record."""
    notebooks_dir = Path(sources[0]).parent
    record = _read_record(notebooks_dir)
    machine = machine_description()
    record.update({Path(source).stem: {"code": fingerprint(Path(source), root), "machine": machine}
                   for source in sources})
    (notebooks_dir / FINGERPRINTS_FILE).write_text(json.dumps(dict(sorted(record.items())), indent=1) + "\n")
    return record


__all__ = ["FINGERPRINTS_FILE", "dependencies", "fingerprint", "machine_description", "read_fingerprints",
           "record_fingerprints"]
