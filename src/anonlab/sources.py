"""Where tables come from: CSV, Parquet (a file or a partitioned folder) and Excel files.

Each reader returns an Arrow table; :func:`anonlab.io.read_table` chooses the
reader, turns the values into text by the rule of :mod:`anonlab.tabletext`
(``dtype=str``) and gives the one-line errors. Database tables are read by
:mod:`anonlab.database`.

The format of a file follows its extension (``.parquet``/``.pq``,
``.xlsx``/``.xlsm``); any other file is recognised by its first bytes
(Parquet files begin with ``PAR1``, Excel workbooks are zip archives that
begin with ``PK``) and read as CSV otherwise, so a staged temporary file
(``.release.csv.anonlab-123-ab12cd34.tmp``) reads as what it holds.

pyarrow is imported when a table is read, not with this module, so that
sniffing a delimiter stays cheap.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Collection, Sequence
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any, BinaryIO

from anonlab.errors import AnonlabError, first_line
from anonlab.paths import is_url

if TYPE_CHECKING:
    import pyarrow as pa

PARQUET_SUFFIXES = frozenset({".parquet", ".pq"})
EXCEL_SUFFIXES = frozenset({".xlsx", ".xlsm"})
DELIMITERS = ",;\t|"
CSV_BLOCK = 1 << 20  # pyarrow's block; a longer record retries with larger blocks
MAX_CSV_BLOCK = 1 << 30
SNIFF_LINES = 50
SNIFF_CHARS = 1 << 16


def _opened(path: Path | str, text: bool) -> IO[Any]:
    """A local file or a URL (:mod:`anonlab.urls`) opened for reading: UTF-8 text (a byte
    order mark skipped, line ends kept) or bytes."""
    if isinstance(path, str) and is_url(path):
        from anonlab import urls

        return urls.open_text(path) if text else urls.open_binary(path)
    local = Path(path)
    return local.open(encoding="utf-8-sig", newline="") if text else local.open("rb")


def file_format(path: Path | str) -> str:
    """``"parquet"``, ``"excel"`` or ``"csv"``: by extension, else by the file's first bytes
    (``path`` a local file, or a URL)."""
    suffix = PurePosixPath(str(path)).suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    if suffix in EXCEL_SUFFIXES:
        return "excel"
    if suffix == ".xls":
        raise AnonlabError(
            f"file '{path}' is an old Excel 97-2003 workbook (.xls): open it in "
            "a spreadsheet program and save it as .xlsx or .csv"
        )
    with _opened(path, text=False) as fh:
        magic = fh.read(4)
    if magic == b"PAR1":
        return "parquet"
    if magic == b"PK\x03\x04":
        return "excel"
    return "csv"


def _not_utf8(path: Path | str) -> AnonlabError:
    return AnonlabError(f"file '{path}' is not UTF-8 text: re-save it as UTF-8")


def _head(path: Path | str) -> list[str]:
    """The first :data:`SNIFF_LINES` whole lines of a text file, within :data:`SNIFF_CHARS`."""
    lines: list[str] = []
    size = 0
    try:
        with _opened(path, text=True) as fh:
            for line in fh:
                if lines and size + len(line) > SNIFF_CHARS:
                    break
                lines.append(line)
                size += len(line)
                if len(lines) >= SNIFF_LINES:
                    break
    except UnicodeDecodeError as exc:
        raise _not_utf8(path) from exc
    return lines


def sniff_delimiter(path: Path | str) -> str:
    """Guess the delimiter of a CSV file: ``,`` ``;`` tab or ``|``.

    :class:`csv.Sniffer` looks at the first lines (a delimiter that occurs
    equally often on every line wins); when it cannot decide, or picks a
    character absent from the header, the character most frequent on the
    first line wins, and ``,`` when none occurs.
    """
    lines = _head(path if isinstance(path, str) and is_url(path) else Path(path))
    first = lines[0] if lines else ""
    if len(first) <= SNIFF_CHARS:
        try:
            found = csv.Sniffer().sniff("".join(lines), delimiters=DELIMITERS).delimiter
        except csv.Error:
            found = ""
        if found and found in first:
            return found
    counts = {d: first.count(d) for d in DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def first_record(path: Path | str, sep: str, quotechar: str) -> list[str]:
    """The first non-blank record of a CSV file (or URL), as :mod:`csv` reads it (``[]``:
    none)."""
    try:
        with _opened(path, text=True) as fh:
            return next((r for r in csv.reader(fh, delimiter=sep, quotechar=quotechar) if r), [])
    except UnicodeDecodeError as exc:
        raise _not_utf8(path) from exc
    except csv.Error as exc:  # e.g. a header longer than csv's field limit
        raise AnonlabError(
            f"file '{path}' has a malformed first line ({exc}): check the "
            f"delimiter (now '{sep}') and the quoting"
        ) from None


def check_names(names: Sequence[str], where: str) -> None:
    """Refuse a header that names a column twice (pandas would rename it silently)."""
    seen: set[str] = set()
    for name in (n.strip() for n in names):
        if name in seen:
            raise AnonlabError(
                f"{where} names the column '{name}' twice in its header: give "
                "every column its own name"
            )
        seen.add(name)


def read_csv_text(
    path: Path,
    sep: str,
    quotechar: str,
    header: bool,
    doubles: Collection[str] = (),
    dictionary: bool = False,
    repeated: bool = False,
) -> pa.Table:
    """A CSV file as an Arrow table of strings (empty fields are ``""``, never null).

    pyarrow parses the file in blocks on all cores. A record longer than a
    block is retried with blocks 16 times larger (up to 1 GiB), and a parse
    error is retried once with line breaks allowed inside quoted values
    (slower, so not the first try).

    The columns named in ``doubles`` are parsed to ``float64`` by pyarrow
    while it reads (the same correctly rounded parser as its cast from text,
    spaces around a number allowed), so their text is never stored; a field
    that is not a number, or empty, is an error naming the column.
    With ``dictionary`` the text columns are parsed straight into dictionary
    arrays (the distinct texts and a code per row), the header row skipped
    like that of a table with such columns, so that no header name enters a
    dictionary. ``repeated`` (with ``dictionary``, no ``doubles``): records expected to
    repeat, each distinct line parsed once where lines are records
    (:func:`anonlab.csvstream.read_repeated_csv`).
    """
    record = first_record(path, sep, quotechar)
    if not record:
        raise AnonlabError(f"file '{path}' is empty: give a table with a header row")
    if header:
        check_names(record, f"file '{path}'")
    names = record if header else [str(i) for i in range(len(record))]
    typed = [i for i, name in enumerate(names) if name in doubles]
    skipped = header and (bool(typed) or dictionary)
    table = _parse_csv(
        path,
        sep,
        quotechar,
        names,
        typed,
        skip=skipped,
        dictionary=dictionary,
        repeated=repeated and not typed,
    )
    if typed or dictionary:  # any header was skipped: its names are the ones csv read above
        return table.rename_columns(list(names))
    return _named(table, header)


def _parse_csv(
    path: Path,
    sep: str,
    quotechar: str,
    names: Sequence[str],
    typed: Sequence[int],
    skip: bool,
    dictionary: bool = False,
    repeated: bool = False,
) -> pa.Table:
    """pyarrow's parse of the file: columns ``f0``, ``f1``..., text except ``typed`` (doubles).

    ``skip`` leaves out the first record (the header); otherwise it is row 0.
    ``dictionary``: text columns as dictionary arrays of strings, the file streamed block
    by block (:func:`anonlab.csvstream.read_dictionary_csv`), never held whole; with
    ``repeated`` each distinct line parsed once where that applies
    (:func:`anonlab.csvstream.read_repeated_csv`).
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from anonlab.csvstream import STREAM_BLOCK, read_dictionary_csv, read_repeated_csv

    text = pa.dictionary(pa.int32(), pa.string()) if dictionary else pa.string()
    types = {f"f{i}": pa.float64() if i in typed else text for i in range(len(names))}
    convert = pacsv.ConvertOptions(
        column_types=types,
        null_values=[],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    if dictionary and repeated:
        once = read_repeated_csv(
            path,
            skip,
            quotechar,
            pacsv.ReadOptions(block_size=STREAM_BLOCK, autogenerate_column_names=True),
            pacsv.ParseOptions(delimiter=sep, quote_char=quotechar),
            convert,
        )
        if once is not None:
            return once
    read = read_dictionary_csv if dictionary else pacsv.read_csv
    block, newlines = STREAM_BLOCK if dictionary else CSV_BLOCK, False
    while True:
        try:
            return read(
                path,
                read_options=pacsv.ReadOptions(
                    block_size=block,
                    autogenerate_column_names=True,
                    skip_rows_after_names=int(skip),
                ),
                parse_options=pacsv.ParseOptions(
                    delimiter=sep, quote_char=quotechar, newlines_in_values=newlines
                ),
                convert_options=convert,
            )
        except pa.ArrowInvalid as exc:
            text = str(exc)
            if "straddl" in text and block < MAX_CSV_BLOCK:
                block = min(block * 16, MAX_CSV_BLOCK)
                continue
            if "parse error" in text and not newlines:
                newlines = True
                continue
            if "conversion error to double" in text:
                raise _not_doubles(path, names, text) from None
            raise _csv_error(path, sep, exc) from None


def _not_doubles(path: Path, names: Sequence[str], text: str) -> AnonlabError:
    """A column read as doubles holds a field that is not a number (pyarrow's message)."""
    column = re.search(r"column #(\d+)", text)
    index = int(column.group(1)) if column else -1
    which = f"column '{names[index]}'" if 0 <= index < len(names) else "a column"
    detail = text.strip().splitlines()[0].split(": ")[-1] if text.strip() else "no number"
    return AnonlabError(
        f"{which} of file '{path}' is read as numbers but holds a field that "
        f"is not one ({detail}): read it as text"
    )


def _named(table: pa.Table, header: bool) -> pa.Table:
    """Name the columns from the first row (``header``) or ``"0"``, ``"1"``..."""
    if not header:
        return table.rename_columns([str(i) for i in range(table.num_columns)])
    if table.num_rows == 0:
        return table
    names = [str(table.column(i)[0].as_py()) for i in range(table.num_columns)]
    return table.slice(1).rename_columns(names)


def _csv_error(path: Path, sep: str, exc: Exception) -> AnonlabError:
    lines = str(exc).strip().splitlines()
    msg = lines[0] if lines else type(exc).__name__
    low = msg.lower()
    if "utf8" in low.replace("-", "") and "invalid" in low:
        return _not_utf8(path)
    if "empty" in low:
        return AnonlabError(f"file '{path}' is empty: give a table with a header row")
    if "straddl" in low:
        return AnonlabError(
            f"file '{path}' has a record longer than {MAX_CSV_BLOCK >> 20} MiB "
            f"or an unclosed quote: check the quoting (now '{sep}' separates "
            "fields)"
        )
    return AnonlabError(
        f"file '{path}' is ragged or malformed ({msg}): every row needs the "
        f"same number of fields; check the delimiter (now '{sep}')"
    )


def _nearest_double(pd: Any) -> dict[str, Any]:
    """read_csv's option that parses decimals to the nearest double.

    pandas 2's default parser misses some 17-digit decimals by one unit in the
    last place (``round_trip`` does not); pandas 3 parses them exactly by
    default and deprecates the option.
    """
    return {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}


def read_csv_typed(path: Path, sep: str, quotechar: str, header: bool, dtype: Any) -> Any:
    """A CSV file as a pandas DataFrame with pandas' type inference (``dtype`` not ``str``)."""
    import pandas as pd

    record = first_record(path, sep, quotechar)
    if header and record:
        check_names(record, f"file '{path}'")
    try:
        frame = pd.read_csv(
            path,
            sep=sep,
            header=0 if header else None,
            quotechar=quotechar,
            dtype=dtype,
            encoding="utf-8",
            engine="c",
            **_nearest_double(pd),
        )
    except UnicodeDecodeError as exc:
        raise _not_utf8(path) from exc
    except pd.errors.EmptyDataError:
        raise AnonlabError(f"file '{path}' is empty: give a table with a header row") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise _csv_error(path, sep, exc) from None
    if not header:
        frame.columns = [str(c) for c in frame.columns]
    return frame


def _natural(path: Path) -> list[Any]:
    """Sort key that orders ``part-2`` before ``part-10``."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.as_posix())]


def parquet_parts(folder: Path) -> list[Path]:
    """The Parquet files under ``folder`` in natural order (hidden and ``_`` files skipped)."""
    parts = []
    for path in folder.rglob("*"):
        relative = path.relative_to(folder).parts
        if any(p.startswith((".", "_")) for p in relative) or not path.is_file():
            continue
        if path.suffix.lower() in PARQUET_SUFFIXES:
            parts.append(path)
            continue
        with path.open("rb") as fh:
            if fh.read(4) == b"PAR1":
                parts.append(path)
    return sorted(parts, key=_natural)


def _hive_keys(folder: Path, parts: Sequence[Path]) -> list[str]:
    """The ``key`` of every ``key=value`` folder level, in order of depth."""
    keys: list[str] = []
    for part in parts:
        for level in part.relative_to(folder).parts[:-1]:
            key, eq, _ = level.partition("=")
            if eq and key not in keys:
                keys.append(key)
    return keys


def read_parquet(path: Path, text: bool) -> pa.Table:
    """A Parquet file, or a folder of Parquet parts (hive ``key=value/`` folders or plain).

    Partition keys become columns; read as text (``text``) their values keep
    their spelling (``zip=01234`` stays ``01234``), otherwise their types are
    inferred.
    """
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    if not path.is_dir():
        try:
            return pq.read_table(path)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise AnonlabError(f"cannot read Parquet file '{path}': {exc}") from None
    parts = parquet_parts(path)
    if not parts:
        raise AnonlabError(
            f"folder '{path}' holds no Parquet files: give a CSV, Parquet or "
            "Excel file, or a folder of Parquet parts"
        )
    keys = _hive_keys(path, parts)
    partitioning: Any = None
    if keys:
        partitioning = (
            ds.partitioning(pa.schema([(k, pa.string()) for k in keys]), flavor="hive")
            if text
            else "hive"
        )
    try:
        dataset = ds.dataset(
            [str(p) for p in parts],
            format="parquet",
            partitioning=partitioning,
            partition_base_dir=str(path),
        )
        return dataset.to_table()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise AnonlabError(f"cannot read the Parquet folder '{path}': {exc}") from None


def _open_workbook(fh: BinaryIO, path: Path) -> Any:
    """The workbook in the open file ``fh`` (a file object: openpyxl would refuse a path
    whose extension is not .xlsx, such as a staged ``.tmp`` file).

    A workbook any of whose parts declares a DTD (``<!DOCTYPE``, entities: the
    "billion laughs" that expands a few bytes into gigabytes) is refused before
    openpyxl parses anything (:func:`refuse_dtds`).
    """
    from zipfile import BadZipFile

    from openpyxl import load_workbook  # type: ignore[import-untyped]
    from openpyxl.utils.exceptions import InvalidFileException  # type: ignore[import-untyped]

    if fh.read(4) != b"PK\x03\x04":
        raise AnonlabError(
            f"file '{path}' is not an Excel workbook (an .xlsx file is a zip "
            "archive): if it holds CSV text, name it .csv"
        )
    fh.seek(0)
    refuse_dtds(fh, path)
    fh.seek(0)
    try:
        return load_workbook(fh, read_only=True, data_only=True)
    except (
        BadZipFile,
        InvalidFileException,
        KeyError,
        OSError,
        ValueError,
        SyntaxError,
    ) as exc:  # SyntaxError: the XML parser's ParseError
        raise _unreadable(path, exc) from None


def _unreadable(path: Path, exc: BaseException) -> AnonlabError:
    """The one line for a workbook that is damaged or no workbook at all."""
    return AnonlabError(
        f"file '{path}' is not a readable Excel workbook ({first_line(exc)}): "
        "save it again as .xlsx"
    )


#: bytes of a part that are searched for a DTD when the XML parser cannot read its start
DTD_SCAN_BYTES = 1 << 16
_DTD_MARKS = tuple(
    mark.encode(codec)
    for mark in ("<!DOCTYPE", "<!ENTITY")
    for codec in ("ascii", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "cp037", "cp500")
)


class _PrologEndError(Exception):
    """Raised by the prolog parser where the prolog ends: at a DTD or at the root element."""

    def __init__(self, dtd: bool) -> None:
        super().__init__(dtd)
        self.dtd = dtd


def refuse_dtds(fh: BinaryIO, path: Path) -> None:
    """Refuse a workbook (the zip archive in ``fh``) any of whose parts declares a DTD.

    Each part's prolog, everything before its root element (where alone XML
    allows a ``<!DOCTYPE``, and with it ``<!ENTITY``), is read by the XML
    parser openpyxl uses, in whatever encoding the part declares; the parser
    stops at the root element, so a sheet of any size costs a few bytes. A
    part the parser cannot start on (an image, or XML in an encoding only
    another parser reads) is searched for the two markups in its first
    :data:`DTD_SCAN_BYTES` bytes, in UTF-8, UTF-16 and UTF-32.
    """
    import zipfile
    import zlib

    try:
        part = _part_with_dtd(fh)
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        NotImplementedError,
        RuntimeError,
        OSError,
        ValueError,
    ) as exc:  # RuntimeError: an encrypted part
        raise _unreadable(path, exc) from None
    if part is not None:
        raise AnonlabError(
            f"file '{path}' declares a DTD or entities in its part '{part}': "
            "refused, as entity expansion can exhaust the memory (spreadsheet "
            "programs never write one); save the workbook again from a "
            "spreadsheet program"
        )


def _part_with_dtd(fh: BinaryIO) -> str | None:
    """The name of the first part of the zip archive in ``fh`` that declares a DTD."""
    import zipfile

    with zipfile.ZipFile(fh) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            with archive.open(info) as part:
                if _declares_dtd(part):
                    return info.filename
    return None


def _declares_dtd(part: IO[bytes]) -> bool:
    """Whether the XML ``part`` declares a DTD before its root element (see
    :func:`refuse_dtds`)."""
    from xml.parsers import expat

    parser = expat.ParserCreate()

    def dtd(*_args: Any) -> None:
        raise _PrologEndError(dtd=True)

    def root(*_args: Any) -> None:
        raise _PrologEndError(dtd=False)

    parser.StartDoctypeDeclHandler = dtd
    parser.EntityDeclHandler = dtd
    parser.StartElementHandler = root
    head = b""
    try:
        while chunk := part.read(8192):
            if len(head) < DTD_SCAN_BYTES:
                head += chunk[: DTD_SCAN_BYTES - len(head)]
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except _PrologEndError as end:
        return end.dtd
    except (expat.ExpatError, ValueError):  # ValueError: a multi-byte encoding it lacks
        head += part.read(max(0, DTD_SCAN_BYTES - len(head)))
        return any(mark in head for mark in _DTD_MARKS)
    return False


def read_excel(path: Path, sheet: str | None, header: bool, text: bool) -> pa.Table:
    """A sheet of an ``.xlsx`` workbook (the first one by default) as an Arrow table.

    Cells hold their values (formulas give the value Excel last computed).
    Read as ``text``, each column's values become text by the rule of
    :mod:`anonlab.tabletext`, so a number cell 39 reads ``39`` as the CSV
    field ``39`` does and an empty cell reads ``""``; otherwise each column
    keeps the cells' types (empty cells are null). Empty rows at the end of
    the sheet are not records.
    """
    import pyarrow as pa

    with path.open("rb") as fh:
        book = _open_workbook(fh, path)
        try:
            if sheet is None:
                worksheet = book.worksheets[0]
            elif sheet in book.sheetnames:
                worksheet = book[sheet]
            else:
                raise AnonlabError(
                    f"sheet '{sheet}' is not in '{path}': it has {', '.join(book.sheetnames)}",
                    parameter="sheet",
                )
            worksheet.reset_dimensions()  # rows as stored: no extra pass to measure the sheet
            rows = [list(r) for r in worksheet.iter_rows(values_only=True)]
        except (KeyError, OSError, SyntaxError) as exc:  # a damaged sheet, read only now
            raise _unreadable(path, exc) from None
        finally:
            book.close()
    while rows and all(v is None or v == "" for v in rows[-1]):
        rows.pop()
    if not rows:
        raise AnonlabError(
            f"sheet '{worksheet.title}' of '{path}' is empty: give a table with a header row"
        )
    width = _sheet_width(rows, header)
    if width == 0:
        raise AnonlabError(
            f"the first row of sheet '{worksheet.title}' of '{path}' is empty: "
            "start the sheet with its header row"
        )
    from anonlab.tabletext import values_text

    names = values_text(rows[0][:width] + [None] * (width - len(rows[0])))
    if header:
        check_names(names, f"sheet '{worksheet.title}' of '{path}'")
        rows = rows[1:]
    else:
        names = [str(i) for i in range(width)]
    for number, row in enumerate(rows, start=2 if header else 1):
        extra = row[width:]
        if any(v is not None and v != "" for v in extra):
            raise AnonlabError(
                f"sheet '{worksheet.title}' of '{path}' is ragged: row {number} "
                f"has values beyond the {width} columns of the first row"
            )
        row[width:] = []
        row.extend([None] * (width - len(row)))
    columns = [_excel_column([r[j] for r in rows], text) for j in range(width)]
    return pa.Table.from_arrays(columns, names=names)


def _excel_column(values: list[Any], text: bool) -> pa.Array:
    """One sheet column as text, or with the cells' own type (text when they mix types)."""
    import pyarrow as pa

    from anonlab.tabletext import values_text

    if not text:
        try:
            return pa.array(values, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
            pass
    return pa.array(values_text(values), pa.string())


def _sheet_width(rows: list[list[Any]], header: bool) -> int:
    """The number of columns: the header's cells up to its last non-empty one."""
    first = rows[0]
    width = len(first)
    while width and (first[width - 1] is None or first[width - 1] == ""):
        width -= 1
    if not header:
        width = max(width, *(len(r) for r in rows)) if rows else width
    return width
