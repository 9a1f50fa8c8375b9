"""Helpers shared by every sub-command: one-line errors, progress display, shared options.

A sub-command only parses its options, calls the library and writes outputs.
User errors (:class:`anonlab.errors.AnonlabError`) become one line
``Error: <message>`` on standard error and exit code 2.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar, overload

import typer

from anonlab.errors import AnonlabError
from anonlab.progress import ProgressFn

if TYPE_CHECKING:
    from rich.progress import TaskID

P = ParamSpec("P")
R = TypeVar("R")

EXIT_USER_ERROR = 2


def fail(message: str) -> typer.Exit:
    """Print ``Error: message`` on one line to stderr and return the exit to raise."""
    one_line = " ".join(message.split())
    print(f"Error: {one_line}", file=sys.stderr)
    return typer.Exit(EXIT_USER_ERROR)


@overload
def user_errors(
    func: Callable[P, R], *, flags: dict[str, str] | None = None
) -> Callable[P, R]: ...


@overload
def user_errors(
    func: None = None, *, flags: dict[str, str] | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def user_errors(
    func: Callable[P, R] | None = None, *, flags: dict[str, str] | None = None
) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a command so user errors print one line and exit with code 2.

    A library error about a parameter is shown with the command's flag for it:
    ``flags`` maps parameter names to flags where the flag is not simply
    ``--name`` with dashes for underscores.
    """
    if func is None:
        return lambda f: _wrap_errors(f, flags)
    return _wrap_errors(func, flags)


def _wrap_errors(func: Callable[P, R], flags: dict[str, str] | None) -> Callable[P, R]:
    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except AnonlabError as exc:
            raise fail(exc.for_flags(flags)) from None
        except FileNotFoundError as exc:
            raise fail(f"file not found: {exc.filename}: check the path") from None
        except PermissionError as exc:
            raise fail(f"permission denied: {exc.filename}: choose a writable path") from None
        except IsADirectoryError as exc:
            raise fail(f"'{exc.filename}' is a folder: give a file name") from None
        except OSError as exc:
            raise fail(_os_error_line(exc)) from None
        except MemoryError:
            raise fail("not enough memory for this run, nothing was written: use a smaller "
                       "table, fewer columns, or a machine with more memory") from None
        except UnicodeDecodeError as exc:
            raise fail(f"input is not UTF-8 text ({exc.reason}): re-save it as UTF-8") from None
        except RecursionError:
            raise fail("an input is nested too deeply to read: give a file written by "
                       "anonlab") from None
        except KeyboardInterrupt:
            raise fail("interrupted: nothing was written") from None

    return wrapper


def _os_error_line(exc: OSError) -> str:
    """One line for an operating-system error (disk full, read-only folder...)."""
    where = f" '{exc.filename}'" if exc.filename else ""
    reason = exc.strerror or type(exc).__name__
    return f"cannot read or write{where}: {reason}; nothing was written"


@contextlib.contextmanager
def progress_display(quiet: bool) -> Iterator[ProgressFn | None]:
    """A Rich progress display for the library's ``progress`` calls, on a terminal only.

    Yields ``None`` (no display) with ``--quiet`` or when standard error is
    not a terminal. Each distinct step name gets its own line, removed when
    the display ends.
    """
    from rich.console import Console

    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    display = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), console=console, transient=True)
    tasks: dict[str, TaskID] = {}

    def update(step: str, done: int, total: int | None) -> None:
        if step not in tasks:
            tasks[step] = display.add_task(step, total=total)
        display.update(tasks[step], completed=done, total=total)

    with display:
        yield update


OUTPUT_TABLE_HELP = ("With --output a SQLAlchemy URL (e.g. sqlite:///out.db): the table to write "
                     "the release to, replaced in one transaction (default: none).")


def as_text(value: Path | str | None) -> str | None:
    """A path or text flag as the text a settings model takes (``None`` stays ``None``)."""
    return None if value is None else str(value)
