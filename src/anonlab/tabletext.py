"""One spelling of every value as text, shared by every reader and the writer.

A table read "as text" (``dtype=str``) must give the same strings whatever it
came from (CSV, Parquet, Excel, a database, a DataFrame), and a table written
as CSV must read back as the strings it was written from. Both follow from
one rule: a value's text is what Arrow's cast to ``string`` prints, the same
cast pyarrow's CSV writer uses. So integers print without a fraction
(``39``), doubles in their shortest round-trip form (``39.5``, ``1e+20``; an
integral double as ``39``), booleans as ``true``/``false``, dates as
``2020-01-02``, timestamps as ``2020-01-02 03:04:05`` (fractional seconds only
when a value has them), decimals with their scale (``12.50``). A missing value
(null, NaN from pandas, SQL NULL, an empty Excel cell) is the empty string, as
an empty CSV field is.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from anonlab.errors import AnonlabError

if TYPE_CHECKING:
    import pandas as pd

ArrowColumn: TypeAlias = Any  # a pyarrow Array or ChunkedArray (pyarrow has no type hints)
_CONVERSION_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowTypeError,
    pa.ArrowNotImplementedError,
    OverflowError,
    TypeError,
)
_PER_SECOND = {"ms": 10**3, "us": 10**6, "ns": 10**9}


def _whole_seconds(column: ArrowColumn, unit: str) -> bool:
    """Whether every timestamp in ``column`` (of ``unit``) falls on a whole second."""
    per = _PER_SECOND.get(unit)
    if per is None:
        return True
    ticks = pc.fill_null(column.cast(pa.int64()), 0)
    rest = pc.subtract(ticks, pc.multiply(pc.divide(ticks, per), per))
    return not pc.any(pc.not_equal(rest, 0)).as_py()


def text_array(column: ArrowColumn) -> ArrowColumn:
    """``column`` as strings without nulls (null -> ``""``), as Arrow's cast prints them."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        column = column.cast(kind.value_type)
        kind = kind.value_type
    if pa.types.is_null(kind):
        return pa.array([""] * len(column), pa.string())
    if pa.types.is_timestamp(kind) and _whole_seconds(column, kind.unit):
        column = column.cast(pa.timestamp("s", kind.tz))
    if pa.types.is_large_string(kind):
        # pandas 3 keeps its 'str' columns as large_string: text columns are Arrow's string
        # (32-bit offsets) like every other source's, unless a chunk is too large for them
        with contextlib.suppress(pa.ArrowInvalid):
            column = column.cast(pa.string())
    elif not pa.types.is_string(kind):
        try:
            column = column.cast(pa.string())
        except pa.ArrowInvalid as exc:
            if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
                raise AnonlabError(
                    f"a column holds bytes that are not UTF-8 text ({exc}): store text as UTF-8"
                ) from None
            column = _python_text(column)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
            column = _python_text(column)
    return pc.fill_null(column, "") if column.null_count else column


def _python_text(column: ArrowColumn) -> pa.Array:
    """Values Arrow cannot cast (lists, structs, durations) printed by Python's ``str``."""
    return pa.array([None if v is None else str(v) for v in column.to_pylist()], pa.string())


