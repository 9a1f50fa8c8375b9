"""Reading tables and writing outputs safely: the one reader and the one writer.

:func:`read_table` reads a CSV file (delimiter sniffed or given), a Parquet
file or partitioned folder, an Excel ``.xlsx`` sheet, a database table or
query (a SQLAlchemy URL), or a pandas DataFrame. Read as text (``dtype=str``,
the default) every source gives the same strings for the same data: missing
values are ``""`` and numbers print as :mod:`anonlab.tabletext` prints them.

:func:`write_table` writes CSV in one dialect for every command, Parquet,
Excel or a database table, chosen by the target. File outputs are written
atomically: to a hidden temporary file beside the target (named as
:func:`anonlab.tempfiles.temp_path_for` names it), then renamed over it, so a
failure never leaves half a file behind; temporary files of killed runs are
removed on the way. An output path that is a folder is refused, and a full
disk or a missing permission is a one-line error. A run checks its outputs
against its inputs and against each other with :class:`anonlab.outputs.Outputs`.

The formats and the dialect are described in ``docs/io.md``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from anonlab.database import DatabaseTarget, is_database_url, masked
from anonlab.errors import AnonlabError
from anonlab.paths import PathLike, is_url
from anonlab.sources import sniff_delimiter
from anonlab.tempfiles import (
    create_private,
    default_mode,
    remove_stale_temps,
    temp_path_for,
    write_error,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from anonlab.urls import StorageOptions

Source = PathLike | DatabaseTarget
Strings = Literal["python", "arrow", "dictionary"]

__all__ = [
    "PathLike",
    "atomic_write",
    "file_sha256",
    "read_json",
    "read_table",
    "sniff_delimiter",
    "to_json_text",
    "write_json",
    "write_table",
    "write_text",
]


def read_table(
    source: PathLike | pd.DataFrame,
    *,
    delimiter: str | None = None,
    sheet: str | None = None,
    table: str | None = None,
    query: str | None = None,
    header: bool = True,
    quotechar: str = '"',
    dtype: Any = str,
    format_of: PathLike | DatabaseTarget | None = None,
    strings: Strings = "python",
    doubles: Sequence[str] | None = None,
    repeated: bool = False,
    storage_options: StorageOptions | None = None,
) -> pd.DataFrame:
    """Read a table from a file, a folder, a URL, a database or a DataFrame.

    ``source`` is one of:

    * a CSV file; ``delimiter`` is sniffed (``,`` ``;`` tab ``|``) when not
      given; ``header`` says whether the first line names the columns;
    * a Parquet file (``.parquet``/``.pq``) or a folder of Parquet parts
      (hive-style ``key=value/`` folders become columns);
    * an Excel workbook (``.xlsx``), its first sheet or the one named ``sheet``;
    * any of these files or folders named by an fsspec URL (``s3://bucket/data.csv``,
      ``gs://``, ``abfs://``, ``https://``, ``memory://``, ``file://``...), opened with
      ``storage_options`` (default: those of :func:`anonlab.urls.using_storage_options`);
      it is copied to this machine's temporary folder, read as a local file is, and the
      copy removed (:func:`anonlab.urls.local_copy`);
    * a SQLAlchemy URL (``sqlite:///data.db``, ``postgresql://user@host/db``)
      with exactly one of ``table`` (a table name) or ``query`` (an SQL query);
    * a pandas DataFrame, copied.

    With ``dtype=str`` (the default) every value is text, so codes such as
    ZIP ``"01234"`` keep their leading zeros and every source gives the same
    strings for the same data; a missing value (an empty field or cell, a
    null, NaN, SQL NULL) is ``""``. ``dtype=None`` keeps the source's types
    (a CSV's are inferred by pandas). Every problem is a one-line
    :class:`AnonlabError`.

    ``format_of`` reads a file staged for another target (see
    :func:`write_table`) in the dialect the writer used for that target: a
    staged ``.tsv`` release is split at tabs, a ``.csv`` one at commas.

    ``strings`` says how text columns come back (``dtype=str`` only): as
    ``object`` columns of Python ``str`` (``"python"``, the default), or as
    ``pd.ArrowDtype(pa.string())`` columns that keep the Arrow arrays the
    reader made (``"arrow"``). The text is the same; ``"arrow"`` makes no
    Python object per value, which at a million rows is most of the reading
    time and memory, and lets Arrow's compute functions (e.g. the cast to
    ``float64``) work on the columns without a copy. ``"dictionary"`` gives
    each text column as a ``category`` column: the distinct texts once and an
    integer code per row (a CSV is dictionary-encoded as it is parsed, so its
    text is never held row by row), for a reader that groups or compares
    values, such as the release checker.

    ``doubles`` names columns to read as ``float64`` rather than as text
    (``dtype=str`` only): each value is the double its text parses to, by
    Arrow's correctly rounded parser, so the column equals its text cast to
    ``float64``, without the text being made (a CSV's fields are parsed as
    the file is read; a ``float64`` column of Parquet or a DataFrame is taken
    as it is). A missing value or a text that is not a number is an error
    naming the column; read such a table as text. With ``strings="arrow"``
    these columns are Arrow-backed too (``pd.ArrowDtype(pa.float64())``).

    ``repeated`` says that the records are expected to repeat (a generalized
    release): a CSV read with ``strings="dictionary"`` then has each distinct
    line parsed once (:func:`anonlab.csvstream.read_repeated_csv`; the same
    table, read faster), where its lines are its records.
    """
    import pandas as pd  # here, not at import: commands that never read a table skip it

    text = _text_options(strings, doubles, dtype, repeated)
    if isinstance(source, pd.DataFrame):
        _no_sheet(sheet, "a DataFrame")
        _no_database_options(table, query, "a DataFrame")
        return _from_frame(source, dtype, text)
    if is_database_url(source):
        _no_sheet(sheet, f"'{masked(str(source))}'")
        return _from_database(str(source), table, query, dtype, text)
    _no_database_options(table, query, f"'{source}'")
    if delimiter is None and format_of is not None:
        delimiter = _written_delimiter(format_of)
    if is_url(source):
        return _from_url(
            os.fspath(source), storage_options, delimiter, sheet, header, quotechar, dtype, text
        )
    path = Path(source)
    try:
        return _from_path(path, delimiter, sheet, header, quotechar, dtype, text)
    except MemoryError as exc:
        raise _memory_error(path, exc) from None
    except PermissionError:
        raise AnonlabError(
            f"cannot read '{path}': permission denied: make it readable "
            "or copy it somewhere readable"
        ) from None
    except IsADirectoryError:
        raise AnonlabError(
            f"input '{path}' holds a folder where a file was expected: name a file"
        ) from None


def _from_url(
    url: str,
    options: StorageOptions | None,
    delimiter: str | None,
    sheet: str | None,
    header: bool,
    quotechar: str,
    dtype: Any,
    text_options: _Text,
) -> pd.DataFrame:
    """A file or Parquet folder named by URL: copied here, read as a local one, the copy's
    name replaced by the URL in any message."""
    from anonlab.urls import local_copy, shown_url

    with local_copy(url, options) as local:
        try:
            return _from_path(local, delimiter, sheet, header, quotechar, dtype, text_options)
        except AnonlabError as exc:
            message = exc.message.replace(str(local), shown_url(url))
            raise AnonlabError(message, parameter=exc.parameter) from None
        except MemoryError as exc:
            raise _memory_error(local, exc) from None


@dataclass(frozen=True)
class _Text:
    """How a table read as text comes back (see :func:`read_table`)."""

    arrow: bool = False  # text columns Arrow-backed, not str objects
    doubles: tuple[str, ...] = ()  # columns read as float64 instead
    dictionary: bool = False  # text columns as categoricals (codes and distinct texts)
    repeated: bool = False  # records expected to repeat: a CSV's distinct lines parsed once


def _text_options(
    strings: str, doubles: Sequence[str] | None, dtype: Any, repeated: bool = False
) -> _Text:
    """``strings`` and ``doubles`` checked (they apply to ``dtype=str`` only)."""
    if strings not in ("python", "arrow", "dictionary"):
        raise AnonlabError(
            f"strings '{strings}' is not a choice: give 'python' (str objects), "
            "'arrow' (Arrow-backed text columns) or 'dictionary' (categorical "
            "text columns)",
            parameter="strings",
        )
    if dtype is not str:
        given = f"strings '{strings}'" if strings != "python" else "doubles" if doubles else None
        if given is not None:
            name = given.split()[0]
            raise AnonlabError(
                f"{given} applies to a table read as text, but dtype is "
                f"{dtype!r}: read with dtype=str, or leave {name} out",
                parameter=name,
            )
    if isinstance(doubles, str):
        raise AnonlabError(
            f"doubles '{doubles}' must be a list of column names, e.g. ['{doubles}']",
            parameter="doubles",
        )
    return _Text(
        strings == "arrow", tuple(str(c) for c in doubles or ()), strings == "dictionary", repeated
    )


def _written_delimiter(target: PathLike | DatabaseTarget) -> str | None:
    """The delimiter :func:`write_table` uses for ``target`` (``None``: not CSV)."""
    from anonlab.sinks import output_format

    return {"csv": ",", "tsv": "\t"}.get(output_format(target))


def _no_sheet(sheet: str | None, what: str) -> None:
    if sheet is not None:
        raise AnonlabError(
            f"sheet '{sheet}' is given but {what} is not an Excel workbook: leave sheet out",
            parameter="sheet",
        )


def _no_database_options(table: str | None, query: str | None, what: str) -> None:
    name = "table" if table is not None else "query" if query is not None else None
    if name is not None:
        raise AnonlabError(
            f"{name} is given but the input {what} is not a database URL: "
            f"leave {name} out, or read from a URL such as sqlite:///data.db",
            parameter=name,
        )


def _memory_error(path: Path, exc: BaseException) -> AnonlabError:
    try:
        size = f" ({_size(path)} bytes)"
    except OSError:
        size = ""
    detail = str(exc).strip().splitlines()[:1] or ["out of memory"]
    return AnonlabError(
        f"not enough memory to read '{path}'{size}: {detail[0]}; free memory, "
        "or read a smaller table (e.g. a Parquet folder's parts one by one)"
    )


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def _from_path(
    path: Path,
    delimiter: str | None,
    sheet: str | None,
    header: bool,
    quotechar: str,
    dtype: Any,
    text_options: _Text,
) -> pd.DataFrame:
    """A table file or Parquet folder: the format chosen, read, checked, converted."""
    from anonlab.sources import file_format, read_excel, read_parquet

    if not path.exists():
        raise AnonlabError(f"input file '{path}' does not exist: check the path")
    text = dtype is str
    if path.is_dir():
        _no_sheet(sheet, f"folder '{path}'")
        return _finish(
            read_parquet(path, text),
            f"folder '{path}'",
            dtype,
            header=False,
            text_options=text_options,
        )
    fmt = file_format(path)
    if fmt != "excel":
        _no_sheet(sheet, f"'{path}'")
    if fmt == "parquet":
        return _finish(
            read_parquet(path, text),
            f"file '{path}'",
            dtype,
            header=False,
            text_options=text_options,
        )
    if fmt == "excel":
        return _finish(
            read_excel(path, sheet, header, text),
            f"file '{path}'",
            dtype,
            header,
            text_options=text_options,
        )
    return _read_csv(path, delimiter, header, quotechar, dtype, text_options)


def _read_csv(
    path: Path, delimiter: str | None, header: bool, quotechar: str, dtype: Any, text_options: _Text
) -> pd.DataFrame:
    from anonlab.sinks import check_delimiter
    from anonlab.sources import read_csv_text, read_csv_typed

    if delimiter == "\\t":
        delimiter = "\t"
    if delimiter is not None:
        check_delimiter(delimiter)
    if len(quotechar) != 1:
        raise AnonlabError(f"quotechar {quotechar!r} must be one character", parameter="quotechar")
    sep = delimiter if delimiter is not None else sniff_delimiter(path)
    if dtype is not str:
        frame = read_csv_typed(path, sep, quotechar, header, dtype)
        if frame.shape[0] == 0:
            raise _no_rows(f"file '{path}'", header)
        return frame  # type: ignore[no-any-return]
    data = read_csv_text(
        path,
        sep,
        quotechar,
        header,
        doubles=text_options.doubles,
        dictionary=text_options.dictionary,
        repeated=text_options.repeated,
    )
    return _finish(data, f"file '{path}'", dtype, header, text_options=text_options)


def _no_absent(doubles: Sequence[str], names: Sequence[str], where: str) -> None:
    """Refuse a column named in ``doubles`` that the table does not have."""
    absent = [c for c in doubles if c not in names]
    if absent:
        raise AnonlabError(
            f"doubles names the column '{absent[0]}', which {where} does not "
            f"have: it has {', '.join(names)}",
            parameter="doubles",
        )


def _no_rows(where: str, header: bool) -> AnonlabError:
    has = "has a header but no rows" if header else "has no rows"
    return AnonlabError(f"{where} {has}: give at least one record")


def _finish(
    data: pa.Table, where: str, dtype: Any, header: bool = True, *, text_options: _Text = _Text()
) -> pd.DataFrame:
    """Refuse repeated names and empty tables; text (``dtype=str``, as ``text_options``
    say) or typed DataFrame."""
    from anonlab.sources import check_names
    from anonlab.tabletext import text_table, to_frame

    check_names(data.column_names, where)
    if data.num_rows == 0:
        raise _no_rows(where, header)
    if dtype is str:
        _no_absent(text_options.doubles, data.column_names, where)
        if text_options.dictionary:
            frame = to_frame(_dictionary_table(data, text_options.doubles, where))
            del data
            _return_arrow_memory()
            return frame
        return to_frame(
            text_table(data, text_options.doubles, where), arrow_strings=text_options.arrow
        )
    frame = to_frame(data)
    return frame if dtype is None else frame.astype(dtype)


def _return_arrow_memory() -> None:
    """Give the memory Arrow's pool kept from a finished read back to the system.

    A CSV parsed on several threads passes through blocks of text many times
    the size of the codes it leaves (Adult x33: about 110 MiB for a 9 MiB
    table); the pool keeps such freed memory for reuse, where the rest of a run
    (NumPy, pandas) cannot use it.
    """
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _dictionary_table(data: pa.Table, doubles: Sequence[str], where: str) -> pa.Table:
    """:func:`~anonlab.tabletext.text_table` with every text column dictionary-encoded.

    A column the CSV parser already encoded (texts without nulls) is kept as it
    is; any other is made text first, so the dictionary holds exactly the texts
    ``strings="python"`` would give.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from anonlab.tabletext import double_array, text_array

    def encoded(column: Any, name: str) -> Any:
        if name in doubles:
            return double_array(column, name, where)
        kind = column.type
        if (
            pa.types.is_dictionary(kind)
            and pa.types.is_string(kind.value_type)
            and not column.null_count
        ):
            return column
        return pc.dictionary_encode(text_array(column))

    table = pa.Table.from_arrays(
        [encoded(c, name) for name, c in zip(data.column_names, data.columns, strict=True)],
        names=data.column_names,
    )
    return table.unify_dictionaries().combine_chunks()


def _from_database(
    url: str, table: str | None, query: str | None, dtype: Any, text_options: _Text
) -> pd.DataFrame:
    """A database table or query result (values as text with ``dtype=str``)."""
    import pyarrow as pa

    from anonlab.database import fetch
    from anonlab.tabletext import values_text

    try:
        names, rows = fetch(url, table=table, query=query)
        columns = [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in names]
        where = f"table '{table}'" if table is not None else "the query"
        where += f" of '{masked(url)}'"
        if dtype is str:
            arrays = [pa.array(values_text(c), pa.string()) for c in columns]
        else:
            from anonlab.tabletext import column_from_python

            arrays = [column_from_python(c) for c in columns]
        data = pa.Table.from_arrays(arrays, names=names)
    except MemoryError as exc:
        detail = str(exc).strip().splitlines()[:1] or ["out of memory"]
        raise AnonlabError(
            f"not enough memory to read '{masked(url)}': {detail[0]}; free "
            "memory or select fewer rows with query"
        ) from None
    return _finish(data, where, dtype, header=False, text_options=text_options)


def _from_frame(frame: pd.DataFrame, dtype: Any, text_options: _Text) -> pd.DataFrame:
    """A copy of ``frame``; with ``dtype=str`` every value as text (index kept)."""
    from anonlab.tabletext import arrow_from_frame, text_table, to_frame

    if dtype is not str:
        return frame.copy() if dtype is None else frame.astype(dtype)
    data = arrow_from_frame(frame)
    _no_absent(text_options.doubles, data.column_names, "the DataFrame")
    text = to_frame(
        text_table(data, text_options.doubles, "the DataFrame"), arrow_strings=text_options.arrow
    )
    text.index = frame.index.copy()
    return text


def folder_files(path: PathLike) -> list[tuple[str, Path]]:
    """The files of a folder (a Parquet dataset), recursively, as (relative POSIX path,
    path) pairs sorted by relative path."""
    root = Path(path)
    found = [(f.relative_to(root).as_posix(), f) for f in root.rglob("*") if f.is_file()]
    return sorted(found)


def file_sha256(path: PathLike) -> str:
    """SHA-256 hex digest of a file's bytes (identifies the input in reports).

    A folder (a Parquet dataset) is digested as its files in the order of
    their relative paths: each file's relative path, its size and its bytes.
    """
    digest = hashlib.sha256()
    if is_url(path):
        _digest_url(digest, os.fspath(path))
        return digest.hexdigest()
    root = Path(path)
    if root.is_dir():
        for name, file in folder_files(root):
            encoded = name.encode("utf-8", "surrogateescape")
            digest.update(len(encoded).to_bytes(8, "big") + encoded)
            digest.update(file.stat().st_size.to_bytes(8, "big"))
            _digest_file(digest, file)
        return digest.hexdigest()
    _digest_file(digest, root)
    return digest.hexdigest()


def _digest_url(digest: hashlib._Hash, url: str) -> None:
    """:func:`file_sha256` of a file or folder named by URL (the same digest as its local
    copy's)."""
    from anonlab import urls

    if urls.kind(url) == "folder":
        for name, file in urls.files_under(url):
            encoded = name.encode("utf-8", "surrogateescape")
            digest.update(len(encoded).to_bytes(8, "big") + encoded)
            digest.update(urls.size(file).to_bytes(8, "big"))
            with urls.open_binary(file) as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        return
    with urls.open_binary(url) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)


def _digest_file(digest: hashlib._Hash, path: Path) -> None:
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)


