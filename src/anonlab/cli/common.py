"""Helpers shared by every sub-command: error handling, TOML settings, output checks.

A sub-command only parses its options, calls the library and writes outputs.
User errors (:class:`anonlab.errors.AnonlabError`) become one line
``Error: <message>`` on standard error and exit code 2.
"""

from __future__ import annotations

import functools
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer

from anonlab.errors import AnonlabError

P = ParamSpec("P")
R = TypeVar("R")

EXIT_USER_ERROR = 2


def fail(message: str) -> typer.Exit:
    """Print ``Error: message`` on one line to stderr and return the exit to raise."""
    one_line = " ".join(message.split())
    print(f"Error: {one_line}", file=sys.stderr)
    return typer.Exit(EXIT_USER_ERROR)


def user_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Decorate a command so user errors print one line and exit with code 2."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except AnonlabError as exc:
            raise fail(str(exc)) from None
        except FileNotFoundError as exc:
            raise fail(f"file not found: {exc.filename}: check the path") from None
        except PermissionError as exc:
            raise fail(f"permission denied: {exc.filename}: choose a writable path") from None
        except KeyboardInterrupt:
            raise fail("interrupted: nothing was written") from None

    return wrapper


def load_toml(path: Path) -> dict[str, Any]:
    """Read a TOML settings file, with a one-line error when it is missing or malformed."""
    if not path.exists():
        raise AnonlabError(f"config file '{path}' does not exist: check the path")
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise AnonlabError(f"config file '{path}' is not valid TOML: {exc}") from exc


def merge_settings(config: dict[str, Any], flags: dict[str, Any]) -> dict[str, Any]:
    """Settings from a config file, overridden by every flag the user actually gave.

    ``flags`` maps setting names to flag values; ``None`` (and empty lists) mean
    "not given on the command line" and leave the config's value in place.
    """
    merged = dict(config)
    for key, value in flags.items():
        if value is None or (isinstance(value, list | tuple) and len(value) == 0):
            continue
        merged[key] = value
    return merged
