"""MDAV for tables too large for O(n^2) MDAV: k-d blocks with a halo, MDAV in each.

1. The standardized records are split recursively at the median of the
   attribute with the largest range (a k-d tree; each left part a multiple of
   k records) until a block has at most ``block_size`` records.
2. The blocks are microaggregated one after the other, in the tree's order.
   Inside a block, MDAV runs as usual on the block's own records (the centroid,
   the farthest records ``r`` and ``s`` and the stopping rules count only
   them), but a group may also take not yet grouped records of *later* blocks
   that lie in the block's bounding box widened by a margin (the halo). So a
   record on a cut face still finds its neighbours across it, which a plain
   split would deny it. The margin is ``HALO_FACTOR`` times the median
   distance of a fixed sample of the block's records to their k-th nearest
   record in the block.
3. Undersized blocks are fixed: a block left with fewer than k own records
   (its neighbours took the others into their groups) passes them on to the
   next block; fewer than k records left after the last block join the
   nearest groups (by centroid) that have fewer than 2k-1 records.

Every group has k..2k-1 records. Cost: O(n log(n/B)) for the split plus
O(n (B + H) p / k) for the blocks (H the halo size), instead of O(n^2 p / k).
Its SSE/SST against exact MDAV is measured in ``benchmarks/mdav.py`` and
reported in docs/em4adom.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.microaggregation.columns import check_k
from anonlab.microaggregation.mdav import EuclideanSpace, Tally, first_argmax, k_nearest
from anonlab.progress import ProgressFn
from anonlab.threads import blas_threads

STEP = "MDAV blocks: records grouped"

DEFAULT_BLOCK_SIZE = 16384
HALO_FACTOR = 0.5
HALO_CAP = 1.0  # at most this many halo records per own record
MARGIN_SAMPLE = 32


def kd_blocks(z: NDArray[Any], k: int, block_size: int) -> list[NDArray[Any]]:
    """Row numbers of each block of a k-d split of ``z``, in the tree's (depth-first) order.

    A block is split when it has more than ``block_size`` rows (and at least
    2k). The split attribute is the one with the largest range in the block;
    the left part takes the ``cut`` smallest rows by that attribute, with
    ``cut`` the multiple of k nearest to half the block (at least k on each
    side; ties in the attribute are broken by row number).
    """
    if block_size < 2 * k:
        raise ValueError("block_size must be at least 2k")
    done: list[NDArray[Any]] = []
    todo = [np.arange(z.shape[0])]
    while todo:
        rows = todo.pop()
        m = rows.size
        if m <= block_size or m < 2 * k:
            done.append(np.sort(rows))
            continue
        part = z[rows]
        axis = int(np.argmax(part.max(axis=0) - part.min(axis=0)))
        cut = min(max(k, round(m / 2 / k) * k), m - k)
        order = np.argsort(part[:, axis], kind="stable")
        todo.append(rows[order[cut:]])
        todo.append(rows[order[:cut]])
    return done


class HaloSpace(EuclideanSpace):
    """A block's own records followed by its halo: only own records seed groups."""

    def __init__(self, z: NDArray[Any], n_own: int) -> None:
        super().__init__(z)
        self.own = np.zeros(z.shape[0], dtype=bool)
        self.own[:n_own] = True
        self.sq_far[n_own:] = -np.inf  # never r, s or part of the centroid
        self.total = self.zt[:, :n_own].sum(axis=1)
        self.count = n_own

    def remove(self, rows: NDArray[Any]) -> None:
        own = rows[self.own[rows]]
        self.alive[rows] = False
        self.sq_near[rows] = np.inf
        self.sq_far[rows] = -np.inf
        self.count -= own.size
        self.total = self.total - self.zt[:, own].sum(axis=1)

    def compact(self) -> None:
        keep = self.alive
        self.own = self.own[keep]
        super().compact()
        self.total = self.zt[:, self.own].sum(axis=1)


def group_block(
    space: HaloSpace, k: int, emit: Callable[[NDArray[Any]], None]
) -> NDArray[Any]:
    """MDAV rounds on a block's own records; returns the ids of fewer than k left over."""
    since = space.alive.size

    def take(rows: NDArray[Any]) -> None:
        emit(space.ids[rows])
        space.remove(rows)

    while space.count >= 3 * k:
        r = first_argmax(space.far_from_centroid())
        far_r, near_r = space.from_row(r)
        s = first_argmax(far_r)
        take(k_nearest(near_r, k, r))
        if not space.alive[s]:
            far_r.values[~space.alive] = -np.inf
            s = first_argmax(far_r)
        take(k_nearest(space.near_row(s), k, s))
        if np.count_nonzero(space.alive) < 0.7 * since:
            space.compact()
            since = space.alive.size
    while space.count >= 2 * k:
        r = first_argmax(space.far_from_centroid())
        take(k_nearest(space.near_row(r), k, r))
    rest = np.flatnonzero(space.alive & space.own)
    if rest.size >= k:
        take(rest)
        return np.zeros(0, dtype=np.int64)
    return np.asarray(space.ids[rest])


