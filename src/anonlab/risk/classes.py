"""Equivalence classes of a table on the columns an attacker knows.

A table is read once: every attacker column is dictionary-encoded with
:func:`pandas.factorize` and the code rows are grouped with the project's one
group-by primitive, :func:`anonlab.grouping.group_tuples` (the same one
the lattice search uses for its frequency sets). Every figure of the risk
module is then computed from the classes (their sizes, their code tuples, their
weight sums), so its cost grows with the number of distinct combinations, not
with the number of rows.

A table is a DataFrame or the one table model, a
:class:`~anonlab.table.MicrodataTable`: then its frame is measured, and its
roles give the defaults of the role parameters (:func:`table_roles`).

Suppressed records follow ARX 3.9 (``DataHandleInput.internalIsOutlier``): a
record whose attacker columns all hold the suppression value ``*`` is
suppressed. It belongs to no class and is left out of every risk figure; only
its number is reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.dataset import Role
from anonlab.errors import AnonlabError
from anonlab.grouping import group_tuples
from anonlab.table import MicrodataTable

#: any NumPy array (codes, sizes, weights)
Array = NDArray[Any]

#: the value that marks a suppressed cell (ARX's and anonlab's releases)
SUPPRESSED = "*"


@dataclass(frozen=True)
class EncodedColumns:
    """Dictionary codes of some columns of a table.

    ``codes[r, j]`` is the code of row ``r``'s value in column ``j``;
    ``values[j][c]`` the value with code ``c``; ``cardinalities[j]`` the number
    of distinct values of column ``j``.
    """

    columns: tuple[str, ...]
    codes: Array  # (n, m), the narrowest integers that hold every column's codes
    values: tuple[Array, ...]
    cardinalities: tuple[int, ...]


@dataclass(frozen=True)
class Classes:
    """The equivalence classes of the records that are not suppressed.

    The rows are grouped once, on the attacker's columns followed by any
    ``extra`` columns (the sensitive attributes): these finest groups are the
    *cells*. ``cell_tuples[d]`` is cell ``d``'s code tuple on all those
    columns, ``cell_sizes[d]`` its number of records and ``cell_class[d]`` its
    equivalence class. ``row_class[r]`` is the class of row ``r`` (``-1`` for
    a suppressed row); ``sizes[c]`` the number of records of class ``c``
    (sdcMicro's ``fk``); ``tuples[c]`` the code tuple of class ``c`` on the
    attacker's columns.
    """

    encoded: EncodedColumns
    attacker: int
    row_class: Array
    sizes: Array
    tuples: Array
    cell_tuples: Array
    cell_sizes: Array
    cell_class: Array
    suppressed: int

    @property
    def columns(self) -> tuple[str, ...]:
        """The attacker's columns."""
        return self.encoded.columns[: self.attacker]

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Number of distinct values of each attacker column."""
        return self.encoded.cardinalities[: self.attacker]

    @property
    def count(self) -> int:
        """Number of equivalence classes."""
        return int(self.sizes.shape[0])

    @property
    def records(self) -> int:
        """Number of records that are not suppressed."""
        return int(self.sizes.sum())

    @property
    def kept(self) -> Array:
        """Boolean mask of the rows that are not suppressed."""
        return np.asarray(self.row_class >= 0)

    def extra_index(self, column: str) -> int:
        """Position of an extra (sensitive) column in the cell tuples."""
        return self.attacker + self.encoded.columns[self.attacker :].index(column)

    def class_sums(self, values: Array) -> Array:
        """Per-class sums of a per-row array (e.g. sampling weights: sdcMicro's ``Fk``)."""
        if self.row_class.shape[0] != values.shape[0]:
            raise ValueError(
                f"{values.shape[0]} values for {self.row_class.shape[0]} rows: "
                "classes made from a frequency set have no rows"
            )
        kept = self.kept
        return np.bincount(self.row_class[kept], weights=values[kept], minlength=self.count)


#: how messages call a column of each role, and the columns of each role
ROLE_TEXT = {
    Role.QUASI: "a quasi-identifier",
    Role.IDENTIFYING: "identifying",
    Role.SENSITIVE: "sensitive",
    Role.INSENSITIVE: "insensitive",
}
ROLE_PLURAL = {
    Role.QUASI: "quasi-identifiers",
    Role.IDENTIFYING: "identifying columns",
    Role.SENSITIVE: "sensitive columns",
    Role.INSENSITIVE: "insensitive columns",
}


def frame_of(data: pd.DataFrame | MicrodataTable) -> pd.DataFrame:
    """The records to measure: a DataFrame as it is, a table model's frame."""
    return data.frame if isinstance(data, MicrodataTable) else data


def table_roles(
    table: MicrodataTable, given: Sequence[str] | None, role: Role, parameter: str
) -> list[str]:
    """The columns that play ``role``: ``given``, or by default every column the table gives it.

    Given names must agree with the table's roles: a column the table gives
    another role is refused, naming ``parameter`` (a name the table lacks is
    left to :func:`check_columns`). Naming some of the table's columns of
    ``role`` is allowed (e.g. an attacker who knows fewer quasi-identifiers).
    """
    have = table.columns_with(role)
    if given is None:
        return have
    names = [str(c) for c in given]
    for name in names:
        other = table.roles.get(name)
        if other is not None and other != role:
            raise AnonlabError(
                f"{parameter} names '{name}', which the MicrodataTable makes "
                f"{ROLE_TEXT[other]}: name only its {ROLE_PLURAL[role]} "
                f"({', '.join(have) or 'none'}), or leave {parameter} out to take them all",
                parameter=parameter,
            )
    return names


def check_columns(
    frame: pd.DataFrame | Sequence[str], columns: Sequence[str], parameter: str
) -> None:
    """Refuse column names the table (a frame, or its column names) does not have, naming the
    parameter that gave them."""
    have = list(frame.columns) if isinstance(frame, pd.DataFrame) else list(frame)
    missing = [c for c in columns if c not in have]
    if missing:
        raise AnonlabError(
            f"{parameter} names columns the table does not have: {', '.join(missing)} "
            f"(its columns are: {', '.join(map(str, have))})",
            parameter=parameter,
        )


def encode_columns(data: pd.DataFrame | MicrodataTable, columns: Sequence[str]) -> EncodedColumns:
    """Dictionary-encode ``columns`` with :func:`pandas.factorize` (one pass over the rows).

    A table model's frame is encoded as read (its own codes merge values the
    risk figures keep apart, e.g. ``" a"`` and ``"a"``). Missing values get a
    code of their own, so an empty cell is a value like any other.
    """
    frame = frame_of(data)
    n = len(frame)
    parts: list[Array] = []  # each column's codes, narrowed as soon as they are made
    values: list[Array] = []
    cards: list[int] = []
    for column in columns:
        col_codes, uniques = _factorize(frame[column])
        uniques = np.asarray(uniques, dtype=object)
        missing = col_codes < 0
        if missing.any():
            col_codes = np.where(missing, len(uniques), col_codes)
            uniques = np.append(uniques, np.array([np.nan], dtype=object))
        parts.append(col_codes.astype(code_dtype(len(uniques))))
        values.append(uniques)
        cards.append(len(uniques))
    codes = np.empty((n, len(columns)), dtype=code_dtype(max(cards, default=1)), order="F")
    for j, part in enumerate(parts):  # filled column by column
        codes[:, j] = part
    return EncodedColumns(tuple(columns), codes, tuple(values), tuple(cards))


def code_dtype(cardinality: int) -> np.dtype[Any]:
    """The narrowest signed integer type that holds the codes ``0 .. cardinality - 1``.

    A released column of a generalization has few distinct values: its codes
    take a byte a row, not four (at a million rows and 9 columns, 9 MiB
    rather than 34 MiB while the classes are formed).
    """
    for kind in (np.int8, np.int16, np.int32):
        if cardinality <= np.iinfo(kind).max + 1:
            return np.dtype(kind)
    return np.dtype(np.int64)


def tuple_dtype(rows: int) -> np.dtype[Any]:
    """The type of the class and cell tuples: 32-bit codes (64-bit past 2**31 rows), whatever
    type the row codes are held in."""
    return np.dtype(np.int32 if rows < np.iinfo(np.int32).max else np.int64)


def _factorize(column: pd.Series) -> tuple[Array, Any]:
    """Codes (in order of first appearance, -1 for a missing value) and distinct values.

    A text column (pandas' Arrow-backed ``str``) or a categorical of text is
    factorized as it is, on its Arrow dictionary or its codes; any other column
    through its NumPy values. Both give the same codes and the same values.
    """
    dtype = column.dtype
    if isinstance(dtype, pd.StringDtype) or (
        isinstance(dtype, pd.CategoricalDtype)
        and pd.api.types.infer_dtype(dtype.categories, skipna=False) == "string"
    ):
        return pd.factorize(column)
    return pd.factorize(column.to_numpy())


def suppressed_rows(encoded: EncodedColumns, columns: int, value: str = SUPPRESSED) -> Array:
    """Rows whose first ``columns`` encoded columns all hold ``value`` (ARX: all QIs suppressed)."""
    n = encoded.codes.shape[0]
    if columns == 0:
        return np.zeros(n, dtype=bool)
    mask = np.ones(n, dtype=bool)
    for j in range(columns):
        hits = np.flatnonzero(encoded.values[j] == value)
        if hits.size == 0:
            return np.zeros(n, dtype=bool)
        mask &= encoded.codes[:, j] == int(hits[0])
    return mask


def equivalence_classes(
    data: pd.DataFrame | MicrodataTable, columns: Sequence[str], extra: Sequence[str] = ()
) -> Classes:
    """Group the records of ``data`` that are not suppressed by their values on ``columns``.

    The rows are visited once: they are grouped on ``columns`` and ``extra``
    together (the cells); the classes are then formed from the cells, so any
    later work on ``extra`` (e.g. sensitive values per class) sees only
    distinct combinations. Records with no attacker column at all form one class.
    """
    frame = frame_of(data)
    encoded = encode_columns(frame, [*columns, *extra])
    m = len(columns)
    suppressed = suppressed_rows(encoded, m)
    kept = np.flatnonzero(~suppressed)
    codes = encoded.codes
    rows = kept if kept.size < len(frame) else None  # grouped in place: no copy of the rows
    if codes.shape[1] == 0:
        cell_of_row = np.zeros(kept.size, dtype=np.int64)
        first = np.zeros(1 if kept.size else 0, dtype=np.int64)
    else:
        cell_of_row, first = group_tuples(codes, encoded.cardinalities, rows)
    cell_tuples = codes[first if rows is None else kept[first]].astype(tuple_dtype(len(frame)))
    cell_sizes = np.bincount(cell_of_row, minlength=first.size).astype(np.int64)
    if m == 0:
        cell_class = np.zeros(first.size, dtype=np.int64)
        class_first = np.zeros(1 if first.size else 0, dtype=np.int64)
    else:
        cell_class, class_first = group_tuples(cell_tuples[:, :m], encoded.cardinalities[:m])
    sizes = np.bincount(cell_class, weights=cell_sizes, minlength=class_first.size)
    row_class = np.full(len(frame), -1, dtype=np.int64)
    row_class[kept] = cell_class[cell_of_row]
    return Classes(
        encoded=encoded,
        attacker=m,
        row_class=row_class,
        sizes=sizes.astype(np.int64),
        tuples=cell_tuples[class_first, :m],
        cell_tuples=cell_tuples,
        cell_sizes=cell_sizes,
        cell_class=cell_class,
        suppressed=int(suppressed.sum()),
    )


def size_distribution(sizes: Array) -> dict[int, int]:
    """Number of classes of each size, by increasing size (ARX's ``RiskModelHistogram``)."""
    if sizes.size == 0:
        return {}
    counts = np.bincount(sizes)
    present = np.flatnonzero(counts)
    return {int(s): int(counts[s]) for s in present}


def frequency_classes(
    columns: Sequence[str],
    values: Sequence[Sequence[str]],
    tuples: Array,
    sizes: Array,
    suppressed: int,
) -> Classes:
    """The classes of a table known only by its frequency set on the attacker's columns.

    ``tuples[c]`` is class ``c``'s code tuple (codes index ``values``, each
    column's distinct values over the whole table, suppressed rows included,
    in order of first appearance, as :func:`encode_columns` numbers them),
    ``sizes[c]`` its records; the classes come in order of first appearance
    and the suppressed records (``suppressed`` of them) are already left out.
    These are exactly the fields :func:`equivalence_classes` gives the same
    table without ``extra`` columns, except the per-row ones: there are no
    rows, so ``row_class`` and the codes are empty (:meth:`Classes.class_sums`
    refuses to run). The cells are the classes.
    """
    m = len(columns)
    arrays = tuple(np.asarray(list(v), dtype=object) for v in values)
    class_tuples = np.asarray(tuples, dtype=np.int64).reshape(-1, m)
    class_sizes = np.asarray(sizes, dtype=np.int64)
    encoded = EncodedColumns(
        tuple(columns), np.zeros((0, m), dtype=np.int64), arrays, tuple(len(v) for v in arrays)
    )
    return Classes(
        encoded=encoded,
        attacker=m,
        row_class=np.zeros(0, dtype=np.int64),
        sizes=class_sizes,
        tuples=class_tuples,
        cell_tuples=class_tuples,
        cell_sizes=class_sizes,
        cell_class=np.arange(class_sizes.shape[0], dtype=np.int64),
        suppressed=int(suppressed),
    )
