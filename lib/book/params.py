"""Papermill parameters, declared once per chapter and validated by one function (all chapters).

A chapter declares its parameters as one frozen dataclass (in `lib.chapters.chN`) whose fields
carry their type, bounds, help and smoke-run value through `parameter(...)`:

    @dataclass(frozen=True)
    class Chapter1Parameters(ChapterParameters):
        n_vertices: int = parameter("graph size of the model (2..32)", low=2, high=32,
                                    smoke=5)

The notebook's first cell holds the flat defaults papermill needs (one line per field). The help
is written once, here; its comment on the field's line is generated from it by
`tools/sync_parameter_comments.py` (which `make notebooks` runs; a test fails, naming the
command, when the two differ). The notebook's second cell calls
`validate_parameters(Chapter1Parameters, globals())`. A bad value raises `ParameterError` whose
message is one sentence naming the parameter and what is allowed (`results_dir` included: it
must be a directory the run can create and write to, checked before any work), so a headless rerun stops with
a readable reason instead of a traceback deep inside training code; in a kernel the error
shows as that one line, without the frames that raised it. A name papermill was given that the
chapter does not have (`-p n_vertex 12`) stops the run the same way, naming the closest
parameter. With `smoke=True` the fields' smoke values replace the defaults, so tests run each
chapter in seconds; a value passed explicitly (through papermill) is kept.

List parameters also accept their YAML/JSON text ('[0.1, 1.0]'), which is what papermill's
`-p name value` passes on the command line.

The module runs over 400 lines because every check a chapter parameter can need sits here, beside
the one function that applies them and the readers of the parameters cell.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import difflib
import json
import math
import re
import tempfile
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch
import yaml


class ParameterError(ValueError):
    """A notebook parameter has a value the chapter cannot run with."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for this error: its one sentence, without the frames that raised it
        (a papermill run then ends with the sentence, not with a long traceback)."""
        return [f"{type(self).__name__}: {self}"]


#: How to pass a list from the command line, appended to every "must be a list" message.
LIST_HINT = " (from the command line: -p name '[1, 2]' or -y 'name: [1, 2]')"


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
    *, min_length: int = 1, low_inclusive: bool = True,
) -> list[float]:
    """Return `value` as a list of floats if every entry is a finite number in the range."""
    if not isinstance(value, (list, tuple)) or len(value) < min_length:
        _fail(name, f"a list of at least {min_length} numbers{LIST_HINT}", value)
    for entry in value:
        if isinstance(entry, bool) or not isinstance(entry, (int, float)) or not math.isfinite(entry) \
                or (low is not None and (entry < low if low_inclusive else entry <= low)) \
                or (high is not None and entry > high):
            bound = _range_text(low, high) if low_inclusive else f" greater than {low}"
            _fail(name, f"a list of finite numbers{bound}", value)
    return [float(v) for v in value]


def check_int_list(
    name: str, value: Any, low: int | None = None, high: int | None = None,
    *, min_length: int = 1,
) -> list[int]:
    """Return `value` as a list of ints if every entry is an int in the range."""
    if not isinstance(value, (list, tuple)) or len(value) < min_length:
        _fail(name, f"a list of at least {min_length} integers{LIST_HINT}", value)
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


def check_writable_directory(name: str, value: Any) -> str:
    """Return `value` if it names a directory this run can create and write to (all chapters).

    Checked before any computation, so that an hour-long run cannot end on a `mkdir` error when
    it writes its results. The check really creates the missing directories and a probe file,
    then removes both: the file system, not a permission guess, decides (root passes every
    `os.access` test, yet cannot write under /proc). Nothing is left behind.
    """
    path = Path(check_path(name, value)).expanduser()
    missing = []
    existing = path
    while not existing.exists():
        missing.append(existing)
        if existing.parent == existing:
            break
        existing = existing.parent
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-probe-"):
            pass
    except OSError as error:
        _fail(name, "a directory this run can create and write to "
                    f"({type(error).__name__}: {error.strerror or error})", value)
    finally:
        for created in missing:   # deepest first, only what this check made
            with contextlib.suppress(OSError):
                created.rmdir()
    return value


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


# --- Declared parameters -------------------------------------------------------------------

#: A bound or a smoke value may depend on parameters validated before it (fields in order).
Bound = float | int | Callable[[types.SimpleNamespace], float] | None


#: Marks a parameter that keeps its value in the smoke run.
KEEP = object()


@dataclasses.dataclass(frozen=True)
class Rule:
    """How one declared parameter is checked (see `parameter`)."""

    help: str
    low: Bound = None
    high: Bound = None
    low_inclusive: bool = True
    choices: tuple[Any, ...] | None = None
    min_length: int = 1
    check: Callable[[str, Any], Any] | None = None
    smoke: Any = KEEP


def parameter(help: str, *, low: Bound = None, high: Bound = None, low_inclusive: bool = True,
              choices: Sequence[Any] | None = None, min_length: int = 1,
              check: Callable[[str, Any], Any] | None = None, smoke: Any = KEEP):
    """Declare one chapter parameter: a dataclass field with no default and its `Rule`.

    Args:
        help: one sentence; `tools/sync_parameter_comments.py` writes it as the comment on the
            parameter's line in the notebook.
        low, high: bounds of a number or of every entry of a list; a callable receives the
            parameters declared before this one (as attributes) and returns the bound.
        low_inclusive: False for a strict lower bound ("greater than 0").
        choices: allowed values of a string, or of every entry of a list of strings.
        min_length: shortest allowed list.
        check: a function (name, value) -> checked value that replaces the type's check.
        smoke: the value used when `smoke=True`; a callable receives the checked value and
            returns the smoke value (for example `at_most(40)`).
    """
    rule = Rule(help, low, high, low_inclusive, None if choices is None else tuple(choices),
                min_length, check, smoke)
    return dataclasses.field(metadata={"rule": rule})


def at_most(cap: int) -> Callable[[int], int]:
    """Smoke value of a count for `parameter`: the checked value, capped at `cap`."""
    return lambda value: min(value, cap)


@dataclasses.dataclass(frozen=True)
class ChapterParameters:
    """The four parameters every chapter has; each chapter's dataclass extends this one.

    A subclass may redeclare one of these fields to give it a more precise help; the field keeps
    its place. It may define `check_consistency` for rules that involve several parameters.
    """

    smoke: bool = parameter("tiny run for tests (well under a minute)")
    seed: int = parameter("seeds every random draw of the chapter", low=0)
    device: torch.device = parameter('"auto" (CUDA when present), "cpu", "cuda" or "cuda:K"',
                                     check=lambda name, value: resolve_device(value, name))
    results_dir: str = parameter("results JSON and saved models go here; later chapters read them here",
                                 check=check_writable_directory)

    def check_consistency(self) -> None:
        """Raise `ParameterError` when parameters that are each valid do not fit together."""


Parameters = TypeVar("Parameters", bound=ChapterParameters)


def validate_parameters(spec: type[Parameters], namespace: Mapping[str, Any]) -> Parameters:
    """Check a chapter's parameters, read from `namespace` (the notebook's `globals()`).

    A name papermill was given (`passed_parameters`) that `spec` does not declare is refused.
    Every field of `spec` is looked up by name and checked in declaration order by its type and
    `Rule`; then `spec.check_consistency` runs; with `smoke=True` the smoke values replace the
    values not passed through papermill (the consistency check runs again on the result).
    Returns the frozen `spec` instance the chapter runs with.

    Raises:
        ParameterError: one sentence naming the first unknown, bad (or missing) parameter.
    """
    passed = passed_parameters(namespace)
    known = [field.name for field in dataclasses.fields(spec)]
    for name in passed:
        if name not in known:
            closest = difflib.get_close_matches(name, known, n=1, cutoff=0.0)
            raise ParameterError(f"Parameter `{name}` is not a parameter of this chapter"
                                 + (f"; did you mean `{closest[0]}`?" if closest else "."))
    hints = typing.get_type_hints(spec)
    checked: dict[str, Any] = {}
    for field in dataclasses.fields(spec):
        if field.name not in namespace:
            raise ParameterError(f"Parameter `{field.name}` is missing: the chapter's parameters "
                                 f"cell must define it.")
        rule: Rule = field.metadata["rule"]
        earlier = types.SimpleNamespace(**checked)
        checked[field.name] = _check_declared(field.name, hints[field.name], namespace[field.name],
                                              rule, earlier)
    config = spec(**checked)
    config.check_consistency()
    if config.smoke:
        smoke = {name: value for name, value in smoke_values(config).items() if name not in passed}
        config = dataclasses.replace(config, **smoke)
        config.check_consistency()
    return config


#: The first line of the cell papermill injects after the parameters cell (its Python translator).
INJECTED_CELL_COMMENT = "# Parameters"


def passed_parameters(namespace: Mapping[str, Any]) -> list[str]:
    """The names papermill was given (`-p`, `-y`, `-f`), read from the cell it injected: the
    kernel's input history (`In`) holds that cell's source, assignments under the comment
    "# Parameters". Empty outside a papermill run (no such cell, or no history)."""
    history = namespace.get("In")
    if not isinstance(history, list):
        return []
    for source in reversed(history):
        if isinstance(source, str) and source.lstrip().startswith(INJECTED_CELL_COMMENT + "\n"):
            with contextlib.suppress(SyntaxError):
                return [target.id for node in ast.parse(source).body if isinstance(node, ast.Assign)
                        for target in node.targets if isinstance(target, ast.Name)]
    return []


def smoke_values(config: ChapterParameters) -> dict[str, Any]:
    """The values that `smoke=True` puts in place of the given ones."""
    values = {}
    for field in dataclasses.fields(config):
        smoke = field.metadata["rule"].smoke
        if smoke is not KEEP:
            current = getattr(config, field.name)
            values[field.name] = smoke(current) if callable(smoke) else smoke
    return values


def parameter_help(spec: type[ChapterParameters]) -> dict[str, str]:
    """Each parameter's one-sentence help, in declaration order."""
    return {field.name: field.metadata["rule"].help for field in dataclasses.fields(spec)}


