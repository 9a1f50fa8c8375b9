"""Warnings to Python users that point at the user's line, not into anonlab's source.

:func:`warnings.warn` names the line ``stacklevel`` frames up. A fixed
number is wrong as soon as a run reaches the warning by another path (on an
engine, through a helper), so anonlab computes it: :func:`caller_stacklevel`
counts the frames from the call of :func:`warnings.warn` up to the first one
whose code lies outside the ``anonlab`` package folder. Every warning
anonlab issues goes through :func:`warn_user`, so ``warnings.filterwarnings``
by module and the line Python prints (``file:line: Category: message``) name
the caller's script, test or notebook cell.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from types import FrameType

#: the folder of the anonlab package; a frame whose file lies below it is anonlab's
PACKAGE_DIR = str(Path(__file__).resolve().parent)


def inside_anonlab(filename: str) -> bool:
    """Whether ``filename`` (a frame's ``co_filename``) is a file of the anonlab package."""
    try:
        path = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return path == PACKAGE_DIR or path.startswith(PACKAGE_DIR + os.sep)


def caller_stacklevel(frame: FrameType | None = None) -> int:
    """The ``stacklevel`` that names the first frame outside anonlab, counted from ``frame``.

    ``frame`` is the frame that calls :func:`warnings.warn` (default: the
    caller of this function); level 1 is that frame, level ``L + 1`` the
    caller of level ``L``. When every frame is anonlab's (``python -m
    anonlab``), the level points past the outermost frame and Python names
    ``sys``, as it does for any level beyond the stack.
    """
    current: FrameType | None = frame if frame is not None else sys._getframe(1)
    level = 1
    while current is not None and inside_anonlab(current.f_code.co_filename):
        current = current.f_back
        level += 1
    return level


def warn_user(message: str | Warning, category: type[Warning] = UserWarning) -> None:
    """Issue ``message`` (a text of ``category``, or a warning instance) at the user's line.

    The stack level is :func:`caller_stacklevel` of this function's frame,
    so the warning points at the first line outside the anonlab package that
    led to it.
    """
    level = caller_stacklevel(sys._getframe(0))
    if isinstance(message, Warning):
        warnings.warn(message, stacklevel=level)
    else:
        warnings.warn(message, category, stacklevel=level)
