"""Small table helpers the release checkers share (plain pandas and NumPy, no method code).

Tables are compared as text: a CSV release read back holds strings, and a
value is unchanged exactly when its text is. Numbers are parsed correctly
rounded (Arrow's cast for plainly spelled numbers, Python's ``float`` for
the rest; both give the same double for the same text), so a double printed
in shortest round-trip form reads back as exactly the double that was
computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
ObjectArray = NDArray[np.object_]
ROWS_SHOWN = 5  # rows named in a finding about a group


def text(column: pd.Series) -> ObjectArray:
    """A column as text; a missing value (null) is ``''``, as an empty CSV field reads.

    A column of text with no missing value (as the reader gives a CSV's) is
    returned as its values, not converted again.
    """
    if column.dtype == object:
        values = column.to_numpy(dtype=object)
        if pd.api.types.infer_dtype(values, skipna=False) == "string":  # all str, none missing
            return np.asarray(values, dtype=object)
    converted = column.astype(str).where(column.notna(), "")
    return np.asarray(converted.to_numpy(dtype=object), dtype=object)


def plain_text(column: pd.Series) -> bool:
    """Whether ``column`` is text with nothing missing, so that it needs no conversion.

    Such a column is pandas' text (``str``, ``string``) or a categorical whose
    categories are all texts (a release read back with
    ``read_table(strings="dictionary")``); checkers may then group and compare
    it as it is (a categorical on its codes), without a Python string per row.
    """
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return bool(
            pd.api.types.infer_dtype(dtype.categories, skipna=False) == "string"
            and not column.isna().any()
        )
    return isinstance(dtype, pd.StringDtype) and not column.isna().any()


def category_codes(column: pd.Series) -> tuple[NDArray[np.integer], list[str]] | None:
    """A categorical of texts with nothing missing and every category used, as its own
    codes and categories (equal codes: equal texts); ``None`` for any other column.

    Such a column (a table read with ``strings="dictionary"``) needs no
    factorization to compare or group its rows: its codes are that already.
    """
    if not (isinstance(column.dtype, pd.CategoricalDtype) and plain_text(column)):
        return None
    codes = column.cat.codes.to_numpy()
    categories = column.cat.categories
    if len(codes) and np.count_nonzero(np.bincount(codes, minlength=len(categories))) < len(
        categories
    ):
        return None
    return codes, [str(v) for v in categories]


def stripped(column: pd.Series) -> ObjectArray:
    """A categorical column as text without surrounding spaces (missing: ``''``)."""
    return np.asarray([str(v).strip() for v in text(column)], dtype=object)


def floats(column: pd.Series) -> tuple[FloatArray, int | None]:
    """A column's values as doubles, and the first row (0-based) that is not a number.

    Text is converted by Python's ``float`` (correctly rounded); a column that
    already holds numbers is taken as it is. The row is ``None`` when every
    value is a finite number.
    """
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        out = column.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        raw = text(column)
        parsed = _plain_doubles(raw)
        if parsed is not None:
            out = parsed
        else:
            try:
                out = raw.astype(np.float64)  # ``float(value)`` of each object: correctly rounded
            except (ValueError, TypeError):
                for i, value in enumerate(raw):
                    try:
                        float(value)
                    except ValueError:
                        return np.zeros(raw.size), i
                raise
    bad = np.flatnonzero(~np.isfinite(out))
    return out, (int(bad[0]) if bad.size else None)


def _plain_doubles(raw: ObjectArray) -> FloatArray | None:
    """Doubles of text values spelled as plain numbers, or ``None`` if one is not.

    Arrow's cast is correctly rounded, so each value is the double Python's
    ``float`` gives for it, made without a Python call per value. A value
    Arrow does not read (spaces around it, ``1_000``, other digits than
    0-9, a missing value's ``''``) returns ``None``: :func:`floats` then
    asks ``float`` for each value.
    """
    import pyarrow as pa

    try:
        parsed = pa.array(raw, type=pa.string()).cast(pa.float64())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return np.asarray(parsed.to_numpy(zero_copy_only=False), dtype=np.float64)


def numeric_matrix(
    frame: pd.DataFrame, columns: Sequence[str], what: str
) -> tuple[FloatArray, str | None]:
    """The ``n x d`` doubles of ``columns`` and a finding if a value is not a finite number."""
    out = np.empty((frame.shape[0], len(columns)), dtype=np.float64)
    for j, name in enumerate(columns):
        values, bad = floats(frame[name])
        if bad is not None:
            shown = text(frame[name])[bad]
            return out, (
                f"column '{name}' of the {what} holds '{shown}' at row {bad + 1}, "
                "not a finite number"
            )
        out[:, j] = values
    return out, None


def original_matrix(frame: pd.DataFrame, columns: Sequence[str]) -> FloatArray:
    """The original's numeric columns; a value that is not a number is the user's error."""
    values, problem = numeric_matrix(frame, columns, "input")
    if problem is not None:
        raise AnonlabError(f"{problem}: give the input the release was made from")
    return values


def shape_findings(original: pd.DataFrame, release: pd.DataFrame) -> list[str]:
    """Findings if the release has other rows or columns than the original (same order)."""
    if len(original) != len(release):
        return [f"release has {len(release)} rows, the input {len(original)}"]
    have = [str(c) for c in release.columns]
    want = [str(c) for c in original.columns]
    if have != want:
        missing = [c for c in want if c not in have]
        extra = [c for c in have if c not in want]
        if missing:
            return [f"column '{missing[0]}' of the input is missing from the release"]
        if extra:
            return [f"the release has a column '{extra[0]}' the input does not have"]
        return ["the release has the input's columns in another order"]
    return []


def unchanged_findings(
    original: pd.DataFrame, release: pd.DataFrame, masked: Sequence[str]
) -> list[str]:
    """Findings for every column outside ``masked`` whose text differs from the original.

    Two text columns without missing values are compared by Arrow; others as :func:`text`
    prints them (a missing value is ``''``).
    """
    problems = []
    skip = set(masked)
    for name in original.columns:
        if str(name) in skip or name not in release.columns:
            continue
        change = _first_change(original[name], release[name])
        if change is not None:
            row, before, after = change
            problems.append(
                f"column '{name}' is not masked but changed: row {row + 1} holds "
                f"'{after}', the input '{before}'"
            )
    return problems


def _first_change(before: pd.Series, after: pd.Series) -> tuple[int, str, str] | None:
    """The first row whose text differs, with both texts (``None``: the column is unchanged)."""
    import pyarrow.compute as pc

    old, new = arrow_text(before), arrow_text(after)
    if old is not None and new is not None:
        differ = pc.not_equal(old, new)
        if not pc.any(differ).as_py():
            return None
        row = int(pc.index(differ, True).as_py())
        return row, str(old[row].as_py()), str(new[row].as_py())
    old_text, new_text = text(before), text(after)
    rows = np.flatnonzero(old_text != new_text)
    if not rows.size:
        return None
    row = int(rows[0])
    return row, str(old_text[row]), str(new_text[row])


def arrow_text(column: pd.Series) -> Any:
    """A column as an Arrow string array when it holds only text and no missing value."""
    import pyarrow as pa

    try:
        arr = pa.array(column, from_pandas=True)  # Arrow-backed text: no copy
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None  # e.g. text mixed with numbers in one object column
    kind = arr.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)) or arr.null_count:
        return None
    return arr


def check_present(frame: pd.DataFrame, names: Sequence[str], what: str) -> None:
    """Refuse column names the table lacks (the report and the table do not belong together)."""
    have = {str(c) for c in frame.columns}
    for name in names:
        if name not in have:
            raise AnonlabError(
                f"the {what} has no column '{name}', which the report names: "
                "give the files the report was made with"
            )


def rows_of(groups: IntArray, group: int) -> str:
    """The first rows (1-based) of ``group``, for a finding: ``rows 3, 8, 12`` or ``row 3``."""
    rows = np.flatnonzero(groups == group)
    shown = ", ".join(str(int(r) + 1) for r in rows[:ROWS_SHOWN])
    more = f" and {rows.size - ROWS_SHOWN} more" if rows.size > ROWS_SHOWN else ""
    return f"row{'s' if rows.size > 1 else ''} {shown}{more}"
