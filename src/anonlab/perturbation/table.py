"""Reading and writing the table to perturb, in Arrow from end to end.

A CSV is parsed once by pyarrow's multi-threaded reader with the chosen
columns typed by inference (integer or float) and every other column kept as
text, so pass-through columns such as ZIP codes keep their exact spelling.
Parquet files and DataFrames keep their own types. The chosen columns go to
one Fortran-ordered float array (filled chunk by chunk: one copy); the release
replaces them in the Arrow table without a copy and is written by pyarrow,
never through pandas. Doubles are printed in their shortest round-trip form
(pyarrow formats them as Python's ``repr`` does), so a release read back gives
exactly the doubles written. A large CSV release is printed in contiguous row
ranges by one thread per usable CPU, each into its own file, and the parts are
joined by the kernel (``copy_file_range``). pandas is imported only when a
DataFrame is given.
"""

from __future__ import annotations

import csv
import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.io import PathLike, atomic_write, read_table, sniff_delimiter

if TYPE_CHECKING:
    import pandas as pd

FloatArray = NDArray[np.float64]
CSV_PART_ROWS = 100_000  # a CSV release is split across threads only above this many rows


def is_dataframe(source: object) -> bool:
    """Whether ``source`` is a pandas DataFrame (without importing pandas for a path)."""
    if "pandas" not in sys.modules:
        return False  # no DataFrame can exist before pandas is imported
    import pandas as pd

    return isinstance(source, pd.DataFrame)


def split_columns(text: str | Sequence[str] | None) -> list[str] | None:
    """``"a,b,c"`` (or a list of such strings) as a list of names; ``None`` stays ``None``."""
    from anonlab.settings import split_names

    return split_names(text) or None


def _header(path: Path, sep: str) -> list[str]:
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            row = next(csv.reader(fh, delimiter=sep), None)
    except UnicodeDecodeError as exc:
        raise AnonlabError(f"file '{path}' is not UTF-8 text: re-save it as UTF-8") from exc
    if not row:
        raise AnonlabError(f"file '{path}' is empty: give a table with a header row")
    return row


def read_perturb_table(
    source: PathLike | pd.DataFrame, columns: Sequence[str] | None,
    delimiter: str | None = None,
) -> pa.Table:
    """Read ``source`` as an Arrow table with the chosen columns numeric (all when ``None``).

    A DataFrame is converted as it is; a Parquet file keeps its types; a CSV
    has the chosen columns' types inferred and every other column read as text.
    """
    if delimiter is not None and len(delimiter) != 1:
        raise AnonlabError(f"--delimiter '{delimiter}' must be one character (for a tab, "
                           "give a real tab, e.g. $'\\t' in bash)")
    if is_dataframe(source):
        try:
            return pa.Table.from_pandas(source, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise AnonlabError(f"the table cannot be converted ({exc}): give columns of one "
                               "type each") from None
    path = Path(cast(PathLike, source))
    if not path.exists() or path.is_dir():
        read_table(path)  # raises the common one-line error
    if path.suffix.lower() in {".parquet", ".pq"}:
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path)
        except Exception as exc:  # pyarrow raises many types
            raise AnonlabError(f"cannot read Parquet file '{path}': {exc}") from exc
    sep = delimiter if delimiter is not None else sniff_delimiter(path)
    names = _header(path, sep)
    chosen = set(names if columns is None else columns)
    text = {n: pa.string() for n in names if n not in chosen}
    parse = pacsv.ParseOptions(delimiter=sep)
    typed = _sampled_types(path, parse, chosen)
    table = None
    if typed:  # the sample's types for the chosen columns: no inference on the whole file
        try:
            table = pacsv.read_csv(path, parse_options=parse, convert_options=pacsv.ConvertOptions(
                column_types={**text, **typed}, strings_can_be_null=False))
        except pa.ArrowInvalid:
            table = None  # a later value does not fit the sample's type: infer on everything
    if table is None:
        try:
            table = pacsv.read_csv(path, parse_options=parse, convert_options=pacsv.ConvertOptions(
                column_types=text, strings_can_be_null=False))
        except pa.ArrowInvalid as exc:
            msg = str(exc).strip().splitlines()[0]
            raise AnonlabError(f"cannot read '{path}' ({msg}): every row needs the same "
                               f"number of fields; check the delimiter (now '{sep}')") from None
    if table.num_rows == 0:
        raise AnonlabError(f"file '{path}' has a header but no rows: give at least one record")
    return table


_SAMPLE_BYTES = 1 << 20


