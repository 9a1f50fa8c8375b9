"""SUDA2 scores: special uniques found by their minimal sample uniques, as sdcMicro scores them.

Sources: Elliot, Manning and Ford, "A computational algorithm for handling the
special uniques problem", IJUFKS 10(5), 2002 (SUDA); Manning, Haglin and Keane,
"A recursive search algorithm for statistical disclosure assessment", Data
Min. Knowl. Discov. 16, 2008 (SUDA2); the implementation of sdcMicro 5.8.1,
``R/suda2.R`` and ``src/Suda2.h`` (defaults ``DisFraction = 0.01``,
``original_scores = TRUE``).

* A *minimal sample unique* (MSU) of a record is a set of key variables on
  which the record's values occur in no other record, while on every proper
  subset they do. Only records unique on all key variables have MSUs.
* SUDA score of a record: ``sum over its MSUs of (M - |MSU|)!`` with ``M`` the
  number of key variables (at least 3: sdcMicro pads one or two key variables
  with constant columns).
* DIS-SUDA score (Elliot, "DIS: a new approach to the measurement of
  statistical disclosure risk", Risk Management 2(4), 2000), as sdcMicro
  computes it: ``Dis = U d / (U d + P (1 - d))`` with ``d = DisFraction``,
  ``U`` the sample uniques and ``P`` the records in classes of exactly two;
  ``Q = 1 + (8 - M) / 20``; ``A = sum over scored records of score^-Q``;
  ``DIS = 1 / (1 + (U / Dis - U) / (score^Q * A))``, 0 for a score of 0.
  sdcMicro computes ``Dis`` and ``Q`` in single precision, and counts in
  ``U`` only the uniques alone in their bucket of its 16-bit record hash (a
  unique sharing a bucket with another record is not counted); both are kept
  here so that the scores compare with sdcMicro's. The hash is taken over the
  numbers sdcMicro receives: integer values as they are, text as factor level
  numbers (levels in C-locale order, as ``as.numeric(factor(x))`` gives them).

The search here is level-wise over subsets of the key variables and runs on
the table's distinct key combinations: a subset is examined only while some
unique record has no unique proper subset of it (Apriori pruning), and each
examination is one group-by of the distinct combinations with the project's
:func:`~anonlab.lattice.freqset.group_tuples`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from anonlab.lattice.freqset import group_tuples
from anonlab.risk.classes import Array, Classes

#: sdcMicro's default DisFraction
DIS_FRACTION = 0.01
#: SUDA2 is exponential in the number of key variables: more than this and it is skipped
MAX_COLUMNS = 16
#: the work (distinct combinations grouped, summed over the column subsets tried)
#: a release report allows SUDA2 before it leaves the scores out; ``anonlab risk``
#: has no such limit, as sdcMicro has none
RELEASE_SUDA_BUDGET = 2_000_000


class SudaBudgetExceededError(Exception):
    """The MSU search would group more combinations than its budget allows."""
_DIS_BREAKS = tuple(round(0.1 * i, 1) for i in range(8))


@dataclass(frozen=True)
class SudaScores:
    """Per-class SUDA2 results (every record of a class shares them).

    ``msu_counts[c, s - 1]`` is the number of MSUs of size ``s`` of class
    ``c``'s record (0 unless the class has one record).
    """

    msu_counts: Array
    scores: Array
    dis_scores: Array
    uniques_counted: int


def _weights(columns: int) -> Array:
    """``(M - s)!`` for MSU sizes ``s = 1..M`` (``M`` at least 3, as sdcMicro pads)."""
    m = max(columns, 3)
    return np.array([float(math.factorial(m - s)) for s in range(1, columns + 1)])


def _group_counts(tuples: Array, cards: Sequence[int], sizes: Array) -> tuple[Array, Array]:
    """Group the distinct combinations on some columns: ``(group of each, records per group)``."""
    inverse, first = group_tuples(tuples, cards)
    counts = np.bincount(inverse, weights=sizes, minlength=first.size)
    return inverse, counts


def minimal_sample_uniques(
    tuples: Array, cards: Sequence[int], sizes: Array, budget: int | None = None
) -> Array:
    """``(classes, M)`` counts of MSUs by size for each class (only size-1 classes have any).

    ``budget`` bounds the work: the number of distinct combinations grouped,
    summed over the column subsets tried; past it :class:`SudaBudgetExceededError`
    is raised (the count depends on the data only, never on the machine).
    """
    d, m = tuples.shape
    spent = 0
    counts = np.zeros((d, m), dtype=np.int64)
    unique = np.flatnonzero(sizes == 1)
    if unique.size == 0 or m == 0:
        return counts
    sizes_f = sizes.astype(np.float64)
    # not_unique[S]: over the unique records, True where the record's values on S are shared
    not_unique: dict[tuple[int, ...], Array] = {}
    for j in range(m):
        inverse, group_sizes = _group_counts(tuples[:, [j]], [cards[j]], sizes_f)
        is_unique = group_sizes[inverse[unique]] == 1
        counts[unique[is_unique], 0] += 1
        if not is_unique.all():
            not_unique[(j,)] = ~is_unique
    level = 1
    while not_unique and level < m:
        level += 1
        following: dict[tuple[int, ...], Array] = {}
        candidates = _candidates(not_unique, m)
        spent += d * sum(bool(_alive(s, not_unique, unique.size).any()) for s in candidates)
        if budget is not None and spent > budget:
            raise SudaBudgetExceededError  # before the level's work, not after
        for subset in candidates:
            alive = _alive(subset, not_unique, unique.size)
            if not alive.any():
                continue
            columns = list(subset)
            inverse, group_sizes = _group_counts(tuples[:, columns], [cards[c] for c in columns],
                                                 sizes_f)
            rows = np.flatnonzero(alive)
            is_unique = group_sizes[inverse[unique[rows]]] == 1
            counts[unique[rows[is_unique]], level - 1] += 1
            shared = np.zeros(unique.size, dtype=bool)
            shared[rows[~is_unique]] = True
            if shared.any():
                following[subset] = shared
        not_unique = following
    return counts


def _alive(subset: tuple[int, ...], not_unique: dict[tuple[int, ...], Array], size: int
           ) -> Array:
    """The unique records still shared on every immediate subset of ``subset``."""
    alive = np.ones(size, dtype=bool)
    for drop in range(len(subset)):
        below = not_unique.get(subset[:drop] + subset[drop + 1:])
        if below is None:
            return np.zeros(size, dtype=bool)
        alive &= below
    return alive


def _candidates(previous: dict[tuple[int, ...], Array], m: int) -> list[tuple[int, ...]]:
    """Subsets one larger whose every immediate subset is in ``previous`` (Apriori generation)."""
    out: list[tuple[int, ...]] = []
    for subset in sorted(previous):
        for j in range(subset[-1] + 1, m):
            candidate = (*subset, j)
            if all(candidate[:i] + candidate[i + 1:] in previous for i in range(len(candidate))):
                out.append(candidate)
    return out


def r_numeric_codes(values: Array) -> Array:
    """The numbers R passes to sdcMicro's C++ code for one column's distinct values.

    Integer-valued numbers (or text that reads as one) stay as they are
    (truncated to an integer, as the C++ cast does); any other column becomes
    its factor level numbers, levels sorted in C-locale order, from 1.
    """
    texts = [str(v) for v in values]
    try:
        numbers = np.array([float(t) for t in texts], dtype=np.float64)
    except ValueError:
        numbers = None
    if numbers is not None and np.isfinite(numbers).all():
        return np.trunc(numbers).astype(np.int64)
    levels = sorted(set(texts), key=lambda t: t.encode("utf-8"))
    rank = {t: i + 1 for i, t in enumerate(levels)}
    return np.array([rank[t] for t in texts], dtype=np.int64)


def sdcmicro_hash(numbers: Array) -> Array:
    """sdcMicro's 16-bit record hash (``CEntry::InitValue``) of each row of ``numbers``.

    ``h = (2 h + v + carry) mod 2^16`` over the columns, ``carry`` the bit
    shifted out of ``h``.
    """
    h = np.zeros(numbers.shape[0], dtype=np.int64)
    for j in range(numbers.shape[1]):
        carry = (h >> 15) & 1
        h = ((h << 1) + numbers[:, j] + carry) & 0xFFFF
    return h


def counted_uniques(classes: Classes) -> int:
    """sdcMicro's ``NbUniqueTotal``: sample uniques alone in their hash bucket."""
    m = len(classes.columns)
    columns = [r_numeric_codes(classes.encoded.values[j])[classes.tuples[:, j]] for j in range(m)]
    columns += [np.ones(classes.count, dtype=np.int64)] * max(0, 3 - m)
    if not columns:
        return 0
    h = sdcmicro_hash(np.column_stack(columns))
    bucket = np.bincount(h, weights=classes.sizes.astype(np.float64), minlength=1 << 16)
    return int(((classes.sizes == 1) & (bucket[h] == 1)).sum())


