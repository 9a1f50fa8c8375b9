"""Step 1, Load: a table from an upload, a path on this machine or a database, and its preview.

An upload is the raw file body of a ``PUT /upload`` (the page's script sends
the file as it is, no multipart form), written to the workspace's private
``uploads`` folder in pieces of :data:`CHUNK` bytes as they arrive: no size
cap but the disk's, and never more than one piece in memory. A path or a
SQLAlchemy URL is read where it is, with the same reader and the same checks
as the CLI (:func:`anonlab.io.read_table`). The preview reads the table once
with its text columns dictionary-encoded (each distinct value once), which
gives every column's distinct values and so its type and count without a
Python object per row.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, BinaryIO

import anyio.to_thread
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from anonlab.errors import AnonlabError
from anonlab.ui.current import current_table, workspace_of
from anonlab.ui.forms import text
from anonlab.ui.templating import render
from anonlab.ui.workspace import LoadedTable

#: bytes gathered from the request body before one write to the upload's file
CHUNK = 1 << 20
#: rows shown in the preview
PREVIEW_ROWS = 10
#: characters of an uploaded file's name kept (letters, digits, ``.-_`` only)
NAME_CHARS = 100

_INTEGER = r"[+-]?\d+"
_DATE = r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?"


def read_options(read: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of :func:`anonlab.io.read_table` for a table's read settings."""
    options: dict[str, Any] = {"delimiter": read.get("delimiter")}
    for name in ("sheet", "table", "query"):
        if read.get(name):
            options[name] = read[name]
    return options


def column_type(values: Any) -> str:
    """The type a column's distinct texts (``values``, a pandas Index) show: ``integer``
    (whole numbers), ``decimal`` (numbers), ``date`` (ISO dates, with a time or not),
    ``text``, or ``empty`` (no value but the missing one)."""
    import pandas as pd

    given = values[values != ""]
    if len(given) == 0:
        return "empty"
    given = pd.Index(given.astype(str))
    if bool(given.str.fullmatch(_INTEGER).all()):
        return "integer"
    if bool(pd.to_numeric(given, errors="coerce").notna().all()):
        return "decimal"
    if bool(given.str.fullmatch(_DATE).all()):
        return "date"
    return "text"


