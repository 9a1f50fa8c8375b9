"""Frequency sets: the count of records per distinct quasi-identifier tuple at a node.

The table is read once: the bottom node's frequency set groups the rows'
code tuples. Every other node's frequency set is *rolled up* from a checked
lower node (or the bottom): map each distinct tuple's codes to the coarser
levels and re-aggregate the counts. The search therefore works on distinct
tuples, never on rows again.

Besides the counts, a frequency set carries what the privacy models read
(:class:`anonlab.privacy.ClassStats`): for each sensitive attribute a model
protects, the sparse per-class histograms ``(class, value, count)``, and, when
a population table is given, each class's count in the population. Both roll
up like the counts: each triple's class is mapped to its class at the coarser
node and the histograms of merged classes are summed (one vectorized group-by
per attribute), population counts are summed.
"""

from __future__ import annotations

import heapq
import operator
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.dataset import Dataset
from anonlab.grouping import MAX_KEY as _MAX_KEY
from anonlab.grouping import factorize_int64
from anonlab.grouping import group_tuples as group_tuples  # noqa: PLC0414 (re-exported)
from anonlab.privacy.base import ClassStats, SensitiveHistograms

#: chain snapshots (see FrequencyCache): made only below a snapshot with more than
#: 1/_CHAIN_RATIO of the bottom's classes that served as a source _CHAIN_AFTER
#: times, and at most _CHAIN_MAX of them
_CHAIN_RATIO = 8
_CHAIN_AFTER = 4
_CHAIN_MAX = 24
#: the first size of the hash table that groups the rows' tuples (it grows with the tuples)
GROUP_TABLE_HINT = 1 << 16
#: bytes the LRU cache of frequency sets may hold on a table of more than LARGE_TABLE_ROWS rows
#: (chain snapshots get half as much again); on Adult x33 (1M rows, 18,109 bottom classes)
#: 16 MiB checks its 616 nodes in the same CPU time as 64 MiB did, and the search's peak is
#: 25 MiB lower (docs/benchmarks.md, round 5)
CACHE_BUDGET = 16 * 2**20
#: the budget on a table of at most LARGE_TABLE_ROWS rows, whose rows take little memory: ARX's
#: profitability case 3 (3,016 rows, 4,301 nodes) rolls up from sources of 3,000 classes on
#: average with it, 5,500 with 16 MiB (docs/benchmarks.md, round 5)
SMALL_TABLE_BUDGET = 64 * 2**20
LARGE_TABLE_ROWS = 1 << 18
#: the search's default number of cached frequency sets (the byte budget bounds their memory):
#: ARX's profitability case 3 (3,016 rows, 4,301 nodes) rolls up from 2,240 source classes on
#: average with 1,024 entries, 2,936 with 256 (docs/benchmarks.md, round 5)
CACHE_ENTRIES = 1024
_INT64_MAX = int(np.iinfo(np.int64).max)
#: the level vector of an empty cache slot: never at or below a target
_NEVER_BELOW = int(np.iinfo(np.int16).max)


def histogram_bytes(h: SensitiveHistograms) -> int:
    """Memory of one node's histogram triples (not the shared global counts)."""
    return int(h.classes.nbytes + h.values.nbytes + h.counts.nbytes)


def roll_histograms(
    hist: SensitiveHistograms, inverse: NDArray[Any], n_classes: int
) -> SensitiveHistograms:
    """A source node's histograms at the target: classes mapped by ``inverse``, summed."""
    n_values = int(hist.global_counts.shape[0])
    key = inverse.take(hist.classes)
    key *= n_values
    key += hist.values
    classes, values, counts = sum_pairs(key, hist.counts, n_classes, n_values)
    return SensitiveHistograms(
        classes=classes, values=values, counts=counts, global_counts=hist.global_counts
    )


class RolledHistograms(Mapping[str, SensitiveHistograms]):
    """A rolled-up node's histograms, each summed on first access.

    Holds the source's histograms and the roll-up's class map ``inverse``
    until every attribute's histograms are built (:func:`roll_histograms`,
    the same arrays as rolling them at once), so a node judged without them
    (one that fails k-anonymity first, see
    :meth:`anonlab.lattice.search.SearchContext.evaluate`) never sums them.
    :meth:`held_bytes` counts what it pins, the source's histograms included,
    for the cache's byte budget.
    """

    def __init__(
        self, source: Mapping[str, SensitiveHistograms], inverse: NDArray[Any], n_classes: int
    ) -> None:
        self._names = tuple(source)
        self._source: Mapping[str, SensitiveHistograms] | None = source
        self._inverse: NDArray[Any] | None = inverse
        self._n_classes = n_classes
        self._built: dict[str, SensitiveHistograms] = {}

    def __getitem__(self, name: str) -> SensitiveHistograms:
        built = self._built.get(name)
        if built is not None:
            return built
        if self._source is None or self._inverse is None or name not in self._names:
            raise KeyError(name)
        built = roll_histograms(self._source[name], self._inverse, self._n_classes)
        self._built[name] = built
        if len(self._built) == len(self._names):  # all built: let the source go
            self._source = self._inverse = None
        return built

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    @property
    def pending(self) -> bool:
        """True while some attribute's histograms are not built yet."""
        return self._source is not None

    def held_bytes(self) -> int:
        """The built histograms' bytes, and while some are pending the class map's and the
        source histograms' (an upper bound of what building them adds)."""
        held = sum(histogram_bytes(h) for h in self._built.values())
        if self._source is not None and self._inverse is not None:
            held += self._inverse.nbytes + sensitive_bytes(self._source)
        return int(held)


