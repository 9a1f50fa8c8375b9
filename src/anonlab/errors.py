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
        name = self.parameter
        if name is None or not self.message.startswith(name):
            return self.message
        flag = (flags or {}).get(name, "--" + name.replace("_", "-"))
        return flag + self.message[len(name):]


class ReleaseRiskWarning(UserWarning):
    """A release whose measured re-identification risk is above what was asked."""


class ReleaseRiskError(AnonlabError):
    """A release refused because of its measured risk (``fail_on_risk``): nothing was written.

    The command line prints it as ``Error: <message>`` and exits with code 3
    (not 2: the inputs were fine, the result was not safe enough).
    """
