"""The ``anonlab`` Typer application; each sub-command module registers itself here.

``app`` holds every command (for ``--help`` and for tests); the console
script builds only the invoked command's module (:func:`app_for`).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterable, Sequence
from types import FrameType
from typing import Any, NoReturn

import typer
import typer.core

from anonlab import __version__
from anonlab.cli import clickapi
from anonlab.cli.common import EXIT_USER_ERROR


class OneLineErrors(typer.core.TyperGroup):
    """The command group, with every usage error as one line ``Error: ...`` and exit code 2.

    Click and Typer would print a boxed, multi-line panel; a mistyped flag or
    a missing argument gets the same one line as any other user error,
    with a pointer to the command's ``--help``.
    """

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except clickapi.NoArgsIsHelpError as exc:
            exc.show()
            return _exit(EXIT_USER_ERROR, standalone_mode)
        except clickapi.ClickException as exc:
            print(f"Error: {_usage_line(exc)}", file=sys.stderr)
            return _exit(exc.exit_code, standalone_mode)
        except clickapi.Abort:
            print("Error: interrupted: nothing was written", file=sys.stderr)
            return _exit(EXIT_USER_ERROR, standalone_mode)
        code = result if isinstance(result, int) else 0
        return _exit(code, standalone_mode) if standalone_mode else result


def _usage_line(exc: clickapi.ClickException) -> str:
    """One line: the usage problem and where to read how to call the command."""
    message = " ".join(exc.format_message().split())
    context = getattr(exc, "ctx", None)
    if isinstance(exc, clickapi.UsageError) and context is not None:
        message += f" (see '{context.command_path} --help')"
    return message


def _exit(code: int, standalone_mode: bool) -> int:
    if standalone_mode:
        sys.exit(code)
    return code


# Each module defines ``register(app)``; keep one module per method family.
COMMAND_MODULES = (
    "anonlab.cli.generalize",
    "anonlab.cli.hierarchy",
    "anonlab.cli.microaggregate",
    "anonlab.cli.fusion",
    "anonlab.cli.party",
    "anonlab.cli.perturb",
    "anonlab.cli.report",
    "anonlab.cli.verify",
    "anonlab.cli.risk",
    "anonlab.cli.suppress",
    "anonlab.cli.mask",
    "anonlab.cli.compare",
    "anonlab.cli.ui",
)
#: the module that registers each command (a command is the first word after ``anonlab``)
MODULE_OF = {
    "generalize": "anonlab.cli.generalize",
    "apply": "anonlab.cli.generalize",
    "hierarchy": "anonlab.cli.hierarchy",
    "microaggregate": "anonlab.cli.microaggregate",
    "evaluate": "anonlab.cli.microaggregate",
    "tradeoff": "anonlab.cli.microaggregate",
    "fuse": "anonlab.cli.fusion",
    "party": "anonlab.cli.party",
    "perturb": "anonlab.cli.perturb",
    "attack": "anonlab.cli.perturb",
    "report": "anonlab.cli.report",
    "verify": "anonlab.cli.verify",
    "risk": "anonlab.cli.risk",
    "suppress": "anonlab.cli.suppress",
    "mask": "anonlab.cli.mask",
    "compare": "anonlab.cli.compare",
    "ui": "anonlab.cli.ui",
}

app: typer.Typer  # every command; made on first use (see __getattr__)


def _version_callback(value: bool) -> None:
    if value:
        print(f"anonlab {__version__}")
        raise typer.Exit(0)


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Show the version."
    ),
) -> None:
    """anonlab: anonymize a table, measure what was lost and what risk remains."""


#: the widest line of any help text: examples are broken into shell continuation lines
#: to fit it, with the 2 columns Click indents help by (80 columns in all)
HELP_WIDTH = 78


def _split_example(line: str, width: int = HELP_WIDTH) -> list[str]:
    """One example command line as lines of at most ``width`` columns where it can be.

    Breaks go between words only (never inside a path or a flag), each broken
    line ends in a shell continuation `` \\``, so the example still pastes as
    one command; the continuation lines are indented four columns deeper.
    """
    indent = line[: len(line) - len(line.lstrip())]
    out: list[str] = []
    current = line.rstrip()
    command, sep, comment = current.partition("  #")
    if sep and len(current) > width:  # a comment too long to stay: it goes on a line above
        out.append(indent + "#" + comment)
        current = command.rstrip()
    while len(current) > width:
        # before a flag if one fits (a flag stays with its value), else between any words
        cut = max(
            current.rfind(" --", len(indent) + 8, width - 1),
            current.rfind(" -", len(indent) + 8, width - 1),
        )
        if cut < 0:
            cut = current.rfind(" ", len(indent) + 8, width - 1)
        if cut < 0:
            break
        out.append(current[:cut].rstrip() + " \\")
        current = indent + "    " + current[cut:].strip()
    return [*out, current]


def _example_commands(paragraph: str) -> list[str]:
    """The commands of an example paragraph, one line each: a line that does not start
    with ``anonlab`` continues the command above it."""
    commands: list[str] = []
    for line in paragraph.splitlines():
        if line.lstrip().startswith("anonlab ") or not commands:
            commands.append(line.rstrip())
        else:
            commands[-1] += " " + line.strip()
    return commands


def _example_block(paragraph: str) -> str:
    """An example paragraph kept as written (Click's ``\\b``), each line fitted to the width."""
    lines = [part for command in _example_commands(paragraph) for part in _split_example(command)]
    return "\b\n" + "\n".join(lines)


def fit_help(text: str | None) -> str | None:
    """A command's help with its example paragraphs (lines starting with ``anonlab``) kept
    line by line and fitted to :data:`HELP_WIDTH`; prose stays for Click to wrap by words."""
    if not text:
        return text
    paragraphs = text.split("\n\n")
    return "\n\n".join(
        _example_block(p) if p.lstrip().startswith("anonlab ") else p for p in paragraphs
    )


def first_sentence(text: str | None) -> str | None:
    """A help's first sentence, whole: the line ``anonlab --help`` lists for the command
    (Click would cut a longer one with '...')."""
    if not text:
        return None
    first = " ".join(text.strip().split("\n\n")[0].split())
    for abbreviation in ("e.g.", "i.e."):
        first = first.split(", " + abbreviation)[0].split(" " + abbreviation)[0]
    first = first.split(". ")[0].split(": ")[0].rstrip(".")
    return first + "."


def _fit_commands(app: typer.Typer) -> None:
    """Fit the help of every command of ``app`` and of its groups, recursively."""
    for info in app.registered_commands:
        text = (
            info.help
            if isinstance(info.help, str)
            else (info.callback.__doc__ if info.callback is not None else None)
        )
        info.help = fit_help(text)
        info.short_help = info.short_help or first_sentence(text)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _fit_commands(group.typer_instance)


def build_app(modules: Iterable[str] = COMMAND_MODULES) -> typer.Typer:
    """The ``anonlab`` application with the commands of ``modules`` (default: all of them)."""
    built = typer.Typer(
        name="anonlab",
        cls=OneLineErrors,
        help="Privacy-preserving data publishing: anonymize a table, measure loss and risk.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        # plain help, wrapped at the terminal's width by words: Rich's option tables cut
        # long cells (a --criterion grammar, a metric's name) with '…' at 80 columns
        rich_markup_mode=None,
        context_settings={"show_default": True},
    )
    built.callback()(_root)
    for name in dict.fromkeys(modules):
        importlib.import_module(name).register(built)
    _fit_commands(built)
    return built


def app_for(args: Sequence[str]) -> typer.Typer:
    """The application a command line needs: only its command's module when it names one.

    Typer turns every registered command into a Click command each time the
    application runs (about 24 ms for all of them); a run of one command
    needs only its own. Anything else (``--help``, ``--version``, a mistyped
    command) gets the whole application, so help and errors list every command.
    """
    module = MODULE_OF.get(args[0]) if args else None
    return build_app([module]) if module is not None else build_app()


def __getattr__(name: str) -> typer.Typer:
    if name != "app":
        raise AttributeError(f"module 'anonlab.cli.app' has no attribute '{name}'")
    globals()["app"] = built = build_app()
    return built


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends a run as Ctrl-C does: staged outputs are removed, nothing is written."""
    raise KeyboardInterrupt


def main() -> None:
    """Console-script entry point."""
    from anonlab.memory import tune_allocators_at_start
    from anonlab.threads import one_blas_thread_at_start

    one_blas_thread_at_start()  # the kernels ask for more threads when --workers does
    tune_allocators_at_start(sys.argv[1:])  # freed arrays go back to the system
    signal.signal(signal.SIGTERM, _terminate)
    args = sys.argv[1:]
    try:
        app_for(args)()
    except SystemExit as exc:
        if not args or args[0] not in QUICK_EXIT_COMMANDS or not hasattr(threading, "_shutdown"):
            raise  # (a Python without CPython's thread shutdown hook ends the usual way)
        exit_now(exc.code)


#: the commands whose process ends without the interpreter's teardown (:func:`exit_now`)
QUICK_EXIT_COMMANDS = frozenset({"generalize"})


def exit_now(code: str | int | None) -> NoReturn:
    """End the process as ``sys.exit(code)`` would, without the interpreter's teardown.

    As at the interpreter's exit, threads that are not daemons are waited for
    (``threading._shutdown``: thread pools told to stop, then joined) and the
    ``atexit`` functions run (temporary folders removed, logging flushed); the
    standard streams are flushed; then the process ends (``os._exit``) without
    freeing every module, object and array one by one, which after a run on a
    million rows costs about 0.15 s of CPU (docs/benchmarks.md, round 5). Every
    output is written and closed before: the run's files are renamed into
    place, or removed, before the command returns.
    """
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to show
            stream.flush()
    os._exit(status)