def sensitive_bytes(sensitive: Mapping[str, SensitiveHistograms]) -> int:
    """Memory a node's histograms hold (or pin, for :class:`RolledHistograms`)."""
    if isinstance(sensitive, RolledHistograms):
        return sensitive.held_bytes()
    return sum(histogram_bytes(h) for h in sensitive.values())


@dataclass(frozen=True)
class FrequencySet:
    """Equivalence classes of one node.

    Class ``c`` is identified by ``keys[c]``: its code vector (group codes at
    the node's levels) packed by a fixed mixed radix, one int64 column per
    chunk of quasi-identifiers (see :class:`KeyLayout`); ``counts[c]`` is its
    number of records. ``base_index[b]`` (if kept) is the class of the bottom
    node's distinct tuple ``b``. ``sensitive`` holds the per-class histograms
    of the sensitive attributes the engine carries, ``population`` (when a
    population table is given) each class's count in it; classes of
    population records only then have ``counts == 0``.
    """

    levels: tuple[int, ...]
    keys: NDArray[Any]  # (classes, chunks) int64
    counts: NDArray[Any]
    base_index: NDArray[Any] | None
    sensitive: Mapping[str, SensitiveHistograms] = field(default_factory=dict)
    population: NDArray[Any] | None = None  # (classes,) int64
    layout: KeyLayout | None = None
    #: (classes,) int64 smallest row index of the class in the table (ARX's representative;
    #: classes of population records only get an index past the table's rows), if kept
    representatives: NDArray[Any] | None = None
    #: (classes, m) group codes when the roll-up that made the node knows them (else
    #: :attr:`codes` unpacks them from the keys on first use)
    known_codes: NDArray[Any] | None = field(default=None, repr=False, compare=False)
    #: the classes holding population records in order of their first population row (ARX's
    #: order of the classes on a research subset), when the engine keeps it
    #: (:func:`roll_population_order`)
    population_order: NDArray[Any] | None = field(default=None, repr=False, compare=False)

    @property
    def classes(self) -> int:
        """Number of equivalence classes."""
        return int(self.counts.shape[0])

    @property
    def nbytes(self) -> int:
        """Memory held by the node's own arrays (not the shared global histograms), counted the
        first time it is asked (what the cache adds for the node is what it takes off later).

        Kept in the instance's ``__dict__`` by hand: ``functools.cached_property`` takes a
        lock on every first access before Python 3.12, a few µs on each of the search's nodes.
        """
        counted: int | None = self.__dict__.get("_nbytes")
        if counted is None:
            counted = self._count_bytes()
            object.__setattr__(self, "_nbytes", counted)
        return counted

    def _count_bytes(self) -> int:
        """:attr:`nbytes` counted now."""
        extra = 0 if self.base_index is None else self.base_index.nbytes
        for arr in (self.population, self.representatives, self.known_codes, self.population_order):
            if arr is not None:
                extra += arr.nbytes
        extra += sensitive_bytes(self.sensitive)
        return int(self.keys.nbytes + self.counts.nbytes + extra)

    def group_codes(self, dim: int) -> NDArray[Any]:
        """(classes,) code of each class in quasi-identifier ``dim`` at the node's level.

        The codes index the QI's groups at that level
        (:meth:`anonlab.dataset.EncodedQI.cardinality`); they are read from the
        packed keys (a column of :attr:`codes`).
        """
        return self.codes[:, dim]

    @property
    def codes(self) -> NDArray[Any]:
        """(classes, m) codes of every quasi-identifier: from the roll-up, or unpacked from the
        keys once per node (kept as :attr:`nbytes` keeps its count)."""
        if self.known_codes is not None:
            return self.known_codes
        unpacked: NDArray[Any] | None = self.__dict__.get("_codes")
        if unpacked is None:
            if self.layout is None:
                raise RuntimeError("this frequency set has no key layout")
            unpacked = self.layout.digits(self.keys)
            object.__setattr__(self, "_codes", unpacked)
        return unpacked

    def stats(self) -> ClassStats:
        """The classes as the privacy criteria see them."""
        return ClassStats(
            levels=self.levels,
            counts=self.counts,
            sensitive=self.sensitive,
            population=self.population,
        )


