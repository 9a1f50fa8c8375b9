"""Masked columns' values read from and written as text (the one reader's values).

A numeric method reads a column's text as numbers (:func:`numbers_of`: a missing
value ``""`` stays missing, any other text that is no number is refused in one
line) and writes a number it puts into the release as :func:`number_text` spells it;
a categorical method works on a column's levels (:func:`levels_of`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.textnumbers import parse_numbers


def _numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def _arrow_text(column: pd.Series) -> pa.Array | None:
    """The column as an Arrow string array (no Python object per value for the reader's
    Arrow-backed text), or ``None`` when it is not all text."""
    try:
        array = pa.array(column, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if pa.types.is_large_string(array.type):
        array = array.cast(pa.string())
    return array if pa.types.is_string(array.type) else None


def _arrow_missing(array: pa.Array) -> NDArray[np.bool_]:
    missing = pc.or_kleene(pc.is_null(array), pc.equal(array, ""))
    return np.asarray(missing.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool)


def missing_of(column: pd.Series) -> NDArray[np.bool_]:
    """Which values are missing (``""``, or a null of a DataFrame given directly)."""
    if _numeric(column):
        return np.asarray(column.isna().to_numpy(), dtype=bool)
    array = _arrow_text(column)
    if array is not None:
        return _arrow_missing(array)
    values = column.to_numpy(dtype=object)
    return np.asarray(pd.isna(values) | (values == ""), dtype=bool)


def _arrow_numbers(column: pd.Series) -> tuple[NDArray[np.float64], NDArray[np.bool_]] | None:
    """Text parsed by Arrow's correctly rounded parser, missing as NaN; ``None`` when a
    value is neither a number Arrow reads nor missing (the slower rule decides then)."""
    array = _arrow_text(column)
    if array is None:
        return None
    missing = _arrow_missing(array)
    try:
        numbers = pc.cast(
            pc.if_else(pa.array(missing), pa.scalar(None, pa.string()), array), pa.float64()
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    values = np.asarray(numbers.to_numpy(zero_copy_only=False), dtype=np.float64).copy()
    return values, missing


def numbers_of(column: pd.Series, name: str) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The column's values as doubles (NaN where missing) and where they are missing.

    Text that is no number (nor missing) is refused, naming the column and record.
    A numeric column of a DataFrame is taken as it is.
    """
    if _numeric(column):
        numbers = column.to_numpy(dtype=np.float64, copy=True, na_value=np.nan)
        missing = np.isnan(numbers)
        bad = np.flatnonzero(np.isinf(numbers))
    elif (fast := _arrow_numbers(column)) is not None:
        numbers, missing = fast
        bad = np.flatnonzero(~missing & ~np.isfinite(numbers))
    else:
        missing = missing_of(column)
        numbers = parse_numbers(column.reset_index(drop=True)).to_numpy(dtype=np.float64, copy=True)
        bad = np.flatnonzero(~missing & ~np.isfinite(numbers))
    if bad.size:
        row = int(bad[0])
        raise AnonlabError(
            f"column '{name}' holds '{column.iloc[row]}' in record {row + 1}, not a finite "
            "number: this method masks numeric columns only",
            parameter="columns",
        )
    numbers[missing] = np.nan
    return numbers, missing


def finite_floats(column: pd.Series) -> NDArray[np.float64] | None:
    """A ``float64`` column's values without a copy when none is missing or infinite, else
    ``None`` (then :func:`numbers_of` reads it). One sum tells: it is finite only then
    (or it overflows, and the general rule decides). The array is the column's own: read
    it, never write into it."""
    if column.dtype != np.float64:
        return None
    x: NDArray[np.float64] = column.to_numpy()
    return x if np.isfinite(np.add.reduce(x)) else None


def is_numeric(column: pd.Series) -> bool:
    """Whether a column holds numbers (a DataFrame's numeric dtype), not text."""
    return _numeric(column)


def number_text(value: float) -> str:
    """A number as a release spells it: a whole number without a decimal point, any other
    as the shortest text that reads back as the same double (``repr``)."""
    if math.isfinite(value) and value == int(value) and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def text_of(column: pd.Series) -> NDArray[np.object_]:
    """The column's values as text, a missing one ``""``."""
    missing = missing_of(column)
    if column.dtype == object:
        values = column.to_numpy(dtype=object, copy=True)
    else:
        values = column.astype(str).to_numpy(dtype=object)
    values[missing] = ""
    return values


def levels_of(texts: Iterable[str]) -> list[str]:
    """The distinct non-missing values, in order: by number when every one is a number
    (``"2"`` before ``"10"``, as R's ``factor`` orders numeric codes), else as text."""
    distinct = sorted({str(v) for v in texts if v != ""})
    try:
        numbers = [float(v) for v in distinct]
    except ValueError:
        return distinct
    if not all(math.isfinite(x) for x in numbers):
        return distinct
    return [v for _, v in sorted(zip(numbers, distinct, strict=True))]
