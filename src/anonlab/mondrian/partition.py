"""Mondrian multidimensional partitioning on a frequency set (docs/mondrian.md).

LeFevre, DeWitt and Ramakrishnan, "Mondrian Multidimensional K-Anonymity" (ICDE 2006):
the records are cut top-down, each cut halving a partition at the median of one
quasi-identifier, as long as both halves satisfy the privacy model; a partition no cut
may split is released with each quasi-identifier summarised over its records.

Here the partitions hold rows of a *frequency set*: the distinct tuples of the
quasi-identifiers' codes and the sensitive attributes' codes, each with its count of
records. Every decision is taken on exact counts, so the rows themselves are read only
to build that set and, afterwards, to map each record to its partition.

The rules (docs/mondrian.md, "Cut rules"):

- *Which quasi-identifier.* The widest normalised range first: an ordered column's
  ``(max - min) / (column max - column min)`` (numeric values) or ``(last rank - first
  rank) / (distinct values - 1)`` (texts in their order); a hierarchy column's
  ``(leaves under the lowest common ancestor - 1) / (domain - 1)``, leaves and domain
  counted among the column's values in the table. Ties go to the column that comes
  first in the table. A column that cannot be cut (both halves must satisfy every
  criterion) gives way to the next widest; a partition no column may cut is final.
- *Strict cut* (ordered column): the median ``m`` is the value of record ``(n - 1) // 2``
  (0-based) in value order; the left half takes the values ``<= m``, the right ``> m``.
  When ``m`` is the largest value the cut is at the largest value below it instead (``<``
  vs ``>=``), so that no value lies on both sides.
- *Relaxed cut* (ordered column): the records in value order, the first ``n // 2`` to
  the left; records of the median value may fall on both sides. Within one value,
  records go in the frequency set's order (tuples by first appearance). The relaxed
  partitioning is compared with the strict one on the same data and the one of smaller
  GCP is kept, so relaxed never loses more than strict (LeFevre et al.'s claim for the
  optimal partitions, which a greedy search alone does not guarantee).
- *Hierarchy cut* (Basic Mondrian): the partition's lowest common ancestor at level
  ``L`` is split by its children (its groups at level ``L - 1``): children taken by
  decreasing count (ties: the child met first in the table), each to the half with fewer records so
  far (ties to the left). Relaxed cuts split hierarchy columns the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.privacy.base import ClassStats, Criterion, SensitiveHistograms

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class OrderedColumn:
    """A quasi-identifier cut in the order of its values (numbers or texts).

    ``rank[code]`` is the place of the value ``code`` in the order; ``position[r]`` is
    the number a rank stands for in the width (the value itself for numbers, the rank
    for texts); ``span`` the column's range of ``position`` (0: a single value).
    """

    name: str
    rank: IntArray
    position: NDArray[np.float64]
    span: float
    numeric: bool


@dataclass(frozen=True)
class HierarchyColumn:
    """A quasi-identifier cut along its hierarchy.

    ``level_codes[L][code]`` is the group of value ``code`` at level ``L``;
    ``leaves[L][group]`` counts the column's values under that group; ``domain`` is the
    number of the column's values.
    """

    name: str
    level_codes: tuple[IntArray, ...]
    leaves: tuple[IntArray, ...]
    domain: int


Column = OrderedColumn | HierarchyColumn


@dataclass
class FrequencyRows:
    """The frequency set the partitioning works on.

    ``codes`` (rows, m) the quasi-identifiers' codes, ``sensitive`` (rows, s) the
    sensitive attributes' codes, ``counts`` (rows,) the records of each distinct tuple;
    ``global_counts`` each sensitive attribute's histogram over the table.
    """

    codes: IntArray
    counts: IntArray
    sensitive: IntArray
    sensitive_names: tuple[str, ...]
    global_counts: tuple[IntArray, ...]


@dataclass
class Partition:
    """A set of records: rows of the frequency set with the records of each taken."""

    rows: IntArray
    counts: IntArray
    #: per hierarchy column, a level at or above the partition's lowest common ancestor
    #: (the enclosing partition's; ``None``: not known)
    ceiling: list[int | None] = field(default_factory=list)

    @property
    def n(self) -> int:
        """Records of the partition."""
        return int(self.counts.sum())


@dataclass
class Partitioning:
    """The final partitions and what the search did."""

    partitions: list[Partition]
    cuts: int
    relaxed: bool
    #: for a relaxed run: whether the relaxed partitioning was kept (else the strict one)
    relaxed_kept: bool = True
    checks: int = 0


class Judge:
    """Whether a set of classes satisfies every criterion (each criterion's own check).

    ``floor`` is the largest minimal class size the criteria declare: smaller halves
    are refused before the criteria see them.
    """

    def __init__(self, criteria: Sequence[Criterion], freq: FrequencyRows, m: int) -> None:
        self.criteria = list(criteria)
        self.freq = freq
        self.levels = (0,) * m
        self.floor = max([c.minimal_class_size() or 1 for c in self.criteria] + [1])
        used = {c.attribute for c in self.criteria if c.attribute is not None}
        self.attributes = [i for i, s in enumerate(freq.sensitive_names) if s in used]
        self.checks = 0

    def stats(self, parts: Sequence[Partition]) -> ClassStats:
        """The classes ``parts`` as a criterion sees them."""
        counts = np.array([p.n for p in parts], dtype=np.int64)
        sensitive: dict[str, SensitiveHistograms] = {}
        for i in self.attributes:
            global_counts = self.freq.global_counts[i]
            width = global_counts.shape[0]
            classes, values, amounts = [], [], []
            for c, p in enumerate(parts):
                hist = np.bincount(
                    self.freq.sensitive[p.rows, i], weights=p.counts, minlength=width
                ).astype(np.int64)
                nz = np.flatnonzero(hist)
                classes.append(np.full(nz.shape[0], c, dtype=np.int64))
                values.append(nz.astype(np.int64))
                amounts.append(hist[nz])
            sensitive[self.freq.sensitive_names[i]] = SensitiveHistograms(
                classes=np.concatenate(classes),
                values=np.concatenate(values),
                counts=np.concatenate(amounts),
                global_counts=global_counts,
            )
        return ClassStats(levels=self.levels, counts=counts, sensitive=sensitive)

    def allowed(self, parts: Sequence[Partition]) -> bool:
        """Whether every part satisfies every criterion."""
        if any(p.n < self.floor for p in parts):
            return False
        self.checks += 1
        stats = self.stats(parts)
        none = np.zeros(stats.classes, dtype=bool)
        return all(c.holds(stats, none) for c in self.criteria)


def width(column: Column, codes: IntArray, ceiling: int | None = None) -> tuple[float, int]:
    """The normalised width of a partition's ``codes`` in ``column``, and (hierarchy
    columns) the level of their lowest common ancestor, searched from level 0 up to
    ``ceiling`` (a level known to hold a common ancestor: the enclosing partition's)."""
    if isinstance(column, OrderedColumn):
        if column.span == 0:
            return 0.0, 0
        pos = column.position[column.rank[codes]]
        return float(pos.max() - pos.min()) / column.span, 0
    level = 0
    top = len(column.level_codes) - 1 if ceiling is None else ceiling
    while level < top:
        groups = column.level_codes[level][codes]
        if not np.any(groups != groups[0]):
            break
        level += 1
    if column.domain <= 1:
        return 0.0, level
    group = int(column.level_codes[level][codes[0]])
    return (int(column.leaves[level][group]) - 1) / (column.domain - 1), level


def ordered_cut(
    column: OrderedColumn, part: Partition, codes: IntArray, relaxed: bool
) -> tuple[Partition, Partition] | None:
    """The median cut of ``part`` in an ordered column (module text), or ``None``."""
    ranks = column.rank[codes]
    order = np.argsort(ranks, kind="stable")
    ranks = ranks[order]
    rows, counts = part.rows[order], part.counts[order]
    cum = np.cumsum(counts)
    n = int(cum[-1])
    if ranks[0] == ranks[-1]:
        return None
    if relaxed:
        half = n // 2
        i = int(np.searchsorted(cum, half, side="left"))  # row holding record number half-1
        taken = half - (int(cum[i - 1]) if i > 0 else 0)
        left_rows, left_counts = rows[: i + 1].copy(), counts[: i + 1].copy()
        left_counts[-1] = taken
        right_rows, right_counts = rows[i:].copy(), counts[i:].copy()
        right_counts[0] -= taken
        if right_counts[0] == 0:
            right_rows, right_counts = right_rows[1:], right_counts[1:]
        left, right = (left_rows, left_counts), (right_rows, right_counts)
    else:
        median = ranks[int(np.searchsorted(cum, (n - 1) // 2 + 1, side="left"))]
        if median == ranks[-1]:
            cut = int(np.searchsorted(ranks, median, side="left"))
        else:
            cut = int(np.searchsorted(ranks, median, side="right"))
        left = (rows[:cut], counts[:cut])
        right = (rows[cut:], counts[cut:])
    return (
        Partition(left[0], left[1], list(part.ceiling)),
        Partition(right[0], right[1], list(part.ceiling)),
    )


def hierarchy_cuts(
    column: HierarchyColumn, part: Partition, codes: IntArray, level: int
) -> Iterator[tuple[Partition, Partition]]:
    """The cuts of ``part`` by the children of its lowest common ancestor, in the order they
    are tried (module text): the balanced one, then each child alone against the others,
    the largest child first."""
    if level == 0:
        return
    children = column.level_codes[level - 1][codes]
    found, inverse = np.unique(children, return_inverse=True)
    if found.shape[0] < 2:
        return
    balanced = hierarchy_cut(column, part, codes, level)
    if balanced is not None:
        yield balanced
    if found.shape[0] < 3:
        return
    sizes = np.bincount(inverse, weights=part.counts).astype(np.int64)
    for child in np.argsort(-sizes, kind="stable"):
        alone = inverse == child
        yield (
            Partition(part.rows[alone], part.counts[alone], list(part.ceiling)),
            Partition(part.rows[~alone], part.counts[~alone], list(part.ceiling)),
        )


def hierarchy_cut(
    column: HierarchyColumn, part: Partition, codes: IntArray, level: int
) -> tuple[Partition, Partition] | None:
    """The balanced cut of ``part`` by the children of its lowest common ancestor (module
    text)."""
    if level == 0:
        return None
    children = column.level_codes[level - 1][codes]
    found, inverse = np.unique(children, return_inverse=True)
    if found.shape[0] < 2:
        return None
    sizes = np.bincount(inverse, weights=part.counts).astype(np.int64)
    first = np.full(found.shape[0], np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, inverse, part.rows)  # rows number tuples by first appearance
    side = np.zeros(found.shape[0], dtype=bool)  # True: right
    loads = [0, 0]
    for child in np.lexsort((first, -sizes)):
        goes = 1 if loads[1] < loads[0] else 0
        side[child] = bool(goes)
        loads[goes] += int(sizes[child])
    right = side[inverse]
    return (
        Partition(part.rows[~right], part.counts[~right], list(part.ceiling)),
        Partition(part.rows[right], part.counts[right], list(part.ceiling)),
    )


def partition(
    freq: FrequencyRows,
    columns: Sequence[Column],
    criteria: Sequence[Criterion],
    *,
    relaxed: bool = False,
) -> Partitioning:
    """Cut the frequency set ``freq`` top-down into Mondrian partitions (module text).

    The whole table must satisfy every criterion (the caller checks it: see
    :func:`anonlab.mondrian.method.mondrian`). Relaxed runs the strict partitioning too
    and keeps the one of smaller GCP (:func:`gcp`).
    """
    found = _partition(freq, columns, criteria, relaxed=relaxed)
    if not relaxed:
        return found
    strict = _partition(freq, columns, criteria, relaxed=False)
    if gcp(strict.partitions, freq, columns) < gcp(found.partitions, freq, columns):
        strict.relaxed = True
        strict.relaxed_kept = False
        strict.checks += found.checks
        return strict
    found.checks += strict.checks
    return found


def _partition(
    freq: FrequencyRows, columns: Sequence[Column], criteria: Sequence[Criterion], *, relaxed: bool
) -> Partitioning:
    judge = Judge(criteria, freq, len(columns))
    start = Partition(
        np.arange(freq.counts.shape[0], dtype=np.int64), freq.counts.copy(), [None] * len(columns)
    )
    done: list[Partition] = []
    stack = [start]
    cuts = 0
    while stack:
        part = stack.pop()
        widths: list[tuple[float, int, int]] = []
        for j, column in enumerate(columns):
            codes = freq.codes[part.rows, j]
            w, level = width(column, codes, part.ceiling[j])
            part.ceiling[j] = level
            if w > 0:
                widths.append((-w, j, level))
        widths.sort()
        halves = None
        for _, j, level in widths:
            column = columns[j]
            codes = freq.codes[part.rows, j]
            candidates: Iterable[tuple[Partition, Partition] | None]
            if isinstance(column, OrderedColumn):
                candidates = [ordered_cut(column, part, codes, relaxed)]
            else:
                candidates = hierarchy_cuts(column, part, codes, level)
            halves = next((h for h in candidates if h is not None and judge.allowed(h)), None)
            if halves is not None:
                break
        if halves is None:
            done.append(part)
            continue
        cuts += 1
        stack.extend(reversed(halves))
    done.sort(key=lambda p: int(p.rows.min()))
    return Partitioning(done, cuts, relaxed, checks=judge.checks)


def cell_loss(column: Column, codes: IntArray) -> float:
    """The normalised certainty penalty of one partition's cell in ``column`` (docs/mondrian.md,
    "Loss"): an ordered column's range over the column's range, a hierarchy column's
    ``(leaves - 1) / (domain - 1)`` at the lowest common ancestor; 0 for a single value."""
    return width(column, codes)[0]


def gcp(parts: Sequence[Partition], freq: FrequencyRows, columns: Sequence[Column]) -> float:
    """The global certainty penalty: the mean of :func:`cell_loss` over every quasi-identifier
    cell of every record (GCP of Ghinita et al. 2007, normalised by records and columns)."""
    n = sum(p.n for p in parts)
    if n == 0 or not columns:
        return 0.0
    total = 0.0
    for p in parts:
        for j, column in enumerate(columns):
            total += p.n * cell_loss(column, freq.codes[p.rows, j])
    return total / (n * len(columns))


def discernibility(parts: Sequence[Partition]) -> int:
    """The discernibility metric (Bayardo and Agrawal 2005): the sum of squared class sizes."""
    return sum(p.n * p.n for p in parts)


def numeric_value(text: str) -> float | None:
    """``text`` as a finite number, or ``None``."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def ordered_column(name: str, values: Sequence[str], numeric: bool | None = None) -> OrderedColumn:
    """An :class:`OrderedColumn` of the dictionary ``values``: numbers by value when every
    value is one (or ``numeric``), else texts with numbers first (by value), then the other
    texts in character order."""
    numbers = [numeric_value(v) for v in values]
    is_numeric = all(x is not None for x in numbers) if numeric is None else numeric
    keys: list[tuple[int, float, str]] = [
        (0, x, v) if x is not None else (1, 0.0, v) for v, x in zip(values, numbers, strict=True)
    ]
    order = sorted(range(len(values)), key=lambda i: keys[i])
    rank = np.empty(len(values), dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(len(values), dtype=np.int64)
    if is_numeric:
        position = np.array([keys[i][1] for i in order], dtype=np.float64)
    else:
        position = np.arange(len(values), dtype=np.float64)
    span = float(position[-1] - position[0]) if len(values) else 0.0
    return OrderedColumn(name, rank, position, span, bool(is_numeric))


def hierarchy_column(name: str, level_codes: Sequence[NDArray[Any]]) -> HierarchyColumn:
    """A :class:`HierarchyColumn` from a column's per-level group codes (level 0 first)."""
    codes = tuple(np.asarray(c, dtype=np.int64) for c in level_codes)
    leaves = tuple(np.bincount(c).astype(np.int64) for c in codes)
    return HierarchyColumn(name, codes, leaves, int(codes[0].shape[0]))
