"""Fixed-size MDAV microaggregation (Domingo-Ferrer and Mateo-Sanz 2002;
Domingo-Ferrer and Torra 2005), vectorized within each round.

The algorithm (NOTES §2, "Microaggregation"), on records ``R`` of a metric space:

1. while at least 3k records remain: take the centroid ``c`` of the remaining
   records, the record ``r`` farthest from ``c``, and the record ``s`` farthest
   from ``r``; form a group of ``r`` and its k-1 nearest remaining records,
   remove it; form a group of ``s`` and its k-1 nearest remaining records,
   remove it;
2. if 2k..3k-1 records remain: ``r`` farthest from their centroid, a group of
   ``r`` and its k-1 nearest records, and the rest (k..2k-1) form the last group;
3. otherwise the k..2k-1 remaining records form the last group.

Every group has k records except one of k..2k-1 (when n >= k).

Tie-breaking (deterministic; documented in docs/em4adom.md): among records at
the same distance the one with the lowest row number wins, both for "farthest"
and for "nearest"; squared distances closer than ``TIE_TOL`` (1e-10) times
(1 + the largest squared norm) count as equal, so that rounding in the
products cannot decide a tie that is exact in real numbers; the seed record
``r`` (or ``s``) always belongs to its own group even when duplicates of it
exist; if ``s`` fell into ``r``'s group (only
possible when all remaining records are equidistant from ``r``) it is chosen
again as the remaining record farthest from ``r``.

Distances are squared Euclidean on the standardized attributes (for mixed
records see :mod:`anonlab.microaggregation.mixed`); squaring does not change
any comparison. Each round costs a few matrix-vector products over the
remaining records, O(m p); there is no Python loop over records.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from anonlab.microaggregation.columns import check_k

TIE_TOL = 1e-10  # relative to the largest squared norm: equal up to rounding


class MetricSpace(Protocol):
    """Records MDAV can group: distances from a centroid or a record to all live rows."""

    alive: np.ndarray  # (m,) bool: not yet grouped
    ids: np.ndarray  # (m,) original row number of each working row
    tol: float  # distances closer than this count as equal (rounding of the products)

    def far_from_centroid(self) -> np.ndarray:
        """Distance of each row to the centroid of the live rows; -inf for grouped rows."""

    def from_row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Distances to working row ``i``: (dead rows -inf, dead rows +inf)."""

    def near_row(self, i: int) -> np.ndarray:
        """Distances to working row ``i`` with grouped rows at +inf."""

    def remove(self, rows: np.ndarray) -> None:
        """Mark working rows as grouped and update the running centroid."""

    def compact(self) -> None:
        """Drop grouped rows from the working arrays (keeps the row order)."""


class EuclideanSpace:
    """Standardized numeric records; distances by ||x||^2 - 2 x.y (one BLAS product per query).

    The constant ||y||^2 of the query is left out: it changes no comparison.
    The records are stored transposed (p, m) so that ``y @ zt`` streams each
    attribute contiguously. Grouped rows keep ``sq = +inf`` (nearest) / ``-inf``
    (farthest) so one product serves both searches without masking.
    """

    def __init__(self, z: np.ndarray) -> None:
        self.zt = np.ascontiguousarray(np.asarray(z, dtype=np.float64).T)
        m = self.zt.shape[1]
        self.ids = np.arange(m)
        self.alive = np.ones(m, dtype=bool)
        sq = np.einsum("ij,ij->j", self.zt, self.zt)
        self.sq_near = sq.copy()
        self.sq_far = sq
        self.total = self.zt.sum(axis=1)
        self.count = m
        self.tol = TIE_TOL * (1.0 + (float(sq.max()) if m else 0.0))

    def far_from_centroid(self) -> np.ndarray:
        g = (self.total * (-2.0 / self.count)) @ self.zt
        g += self.sq_far
        return np.asarray(g)

    def from_row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        g = (self.zt[:, i] * -2.0) @ self.zt
        far = g + self.sq_far
        g += self.sq_near
        return far, g

    def near_row(self, i: int) -> np.ndarray:
        """Distances to working row ``i`` with grouped rows at +inf."""
        g = (self.zt[:, i] * -2.0) @ self.zt
        g += self.sq_near
        return g

    def remove(self, rows: np.ndarray) -> None:
        self.alive[rows] = False
        self.sq_near[rows] = np.inf
        self.sq_far[rows] = -np.inf
        self.count -= rows.size
        self.total = self.total - self.zt[:, rows].sum(axis=1)

    def compact(self) -> None:
        keep = self.alive
        self.zt = np.ascontiguousarray(self.zt[:, keep])
        self.ids = self.ids[keep]
        self.sq_near = self.sq_near[keep]
        self.sq_far = self.sq_far[keep]
        self.alive = np.ones(self.zt.shape[1], dtype=bool)
        self.total = self.zt.sum(axis=1)  # fresh sum: no drift from the running update


