"""Progress of long steps, reported by the library and shown (or not) by the caller.

A library function that can run for more than a couple of seconds takes an
optional ``progress`` callable and calls it as ``progress(step, done, total)``:
``step`` names what is going on in a few words ("searching the lattice",
"MDAV rounds"), ``done`` counts finished units and ``total`` is their number
when known (``None`` when not). The library never prints; the command line
turns the calls into a Rich progress display on a terminal and ignores them
with ``--quiet`` or when the output is not a terminal.
"""

from __future__ import annotations

from collections.abc import Callable

ProgressFn = Callable[[str, int, int | None], None]


def no_progress(step: str, done: int, total: int | None) -> None:
    """The default: report nothing."""


def report_to(progress: ProgressFn | None) -> ProgressFn:
    """``progress`` itself, or :func:`no_progress` when it is ``None``."""
    return progress if progress is not None else no_progress
