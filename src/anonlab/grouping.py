"""The project's one group-by of code rows (NumPy and pandas only).

Every part of anonlab that groups the rows of a code matrix (the lattice
search's frequency sets, the risk module's equivalence classes and SUDA2's
subsets of key variables, the generalization checker) calls
:func:`group_tuples`. It lives in a module of its own so that a caller outside
the lattice search does not load the lattice package to use it.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

#: the largest mixed-radix key space built before columns are re-factorized
#: (a quarter of int64's range, so that ``key * card + code`` cannot overflow)
MAX_KEY = np.iinfo(np.int64).max // 4


def pack_codes(columns: Sequence[NDArray[Any]], radix: Sequence[int]) -> NDArray[np.int64]:
    """Rows of codes, one array per column, as one int64 key each by mixed radix,
    ``key = (...(c_0 * K_1 + c_1) * K_2 + ...) + c_{m-1}`` with ``K_i = radix[i]``.

    The product of ``radix`` must not exceed :data:`MAX_KEY` (callers check; see
    :func:`group_tuples` for keys that would overflow)."""
    n = columns[0].shape[0] if columns else 0
    key = np.zeros(n, dtype=np.int64)
    for column, size in zip(columns, radix, strict=True):
        key *= size
        key += column
    return key


def unpack_codes(keys: NDArray[np.int64], radix: Sequence[int]) -> list[NDArray[np.int64]]:
    """The columns of codes that :func:`pack_codes` packed into ``keys``."""
    columns: list[NDArray[np.int64]] = []
    rest = keys
    for size in reversed(radix):
        rest, code = np.divmod(rest, size)
        columns.append(code)
    return columns[::-1]


def group_tuples(
    tuples: NDArray[Any], cardinalities: Sequence[int], rows: NDArray[Any] | None = None
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Group rows of a code matrix: returns ``(inverse, representatives)``.

    ``rows`` (increasing row indices) groups those rows only, as if the matrix
    were ``tuples[rows]`` (``inverse`` and ``representatives`` then refer to
    positions in ``rows``), one column at a time instead of copying the matrix.

    ``inverse[r]`` is the group of row ``r`` (groups numbered by first
    appearance) and ``representatives[g]`` the row index of group ``g``'s first
    member. Rows are combined into one int64 key by mixed radix,
    ``key = (...(c_0 * K_1 + c_1) * K_2 + ...) + c_{m-1}`` with ``K_i`` column
    ``i``'s cardinality; when the key space would overflow, columns are
    re-factorized on the way. A key space no larger than the rows is grouped
    by a table over the keys (:func:`first_appearance_groups`), the same groups
    as :func:`pandas.factorize` gives without its hash table (about 32 bytes a
    row: 32 MiB at a million rows).
    """
    m = tuples.shape[1]
    n = tuples.shape[0] if rows is None else rows.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key = np.zeros(n, dtype=np.int64)
    space = 1
    for i in range(m):
        card = max(int(cardinalities[i]), 1)
        if space * card > MAX_KEY:
            codes, uniques = pd.factorize(key)
            key = codes.astype(np.int64)
            space = len(uniques)
        key = key * card + (tuples[:, i] if rows is None else tuples[:, i][rows])
        space *= card
    if space <= n and key.min() >= 0 and key.max() < space:
        return first_appearance_groups(key, space)
    inverse, uniques = pd.factorize(key)
    first = np.empty(len(uniques), dtype=np.int64)
    # with repeated indices the last assignment wins: reversed, that is the first row
    first[inverse[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
    return inverse.astype(np.int64), first


def first_appearance_groups(key: NDArray[Any], space: int) -> tuple[NDArray[Any], NDArray[Any]]:
    """``(inverse, first)`` of keys in ``[0, space)``, groups numbered by first appearance.

    ``first_at[v]`` is the first row holding key ``v`` (the reversed rows
    assigned last win), the keys present are numbered in order of their first
    rows, and each row takes its key's number: :func:`pandas.factorize`'s codes,
    with one ``space``-sized table instead of a hash table over the rows.
    """
    n = key.shape[0]
    first_at = np.full(space, n, dtype=np.int64)
    first_at[key[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
    present = np.flatnonzero(first_at < n)
    order = np.argsort(first_at[present], kind="stable")
    first = first_at[present[order]]
    number = first_at  # reused: the keys present get their group's number
    number[present[order]] = np.arange(order.size, dtype=np.int64)
    return number[key], first


def _pandas_hash_table() -> Any:
    """pandas' ``Int64HashTable`` (what ``pd.factorize`` hashes int64 values with), or
    ``None`` if this pandas keeps it elsewhere or it does not factorize as ``pd.factorize``
    does (a private class: checked once on a small array, so any other pandas falls back)."""
    try:
        table_class = importlib.import_module("pandas._libs.hashtable").Int64HashTable
        probe = np.array([5, -3, 5, 7, -3, 0], dtype=np.int64)
        uniques, inverse = table_class(8).factorize(probe)
        expected_inverse, expected_uniques = pd.factorize(probe)
        if not (
            np.array_equal(np.asarray(inverse), expected_inverse)
            and np.array_equal(np.asarray(uniques), expected_uniques)
        ):
            return None  # pragma: no cover - another pandas' signature
    except Exception:  # pragma: no cover - a pandas that moved or changed its hash tables
        return None
    return table_class


_Int64HashTable: Any = _pandas_hash_table()


def factorize_int64(
    values: NDArray[Any], size_hint: int | None = None
) -> tuple[NDArray[Any], NDArray[Any]]:
    """``(inverse, uniques)`` of an int64 array, uniques in order of first appearance.

    What ``pd.factorize`` returns for int64 values (which have no missing
    value), from pandas' hash table directly: ``pd.factorize``'s checks of the
    input cost as much as the hashing for the few thousand keys of a roll-up.
    ``size_hint`` sizes the table at first (default: one slot per value, as
    ``pd.factorize`` does); it grows as distinct values come, so a small hint
    for many values with few distinct ones keeps the table small (the same
    result: the order of first appearance does not depend on the table's size).
    """
    if _Int64HashTable is None:  # pragma: no cover - pandas without its hash table module
        inverse, uniques = pd.factorize(values)
        return np.asarray(inverse, dtype=np.int64), np.asarray(uniques, dtype=np.int64)
    hint = int(values.shape[0]) if size_hint is None else min(size_hint, int(values.shape[0]))
    table = _Int64HashTable(max(hint, 1))
    uniques, inverse = table.factorize(np.ascontiguousarray(values, dtype=np.int64))
    return np.asarray(inverse, dtype=np.int64), np.asarray(uniques, dtype=np.int64)