def _check_declared(name: str, hint: Any, value: Any, rule: Rule, earlier: types.SimpleNamespace) -> Any:
    low = rule.low(earlier) if callable(rule.low) else rule.low
    high = rule.high(earlier) if callable(rule.high) else rule.high
    is_list = typing.get_origin(hint) in (tuple, list)
    if is_list and isinstance(value, str):
        value = _parse_list_text(value)
    if rule.check is not None:
        return rule.check(name, value)
    if hint is bool:
        return check_bool(name, value)
    if hint is int:
        return check_int(name, value, low, high)
    if hint is float:
        return check_float(name, value, low, high, low_inclusive=rule.low_inclusive)
    if hint is str:
        if rule.choices is not None:
            return check_choice(name, value, rule.choices)
        if not isinstance(value, str) or not value:
            _fail(name, "a non-empty string", value)
        return value
    if is_list:
        entry = typing.get_args(hint)[0]
        if entry is int:
            return tuple(check_int_list(name, value, low, high, min_length=rule.min_length))
        if entry is float:
            return tuple(check_float_list(name, value, low, high, min_length=rule.min_length,
                                          low_inclusive=rule.low_inclusive))
        if entry is str and rule.choices is not None:
            if not isinstance(value, (list, tuple)) or len(value) < rule.min_length \
                    or any(v not in rule.choices for v in value):
                _fail(name, f"a list of at least {rule.min_length} drawn from "
                            + ", ".join(repr(c) for c in rule.choices) + LIST_HINT, value)
            return tuple(value)
    raise TypeError(f"Parameter `{name}` is declared with a type that `validate_parameters` "
                    f"cannot check: {hint!r}.")


