"""Masked columns' values read from and written as text (the one reader's values).

A numeric method reads a column's text as numbers (:func:`numbers_of`: a missing
value ``""`` stays missing, any other text that is no number is refused in one
line) and writes a number it puts into the release as :func:`number_text` spells it;
a categorical method works on a column's levels (:func:`levels_of`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.textnumbers import parse_numbers


def missing_of(column: pd.Series) -> NDArray[np.bool_]:
    """Which values are missing (``""``, or a null of a DataFrame given directly)."""
    values = column.to_numpy(dtype=object)
    return np.asarray(pd.isna(values) | (values == ""), dtype=bool)


def numbers_of(column: pd.Series, name: str) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The column's values as doubles (NaN where missing) and where they are missing.

    Text that is no number (nor missing) is refused, naming the column and record.
    """
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


def number_text(value: float) -> str:
    """A number as a release spells it: a whole number without a decimal point, any other
    as the shortest text that reads back as the same double (``repr``)."""
    if math.isfinite(value) and value == int(value) and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def text_of(column: pd.Series) -> NDArray[np.object_]:
    """The column's values as text, a missing one ``""``."""
    values = column.to_numpy(dtype=object).copy()
    missing = missing_of(column)
    values[missing] = ""
    return np.asarray([v if isinstance(v, str) else str(v) for v in values], dtype=object)


def levels_of(texts: NDArray[np.object_]) -> list[str]:
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
