"""Frequency sets: the count of records per distinct quasi-identifier tuple at a node.

The table is read once: the bottom node's frequency set groups the rows'
code tuples. Every other node's frequency set is *rolled up* from a checked
lower node (or the bottom): map each distinct tuple's codes to the coarser
levels and re-aggregate the counts. The search therefore works on distinct
tuples, never on rows again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonlab.dataset import Dataset

_MAX_KEY = np.iinfo(np.int64).max // 4


@dataclass(frozen=True)
class FrequencySet:
    """Equivalence classes of one node.

    ``tuples[c]`` is class ``c``'s code vector (group codes at the node's
    levels), ``counts[c]`` its number of records. ``base_index[b]`` (if kept)
    is the class of the bottom node's distinct tuple ``b``.
    """

    levels: tuple[int, ...]
    tuples: np.ndarray
    counts: np.ndarray
    base_index: np.ndarray | None

    @property
    def classes(self) -> int:
        """Number of equivalence classes."""
        return int(self.counts.shape[0])


def group_tuples(
    tuples: np.ndarray, cardinalities: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Group rows of a code matrix: returns ``(inverse, representatives)``.

    ``inverse[r]`` is the group of row ``r`` (groups numbered by first
    appearance) and ``representatives[g]`` the row index of group ``g``'s first
    member. Rows are combined into one int64 key by mixed radix; when the key
    space would overflow, columns are re-factorized on the way.
    """
    n, m = tuples.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key = np.zeros(n, dtype=np.int64)
    space = 1
    for i in range(m):
        card = max(int(cardinalities[i]), 1)
        if space * card > _MAX_KEY:
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


class FrequencyEngine:
    """Computes frequency sets in-process with NumPy (the embedded backend)."""

    def __init__(self, dataset: Dataset, keep_base_index: bool = False) -> None:
        self.qis = dataset.qis
        self.n = dataset.n
        self.keep_base_index = keep_base_index
        self.heights = tuple(q.height for q in self.qis)
        self._lifts: dict[tuple[int, int, int], np.ndarray] = {}
        rows = dataset.code_matrix()
        cards = [q.cardinality(0) for q in self.qis]
        inverse, first = group_tuples(rows, cards)
        #: (n,) distinct bottom tuple of each row
        self.row_index = inverse
        counts = np.bincount(inverse, minlength=len(first)).astype(np.int64)
        self.bottom = FrequencySet(
            levels=(0,) * len(self.qis),
            tuples=rows[first],
            counts=counts,
            base_index=np.arange(len(first), dtype=np.int64),
        )
        self.rollups = 0

    @property
    def base_tuples(self) -> np.ndarray:
        """(d, m) distinct code tuples of the data (bottom node)."""
        return self.bottom.tuples

    def lift(self, dim: int, lower: int, upper: int) -> np.ndarray:
        """Cached code map of quasi-identifier ``dim`` from level ``lower`` to ``upper``."""
        key = (dim, lower, upper)
        arr = self._lifts.get(key)
        if arr is None:
            arr = self.qis[dim].lift(lower, upper)
            self._lifts[key] = arr
        return arr

    def roll_up(self, source: FrequencySet, levels: Sequence[int]) -> FrequencySet:
        """Frequency set at ``levels`` derived from ``source`` (a node at or below it)."""
        target = tuple(int(x) for x in levels)
        if target == source.levels:
            return source
        cols = source.tuples.copy()
        for i, (a, b) in enumerate(zip(source.levels, target, strict=True)):
            if b < a:
                raise ValueError(f"cannot roll down from {source.levels} to {target}")
            if b > a:
                cols[:, i] = self.lift(i, a, b)[cols[:, i]]
        cards = [q.cardinality(lv) for q, lv in zip(self.qis, target, strict=True)]
        inverse, first = group_tuples(cols, cards)
        counts = np.bincount(inverse, weights=source.counts, minlength=len(first))
        base_index = None
        if self.keep_base_index and source.base_index is not None:
            base_index = inverse[source.base_index]
        self.rollups += 1
        return FrequencySet(
            levels=target,
            tuples=cols[first],
            counts=counts.astype(np.int64),
            base_index=base_index,
        )


class FrequencyCache:
    """A bounded cache of frequency sets; finds the closest cached node below a target.

    Lookup is vectorized over the cached level vectors; eviction is
    least-recently-used. The bottom node is always available as a fallback.
    """

    def __init__(self, engine: FrequencyEngine, capacity: int = 128) -> None:
        self.engine = engine
        self.capacity = max(1, capacity)
        m = len(engine.heights)
        self._levels = np.full((self.capacity, m), np.iinfo(np.int16).max, dtype=np.int16)
        self._sums = np.full(self.capacity, -1, dtype=np.int64)
        self._used = np.zeros(self.capacity, dtype=np.int64)
        self._entries: list[FrequencySet | None] = [None] * self.capacity
        self._slot: dict[tuple[int, ...], int] = {}
        self._clock = 0

    def get(self, levels: Sequence[int]) -> FrequencySet | None:
        """The cached frequency set of exactly this node, if any."""
        slot = self._slot.get(tuple(int(x) for x in levels))
        if slot is None:
            return None
        self._touch(slot)
        return self._entries[slot]

    def _touch(self, slot: int) -> None:
        self._clock += 1
        self._used[slot] = self._clock

    def put(self, fs: FrequencySet) -> None:
        """Store a frequency set, evicting the least recently used entry if full."""
        if fs.levels in self._slot:
            return
        free = [i for i, e in enumerate(self._entries) if e is None]
        slot = free[0] if free else int(np.argmin(self._used))
        old = self._entries[slot]
        if old is not None:
            del self._slot[old.levels]
        self._entries[slot] = fs
        self._levels[slot] = fs.levels
        self._sums[slot] = sum(fs.levels)
        self._slot[fs.levels] = slot
        self._touch(slot)

    def closest_below(self, levels: Sequence[int]) -> FrequencySet:
        """The cached node at or below ``levels`` with the highest level (or the bottom)."""
        target = np.asarray(levels, dtype=np.int16)
        ok = np.all(self._levels <= target[None, :], axis=1)
        if ok.any():
            sums = np.where(ok, self._sums, -1)
            slot = int(np.argmax(sums))
            entry = self._entries[slot]
            if entry is not None:
                self._touch(slot)
                return entry
        return self.engine.bottom

    def compute(self, levels: Sequence[int]) -> FrequencySet:
        """The node's frequency set: cached, or rolled up from the closest cached node below."""
        hit = self.get(levels)
        if hit is not None:
            return hit
        fs = self.engine.roll_up(self.closest_below(levels), levels)
        self.put(fs)
        return fs
