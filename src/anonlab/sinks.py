"""Where tables go: CSV, Parquet and Excel files, written to the path given.

These writers write one file and nothing else; :func:`anonlab.io.write_table`
chooses the format from the target and makes the write atomic. Database
tables are written by :mod:`anonlab.database`.

The CSV dialect is the same for every command: a header row, ``,`` between
fields (tab for ``.tsv``), ``"\\n`` at the end of every line, UTF-8 without a
byte order mark, and quotes only around a value that needs them (one holding
the delimiter, a quote, a line break; or the empty value of a one-column
table, which would otherwise be a blank line), with quotes inside doubled,
as :data:`csv.QUOTE_MINIMAL` writes. Values are printed by the rule of
:mod:`anonlab.tabletext`, so a written CSV reads back as the same text.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from anonlab.database import DatabaseTarget, is_database_url
from anonlab.errors import AnonlabError
from anonlab.sources import EXCEL_SUFFIXES, PARQUET_SUFFIXES
from anonlab.tabletext import arrow_from_frame, text_array

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

CSV_BATCH_ROWS = 1 << 16  # rows rendered at once by one thread
EXCEL_MAX_ROWS = 1_048_576  # rows of an Excel sheet, the header included
EXCEL_MAX_COLUMNS = 16_384
EXCEL_MAX_TEXT = 32_767  # characters in one Excel cell
EXCEL_EXACT_INT = 2**53  # larger integers are stored as text: Excel numbers are doubles
_SHEET_FORBIDDEN = set("[]:*?/\\")
SAFE_DELIMITERS = frozenset(",;|\t")  # never part of a printed number, date or boolean


def output_format(target: str | os.PathLike[str] | DatabaseTarget) -> str:
    """The format a target is written in: ``csv``, ``tsv``, ``parquet``, ``excel`` or ``database``.

    Chosen by the extension: ``.parquet``/``.pq``, ``.xlsx``/``.xlsm``,
    ``.tsv``/``.tab`` (tab-separated); any other file is CSV.
    """
    if is_database_url(target):
        return "database"
    suffix = Path(os.fspath(target)).suffix.lower()  # type: ignore[arg-type]
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    if suffix in EXCEL_SUFFIXES:
        return "excel"
    if suffix == ".xls":
        raise AnonlabError(
            f"output '{target}': the old Excel format .xls cannot be written: name it .xlsx",
            parameter="output",
        )
    if suffix in {".tsv", ".tab"}:
        return "tsv"
    return "csv"


def to_arrow(frame: pd.DataFrame | pa.Table) -> pa.Table:
    """The table to write as Arrow (a DataFrame's index is not written)."""
    table = frame if isinstance(frame, pa.Table) else arrow_from_frame(frame)
    seen: set[str] = set()
    for name in table.column_names:
        if name in seen:
            raise AnonlabError(
                f"the table names the column '{name}' twice: give every column "
                "its own name before writing"
            )
        seen.add(name)
    return table


def write_file(
    table: pa.Table, path: Path, fmt: str, *, delimiter: str | None = None, sheet: str | None = None
) -> None:
    """Write ``table`` to ``path`` in format ``fmt`` (a database target stages as Parquet)."""
    if fmt in {"csv", "tsv"}:
        write_csv(table, path, delimiter or ("\t" if fmt == "tsv" else ","))
    elif fmt in {"parquet", "database"}:
        write_parquet(table, path)
    elif fmt == "excel":
        write_excel(table, path, sheet)
    else:
        raise ValueError(f"unknown table format {fmt!r}")


def write_parquet(table: pa.Table, path: Path) -> None:
    """Write ``table`` as one Parquet file (Snappy-compressed, the types kept)."""
    import pyarrow.parquet as pq

    pq.write_table(table, path)


def header_line(names: list[str], delimiter: str) -> bytes:
    """The CSV header row, quoted as :data:`csv.QUOTE_MINIMAL` quotes."""
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, lineterminator="\n").writerow(names)
    return buf.getvalue().encode("utf-8")


def check_delimiter(delimiter: str) -> None:
    """A delimiter is one character other than a quote or a line break."""
    if len(delimiter) != 1 or delimiter in '"\r\n':
        raise AnonlabError(
            f"delimiter {delimiter!r} must be one character other than a quote "
            "or a line break (for a tab, give a real tab character)",
            parameter="delimiter",
        )


def _regex_class(chars: str) -> str:
    return "[" + "".join(f"\\x{{{ord(c):02x}}}" for c in chars) + "]"


def _quoted(column: pa.Array, pattern: str, alone: bool) -> pa.Array:
    """Text ``column`` with quotes around the values that need them, quotes inside doubled."""
    needs = pc.match_substring_regex(column, pattern)
    if alone:  # one column: an empty value would be a blank line, which readers skip
        needs = pc.or_(needs, pc.equal(column, ""))
    if not pc.any(needs).as_py():
        return column
    quote = pa.scalar('"', column.type)
    escaped = pc.replace_substring(column, '"', '""')
    wrapped = pc.binary_join_element_wise(quote, escaped, quote, pa.scalar("", column.type))
    return pc.if_else(needs, wrapped, column)


