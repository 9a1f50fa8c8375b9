"""Column encodings shared by the methods and the measures (core: imports no method family).

Numeric columns. ``columns`` is either ``all-numeric`` (every column whose
values all parse as numbers) or a comma-separated list of names. Numeric
columns become one float64 matrix; bad values are refused with the column's
name and the first bad row (1-based data row, the header not counted).
Standardization uses the population standard deviation S_j (ddof=0):
z = (x - mean) / S_j.

Categorical columns (docs/formulas.md §2; Domingo-Ferrer and Torra 2005). A nominal or
ordinal column becomes integer codes into its domain: a nominal domain is
sorted as text, an ordinal one follows the order the user gives or the
natural order (as numbers when every value is a finite number, else as
text). Per-attribute distances: nominal values compare 0/1; the ordinal
distance is o_j(c, c') = |{c'' : min(c, c') <= c'' <= max(c, c')}| / |D_j|
(the domain values between the two, inclusive, over the domain size D_j)
for c != c' and 0 for c = c' (a distance must vanish on equal values; see
docs/em4adom.md).

Microaggregation (MDAV's record spaces) and the EM4ADOM measures both build
on this module, so :mod:`anonlab.metrics` needs no method family.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.settings import split_names
from anonlab.textnumbers import parse_numbers

ALL_NUMERIC = "all-numeric"


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
    bad = parse_numbers(series).isna().to_numpy()
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
            raise AnonlabError(f"unknown column '{name}': the {what} has {', '.join(have)}")
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
                "no numeric column found for columns 'all-numeric': name the numeric "
                "columns in columns",
                parameter="columns",
            )
        return chosen
    if ALL_NUMERIC in names:
        raise AnonlabError(
            "columns 'all-numeric' cannot be mixed with column names: give "
            "all-numeric alone or names only",
            parameter="columns",
        )
    check_present(frame, names)
    return names


def numeric_matrix(
    frame: pd.DataFrame, columns: Sequence[str], what: str = "table"
) -> NDArray[Any]:
    """The (n, p) float64 matrix of ``columns``; refuses text, NaN and infinite values."""
    check_present(frame, columns, what)
    out = np.empty((frame.shape[0], len(columns)), dtype=np.float64)
    for j, name in enumerate(columns):
        raw = frame[name]
        values = parse_numbers(raw)
        arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(arr)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            shown = str(raw.iloc[row]).strip()
            if shown.lower() in MISSING_TEXT or pd.isna(raw.iloc[row]):  # NaN, None, <NA>
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
                f"'{shown}'; give numbers only or list the column in nominal or ordinal"
            )
        out[:, j] = arr
    return out


def column_scale(
    x: NDArray[Any], columns: Sequence[str], what: str = "table"
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Column means and population standard deviations (ddof=0) of ``x``.

    A constant column has S_j = 0 and cannot be standardized: it is refused by
    name instead of dividing by zero. A column whose plain moments overflow (numbers
    near 1e300, whose squares are infinite) or underflow (numbers near 1e-300, whose
    squares are 0) has them computed again on the column scaled by a power of two,
    which is exact, so it is neither refused as constant nor given an infinite S_j;
    every other column's moments are the plain ones, to the bit.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is computed again
        mean = np.array(x.mean(axis=0), dtype=np.float64)
        std = np.array(x.std(axis=0, ddof=0), dtype=np.float64)
    for bad in np.flatnonzero(~(np.isfinite(mean) & np.isfinite(std) & (std > 0))):
        mean[bad], std[bad] = _scaled_moments(np.asarray(x[:, bad], dtype=np.float64))
    for j, s in enumerate(std):
        if not s > 0:
            raise constant_column(columns[j], what)
    return mean, std


def constant_column(name: str, what: str = "table") -> AnonlabError:
    """The refusal of a constant column (S_j = 0) by the standardization, in memory and on
    an engine alike."""
    return AnonlabError(
        f"column '{name}' of the {what} is constant (standard deviation "
        "S_j = 0), so it cannot be standardized: leave it out of columns",
        parameter="columns",
    )


EXTREME_MAGNITUDE: Final = 2.0**256
"""Magnitude beyond which (or below whose inverse) a column's moments and distances are
computed on the column divided by a power of two (:func:`extreme_magnitude`)."""


def extreme_magnitude(mean: float, sd: float) -> bool:
    """Whether a column of this mean and SD may hold numbers whose squares (or products
    with another column's) overflow or underflow: ``|mean| + sd`` not finite, beyond
    :data:`EXTREME_MAGNITUDE` or nonzero below its inverse. Any other column's values lie
    within ``sqrt(n - 1)`` SDs of its mean (Samuelson 1968), so below ``2**256 sqrt(n)``:
    their squares summed over the records stay far below the largest float."""
    size = abs(mean) + sd
    return bool(
        not np.isfinite(size) or size > EXTREME_MAGNITUDE or 0 < size < 1.0 / EXTREME_MAGNITUDE
    )


def scale_exponent(largest: float) -> int:
    """The ``e`` with ``2**e`` the power of two above ``largest`` (a column's largest
    magnitude, finite and not 0): dividing the column by ``2**e`` (:func:`numpy.ldexp`) is
    exact and brings it below 1 in magnitude, where its squares neither overflow nor
    underflow to 0."""
    return int(np.frexp(largest)[1])


def _scaled_moments(column: NDArray[np.float64]) -> tuple[float, float]:
    """Mean and population deviation of ``column`` computed on ``column / 2**e`` (``2**e``
    the power of two at or above its largest magnitude: an exact scaling) and scaled back;
    a constant column keeps a deviation of 0, a column with a non-finite value its plain
    moments."""
    if not column.size or not np.isfinite(column).all():
        return float(column.mean()), float(column.std())
    if column.min() == column.max():
        return float(column.mean()), 0.0
    e = scale_exponent(float(np.max(np.abs(column))))
    part = np.ldexp(column, -e)
    return float(np.ldexp(part.mean(), e)), float(np.ldexp(part.std(), e))


def standardize(
    x: NDArray[Any], columns: Sequence[str], what: str = "table"
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """``(z, mean, std)`` with ``z = (x - mean) / std`` and population std (ddof=0)."""
    mean, std = column_scale(x, columns, what)
    return (x - mean) / std, mean, std


@dataclass(frozen=True)
class CategoricalColumn:
    """A nominal or ordinal column as integer codes into its ordered domain."""

    name: str
    codes: NDArray[Any]  # (n,) int64
    domain: tuple[str, ...]  # code -> value (ordinal: in order)
    ordinal: bool

    @property
    def size(self) -> int:
        """|D_j|: the number of distinct values."""
        return len(self.domain)


def natural_order(values: Sequence[str]) -> list[str]:
    """Values sorted as numbers when they all are finite numbers, else as text."""
    numbers = [_as_number(v) for v in values]
    if all(v is not None for v in numbers):
        return sorted(values, key=float)
    return sorted(values)


def category_text(series: pd.Series) -> pd.Series:
    """A categorical column as stripped text; a missing value (null, NaN) is '' (as in CSV)."""
    text = series.astype(object).where(series.notna().to_numpy(), "")
    return text.astype(str).str.strip()


def _check_present_values(text: pd.Series, name: str, what: str) -> None:
    """Refuse a missing value in an ordinal column: it has no place in an order."""
    missing = np.flatnonzero((text == "").to_numpy())
    if missing.size:
        raise AnonlabError(
            f"ordinal column '{name}' of the {what} has a missing value at row "
            f"{missing[0] + 1}: fill it or drop the row"
        )


def _check_orderable(text: pd.Series, name: str, what: str) -> None:
    """Refuse what a natural order cannot place: numbers mixed with text."""
    present = [str(v) for v in pd.unique(text)]
    words = [v for v in present if _as_number(v) is None]
    if words and len(words) < len(present):
        row = int(np.flatnonzero(text.isin(words).to_numpy())[0])
        raise AnonlabError(
            f"ordinal column '{name}' of the {what} mixes numbers and text "
            f"('{text.iloc[row]}' at row {row + 1}): give the order of its values in orders",
            parameter="orders",
        )


def encode_categorical(
    frame: pd.DataFrame,
    name: str,
    ordinal: bool,
    order: Sequence[str] | None = None,
    what: str = "table",
) -> CategoricalColumn:
    """Codes of a categorical column; an ordinal domain follows ``order`` or natural order."""
    check_present(frame, [name], what)
    text = category_text(frame[name])
    if ordinal:
        _check_present_values(text, name, what)
    present = [str(v) for v in pd.unique(text)]
    if order is not None:
        domain = [str(v).strip() for v in order]
        twice = [v for i, v in enumerate(domain) if v in domain[:i]]
        if twice:
            raise AnonlabError(
                f"value '{twice[0]}' is named twice in the order of ordinal column '{name}': "
                "list each value once"
            )
        missing = sorted(set(present) - set(domain))
        if missing:
            raise AnonlabError(
                f"value '{missing[0]}' of ordinal column '{name}' is not in its order: "
                "list every value"
            )
    elif ordinal:
        _check_orderable(text, name, what)
        domain = natural_order(present)
    else:
        domain = sorted(present)
    lookup = {v: i for i, v in enumerate(domain)}
    codes = text.map(lookup).to_numpy(dtype=np.int64)
    return CategoricalColumn(name, codes, tuple(domain), ordinal)


def encode_all(
    frame: pd.DataFrame,
    nominal: Sequence[str],
    ordinal: Sequence[str],
    orders: Mapping[str, Sequence[str]] | None = None,
    what: str = "table",
) -> list[CategoricalColumn]:
    """Nominal then ordinal columns, encoded."""
    orders = orders or {}
    stray = [c for c in orders if c not in set(ordinal)]
    if stray:
        raise AnonlabError(
            f"orders names column '{stray[0]}', which is not an ordinal "
            "column: list it in ordinal or drop its order",
            parameter="orders",
        )
    out = [encode_categorical(frame, c, False, None, what) for c in nominal]
    out += [encode_categorical(frame, c, True, orders.get(c), what) for c in ordinal]
    return out


def encode_like(
    original: CategoricalColumn, frame: pd.DataFrame, what: str = "masked table"
) -> CategoricalColumn:
    """Encode the same column of another (masked) table with the original's domain.

    A value spelling the same number as a value of the original (``13.0``
    for ``13``, as a float column is written) takes that value's code. A
    nominal value the original never had (e.g. another tool's ``*``) is
    appended to the domain; an ordinal one cannot be placed in the order and is
    refused. Ordinal distances keep the original's domain size |D_j|.
    """
    check_present(frame, [original.name], what)
    text = category_text(frame[original.name])
    lookup = {v: i for i, v in enumerate(original.domain)}
    by_number = _numeric_lookup(original.domain)
    for v in set(pd.unique(text)) - set(lookup):
        number = _as_number(v)
        if number is not None and number in by_number:  # e.g. 13.0 written for 13
            lookup[v] = by_number[number]
    extra = sorted(set(pd.unique(text)) - set(lookup))
    if extra and original.ordinal:
        raise AnonlabError(
            f"value '{extra[0]}' of ordinal column '{original.name}' in the {what} is not "
            "a value of the original: an ordinal value must come from its domain"
        )
    domain = (*original.domain, *extra)
    for i, v in enumerate(extra):
        lookup[v] = len(original.domain) + i
    codes = text.map(lookup).to_numpy(dtype=np.int64)
    return CategoricalColumn(original.name, codes, domain, original.ordinal)


def _as_number(value: str) -> float | None:
    """The finite number a category's text spells, or None."""
    try:
        number = float(value)
    except ValueError:
        return None
    return number if np.isfinite(number) else None


def _numeric_lookup(domain: Sequence[str]) -> dict[float, int]:
    """Code of each domain value that spells a number, keyed by that number (first wins)."""
    out: dict[float, int] = {}
    for i, v in enumerate(domain):
        number = _as_number(v)
        if number is not None:
            out.setdefault(number, i)
    return out


def ordinal_distance_table(size: int) -> NDArray[Any]:
    """o(c, c') for all code pairs of a domain of ``size`` ordered values (0 on the diagonal)."""
    i = np.arange(size)
    table = (np.abs(i[:, None] - i[None, :]) + 1) / size
    np.fill_diagonal(table, 0.0)
    return np.asarray(table)


def category_distance(
    col: CategoricalColumn, a: NDArray[Any], b: NDArray[Any] | int
) -> NDArray[Any]:
    """Per-record distance of codes ``a`` to codes ``b``: 0/1 (nominal) or o_j (ordinal)."""
    if col.ordinal:
        return np.asarray((np.abs(a - b) + 1) / col.size * (a != b))
    return np.asarray((a != b).astype(np.float64))
