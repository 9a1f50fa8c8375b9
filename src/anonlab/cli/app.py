"""The ``anonlab`` Typer application; each sub-command module registers itself here.

``app`` holds every command (for ``--help`` and for tests); the console
script builds only the invoked command's module (:func:`app_for`).
"""

from __future__ import annotations

import importlib
import signal
import sys
from collections.abc import Iterable, Sequence
from types import FrameType
from typing import Any

import click
import typer
import typer.core

from anonlab import __version__
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
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()
            return _exit(EXIT_USER_ERROR, standalone_mode)
        except click.ClickException as exc:
            print(f"Error: {_usage_line(exc)}", file=sys.stderr)
            return _exit(exc.exit_code, standalone_mode)
        except click.exceptions.Abort:
            print("Error: interrupted: nothing was written", file=sys.stderr)
            return _exit(EXIT_USER_ERROR, standalone_mode)
        code = result if isinstance(result, int) else 0
        return _exit(code, standalone_mode) if standalone_mode else result


def _usage_line(exc: click.ClickException) -> str:
    """One line: the usage problem and where to read how to call the command."""
    message = " ".join(exc.format_message().split())
    context = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and context is not None:
        message += f" (see '{context.command_path} --help')"
    return message


def _exit(code: int, standalone_mode: bool) -> int:
    if standalone_mode:
        sys.exit(code)
    return code


# Each module defines ``register(app)``; keep one module per method family.
COMMAND_MODULES = (
    "anonlab.cli.generalize",
    "anonlab.cli.microaggregate",
    "anonlab.cli.fusion",
    "anonlab.cli.party",
    "anonlab.cli.perturb",
    "anonlab.cli.report",
    "anonlab.cli.verify",
    "anonlab.cli.risk",
)
#: the module that registers each command (a command is the first word after ``anonlab``)
MODULE_OF = {
    "generalize": "anonlab.cli.generalize", "apply": "anonlab.cli.generalize",
    "hierarchy": "anonlab.cli.generalize", "microaggregate": "anonlab.cli.microaggregate",
    "evaluate": "anonlab.cli.microaggregate", "tradeoff": "anonlab.cli.microaggregate",
    "fuse": "anonlab.cli.fusion", "party": "anonlab.cli.party", "perturb": "anonlab.cli.perturb",
    "attack": "anonlab.cli.perturb", "report": "anonlab.cli.report",
    "verify": "anonlab.cli.verify", "risk": "anonlab.cli.risk",
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


def build_app(modules: Iterable[str] = COMMAND_MODULES) -> typer.Typer:
    """The ``anonlab`` application with the commands of ``modules`` (default: all of them)."""
    built = typer.Typer(
        name="anonlab",
        cls=OneLineErrors,
        help="Privacy-preserving data publishing: anonymize a table, measure loss and risk.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"show_default": True},
    )
    built.callback()(_root)
    for name in dict.fromkeys(modules):
        importlib.import_module(name).register(built)
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
    from anonlab.threads import one_blas_thread_at_start

    one_blas_thread_at_start()  # the kernels ask for more threads when --workers does
    signal.signal(signal.SIGTERM, _terminate)
    app_for(sys.argv[1:])()
