"""A table the engines read in pieces: Parquet files, folders or globs, CSV files, DataFrames.

A :class:`Table` is an ordered list of :class:`Piece` objects. A piece is the
unit of work of every engine (a Dask partition, one step of the NumPy
engine's loop) and is read in *batches* of at most ``batch_rows`` rows, so a
task never holds more than a batch of raw values. Both engines see the same
pieces and the same batches, which is what makes their results identical:

* a Parquet file is one piece, or several when it has many row groups (row
  groups are gathered into pieces of about ``piece_rows`` rows); a folder's
  parts are taken in natural order (``part-2`` before ``part-10``), hidden
  and ``_`` files skipped, hive ``key=value/`` folders giving text columns;
  a glob (``data/*.parquet``) names the files directly;
* a CSV file is split into byte ranges of about ``csv_block`` bytes at line
  ends (a piece holds the records that *start* in its range); a quoted value
  holding a line break must not straddle two ranges, so such files are read
  as one piece (``csv_block=None``) or converted to Parquet first;
* a pandas DataFrame is cut into slices of ``piece_rows`` rows.

Values become text by the rule of :mod:`anonlab.tabletext` (the one every
reader of anonlab uses) when the kernels encode them, not here.

The parts of a folder or glob must share one set of columns: :func:`open_table`
reads every part's footer and refuses a part whose columns differ from the
first's. Their types are unified as the one reader (:func:`anonlab.sources.read_parquet`,
a pyarrow dataset) unifies them: the first part's type is the column's, and a
part that stores the column otherwise has its values cast to it (Arrow's safe
cast: an integer part of a double column, an all-null part of a text column,
numbers in a text column), so an engine reads the values the in-memory run
reads. A part whose type cannot be cast to the first's at all (text in a
column the first part stores as null, a date in an integer column) is refused
when the table is opened; a value that cannot be cast (``1.5`` in an integer
column, ``x`` in a double column) when its batch is read. Text types
(``string``, ``large_string`` and dictionaries of them) count as one.
"""

from __future__ import annotations

import glob as globbing
import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import unquote

from anonlab.errors import AnonlabError, present
from anonlab.frames import is_dask_frame
from anonlab.paths import is_url

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from anonlab.urls import StorageOptions

#: rows per batch a task reads at a time
BATCH_ROWS = 1 << 20
#: rows per piece when a Parquet file's row groups or a DataFrame are split
PIECE_ROWS = 4 << 20
#: bytes per CSV piece
CSV_BLOCK = 64 << 20
_GLOB_CHARS = frozenset("*?[")


class Piece:
    """One partition of a table, readable anywhere (it pickles to a Dask worker)."""

    index: int

    def columns(self) -> tuple[str, ...]:
        """The piece's column names, in table order."""
        raise NotImplementedError

    def batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.Table]:
        """The piece's rows, ``columns`` only, in order, as Arrow tables of at most
        ``batch_rows`` rows (raw types: the kernels apply the text rule)."""
        raise NotImplementedError

    def describe(self) -> str:
        """Where the piece comes from, for messages."""
        raise NotImplementedError


