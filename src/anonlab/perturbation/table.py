"""Reading the table to perturb: chosen columns as numbers, every other column untouched.

A CSV is parsed once by pyarrow's multi-threaded reader with the chosen
columns typed by inference (integer or float) and every other column kept as
text, so pass-through columns such as ZIP codes keep their exact spelling.
Parquet files and DataFrames keep their own types.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.io import PathLike, read_table, sniff_delimiter

FloatArray = NDArray[np.float64]


def split_columns(text: str | Sequence[str] | None) -> list[str] | None:
    """``"a,b,c"`` (or a list of such strings) as a list of names; ``None`` stays ``None``."""
    if text is None:
        return None
    parts = [text] if isinstance(text, str) else list(text)
    names = [n.strip() for p in parts for n in p.split(",") if n.strip()]
    return names or None


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
) -> pd.DataFrame:
    """Read ``source`` with the chosen columns numeric (all columns when ``None``)."""
    if isinstance(source, pd.DataFrame):
        return source.copy()
    path = Path(source)
    if not path.exists() or path.is_dir() or path.suffix.lower() in {".parquet", ".pq"}:
        return read_table(path, dtype=None)
    import pyarrow as pa
    import pyarrow.csv as pacsv

    sep = delimiter if delimiter is not None else sniff_delimiter(path)
    names = _header(path, sep)
    chosen = set(names if columns is None else columns)
    types = {n: pa.string() for n in names if n not in chosen}
    try:
        table = pacsv.read_csv(
            path,
            parse_options=pacsv.ParseOptions(delimiter=sep),
            convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False),
        )
    except pa.ArrowInvalid as exc:
        msg = str(exc).strip().splitlines()[0]
        raise AnonlabError(f"cannot read '{path}' ({msg}): every row needs the same number "
                           f"of fields; check the delimiter (now '{sep}')") from None
    frame: pd.DataFrame = table.to_pandas()
    if frame.shape[0] == 0:
        raise AnonlabError(f"file '{path}' has a header but no rows: give at least one record")
    return frame


@dataclass(frozen=True)
class NumericColumns:
    """The chosen columns as an ``N x d`` float array, and which of them hold integers."""

    names: list[str]
    values: FloatArray
    integer: list[bool]


def numeric_columns(frame: pd.DataFrame, columns: Sequence[str] | None,
                    *, allow_constant: bool = False) -> NumericColumns:
    """Check and extract the chosen columns: present, numeric, no NaN, not constant, >= 2."""
    names = [str(c) for c in frame.columns] if columns is None else list(columns)
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise AnonlabError(f"column '{dup}' is named twice in --columns: name each once")
    if len(names) < 2:
        raise AnonlabError(f"{len(names)} column(s) chosen: an orthogonal transform needs at "
                           "least 2 numeric columns (--columns a,b,...)")
    missing = [n for n in names if n not in frame.columns]
    if missing:
        raise AnonlabError(f"unknown column '{missing[0]}': the table has "
                           f"{', '.join(map(str, frame.columns))}")
    for n in names:
        dtype = frame[n].dtype
        if not (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)):
            raise AnonlabError(f"column '{n}' is not numeric: choose numeric columns with "
                               "--columns (z-scores need numbers)")
    values = np.empty((frame.shape[0], len(names)), dtype=np.float64, order="F")
    for j, n in enumerate(names):  # Fortran order: each column is one contiguous copy
        values[:, j] = frame[n].to_numpy(dtype=np.float64, na_value=np.nan)
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
    integer = [pd.api.types.is_integer_dtype(frame[n].dtype) for n in names]
    return NumericColumns(names, values, integer)
