"""Declared chapter parameters: one definition per chapter, one validating function (lib.book.params)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lib.book.params import (
    ChapterParameters, ParameterError, check_writable_directory, parameter, parameter_help, passed_parameters,
    read_parameter_comments, read_parameters_cell, validate_parameters,
)
from lib.chapters.registry import parameters_class

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("[0-9][0-9]_*.py"))
COMMON = dict(smoke=False, seed=0, device="cpu", results_dir="r")


@dataclasses.dataclass(frozen=True)
class Toy(ChapterParameters):
    n_max: int = parameter("most vertices", low=3, high=10, smoke=lambda n: min(n, 4))
    n_min: int = parameter("fewest vertices", low=2, high=lambda earlier: earlier.n_max)
    rates: tuple[float, ...] = parameter("learning rates", low=0.0, low_inclusive=False)
    steps: tuple[int, ...] = parameter("steps per rate", low=1, smoke=(1,))
    modes: tuple[str, ...] = parameter("modes", choices=("a", "b"))
    kind: str = parameter("kind", choices=("x", "y"))

    def check_consistency(self) -> None:
        if len(self.rates) != len(self.steps):
            raise ParameterError("Parameter `steps` must have one entry per rate.")


TOY = dict(COMMON, n_max=8, n_min=3, rates=[0.1], steps=[5], modes=["a"], kind="x")


def test_values_are_checked_converted_and_smoke_replaces_them():
    config = validate_parameters(Toy, TOY)
    assert (config.n_max, config.n_min, config.rates, config.steps) == (8, 3, (0.1,), (5,))
    smoke = validate_parameters(Toy, {**TOY, "smoke": True})
    assert (smoke.n_max, smoke.n_min, smoke.steps) == (4, 3, (1,))


def test_lists_also_come_as_yaml_text_from_papermill_dash_p():
    config = validate_parameters(Toy, {**TOY, "rates": "[0.5, 1e-3]", "steps": "[1, 2]", "modes": "[a, b]"})
    assert config.rates == (0.5, 0.001) and config.steps == (1, 2) and config.modes == ("a", "b")


@pytest.mark.parametrize("name, value, message", [
    ("n_min", 9, "Parameter `n_min` must be an integer between 2 and 8; got 9."),
    ("rates", [0.0], "Parameter `rates` must be a list of finite numbers greater than 0.0; got [0.0]."),
    ("rates", "[0.1, oops", "-p name '[1, 2]'"),
    ("steps", [5, 6], "Parameter `steps` must have one entry per rate."),
    ("modes", ["c"], "drawn from 'a', 'b'"),
    ("kind", "z", "Parameter `kind` must be one of 'x', 'y'; got 'z'."),
    ("device", "tpu", "Parameter `device`"),
    ("seed", -1, "Parameter `seed` must be an integer of at least 0; got -1."),
])
def test_a_bad_value_stops_with_one_sentence_naming_it(name, value, message):
    with pytest.raises(ParameterError) as error:
        validate_parameters(Toy, {**TOY, name: value})
    assert message in str(error.value) and "\n" not in str(error.value)


def _papermill_run(**values) -> dict:
    """A notebook namespace as papermill leaves it: the values, and the kernel's input history
    holding the cell papermill injected (its comment "# Parameters", then one line a value)."""
    injected = "# Parameters\n" + "".join(f"{name} = {value!r}\n" for name, value in values.items())
    return {**TOY, **values, "In": ["", "smoke = False\n", injected, "config = validate_parameters(...)"]}


def test_the_names_papermill_passed_are_read_from_the_cell_it_injected():
    assert passed_parameters(_papermill_run(n_max=6, smoke=True)) == ["n_max", "smoke"]
    assert passed_parameters(TOY) == []                                  # no kernel history: not a papermill run
    assert passed_parameters({"In": ["x = 1\n", "# Parameters\nbroken = (\n"]}) == []


def test_a_name_the_chapter_does_not_have_stops_with_the_closest_one():
    with pytest.raises(ParameterError) as error:
        validate_parameters(Toy, _papermill_run(n_mx=6))
    assert str(error.value) == "Parameter `n_mx` is not a parameter of this chapter; did you mean `n_max`?"


def test_smoke_keeps_every_value_passed_and_replaces_only_the_defaults():
    smoke = validate_parameters(Toy, _papermill_run(smoke=True, n_max=6))
    assert (smoke.n_max, smoke.steps) == (6, (1,))                       # n_max passed: kept; steps: smoke value
    everything = validate_parameters(Toy, _papermill_run(smoke=True, n_max=6, steps=[5]))
    assert everything.steps == (5,)
    with pytest.raises(ParameterError, match="one entry per rate"):     # a kept value must still fit the rest
        validate_parameters(Toy, _papermill_run(smoke=True, rates=[0.1, 0.2]))


def test_in_a_kernel_the_error_is_its_one_sentence_without_frames():
    error = ParameterError("Parameter `n_max` must be an integer between 3 and 10; got 99.")
    assert error._render_traceback_() == ["ParameterError: Parameter `n_max` must be an integer between 3 and 10; "
                                          "got 99."]


def test_a_missing_parameter_is_named():
    with pytest.raises(ParameterError, match="Parameter `kind` is missing"):
        validate_parameters(Toy, {k: v for k, v in TOY.items() if k != "kind"})


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_chapter_declares_exactly_its_parameters_cell(notebook):
    spec = parameters_class(notebook)
    defaults = read_parameters_cell(notebook)
    assert list(defaults) == [f.name for f in dataclasses.fields(spec)], \
        "the parameters cell and the chapter's dataclass must list the same names in the same order"
    assert read_parameter_comments(notebook) == parameter_help(spec), \
        ("each parameter's comment in the notebook is generated from its help in the dataclass: "
         f"run `.venv/bin/python tools/sync_parameter_comments.py notebooks/{notebook.name}`")
    config = validate_parameters(spec, defaults)
    smoke = validate_parameters(spec, {**defaults, "smoke": True})
    assert config.smoke is False and smoke.smoke is True


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_papermill_reads_every_line_of_each_parameters_cell(notebook, caplog):
    """papermill (`--help-notebook`, and the parameters it reports when it runs a chapter) skips a
    line with more than one "=", with a warning: a help with "=" in it (its comment) would be one."""
    import jupytext
    from papermill.translators import PythonTranslator

    cell = next(c for c in jupytext.read(notebook).cells if "parameters" in c.metadata.get("tags", []))
    with caplog.at_level("WARNING", logger="papermill"):
        found = PythonTranslator.inspect(cell)
    assert not [r.getMessage() for r in caplog.records if "Unable to parse" in r.getMessage()]
    assert [p.name for p in found] == [f.name for f in dataclasses.fields(parameters_class(notebook))]


def test_a_bad_value_passed_by_papermill_is_the_last_line_it_prints(tmp_path):
    """The documented command (README, book/setup.md) with a bad value: whatever papermill prints
    before (its header, progress bars, the traceback of its own code), the run ends on the one
    sentence naming the parameter, with nothing after it."""
    import subprocess
    import sys

    root = Path(__file__).parents[1]
    run = subprocess.run([sys.executable, "-m", "papermill", "01_handcrafted_bfs.ipynb", str(tmp_path / "out.ipynb"),
                          "-k", "python3", "-p", "smoke", "True", "-p", "n_vertices", "-3",
                          "-p", "results_dir", str(tmp_path / "results")],
                         cwd=root / "notebooks", stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=300)
    assert run.returncode != 0
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    assert lines[-1] == "ParameterError: Parameter `n_vertices` must be an integer between 2 and 32; got -3."


def test_a_results_dir_that_can_be_made_is_checked_and_nothing_is_left(tmp_path):
    nested = tmp_path / "a" / "b" / "results"
    assert check_writable_directory("results_dir", str(nested)) == str(nested)
    assert list(tmp_path.iterdir()) == [], "the check must remove what it created"
    assert check_writable_directory("results_dir", str(tmp_path)) == str(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("make_bad", [
    lambda tmp: "/proc/forbidden/results",               # a file system that refuses mkdir
    lambda tmp: str((tmp / "file").resolve()) if (tmp / "file").write_text("x") else "",  # a file
    lambda tmp: str(tmp / "file" / "below"),            # a directory below a file
], ids=["proc", "a_file", "below_a_file"])
def test_an_unwritable_results_dir_stops_with_one_sentence(make_bad, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ParameterError) as error:
        validate_parameters(Toy, {**TOY, "results_dir": make_bad(tmp_path)})
    message = str(error.value)
    assert message.startswith("Parameter `results_dir` must be a directory this run can create and "
                              "write to") and "\n" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
