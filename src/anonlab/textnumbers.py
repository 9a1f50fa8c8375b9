"""Numeric columns read exactly from text: the "exact" number rule of the table model.

Tables come in through the one reader, :func:`anonlab.io.read_table`; read
as text (``dtype=str``) a pass-through column such as a ZIP code keeps its
exact spelling. :func:`exact_matrix` turns chosen columns into one
Fortran-ordered ``N x d`` float64 array (each column contiguous):

* a text column whose every value is a whole number (``[+-]digits``) is an
  integer column (a method that restores values can round them back);
* any other text is parsed as a double by Arrow's correctly rounded parser,
  so the shortest round-trip text of a double (as the one writer prints it)
  reads back as exactly that double;
* a DataFrame's NumPy numeric columns are taken as they are.

A CSV, Parquet, Excel or database input therefore gives the same numbers as
the same values in a DataFrame. Text columns that are Arrow arrays
(``read_table(..., strings="arrow")``) are matched and cast by Arrow
directly, without a Python ``str`` per value; columns of Python ``str`` give
the same numbers.

:func:`parse_numbers` is the looser rule of the other families: a column's
values as numbers, NaN where one does not parse, each non-integer value
rounded correctly.

The exact rule is used by :class:`anonlab.table.MicrodataTable` with
``numbers="exact"`` (the perturbation family, whose key must restore the
input exactly). Missing, infinite and non-numeric values are refused with the
column's name and record (1-based).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from anonlab.errors import AnonlabError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from numpy.typing import NDArray

    FloatArray = NDArray[np.float64]

INTEGER_TEXT = r"^[+-]?[0-9]+$"
HEAD_ROWS = 1024  # values matched first when telling integer columns from fractions
NUMBER_TEXT = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?$|^[+-]?(inf|infinity|nan)$"
# Text read as "no value" (the null spellings of Arrow's CSV reader, and how
# pandas prints a missing value as text: 'nan', 'None', '<NA>').
MISSING_TEXT = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)


def frame_labels(frame: pd.DataFrame) -> dict[str, Any]:
    """Each DataFrame column label by its text (labels may be integers, as NumPy data gives)."""
    return {str(c): c for c in frame.columns}


def exact_matrix(
    frame: pd.DataFrame, names: Sequence[str], *, allow_constant: bool = False
) -> tuple[FloatArray, list[bool]]:
    """The named columns as an ``N x d`` Fortran-ordered float64 array, and which hold integers.

    Refuses a table without records, a missing, infinite or non-numeric value
    and, unless ``allow_constant``, a constant column (no z-score exists).
    The names must be columns of ``frame`` (checked by the caller).
    """
    if frame.shape[0] == 0:
        raise AnonlabError("the table has no records: give at least one record")
    labels = frame_labels(frame)
    values = np.empty((frame.shape[0], len(names)), dtype=np.float64, order="F")
    integer: list[bool] = []
    for j, name in enumerate(names):
        integer.append(_fill_column(values[:, j], frame[labels[name]], name))
    check_values(names, values, allow_constant)
    return values, integer


def not_numeric(name: str, row: int | None = None, text: str | None = None) -> AnonlabError:
    """The error for a value of column ``name`` that is not a number (record 1-based)."""
    where = "" if row is None else f" (record {row + 1}: {text!r})"
    return AnonlabError(
        f"column '{name}' is not numeric{where}: choose numeric columns (z-scores need numbers)"
    )


def missing_value(name: str, row: int) -> AnonlabError:
    """The error for a missing or infinite value of column ``name`` (record 1-based)."""
    return AnonlabError(
        f"column '{name}' has a missing or infinite value (record "
        f"{row + 1}): fill or drop such records first"
    )


def _fill_column(target: FloatArray, column: pd.Series[Any], name: str) -> bool:
    """Write ``column`` as doubles into ``target``; returns whether it holds integers.

    A NumPy numeric column is copied as it is (``NaN`` is a gap, found by
    :func:`check_values`); text, categories and decimals go through Arrow.
    """
    kind = column.dtype.kind  # 'O' for text, categories and decimals
    if kind in "iuf":
        target[:] = column.to_numpy(dtype=np.float64, na_value=np.nan)
        return kind in "iu"
    values, integer = _arrow_numbers(column, name)
    target[:] = values
    return integer


def _arrow_numbers(column: pd.Series[Any], name: str) -> tuple[FloatArray, bool]:
    """Doubles of a text, categorical or decimal column (see the module docstring)."""
    import pyarrow as pa

    try:
        arr: Any = pa.array(column, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise not_numeric(name) from None
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return _parse_text(arr, name)
    if pa.types.is_decimal(arr.type):  # e.g. money in a database's export
        arr = arr.cast(pa.float64())
    if pa.types.is_null(arr.type) and len(arr):  # all missing (a Parquet column of nulls)
        raise missing_value(name, 0)
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        raise not_numeric(name)
    _refuse_nulls(arr, name)
    return _doubles(arr), pa.types.is_integer(arr.type)


def _parse_text(arr: pa.Array, name: str) -> tuple[FloatArray, bool]:
    """Integers when every value is ``[+-]digits`` and fits 64 bits, else doubles.

    An integer column stays one when a value is beyond 2**53 (such as
    9007199254740993): it is rounded to the nearest double, the double its
    text parses to.

    The spelling is checked first: Arrow's integer cast is slow to fail on a
    column of fractions, and it also takes ``0x10``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    _refuse_nulls(arr, name)
    if _integer_spelled(arr):
        plain = pc.replace_substring_regex(arr, r"^\+", "")  # Arrow refuses "+5"
        try:
            integers = plain.cast(pa.int64())
        except pa.ArrowInvalid:
            pass  # beyond 64 bits: read as doubles
        else:  # rounded to the nearest double above 2**53, as NumPy's astype rounds
            return _doubles(pc.cast(integers, pa.float64(), safe=False)), True
    try:
        return _doubles(arr.cast(pa.float64())), False
    except pa.ArrowInvalid:
        raise _bad_text(arr, name) from None