def _parse_list_text(text: str) -> Any:
    """The list written in `text` as JSON or YAML, or `text` unchanged when it is not one.

    JSON comes first because YAML 1.1 reads `1e-3` (no dot) as a string.
    """
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        try:
            parsed = yaml.safe_load(text)
        except yaml.YAMLError:
            return text
    return parsed if isinstance(parsed, list) else text


def read_parameters_cell(notebook: str | Path) -> dict[str, Any]:
    """The defaults of a chapter's parameters cell, read from its jupytext `.py` source.

    Tests use it so that no default is written a second time; every value must be a literal.
    """
    return {node.targets[0].id: ast.literal_eval(node.value)
            for node in ast.parse("\n".join(_parameters_cell_lines(notebook))).body
            if isinstance(node, ast.Assign)}


def read_parameter_comments(notebook: str | Path) -> dict[str, str]:
    """The comment on each line of a chapter's parameters cell (for the help-text test)."""
    comments = {}
    for line in _parameters_cell_lines(notebook):
        if " = " in line and "  # " in line:
            comments[line.split(" = ", 1)[0].strip()] = line.split("  # ", 1)[1].strip()
    return comments


def _parameters_cell_lines(notebook: str | Path) -> list[str]:
    """The code lines of the cell tagged `parameters` in a chapter's jupytext `.py` source."""
    source = Path(notebook).with_suffix(".py").read_text()
    cell = next(c for c in source.split("\n# %%") if re.match(r' tags=\[[^\]]*"parameters"', c))
    return cell.splitlines()[1:]
