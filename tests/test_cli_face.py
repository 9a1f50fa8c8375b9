"""What every command shows a person: one-line usage errors, defaults in --help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app

runner = CliRunner()
COMMANDS = [
    "generalize",
    "apply",
    "microaggregate",
    "evaluate",
    "tradeoff",
    "fuse",
    "party",
    "perturb",
    "attack",
    "report",
]


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
    done = subprocess.run(
        [sys.executable, "-m", "anonlab", "generalize", "--nope"],
        capture_output=True,
        text=True,
        check=False,
    )
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
            if (
                isinstance(param, typer.core.TyperOption)
                and param.is_flag
                and not param.secondary_opts
                and param.name not in {"help", "quiet", "version"}
            ):
                lacking.append(f"{name} {param.opts[0]}")
    assert lacking == []


def test_console_script_generalize_writes_and_warns(tmp_path: Path) -> None:
    """``generalize`` ends its process without the interpreter's teardown: its outputs are
    written, its warnings shown, its exit code kept (0, and 2 for a refused run)."""
    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "release.csv"
    args = [
        sys.executable,
        "-m",
        "anonlab",
        "generalize",
        "--config",
        str(repo / "examples" / "adult.toml"),
        "--output",
        str(out),
        "--report",
        str(tmp_path / "report.json"),
        "--quiet",
    ]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "Warning: sensitive attribute 'salary-class'" in done.stderr
    assert out.read_text(encoding="utf-8").count("\n") == 30_163
    refused = subprocess.run([*args, "--k", "0"], capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and refused.stderr.startswith("Error: "), refused.stderr


@pytest.mark.parametrize(
    ("code", "status", "stderr"), [(None, 0, ""), (3, 3, ""), ("gone", 1, "gone\n")]
)
def test_exit_now_is_sys_exit_without_teardown(code: object, status: int, stderr: str) -> None:
    program = (
        "import atexit, sys\n"
        "from anonlab.cli.app import exit_now\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        "print('buffered', end=' ')\n"
        f"exit_now({code!r})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (status, "buffered atexit ran\n", stderr)


def test_exit_now_waits_for_threads_as_exit_does() -> None:
    """A thread that is not a daemon, and a thread pool left open, finish before the end."""
    program = (
        "import threading, time\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from anonlab.cli.app import exit_now\n"
        "def late():\n"
        "    time.sleep(0.2)\n"
        "    print('thread done', flush=True)\n"
        "threading.Thread(target=late).start()\n"
        "ThreadPoolExecutor(2).submit(time.sleep, 0.1)\n"
        "exit_now(0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False, timeout=60
    )
    assert (done.returncode, done.stdout) == (0, "thread done\n")