def dis_scores(scores: Array, sizes: Array, uniques: int, columns: int,
               dis_fraction: float = DIS_FRACTION) -> Array:
    """DIS-SUDA scores per class from SUDA scores, with sdcMicro's single-precision steps."""
    f32 = np.float32
    d = f32(dis_fraction)
    pairs = f32(2 * int((sizes == 2).sum()))
    u = f32(uniques)
    m = max(columns, 3)
    with np.errstate(divide="ignore", invalid="ignore"):
        dis = f32(u * d / (u * d + pairs * (f32(1.0) - d)))
        q = float(f32(1.0) + (f32(8.0) - f32(m)) / f32(20.0))
        spread = float(f32(u / dis) - u)
        scored = scores > 0
        powered = np.power(scores[scored], q)
        adjust = float((sizes[scored] / powered).sum())
        out = np.zeros_like(scores)
        out[scored] = 1.0 / (1.0 + spread / (powered * adjust))
    return out


def suda2_scores(
    classes: Classes, dis_fraction: float = DIS_FRACTION, budget: int | None = None
) -> SudaScores:
    """SUDA2 and DIS-SUDA scores of every class of ``classes`` (sdcMicro's ``suda2`` defaults)."""
    m = len(classes.columns)
    msu = minimal_sample_uniques(classes.tuples, classes.cardinalities, classes.sizes, budget)
    scores = (msu * _weights(m)[None, :]).sum(axis=1) if m else np.zeros(classes.count)
    uniques = counted_uniques(classes)
    return SudaScores(msu, scores, dis_scores(scores, classes.sizes, uniques, m, dis_fraction),
                      uniques)


