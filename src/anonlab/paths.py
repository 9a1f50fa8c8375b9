"""Paths as the library takes them and as its messages print them."""

from __future__ import annotations

import os
from pathlib import Path

#: a path as every function of the library takes it: text or any ``os.PathLike``
PathLike = str | os.PathLike[str]


def shown_path(path: PathLike) -> Path:
    """A path as messages print it: normalized (``examples/../out/a.csv`` is
    ``out/a.csv``), relative to the current folder when it lies in it, else absolute."""
    absolute = Path(os.path.normpath(Path(path).absolute()))
    try:
        return absolute.relative_to(Path.cwd())
    except ValueError:
        return absolute
