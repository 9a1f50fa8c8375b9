"""Choosing and checking the columns a microaggregation or evaluation works on.

``--columns`` is either ``all-numeric`` (every column whose values all parse as
numbers) or a comma-separated list of names. Numeric columns become one float64
matrix; bad values are refused with the column's name and the first bad row
(1-based data row, the header not counted).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.settings import split_names

ALL_NUMERIC = "all-numeric"


def _parsed(series: pd.Series) -> pd.Series:
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return series.astype("float64")
    text = series.astype(str).str.strip()
    return pd.to_numeric(text, errors="coerce")


MISSING_TEXT = frozenset({"", "nan", "na", "none", "null"})


def _missing(series: pd.Series) -> pd.Series:
    """True where a value is missing (NaN, or text such as '' or 'NA')."""
    if pd.api.types.is_numeric_dtype(series):
        return series.isna()
    text = series.astype(str).str.strip().str.lower()
    return series.isna() | text.isin(MISSING_TEXT)


def is_numeric_column(series: pd.Series) -> bool:
    """True when every present value parses as a number (and at least one is present).

    A missing value does not make a column text: the column stays numeric, so
    that ``all-numeric`` names it and :func:`numeric_matrix` refuses the gap
    instead of releasing the column unmasked.
    """
    bad = _parsed(series).isna().to_numpy()
    if not bad.any():
        return True
    gaps = _missing(series[bad]).to_numpy()  # only the few values that did not parse
    return bool(gaps.all() and not bad.all())


def numeric_columns(frame: pd.DataFrame) -> list[str]:
    """Names of the columns whose every value is a number."""
    return [str(c) for c in frame.columns if is_numeric_column(frame[c])]


def check_present(frame: pd.DataFrame, names: Sequence[str], what: str = "table") -> None:
    """Refuse names that are not columns of ``frame`` (listing the ones it has)."""
    have = [str(c) for c in frame.columns]
    for name in names:
        if name not in have:
            raise AnonlabError(
                f"unknown column '{name}': the {what} has {', '.join(have)}"
            )
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise AnonlabError(f"column '{name}' is named twice: list each column once")
        seen.add(name)


def select_columns(
    frame: pd.DataFrame, spec: str | Sequence[str] | None, exclude: Sequence[str] = ()
) -> list[str]:
    """Resolve ``spec`` (``all-numeric``, ``None`` = all-numeric, or names) to column names.

    ``exclude`` (e.g. the nominal and ordinal columns) is left out of
    ``all-numeric``; when it is given, ``all-numeric`` may find no column
    (a table of categorical attributes only) and gives ``[]``.
    """
    names = split_names(spec)
    if not names or names == [ALL_NUMERIC]:
        chosen = [c for c in numeric_columns(frame) if c not in set(exclude)]
        if not chosen and not exclude:
            raise AnonlabError(
                "no numeric column found for --columns all-numeric: name the columns "
                "with --columns A,B,..."
            )
        return chosen
    if ALL_NUMERIC in names:
        raise AnonlabError("--columns all-numeric cannot be mixed with column names")
    check_present(frame, names)
    return names


def numeric_matrix(frame: pd.DataFrame, columns: Sequence[str], what: str = "table") -> np.ndarray:
    """The (n, p) float64 matrix of ``columns``; refuses text, NaN and infinite values."""
    check_present(frame, columns, what)
    out = np.empty((frame.shape[0], len(columns)), dtype=np.float64)
    for j, name in enumerate(columns):
        raw = frame[name]
        values = _parsed(raw)
        arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(arr)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            shown = str(raw.iloc[row]).strip()
            if shown.lower() in MISSING_TEXT:
                raise AnonlabError(
                    f"column '{name}' of the {what} has a missing value (NaN) at row {row + 1}: "
                    "fill or drop missing values first"
                )
            if shown.lower() in {"inf", "-inf", "infinity", "-infinity"}:
                raise AnonlabError(
                    f"column '{name}' of the {what} has an infinite value at row {row + 1}: "
                    "give finite numbers"
                )
            raise AnonlabError(
                f"column '{name}' of the {what} is not numeric: row {row + 1} holds "
                f"'{shown}'; give numbers only or treat the column as --nominal/--ordinal"
            )
        out[:, j] = arr
    return out


def column_scale(x: np.ndarray, columns: Sequence[str], what: str = "table") -> tuple[
    np.ndarray, np.ndarray
]:
    """Column means and population standard deviations (ddof=0) of ``x``.

    A constant column has S_j = 0 and cannot be standardized: it is refused by
    name instead of dividing by zero.
    """
    mean = x.mean(axis=0)
    std = x.std(axis=0, ddof=0)
    for j, s in enumerate(std):
        if not s > 0:
            raise AnonlabError(
                f"column '{columns[j]}' of the {what} is constant (standard deviation "
                "S_j = 0), so it cannot be standardized: leave it out of --columns"
            )
    return mean, std


def standardize(x: np.ndarray, columns: Sequence[str], what: str = "table") -> tuple[
    np.ndarray, np.ndarray, np.ndarray
]:
    """``(z, mean, std)`` with ``z = (x - mean) / std`` and population std (ddof=0)."""
    mean, std = column_scale(x, columns, what)
    return (x - mean) / std, mean, std


def check_k(k: int, n: int) -> None:
    """k must be at least 1 and at most the number of records."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise AnonlabError(f"k must be a whole number, got {k!r}")
    if k < 1:
        raise AnonlabError(f"k must be at least 1, got {k}")
    if k > n:
        raise AnonlabError(f"k = {k} is larger than the number of records ({n}): choose k <= {n}")
