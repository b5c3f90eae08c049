"""Every papermill command printed in the docs passes its chapter's parameter validation.

The commands are collected from README.md, book/*.md and the markdown of every chapter's
percent source (its published-scale note): a command starts at `papermill` (or a path ending in
`/papermill`) and runs to the end of its inline code span, or of its code-block line with `\\`
continuations. Each one's arguments are parsed by papermill's own command-line parser (so `-p`
values get papermill's type resolution and `-y` its YAML), merged into the chapter's defaults
(its parameters cell) and validated with the chapter's `ChapterNParameters`, as the notebook's
first cell would, without running the chapter (as on a machine with CUDA, since the published
scale asks for `-p device cuda`). A chapter added later is covered as soon as a command names
its notebook.
"""

import importlib
import re
import shlex
from pathlib import Path

import pytest
import yaml
from papermill.cli import _resolve_type, papermill as papermill_cli

from lib.book.params import read_parameters_cell, validate_parameters

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


def prose(path: Path) -> str:
    """The text a reader sees: a percent source's comment lines without their '# ' prefix."""
    text = path.read_text()
    if path.suffix == ".py":
        text = "\n".join(re.sub(r"^# ?", "", line) for line in text.splitlines() if line.startswith("#"))
    return text


def printed_commands(text: str) -> list[str]:
    """The papermill commands in `text`: from `papermill` to the closing backtick of an inline
    span, or to the end of a code-block line (joining lines that end with a backslash)."""
    text = text.replace("\\\n", " ")
    commands = []
    for match in re.finditer(r"(?:^|[\s`])(?:\S*/)?papermill\s+(\S+\.ipynb)\s", text):
        start = match.start(1)
        inline = text.rfind("`", 0, start) > text.rfind("\n", 0, start)
        end = text.find("`", start) if inline else text.find("\n", start)
        commands.append(" ".join(text[start:end if end >= 0 else None].split()))
    return commands


def all_commands() -> list[tuple[str, str]]:
    sources = [ROOT / "README.md", *sorted((ROOT / "book").glob("*.md")), *NOTEBOOKS]
    return [(path.name, command) for path in sources for command in printed_commands(prose(path))]


def test_the_collector_finds_the_commands_of_every_chapter_and_the_readme():
    found = all_commands()
    named = {command.split()[0] for _, command in found}
    assert {f"{path.stem}.ipynb" for path in NOTEBOOKS} <= named, named
    assert any(source == "README.md" for source, _ in found)
    # An inline command that spans lines, and a code-block one with continuations.
    assert printed_commands("run `papermill a.ipynb b.ipynb -p x 1\n-p y 2`, then") == [
        "a.ipynb b.ipynb -p x 1 -p y 2"]
    assert printed_commands("```\n../.venv/bin/papermill a.ipynb b.ipynb \\\n    -p x '[1, 2]'\n```") == [
        "a.ipynb b.ipynb -p x '[1, 2]'"]


def chapter_parameters(notebook: str):
    """The parameter class a chapter validates its parameters with (its first cell's call)."""
    source = ROOT / "notebooks" / notebook.replace(".ipynb", ".py")
    name = re.search(r"validate_parameters\((\w+), globals\(\)\)", source.read_text()).group(1)
    module = importlib.import_module(f"lib.chapters.ch{int(notebook[:2])}")
    return getattr(module, name), read_parameters_cell(source)


@pytest.mark.parametrize("source, command", all_commands())
def test_printed_command_passes_the_chapters_validation(source, command, monkeypatch):
    # The published-scale commands ask for a GPU: validate them as on a machine that has one.
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)
    context = papermill_cli.make_context("papermill", shlex.split(command), resilient_parsing=False)
    notebook = context.params["notebook_path"]
    # papermill's order: the `-f` file, then `-y` YAML, then `-p` values (the commands run in notebooks/)
    values = {}
    if context.params.get("parameters_file"):
        for name in context.params["parameters_file"]:
            values.update(yaml.safe_load((ROOT / "notebooks" / name).read_text()) or {})
    for text in context.params["parameters_yaml"]:
        values.update(yaml.safe_load(text))
    values.update({name: _resolve_type(value) for name, value in context.params["parameters"]})
    parameters, defaults = chapter_parameters(Path(notebook).name)
    unknown = set(values) - set(defaults)
    assert not unknown, f"{source}: `{command}` sets parameters the chapter does not have: {unknown}"
    validate_parameters(parameters, {**defaults, **values})


@pytest.mark.notebook
@pytest.mark.parametrize("command", [c for source, c in all_commands() if source == "README.md"])
def test_every_papermill_command_the_readme_prints_runs_in_smoke_mode(command, tmp_path):
    """The README's commands run to the end (in smoke mode, into a temporary folder): Wilson's
    interval exact at both ends keeps chapter 1's check `low <= share <= high` true at n = 12,
    where a share of 0 met a lower end of 3e-17 before."""
    import papermill

    context = papermill_cli.make_context("papermill", shlex.split(command), resilient_parsing=False)
    values = {name: _resolve_type(value) for name, value in context.params["parameters"]}
    notebook = ROOT / "notebooks" / Path(context.params["notebook_path"]).name
    papermill.execute_notebook(str(notebook), str(tmp_path / "out.ipynb"), kernel_name="python3",
                               parameters={**values, "smoke": True, "results_dir": str(tmp_path / "results")},
                               cwd=str(notebook.parent), progress_bar=False)
    assert (tmp_path / "results" / f"{notebook.stem}.json").exists()
