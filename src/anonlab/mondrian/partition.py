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
from typing import Any, cast

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
    #: records of the partition
    n: int = field(init=False)

    def __post_init__(self) -> None:
        self.n = int(self.counts.sum())


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
    top = len(column.level_codes) if ceiling is None else ceiling
    while level < top:
        groups = column.level_codes[level][codes]
        if not np.any(groups != groups[0]):
            break
        level += 1
    if column.domain <= 1:
        return 0.0, level
    if level == len(column.level_codes):  # no common label: the root above the top level
        return 1.0, level
    group = int(column.level_codes[level][codes[0]])
    return (int(column.leaves[level][group]) - 1) / (column.domain - 1), level


def _split(part: Partition, left: NDArray[np.bool_]) -> tuple[Partition, Partition]:
    return (
        Partition(part.rows[left], part.counts[left], list(part.ceiling)),
        Partition(part.rows[~left], part.counts[~left], list(part.ceiling)),
    )


def _cumulative(ranks: IntArray, counts: IntArray, lo: int, hi: int) -> tuple[IntArray, IntArray]:
    """The distinct ranks of a partition in order and the records at or below each."""
    if hi - lo <= max(4 * ranks.shape[0], 4096):  # a histogram of the ranks is cheap
        hist = np.bincount(ranks - lo, weights=counts, minlength=hi - lo + 1).astype(np.int64)
        present = np.flatnonzero(hist)
        return present + lo, np.cumsum(hist[present])
    values, inverse = np.unique(ranks, return_inverse=True)
    return values, np.cumsum(np.bincount(inverse, weights=counts).astype(np.int64))


