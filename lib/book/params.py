"""Validation of papermill parameters, shared by every chapter.

Each chapter's second cell passes its parameters through these checks. A bad value raises
`ParameterError` whose message is one sentence naming the parameter and what is allowed, so a
headless rerun stops with a readable reason instead of a traceback deep inside training code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch


class ParameterError(ValueError):
    """A notebook parameter has a value the chapter cannot run with."""


def _fail(name: str, allowed: str, value: Any) -> None:
    raise ParameterError(f"Parameter `{name}` must be {allowed}; got {value!r}.")


def check_bool(name: str, value: Any) -> bool:
    """Return `value` if it is a bool, else raise `ParameterError`."""
    if not isinstance(value, bool):
        _fail(name, "True or False", value)
    return value


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """Return `value` if it is an int in [low, high] (bounds optional), else raise."""
    in_range = (low is None or (isinstance(value, int) and value >= low)) and (
        high is None or (isinstance(value, int) and value <= high)
    )
    if isinstance(value, bool) or not isinstance(value, int) or not in_range:
        _fail(name, f"an integer{_range_text(low, high)}", value)
    return value


def check_float(
    name: str, value: Any, low: float | None = None, high: float | None = None,
    *, low_inclusive: bool = True,
) -> float:
    """Return `value` as a float if it is a finite number in the range, else raise."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and low is not None:
        ok = value >= low if low_inclusive else value > low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        bound = _range_text(low, high) if low_inclusive else f" greater than {low}"
        _fail(name, f"a finite number{bound}", value)
    return float(value)


def check_choice(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    """Return `value` if it is one of `allowed`, else raise."""
    if value not in allowed:
        _fail(name, "one of " + ", ".join(repr(a) for a in allowed), value)
    return value


def check_float_list(
    name: str, value: Any, low: float | None = None, high: float | None = None,
    *, min_length: int = 1,
) -> list[float]:
    """Return `value` as a list of floats if every entry is a finite number in the range."""
    if not isinstance(value, (list, tuple)) or len(value) < min_length:
        _fail(name, f"a list of at least {min_length} numbers", value)
    for entry in value:
        if isinstance(entry, bool) or not isinstance(entry, (int, float)) or not math.isfinite(entry) \
                or (low is not None and entry < low) or (high is not None and entry > high):
            _fail(name, f"a list of finite numbers{_range_text(low, high)}", value)
    return [float(v) for v in value]


def check_int_list(
    name: str, value: Any, low: int | None = None, high: int | None = None,
    *, min_length: int = 1,
) -> list[int]:
    """Return `value` as a list of ints if every entry is an int in the range."""
    if not isinstance(value, (list, tuple)) or len(value) < min_length:
        _fail(name, f"a list of at least {min_length} integers", value)
    for entry in value:
        if isinstance(entry, bool) or not isinstance(entry, int) \
                or (low is not None and entry < low) or (high is not None and entry > high):
            _fail(name, f"a list of integers{_range_text(low, high)}", value)
    return [int(v) for v in value]


def check_schedule(rates_name: str, rates: Any, steps_name: str, steps: Any) -> tuple[list[float], list[int]]:
    """Check a piecewise-constant learning-rate schedule given as two parallel lists (chapters 2, 3)."""
    checked_rates = check_float_list(rates_name, rates, 0.0, 1.0)
    checked_steps = check_int_list(steps_name, steps, 1)
    if len(checked_rates) != len(checked_steps):
        raise ParameterError(f"Parameter `{steps_name}` must have one entry per learning rate; "
                             f"got {len(checked_steps)} steps for {len(checked_rates)} rates.")
    return checked_rates, checked_steps


def check_path(name: str, value: Any) -> str:
    """Return `value` if it is a non-empty string usable as a directory path."""
    if not isinstance(value, str) or not value.strip():
        _fail(name, "a non-empty directory path", value)
    return value


def check_common(smoke: Any, seed: Any, device: Any, results_dir: Any) -> torch.device:
    """Check the four parameters every chapter has; return the resolved torch device."""
    check_bool("smoke", smoke)
    check_int("seed", seed, 0)
    resolved = resolve_device(device)
    check_path("results_dir", results_dir)
    return resolved


def resolve_device(value: Any, name: str = "device") -> torch.device:
    """Turn the `device` parameter into a torch.device.

    "auto" picks CUDA when present and the CPU otherwise; "cpu", "cuda" and "cuda:K" are taken
    as given, and asking for CUDA on a machine without it is an error rather than a silent
    fallback (a rerun at published scale should not quietly run for days on a CPU).
    """
    if value == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if isinstance(value, str) and (value == "cpu" or value == "cuda" or value.startswith("cuda:")):
        if value != "cpu" and not torch.cuda.is_available():
            _fail(name, "\"auto\" or \"cpu\" on this machine, which has no CUDA device", value)
        try:
            return torch.device(value)
        except RuntimeError:
            pass
    _fail(name, "\"auto\", \"cpu\", \"cuda\" or \"cuda:K\"", value)
    raise AssertionError("unreachable")


def _range_text(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" between {low} and {high}"
    if low is not None:
        return f" of at least {low}"
    if high is not None:
        return f" of at most {high}"
    return ""


def apply_cpu_threads(threads: int, device: torch.device | str) -> None:
    """Run torch on `threads` CPU threads when `device` is the CPU (chapters 1 to 3).

    The chapters' models are small: on a 2-core machine one thread is usually fastest, and two
    threads fight over the cores whenever anything else is running.
    """
    if torch.device(device).type == "cpu":
        torch.set_num_threads(threads)