def _sampled_types(path: Path, parse: pacsv.ParseOptions, chosen: set[str]
                   ) -> dict[str, pa.DataType]:
    """Integer/float types of the chosen columns inferred from the file's first megabyte.

    Empty when the sample does not settle them (a chosen column is not numeric
    there, or the sample is the whole file anyway).
    """
    with path.open("rb") as fh:
        head = fh.read(_SAMPLE_BYTES + 1)
    if len(head) <= _SAMPLE_BYTES:
        return {}
    cut = head.rfind(b"\n", 0, _SAMPLE_BYTES)
    if cut <= 0:
        return {}
    try:
        sample = pacsv.read_csv(io.BytesIO(head[: cut + 1]), parse_options=parse)
    except pa.ArrowInvalid:
        return {}
    types: dict[str, pa.DataType] = {}
    for name in chosen:
        if name not in sample.column_names:
            return {}
        kind = sample.schema.field(name).type
        if pa.types.is_integer(kind):
            types[name] = pa.int64()
        elif pa.types.is_floating(kind):
            types[name] = pa.float64()
        else:
            return {}
    return types


@dataclass(frozen=True)
class NumericColumns:
    """The chosen columns as an ``N x d`` float array, and which of them hold integers."""

    names: list[str]
    values: FloatArray
    integer: list[bool]


def _check_names(names: list[str], available: list[str]) -> None:
    if len(set(available)) != len(available):
        from collections import Counter

        counts = Counter(available)
        repeated = [n for n in names if counts[n] > 1]
        if repeated:
            raise AnonlabError(f"column '{repeated[0]}' appears twice in the header of the "
                               "table: rename one of them")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise AnonlabError(f"column '{dup}' is named twice in --columns: name each once")
    if len(names) < 2:
        raise AnonlabError(f"{len(names)} column(s) chosen: an orthogonal transform needs at "
                           "least 2 numeric columns (--columns a,b,...)")
    missing = [n for n in names if n not in available]
    if missing:
        raise AnonlabError(f"unknown column '{missing[0]}': the table has "
                           f"{', '.join(available)}")


def _not_numeric(name: str) -> AnonlabError:
    return AnonlabError(f"column '{name}' is not numeric: choose numeric columns with "
                        "--columns (z-scores need numbers)")


def _check_values(names: list[str], values: FloatArray, allow_constant: bool) -> None:
    if not np.isfinite(values).all():
        bad = ~np.isfinite(values)
        col = int(np.argmax(bad.any(axis=0)))
        row = int(np.argmax(bad[:, col]))
        raise AnonlabError(f"column '{names[col]}' has a missing or infinite value (record "
                           f"{row + 1}): fill or drop such records first")
    if not allow_constant:
        spread = values.max(axis=0) - values.min(axis=0)
        if np.any(spread == 0):
            col = int(np.argmax(spread == 0))
            raise AnonlabError(f"column '{names[col]}' is constant: a z-score is impossible; "
                               "leave it out of --columns")


def numeric_columns(table: pa.Table | pd.DataFrame, columns: Sequence[str] | None,
                    *, allow_constant: bool = False) -> NumericColumns:
    """Check and extract the chosen columns: present, numeric, no NaN, not constant, >= 2.

    The values come out in Fortran order (each column contiguous), copied
    once, chunk by chunk, from the Arrow buffers.
    """
    frame = is_dataframe(table)
    available = [str(c) for c in (table.columns if frame else table.column_names)]
    names = available if columns is None else [str(c) for c in columns]
    _check_names(names, available)
    arrow: pa.Table = _arrow_columns(table, names) if frame else table
    if arrow.num_rows == 0:
        raise AnonlabError("the table has no records: give at least one record")
    values = np.empty((arrow.num_rows, len(names)), dtype=np.float64, order="F")
    integer = []
    for j, n in enumerate(names):
        col = arrow.column(n)
        kind = col.type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if pa.types.is_decimal(kind):  # e.g. money in a database's Parquet export
            if pa.types.is_dictionary(col.type):
                col = col.cast(kind)
            col, kind = col.cast(pa.float64()), pa.float64()
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            raise _not_numeric(n)
        integer.append(pa.types.is_integer(kind))
        if col.null_count:
            row = int(np.argmax(col.is_null().to_numpy(zero_copy_only=False)))
            raise AnonlabError(f"column '{n}' has a missing or infinite value (record "
                               f"{row + 1}): fill or drop such records first")
        _fill(values[:, j], col)
    _check_values(names, values, allow_constant)
    return NumericColumns(names, values, integer)


def _fill(target: FloatArray, column: pa.ChunkedArray) -> None:
    """Copy a numeric column into ``target`` chunk by chunk (no concatenated copy)."""
    start = 0
    for chunk in column.chunks:
        if pa.types.is_dictionary(chunk.type):
            chunk = chunk.dictionary_decode()
        stop = start + len(chunk)
        target[start:stop] = _chunk_view(chunk)
        start = stop


_ARROW_FLOATS = {"halffloat": "float16", "float": "float32", "double": "float64"}


def _chunk_view(chunk: pa.Array) -> np.ndarray:
    """A NumPy view of a null-free integer/float chunk's data buffer.

    ``pa.Array.to_numpy`` would import pandas (a quarter of a second); the
    view needs only the buffer, the type's width and the chunk's offset.
    """
    kind = np.dtype(_ARROW_FLOATS.get(str(chunk.type), str(chunk.type)))
    data = chunk.buffers()[1]
    return np.frombuffer(data, dtype=kind, count=len(chunk), offset=chunk.offset * kind.itemsize)



