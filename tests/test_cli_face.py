"""What every command shows a person: one-line usage errors, defaults in --help."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app

runner = CliRunner()
COMMANDS = ["generalize", "apply", "microaggregate", "evaluate", "tradeoff", "fuse", "party",
            "perturb", "attack", "report"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["generalize", "--kk", "3"], "No such option"),
        (["nosuch"], "No such command"),
        (["apply"], "Missing argument"),
        (["generalize", "--k", "three"], "Invalid value for '--k'"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(args: list[str], words: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: ")
    assert words in lines[0]
    assert "╭" not in result.output


def test_console_script_usage_error_is_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "anonlab", "generalize", "--nope"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert done.stderr.startswith("Error: No such option")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_no_bool_placeholder(command: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "<bool>" not in result.output
    assert "BOOLEAN" not in result.output


def test_every_boolean_option_has_its_no_form() -> None:
    import typer.core
    import typer.main

    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    lacking = []
    for name, command in group.commands.items():
        for param in command.params:
            if (isinstance(param, typer.core.TyperOption) and param.is_flag
                    and not param.secondary_opts
                    and param.name not in {"help", "quiet", "version"}):
                lacking.append(f"{name} {param.opts[0]}")
    assert lacking == []
