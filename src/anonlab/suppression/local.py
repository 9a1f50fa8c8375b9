"""Local suppression on a frequency set: blank key cells until every pattern has ``f_k >= k``.

The input is a block's frequency set: its distinct key tuples (*groups*, rows of
codes, :data:`~anonlab.suppression.patterns.BLANK` for a cell already blank) and
their record counts. All records of a group are treated alike, so the result is a
released tuple per group (docs/suppression.md, "Method").

1. ``f_k`` of every distinct released pattern is computed once
   (:func:`~anonlab.suppression.patterns.wildcard_frequencies`) and then kept up to
   date as records move from one pattern to another: a move of ``c`` records from
   ``a`` to ``b`` changes the ``f_k`` of the patterns compatible with ``a`` or ``b``
   only, by ``c`` times their weight.
2. While some pattern has ``f_k < k``, the one with the lowest ``f_k`` (the highest
   risk ``1 / f_k``, as sdcMicro orders its problem records; ties: the first) is
   fixed at once by blanking the *smallest* set of its cells after which its
   frequency reaches ``k``; among sets of that size the one sparing the most important
   keys (compared from the most important key down). The frequency of the pattern
   with cells ``S`` blanked is ``c + sum`` of the weighted counts of the patterns whose
   *conflict mask* (the cells where both hold different values) lies within ``S``: one
   weighted histogram of conflict masks and a sum over subsets (``m * 2^m`` additions
   for ``m`` keys) give it for every ``S`` at once. With more than
   :data:`MAX_SUBSET_KEYS` keys one cell is blanked at a time, the one that raises the
   frequency most.
3. Then every blanked cell is tried back, the most important keys first: it is
   restored when every pattern keeps ``f_k >= k`` (a greedy step may have blanked a
   cell that a later one made needless).

sdcMicro's ``localSuppression`` instead blanks one cell of every record at risk per
pass (the least important key in which it differs from its nearest records) and
repeats; the set-at-once choice and the restore pass are why this never needed more
cells than it on the inputs of tests/data/sdcmicro_suppression.json.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.suppression.patterns import (
    COMPLETE,
    EMPTY,
    PARTIAL,
    pattern_kinds,
    weight_given,
    wildcard_frequencies,
)

#: keys up to which a pattern's best set of cells is chosen among all subsets
MAX_SUBSET_KEYS = 16
#: tolerance of the frequency comparisons (fractional ``alpha`` sums)
_EPS = 1e-9


def subset_order(priority: Sequence[int]) -> NDArray[np.int64]:
    """Every subset mask of ``len(priority)`` keys in the order they are preferred: fewest
    cells first; then the set sparing the most important keys (``priority[j]`` the rank
    of key ``j``'s protection, higher = more important, all different)."""
    m = len(priority)
    masks = np.arange(1 << m, dtype=np.int64)
    size = np.zeros(masks.size, dtype=np.int64)
    protect = np.zeros(masks.size, dtype=np.int64)
    for j, rank in enumerate(priority):
        bit = (masks >> j) & 1
        size += bit
        protect += bit << int(rank)
    order: NDArray[np.int64] = np.lexsort((protect, size)).astype(np.int64)
    return order


def _subset_sums(histogram: NDArray[np.float64], m: int) -> NDArray[np.float64]:
    """``F[S] = sum of histogram[T] for T within S`` (sum over subsets, in place)."""
    f = histogram
    for j in range(m):
        view = f.reshape(-1, 2, 1 << j)
        view[:, 1, :] += view[:, 0, :]
    return f


class _Patterns:
    """The distinct released patterns of a block, their counts and frequencies."""

    def __init__(self, rows: NDArray[Any], counts: NDArray[Any], alpha: float) -> None:
        m = rows.shape[1]
        self.m = m
        self.alpha = alpha
        uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
        n = uniq.shape[0]
        capacity = max(16, 2 * n)
        self.values = np.full((capacity, m), -1, dtype=np.int64)
        self.values[:n] = uniq
        self.count = np.zeros(capacity, dtype=np.float64)
        self.count[:n] = np.bincount(inverse.ravel(), weights=counts, minlength=n)
        self.kind = np.zeros(capacity, dtype=np.int8)
        self.kind[:n] = pattern_kinds(uniq)
        self.fk = np.zeros(capacity, dtype=np.float64)
        self.fk[:n] = wildcard_frequencies(uniq, self.count[:n], alpha)
        self.n: int = int(n)
        self.total = float(counts.sum())
        self.index = {uniq[i].tobytes(): i for i in range(n)}
        self.group = inverse.ravel().astype(np.int64)
        self.bit_values = np.left_shift(np.int64(1), np.arange(m, dtype=np.int64))
        self.columns = np.ascontiguousarray(self.values.T)
        self.present = self.columns >= 0

    # -- primitives -----------------------------------------------------------------

    def conflicts(self, x: NDArray[Any]) -> NDArray[np.int64]:
        """The conflict mask of ``x`` with every pattern: the keys where both hold
        different values (one comparison of the key-major copy, one product with the bits)."""
        n = self.n
        differ = self.columns[:, :n] != x[:, None]
        differ &= self.present[:, :n]
        differ[x < 0] = False
        out: NDArray[np.int64] = self.bit_values @ differ
        return out

    def weights_to(self, kind: int) -> NDArray[np.float64]:
        """The weight each pattern gives to the records of another pattern of ``kind``."""
        complete, partial = weight_given(kind, self.alpha)
        return np.where(self.kind[: self.n] == COMPLETE, complete, partial)

    def _weights_from(self, kind: int) -> NDArray[np.float64]:
        """The weight a pattern of ``kind`` gives to the records of each other pattern."""
        own = self.kind[: self.n]
        if kind == COMPLETE:
            return np.where(own == PARTIAL, self.alpha, np.where(own == COMPLETE, 1.0, 0.0))
        return np.where(own == COMPLETE, 1.0, self.alpha)

    def find_or_add(self, x: NDArray[Any]) -> int:
        """The index of pattern ``x``, added with no records if it is new."""
        key = x.tobytes()
        found = self.index.get(key)
        if found is not None:
            return int(found)
        if self.n == self.values.shape[0]:
            self._grow()
        i = self.n
        self.values[i] = x
        self.columns[:, i] = x
        self.present[:, i] = x >= 0
        self.count[i] = 0.0
        self.kind[i] = pattern_kinds(x[None, :])[0]
        self.fk[i] = 0.0
        self.n += 1
        self.index[key] = i
        return i

    def _grow(self) -> None:
        capacity = 2 * self.values.shape[0]
        values = np.full((capacity, self.m), -1, dtype=np.int64)
        values[: self.n] = self.values[: self.n]
        self.values = values
        self.columns = np.ascontiguousarray(values.T)
        self.present = self.columns >= 0
        for name in ("count", "fk", "kind"):
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def moved_frequencies(self, a: int, b: int, c: float) -> NDArray[np.float64]:
        """Every pattern's ``f_k`` after ``c`` records move from pattern ``a`` to ``b``."""
        n = self.n
        fk = self.fk[:n].copy()
        away = self.weights_to(int(self.kind[a])) * (self.conflicts(self.values[a]) == 0)
        away[a] = 1.0
        into_conf = self.conflicts(self.values[b]) == 0
        into = self.weights_to(int(self.kind[b])) * into_conf
        into[b] = 1.0
        fk += c * (into - away)
        # b's own frequency, from scratch (it may be new)
        counts = self.count[:n].copy()
        counts[a] -= c
        counts[b] += c
        if self.kind[b] == EMPTY:
            fk[b] = self.total
        else:
            weights = self._weights_from(int(self.kind[b]))
            weights[b] = 1.0
            fk[b] = float((weights * counts * into_conf).sum())
        fk[self.kind[:n] == EMPTY] = self.total
        return fk

    def move(self, a: int, b: int, c: float, fk: NDArray[np.float64]) -> None:
        """Commit a move whose frequencies :meth:`moved_frequencies` gave."""
        self.fk[: self.n] = fk
        self.count[a] -= c
        self.count[b] += c

    # -- choices ----------------------------------------------------------------------

    def reachable(self, a: int) -> NDArray[np.float64]:
        """``f_k`` of pattern ``a`` with each subset ``S`` of its cells blanked (index = mask
        of ``S``); ``-1`` for a set that holds a blank already."""
        n, m = self.n, self.m
        x = self.values[a]
        c = float(self.count[a])
        conflict = self.conflicts(x)
        others = self.count[:n] > 0
        others[a] = False
        blanks_x = int(((x < 0).astype(np.int64) << np.arange(m)).sum())
        weights = np.where(self.kind[:n] == COMPLETE, 1.0, self.alpha) * self.count[:n]
        sel = np.flatnonzero(others)
        hist = np.bincount(conflict[sel], weights=weights[sel], minlength=1 << m).astype(np.float64)
        reach = _subset_sums(hist, m)
        # a pattern equal to x with S blanked counts 1, not alpha: its records join x's
        if self.alpha < 1.0:
            own = self.values[sel] < 0
            bm = (own.astype(np.int64) << np.arange(m)).sum(axis=1)
            equal = (conflict[sel] == 0) & ((bm & blanks_x) == blanks_x)
            reach += np.bincount(
                (bm & ~blanks_x)[equal],
                weights=(1.0 - self.alpha) * self.count[sel][equal],
                minlength=1 << m,
            )
        reach += c
        masks = np.arange(1 << m, dtype=np.int64)
        reach[(masks & blanks_x) != 0] = -1.0
        reach[((1 << m) - 1) & ~blanks_x] = self.total
        reach[0] = float(self.fk[a])
        return reach

    def best_blanks(self, a: int, k: float, order: NDArray[np.int64]) -> int:
        """The set of cells to blank in pattern ``a`` (a mask), as the module text says."""
        reach = self.reachable(a)
        ok = reach[order] >= k - _EPS
        ok[order == 0] = False
        hits = np.flatnonzero(ok)
        return int(order[hits[0]])

    def best_single(self, a: int, suppress_first: Sequence[int]) -> int:
        """One key of pattern ``a`` to blank (over :data:`MAX_SUBSET_KEYS` keys): the one
        whose blank raises its frequency most, ties by ``suppress_first``."""
        n = self.n
        x = self.values[a]
        conflict = self.conflicts(x)
        others = self.count[:n] > 0
        others[a] = False
        weights = np.where(self.kind[:n] == COMPLETE, 1.0, self.alpha) * self.count[:n]
        best, gain = -1, -1.0
        for j in suppress_first:
            if x[j] < 0:
                continue
            within = others & ((conflict & ~(np.int64(1) << j)) == 0)
            value = float(weights[within].sum())
            if value > gain + _EPS:
                best, gain = j, value
        return 1 << best


def suppress_block(
    rows: NDArray[Any],
    counts: NDArray[Any],
    k: float,
    alpha: float,
    priority: Sequence[int],
    *,
    original: NDArray[Any] | None = None,
) -> NDArray[np.int64]:
    """The released rows of a block's groups (module text).

    ``rows`` (groups x keys, -1 blank) and ``counts`` are the frequency set;
    ``priority[j]`` is key ``j``'s protection (all different, higher = more
    important: blanked last); ``original`` are the groups' values before any
    suppression (default ``rows``), the values a restored cell gets back. The block
    must hold at least ``k`` records (a pattern of blanks only then reaches ``k``).
    """
    m = rows.shape[1]
    rows = np.asarray(rows, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.float64)
    if rows.shape[0] == 0:
        return rows.copy()
    state = _Patterns(rows, counts, alpha)
    order = subset_order(priority) if m <= MAX_SUBSET_KEYS else np.zeros(0, dtype=np.int64)
    suppress_first = sorted(range(m), key=lambda j: priority[j])
    blanked = False
    while True:
        n = state.n
        bad = (state.count[:n] > 0) & (state.fk[:n] < k - _EPS)
        if not bad.any():
            break
        candidates = np.flatnonzero(bad)
        a = int(candidates[np.argmin(state.fk[candidates])])
        if m <= MAX_SUBSET_KEYS:
            mask = state.best_blanks(a, k, order)
        else:
            mask = state.best_single(a, suppress_first)
        target = state.values[a].copy()
        for j in range(m):
            if mask >> j & 1:
                target[j] = -1
        b = state.find_or_add(target)
        c = float(state.count[a])
        state.move(a, b, c, state.moved_frequencies(a, b, c))
        state.group[state.group == a] = b
        blanked = True
    released = state.values[state.group].copy()
    if blanked:
        _restore(state, released, rows if original is None else original, counts, k, priority)
    return released


def _restore(
    state: _Patterns,
    released: NDArray[np.int64],
    original: NDArray[Any],
    counts: NDArray[np.float64],
    k: float,
    priority: Sequence[int],
) -> None:
    """Give back every blanked cell that every pattern's ``f_k >= k`` allows (in place)."""
    most_important = sorted(range(state.m), key=lambda j: -priority[j])
    changed = np.flatnonzero(((released < 0) & (original >= 0)).any(axis=1))
    # larger groups first: a restored cell of theirs saves the most
    changed = changed[np.argsort(-counts[changed], kind="stable")]
    for g in changed:
        for j in most_important:
            if released[g, j] >= 0 or original[g, j] < 0:
                continue
            a = int(state.group[g])
            target = released[g].copy()
            target[j] = original[g, j]
            b = state.find_or_add(target)
            c = float(counts[g])
            fk = state.moved_frequencies(a, b, c)
            after = state.count[: state.n].copy()
            after[a] -= c
            after[b] += c
            if np.all(fk[after > 0] >= k - _EPS):
                state.move(a, b, c, fk)
                state.group[g] = b
                released[g] = target


def restore_across(
    released: NDArray[np.int64],
    original: NDArray[Any],
    counts: NDArray[Any],
    needs: Sequence[tuple[Sequence[int], float]],
    alpha: float,
    priority: Sequence[int],
) -> int:
    """Give back every blanked cell of ``released`` (groups x keys, in place) that leaves every
    combination of ``needs`` (``(keys, k)`` pairs) k-anonymous; the number given back.

    With combinations, a cell blanked for one of them may have been made needless by the
    blanks of another run after it; each combination's patterns are kept as in
    :func:`suppress_block`, and a cell is given back when the move keeps ``f_k >= k`` in
    every combination that holds its key. Cells are tried the most important keys first,
    the largest groups first.
    """
    counts = np.asarray(counts, dtype=np.float64)
    states = [_Patterns(released[:, list(cols)], counts, alpha) for cols, _ in needs]
    position = [{key: i for i, key in enumerate(cols)} for cols, _ in needs]
    most_important = sorted(range(released.shape[1]), key=lambda j: -priority[j])
    changed = np.flatnonzero(((released < 0) & (original >= 0)).any(axis=1))
    changed = changed[np.argsort(-counts[changed], kind="stable")]
    given = 0
    for g in changed:
        for j in most_important:
            if released[g, j] >= 0 or original[g, j] < 0:
                continue
            plans = []
            ok = True
            for r, (_, k) in enumerate(needs):
                if j not in position[r]:
                    continue
                state = states[r]
                a = int(state.group[g])
                target = state.values[a].copy()
                target[position[r][j]] = original[g, j]
                b = state.find_or_add(target)
                c = float(counts[g])
                fk = state.moved_frequencies(a, b, c)
                after = state.count[: state.n].copy()
                after[a] -= c
                after[b] += c
                if not np.all(fk[after > 0] >= k - _EPS):
                    ok = False
                    break
                plans.append((state, a, b, c, fk))
            if not ok:
                continue
            for state, a, b, c, fk in plans:
                state.move(a, b, c, fk)
                state.group[g] = b
            released[g, j] = original[g, j]
            given += 1
    return given
