"""Writing a chapter's results atomically, so a crash never leaves half a file behind.

Every chapter ends by writing its key numbers to `results_dir/<notebook name>.json`; chapter 2
also writes a checkpoint that chapter 3 reads. Both go through a temporary file in the same
directory followed by `os.replace`, which is atomic on POSIX file systems.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch


def to_jsonable(value: Any) -> Any:
    """Convert tensors, numpy values and tuples into plain JSON types (NaN/inf become None)."""
    if isinstance(value, torch.Tensor):
        return to_jsonable(value.detach().cpu().tolist())
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


def _atomic_write(path: Path, write) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o644)  # mkstemp creates 0600; results are meant to be shared
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return path


def write_results(results_dir: str | os.PathLike, notebook_name: str, results: dict) -> Path:
    """Write `results` as `results_dir/<notebook_name>.json` atomically and return the path."""
    text = json.dumps(to_jsonable(results), indent=2, sort_keys=True, allow_nan=False)
    return _atomic_write(Path(results_dir) / f"{notebook_name}.json",
                         lambda handle: handle.write(text.encode()))


def read_results(results_dir: str | os.PathLike, notebook_name: str) -> dict:
    """Read back what `write_results` wrote."""
    return json.loads((Path(results_dir) / f"{notebook_name}.json").read_text())


def save_checkpoint(path: str | os.PathLike, state: dict) -> Path:
    """`torch.save` `state` to `path` atomically (chapter 2 writes, chapter 3 reads)."""
    return _atomic_write(Path(path), lambda handle: torch.save(state, handle))
