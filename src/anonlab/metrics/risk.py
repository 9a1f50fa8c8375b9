"""Disclosure-risk measures of the EM4ADOM model (docs/formulas.md §2, "Disclosure risk").

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
distance of :mod:`anonlab.encoding`. Two distances closer than
a relative 1e-9 count as equal.

Numeric-only data choose the nearest-neighbour method by dimension. Up to
``KD_MAX_DIM`` attributes a k-d tree (SciPy ``cKDTree``): the two nearest
originals of each masked record, and ball counts only where ties need them,
so no n x n matrix is built. Above it a k-d tree degenerates (it visits most
leaves in high dimension), so blocked products are used instead: for a tile
of masked x original records, ||a||^2 + ||b||^2 - 2 a.b by one matrix
product (float32 when the values allow it, else float64) picks every
original that can lie within the own original's distance, with a rigorous
bound on the product's rounding; those few candidates' distances are then
recomputed exactly (sum of squared differences, as for the own original), so
the result is the k-d tree's. Memory stays bounded by the tile. Mixed data
are compared in blocks of rows (a block x n matrix of about 2 million
entries at a time).

``ID`` (rank-based interval disclosure): for attribute j, rank the masked
values; equal values share the ranks they occupy, first..last (the paper
gives them consecutive ranks in order of appearance, which made ID depend on
the row order of equal values). The interval of a masked value runs from the
value ``w`` ranks below its first rank to the value ``w`` ranks above its
last rank, w = int(p/100 * n / 2), clipped to the table; without ties this
is the paper's interval. An original record is disclosed when every
attribute's original value lies in its interval; ID = disclosed / n. The
default reports the mean over p = 1..10.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.encoding import CategoricalColumn, category_distance
from anonlab.progress import ProgressFn, report_to

REL_TOL = 1e-9
ABS_TOL = 1e-12
BLOCK_CELLS = 1 << 21  # masked x original distances held at a time (16 MiB)
KD_MAX_DIM = 10  # numeric attributes up to which linkage uses a k-d tree
TILE_ROWS = 1024  # blocked linkage: masked records per tile
TILE_COLS = 4096  # blocked linkage: originals per tile (16 MiB in float32)
GATHER_CELLS = 1 << 22  # values gathered at once for the exact distances of candidates
FLOAT32_SAFE = 1e15  # |values| below this keep float32 products finite and bounded
ABS_SLACK = 1e-30  # covers float32 underflow of tiny values in the candidate test
LINK_STEP = "evaluate: record linkage"
ID_STEP = "evaluate: interval disclosure"


@dataclass(frozen=True)
class Linkage:
    """Per-record linkage outcome: linked (set rule) and expected credit (tie-shared)."""

    linked: NDArray[Any]  # (n,) bool
    expected: NDArray[Any]  # (n,) float in [0, 1]

    @property
    def dld(self) -> float:
        """Share of linked records."""
        return float(np.mean(self.linked))

    @property
    def dld_expected(self) -> float:
        """Tie-shared expected share of linked records."""
        return float(np.mean(self.expected))


def _bounds(d_own: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    slack = REL_TOL * d_own + ABS_TOL
    return d_own - slack, d_own + slack


def _credit(a: NDArray[Any], t: NDArray[Any]) -> NDArray[Any]:
    return np.asarray(np.clip(2 - a, 0, t) / np.maximum(t, 1))


def linkage_numeric(
    z: NDArray[Any],
    z_masked: NDArray[Any],
    workers: int = 1,
    progress: ProgressFn | None = None,
    method: str | None = None,
) -> Linkage:
    """Linkage of masked to original records by Euclidean distance.

    ``method`` is ``"kdtree"`` or ``"blocked"``; by default the k-d tree up to
    ``KD_MAX_DIM`` attributes and the blocked products above. Both give the
    same result (see the module's docstring).
    """
    n = z.shape[0]
    d_own = np.sqrt(np.sum((z - z_masked) ** 2, axis=1))
    if n < 2:
        return Linkage(np.ones(n, dtype=bool), np.ones(n))
    chosen = method or ("kdtree" if z.shape[1] <= KD_MAX_DIM else "blocked")
    if chosen == "kdtree":
        return _linkage_kdtree(z, z_masked, d_own, workers)
    if chosen == "blocked":
        return _linkage_blocked(z, z_masked, d_own, report_to(progress))
    raise ValueError(f"unknown linkage method {method!r}: choose kdtree or blocked")


def _linkage_kdtree(
    z: NDArray[Any], z_masked: NDArray[Any], d_own: NDArray[Any], workers: int
) -> Linkage:
    """Linkage by a k-d tree.

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
    lo, hi = _bounds(d_own)
    linked = np.ones(n, dtype=bool)
    expected = np.ones(n)
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
            below = np.asarray(
                tree.query_ball_point(
                    z_masked[check], lo[check], return_length=True, workers=workers
                )
            )
            top = first[check] + REL_TOL * first[check] + ABS_TOL
            at_first = np.asarray(
                tree.query_ball_point(z_masked[check], top, return_length=True, workers=workers)
            )
            linked[check] = at_first >= below
    tied = np.flatnonzero(~closer2 & (second <= hi))
    if tied.size:
        a = (first[tied] < lo[tied]).astype(np.int64)
        upto = np.asarray(
            tree.query_ball_point(z_masked[tied], hi[tied], return_length=True, workers=workers),
            dtype=np.int64,
        )
        expected[tied] = _credit(a, upto - a)
    return Linkage(linked, expected)


@dataclass
class _Near:
    """What linkage needs of the originals within ``hi`` of each masked record.

    ``first``/``second``: the two smallest distances (inf when missing);
    ``count``: how many lie within hi; ``top_below``: the largest distance
    that is at most lo (-inf when none).
    """

    first: NDArray[Any]
    second: NDArray[Any]
    count: NDArray[Any]
    top_below: NDArray[Any]

    @classmethod
    def empty(cls, n: int) -> _Near:
        """No original seen yet."""
        return cls(
            np.full(n, np.inf), np.full(n, np.inf), np.zeros(n, dtype=np.int64), np.full(n, -np.inf)
        )

    def add(self, rows: NDArray[Any], dist: NDArray[Any], lo: NDArray[Any]) -> None:
        """Merge the distances ``dist`` of some originals to masked records ``rows``."""
        if rows.size == 0:
            return
        self.count += np.bincount(rows, minlength=self.count.size)
        low = dist <= lo[rows]
        np.maximum.at(self.top_below, rows[low], dist[low])
        order = np.lexsort((dist, rows))
        rows, dist = rows[order], dist[order]
        start = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        owner = rows[start]
        m1 = dist[start]
        has2 = np.r_[start[1:], rows.size] - start >= 2
        m2 = np.full(start.size, np.inf)
        m2[has2] = dist[start[has2] + 1]
        f, s = self.first[owner], self.second[owner]
        self.first[owner] = np.minimum(f, m1)
        self.second[owner] = np.minimum(np.maximum(f, m1), np.minimum(s, m2))


def _linkage_from_near(near: _Near, lo: NDArray[Any], hi: NDArray[Any]) -> Linkage:
    """The k-d tree path's decisions, from the originals within ``hi`` of each record.

    Linked when a <= 1 or the closer originals share one distance: with
    ``second < lo`` that is "no original lies in (first + tol, lo]", i.e. the
    largest distance up to lo is at most first + tol (the ball counts at lo
    and at first + tol agree).
    """
    n = lo.size
    linked = np.ones(n, dtype=bool)
    expected = np.ones(n)
    first, second = near.first, near.second
    closer2 = second < lo
    expected[closer2] = 0.0
    top = first + REL_TOL * first + ABS_TOL
    same = second <= top
    linked[closer2 & ~same] = False
    check = closer2 & same
    linked[check] = near.top_below[check] <= top[check]
    tied = np.flatnonzero(~closer2 & (second <= hi))
    a = (first[tied] < lo[tied]).astype(np.int64)
    expected[tied] = _credit(a, near.count[tied] - a)
    return Linkage(linked, expected)


def _product_dtype(z: NDArray[Any], z_masked: NDArray[Any]) -> type[np.floating[Any]]:
    """float32 when every |value| stays far from float32's range, else float64."""
    big = max(float(np.max(np.abs(z), initial=0.0)), float(np.max(np.abs(z_masked), initial=0.0)))
    return np.float32 if big < FLOAT32_SAFE else np.float64


def _linkage_blocked(
    z: NDArray[Any], z_masked: NDArray[Any], d_own: NDArray[Any], progress: ProgressFn
) -> Linkage:
    """Linkage by blocked matrix products, exact (see the module's docstring).

    With a the masked and b the original record, D = ||a||^2 + ||b||^2 - 2 a.b.
    The product a.b in precision u over p terms errs by at most
    (p + 5) u (||a||^2 + ||b||^2) (Higham 2002, §3.1, with the rounding of the
    inputs and of the appended column); ``c`` = 4 (p + 8) u doubles that. An
    original is a candidate when a.b - (1 - c) ||b||^2 / 2 >= ((1 - c) ||a||^2
    - hi^2) / 2, which every original with D <= hi^2 passes. The left side is
    one product of [a, 1] with [b, -(1 - c) ||b||^2 / 2].
    """
    n, p = z.shape
    dtype = _product_dtype(z, z_masked)
    c = 4.0 * (p + 8) * float(np.finfo(dtype).eps) / 2.0
    lo, hi = _bounds(d_own)
    sq = np.einsum("ij,ij->i", z, z)
    sqm = np.einsum("ij,ij->i", z_masked, z_masked)
    right = np.empty((n, p + 1), dtype=dtype)
    right[:, :p] = z
    right[:, p] = -(1.0 - c) * sq / 2.0
    left = np.empty((n, p + 1), dtype=dtype)
    left[:, :p] = z_masked
    left[:, p] = 1.0
    limit = ((1.0 - c) * sqm - hi * hi) / 2.0 - ABS_SLACK * (p + 1)
    limit_t = limit.astype(dtype)
    limit_t = np.where(limit_t > limit, np.nextafter(limit_t, dtype(-np.inf)), limit_t)
    near = _Near.empty(n)
    tile = np.empty(TILE_ROWS * TILE_COLS, dtype=dtype)  # reused: no page faults per tile
    hits = np.empty(TILE_ROWS * TILE_COLS, dtype=bool)
    for start in range(0, n, TILE_ROWS):
        stop = min(n, start + TILE_ROWS)
        for col in range(0, n, TILE_COLS):
            end = min(n, col + TILE_COLS)
            shape = (stop - start, end - col)
            out = tile[: shape[0] * shape[1]].reshape(shape)  # contiguous, as BLAS needs
            found = hits[: shape[0] * shape[1]].reshape(shape)
            np.matmul(left[start:stop], right[col:end].T, out=out)
            np.greater_equal(out, limit_t[start:stop, None], out=found)
            rows, cols = np.divmod(np.flatnonzero(found), end - col)
            _add_exact(near, z, z_masked, rows + start, cols + col, lo, hi)
        progress(LINK_STEP, stop, n)
    return _linkage_from_near(near, lo, hi)


def _add_exact(
    near: _Near,
    z: NDArray[Any],
    z_masked: NDArray[Any],
    rows: NDArray[Any],
    cols: NDArray[Any],
    lo: NDArray[Any],
    hi: NDArray[Any],
) -> None:
    """Exact distances of candidate pairs (as ``d_own`` is computed); keep those within hi."""
    chunk = max(1, GATHER_CELLS // max(z.shape[1], 1))
    for at in range(0, rows.size, chunk):
        r, c = rows[at : at + chunk], cols[at : at + chunk]
        dist = np.sqrt(np.sum((z[c] - z_masked[r]) ** 2, axis=1))
        keep = dist <= hi[r]
        near.add(r[keep], dist[keep], lo)


def mixed_distances(
    z: NDArray[Any],
    cats: Sequence[CategoricalColumn],
    z_rows: NDArray[Any],
    codes_rows: NDArray[Any],
) -> NDArray[Any]:
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
    z: NDArray[Any],
    cats: Sequence[CategoricalColumn],
    z_masked: NDArray[Any],
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
    codes_m = (
        np.stack([c.codes for c in cats_masked], axis=1)
        if cats_masked
        else np.zeros((n, 0), dtype=np.int64)
    )
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


def tie_ranks(values: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """``(ranked, first, last)``: the sorted values and each value's first and last rank.

    Equal values share the ranks they occupy: ``ranked[first[i]]`` and
    ``ranked[last[i]]`` both equal ``values[i]``, and no other rank holds it.
    """
    n = values.size
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    new = np.r_[True, ranked[1:] != ranked[:-1]]
    run = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:] - 1, n - 1]
    first = np.empty(n, dtype=np.int64)
    last = np.empty(n, dtype=np.int64)
    first[order] = starts[run]
    last[order] = ends[run]
    return ranked, first, last


def interval_disclosures(
    x: NDArray[Any],
    x_masked: NDArray[Any],
    p_values: Sequence[float],
    progress: ProgressFn | None = None,
) -> list[float]:
    """Rank-based interval disclosure ID for each interval size p (in percent).

    Equal masked values share their ranks first..last, so the result does not
    depend on the row order of equal values (see the module's docstring).
    Each attribute is ranked once for all p; ``progress`` hears of the
    attributes done.
    """
    n, columns = x.shape
    report = report_to(progress)
    widths = [int(p / 100.0 * n / 2) for p in p_values]
    inside = np.ones((len(widths), n), dtype=bool)
    for j in range(columns):
        ranked, first, last = tie_ranks(x_masked[:, j])
        for row, w in zip(inside, widths, strict=True):
            lo = ranked[np.maximum(first - w, 0)]
            hi = ranked[np.minimum(last + w, n - 1)]
            row &= (x[:, j] >= lo) & (x[:, j] <= hi)
        report(ID_STEP, j + 1, columns)
    return [float(np.mean(row)) for row in inside]


def interval_disclosure(x: NDArray[Any], x_masked: NDArray[Any], p: float) -> float:
    """Rank-based interval disclosure ID for one interval size p (in percent)."""
    return interval_disclosures(x, x_masked, [p])[0]