SAMPLE_STRIDE = 64


def _kth_bound(d: np.ndarray, k: int) -> float:
    """A value with at least k entries of ``d`` at or below it (from a strided sample)."""
    sample = d[::SAMPLE_STRIDE]
    if sample.size < 4 * k:
        return float("inf")
    return float(np.partition(sample, k - 1)[k - 1])


def k_nearest(d: np.ndarray, k: int, seed: int, tol: float = 0.0) -> np.ndarray:
    """Working rows of ``seed`` and its k-1 nearest rows by ``d`` (ties: lowest row first).

    Distances within ``tol`` of the k-th smallest count as equal to it.

    At least k rows must be live (finite). ``d`` is modified (the seed is set
    to -inf so it always joins its own group).
    Candidates are first cut to the rows at or below the k-th smallest of a
    strided sample (that bound has at least k rows below it), so the exact
    selection runs on a few hundred values instead of all m.
    """
    d[seed] = -np.inf
    bound = _kth_bound(d, k)
    cand = np.flatnonzero(d <= bound + tol) if np.isfinite(bound) else np.arange(d.size)
    dc = d[cand]
    part = np.argpartition(dc, k - 1)[:k]
    threshold = dc[part].max()
    chosen = cand[dc <= threshold + tol]
    if chosen.size == k:
        return np.asarray(chosen)
    below = cand[dc < threshold - tol]
    equal = cand[np.abs(dc - threshold) <= tol]
    return np.concatenate([below, equal[: k - below.size]])


def first_argmax(values: np.ndarray, tol: float = 0.0) -> int:
    """Index of the largest value; the lowest index among values within ``tol`` of it."""
    top = values.max()
    return int(np.argmax(values >= top - tol))


def mdav_partition(space: MetricSpace, n: int, k: int, compact_below: float = 0.7) -> np.ndarray:
    """Group label (0, 1, ... in order of formation) of each of the ``n`` records."""
    check_k(k, n)
    labels = np.full(n, -1, dtype=np.int64)
    remaining = n
    group = 0
    since_compact = space.alive.size

    def take(rows: np.ndarray) -> None:
        nonlocal remaining, group
        labels[space.ids[rows]] = group
        group += 1
        space.remove(rows)
        remaining -= rows.size

    def maybe_compact() -> None:
        nonlocal since_compact
        if remaining < compact_below * since_compact:
            space.compact()
            since_compact = space.alive.size

    tol = space.tol
    while remaining >= 3 * k:
        r = first_argmax(space.far_from_centroid(), tol)
        far_r, near_r = space.from_row(r)
        s = first_argmax(far_r, tol)
        take(k_nearest(near_r, k, r, tol))
        if not space.alive[s]:
            far_r[~space.alive] = -np.inf
            s = first_argmax(far_r, tol)
        take(k_nearest(space.near_row(s), k, s, tol))
        maybe_compact()
    if remaining >= 2 * k:
        r = first_argmax(space.far_from_centroid(), tol)
        take(k_nearest(space.near_row(r), k, r, tol))
    if remaining > 0:
        take(np.flatnonzero(space.alive))
    return labels


def mdav_labels(z: np.ndarray, k: int) -> np.ndarray:
    """MDAV group labels of the rows of a standardized numeric matrix ``z`` (n, p)."""
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2:
        raise ValueError("z must be a 2-D array")
    return mdav_partition(EuclideanSpace(z), z.shape[0], k)


def group_means(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each row replaced by the mean of its group (``x`` in original units)."""
    x = np.asarray(x, dtype=np.float64)
    groups = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=groups).astype(np.float64)
    sums = np.zeros((groups, x.shape[1]))
    np.add.at(sums, labels, x)
    return np.asarray((sums / sizes[:, None])[labels])


def group_sizes(labels: np.ndarray) -> np.ndarray:
    """Number of records in each group."""
    return np.bincount(labels)


def sse_sst(z: np.ndarray, z_masked: np.ndarray) -> float:
    """SSE/SST (NOTES §2): squared Euclidean loss over total sum of squares, same space.

    SSE = sum_i ||z_i - z'_i||^2 and SST = sum_i ||z_i - mean(z)||^2.
    """
    sse = float(np.sum((z - z_masked) ** 2))
    sst = float(np.sum((z - z.mean(axis=0)) ** 2))
    return sse / sst