def is_missing(value: Any) -> bool:
    """Whether a Python value stands for a missing one (None, NaN, pandas NA or NaT)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    name = type(value).__name__
    if name in {"NAType", "NaTType"}:
        return True
    if name.startswith("float") and hasattr(value, "dtype"):  # NumPy float scalars
        return math.isnan(float(value))
    return False


def values_text(values: Sequence[Any]) -> list[str]:
    """Python values (one column) as text by the rule of :func:`text_array`.

    A column of one type is cast in one go; a column that mixes types (an
    Excel column of numbers and words) is cast type by type.
    """
    try:
        column = pa.array(values, from_pandas=True)
    except _CONVERSION_ERRORS:
        return _mixed_text(values)
    return [str(v) for v in text_array(column).to_pylist()]


def _mixed_text(values: Sequence[Any]) -> list[str]:
    out = [""] * len(values)
    groups: dict[type, list[int]] = {}
    for i, value in enumerate(values):
        if isinstance(value, str):
            out[i] = value
        elif not is_missing(value):
            groups.setdefault(type(value), []).append(i)
    for rows in groups.values():
        group = [values[i] for i in rows]
        try:
            texts = [str(v) for v in text_array(pa.array(group, from_pandas=True)).to_pylist()]
        except _CONVERSION_ERRORS:
            texts = [str(v) for v in group]
        for i, text in zip(rows, texts, strict=True):
            out[i] = text
    return out


def column_from_python(values: Sequence[Any]) -> pa.Array:
    """Python values (one column) as an Arrow array of their type; mixed types become text."""
    try:
        return pa.array(values, from_pandas=True)
    except _CONVERSION_ERRORS:
        return pa.array(values_text(values), pa.string())


def column_from_pandas(series: pd.Series[Any]) -> pa.Array:
    """One DataFrame column as an Arrow array (NaN/None -> null); mixed types become text."""
    try:
        return pa.array(series, from_pandas=True)
    except _CONVERSION_ERRORS:
        return pa.array(values_text(series.tolist()), pa.string())


def arrow_from_frame(frame: pd.DataFrame) -> pa.Table:
    """A DataFrame as an Arrow table with text column names (the index is not kept)."""
    arrays = [column_from_pandas(frame.iloc[:, i]) for i in range(frame.shape[1])]
    return pa.Table.from_arrays(arrays, names=[str(c) for c in frame.columns])


def text_table(
    table: pa.Table, doubles: Collection[str] = (), where: str = "the table"
) -> pa.Table:
    """Every column of ``table`` as text without nulls, those named in ``doubles`` as doubles
    (:func:`double_array`; ``where`` names the table in its errors)."""
    return pa.Table.from_arrays(
        [
            double_array(c, name, where) if name in doubles else text_array(c)
            for name, c in zip(table.column_names, table.columns, strict=True)
        ],
        names=table.column_names,
    )


def double_array(column: ArrowColumn, name: str, where: str) -> ArrowColumn:
    """``column`` as ``float64``: each value the double its text (:func:`text_array`) parses to.

    A ``float64`` column is taken as it is, since its text, the shortest
    round-trip form, parses back to the same double; any other column's text
    is cast by Arrow's correctly rounded parser. A missing value, or a text
    that is not a plain number (words, spaces, digits grouped with ``_``), is
    an :class:`AnonlabError` naming the column.
    """
    if pa.types.is_float64(column.type) and not column.null_count:
        return column
    try:
        return text_array(column).cast(pa.float64())
    except pa.ArrowInvalid as exc:
        detail = (str(exc).strip().splitlines() or ["no number"])[0]
        raise AnonlabError(
            f"column '{name}' of {where} is read as numbers but holds a value "
            f"that is not one ({detail}): read it as text"
        ) from None


def to_frame(table: pa.Table, *, arrow_strings: bool = False) -> pd.DataFrame:
    """An Arrow table as a pandas DataFrame.

    Text columns become ``object`` columns of Python ``str``, or with
    ``arrow_strings`` columns of ``pd.ArrowDtype(pa.string())`` that hold the
    Arrow arrays as they are: no Python object per value is made, so a
    million-row column is ready in microseconds instead of a tenth of a second
    (and ~50 bytes less per value). With ``arrow_strings`` a ``float64``
    column (one read as doubles) is Arrow-backed too, not copied into a
    NumPy block.
    """
    if not arrow_strings:
        frame: pd.DataFrame = table.to_pandas()
        return frame
    import pandas as pd

    def arrow_text(kind: pa.DataType) -> Any:
        if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_float64(kind):
            return pd.ArrowDtype(kind)
        return None

    wrapped: pd.DataFrame = table.to_pandas(types_mapper=arrow_text)
    return wrapped