def _never_quoted(kind: pa.DataType, delimiter: str) -> bool:
    """Whether no value of type ``kind`` can print with a quote, line break or ``delimiter``.

    Numbers, booleans, dates and times print with digits, signs, ``.``,
    ``e``, ``:``, ``-``, spaces and words such as ``nan``/``true``/``Z``.
    """
    printable = (
        pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_decimal(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_temporal(kind)
    )
    return printable and delimiter in SAFE_DELIMITERS


def _plain_dictionary(column: pa.Array) -> bool:
    """Whether ``column`` is a dictionary array (a categorical column) without a missing value."""
    return pa.types.is_dictionary(column.type) and not column.null_count


def _dictionary_fields(column: pa.DictionaryArray, pattern: str, alone: bool) -> pa.Array:
    """The CSV fields of a dictionary column: each distinct value printed and quoted once,
    then taken for every row by its code (the same fields as printing every row)."""
    fields = _quoted(text_array(column.dictionary).cast(pa.large_string()), pattern, alone)
    return fields.take(column.indices)


def _render(batch: pa.RecordBatch, delimiter: str) -> pa.Buffer:
    """The CSV lines of ``batch`` as one buffer (vectorised: no Python loop over rows)."""
    return _joined(_render_lines(batch, delimiter))


def _render_lines(batch: pa.RecordBatch, delimiter: str) -> pa.Array:
    """Each row of ``batch`` as its CSV line (``large_string``, each ending in ``\\n``)."""
    pattern = _regex_class('"' + delimiter + "\r\n")
    alone = batch.num_columns == 1
    kind = pa.large_string()
    columns = [
        _dictionary_fields(c, pattern, alone)
        if _plain_dictionary(c)
        else text_array(c).cast(kind)
        if _never_quoted(c.type, delimiter) and not alone
        else _quoted(text_array(c).cast(kind), pattern, alone)
        for c in batch.columns
    ]
    lines = pc.binary_join_element_wise(*columns, pa.scalar(delimiter, kind))
    return pc.binary_join_element_wise(lines, pa.scalar("", kind), pa.scalar("\n", kind))


def _joined(lines: pa.Array) -> pa.Buffer:
    """The texts of a ``large_string`` array one after another, as one buffer (no copy)."""
    offsets = np.frombuffer(
        lines.buffers()[1], dtype=np.int64, count=len(lines) + 1, offset=lines.offset * 8
    )
    data = lines.buffers()[2]
    return data.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))


#: the most rows of one distinct-row rendering per row of the table (above it, render all)
DISTINCT_SHARE = 0.5


def _distinct_rows(table: pa.Table) -> tuple[pa.RecordBatch, NDArray[np.int64]] | None:
    """The distinct rows of a table of dictionary columns, and each row's distinct row.

    Only for a table longer than one batch whose every column is one chunk of a
    dictionary array without a missing value (a release built from codes): the
    rows' codes are combined into one key by mixed radix,
    ``key = (...(c_0 * K_1 + c_1) * K_2 + ...) + c_{m-1}`` with ``K_i`` column
    ``i``'s dictionary size, and the keys factorized (in order of first
    appearance); the distinct keys are split back into codes. A line of CSV
    depends on its row's values only, so rendering each distinct row once and
    taking its line for every row gives the same bytes. ``None`` (render every
    row) otherwise, or when the key space exceeds int64 or more than
    :data:`DISTINCT_SHARE` of the rows are distinct.
    """
    from anonlab.grouping import MAX_KEY, factorize_int64, pack_codes, unpack_codes

    n = table.num_rows
    if n <= CSV_BATCH_ROWS or table.num_columns == 0:
        return None
    if any(c.num_chunks != 1 for c in table.columns):
        return None
    columns = [c.chunk(0) for c in table.columns]
    if not all(_plain_dictionary(c) for c in columns):
        return None
    sizes = [max(len(c.dictionary), 1) for c in columns]
    if math.prod(sizes) > MAX_KEY:
        return None
    key = pack_codes([c.indices.to_numpy(zero_copy_only=False) for c in columns], sizes)
    inverse, uniques = factorize_int64(key, size_hint=1 << 12)
    del key
    if len(uniques) > DISTINCT_SHARE * n:
        return None
    codes = [
        pa.DictionaryArray.from_arrays(
            pa.array(code.astype(column.indices.type.to_pandas_dtype())), column.dictionary
        )
        for column, code in zip(columns, unpack_codes(uniques, sizes), strict=True)
    ]
    batch = pa.RecordBatch.from_arrays(codes, names=table.column_names)
    return batch, inverse


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _in_order(
    render: Callable[[pa.RecordBatch], pa.Buffer], batches: Iterator[pa.RecordBatch], workers: int
) -> Iterator[pa.Buffer]:
    """``render`` each batch on ``workers`` threads, yielding results in order.

    At most ``2 * workers`` batches are in flight, so memory stays bounded
    whatever the table's length (Arrow's kernels release the GIL).
    """
    with ThreadPoolExecutor(workers) as pool:
        pending: deque[Future[pa.Buffer]] = deque()
        for batch in batches:
            pending.append(pool.submit(render, batch))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def write_csv(table: pa.Table, path: Path, delimiter: str = ",") -> None:
    """Write ``table`` as CSV in the one dialect (see the module's docstring)."""
    check_delimiter(delimiter)
    with path.open("wb") as fh:
        fh.write(header_line(table.column_names, delimiter))
        if table.num_columns == 0 or table.num_rows == 0:
            return
        write_csv_rows(table, fh, delimiter)