def atomic_write(
    path: PathLike, writer: Callable[[Path], object], *, private: bool = False
) -> None:
    """Call ``writer(tmp_path)`` then rename the temporary file onto ``path``.

    The temporary file lives beside the target
    (``.NAME.anonlab-HOST-PID-RANDOM.tmp``, created owner-only before
    ``writer`` runs) so the rename is atomic; on any error it is removed and the target is
    left as it was, and temporary files of killed runs in that folder are
    removed first. A missing output folder is created; a target that is a
    folder is refused. The file gets the usual permissions (0o666 less the
    umask), or owner-only 0o600 when ``private`` (secret keys). A full disk,
    a missing permission or a read-only file system is a one-line error.
    """
    if is_url(path):
        _write_url(os.fspath(path), writer, private)
        return
    target = Path(path)
    if target.is_dir():
        raise AnonlabError(f"output '{target}' is a folder: give a file name inside it")
    folder = target.parent if str(target.parent) else Path(".")
    if folder.exists() and not folder.is_dir():
        raise AnonlabError(f"output folder '{folder}' is a file: choose another output path")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(target, exc) from None
    remove_stale_temps(folder)
    tmp = temp_path_for(target)
    try:
        create_private(tmp)
        writer(tmp)
        os.chmod(tmp, 0o600 if private else default_mode())
        os.replace(tmp, target)
    except (OSError, MemoryError) as exc:
        tmp.unlink(missing_ok=True)
        raise write_error(target, exc) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_url(url: str, writer: Callable[[Path], object], private: bool) -> None:
    """:func:`atomic_write` to a URL: written here (the system's temporary folder), uploaded
    to a hidden temporary name beside the target, then moved onto it (see
    :mod:`anonlab.urls` for what a move is on an object store)."""
    import tempfile

    from anonlab import urls
    from anonlab.outputs import check_output_url
    from anonlab.tempfiles import system_temp_folder

    shown = urls.shown_url(url)
    if private:
        raise AnonlabError(
            f"output '{shown}' is a URL: a secret is written to a local file only "
            "(owner-only permissions, which a URL cannot promise): give a local path"
        )
    check_output_url("output", url, (), folder=False)
    remote = urls.remote_temp(url)
    with tempfile.TemporaryDirectory(prefix=".anonlab-out-", dir=system_temp_folder()) as work:
        tmp = Path(work) / url.rstrip("/").rpartition("/")[2]
        try:
            create_private(tmp)
            writer(tmp)
            urls.upload(tmp, remote)
            urls.move(remote, url)
        except AnonlabError:
            urls.remove(remote)
            raise
        except (OSError, MemoryError, ValueError, NotImplementedError) as exc:
            urls.remove(remote)
            raise write_error(shown, exc) from None
        except BaseException:
            urls.remove(remote)
            raise