def ordered_cut(
    ranks: IntArray, part: Partition, relaxed: bool, floor: int, lo: int, hi: int
) -> tuple[Partition, Partition] | None:
    """The median cut of ``part`` in an ordered column whose ranks over the partition's rows
    are ``ranks`` (from ``lo`` to ``hi``), or ``None`` when a half would hold fewer than
    ``floor`` records (module text)."""
    if lo == hi:
        return None
    values, cum = _cumulative(ranks, part.counts, lo, hi)
    n = int(cum[-1])
    if relaxed:
        half = n // 2
        if half < floor or n - half < floor:
            return None
        i = int(np.searchsorted(cum, half, side="left"))  # the value of record number half-1
        median = int(values[i])
        need = half - (int(cum[i - 1]) if i > 0 else 0)
        below = ranks < median
        tied = np.flatnonzero(ranks == median)
        tied = tied[np.argsort(part.rows[tied], kind="stable")]  # first appearance
        taken = np.cumsum(part.counts[tied])
        full = int(np.searchsorted(taken, need, side="left"))  # the tuple holding record need-1
        left_mask = below.copy()
        left_mask[tied[:full]] = True
        rest = need - (int(taken[full - 1]) if full > 0 else 0)
        split = int(tied[full])
        left_rows = np.append(part.rows[left_mask], part.rows[split])
        left_counts = np.append(part.counts[left_mask], rest)
        right_mask = ~left_mask
        right_mask[split] = False
        left_over = int(part.counts[split]) - rest
        right_rows, right_counts = part.rows[right_mask], part.counts[right_mask]
        if left_over:
            right_rows = np.append(right_rows, part.rows[split])
            right_counts = np.append(right_counts, left_over)
        return (
            Partition(left_rows, left_counts, list(part.ceiling)),
            Partition(right_rows, right_counts, list(part.ceiling)),
        )
    i = int(np.searchsorted(cum, (n - 1) // 2 + 1, side="left"))  # the median's value
    if i == values.shape[0] - 1:
        i -= 1  # the median is the largest value: cut below it
    left_n = int(cum[i])
    if left_n < floor or n - left_n < floor:
        return None
    return _split(part, ranks <= values[i])


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
    order = _children_order(part, inverse, found.shape[0])[1]
    for child in order:
        yield _split(part, inverse == child)


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
    sizes, order = _children_order(part, inverse, found.shape[0])
    side = np.zeros(found.shape[0], dtype=bool)  # True: right
    loads = [0, 0]
    for child in order:
        goes = 1 if loads[1] < loads[0] else 0
        side[child] = bool(goes)
        loads[goes] += int(sizes[child])
    return _split(part, ~side[inverse])


def _children_order(part: Partition, inverse: IntArray, children: int) -> tuple[IntArray, IntArray]:
    """Each child's records, and the children by decreasing records, ties by the child met
    first in the table (frequency rows are numbered by first appearance)."""
    sizes = np.bincount(inverse, weights=part.counts, minlength=children).astype(np.int64)
    first = np.full(children, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, inverse, part.rows)
    return sizes, np.lexsort((first, -sizes))


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
    floor = judge.floor
    ordered = [j for j, c in enumerate(columns) if isinstance(c, OrderedColumn)]
    trees = [j for j, c in enumerate(columns) if isinstance(c, HierarchyColumn)]
    ordered_columns = [cast(OrderedColumn, columns[j]) for j in ordered]
    # every ordered column's rank on every frequency row, and its positions padded to a matrix
    ranks = np.zeros((freq.codes.shape[0], len(ordered)), dtype=np.int64)
    longest = max([c.position.shape[0] for c in ordered_columns] + [1])
    positions = np.zeros((len(ordered), longest), dtype=np.float64)
    spans = np.ones(len(ordered), dtype=np.float64)
    for i, (j, c) in enumerate(zip(ordered, ordered_columns, strict=True)):
        ranks[:, i] = c.rank[freq.codes[:, j]]
        positions[i, : c.position.shape[0]] = c.position
        spans[i] = c.span or 1.0
    which = np.arange(len(ordered))
    start = Partition(
        np.arange(freq.counts.shape[0], dtype=np.int64), freq.counts.copy(), [None] * len(columns)
    )
    done: list[Partition] = []
    stack = [start]
    cuts = 0
    while stack:
        part = stack.pop()
        if part.n < 2 * floor:  # no cut can leave both halves the records a class needs
            done.append(part)
            continue
        widths: list[tuple[float, int, int]] = []
        if ordered:
            sub = ranks[part.rows]
            lows, highs = sub.min(axis=0), sub.max(axis=0)
            spread = (positions[which, highs] - positions[which, lows]) / spans
            for wide in np.flatnonzero(spread > 0).tolist():
                widths.append((-float(spread[wide]), ordered[wide], wide))
        for j in trees:
            tree = cast(HierarchyColumn, columns[j])
            w, level = width(tree, freq.codes[part.rows, j], part.ceiling[j])
            part.ceiling[j] = level
            if w > 0:
                widths.append((-w, j, level))
        widths.sort()
        halves = None
        for _, j, extra in widths:
            column = columns[j]
            candidates: Iterable[tuple[Partition, Partition] | None]
            if isinstance(column, OrderedColumn):
                candidates = [
                    ordered_cut(
                        sub[:, extra], part, relaxed, floor, int(lows[extra]), int(highs[extra])
                    )
                ]
            else:
                candidates = hierarchy_cuts(column, part, freq.codes[part.rows, j], extra)
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


@dataclass(frozen=True)
class Summaries:
    """What each final partition releases and loses, per quasi-identifier (P partitions, m
    columns): ``ncp`` the cell's normalised certainty penalty (docs/mondrian.md, "Loss"); for
    an ordered column ``low``/``high`` the ranks of its smallest and largest value, for a
    hierarchy column ``low`` the level of its lowest common ancestor (the height + 1 for a
    root above the hierarchy's top) and ``high`` that ancestor's group at the level."""

    ncp: NDArray[np.float64]
    low: IntArray
    high: IntArray
    sizes: IntArray


def summarize(
    parts: Sequence[Partition], freq: FrequencyRows, columns: Sequence[Column]
) -> Summaries:
    """:class:`Summaries` of ``parts``, every partition at once (reductions over the
    partitions' rows laid end to end)."""
    count = len(parts)
    m = len(columns)
    ncp = np.zeros((count, m), dtype=np.float64)
    low = np.zeros((count, m), dtype=np.int64)
    high = np.zeros((count, m), dtype=np.int64)
    sizes = np.array([p.n for p in parts], dtype=np.int64)
    if not count:
        return Summaries(ncp, low, high, sizes)
    rows = np.concatenate([p.rows for p in parts])
    starts = np.cumsum([0] + [p.rows.shape[0] for p in parts[:-1]])
    for j, column in enumerate(columns):
        codes = freq.codes[rows, j]
        if isinstance(column, OrderedColumn):
            ranks = column.rank[codes]
            low[:, j] = np.minimum.reduceat(ranks, starts)
            high[:, j] = np.maximum.reduceat(ranks, starts)
            if column.span:
                spread = column.position[high[:, j]] - column.position[low[:, j]]
                ncp[:, j] = spread / column.span
            continue
        top = len(column.level_codes)
        level = np.full(count, top, dtype=np.int64)  # top: above the hierarchy's top level
        group = np.zeros(count, dtype=np.int64)
        for at in range(top - 1, -1, -1):
            groups = column.level_codes[at][codes]
            least = np.minimum.reduceat(groups, starts)
            common = least == np.maximum.reduceat(groups, starts)
            level[common] = at
            group[common] = least[common]
        low[:, j], high[:, j] = level, group
        if column.domain > 1:
            leaves = np.full(count, column.domain, dtype=np.int64)
            for at in range(top):
                here = level == at
                leaves[here] = column.leaves[at][group[here]]
            ncp[:, j] = (leaves - 1) / (column.domain - 1)
    return Summaries(ncp, low, high, sizes)


def gcp(parts: Sequence[Partition], freq: FrequencyRows, columns: Sequence[Column]) -> float:
    """The global certainty penalty: the mean NCP over every quasi-identifier cell of every
    record (GCP of Ghinita et al. 2007, normalised by records and columns)."""
    found = summarize(parts, freq, columns)
    n = int(found.sizes.sum())
    if n == 0 or not columns:
        return 0.0
    return float((found.ncp * found.sizes[:, None]).sum()) / (n * len(columns))


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
