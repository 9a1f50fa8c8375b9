"""The common header of every JSON report.

Each command's report is a dict that starts with :func:`report_header` (what
ran, on which file, with which settings, by which anonlab version, when) and
adds its method's own keys. Reports never contain raw records.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
from pathlib import Path
from typing import Any

from anonlab import __version__
from anonlab.io import file_sha256, folder_files
from anonlab.paths import PathLike, is_url


def input_description(path: PathLike | None) -> dict[str, Any] | None:
    """Name, size and SHA-256 of an input file (``None`` for in-memory data); for a folder
    (a Parquet dataset) the size is its files' total."""
    if path is None:
        return None
    if is_url(path):  # s3://, memory://...: the same description as its local copy's
        from anonlab import urls

        url = os.fspath(path)
        if urls.kind(url) == "folder":
            size = sum(urls.size(file) for _name, file in urls.files_under(url))
        else:
            size = urls.size(url)
        name = url.rstrip("/").rpartition("/")[2]
        return {"name": name, "bytes": size, "sha256": file_sha256(url)}
    p = Path(path)
    size = sum(f.stat().st_size for _name, f in folder_files(p)) if p.is_dir() else p.stat().st_size
    return {"name": p.name, "bytes": size, "sha256": file_sha256(p)}


def report_header(
    command: str,
    parameters: dict[str, Any],
    inputs: dict[str, PathLike | None] | None = None,
) -> dict[str, Any]:
    """Common report fields: command, parameters, inputs, version, time, Python."""
    return {
        "command": command,
        "anonlab_version": __version__,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "inputs": {k: input_description(v) for k, v in (inputs or {}).items()},
        "parameters": parameters,
    }
