"""Frequencies of key tuples when a blank cell matches every value (sdcMicro's ``alpha``).

A *pattern* is a row of key codes, ``BLANK`` (-1) where a cell is suppressed.
Two patterns are *compatible* when they agree wherever both have a value. The
frequency ``f_k`` of a pattern ``s`` (docs/suppression.md, "Blanks") is the
weighted count of the records whose pattern is compatible with ``s``:

- the records of ``s`` itself count 1;
- for ``s`` without a blank: every other compatible pattern has a blank, and
  its records count ``alpha``, except a pattern of blanks only, which counts 0;
- for ``s`` with some blanks: records without a blank count 1, records with
  a blank count ``alpha``;
- a pattern of blanks only has ``f_k = N``, the records of its block.

This is the count sdcMicro 5.8.1's ``freqCalc`` makes (its ``alpha`` weights the
records with missing keys; ``alpha = 1``, its default, counts every wildcard
match). The functions here work on the distinct patterns and their record
counts, never on rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.grouping import group_tuples

BLANK = -1

#: pattern kinds: no blank, some blanks, blanks only
COMPLETE, PARTIAL, EMPTY = 0, 1, 2


def pattern_kinds(values: NDArray[Any]) -> NDArray[np.int8]:
    """:data:`COMPLETE`, :data:`PARTIAL` or :data:`EMPTY` for each row of ``values``."""
    blanks = (values < 0).sum(axis=1)
    kinds = np.full(values.shape[0], PARTIAL, dtype=np.int8)
    kinds[blanks == 0] = COMPLETE
    kinds[blanks == values.shape[1]] = EMPTY
    return kinds


def weight_given(kind_of_other: int, alpha: float) -> tuple[float, float]:
    """The weight a pattern without a blank and one with some blanks give to the records of
    another, compatible pattern of kind ``kind_of_other`` (module text)."""
    if kind_of_other == COMPLETE:
        return 1.0, 1.0
    if kind_of_other == PARTIAL:
        return alpha, alpha
    return 0.0, alpha


def blank_masks(values: NDArray[Any]) -> NDArray[np.int64]:
    """Each row's blank cells as a bit mask (bit ``j`` for column ``j``)."""
    bits = np.left_shift(np.int64(1), np.arange(values.shape[1], dtype=np.int64))
    out: NDArray[np.int64] = ((values < 0).astype(np.int64) * bits).sum(axis=1)
    return out


def _matching_counts(
    queries: NDArray[Any], others: NDArray[Any], counts: NDArray[Any], keep: list[int]
) -> NDArray[np.float64]:
    """For each query row, the summed ``counts`` of the ``others`` rows equal to it on the
    columns ``keep`` (whose cells are all values, no blank)."""
    if not keep:
        return np.full(queries.shape[0], float(counts.sum()))
    both = np.concatenate([queries[:, keep], others[:, keep]])
    cards = [int(both[:, j].max()) + 1 for j in range(len(keep))]
    inverse, firsts = group_tuples(both, cards)
    totals = np.bincount(
        inverse[queries.shape[0] :], weights=counts.astype(np.float64), minlength=firsts.size
    )
    out: NDArray[np.float64] = totals[inverse[: queries.shape[0]]]
    return out


def wildcard_frequencies(
    values: NDArray[Any], counts: NDArray[Any], alpha: float
) -> NDArray[np.float64]:
    """``f_k`` of every pattern (module text) from the distinct patterns and their counts.

    Patterns are taken class by class of their blank cells: a pattern with blanks
    ``A`` and one with blanks ``B`` are compatible when they are equal on the other
    columns, so each pair of classes is one grouping of those columns
    (``O(c^2 * D)`` for ``c`` blank classes and ``D`` patterns; ``c`` is small: a
    table before suppression has one class, after it a few).
    """
    n, m = values.shape
    total = float(counts.sum())
    masks = blank_masks(values)
    kinds = pattern_kinds(values)
    fk = np.zeros(n, dtype=np.float64)
    live = counts > 0
    classes = {int(a): np.flatnonzero(masks == a) for a in np.unique(masks)}
    full = (1 << m) - 1
    for a, queries in classes.items():
        if a == full:
            fk[queries] = total
            continue
        query_kind = COMPLETE if a == 0 else PARTIAL
        for b, others in classes.items():
            others = others[live[others]]
            if others.size == 0:
                continue
            other_kind = COMPLETE if b == 0 else (EMPTY if b == full else PARTIAL)
            weight = weight_given(other_kind, alpha)[0 if query_kind == COMPLETE else 1]
            if weight == 0.0:
                continue
            keep = [j for j in range(m) if not (a | b) >> j & 1]
            matched = _matching_counts(values[queries], values[others], counts[others], keep)
            fk[queries] += weight * matched
        if query_kind == PARTIAL:  # its own records were counted with alpha among its class
            fk[queries] += (1.0 - alpha) * counts[queries]
    fk[kinds == EMPTY] = total
    return fk