def summarize(read: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The columns of the table ``read`` names (name, type, distinct and missing values,
    the first rows' values) and its number of rows, read by the CLI's reader."""
    import pandas as pd

    from anonlab.io import read_table

    frame = read_table(read["input"], strings="dictionary", **read_options(read))
    columns: list[dict[str, Any]] = []
    for name in frame.columns:
        series = frame[name]
        if isinstance(series.dtype, pd.CategoricalDtype):
            categories = series.cat.categories
            counts = series.cat.codes.value_counts()
            where = [i for i, v in enumerate(categories) if v == ""]
            missing = int(counts.get(where[0], 0)) if where else 0
            used = categories[sorted(int(c) for c in counts.index if c >= 0)]
        else:  # a column the reader kept as numbers
            used = pd.Index(series.astype(str).unique())
            missing = 0
        columns.append(
            {
                "name": str(name),
                "type": column_type(used),
                "distinct": len(used),
                "missing": missing,
                "head": [str(v) for v in series.iloc[:PREVIEW_ROWS]],
            }
        )
    return columns, len(frame)


def _delimiter_of(read: dict[str, Any]) -> dict[str, Any]:
    """``read`` with the delimiter the reader would sniff written out, for a CSV file whose
    delimiter was not given (so that the run's settings say it)."""
    from anonlab.database import is_database_url
    from anonlab.io import sniff_delimiter
    from anonlab.paths import is_url
    from anonlab.sources import file_format

    source = read["input"]
    if read.get("delimiter") or is_database_url(source) or is_url(source):
        return read
    path = Path(source)
    if not path.is_file() or file_format(path) != "csv":
        return read
    return {**read, "delimiter": sniff_delimiter(path)}


async def load_table(request: Request, name: str, read: dict[str, Any]) -> LoadedTable:
    """Read the table ``read`` names, summarize it and add it to the workspace."""
    read = {k: v for k, v in read.items() if v is not None}
    read = await run_in_threadpool(_delimiter_of, read)
    columns, rows = await run_in_threadpool(summarize, read)
    workspace = workspace_of(request)
    table = LoadedTable(id=workspace.new_id("t"), name=name, read=read, columns=columns, rows=rows)
    return workspace.add_table(table)


async def page(request: Request) -> Response:
    workspace = workspace_of(request)
    table = current_table(request) if workspace.tables else None
    return render(request, "load.html", table=table, tables=list(workspace.tables.values()))


def safe_name(name: str) -> str:
    """An uploaded file's name as stored: its last part, only letters, digits and ``.-_``
    (the extension kept, which tells the reader the format)."""
    base = re.split(r"[\\/]", name)[-1]
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", base).lstrip(".")[-NAME_CHARS:]
    return cleaned or "upload"


def write_piece(fh: BinaryIO, data: bytes) -> None:
    """One piece of an upload written to its file."""
    fh.write(data)


async def receive_upload(request: Request, target: Path) -> int:
    """Write the request body to ``target`` as it arrives, :data:`CHUNK` bytes at a time
    (in a worker thread, so the app keeps answering); the bytes written. A body cut short
    (the browser went away) leaves no file behind."""
    part = target.with_name(target.name + ".part")
    size = 0
    try:
        with part.open("xb") as fh:
            part.chmod(0o600)
            pending = bytearray()
            async for piece in request.stream():
                pending += piece
                while len(pending) >= CHUNK:
                    await anyio.to_thread.run_sync(write_piece, fh, bytes(pending[:CHUNK]))
                    del pending[:CHUNK]
                    size += CHUNK
            if pending:
                await anyio.to_thread.run_sync(write_piece, fh, bytes(pending))
                size += len(pending)
        part.replace(target)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return size


async def upload(request: Request) -> Response:
    """``PUT /upload?name=FILE&delimiter=;``: the raw body is the file."""
    name = safe_name(request.query_params.get("name", "upload"))
    workspace = workspace_of(request)
    folder = workspace.folder("uploads") / workspace.new_id("u")
    folder.mkdir(mode=0o700)
    target = folder / name
    try:
        size = await receive_upload(request, target)
        if size == 0:
            raise AnonlabError(f"upload '{name}' is empty: choose a file with a table")
        read = {
            "input": str(target),
            "delimiter": request.query_params.get("delimiter") or None,
            "sheet": request.query_params.get("sheet") or None,
        }
        table = await load_table(request, name, read)
    except AnonlabError as exc:
        target.unlink(missing_ok=True)
        return JSONResponse({"error": str(exc)}, status_code=400)
    return JSONResponse({"table": table.id, "location": f"/?table={table.id}", "bytes": size})


async def load_path(request: Request) -> Response:
    """A file (or folder of Parquet parts, or file URL) on this machine, read where it is."""
    form = await request.form()
    path = text(form, "path")
    if path is None:
        raise AnonlabError("give the path of a table file (CSV, Parquet or Excel)")
    if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path):
        path = str(Path(path).expanduser().absolute())  # the settings file names it anywhere
    read = {"input": path, "delimiter": text(form, "delimiter"), "sheet": text(form, "sheet")}
    table = await load_table(request, Path(path).name or path, read)
    return RedirectResponse(f"/?table={table.id}", status_code=303)


async def load_database(request: Request) -> Response:
    """A table or query of a database named by a SQLAlchemy URL."""
    from anonlab.database import is_database_url, masked

    form = await request.form()
    url, table_name, query = text(form, "url"), text(form, "table"), text(form, "query")
    if url is None or not is_database_url(url):
        raise AnonlabError(
            f"'{masked(url or '')}' is not a SQLAlchemy URL: e.g. sqlite:///data.db or "
            "postgresql://user@host/db"
        )
    if (table_name is None) == (query is None):
        raise AnonlabError("give either a table name or an SQL query (one of them)")
    read = {"input": url, "table": table_name, "query": query}
    shown = table_name if table_name is not None else "query"
    table = await load_table(request, f"{shown} ({masked(url)})", read)
    return RedirectResponse(f"/?table={table.id}", status_code=303)


ROUTES: list[BaseRoute] = [
    Route("/", page, methods=["GET"]),
    Route("/upload", upload, methods=["PUT"]),
    Route("/load/path", load_path, methods=["POST"]),
    Route("/load/database", load_database, methods=["POST"]),
]