@dataclass(frozen=True)
class ParquetPiece(Piece):
    """Row groups of one Parquet file, plus the hive partition values of its folder."""

    index: int
    path: str
    names: tuple[str, ...]  # the file's own columns
    row_groups: tuple[int, ...] | None = None  # None: every row group
    partition: tuple[tuple[str, str], ...] = ()  # hive key -> value (text)
    storage: tuple[tuple[str, Any], ...] = ()  # fsspec's options when ``path`` is a URL
    # columns this file stores with another type than the table's (the first part's), and
    # that type: their values are cast to it, as the one reader's dataset casts them
    cast: tuple[tuple[str, Any], ...] = ()
    first_path: str = ""  # the part whose types are the table's, for messages
    shown: str = ""  # this part's path as given, for messages (``path`` is absolute)

    def columns(self) -> tuple[str, ...]:
        return self.names + tuple(k for k, _ in self.partition)

    def batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.Table]:
        import pyarrow.parquet as pq

        keys = dict(self.partition)
        own = [c for c in columns if c not in keys]
        if not is_url(self.path):
            schema = pq.read_schema(self.path)
            handle = pq.ParquetFile(self.path, read_dictionary=_text_columns(schema, own))
            yield from self._read(handle, columns, keys, own, batch_rows)
            return
        with _open_bytes(self.path, self.storage) as source:  # the footer read, then the rows
            schema = pq.read_schema(source)
            source.seek(0)
            handle = pq.ParquetFile(source, read_dictionary=_text_columns(schema, own))
            yield from self._read(handle, columns, keys, own, batch_rows)

    def _read(
        self,
        handle: Any,
        columns: Sequence[str],
        keys: dict[str, str],
        own: list[str],
        batch_rows: int,
    ) -> Iterator[pa.Table]:
        import pyarrow as pa

        try:
            if not own:  # only partition keys asked for: count rows from the footer
                yield from _constant_batches(handle.metadata.num_rows, columns, keys, batch_rows)
                return
            for batch in handle.iter_batches(
                batch_size=batch_rows, row_groups=self.row_groups, columns=own, use_threads=False
            ):
                table = pa.Table.from_batches([batch])
                if self.cast:
                    table = self._cast(table)
                for name in columns:
                    if name in keys:
                        table = table.append_column(
                            name, pa.array([keys[name]] * table.num_rows, pa.string())
                        )
                yield table.select(list(columns))
        finally:
            handle.close()

    def _cast(self, table: pa.Table) -> pa.Table:
        """``table``'s columns of :attr:`cast` with their values cast to the table's types
        (Arrow's safe cast, the one the one reader's dataset applies); a text type is
        dictionary-encoded, as the parts that store text are read."""
        import pyarrow as pa
        import pyarrow.compute as pc

        for name, target in self.cast:
            if name not in table.column_names:
                continue
            at = table.column_names.index(name)
            column = table.column(at)
            if pa.types.is_dictionary(column.type):
                column = column.cast(column.type.value_type)
            try:
                column = column.cast(target, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                detail = (str(exc).strip().splitlines() or ["cast error"])[0]
                raise AnonlabError(
                    f"input: Parquet part '{self.shown or self.path}' stores column '{name}' as "
                    f"{_stored(self.path, name, self.storage)} but part '{self.first_path}' as "
                    f"{target}, and a value cannot be read as {target} ({detail}): write every "
                    "part with the same schema",
                    parameter="input",
                ) from None
            if pa.types.is_string(target):
                column = pc.dictionary_encode(column)
            table = table.set_column(at, name, column)
        return table

    def describe(self) -> str:
        return f"Parquet part '{self.path}'"


def _stored(path: str, name: str, storage: tuple[tuple[str, Any], ...]) -> Any:
    """The type a Parquet file's footer gives column ``name``."""
    return _read_footer(path, storage).schema.to_arrow_schema().field(name).type


def _open_bytes(path: str, storage: tuple[tuple[str, Any], ...]) -> IO[bytes]:
    """A piece's file opened for reading bytes: a local file, or a URL through fsspec with the
    storage options the piece carries."""
    if is_url(path):
        from anonlab.urls import open_binary

        return open_binary(path, dict(storage))
    return open(path, "rb")


def _text_columns(schema: pa.Schema, columns: Sequence[str]) -> list[str]:
    """The ``columns`` stored as text: read as dictionaries (Parquet's own dictionary pages),
    which encodes them without making a string per value."""
    import pyarrow as pa

    return [
        c
        for c in columns
        if c in schema.names
        and (
            pa.types.is_string(schema.field(c).type)
            or pa.types.is_large_string(schema.field(c).type)
        )
    ]


def _constant_batches(
    rows: int, columns: Sequence[str], keys: dict[str, str], batch_rows: int
) -> Iterator[pa.Table]:
    import pyarrow as pa

    for start in range(0, rows, batch_rows):
        size = min(batch_rows, rows - start)
        yield pa.table({c: pa.array([keys[c]] * size, pa.string()) for c in columns})


@dataclass(frozen=True)
class CsvPiece(Piece):
    """The records of a CSV file that start in the byte range ``[start, end)``."""

    index: int
    path: str
    names: tuple[str, ...]
    start: int
    end: int
    delimiter: str
    quotechar: str = '"'
    skip_header: bool = False
    storage: tuple[tuple[str, Any], ...] = ()  # fsspec's options when ``path`` is a URL
    shown: str = ""  # the path as given, for messages (``path`` is absolute for the workers)

    def columns(self) -> tuple[str, ...]:
        return self.names

    def _bytes(self) -> bytes:
        """The piece's records: from the first line start at or after ``start`` to the end of
        the line holding byte ``end - 1``."""
        with _open_bytes(self.path, self.storage) as fh:
            if self.start > 0:
                fh.seek(self.start - 1)
                if fh.read(1) != b"\n":
                    fh.readline()
            begin = fh.tell()
            if begin >= self.end:
                return b""
            data = fh.read(self.end - begin)
            if not data.endswith(b"\n"):
                data += fh.readline()
        if self.start == 0 and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        return data

    def batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.Table]:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        data = self._bytes()
        if not data.strip():
            return
        types = {name: pa.string() for name in self.names}
        try:
            reader = pacsv.open_csv(
                io.BytesIO(data),
                read_options=pacsv.ReadOptions(
                    column_names=list(self.names),
                    skip_rows=int(self.skip_header),
                    block_size=1 << 24,
                ),
                parse_options=pacsv.ParseOptions(
                    delimiter=self.delimiter, quote_char=self.quotechar
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types=types,
                    include_columns=list(columns),
                    null_values=[],
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
            pending: list[pa.RecordBatch] = []
            rows = 0
            for batch in reader:
                pending.append(batch)
                rows += batch.num_rows
                while rows >= batch_rows:
                    table = pa.Table.from_batches(pending)
                    yield table.slice(0, batch_rows)
                    rest = table.slice(batch_rows)
                    pending, rows = rest.to_batches(), rest.num_rows
            if rows:
                yield pa.Table.from_batches(pending, schema=reader.schema)
        except pa.ArrowInvalid as exc:
            detail = (str(exc).strip().splitlines() or ["parse error"])[0]
            raise AnonlabError(
                f"file '{self.shown or self.path}' is ragged or malformed ({detail}, in the "
                f"piece from byte {self.start}): every row needs the same number of fields; "
                f"check the delimiter (now '{self.delimiter}'); a quoted value holding a line "
                "break cannot be split into pieces: convert the file to Parquet",
                parameter="input",
            ) from None

    def describe(self) -> str:
        return f"bytes {self.start}-{self.end} of CSV file '{self.path}'"


@dataclass(frozen=True)
class FramePiece(Piece):
    """A slice of a pandas DataFrame."""

    index: int
    frame: pd.DataFrame = field(repr=False)

    def columns(self) -> tuple[str, ...]:
        return tuple(str(c) for c in self.frame.columns)

    def batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.Table]:
        import pyarrow as pa

        from anonlab.tabletext import column_from_pandas

        names = [str(c) for c in self.frame.columns]
        where = [names.index(c) for c in columns]
        for start in range(0, self.frame.shape[0], batch_rows):
            part = self.frame.iloc[start : start + batch_rows]
            yield pa.Table.from_arrays(
                [column_from_pandas(part.iloc[:, i]) for i in where], names=list(columns)
            )

    def describe(self) -> str:
        return f"slice {self.index} of the DataFrame"


@dataclass(frozen=True)
class Table:
    """An ordered list of pieces with one set of columns.

    ``dask_frame`` holds a Dask DataFrame given as input: its partitions are
    the pieces (made on the workers), so ``pieces`` is empty.
    """

    source: str
    column_names: tuple[str, ...]
    pieces: tuple[Piece, ...]
    dask_frame: Any = None

    def check_columns(self, columns: Sequence[str], parameter: str) -> None:
        """Refuse a column the table does not have, naming ``parameter``."""
        for name in columns:
            if name not in self.column_names:
                raise AnonlabError(
                    f"{parameter} names the column '{name}', which {self.source} "
                    f"does not have: it has {', '.join(self.column_names)}",
                    parameter=parameter,
                )

    def no_rows_error(self) -> AnonlabError:
        """The in-memory run's line for a table without rows: the one reader's for a file or
        folder (CSV with a header), the table model's for a DataFrame."""
        kinds = {type(p) for p in self.pieces}
        if kinds == {FramePiece}:
            return AnonlabError("the table has no records: give at least one record")
        has = "has a header but no rows" if kinds == {CsvPiece} else "has no rows"
        return AnonlabError(f"{self.source} {has}: give at least one record")


TableLike = Any  # a path, a glob, a pandas or Dask DataFrame, or a Table


def open_table(
    source: TableLike,
    *,
    delimiter: str | None = None,
    quotechar: str = '"',
    piece_rows: int = PIECE_ROWS,
    csv_block: int | None = CSV_BLOCK,
    storage_options: StorageOptions | None = None,
) -> Table:
    """The pieces of ``source``: a Parquet file, folder or glob, a CSV file, a DataFrame.

    A file, folder or glob named by an fsspec URL (``s3://bucket/data/``,
    ``gs://b/*.parquet``, ``memory://``, ``file://``) is read in pieces from
    there, each piece opening it with ``storage_options`` (default: those of
    :func:`anonlab.urls.using_storage_options`), which it carries to the
    engine's workers.

    Problems with the input are one-line :class:`AnonlabError` naming
    ``input``: a missing path, a folder with no Parquet parts, parts whose
    schemas differ, an unreadable Parquet footer.
    """
    if isinstance(source, Table):
        return source
    if is_dask_frame(source):
        return Table(
            "the Dask DataFrame", tuple(str(c) for c in source.columns), (), dask_frame=source
        )
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return _frame_table(source, piece_rows)
    text = os.fspath(source)
    if is_url(text):
        return _url_table(text, storage_options, delimiter, quotechar, piece_rows, csv_block)
    if any(ch in _GLOB_CHARS for ch in text) and not Path(text).exists():
        files = sorted(
            (Path(p) for p in globbing.glob(text, recursive=True) if Path(p).is_file()),
            key=_natural,
        )
        if not files:
            raise AnonlabError(
                f"input: the pattern '{text}' matches no file: check the path", parameter="input"
            )
        return _parquet_table(
            f"the files matching '{text}'", [(str(f), ()) for f in files], piece_rows
        )
    path = Path(text)
    if not path.exists():
        raise AnonlabError(f"input: '{path}' does not exist: check the path", parameter="input")
    if path.is_dir():
        from anonlab.sources import parquet_parts

        parts = parquet_parts(path)
        if not parts:
            raise AnonlabError(
                f"folder '{path}' holds no Parquet files: give a folder "
                "of Parquet parts, a Parquet file or a CSV file",
                parameter="input",
            )
        return _parquet_table(
            f"folder '{path}'", [(str(p), _hive(path, p)) for p in parts], piece_rows
        )
    from anonlab.sources import file_format

    fmt = file_format(path)
    if fmt == "parquet":
        return _parquet_table(f"file '{path}'", [(str(path), ())], piece_rows)
    if fmt == "excel":
        raise AnonlabError(
            f"input: '{path}' is an Excel workbook: the engines read Parquet "
            "and CSV; save the sheet as CSV or Parquet",
            parameter="input",
        )
    return _csv_table(path, delimiter, quotechar, csv_block)


def _natural(path: Path) -> list[Any]:
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.as_posix())]


