"""Disclosure-risk measures of the EM4ADOM model (NOTES §2, "Disclosure risk").

``DLD`` (distance-based record linkage): for each masked record, the original
records at the smallest distance form the set DS1 and those at the second
smallest distinct distance form DS2; the masked record is linked when its own
original is in DS1 or DS2 (the paper's Definition 4: ties form the set).
Equivalently, with ``a`` the number of originals strictly closer than its own
original, it is linked when ``a <= 1`` or when all ``a`` share one distance.

``DLD_expected`` shares ties instead: an intruder who keeps exactly two
candidates, breaking ties at random, keeps the own original with probability
clip(2 - a, 0, t) / t, with ``t`` the originals at the own original's distance
(itself included). It never exceeds DLD.

Distances: Euclidean on the standardized numeric attributes (scaled by the
original's mean and population S_j); with categorical attributes, the mixed
distance of :mod:`anonlab.microaggregation.mixed`. Two distances closer than
a relative 1e-9 count as equal.

Numeric-only data use a k-d tree (SciPy ``cKDTree``): the two nearest
originals of each masked record, and ball counts only where ties need them,
so no n x n matrix is built. Mixed data
are compared in blocks of rows (a block x n matrix of about 2 million
entries at a time).

``ID`` (rank-based interval disclosure): for attribute j, rank the masked
values (equal values take consecutive ranks in order of appearance); the
interval of record i runs from the value ``w`` ranks below to the value ``w``
ranks above its own rank, w = int(p/100 * n / 2), clipped to the table. An
original record is disclosed when every attribute's original value lies in
its interval; ID = disclosed / n. The default reports the mean over
p = 1..10.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from anonlab.microaggregation.mixed import CategoricalColumn, category_distance

REL_TOL = 1e-9
ABS_TOL = 1e-12
BLOCK_CELLS = 1 << 21  # masked x original distances held at a time (16 MiB)


@dataclass(frozen=True)
class Linkage:
    """Per-record linkage outcome: linked (set rule) and expected credit (tie-shared)."""

    linked: np.ndarray  # (n,) bool
    expected: np.ndarray  # (n,) float in [0, 1]

    @property
    def dld(self) -> float:
        """Share of linked records."""
        return float(np.mean(self.linked))

    @property
    def dld_expected(self) -> float:
        """Tie-shared expected share of linked records."""
        return float(np.mean(self.expected))


def _bounds(d_own: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    slack = REL_TOL * d_own + ABS_TOL
    return d_own - slack, d_own + slack


def _credit(a: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.asarray(np.clip(2 - a, 0, t) / np.maximum(t, 1))


def linkage_numeric(z: np.ndarray, z_masked: np.ndarray, workers: int = 1) -> Linkage:
    """Linkage of masked to original records by Euclidean distance, via a k-d tree.

    One query for the two nearest originals settles most records: with
    ``first <= second`` their distances and [lo, hi] the own original's
    distance up to rounding, ``second > hi`` means the own original is the
    only one that close (a = 0, t = 1); ``second < lo`` means a >= 2 (credit
    0; linked only if the closer originals share one distance, checked by
    ball counts); otherwise the second nearest ties with the own original and
    a ball count gives t. Ball counts run only for those rows.
    """
    from scipy.spatial import cKDTree

    n = z.shape[0]
    tree = cKDTree(z)
    d_own = np.sqrt(np.sum((z - z_masked) ** 2, axis=1))
    lo, hi = _bounds(d_own)
    linked = np.ones(n, dtype=bool)
    expected = np.ones(n)
    if n < 2:
        return Linkage(linked, expected)
    near, _ = tree.query(z_masked, k=2, workers=workers)
    first, second = near[:, 0], near[:, 1]
    closer2 = second < lo  # a >= 2: two originals strictly closer than the own one
    expected[closer2] = 0.0
    rows = np.flatnonzero(closer2)
    if rows.size:
        same = second[rows] <= first[rows] + REL_TOL * first[rows] + ABS_TOL
        linked[rows[~same]] = False
        check = rows[same]
        if check.size:
            below = np.asarray(tree.query_ball_point(
                z_masked[check], lo[check], return_length=True, workers=workers))
            top = first[check] + REL_TOL * first[check] + ABS_TOL
            at_first = np.asarray(tree.query_ball_point(
                z_masked[check], top, return_length=True, workers=workers))
            linked[check] = at_first >= below
    tied = np.flatnonzero(~closer2 & (second <= hi))
    if tied.size:
        a = (first[tied] < lo[tied]).astype(np.int64)
        upto = np.asarray(tree.query_ball_point(
            z_masked[tied], hi[tied], return_length=True, workers=workers), dtype=np.int64)
        expected[tied] = _credit(a, upto - a)
    return Linkage(linked, expected)


def mixed_distances(
    z: np.ndarray,
    cats: Sequence[CategoricalColumn],
    z_rows: np.ndarray,
    codes_rows: np.ndarray,
) -> np.ndarray:
    """Squared mixed distances from a block of (masked) records to every original record."""
    zz = np.einsum("ij,ij->i", z, z)
    qq = np.einsum("ij,ij->i", z_rows, z_rows)
    d = qq[:, None] + zz[None, :] - 2.0 * (z_rows @ z.T)
    np.maximum(d, 0.0, out=d)
    for j, col in enumerate(cats):
        part = category_distance(col, col.codes[None, :], codes_rows[:, j : j + 1])
        d += part * part
    return np.asarray(d)


def linkage_mixed(
    z: np.ndarray,
    cats: Sequence[CategoricalColumn],
    z_masked: np.ndarray,
    cats_masked: Sequence[CategoricalColumn],
    block: int | None = None,
) -> Linkage:
    """Linkage with the mixed distance, a block of masked rows against all originals.

    ``block`` rows at a time (default: as many as keep the block x n matrix
    at ``BLOCK_CELLS`` entries).
    """
    n = z.shape[0] if z.size else cats[0].codes.size
    if block is None:
        block = max(8, BLOCK_CELLS // max(n, 1))
    z = z.reshape(n, -1)
    z_masked = z_masked.reshape(n, -1)
    codes_m = (np.stack([c.codes for c in cats_masked], axis=1) if cats_masked
               else np.zeros((n, 0), dtype=np.int64))
    linked = np.zeros(n, dtype=bool)
    expected = np.zeros(n)
    for start in range(0, n, block):
        stop = min(n, start + block)
        d = np.sqrt(mixed_distances(z, cats, z_masked[start:stop], codes_m[start:stop]))
        rows = np.arange(stop - start)
        d_own = d[rows, np.arange(start, stop)]
        lo, hi = _bounds(d_own)
        less = d < lo[:, None]
        a = less.sum(axis=1)
        t = (d <= hi[:, None]).sum(axis=1) - a
        low = np.where(less, d, np.inf).min(axis=1)
        high = np.where(less, d, -np.inf).max(axis=1)
        one_value = high <= low + REL_TOL * low + ABS_TOL
        linked[start:stop] = (a <= 1) | one_value
        expected[start:stop] = _credit(a, t)
    return Linkage(linked, expected)


def interval_disclosure(x: np.ndarray, x_masked: np.ndarray, p: float) -> float:
    """Rank-based interval disclosure ID for one interval size p (in percent)."""
    n = x.shape[0]
    w = int(p / 100.0 * n / 2)
    inside = np.ones(n, dtype=bool)
    positions = np.arange(n)
    for j in range(x.shape[1]):
        order = np.argsort(x_masked[:, j], kind="stable")
        ranked = x_masked[order, j]
        rank = np.empty(n, dtype=np.int64)
        rank[order] = positions
        lo = ranked[np.maximum(rank - w, 0)]
        hi = ranked[np.minimum(rank + w, n - 1)]
        inside &= (x[:, j] >= lo) & (x[:, j] <= hi)
    return float(np.mean(inside))


def interval_disclosure_mean(
    x: np.ndarray, x_masked: np.ndarray, p_values: Sequence[float]
) -> tuple[float, dict[str, float]]:
    """Mean ID over the interval sizes ``p_values`` and the ID of each."""
    each = {f"{p:g}": interval_disclosure(x, x_masked, p) for p in p_values}
    return float(np.mean(list(each.values()))), each