def write_csv_rows(table: pa.Table, fh: BinaryIO, delimiter: str) -> None:
    """The rows of ``table`` as CSV lines, rendered by several threads when it is long.

    A long table of dictionary columns whose rows repeat (a generalized release)
    has each distinct row rendered once (:func:`_distinct_rows`).
    """
    distinct = _distinct_rows(table)
    if distinct is not None:
        rows, inverse = distinct
        lines = _render_lines(rows, delimiter)
        for start in range(0, len(inverse), CSV_BATCH_ROWS):
            fh.write(_joined(lines.take(inverse[start : start + CSV_BATCH_ROWS])))
        return
    batches = iter(table.to_batches(max_chunksize=CSV_BATCH_ROWS))
    workers = min(_usable_cpus(), 4, -(-table.num_rows // CSV_BATCH_ROWS))
    if workers <= 1:
        for batch in batches:
            fh.write(_render(batch, delimiter))
        return
    for buffer in _in_order(lambda b: _render(b, delimiter), batches, workers):
        fh.write(buffer)


def _sheet_name(sheet: str | None) -> str:
    name = "Sheet1" if sheet is None else sheet
    if not name or len(name) > 31 or set(name) & _SHEET_FORBIDDEN:
        raise AnonlabError(
            f"sheet name '{name}' is not allowed by Excel: use 1 to 31 "
            "characters without [ ] : * ? / \\",
            parameter="sheet",
        )
    return name


def _excel_values(column: pa.Array) -> list[Any]:
    """One column as Python values Excel can hold (text where it cannot)."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        column = column.cast(kind.value_type)
        kind = kind.value_type
    plain = (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_decimal(kind)
        or pa.types.is_date(kind)
        or (pa.types.is_timestamp(kind) and kind.tz is None)
    )
    if pa.types.is_integer(kind):
        return [v if v is None or abs(v) < EXCEL_EXACT_INT else str(v) for v in column.to_pylist()]
    if not plain:
        return [v or None for v in text_array(column).to_pylist()]
    values: list[Any] = column.to_pylist()
    if pa.types.is_floating(kind):
        return [
            None if v is None or math.isnan(v) else v if math.isfinite(v) else str(v)
            for v in values
        ]
    return values


def write_excel(table: pa.Table, path: Path, sheet: str | None = None) -> None:
    """Write ``table`` as one sheet of an ``.xlsx`` workbook (header in the first row).

    Text is stored as text (``01234`` keeps its zero, and a value beginning
    with ``=`` is never a formula), numbers as numbers, missing values as
    empty cells.
    """
    from openpyxl import Workbook  # type: ignore[import-untyped]
    from openpyxl.cell import WriteOnlyCell  # type: ignore[import-untyped]
    from openpyxl.utils.exceptions import IllegalCharacterError  # type: ignore[import-untyped]

    name = _sheet_name(sheet)
    if table.num_rows + 1 > EXCEL_MAX_ROWS or table.num_columns > EXCEL_MAX_COLUMNS:
        raise AnonlabError(
            f"the table has {table.num_rows} rows and {table.num_columns} "
            f"columns: an Excel sheet holds at most {EXCEL_MAX_ROWS - 1} rows "
            f"and {EXCEL_MAX_COLUMNS} columns; write CSV or Parquet instead"
        )
    book = Workbook(write_only=True)
    ws = book.create_sheet(name)

    def cell(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if len(value) > EXCEL_MAX_TEXT:
            raise AnonlabError(
                f"a value of {len(value)} characters is longer than an Excel "
                f"cell holds ({EXCEL_MAX_TEXT}): write CSV or Parquet instead"
            )
        if value.startswith("="):
            text = WriteOnlyCell(ws, value=value)
            text.data_type = "s"  # text, not a formula
            return text
        return value

    row_number = 1
    try:
        ws.append([cell(n) for n in table.column_names])
        for batch in table.to_batches(max_chunksize=CSV_BATCH_ROWS):
            columns = [_excel_values(c) for c in batch.columns]
            for row in zip(*columns, strict=True):
                row_number += 1
                ws.append([cell(v) for v in row])
    except IllegalCharacterError:
        raise AnonlabError(
            f"row {row_number} of the table holds a control character that "
            "Excel cannot store: remove it or write CSV or Parquet "
            "instead"
        ) from None
    book.save(path)
