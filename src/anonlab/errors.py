"""Errors a user can cause.

Every problem that comes from the user's data, files or settings raises
:class:`AnonlabError` with a one-line message that names what is wrong and how
to fix it. The command line prints it as ``Error: <message>`` and exits with
code 2; the Python API lets it propagate.

The library speaks of its own parameters (``k``, ``workers``), never of
command-line flags. An error about one parameter says so with ``parameter=``
and starts its message with that name, e.g.
``AnonlabError("k must be at least 2 (got 1)", parameter="k")``; the command
line then shows the flag in its place (``--k must be at least 2 (got 1)``).
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


class AnonlabError(ValueError):
    """A user-caused problem: bad input data, file, parameter or configuration."""

    def __init__(self, message: str, *, parameter: str | None = None) -> None:
        one_line = " ".join(str(message).split())
        super().__init__(one_line)
        self.message = one_line
        self.parameter = parameter

    def __str__(self) -> str:
        return self.message

    def for_flags(self, flags: dict[str, str] | None = None) -> str:
        """The message with its leading parameter name replaced by the flag that sets it.

        ``flags`` maps parameter names to flag spellings; a parameter missing
        from it is shown as ``--name`` with underscores as dashes.
        """
        return flag_message(self.message, self.parameter, flags)


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s text (its class name when it has none): the part of a
    library's or driver's error that fits a one-line message."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def flag_message(message: str, parameter: str | None, flags: dict[str, str] | None) -> str:
    """``message`` with its leading ``parameter`` name replaced by the flag that sets it."""
    if parameter is None or not message.startswith(parameter):
        return message
    flag = (flags or {}).get(parameter, "--" + parameter.replace("_", "-"))
    return flag + message[len(parameter) :]


class AnonlabWarning(UserWarning):
    """Something the user should know about a run that still did what was asked.

    The command line prints each as one line ``Warning: <message>``, a
    leading ``parameter`` name shown as its flag (as :class:`AnonlabError`
    does); in Python it points at the caller's line
    (:func:`anonlab.userwarn.warn_user`).
    """

    def __init__(self, message: str = "", *, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter

    def for_flags(self, flags: dict[str, str] | None = None) -> str:
        """The message on one line, its leading parameter name shown as its flag."""
        return flag_message(" ".join(str(self).split()), self.parameter, flags)


class ReleaseRiskWarning(AnonlabWarning):
    """A release whose measured re-identification risk is above what was asked."""


class ReleaseRiskError(AnonlabError):
    """A release refused because of its measured risk (``fail_on_risk``): nothing was written.

    The command line prints it as ``Error: <message>`` and exits with code 3
    (not 2: the inputs were fine, the result was not safe enough).
    """


def present(value: T | None, what: str) -> T:
    """``value``, which the caller's state guarantees is set; ``TypeError`` naming ``what``
    when it is ``None`` (a broken invariant of the library, not a user's mistake)."""
    if value is None:
        raise TypeError(f"{what} is not set")
    return value


def expect_type(value: object, kind: type[T], what: str) -> T:
    """``value`` as a ``kind``; ``TypeError`` naming ``what`` when it is something else."""
    if not isinstance(value, kind):
        raise TypeError(f"{what} is a {type(value).__name__}, not a {kind.__name__}")
    return value
