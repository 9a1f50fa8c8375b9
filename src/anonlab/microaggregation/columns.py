"""Checking MDAV's group size k against the table.

The column encodings that microaggregation shares with the measures (numeric
matrices, standardization, categorical codes) are in :mod:`anonlab.encoding`.
"""

from __future__ import annotations

import numpy as np

from anonlab.errors import AnonlabError


def check_k(k: int, n: int) -> None:
    """k must be at least 1 and at most the number of records."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise AnonlabError(f"k must be a whole number, got {k!r}", parameter="k")
    if k < 1:
        raise AnonlabError(f"k must be at least 1, got {k}", parameter="k")
    if k > n:
        raise AnonlabError(f"k = {k} is larger than the number of records ({n}): choose k <= {n}")