def suda2_summary(
    classes: Classes, dis_fraction: float = DIS_FRACTION, budget: int | None = None
) -> dict[str, object] | None:
    """The report's SUDA2 figures; ``None`` with more than :data:`MAX_COLUMNS` key variables,
    or when the MSU search would exceed ``budget`` (see :func:`minimal_sample_uniques`).

    ``records_with_msu``, ``highest_score``, ``highest_dis_score`` and the
    number of records in each DIS-score interval sdcMicro's ``print.suda2``
    shows (``"0"``, ``"(0, 0.1]"``, ..., ``"(0.6, 0.7]"``, ``"> 0.7"``).
    """
    if len(classes.columns) > MAX_COLUMNS:
        return None
    try:
        result = suda2_scores(classes, dis_fraction, budget)
    except SudaBudgetExceededError:
        return None
    sizes = classes.sizes
    dis = result.dis_scores
    finite = np.isfinite(dis)
    intervals: dict[str, int] = {"0": int(sizes[finite & (dis == 0)].sum())}
    for low, high in pairwise(_DIS_BREAKS):
        inside = finite & (dis > low) & (dis <= high)
        intervals[f"({low:g}, {high:g}]"] = int(sizes[inside].sum())
    intervals[f"> {_DIS_BREAKS[-1]:g}"] = int(sizes[finite & (dis > _DIS_BREAKS[-1])].sum())
    scored = result.scores > 0
    return {
        "records_with_msu": int(sizes[scored].sum()),
        "highest_score": float(result.scores.max()) if result.scores.size else 0.0,
        "highest_dis_score": float(dis[finite].max()) if finite.any() else None,
        "dis_intervals": intervals,
        "dis_fraction": dis_fraction,
    }