class KeyLayout:
    """Packs code vectors into int64 keys with a fixed radix per quasi-identifier.

    The radix of quasi-identifier ``i`` is its number of distinct values, which
    bounds its group codes at every level, so a roll-up changes only the digits
    of the dimensions it generalizes: ``key += (lift[code] - code) * radix``.
    Dimensions are packed into as few int64 chunks as fit.
    """

    def __init__(self, cardinalities: Sequence[int]) -> None:
        self.chunk: list[int] = []
        self.weight: list[int] = []
        self.radix = [max(int(c), 1) for c in cardinalities]
        chunk, space = 0, 1
        for card in self.radix:
            if space * card > _MAX_KEY:
                chunk, space = chunk + 1, 1
            self.chunk.append(chunk)
            self.weight.append(space)
            space *= card
        self.chunks = chunk + 1
        self._chunk_index = np.asarray(self.chunk, dtype=np.intp)
        self._weights = np.asarray(self.weight, dtype=np.int64)
        self._radixes = np.asarray(self.radix, dtype=np.int64)

    def pack(self, tuples: NDArray[Any]) -> NDArray[Any]:
        """(n, m) codes -> (n, chunks) keys."""
        keys = np.zeros((tuples.shape[0], self.chunks), dtype=np.int64)
        for i in range(tuples.shape[1]):
            keys[:, self.chunk[i]] += tuples[:, i].astype(np.int64) * self.weight[i]
        return keys

    def digit(self, keys: NDArray[Any], dim: int) -> NDArray[Any]:
        """Codes of one dimension from packed keys."""
        column = keys[:, self.chunk[dim]]
        if self.weight[dim] > 1:
            column = column // self.weight[dim]
        return np.asarray(column % self.radix[dim])

    def digits(self, keys: NDArray[Any]) -> NDArray[Any]:
        """(n, m) codes of every dimension from packed keys (:meth:`digit` of each, at once)."""
        columns = keys[:, self._chunk_index]
        return np.asarray((columns // self._weights) % self._radixes)

    def replace(self, keys: NDArray[Any], dim: int, old: NDArray[Any], new: NDArray[Any]) -> None:
        """Change one dimension's digits in place."""
        keys[:, self.chunk[dim]] += (new.astype(np.int64) - old) * self.weight[dim]


def group_keys(keys: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """Group rows of packed keys: returns ``(inverse, unique_keys)`` (first-seen order)."""
    if keys.shape[1] == 1:
        inverse, uniques = pd.factorize(keys[:, 0])
        return inverse.astype(np.int64), np.asarray(uniques, dtype=np.int64).reshape(-1, 1)
    combined = np.zeros(keys.shape[0], dtype=np.int64)
    space = 1
    for c in range(keys.shape[1]):
        codes, uniq = pd.factorize(keys[:, c])
        if space * len(uniq) > _MAX_KEY:
            combined, uniq_combined = pd.factorize(combined)
            combined = combined.astype(np.int64)
            space = len(uniq_combined)
        combined = combined * len(uniq) + codes
        space *= max(len(uniq), 1)
    inverse, uniques = pd.factorize(combined)
    first = np.empty(len(uniques), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(inverse) - 1, -1, -1, dtype=np.int64)
    return inverse.astype(np.int64), keys[first]


def group_columns(
    columns: Sequence[NDArray[Any]], cardinalities: Sequence[int]
) -> tuple[NDArray[Any], NDArray[Any]]:
    """:func:`~anonlab.grouping.group_tuples` of the rows the code columns make, without
    their matrix: ``(inverse, first)``, groups numbered by first appearance.

    The same mixed-radix key (re-factorized where it would overflow) is built
    in one int64 array, updated in place column by column; ``inverse`` is
    int32 when the groups fit (a row index needs no more), and each group's
    first row is found chunk by chunk from the end (the last write wins), so
    no row-sized temporary beyond the key and the inverse is made.
    """
    n = int(columns[0].shape[0]) if columns else 0
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key = np.zeros(n, dtype=np.int64)
    space = 1
    for codes, cardinality in zip(columns, cardinalities, strict=True):
        card = max(int(cardinality), 1)
        if space * card > _MAX_KEY:
            refactorized, uniques = pd.factorize(key)
            key[:] = refactorized
            del refactorized
            space = len(uniques)
        np.multiply(key, card, out=key)
        np.add(key, codes, out=key, casting="unsafe")
        space *= card
    # a table grown to the distinct tuples, not one slot per row (32 MiB at a million rows)
    found, uniques = factorize_int64(key, size_hint=GROUP_TABLE_HINT)
    del key
    groups = len(uniques)
    inverse = found.astype(np.int32) if groups <= np.iinfo(np.int32).max else found
    del found
    first = np.empty(groups, dtype=np.int64)
    chunk = 1 << 16
    for stop in range(n, 0, -chunk):
        start = max(stop - chunk, 0)
        first[inverse[start:stop][::-1]] = np.arange(stop - 1, start - 1, -1, dtype=np.int64)
    return inverse, first


def first_members(inverse: NDArray[Any], n_groups: int) -> NDArray[Any]:
    """Index of each group's first member, for groups numbered in order of first appearance
    (``inverse[first_members(inverse, n)] == arange(n)``)."""
    if inverse.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    running = np.maximum.accumulate(inverse)  # a new group takes the next number
    new = np.empty(inverse.shape[0], dtype=bool)
    new[0] = True
    np.greater(running[1:], running[:-1], out=new[1:])
    first = np.flatnonzero(new)
    if first.shape[0] != n_groups:
        raise ValueError("groups are not numbered in order of first appearance")
    return first


def aggregate_histograms(
    classes: NDArray[Any],
    values: NDArray[Any],
    weights: NDArray[Any] | None,
    n_classes: int,
    n_values: int,
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """Sum ``weights`` (1 each if ``None``) per (class, value) pair; drop zero sums.

    Returns the sparse triples sorted by class, then value. The pair is one
    int64 key ``class * n_values + value``; a dense ``bincount`` is used when
    the key space is small against the number of pairs (a pass over a
    zeroed array costs far less per element than sorting), a sort otherwise.
    """
    key = np.multiply(classes, n_values, dtype=np.int64)
    key += values
    return sum_pairs(key, weights, n_classes, n_values)


def sum_pairs(
    key: NDArray[Any],
    weights: NDArray[Any] | None,
    n_classes: int,
    n_values: int,
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """:func:`aggregate_histograms` of the pair keys ``class * n_values + value``."""
    space = n_classes * n_values
    if space <= max(16 * key.shape[0], 1 << 18):
        total = np.bincount(key, weights=weights, minlength=space)
        nonzero = np.flatnonzero(total != 0)  # a boolean mask: far faster than on floats
        counts = total[nonzero]
    else:
        nonzero, inverse = np.unique(key, return_inverse=True)
        counts = np.bincount(inverse.ravel(), weights=weights, minlength=nonzero.shape[0])
        keep = counts != 0
        nonzero, counts = nonzero[keep], counts[keep]
    pair_class = nonzero // n_values  # faster than np.divmod
    return pair_class, nonzero - pair_class * n_values, counts.astype(np.int64)


def roll_population_order(
    order: NDArray[Any], inverse: NDArray[Any], n_classes: int, positions: NDArray[Any]
) -> NDArray[Any]:
    """A roll-up's :attr:`FrequencySet.population_order` from its source's.

    ``order`` lists the source's classes by their first population row, ``inverse`` maps
    each source class to its target class, ``positions`` is ``arange(len(order))``. A
    target class's first population row is the earliest of its members', so walking the
    source's classes in ``order`` meets each target class first at its own first row, and
    meets the target classes in the order of those rows: the target's order is
    ``inverse[order]`` with its repeats dropped (the first of each kept). The first
    position of each class is found by a reversed scatter (the last write wins, as in
    :func:`first_members`), so no sort is made.
    """
    seen = inverse.take(order)
    first = np.empty(n_classes, dtype=np.int64)  # read only at the classes in seen
    first[seen[::-1]] = positions[::-1]
    return np.asarray(seen[first.take(seen) == positions])


class FrequencyEngine:
    """Computes frequency sets in-process with NumPy (the embedded backend).

    ``sensitive`` names the sensitive attributes whose per-class histograms
    the frequency sets carry: only those some criterion reads, since every
    roll-up re-aggregates them. When ``dataset.population`` is set, the bottom
    node's distinct tuples are those of the table's and the population's rows
    together (classes of population records only have ``counts == 0``) and
    every frequency set carries population counts. ``keep_representatives``
    rolls up each class's first row (what the sample-based criteria order
    classes by); the bottom node always has them. ``keep_population_order`` rolls up
    the order of the classes' first population rows
    (:attr:`FrequencySet.population_order`, the bottom node has it with a population).
    """

    def __init__(
        self,
        dataset: Dataset,
        keep_base_index: bool = False,
        sensitive: Sequence[str] = (),
        keep_representatives: bool = False,
    ) -> None:
        self.qis = dataset.qis
        self.n = dataset.n
        self.keep_base_index = keep_base_index
        self.keep_representatives = keep_representatives
        self.keep_population_order = False
        self.heights = tuple(q.height for q in self.qis)
        self._lifts: dict[tuple[int, int, int], NDArray[Any]] = {}
        self._deltas: dict[tuple[int, int, int], NDArray[Any]] = {}
        self._range = np.arange(0, dtype=np.int64)
        population = dataset.population
        cards = [q.cardinality(0) for q in self.qis]
        self.layout = KeyLayout(cards)
        pop_counts = None
        pop_order = None
        if population is None:
            columns = [q.codes for q in self.qis]
            inverse, first = group_columns(columns, cards)
            #: (n,) distinct bottom tuple of each row of the table
            self.row_index = inverse
            #: (d, m) distinct code tuples of the data (bottom node)
            self.base_tuples = np.column_stack([c[first] for c in columns]).astype(
                np.int32, copy=False
            )
        else:
            rows = dataset.code_matrix()
            rows = np.vstack([rows, np.asarray(population, dtype=rows.dtype)])
            inverse, first = group_tuples(rows, cards)
            self.row_index = inverse[: self.n]
            pop_counts = np.bincount(inverse[self.n :], minlength=len(first)).astype(np.int64)
            # the bottom's classes met by population rows, in order of their first row
            pop_order = factorize_int64(np.asarray(inverse[self.n :], dtype=np.int64))[1]
            self.base_tuples = rows[first]
            del rows
        del inverse
        counts = np.bincount(self.row_index, minlength=len(first)).astype(np.int64)
        #: the sensitive attributes carried, in order
        self.sensitive = tuple(dict.fromkeys(sensitive))
        histograms = {}
        for name in self.sensitive:
            attr = dataset.sensitive_attribute(name)
            n_values = len(attr.values)
            classes, values, hist = aggregate_histograms(
                self.row_index, attr.codes, None, len(first), n_values
            )
            histograms[name] = SensitiveHistograms(
                classes=classes,
                values=values,
                counts=hist,
                global_counts=np.asarray(attr.frequencies, dtype=np.int64),
            )
        self.bottom = FrequencySet(
            levels=(0,) * len(self.qis),
            keys=self.layout.pack(self.base_tuples),
            counts=counts,
            base_index=np.arange(len(first), dtype=np.int64),
            sensitive=histograms,
            population=pop_counts,
            layout=self.layout,
            representatives=first.astype(np.int64),
            known_codes=self.base_tuples,
            population_order=pop_order,
        )

    def lift(self, dim: int, lower: int, upper: int) -> NDArray[Any]:
        """Cached code map of quasi-identifier ``dim`` from level ``lower`` to ``upper``."""
        key = (dim, lower, upper)
        arr = self._lifts.get(key)
        if arr is None:
            arr = self.qis[dim].lift(lower, upper)
            self._lifts[key] = arr
        return arr

    def _arange(self, n: int) -> NDArray[Any]:
        """``np.arange(n)`` (int64), sliced from a cached array."""
        if self._range.shape[0] < n:
            self._range = np.arange(max(n, 2 * self._range.shape[0]), dtype=np.int64)
        return self._range[:n]

    def key_delta(self, dim: int, lower: int, upper: int) -> NDArray[Any]:
        """Cached change of the packed key when quasi-identifier ``dim`` rises from level
        ``lower`` to ``upper``: ``(lift[c] - c) * weight`` for each code ``c`` at ``lower``
        (see :meth:`KeyLayout.replace`)."""
        key = (dim, lower, upper)
        arr = self._deltas.get(key)
        if arr is None:
            lift = self.lift(dim, lower, upper).astype(np.int64)
            arr = (lift - np.arange(lift.shape[0], dtype=np.int64)) * self.layout.weight[dim]
            self._deltas[key] = arr
        return arr

    def _target_keys(
        self, source: FrequencySet, raised: list[tuple[int, int, int]]
    ) -> tuple[NDArray[Any], NDArray[Any]]:
        """Group the source's classes by their keys at the target: ``(inverse, unique_keys)``,
        classes numbered in order of first appearance."""
        source_codes = source.codes
        if self.layout.chunks == 1:
            column = source.keys[:, 0]
            for step, (i, a, b) in enumerate(raised):
                delta = self.key_delta(i, a, b).take(source_codes[:, i])
                column = column + delta if step == 0 else np.add(column, delta, out=column)
            inverse, uniques = factorize_int64(column)
            return inverse, uniques.reshape(-1, 1)
        keys = source.keys.copy()
        for i, a, b in raised:
            keys[:, self.layout.chunk[i]] += self.key_delta(i, a, b).take(source_codes[:, i])
        return group_keys(keys)

    def roll_up(self, source: FrequencySet, levels: Sequence[int]) -> FrequencySet:
        """Frequency set at ``levels`` derived from ``source`` (a node at or below it)."""
        target = tuple(map(int, levels))
        if target == source.levels:
            return source
        if len(target) != len(source.levels):
            raise ValueError(f"cannot roll up from {source.levels} to {target}")
        raised = []
        for i, (a, b) in enumerate(zip(source.levels, target, strict=True)):
            if a != b:
                if b < a:
                    raise ValueError(f"cannot roll down from {source.levels} to {target}")
                raised.append((i, a, b))
        inverse, uniques = self._target_keys(source, raised)
        n_classes = len(uniques)
        member = np.empty(n_classes, dtype=np.int64)  # any member: all share the target codes
        member[inverse] = self._arange(inverse.shape[0])
        codes = source.codes.take(member, axis=0)
        for i, a, b in raised:
            codes[:, i] = self.lift(i, a, b).take(codes[:, i])
        counts = np.bincount(inverse, weights=source.counts, minlength=n_classes)
        base_index = None
        if self.keep_base_index and source.base_index is not None:
            base_index = inverse[source.base_index]
        population = None
        if source.population is not None:
            population = np.bincount(
                inverse, weights=source.population, minlength=n_classes
            ).astype(np.int64)
        representatives = None
        if self.keep_representatives and source.representatives is not None:
            representatives = np.full(n_classes, _INT64_MAX, dtype=np.int64)
            np.minimum.at(representatives, inverse, source.representatives)
        population_order = None
        if self.keep_population_order and source.population_order is not None:
            order = source.population_order
            population_order = roll_population_order(
                order, inverse, n_classes, self._arange(order.shape[0])
            )
        return FrequencySet(
            levels=target,
            keys=uniques,
            counts=counts.astype(np.int64),
            base_index=base_index,
            sensitive=(
                RolledHistograms(source.sensitive, inverse, n_classes) if source.sensitive else {}
            ),
            population=population,
            layout=self.layout,
            representatives=representatives,
            known_codes=codes,
            population_order=population_order,
        )

    @classmethod
    def from_base(
        cls,
        qis: Sequence[Any],
        rows: int,
        tuples: NDArray[Any],
        counts: NDArray[Any],
        first_rows: NDArray[Any],
        sensitive: Mapping[str, SensitiveHistograms] | None = None,
    ) -> FrequencyEngine:
        """The engine of a table known by its bottom frequency set only (no rows).

        ``tuples`` are the distinct code tuples in order of first appearance,
        ``counts`` their records, ``first_rows`` their first rows and
        ``sensitive`` the per-tuple histograms, exactly what ``__init__``
        computes from ``dataset.code_matrix()`` (e.g. as
        :meth:`anonlab.engine.base.EngineBase.frequency_set` counts them out of
        process). ``row_index`` is empty: the rows stay where they are. No
        population table.
        """
        engine = cls.__new__(cls)
        engine.qis = tuple(qis)
        engine.n = int(rows)
        engine.keep_base_index = False
        engine.keep_representatives = False
        engine.keep_population_order = False
        engine.heights = tuple(q.height for q in engine.qis)
        engine._lifts = {}
        engine._deltas = {}
        engine._range = np.arange(0, dtype=np.int64)
        engine.layout = KeyLayout([q.cardinality(0) for q in engine.qis])
        engine.row_index = np.zeros(0, dtype=np.int64)
        engine.base_tuples = np.asarray(tuples, dtype=np.int32)
        histograms = dict(sensitive or {})
        engine.sensitive = tuple(histograms)
        engine.bottom = FrequencySet(
            levels=(0,) * len(engine.qis),
            keys=engine.layout.pack(engine.base_tuples),
            counts=np.asarray(counts, dtype=np.int64),
            base_index=np.arange(len(counts), dtype=np.int64),
            sensitive=histograms,
            population=None,
            layout=engine.layout,
            representatives=np.asarray(first_rows, dtype=np.int64),
            known_codes=engine.base_tuples,
        )
        return engine


class LevelPacker:
    """Level vectors packed into one int64, to test "at or below" for many nodes at once.

    Each level takes a field of ``width`` bits whose top bit is a guard; the
    levels stay below the guard. For packed ``c`` and ``t``, every field of
    ``(t | guards) - c`` is ``2^(width-1) + t_i - c_i``, in ``(0, 2^width)``
    (no borrow crosses fields), so its guard bit is set exactly when
    ``c_i <= t_i``: ``c`` is at or below ``t`` when all guard bits are set.
    ``never`` (the largest level in every field, above every height) is at or
    below no node. Usable while the fields fit 62 bits.
    """

    def __init__(self, heights: Sequence[int]) -> None:
        self.width = (max(heights, default=0) + 1).bit_length() + 1
        self.shifts = [self.width * i for i in range(len(heights))]
        self._scales = [1 << s for s in self.shifts]
        self.usable = self.width * len(heights) <= 62
        field_max = (1 << (self.width - 1)) - 1
        self.guards = sum(1 << (s + self.width - 1) for s in self.shifts)
        self.never = sum(field_max << s for s in self.shifts) if self.usable else 0

    def pack(self, levels: Sequence[int]) -> int:
        """One level vector as an int."""
        if len(levels) != len(self._scales):
            raise ValueError(f"{len(levels)} levels for a packer of {len(self._scales)}")
        return sum(map(operator.mul, map(int, levels), self._scales))  # a << s == a * 2**s

    def below(self, packed: NDArray[Any], target: int) -> NDArray[Any]:
        """(n,) bool: which packed vectors are at or below the packed ``target``."""
        guards = self.guards
        return np.asarray((((target | guards) - packed) & guards) == guards)


#: the kinds of roll-up sources, in the cache's order of preference among equal class counts
_ENTRY, _BOTTOM, _SNAPSHOT = 0, 1, 2


def _score(classes: Any, kind: int) -> Any:
    """A roll-up source's rank in :meth:`FrequencyCache._smallest_candidate`: its classes,
    then its kind (:data:`_ENTRY` before :data:`_BOTTOM` before :data:`_SNAPSHOT`)."""
    return classes * 4 + kind


def cache_budget(rows: int) -> int:
    """The frequency-set cache's byte budget for a table of ``rows`` records:
    :data:`SMALL_TABLE_BUDGET` up to :data:`LARGE_TABLE_ROWS` rows, :data:`CACHE_BUDGET`
    above (where the rows' own arrays make the peak and the search checks fewer nodes than a
    cache of 16 MiB holds)."""
    return SMALL_TABLE_BUDGET if rows <= LARGE_TABLE_ROWS else CACHE_BUDGET


class FrequencyCache:
    """A bounded cache of frequency sets; finds the cheapest cached source below a target.

    A roll-up costs time in proportion to its source's number of classes, so
    the source chosen for a target is the cached node at or below it with the
    fewest classes. Lookup is vectorized over the cached level vectors;
    eviction is least-recently-used.

    Besides the checked nodes, the cache keeps *axis snapshots*: the node that
    raises a single quasi-identifier to level 1 (computed from the bottom the
    first time a target would otherwise be rolled up from the bottom itself).
    Every node but the bottom lies above at least one of them, so after at most
    ``m`` roll-ups the rows' distinct tuples are no longer re-aggregated in full
    for every node the search visits in a new region of the lattice.

    *Chain snapshots* refine them where the search keeps returning: once a
    large snapshot has served as a source a few times, the next quasi-identifier
    of the target (in the same order, the one whose level 1 shrinks its domain
    most) is raised to level 1 as well, giving a smaller source for the targets
    that follow. Only 0/1 level vectors are snapshots, so they are shared by
    many targets; their number is bounded.

    Snapshots are frequency sets only: a node counts as checked when the search
    evaluates it, not when a snapshot of it is made.
    """

    def __init__(
        self, engine: FrequencyEngine, capacity: int = 128, budget: int | None = None
    ) -> None:
        self.engine = engine
        self.capacity = max(1, capacity)
        self.budget = cache_budget(engine.n) if budget is None else budget
        self._bytes = 0  # held by the LRU entries
        self._snapshot_bytes = 0
        m = len(engine.heights)
        self._levels = np.full((self.capacity, m), _NEVER_BELOW, dtype=np.int16)
        self._packer = LevelPacker(engine.heights)
        #: the level vectors of :attr:`_levels` packed (when the packer is usable)
        self._packed = np.full(self.capacity, self._packer.never, dtype=np.int64)
        self._classes = np.zeros(self.capacity, dtype=np.int64)
        #: the lookup's one row of candidates (with a usable packer): the bottom, the snapshots,
        #: then the LRU slots from :attr:`_spare` on (:meth:`_smallest_candidate`); packed level
        #: vectors and scores (a candidate that is not there is never at or below a target)
        self._spare = m + _CHAIN_MAX + 1
        self._cand_packed = np.full(self.capacity + self._spare, self._packer.never, np.int64)
        self._cand_score = np.full(self.capacity + self._spare, _INT64_MAX, dtype=np.int64)
        self._cand_packed[0] = 0  # the bottom, at or below every node
        self._cand_score[0] = _score(engine.bottom.classes, _BOTTOM)
        #: LRU slots ever used: the lookup reads the candidates up to ``_spare + _high_slot``
        self._high_slot = 0
        #: the slots in use, least recently used first (what an argmin over their last uses
        #: would find, without the pass over every slot)
        self._lru: OrderedDict[int, None] = OrderedDict()
        self._free = list(range(self.capacity))  # a heap: the lowest free slot first
        self._entries: list[FrequencySet | None] = [None] * self.capacity
        self._slot: dict[tuple[int, ...], int] = {}
        self._axes: dict[int, FrequencySet] = {}
        self._chain: dict[tuple[int, ...], FrequencySet] = {}
        self._snapshots: (
            tuple[list[FrequencySet], NDArray[Any], NDArray[Any], NDArray[Any]] | None
        ) = None
        self._uses: dict[tuple[int, ...], int] = {}
        # quasi-identifiers in order of how much level 1 shrinks their domain
        qis = engine.qis
        shrink = [q.cardinality(0) / max(q.cardinality(min(1, q.height)), 1) for q in qis]
        self._axis_order = sorted(
            (i for i, q in enumerate(qis) if q.height >= 1), key=lambda i: (-shrink[i], i)
        )

    def get(self, levels: Sequence[int]) -> FrequencySet | None:
        """The cached frequency set of exactly this node, if any."""
        key = levels if type(levels) is tuple else tuple(int(x) for x in levels)
        slot = self._slot.get(key)
        if slot is None:
            return self._axis_snapshot(key)
        self._touch(slot)
        return self._entries[slot]

    def _axis_snapshot(self, levels: tuple[int, ...]) -> FrequencySet | None:
        """The axis snapshot of exactly this node, if it is one and was made."""
        nonzero = [i for i, a in enumerate(levels) if a]
        if len(nonzero) == 1 and levels[nonzero[0]] == 1:
            return self._axes.get(nonzero[0])
        return None

    def _touch(self, slot: int) -> None:
        self._lru.move_to_end(slot)

    def put(self, fs: FrequencySet) -> None:
        """Store a frequency set, evicting least recently used entries.

        Entries are evicted while the cache is full or would hold more than
        its byte budget (large frequency sets near the bottom of a big table
        would otherwise pile up).
        """
        if fs.levels in self._slot:
            return
        size = fs.nbytes
        while self._slot and (len(self._slot) >= self.capacity or self._bytes + size > self.budget):
            self._evict(next(iter(self._lru)))
        slot = heapq.heappop(self._free)
        self._entries[slot] = fs
        self._levels[slot] = fs.levels
        packed = self._packer.pack(fs.levels) if self._packer.usable else self._packer.never
        self._packed[slot] = packed
        classes = fs.classes
        self._classes[slot] = classes
        self._cand_score[self._spare + slot] = _score(classes, _ENTRY)
        self._cand_packed[self._spare + slot] = packed
        if slot >= self._high_slot:
            self._high_slot = slot + 1
        self._slot[fs.levels] = slot
        self._bytes += size
        self._lru[slot] = None  # the most recently used

    def _evict(self, slot: int) -> None:
        old = self._entries[slot]
        if old is None:
            return
        del self._slot[old.levels]
        self._bytes -= old.nbytes
        self._entries[slot] = None
        del self._lru[slot]
        self._levels[slot] = _NEVER_BELOW  # never at or below a target
        self._packed[slot] = self._packer.never
        self._classes[slot] = 0
        self._cand_packed[self._spare + slot] = self._packer.never
        self._cand_score[self._spare + slot] = _INT64_MAX
        heapq.heappush(self._free, slot)

    def closest_below(self, levels: Sequence[int]) -> FrequencySet:
        """The cached node or snapshot at or below ``levels`` with the fewest classes.

        Falls back on a new axis snapshot, and only for the bottom node itself
        (or a lattice whose hierarchies all have height 0) on the bottom.
        """
        target = levels if type(levels) is tuple else tuple(int(x) for x in levels)
        best = (
            self._smallest_candidate(target)
            if self._packer.usable
            else self._smallest_cached_below(np.asarray(target, dtype=np.int16))
        )
        if best is self.engine.bottom:
            axis = next((i for i in self._axis_order if target[i] >= 1), None)
            if axis is not None and target != self._axis_levels(axis):
                best = self.engine.roll_up(self.engine.bottom, self._axis_levels(axis))
                self._axes[axis] = best
                self._snapshots = None
                self._snapshot_bytes += best.nbytes
        uses = self._uses
        uses[best.levels] = uses.get(best.levels, 0) + 1
        return self._refine_chain(target, best)

    def _smallest_cached_below(self, target: NDArray[Any]) -> FrequencySet:
        """The cache entry, axis or chain snapshot at or below ``target`` with fewest classes
        (:meth:`_smallest_candidate` where the packer is usable)."""
        if self._packer.usable:
            return self._smallest_candidate(tuple(target.tolist()))
        best: FrequencySet = self.engine.bottom
        packer = self._packer
        packed = packer.pack(target.tolist()) if packer.usable else 0
        ok = (
            packer.below(self._packed, packed)
            if packer.usable
            else (self._levels <= target).all(axis=1)
        )
        if ok.any():
            slot = int(np.argmin(np.where(ok, self._classes, _INT64_MAX)))
            entry = self._entries[slot]
            if entry is not None:
                self._touch(slot)
                best = entry
        snapshots, levels, classes, snap_packed = self._snapshot_arrays()
        if snapshots and int(classes.min()) < best.classes:
            at_or_below = (
                packer.below(snap_packed, packed)
                if packer.usable
                else (levels <= target).all(axis=1)
            )
            below = at_or_below & (classes < best.classes)
            if below.any():
                best = snapshots[int(np.argmin(np.where(below, classes, _INT64_MAX)))]
        return best

    def _smallest_candidate(self, target: tuple[int, ...]) -> FrequencySet:
        """:meth:`_smallest_cached_below` with a usable packer, in one pass over the candidates
        (the LRU slots never used are left out).

        The fewest classes win; among equals an LRU entry (the lowest slot) before the bottom,
        the bottom before a snapshot (the first made), so a snapshot is taken only with fewer
        classes than the best entry, as the two-step search did (:func:`_score`).
        """
        snapshots = (
            self._snapshots[0] if self._snapshots is not None else self._snapshot_arrays()[0]
        )  # making the arrays also lays the snapshots into the candidates
        used = self._spare + self._high_slot
        guards = self._packer.guards
        # the candidates' packed level vectors at or below the target (LevelPacker.below)
        gap = (self._packer.pack(target) | guards) - self._cand_packed[:used]
        np.bitwise_and(gap, guards, out=gap)
        at = int(np.where(gap == guards, self._cand_score[:used], _INT64_MAX).argmin())
        if at >= self._spare:
            entry = self._entries[at - self._spare]
            if entry is not None:
                self._touch(at - self._spare)
                return entry
        if at == 0:
            return self.engine.bottom
        return snapshots[at - 1]

    def _snapshot_arrays(
        self,
    ) -> tuple[list[FrequencySet], NDArray[Any], NDArray[Any], NDArray[Any]]:
        """The axis snapshots, then the chain snapshots (each in the order made), with their
        level vectors, class counts and packed level vectors as arrays (rebuilt after a
        snapshot is stored)."""
        if self._snapshots is None:
            snapshots = list(self._axes.values()) + list(self._chain.values())
            m = len(self.engine.heights)
            levels = np.asarray([fs.levels for fs in snapshots], dtype=np.int16).reshape(-1, m)
            classes = np.asarray([fs.classes for fs in snapshots], dtype=np.int64)
            packed = np.asarray(
                [self._packer.pack(fs.levels) if self._packer.usable else 0 for fs in snapshots],
                dtype=np.int64,
            )
            self._snapshots = (snapshots, levels, classes, packed)
            if self._packer.usable:
                self._cand_packed[1 : 1 + len(snapshots)] = packed
                self._cand_score[1 : 1 + len(snapshots)] = _score(classes, _SNAPSHOT)
        return self._snapshots

    def _refine_chain(self, target: tuple[int, ...], best: FrequencySet) -> FrequencySet:
        """A snapshot used as a large source again and again earns a finer one below the target.

        The next QI of the target's chain is raised to level 1 too; returns the
        best source after any new snapshot. Only a snapshot is refined: the source chosen has
        the fewest classes of every candidate at or below the target, the chain snapshots
        made before among them, and a new one is rolled up from its parent only when the
        parent is that source.
        """
        floor = self.engine.bottom.classes / _CHAIN_RATIO
        if best.classes <= floor or len(self._chain) >= _CHAIN_MAX or not self._is_snapshot(best):
            return best  # what the loop below finds, without building its lists
        wanted = list(target)
        chain = [i for i in self._axis_order if target[i] >= 1]
        m = len(self.engine.heights)
        for j in range(2, len(chain) + 1):
            if (
                best.classes <= floor
                or len(self._chain) >= _CHAIN_MAX
                or self._uses.get(best.levels, 0) < _CHAIN_AFTER
                or self._snapshot_bytes + best.nbytes > self.budget // 2
            ):
                break
            key = tuple(1 if i in chain[:j] else 0 for i in range(m))
            if list(key) == wanted:
                break
            snap = self._chain.get(key)
            if snap is None:
                parent_key = tuple(1 if i in chain[: j - 1] else 0 for i in range(m))
                parent = self._chain.get(parent_key) if j > 2 else self._axes.get(chain[0])
                if parent is None or parent is not best:
                    break
                snap = self.engine.roll_up(parent, key)
                self._chain[key] = snap
                self._snapshots = None
                self._snapshot_bytes += snap.nbytes
            if snap.classes < best.classes:
                best = snap
        return best

    def _is_snapshot(self, fs: FrequencySet) -> bool:
        """Whether ``fs`` is an axis or chain snapshot."""
        levels = fs.levels
        if self._chain.get(levels) is fs:
            return True
        raised = [i for i, a in enumerate(levels) if a]
        return len(raised) == 1 and self._axes.get(raised[0]) is fs

    def _axis_levels(self, axis: int) -> tuple[int, ...]:
        """Level vector of the node raising quasi-identifier ``axis`` to level 1."""
        return tuple(1 if i == axis else 0 for i in range(len(self.engine.heights)))

    def compute(self, levels: Sequence[int]) -> FrequencySet:
        """The node's frequency set: cached, or rolled up from the cheapest cached source."""
        hit = self.get(levels)
        if hit is not None:
            return hit
        return self.store(self.build(levels))

    def build(self, levels: Sequence[int]) -> FrequencySet:
        """The node's frequency set rolled up from the cheapest cached source, not stored (see
        :meth:`store`): a caller that judges the node first stores it with the histograms it
        built, so a node whose histograms were never read is the only one counted with the
        source histograms it pins (:class:`RolledHistograms`)."""
        return self.engine.roll_up(self.closest_below(levels), levels)

    def store(self, fs: FrequencySet) -> FrequencySet:
        """Cache a frequency set from :meth:`build` (an axis node is kept as a snapshot too)."""
        self.put(fs)
        nonzero = [i for i, a in enumerate(fs.levels) if a]
        if len(nonzero) == 1 and fs.levels[nonzero[0]] == 1 and nonzero[0] not in self._axes:
            self._axes[nonzero[0]] = fs  # an axis node: keep it
            self._snapshots = None
            self._snapshot_bytes += fs.nbytes
        return fs
