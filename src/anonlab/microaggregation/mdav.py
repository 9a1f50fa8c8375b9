"""Fixed-size MDAV microaggregation (Domingo-Ferrer and Mateo-Sanz 2002;
Domingo-Ferrer and Torra 2005), vectorized within each round.

The algorithm (docs/formulas.md §2, "Microaggregation"), on records ``R`` of a metric space:

1. while at least 3k records remain: take the centroid ``c`` of the remaining
   records, the record ``r`` farthest from ``c``, and the record ``s`` farthest
   from ``r``; form a group of ``r`` and its k-1 nearest remaining records,
   remove it; form a group of ``s`` and its k-1 nearest remaining records,
   remove it;
2. if 2k..3k-1 records remain: ``r`` farthest from their centroid, a group of
   ``r`` and its k-1 nearest records, and the rest (k..2k-1) form the last group;
3. otherwise the k..2k-1 remaining records form the last group.

Every group has k records except one of k..2k-1 (when n >= k).

Distances are plain double precision: the squared Euclidean distance on the
standardized attributes, d(x, y) = sum_j (x_j - y_j)^2 summed in attribute
order (for mixed records see :mod:`anonlab.microaggregation.mixed`). Only
exactly equal distances tie, and then the record with the lowest row number
wins, both for "farthest" (as sdcMicro's strict ``>`` scan) and for
"nearest"; the seed record ``r`` (or ``s``) always belongs to its own group
even when duplicates of it exist; if ``s`` fell into ``r``'s group (only
possible when all remaining records are equidistant from ``r``) it is chosen
again as the remaining record farthest from ``r``.

Speed: each round costs a few matrix-vector products over the remaining
records, O(m p); there is no Python loop over records. The products give
d(x, y) - ||y||^2 = ||x||^2 - 2 x.y, whose rounding error is at most
``err`` = 8 (p + 4) u (max ||x||^2 + ||y||^2), u = 2^-53 (a generous form of
the dot-product bound |fl(x.y) - x.y| <= p u |x| |y|, Higham 2002, §3.1);
a query y is a record or a centroid (a mean of records), so ||y||^2 <=
max ||x||^2 and one ``err`` serves every query. A selection is therefore
settled by the products alone when its winner leads by more than 2 err;
otherwise the few records within 2 err of the decision are compared by their
exact sums, so the products never decide a tie.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from anonlab.parameters import check_k
from anonlab.progress import ProgressFn, report_to
from anonlab.threads import blas_threads

UNIT_ROUNDOFF = 2.0**-53
PROGRESS_CALLS = 100  # at most about this many progress reports per run
STEP = "MDAV: records grouped"


def product_error(p: int, max_sq: float, query_sq: float) -> float:
    """Bound on |(||x||^2 - 2 x.y) - (d(x, y) - ||y||^2)| for BLAS products in p attributes."""
    return 8.0 * (p + 4) * UNIT_ROUNDOFF * (max_sq + query_sq)


def squared_distances(cols: NDArray[Any], y: NDArray[Any]) -> NDArray[Any]:
    """d(x, y) = sum_j (x_j - y_j)^2 for each column x of ``cols`` (p, c), summed in j order.

    ``cumsum`` adds the attributes one after the other whatever the memory
    layout, so equal records always get bitwise equal distances.
    """
    if cols.shape[0] == 0:
        return np.zeros(cols.shape[1])
    diff = cols - y[:, None]
    return np.asarray(np.cumsum(diff * diff, axis=0)[-1])


class Distances(NamedTuple):
    """Distances from one point to every working row, as MDAV's selections use them.

    ``values`` equal the exact distances up to one common shift and an error
    of at most ``err`` (0: they are the exact distances); grouped rows hold
    -inf (for "farthest") or +inf (for "nearest"). ``exact(rows)`` gives the
    exact distances of some working rows. (A named tuple: one is made per
    query, thousands of times a second.)
    """

    values: NDArray[Any]
    err: float
    exact: Callable[[NDArray[Any]], NDArray[Any]]


class MetricSpace(Protocol):
    """Records MDAV can group: distances from a centroid or a record to all live rows."""

    alive: NDArray[Any]  # (m,) bool: not yet grouped
    ids: NDArray[Any]  # (m,) original row number of each working row

    def far_from_centroid(self) -> Distances:
        """Distances of each row to the centroid of the live rows; -inf for grouped rows."""

    def from_row(self, i: int) -> tuple[Distances, Distances]:
        """Distances to working row ``i``: (grouped rows -inf, grouped rows +inf)."""

    def near_row(self, i: int) -> Distances:
        """Distances to working row ``i`` with grouped rows at +inf."""

    def remove(self, rows: NDArray[Any]) -> None:
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

    def __init__(self, z: NDArray[Any]) -> None:
        self.zt = np.ascontiguousarray(np.asarray(z, dtype=np.float64).T)
        p, m = self.zt.shape
        self.ids = np.arange(m)
        self.alive = np.ones(m, dtype=bool)
        sq = np.einsum("ij,ij->j", self.zt, self.zt)
        self.sq_near = sq.copy()
        self.sq_far = sq
        self.total = self.zt.sum(axis=1)
        self.count = m
        max_sq = float(sq.max()) if m else 0.0
        # Every query is a record or a centroid (a mean of records), so ||y||^2 <= max_sq.
        self.err = product_error(p, max_sq, max_sq)

    def _exact(self, y: NDArray[Any]) -> Callable[[NDArray[Any]], NDArray[Any]]:
        zt = self.zt  # the exact sums must index the arrays of this round
        return lambda rows: squared_distances(zt[:, rows], y)

    def far_from_centroid(self) -> Distances:
        centroid = self.total / self.count
        g = (centroid * -2.0) @ self.zt
        g += self.sq_far
        return Distances(np.asarray(g), self.err, self._exact(centroid))

    def from_row(self, i: int) -> tuple[Distances, Distances]:
        y = self.zt[:, i].copy()
        g = (y * -2.0) @ self.zt
        far = g + self.sq_far
        g += self.sq_near
        exact = self._exact(y)
        return Distances(far, self.err, exact), Distances(g, self.err, exact)

    def near_row(self, i: int) -> Distances:
        """Distances to working row ``i`` with grouped rows at +inf."""
        y = self.zt[:, i].copy()
        g = (y * -2.0) @ self.zt
        g += self.sq_near
        return Distances(g, self.err, self._exact(y))

    def remove(self, rows: NDArray[Any]) -> None:
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


def _kth_bound(d: NDArray[Any], k: int) -> float:
    """A value with at least k entries of ``d`` at or below it (from a strided sample)."""
    sample = d[::SAMPLE_STRIDE]
    if sample.size < 4 * k:
        return float("inf")
    return float(np.partition(sample, k - 1)[k - 1])


def k_nearest(dist: Distances, k: int, seed: int) -> NDArray[Any]:
    """Working rows of ``seed`` and its k-1 nearest rows (exact ties: lowest row first).

    At least k rows must be live (finite). ``dist.values`` is modified (the
    seed is set to -inf so it always joins its own group). Candidates are
    first cut to the rows at or below the k-th smallest of a strided sample
    (that bound has at least k rows below it), so the selection runs on a
    few hundred values instead of all m. Rows within 2 err of the k-th
    smallest value are then ranked by their exact distances.
    """
    d = dist.values
    d[seed] = -np.inf
    margin = 2.0 * dist.err
    bound = _kth_bound(d, k)
    cand = np.flatnonzero(d <= bound + margin) if np.isfinite(bound) else np.arange(d.size)
    dc = d[cand]
    threshold = dc[np.argpartition(dc, k - 1)[:k]].max()
    near = cand[dc <= threshold + margin]
    if near.size == k:  # every other row is farther, whatever the rounding
        return np.asarray(near)
    others = near[near != seed]
    exact = dist.exact(others)
    order = np.lexsort((others, exact))  # by distance, then by row
    return np.concatenate([[seed], others[order[: k - 1]]])


def first_argmax(dist: Distances) -> int:
    """The row with the largest exact distance; the lowest row among exact ties."""
    values = dist.values
    best = int(np.argmax(values))
    if dist.err == 0.0:
        return best
    close = values >= values[best] - 2.0 * dist.err
    if np.count_nonzero(close) == 1:  # the only one within the rounding bound
        return best
    cand = np.flatnonzero(close)
    return int(cand[np.argmax(dist.exact(cand))])


class Tally:
    """Records grouped so far, reported to ``progress`` about ``PROGRESS_CALLS`` times."""

    def __init__(self, n: int, progress: ProgressFn | None, step: str = STEP) -> None:
        self.n = n
        self.done = 0
        self.every = max(1, n // PROGRESS_CALLS)
        self.next = 0
        self.report = report_to(progress)
        self.step = step

    def add(self, count: int) -> None:
        """Count ``count`` more grouped records; report when a step is crossed or all are done."""
        self.done += count
        if self.done >= self.next or self.done >= self.n:
            self.report(self.step, self.done, self.n)
            self.next = self.done + self.every


def mdav_partition(
    space: MetricSpace,
    n: int,
    k: int,
    compact_below: float = 0.7,
    progress: ProgressFn | None = None,
) -> NDArray[Any]:
    """Group label (0, 1, ... in order of formation) of each of the ``n`` records."""
    check_k(k, n)
    labels = np.full(n, -1, dtype=np.int64)
    remaining = n
    group = 0
    since_compact = space.alive.size
    tally = Tally(n, progress)

    def take(rows: NDArray[Any]) -> None:
        nonlocal remaining, group
        labels[space.ids[rows]] = group
        group += 1
        space.remove(rows)
        remaining -= rows.size
        tally.add(rows.size)

    def maybe_compact() -> None:
        nonlocal since_compact
        if remaining < compact_below * since_compact:
            space.compact()
            since_compact = space.alive.size

    while remaining >= 3 * k:
        r = first_argmax(space.far_from_centroid())
        far_r, near_r = space.from_row(r)
        s = first_argmax(far_r)
        take(k_nearest(near_r, k, r))
        if not space.alive[s]:
            far_r.values[~space.alive] = -np.inf
            s = first_argmax(far_r)
        take(k_nearest(space.near_row(s), k, s))
        maybe_compact()
    if remaining >= 2 * k:
        r = first_argmax(space.far_from_centroid())
        take(k_nearest(space.near_row(r), k, r))
    if remaining > 0:
        take(np.flatnonzero(space.alive))
    return labels


def mdav_labels(
    z: NDArray[Any], k: int, *, workers: int = 1, progress: ProgressFn | None = None
) -> NDArray[Any]:
    """MDAV group labels of the rows of a standardized numeric matrix ``z`` (n, p).

    The products run on ``workers`` BLAS threads (default 1; -1: every CPU).
    """
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2:
        raise ValueError("z must be a 2-D array")
    with blas_threads(workers):
        return mdav_partition(EuclideanSpace(z), z.shape[0], k, progress=progress)


def group_means(x: NDArray[Any], labels: NDArray[Any]) -> NDArray[Any]:
    """Each row replaced by the mean of its group (``x`` in original units)."""
    x = np.asarray(x, dtype=np.float64)
    groups = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=groups).astype(np.float64)
    sums = np.zeros((groups, x.shape[1]))
    np.add.at(sums, labels, x)
    return np.asarray((sums / sizes[:, None])[labels])


def group_sizes(labels: NDArray[Any]) -> NDArray[Any]:
    """Number of records in each group."""
    return np.bincount(labels)


def sse_sst(z: NDArray[Any], z_masked: NDArray[Any]) -> float:
    """SSE/SST (docs/formulas.md §2): squared Euclidean loss over total sum of squares, same space.

    SSE = sum_i ||z_i - z'_i||^2 and SST = sum_i ||z_i - mean(z)||^2.
    """
    sse = float(np.sum((z - z_masked) ** 2))
    sst = float(np.sum((z - z.mean(axis=0)) ** 2))
    return sse / sst