def write_table(
    frame: pd.DataFrame | pa.Table,
    path: PathLike | DatabaseTarget,
    *,
    delimiter: str | None = None,
    table: str | None = None,
    sheet: str | None = None,
    format_of: PathLike | DatabaseTarget | None = None,
) -> None:
    """Write a table, in the format its target's extension names, atomically.

    * ``.csv``, ``.txt`` and any other extension: CSV in the one dialect
      (``,`` unless ``delimiter`` is given; quotes only where needed; ``\\n``
      line ends; UTF-8; header row);
    * ``.tsv``/``.tab``: the same with a tab between fields;
    * ``.parquet``/``.pq``: Parquet, the column types kept;
    * ``.xlsx``: an Excel workbook with one sheet (``sheet``, default ``Sheet1``);
    * a SQLAlchemy URL with ``table`` (or a :class:`DatabaseTarget`): that
      table, replaced inside one transaction.

    ``format_of`` chooses the format from another target than ``path``: a run
    stages its release to a temporary file ``path`` and renames it later onto
    ``format_of`` (a database target is staged as Parquet).
    """
    from anonlab.sinks import output_format, to_arrow, write_file

    if isinstance(path, DatabaseTarget) or is_database_url(path):
        target = path if isinstance(path, DatabaseTarget) else _named_table(str(path), table)
        _write_database(to_arrow(frame), target)
        return
    if table is not None:
        raise AnonlabError(
            f"table is given but the output '{path}' is not a database URL: "
            "leave table out, or write to a URL such as sqlite:///out.db",
            parameter="table",
        )
    fmt = output_format(format_of if format_of is not None else path)
    if sheet is not None and fmt != "excel":
        raise AnonlabError(
            f"sheet '{sheet}' is given but '{path}' is not an Excel workbook: leave sheet out",
            parameter="sheet",
        )
    data = to_arrow(frame)
    atomic_write(path, lambda tmp: write_file(data, tmp, fmt, delimiter=delimiter, sheet=sheet))


