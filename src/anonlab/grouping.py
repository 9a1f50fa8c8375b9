"""The project's one group-by of code rows (NumPy and pandas only).

Every part of anonlab that groups the rows of a code matrix (the lattice
search's frequency sets, the risk module's equivalence classes and SUDA2's
subsets of key variables, the generalization checker) calls
:func:`group_tuples`. It lives in a module of its own so that a caller outside
the lattice search does not load the lattice package to use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

#: the largest mixed-radix key space built before columns are re-factorized
#: (a quarter of int64's range, so that ``key * card + code`` cannot overflow)
MAX_KEY = np.iinfo(np.int64).max // 4


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