def frame_labels(frame: Any) -> dict[str, Any]:
    """Each DataFrame column label by its text (labels may be integers, as NumPy data gives)."""
    return {str(c): c for c in frame.columns}


def _arrow_columns(frame: Any, names: list[str]) -> pa.Table:
    arrays = []
    labels = frame_labels(frame)
    for n in names:
        try:
            arrays.append(pa.array(frame[labels[n]], from_pandas=True))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            raise _not_numeric(n) from None
    return pa.table(arrays, names=names)


def with_columns(table: pa.Table, names: Sequence[str], columns: Sequence[np.ndarray]
                 ) -> pa.Table:
    """``table`` with the named columns replaced (same names, same order).

    Contiguous float64/int64 columns are wrapped without a copy; the arrays
    must stay alive as long as the table.
    """
    for name, values in zip(names, columns, strict=True):
        index = table.column_names.index(name)
        table = table.set_column(index, name, _arrow_array(values))
    return table


def _arrow_array(values: np.ndarray) -> pa.Array:
    kinds = {np.dtype(np.float64): pa.float64(), np.dtype(np.int64): pa.int64()}
    kind = kinds.get(values.dtype)
    if kind is not None and values.ndim == 1 and values.flags.c_contiguous:
        return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])
    return pa.array(values)


def output_delimiter(source: PathLike | pd.DataFrame, delimiter: str | None) -> str:
    """The delimiter of a CSV input (given or sniffed), so the release keeps it; else ','."""
    if delimiter is not None:
        return delimiter
    if is_dataframe(source):
        return ","
    path = Path(cast(PathLike, source))
    if path.suffix.lower() in {".parquet", ".pq"} or not path.is_file():
        return ","
    return sniff_delimiter(path)


def write_release(table: pa.Table, path: PathLike, delimiter: str = ",") -> None:
    """Write an Arrow table atomically: Parquet for ``.parquet``/``.pq``, CSV otherwise.

    The CSV has a plain header row and quotes only when a value needs it, as
    :func:`anonlab.io.write_table` writes; doubles are printed in shortest
    round-trip form.
    """
    target = Path(path)
    if target.suffix.lower() in {".parquet", ".pq"}:
        import pyarrow.parquet as pq

        atomic_write(target, lambda tmp: pq.write_table(table, tmp))
        return
    plain = pa.table([c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c
                      for c in table.columns], names=table.column_names)
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, lineterminator="\n").writerow(table.column_names)
    header = buf.getvalue().encode("utf-8")

    def write_csv(tmp: Path) -> None:
        for style in ("none", "needed"):  # plain values unless one needs quotes
            options = pacsv.WriteOptions(include_header=False, quoting_style=style,
                                         delimiter=delimiter)
            try:
                write_csv_parts(plain, tmp, header, options)
                return
            except pa.ArrowInvalid:
                if style == "needed":
                    raise

    atomic_write(target, write_csv)


def usable_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def write_csv_parts(table: pa.Table, path: Path, header: bytes, options: pacsv.WriteOptions,
                    parts: int | None = None) -> None:
    """``header`` then the rows of ``table`` as CSV, printed by ``parts`` threads at once.

    Printing doubles dominates the cost of a large release and pyarrow's
    writer runs on one thread without the GIL; so each thread prints a
    contiguous range of rows into its own file, and the parts are appended to
    the first in order. The bytes are those of one ``write_csv`` call.
    """
    count = parts if parts is not None else usable_cpus()
    count = max(1, min(count, table.num_rows // CSV_PART_ROWS))
    bounds = [table.num_rows * i // count for i in range(count + 1)]
    files = [path] + [path.with_name(f"{path.name}.part{i}") for i in range(1, count)]

    def print_part(i: int) -> None:
        with files[i].open("ab" if i == 0 else "wb") as fh:
            pacsv.write_csv(table.slice(bounds[i], bounds[i + 1] - bounds[i]), fh,
                            write_options=options)

    path.write_bytes(header)
    try:
        if count == 1:
            print_part(0)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(count) as pool:
            for done in [pool.submit(print_part, i) for i in range(count)]:
                done.result()
        with path.open("r+b") as out:
            for part in files[1:]:
                with part.open("rb") as src:
                    _append(src, out)
    finally:
        for part in files[1:]:
            part.unlink(missing_ok=True)


def _append(src: Any, out: Any) -> None:
    """Append the whole of file ``src`` to ``out`` (in the kernel when it can)."""
    import shutil

    end = out.seek(0, os.SEEK_END)
    size = os.fstat(src.fileno()).st_size
    done = 0
    try:
        while done < size:
            moved = os.copy_file_range(src.fileno(), out.fileno(), size - done,
                                       offset_src=done, offset_dst=end + done)
            if moved == 0:
                break
            done += moved
    except (AttributeError, OSError):
        pass  # no in-kernel copy here: copy the rest through Python
    out.seek(end + done)
    src.seek(done)
    shutil.copyfileobj(src, out, 1 << 20)
