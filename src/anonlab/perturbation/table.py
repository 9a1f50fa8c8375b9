"""The perturbation family's view of a table: its chosen numeric columns, checked.

Tables come in through the one reader, :func:`anonlab.io.read_table`, every
column as its text (``dtype=str``), so pass-through columns such as ZIP codes
keep their exact spelling and are written back unchanged by the one writer
(:func:`anonlab.io.write_table`). The chosen columns become numbers through
the table model (:class:`anonlab.table.MicrodataTable`, number rule
``"exact"``: Arrow's correctly rounded parse, integer columns told apart;
:mod:`anonlab.textnumbers`), so a CSV, Parquet, Excel or database input gives
the same numbers as the same values in a DataFrame. This module adds what the
orthogonal transforms ask of the choice (:func:`check_names`: at least two
columns, none twice) and builds release tables without copying.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from anonlab.errors import AnonlabError
from anonlab.table import NumericColumns, read_numbers
from anonlab.textnumbers import frame_labels

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

__all__ = [
    "NumericColumns",
    "check_names",
    "frame_labels",
    "numeric_columns",
    "replaced_columns",
    "with_columns",
]


def numeric_columns(
    frame: pd.DataFrame, columns: Sequence[str] | None, *, allow_constant: bool = False
) -> NumericColumns:
    """Check and convert the chosen columns: present, numeric, no gap, not constant, >= 2.

    ``columns=None`` chooses every column. Values come out in Fortran order
    (each column contiguous), one copy, by the table model's ``"exact"`` rule
    (:func:`anonlab.table.read_numbers`).
    """
    available = [str(c) for c in frame.columns]
    names = available if columns is None else [str(c) for c in columns]
    check_names(names, available)
    return read_numbers(frame, names, "exact", allow_constant=allow_constant)


def check_names(names: list[str], available: list[str]) -> None:
    """Refuse a chosen column twice (in the header or the choice), fewer than 2, unknown ones."""
    if len(set(available)) != len(available):
        counts = Counter(available)
        repeated = [n for n in names if counts[n] > 1]
        if repeated:
            raise AnonlabError(
                f"column '{repeated[0]}' appears twice in the header of the "
                "table: rename one of them"
            )
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise AnonlabError(
            f"columns names '{dup}' twice: name each column once", parameter="columns"
        )
    if len(names) < 2:
        raise AnonlabError(
            f"{len(names)} column(s) chosen: an orthogonal transform needs at "
            "least 2 numeric columns; choose more columns"
        )
    missing = [n for n in names if n not in available]
    if missing:
        raise AnonlabError(f"unknown column '{missing[0]}': the table has {', '.join(available)}")


def replaced_columns(
    frame: pd.DataFrame, names: Sequence[str], columns: Sequence[NDArray[Any]]
) -> pd.DataFrame:
    """A new table: ``frame``'s columns and index, the named columns' values replaced.

    Nothing is copied: the new table holds ``frame``'s other columns and the
    given arrays as they are (so a release of a million records in 20 columns
    costs no second 160 MB). ``frame`` is left as it was.
    """
    import pandas as pd

    position = {str(c): i for i, c in enumerate(frame.columns)}
    values: list[Any] = [frame.iloc[:, i].array for i in range(frame.shape[1])]
    for name, column in zip(names, columns, strict=True):
        values[position[name]] = column
    out = pd.DataFrame(dict(enumerate(values)), index=frame.index, copy=False)
    out.columns = frame.columns.copy()
    return out


def with_columns(
    frame: pd.DataFrame, names: Sequence[str], columns: Sequence[NDArray[Any]]
) -> pd.DataFrame:
    """``frame`` (changed in place) with the named columns replaced, same names and order."""
    labels = frame_labels(frame)
    for name, values in zip(names, columns, strict=True):
        frame[labels[name]] = values
    return frame