def _frame_table(frame: pd.DataFrame, piece_rows: int) -> Table:
    names = tuple(str(c) for c in frame.columns)
    _no_repeats(names, "the DataFrame")
    frame = frame.reset_index(drop=True)
    pieces = tuple(
        FramePiece(i, frame.iloc[start : start + piece_rows])
        for i, start in enumerate(range(0, max(frame.shape[0], 1), piece_rows))
    )
    return Table("the DataFrame", names, pieces)


def _no_repeats(names: Sequence[str], where: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise AnonlabError(
                f"input: {where} names the column '{name}' twice: give every column its own name",
                parameter="input",
            )
        seen.add(name)


def _hive(folder: Path, part: Path) -> tuple[tuple[str, str], ...]:
    """The ``key=value`` folder levels between ``folder`` and ``part`` (values URI-decoded,
    as pyarrow's hive partitioning reads them)."""
    return _hive_levels(part.relative_to(folder).parts[:-1])


def _kind(t: pa.DataType) -> Any:
    """A column type with text types made one (``string``; dictionaries by their values)."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.string() if pa.types.is_large_string(t) else t


def _url_table(
    url: str,
    options: StorageOptions | None,
    delimiter: str | None,
    quotechar: str,
    piece_rows: int,
    csv_block: int | None,
) -> Table:
    """The pieces of a file, a folder of Parquet parts or a glob named by URL."""
    from anonlab import urls
    from anonlab.sources import PARQUET_SUFFIXES, file_format

    storage = urls.storage_items(urls.current_storage_options() if options is None else options)
    shown = urls.shown_url(url)
    found = urls.kind(url, dict(storage))
    if found is None and any(ch in _GLOB_CHARS for ch in url):
        matched = sorted(urls.glob(url, dict(storage)), key=_natural_text)
        if not matched:
            raise AnonlabError(
                f"input: the pattern '{shown}' matches no file: check the URL", parameter="input"
            )
        return _parquet_table(
            f"the files matching '{shown}'", [(u, ()) for u in matched], piece_rows, storage
        )
    if found is None:
        raise AnonlabError(f"input: '{shown}' does not exist: check the URL", parameter="input")
    if found == "folder":
        parts = []
        for relative, part in urls.files_under(url, dict(storage)):
            levels = relative.split("/")
            if any(level.startswith((".", "_")) for level in levels):
                continue
            if PurePosixPath(relative).suffix.lower() in PARQUET_SUFFIXES or (
                file_format(part) == "parquet"
            ):
                parts.append((relative, part))
        if not parts:
            raise AnonlabError(
                f"folder '{shown}' holds no Parquet files: give a folder "
                "of Parquet parts, a Parquet file or a CSV file",
                parameter="input",
            )
        parts.sort(key=lambda entry: _natural_text(entry[0]))
        files = [(part, _hive_levels(relative.split("/")[:-1])) for relative, part in parts]
        return _parquet_table(f"folder '{shown}'", files, piece_rows, storage)
    fmt = file_format(url)
    if fmt == "parquet":
        return _parquet_table(f"file '{shown}'", [(url, ())], piece_rows, storage)
    if fmt == "excel":
        raise AnonlabError(
            f"input: '{shown}' is an Excel workbook: the engines read Parquet "
            "and CSV; save the sheet as CSV or Parquet",
            parameter="input",
        )
    with urls.using_storage_options(dict(storage)):
        return _csv_table(url, delimiter, quotechar, csv_block, storage)


def _natural_text(text: str) -> list[Any]:
    """Sort key that orders ``part-2`` before ``part-10``."""
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def _hive_levels(levels: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The ``key=value`` levels among ``levels`` (values URI-decoded, as pyarrow's hive
    partitioning reads them)."""
    pairs = []
    for level in levels:
        key, eq, value = level.partition("=")
        if eq:
            pairs.append((key, unquote(value)))
    return tuple(pairs)


def _read_footer(path: str, storage: tuple[tuple[str, Any], ...]) -> Any:
    """The Parquet metadata of a local file or a URL."""
    import pyarrow.parquet as pq

    if not is_url(path):
        return pq.read_metadata(path)
    with _open_bytes(path, storage) as source:
        return pq.read_metadata(source)


def _parquet_table(
    where: str,
    files: Sequence[tuple[str, tuple[tuple[str, str], ...]]],
    piece_rows: int,
    storage: tuple[tuple[str, Any], ...] = (),
) -> Table:
    """Pieces of Parquet files (each with its hive ``key=value`` levels), their schemas
    checked against the first file's; ``storage``: fsspec's options for URLs."""
    import pyarrow as pa

    pieces: list[Piece] = []
    first: pa.Schema | None = None
    first_keys: tuple[str, ...] = ()
    cast: tuple[tuple[str, Any], ...] = ()
    for path, keys in files:
        try:
            meta = _read_footer(path, storage)
            schema = meta.schema.to_arrow_schema()
        except (pa.ArrowInvalid, OSError) as exc:
            raise AnonlabError(
                f"input: cannot read Parquet part '{path}' ({exc}): is it a Parquet file?",
                parameter="input",
            ) from None
        if first is None:
            first, first_keys = schema, tuple(k for k, _ in keys)
            _no_repeats(list(schema.names) + list(first_keys), where)
        else:
            cast = _check_schema(
                path, files[0][0], schema, first, tuple(k for k, _ in keys), first_keys
            )
        names = tuple(schema.names)
        stored = path if is_url(path) else str(Path(path).absolute())
        for groups in _row_group_runs(meta, piece_rows):
            pieces.append(
                ParquetPiece(
                    len(pieces), stored, names, groups, keys, storage, cast, files[0][0], path
                )
            )
    names = tuple(present(first, "the first Parquet part's schema").names)
    return Table(where, names + first_keys, tuple(pieces))


def _check_schema(
    path: str,
    first_path: str,
    schema: pa.Schema,
    first: pa.Schema,
    keys: tuple[str, ...],
    first_keys: tuple[str, ...],
) -> tuple[tuple[str, Any], ...]:
    """Refuse a part whose columns differ from the first part's, or that stores a column with
    a type Arrow cannot cast to the first part's; the columns it stores with another type than
    the first part's, and the first part's type (text types made ``string``), to cast its
    values to (the one reader's dataset takes the first part's schema and casts the others
    to it)."""
    import pyarrow as pa

    if sorted(schema.names) != sorted(first.names) or keys != first_keys:
        extra = sorted(set(schema.names) - set(first.names))
        lacking = sorted(set(first.names) - set(schema.names))
        what = (
            f"has the column '{extra[0]}' that"
            if extra
            else f"lacks the column '{lacking[0]}' that"
            if lacking
            else "has other hive partition keys than"
        )
        raise AnonlabError(
            f"input: Parquet part '{path}' {what} part '{first_path}' has: "
            "write every part with the same schema",
            parameter="input",
        )
    cast: list[tuple[str, Any]] = []
    for name in first.names:
        a, b = _kind(first.field(name).type), _kind(schema.field(name).type)
        if a.equals(b):
            continue
        try:
            pa.array([], b).cast(a)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise AnonlabError(
                f"input: Parquet part '{path}' stores column '{name}' as {b} "
                f"but part '{first_path}' as {a}, and Arrow cannot cast {b} to {a}: write "
                "every part with the same schema",
                parameter="input",
            ) from None
        cast.append((name, a))
    return tuple(cast)


def _row_group_runs(meta: Any, piece_rows: int) -> list[tuple[int, ...] | None]:
    """Runs of consecutive row groups of about ``piece_rows`` rows (``[None]``: the file is
    one piece)."""
    if meta.num_rows <= piece_rows or meta.num_row_groups <= 1:
        return [None]
    runs: list[tuple[int, ...] | None] = []
    current: list[int] = []
    rows = 0
    for i in range(meta.num_row_groups):
        current.append(i)
        rows += meta.row_group(i).num_rows
        if rows >= piece_rows:
            runs.append(tuple(current))
            current, rows = [], 0
    if current:
        runs.append(tuple(current))
    return runs


def _csv_table(
    path: Path | str,
    delimiter: str | None,
    quotechar: str,
    csv_block: int | None,
    storage: tuple[tuple[str, Any], ...] = (),
) -> Table:
    """Byte-range pieces of a CSV file or URL (one piece when ``csv_block`` is ``None``)."""
    from anonlab.sources import check_names, first_record, sniff_delimiter

    sep = "\t" if delimiter == "\\t" else delimiter or sniff_delimiter(path)
    names = tuple(first_record(path, sep, quotechar))
    if not names:
        raise AnonlabError(
            f"file '{path}' is empty: give a table with a header row", parameter="input"
        )
    check_names(names, f"file '{path}'")
    if isinstance(path, str):  # a URL
        from anonlab.urls import shown_url
        from anonlab.urls import size as url_size

        size, absolute, shown = url_size(path, dict(storage)), path, shown_url(path)
    else:
        size, shown = path.stat().st_size, str(path)
        absolute = str(path.absolute())  # as typed in messages; absolute for the workers
    block = size if csv_block is None else max(1, csv_block)
    pieces = tuple(
        CsvPiece(
            i,
            absolute,
            names,
            start,
            min(size, start + block),
            sep,
            quotechar,
            skip_header=(i == 0),
            storage=storage,
            shown=shown,
        )
        for i, start in enumerate(range(0, max(size, 1), block))
    )
    return Table(f"file '{shown}'", names, pieces)