def _integer_spelled(arr: pa.Array) -> bool:
    """Whether every value of a text column is spelled ``[+-]digits`` (:data:`INTEGER_TEXT`).

    The first :data:`HEAD_ROWS` values are matched first: a column of
    fractions is told apart there, without matching its other values.
    """
    import pyarrow.compute as pc

    def every(part: pa.Array) -> bool:
        return pc.all(pc.match_substring_regex(part, INTEGER_TEXT)).as_py() is not False

    return every(arr.slice(0, HEAD_ROWS)) and every(arr)


def _refuse_nulls(arr: pa.Array, name: str) -> None:
    if arr.null_count:
        import pyarrow.compute as pc

        raise missing_value(name, int(pc.index(arr.is_null(), True).as_py()))


def _bad_text(arr: pa.Array, name: str) -> AnonlabError:
    """The error for the first value of a text column that is not a number.

    Values not spelled as a plain number (:data:`NUMBER_TEXT`) are tried one by
    one with Arrow's own cast, so a long column is not scanned value by value.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    plain = pc.match_substring_regex(arr, NUMBER_TEXT, ignore_case=True)
    odd = np.flatnonzero(~np.asarray(plain.to_numpy(zero_copy_only=False), dtype=bool))
    for row in itertools.chain(odd.tolist(), range(len(arr))):  # all only if the odd ones pass
        text = str(arr[row].as_py())
        try:
            pa.array([text], pa.string()).cast(pa.float64())
        except pa.ArrowInvalid:
            if text.strip() in MISSING_TEXT:
                return missing_value(name, row)
            return not_numeric(name, row, text)
    return not_numeric(name)


def _doubles(arr: pa.Array) -> FloatArray:
    import pyarrow as pa

    return np.asarray(arr.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def check_values(names: Sequence[str], values: FloatArray, allow_constant: bool) -> None:
    """Refuse a missing or infinite value and, unless ``allow_constant``, a constant column."""
    if not np.isfinite(values).all():
        bad = ~np.isfinite(values)
        col = int(np.argmax(bad.any(axis=0)))
        raise missing_value(names[col], int(np.argmax(bad[:, col])))
    if not allow_constant:
        spread = values.max(axis=0) - values.min(axis=0)
        if np.any(spread == 0):
            col = int(np.argmax(spread == 0))
            raise AnonlabError(
                f"column '{names[col]}' is constant: a z-score is impossible; "
                "leave it out of columns"
            )


def parse_numbers(series: pd.Series) -> pd.Series:
    """The values as numbers (NaN where one does not parse); text is stripped first.

    A column of text whose every value parses as it is (pandas skips the
    spaces around a number) is not stripped: the same digits give the same
    number, and the copy and strip are most of the work.
    """
    import pandas as pd

    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return series.astype(np.float64)  # a NumPy dtype: no lookup by name
    if series.dtype == object and pd.api.types.infer_dtype(series, skipna=False) == "string":
        numbers = pd.to_numeric(series, errors="coerce")
        if not numbers.isna().any():
            return _correctly_rounded(series, numbers)
    text = series.astype(str).str.strip()
    return _correctly_rounded(text, pd.to_numeric(text, errors="coerce"))


def _correctly_rounded(text: pd.Series, numbers: pd.Series) -> pd.Series:
    """``numbers`` (pandas' parse of ``text``) with every non-integer value parsed again by
    Arrow, which rounds correctly to the nearest double.

    pandas' ``to_numeric`` may miss by a unit in the last place on 17-digit
    decimals (``"27.400000000000002"`` gives 27.4), which is how doubles are
    written out; Arrow's parser, which the engines read with, does not. Which
    values parse stays pandas' decision; a column Arrow cannot read keeps
    pandas' values. A column of whole numbers stays pandas' integers, but for
    a ``"-0"`` (Arrow's text of the double -0.0), which is -0.0 as Arrow parses it.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    if numbers.dtype != np.float64:
        if numbers.dtype.kind != "i" or not (numbers == 0).any():
            return numbers  # integers (or nothing parsed): exact already
        # a "-0" (a double -0.0 written as text, as Arrow writes it) parses as the integer 0:
        # keep its sign, as Arrow's parse (the engines') and a non-integer column's do
        zero = (numbers == 0).to_numpy()
        signs = pc.starts_with(
            pc.utf8_trim_whitespace(pa.array(text.to_numpy()[zero], type=pa.string())), "-"
        )
        negative = np.zeros(zero.size, dtype=bool)
        negative[zero] = np.asarray(signs.to_numpy(zero_copy_only=False), dtype=bool)
        if not negative.any():
            return numbers
        signed = numbers.to_numpy(dtype=np.float64)
        signed[negative] = -0.0
        return pd.Series(signed, index=numbers.index, name=numbers.name)

    parsed = numbers.notna().to_numpy()
    try:
        digits = pa.array(text.to_numpy()[parsed], type=pa.string())
        exact = pc.cast(pc.utf8_trim_whitespace(digits), pa.float64())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return numbers
    values = numbers.to_numpy(copy=True)
    values[parsed] = exact.to_numpy(zero_copy_only=False)
    return pd.Series(values, index=numbers.index, name=numbers.name)