def _named_table(url: str, table: str | None) -> DatabaseTarget:
    if table is None:
        raise AnonlabError(
            f"table is needed to write to the database '{masked(url)}': name the table to write",
            parameter="table",
        )
    return DatabaseTarget(url, table)


def _write_database(data: pa.Table, target: DatabaseTarget) -> None:
    from anonlab.database import check_target, write_tables

    check_target("output", target)
    try:
        write_tables(target.url, [(target.table, data)])
    except (OSError, MemoryError) as exc:
        raise write_error(target, exc) from None


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def _strict(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, infinity) replaced by ``None``."""
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.ndarray):
        return _strict(value.tolist())
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


def to_json_text(obj: Any) -> str:
    """Encode a report as indented, strict JSON (NumPy scalars and arrays allowed).

    JSON has no NaN or infinity: an undefined or unbounded number (e.g. ILR
    when the original's entropy is 0) is written as ``null``, so every
    standard JSON reader can read the report.
    """
    return json.dumps(_strict(obj), indent=2, default=_json_default, allow_nan=False) + "\n"


def write_json(obj: Any, path: PathLike, *, private: bool = False) -> None:
    """Write ``obj`` as JSON atomically (owner-only when ``private``)."""
    text = to_json_text(obj)
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), private=private)


def write_text(text: str, path: PathLike, *, private: bool = False) -> None:
    """Write text atomically (owner-only when ``private``)."""
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), private=private)


def read_json(path: PathLike) -> Any:
    """Read a JSON file, with a one-line error when it is missing, a folder or malformed.

    A document nested too deeply for Python's parser (thousands of levels;
    no report or key is) is refused instead of ending in a ``RecursionError``.
    """
    if is_url(path):  # s3://, memory://...: its text, then parsed as a file's
        from anonlab.urls import open_binary

        with open_binary(os.fspath(path)) as fh:
            return _parsed_json(fh.read().decode("utf-8", errors="replace"), os.fspath(path))
    p = Path(path)
    if not p.exists():
        raise AnonlabError(f"JSON file '{p}' does not exist: check the path")
    if p.is_dir():
        raise AnonlabError(f"JSON file '{p}' is a folder: give a report or key file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise AnonlabError(
            f"file '{p}' is not valid JSON ({exc}): give a report or key written by anonlab"
        ) from exc
    except MemoryError as exc:
        raise _memory_error(p, exc) from None
    return _parsed_json(text, p)


def _parsed_json(text: str, where: PathLike) -> Any:
    """``text`` parsed as JSON; one line naming ``where`` when it is not."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnonlabError(
            f"file '{where}' is not valid JSON ({exc}): give a report or key written by anonlab"
        ) from exc
    except RecursionError:
        raise AnonlabError(
            f"file '{where}' is JSON nested too deeply: give a report or key written by anonlab"
        ) from None
