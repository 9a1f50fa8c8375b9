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
examination is one group-by with the project's
:func:`~anonlab.grouping.group_tuples`. A subset ``S + {j}`` refines the
groups of ``S``, so it is grouped only over the combinations that share their
values on ``S`` with another record, by (group on ``S``, value of ``j``): a
combination alone on ``S`` is alone on every superset, and a record can share
its values on ``S + {j}`` only with records of its own group on ``S``. The
groups found are therefore the same as over all combinations; only fewer rows
are read.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from anonlab.grouping import group_tuples
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


#: key spaces up to 4 * rows + this are counted densely (see ``_refine``)
_DENSE_SLACK = 4096
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


@dataclass(frozen=True)
class _SharedGroups:
    """The combinations that share their values on one subset of key variables.

    ``rows`` (ascending) are the combinations whose group on the subset holds
    more than one record, ``groups[i]`` the group of ``rows[i]``, numbered
    below ``bound``.
    """

    rows: Array
    groups: Array
    bound: int


def _refine(
    parent: _SharedGroups, column: Array, card: int, sizes: Array
) -> tuple[Array, _SharedGroups]:
    """Group ``parent.rows`` by (group on the parent subset, ``column`` value).

    Returns the number of records of each row's new group (sums of ``sizes``)
    and the rows whose new group holds more than one record. The pair is one
    key ``group * card + value``; when its space is small against the rows it
    is counted with a dense ``bincount`` and serves as the new group number,
    otherwise the rows are grouped with :func:`~anonlab.grouping.group_tuples`.
    """
    rows = parent.rows
    weights = sizes[rows]
    space = parent.bound * card
    if space <= 4 * rows.size + _DENSE_SLACK:
        groups = parent.groups * card + column[rows]
        records = np.bincount(groups, weights=weights, minlength=space)[groups]
    else:
        groups, first = group_tuples(
            np.column_stack([parent.groups, column[rows]]), [parent.bound, card]
        )
        space = int(first.size)
        records = np.bincount(groups, weights=weights, minlength=space)[groups]
    shared = records > 1
    return records, _SharedGroups(rows[shared], groups[shared], space)


def minimal_sample_uniques(
    tuples: Array, cards: Sequence[int], sizes: Array, budget: int | None = None
) -> Array:
    """``(classes, M)`` counts of MSUs by size for each class (only size-1 classes have any).

    ``budget`` bounds the work: the number of distinct combinations grouped,
    summed over the column subsets tried; past it :class:`SudaBudgetExceededError`
    is raised (the count depends on the data only, never on the machine). Each
    subset is counted as a group-by of all ``d`` combinations, although the
    refinement (see the module's notes) reads only those still shared; the
    search stops as soon as the next level's subsets known so far would
    exceed the budget (the same outcome as counting them at that level's start).
    """
    d, m = tuples.shape
    counts = np.zeros((d, m), dtype=np.int64)
    unique = np.flatnonzero(sizes == 1)
    if unique.size == 0 or m == 0:
        return counts
    search = _Search(tuples, cards, sizes.astype(np.float64), unique, budget)
    everyone = _SharedGroups(np.arange(d, dtype=np.int64), np.zeros(d, dtype=np.int64), 1)
    all_alive = np.ones(unique.size, dtype=bool)
    for j in range(m):
        search.examine((j,), everyone, j, all_alive, counts)
    while search.kept and search.level < m:
        search.next_level()
        tried: list[tuple[tuple[int, ...], Array]] = []
        for subset in _candidates(search.previous, m):
            alive = _alive(subset, search.previous)
            if alive.any():
                tried.append((subset, alive))
                search.spend(1)  # before the level's work, not after
        for subset, alive in tried:
            drop = _smallest_parent(subset, search.groups)
            parent = search.groups[subset[:drop] + subset[drop + 1 :]]
            search.examine(subset, parent, subset[drop], alive, counts)
    return counts