def _margin(z_own: NDArray[Any], k: int) -> float:
    """HALO_FACTOR x the median distance of sampled own records to their k-th nearest."""
    m = z_own.shape[0]
    if m <= 1:
        return 0.0
    pick = np.linspace(0, m - 1, min(MARGIN_SAMPLE, m)).astype(np.int64)
    sample = z_own[pick]
    d = (np.einsum("ij,ij->i", sample, sample)[:, None]
         + np.einsum("ij,ij->i", z_own, z_own)[None, :] - 2.0 * sample @ z_own.T)
    kk = min(k, m - 1)
    kth = np.partition(np.maximum(d, 0.0), kk, axis=1)[:, kk]
    return HALO_FACTOR * float(np.sqrt(np.median(kth)))


def scalable_mdav_labels(
    z: NDArray[Any],
    k: int,
    block_size: int = DEFAULT_BLOCK_SIZE,
    *,
    workers: int = 1,
    progress: ProgressFn | None = None,
) -> NDArray[Any]:
    """Group labels from MDAV over the blocks (with halos) of a k-d split of standardized ``z``.

    The products run on ``workers`` BLAS threads (default 1; -1: every CPU);
    ``progress`` hears of the records grouped.
    """
    z = np.asarray(z, dtype=np.float64)
    check_k(k, z.shape[0])
    with blas_threads(workers):
        return _block_labels(z, k, block_size, Tally(z.shape[0], progress, STEP))


def _block_labels(z: NDArray[Any], k: int, block_size: int, tally: Tally) -> NDArray[Any]:
    """The work of :func:`scalable_mdav_labels` (arguments checked)."""
    n = z.shape[0]
    blocks = kd_blocks(z, k, max(block_size, 2 * k))
    lows = np.array([z[b].min(axis=0) for b in blocks])
    highs = np.array([z[b].max(axis=0) for b in blocks])
    alive = np.ones(n, dtype=bool)
    labels = np.full(n, -1, dtype=np.int64)
    group = 0

    def emit(ids: NDArray[Any]) -> None:
        nonlocal group
        labels[ids] = group
        alive[ids] = False
        group += 1
        tally.add(ids.size)

    carry = np.zeros(0, dtype=np.int64)
    for b, rows in enumerate(blocks):
        own = np.sort(np.concatenate([carry, rows[alive[rows]]]))
        carry = np.zeros(0, dtype=np.int64)
        if own.size < k and b < len(blocks) - 1:
            carry = own
            continue
        if own.size == 0:
            continue
        z_own = z[own]
        margin = _margin(z_own, k)
        lo, hi = z_own.min(axis=0) - margin, z_own.max(axis=0) + margin
        later = [j for j in range(b + 1, len(blocks))
                 if np.all(lows[j] <= hi) and np.all(highs[j] >= lo)]
        halo = np.zeros(0, dtype=np.int64)
        if later:
            cand = np.concatenate([blocks[j] for j in later])
            cand = np.sort(cand[alive[cand]])
            zc = z[cand]
            inside = np.all((zc >= lo) & (zc <= hi), axis=1)
            halo, zh = cand[inside], zc[inside]
            cap = int(HALO_CAP * own.size)
            if halo.size > cap:  # keep the records nearest to the block's own box
                gap = np.maximum(z_own.min(axis=0) - zh, 0) + np.maximum(zh - z_own.max(axis=0), 0)
                near = np.argpartition(np.einsum("ij,ij->i", gap, gap), cap - 1)[:cap]
                halo = np.sort(halo[near])
        ids = np.concatenate([own, halo])
        space = HaloSpace(z[ids], own.size)
        space.ids = ids
        carry = group_block(space, k, emit)
    if carry.size:
        _attach(z, labels, carry, k)
        tally.add(carry.size)
    return labels


def _attach(z: NDArray[Any], labels: NDArray[Any], rows: NDArray[Any], k: int) -> None:
    """Put each of ``rows`` into the nearest group (by centroid) with fewer than 2k-1 records."""
    done = labels >= 0
    groups = int(labels[done].max()) + 1 if done.any() else 0
    if groups == 0:  # fewer than k records in all: one group
        labels[rows] = 0
        return
    sizes = np.bincount(labels[done], minlength=groups)
    sums = np.zeros((groups, z.shape[1]))
    np.add.at(sums, labels[done], z[done])
    centroids = sums / sizes[:, None]
    for i in rows:  # fewer than k rows: a loop over a handful of records
        d = np.einsum("ij,ij->i", centroids - z[i], centroids - z[i])
        d[sizes >= 2 * k - 1] = np.inf
        j = int(np.argmin(d)) if np.isfinite(d).any() else int(np.argmin(sizes))
        labels[i] = j
        sizes[j] += 1
