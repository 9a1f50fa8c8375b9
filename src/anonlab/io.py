"""Reading tables and writing outputs safely.

Inputs: CSV (delimiter, quoting, header, UTF-8) and Parquet, chosen by file
extension, or a pandas DataFrame passed through unchanged.

Outputs are written atomically: to a temporary file in the target's folder,
then renamed over the target, so a failure never leaves half a file behind.
An output path that resolves to one of the inputs is refused.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from anonlab.errors import AnonlabError

if TYPE_CHECKING:
    import pandas as pd

PathLike = str | os.PathLike[str]


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in {".parquet", ".pq"}


def read_table(
    source: PathLike | pd.DataFrame,
    *,
    delimiter: str | None = None,
    header: bool = True,
    quotechar: str = '"',
    dtype: Any = str,
) -> pd.DataFrame:
    """Read a table from CSV or Parquet, or return a copy of a DataFrame.

    CSV values are read as strings by default (``dtype=str``) so that codes
    such as ZIP ``"01234"`` keep their leading zeros; pass ``dtype=None`` to let
    pandas infer numeric columns. A ``delimiter`` of ``None`` sniffs ``,`` / ``;``
    / tab from the header line.
    """
    import pandas as pd  # here, not at import: commands that never read a DataFrame skip it

    if isinstance(source, pd.DataFrame):
        return source.copy()
    path = Path(source)
    if not path.exists():
        raise AnonlabError(f"input file '{path}' does not exist: check the path")
    if path.is_dir():
        raise AnonlabError(f"input '{path}' is a folder, not a file: name a CSV or Parquet file")
    if _is_parquet(path):
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types
            raise AnonlabError(f"cannot read Parquet file '{path}': {exc}") from exc
        if dtype is str:
            frame = frame.astype(str)
        return frame
    sep = delimiter if delimiter is not None else sniff_delimiter(path)
    if header:
        _check_header(path, sep, quotechar)
    # text-only reads go through pyarrow's multi-threaded parser (about 2x faster)
    engine: Literal["pyarrow", "c"] = "pyarrow" if dtype is str and len(sep) == 1 else "c"
    try:
        frame = pd.read_csv(
            path,
            sep=sep,
            header=0 if header else None,
            quotechar=quotechar,
            dtype=dtype,
            keep_default_na=dtype is not str,
            encoding="utf-8",
            engine=engine,
        )
    except UnicodeDecodeError as exc:
        raise AnonlabError(f"file '{path}' is not UTF-8 text: re-save it as UTF-8") from exc
    except pd.errors.EmptyDataError as exc:
        raise AnonlabError(f"file '{path}' is empty: give a table with a header row") from exc
    except (pd.errors.ParserError, ValueError) as exc:
        text = str(exc).strip().splitlines()
        msg = text[-1] if text else type(exc).__name__
        if "utf" in msg.lower() and "invalid" in msg.lower():
            raise AnonlabError(f"file '{path}' is not UTF-8 text: re-save it as UTF-8") from exc
        if "empty" in msg.lower():
            raise AnonlabError(f"file '{path}' is empty: give a table with a header row") from exc
        raise AnonlabError(
            f"file '{path}' is ragged or malformed ({msg}): every row needs the same number "
            f"of fields; check the delimiter (now '{sep}')"
        ) from exc
    if not header:
        frame.columns = [str(c) for c in frame.columns]
    if frame.shape[0] == 0:
        raise AnonlabError(f"file '{path}' has a header but no rows: give at least one record")
    return frame


def _check_header(path: Path, sep: str, quotechar: str) -> None:
    """Refuse a header that names a column twice (pandas would rename it silently)."""
    if len(sep) != 1:
        return
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            names = next(csv.reader(fh, delimiter=sep, quotechar=quotechar), [])
    except UnicodeDecodeError as exc:
        raise AnonlabError(f"file '{path}' is not UTF-8 text: re-save it as UTF-8") from exc
    seen: set[str] = set()
    for name in (n.strip() for n in names):
        if name in seen:
            raise AnonlabError(
                f"file '{path}' names the column '{name}' twice in its header: give every "
                "column its own name"
            )
        seen.add(name)


def sniff_delimiter(path: Path) -> str:
    """Guess the delimiter of a CSV file from its first line (',' ';' or tab)."""
    try:
        with path.open(encoding="utf-8") as fh:
            first = fh.readline()
    except UnicodeDecodeError as exc:
        raise AnonlabError(f"file '{path}' is not UTF-8 text: re-save it as UTF-8") from exc
    counts = {d: first.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def file_sha256(path: PathLike) -> str:
    """SHA-256 hex digest of a file's bytes (identifies the input in reports)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_not_input(output: PathLike, inputs: Iterable[PathLike | None]) -> None:
    """Refuse an output path that is one of the input files."""
    out = Path(output).resolve()
    for item in inputs:
        if item is None:
            continue
        if Path(item).resolve() == out:
            raise AnonlabError(
                f"output '{output}' is also an input: choose another output path "
                "(inputs are never overwritten)"
            )