class _Search:
    """State of the level-wise MSU search (see :func:`minimal_sample_uniques`).

    ``previous`` / ``kept``: over the unique records, True where the record's
    values on a subset of the previous / current level are shared (subsets
    where none is are left out); ``groups`` / ``kept_groups``: the
    combinations sharing their values on those subsets, with their groups.
    """

    def __init__(
        self, tuples: Array, cards: Sequence[int], sizes: Array, unique: Array, budget: int | None
    ) -> None:
        self.tuples, self.cards, self.sizes, self.unique = tuples, cards, sizes, unique
        self.budget = budget
        self.spent = 0
        self.level = 1
        self.previous: dict[tuple[int, ...], Array] = {}
        self.groups: dict[tuple[int, ...], _SharedGroups] = {}
        self.kept: dict[tuple[int, ...], Array] = {}
        self.kept_groups: dict[tuple[int, ...], _SharedGroups] = {}
        self.ahead = 0  # subsets of the next level already known to be tried

    def spend(self, subsets: int) -> None:
        """Count ``subsets`` group-bys of all combinations; past the budget, stop."""
        self.spent += subsets * self.tuples.shape[0]
        if self.budget is not None and self.spent > self.budget:
            raise SudaBudgetExceededError

    def next_level(self) -> None:
        """Move the current level's subsets to ``previous``."""
        self.previous, self.groups = self.kept, self.kept_groups
        self.kept, self.kept_groups = {}, {}
        self.level += 1
        self.ahead = 0

    def examine(
        self,
        subset: tuple[int, ...],
        parent: _SharedGroups,
        column: int,
        alive: Array,
        counts: Array,
    ) -> None:
        """Group ``subset`` (``parent`` refined by ``column``); count the MSUs it gives."""
        records, shared = _refine(parent, self.tuples[:, column], self.cards[column], self.sizes)
        rows = np.flatnonzero(alive)
        # the alive records share their values on every immediate subset: among parent.rows
        wanted = self.unique[rows]
        if parent.rows.size < self.tuples.shape[0]:
            wanted = np.searchsorted(parent.rows, wanted)
        is_unique = records[wanted] == 1
        counts[self.unique[rows[is_unique]], len(subset) - 1] += 1
        if is_unique.all():
            return
        mask = np.zeros(self.unique.size, dtype=bool)
        mask[rows[~is_unique]] = True
        self.kept[subset] = mask
        self.kept_groups[subset] = shared
        if self.budget is not None and len(subset) < self.tuples.shape[1]:
            self._look_ahead(subset, self.budget)

    def _look_ahead(self, subset: tuple[int, ...], budget: int) -> None:
        """Count the next level's subsets ``subset`` completes; stop early past the budget.

        Subsets are examined in lexicographic order, so the last immediate
        subset of ``(a, *subset)`` (``a < subset[0]``) to be examined is
        ``subset``: that candidate is now known to be tried, or not. The search
        would exceed its budget at the next level's start exactly when it does
        here, so stopping now gives the same outcome with less work.
        """
        for a in range(subset[0]):
            candidate = (a, *subset)
            if (
                all(
                    candidate[:i] + candidate[i + 1 :] in self.kept
                    for i in range(1, len(candidate))
                )
                and _alive(candidate, self.kept).any()
            ):
                self.ahead += 1
                if self.spent + self.ahead * self.tuples.shape[0] > budget:
                    raise SudaBudgetExceededError


def _smallest_parent(subset: tuple[int, ...], groups: dict[tuple[int, ...], _SharedGroups]) -> int:
    """Which column to drop from ``subset`` for the immediate subset with fewest shared rows."""
    sizes = [groups[subset[:i] + subset[i + 1 :]].rows.size for i in range(len(subset))]
    return sizes.index(min(sizes))


def _alive(subset: tuple[int, ...], not_unique: dict[tuple[int, ...], Array]) -> Array:
    """The unique records still shared on every immediate subset of ``subset``.

    Every immediate subset is in ``not_unique`` (see :func:`_candidates`).
    """
    alive = not_unique[subset[1:]] & not_unique[subset[:-1]]
    for drop in range(1, len(subset) - 1):
        alive &= not_unique[subset[:drop] + subset[drop + 1 :]]
    return alive


def _candidates(previous: dict[tuple[int, ...], Array], m: int) -> Iterator[tuple[int, ...]]:
    """Subsets one larger whose every immediate subset is in ``previous`` (Apriori generation).

    Yielded in sorted order, lazily: a search past its budget stops early.
    """
    for subset in sorted(previous):
        for j in range(subset[-1] + 1, m):
            candidate = (*subset, j)
            if all(
                candidate[:i] + candidate[i + 1 :] in previous for i in range(len(candidate) - 1)
            ):
                yield candidate


def r_numeric_codes(values: Array) -> Array:
    """The numbers R passes to sdcMicro's C++ code for one column's distinct values.

    Integer-valued numbers (or text that reads as one) stay as they are
    (truncated to an integer, as the C++ cast does); any other column, or one
    with a number beyond an int64 (1e300: its cast is undefined), becomes its
    factor level numbers, levels sorted in C-locale order, from 1.
    """
    texts = [str(v) for v in values]
    try:
        numbers = np.array([float(t) for t in texts], dtype=np.float64)
    except ValueError:
        numbers = None
    if numbers is not None and (np.abs(numbers) < 2.0**63).all():  # finite, fit an int64
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


def dis_scores(
    scores: Array, sizes: Array, uniques: int, columns: int, dis_fraction: float = DIS_FRACTION
) -> Array:
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
    return SudaScores(
        msu, scores, dis_scores(scores, classes.sizes, uniques, m, dis_fraction), uniques
    )


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
