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
    tuples: NDArray[Any], cardinalities: Sequence[int]
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Group rows of a code matrix: returns ``(inverse, representatives)``.

    ``inverse[r]`` is the group of row ``r`` (groups numbered by first
    appearance) and ``representatives[g]`` the row index of group ``g``'s first
    member. Rows are combined into one int64 key by mixed radix,
    ``key = (...(c_0 * K_1 + c_1) * K_2 + ...) + c_{m-1}`` with ``K_i`` column
    ``i``'s cardinality; when the key space would overflow, columns are
    re-factorized on the way.
    """
    n, m = tuples.shape
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
        key = key * card + tuples[:, i]
        space *= card
    inverse, uniques = pd.factorize(key)
    first = np.empty(len(uniques), dtype=np.int64)
    # with repeated indices the last assignment wins: reversed, that is the first row
    first[inverse[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
    return inverse.astype(np.int64), first