def _default_mode() -> int:
    """Permissions an ordinary new file gets here: 0o666 less the process umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def check_outputs(
    outputs: Mapping[str, PathLike | None], inputs: Iterable[PathLike | None]
) -> None:
    """Refuse an output (flag -> path, ``None`` = not given) that is an input or another output."""
    inputs = list(inputs)
    seen: dict[Path, str] = {}
    for flag, out in outputs.items():
        if out is None:
            continue
        check_not_input(out, inputs)
        where = Path(out).resolve()
        if where in seen:
            raise AnonlabError(
                f"'{out}' is given as both {seen[where]} and {flag}: they name the same file; "
                "give each output its own path"
            )
        seen[where] = flag


def atomic_write(
    path: PathLike, writer: Callable[[Path], object], *, private: bool = False
) -> None:
    """Call ``writer(tmp_path)`` then rename the temporary file onto ``path``.

    The temporary file lives beside the target so the rename is atomic; on any
    error it is removed and the target is left as it was. A missing output
    folder is created. The file gets the usual permissions (0o666 less the
    umask), or owner-only 0o600 when ``private`` (secret keys).
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if folder.exists() and not folder.is_dir():
        raise AnonlabError(f"output folder '{folder}' is a file: choose another output path")
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        writer(tmp)
        os.chmod(tmp, 0o600 if private else _default_mode())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_table(frame: pd.DataFrame, path: PathLike, *, delimiter: str = ",") -> None:
    """Write a table atomically; Parquet for ``.parquet``/``.pq``, CSV otherwise."""
    target = Path(path)
    if _is_parquet(target):
        atomic_write(target, lambda tmp: frame.to_parquet(tmp, index=False))
    else:
        atomic_write(target, lambda tmp: _write_csv(frame, tmp, delimiter))


def _write_csv(frame: pd.DataFrame, path: Path, delimiter: str) -> None:
    """CSV through pyarrow's writer when every column converts, else pandas."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
        columns = [
            col.dictionary_decode() if pa.types.is_dictionary(col.type) else col
            for col in (c.combine_chunks() for c in table.columns)
        ]
        table = pa.table(columns, names=[str(c) for c in frame.columns])
        buf = io.StringIO()
        csv.writer(buf, delimiter=delimiter, lineterminator="\n").writerow(table.column_names)
        for style in ("none", "needed"):  # plain values unless one needs quotes
            try:
                with path.open("wb") as fh:
                    fh.write(buf.getvalue().encode("utf-8"))
                    options = pacsv.WriteOptions(
                        delimiter=delimiter, quoting_style=style, include_header=False
                    )
                    pacsv.write_csv(table, fh, write_options=options)
                break
            except pa.ArrowInvalid:
                if style == "needed":
                    raise
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        frame.to_csv(path, sep=delimiter, index=False, encoding="utf-8")


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
    """Read a JSON file, with a one-line error when it is missing or malformed."""
    p = Path(path)
    if not p.exists():
        raise AnonlabError(f"JSON file '{p}' does not exist: check the path")
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AnonlabError(f"file '{p}' is not valid JSON ({exc}): give a report or key "
                           "written by anonlab") from exc
