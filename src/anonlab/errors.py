"""Errors a user can cause.

Every problem that comes from the user's data, files or settings raises
:class:`AnonlabError` with a one-line message that names what is wrong and how
to fix it. The command line prints it as ``Error: <message>`` and exits with
code 2; the Python API lets it propagate.
"""

from __future__ import annotations


class AnonlabError(ValueError):
    """A user-caused problem: bad input data, file, parameter or configuration."""

    def __init__(self, message: str) -> None:
        one_line = " ".join(str(message).split())
        super().__init__(one_line)
        self.message = one_line

    def __str__(self) -> str:
        return self.message
