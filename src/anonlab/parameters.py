"""Checks of the parameters that several method families share."""

from __future__ import annotations

import numpy as np

from anonlab.errors import AnonlabError


def check_k(k: int, n: int | None = None) -> None:
    """``k`` (the smallest group or class size) must be a whole number of at least 1 and,
    when the number of records ``n`` is given, at most ``n``."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise AnonlabError(f"k must be a whole number, got {k!r}", parameter="k")
    if k < 1:
        raise AnonlabError(f"k must be at least 1 (got {k}): choose e.g. 5", parameter="k")
    if n is not None and k > n:
        raise AnonlabError(
            f"k = {k} is larger than the table's {n} records: choose k <= {n}", parameter="k"
        )
