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
3. After its MDAV, a block repairs its faces with the earlier blocks
   (:func:`repair`): the earlier groups that took some of its records (its
   "takers") and the groups it has just made exchange records, or pass one
   on, whenever that lowers the SSE and keeps every group at k..2k-1
   records. Without it the records an earlier block left behind near a face
   are grouped among themselves, across wider gaps; this is where most of
   the block variant's loss against exact MDAV came from (see docs/em4adom.md).
4. Undersized blocks are fixed: a block left with fewer than k own records
   (its neighbours took the others into their groups) passes them on to the
   next block; fewer than k records left after the last block join the
   nearest groups (by centroid) that have fewer than 2k-1 records.

A block's work depends only on its own records, its halo and the groups
already made, in a fixed order, so the labels are a function of the input
alone. With a single block (n <= block_size) no repair runs and the labels
equal exact MDAV's. Every group has k..2k-1 records. Cost: O(n log(n/B))
for the split, O(n (B + H) p / k) for the blocks (H the halo size) and
O(n (B + H) p / k^2) for the repairs (each taker's distances to the
centroids of the block's groups), instead of O(n^2 p / k). Its SSE/SST
against exact MDAV is measured in ``benchmarks/mdav.py`` and reported in
docs/em4adom.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from anonlab.microaggregation.mdav import EuclideanSpace, Tally, first_argmax, k_nearest
from anonlab.parameters import check_k
from anonlab.progress import ProgressFn
from anonlab.threads import blas_threads

STEP = "MDAV blocks: records grouped"

DEFAULT_BLOCK_SIZE = 16384
#: records of a region when the variant runs on an engine (anonlab.microaggregation.pieces): within
#: 5 % of exact MDAV's SSE/SST up to 400,000 rows with it (benchmarks/mdav_regions.py)
DEFAULT_REGION_ROWS = 200_000
HALO_FACTOR = 1.0
HALO_CAP = 1.5  # at most this many halo records per own record
MARGIN_SAMPLE = 32
REPAIR_NEIGHBOURS = 10  # nearest groups (by centroid) tried for exchanges
REPAIR_ROUNDS = 4
MATCH_PASSES = 16  # passes choosing disjoint exchanges in a round
PAIR_CHUNK = 512  # rows of centroid distances computed at once
PAIR_STRIDE = 8  # sample stride bounding a row's m-th smallest distance
TOLERANCE = 1e-12  # relative: smaller gains are rounding, not improvements


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


def group_block(space: HaloSpace, k: int, emit: Callable[[NDArray[Any]], None]) -> NDArray[Any]:
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
    d = (
        np.einsum("ij,ij->i", sample, sample)[:, None]
        + np.einsum("ij,ij->i", z_own, z_own)[None, :]
        - 2.0 * sample @ z_own.T
    )
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


class Groups:
    """The groups made so far: each record's label and each group's members, size and sum.

    ``members`` holds a group's records in its first ``sizes[g]`` slots (at
    most 2k-1), -1 after them; ``slot`` is each record's place there.
    """

    def __init__(self, z: NDArray[Any], k: int, tally: Tally) -> None:
        n, p = z.shape
        self.z = z
        self.k = k
        self.tally = tally
        cap = n // k + 1
        self.labels = np.full(n, -1, dtype=np.int64)
        self.slot = np.full(n, -1, dtype=np.int64)
        self.members = np.full((cap, 2 * k - 1), -1, dtype=np.int64)
        self.sizes = np.zeros(cap, dtype=np.int64)
        self.sums = np.zeros((cap, p))
        self.count = 0

    def emit(self, ids: NDArray[Any]) -> None:
        """Record ``ids`` (k..2k-1 records) as a new group."""
        g = self.count
        self.labels[ids] = g
        self.slot[ids] = np.arange(ids.size)
        self.members[g, : ids.size] = ids
        self.sizes[g] = ids.size
        self.sums[g] = self.z[ids].sum(axis=0)
        self.count += 1
        self.tally.add(ids.size)

    def centroids(self, gs: NDArray[Any]) -> NDArray[Any]:
        """Centroid (mean of the members) of each group of ``gs``."""
        return np.asarray(self.sums[gs] / self.sizes[gs, None])

    def swap(self, i: NDArray[Any], j: NDArray[Any]) -> None:
        """Exchange records ``i[t]`` and ``j[t]`` between their groups (all groups distinct)."""
        gi, gj = self.labels[i], self.labels[j]
        si, sj = self.slot[i], self.slot[j]
        self.members[gi, si], self.members[gj, sj] = j, i
        self.labels[i], self.labels[j] = gj, gi
        self.slot[i], self.slot[j] = sj, si
        self._resum(np.concatenate([gi, gj]))

    def move(self, i: NDArray[Any], h: NDArray[Any]) -> None:
        """Move records ``i[t]`` into groups ``h[t]`` (all groups distinct; sizes checked)."""
        g = self.labels[i]
        last = self.sizes[g] - 1
        moved = self.members[g, last]  # the last member of g takes the slot of i
        self.members[g, self.slot[i]] = moved
        self.slot[moved] = self.slot[i]
        self.members[g, last] = -1
        self.sizes[g] -= 1
        self.members[h, self.sizes[h]] = i
        self.slot[i] = self.sizes[h]
        self.labels[i] = h
        self.sizes[h] += 1
        self._resum(np.concatenate([g, h]))

    def _resum(self, gs: NDArray[Any]) -> None:
        """Fresh coordinate sums of groups ``gs`` (no drift from running updates)."""
        mem = self.members[gs]
        self.sums[gs] = np.where(mem[:, :, None] >= 0, self.z[np.maximum(mem, 0)], 0.0).sum(axis=1)


def _neighbour_pairs(c: NDArray[Any], focus: int, m: int) -> tuple[NDArray[Any], NDArray[Any]]:
    """Pairs (a < b) of rows of ``c``: each of the first ``focus`` rows and its ``m`` nearest.

    A row is ranked by ||b||^2 - 2 a.b (its squared distances less the
    row's constant ||a||^2) in single precision, a chunk of rows at a time:
    these values only propose candidates, the gains are computed exactly in
    double precision. The m-th smallest value of a strided sample of a row
    bounds its m-th smallest from above, so only the entries at or below it
    are sorted.
    """
    s = c.shape[0]
    m = min(m, s - 1)
    rows_1 = np.hstack([c, np.ones((s, 1))]).astype(np.float32)  # [a, 1] . [-2b, ||b||^2]
    right = np.vstack([-2.0 * c.T, np.einsum("ij,ij->i", c, c)[None, :]]).astype(np.float32)
    found = []
    for r0 in range(0, focus, PAIR_CHUNK):
        r1 = min(r0 + PAIR_CHUNK, focus)
        d = rows_1[r0:r1] @ right
        d[np.arange(r1 - r0), np.arange(r0, r1)] = np.inf
        sample = d[:, ::PAIR_STRIDE]
        if np.isfinite(sample).sum(axis=1).min() >= m:
            bound = np.partition(sample, m - 1, axis=1)[:, m - 1]
            rows, cols = np.nonzero(d <= bound[:, None])
        else:  # a small set: rank every entry
            rows, cols = np.nonzero(np.isfinite(d))
        order = np.lexsort((cols, d[rows, cols], rows))
        rows, cols = rows[order], cols[order]
        rank = np.arange(rows.size) - np.searchsorted(rows, rows)
        a, b = rows[rank < m] + r0, cols[rank < m]
        found.append(np.minimum(a, b) * s + np.maximum(a, b))
    codes = np.unique(np.concatenate(found))
    return codes // s, codes % s


class Moves(NamedTuple):
    """Candidate exchanges (``j >= 0``) and moves (``j = -1``: ``i`` joins group ``b``).

    ``a``, ``b`` are positions in the repaired group list (``i`` in group
    a, ``j`` in group b); ``gain`` is the change of SSE (negative: better).
    """

    i: NDArray[Any]
    j: NDArray[Any]
    a: NDArray[Any]
    b: NDArray[Any]
    gain: NDArray[Any]


def _sq(diff: NDArray[Any]) -> NDArray[Any]:
    """Squared norms over the last axis, sum_j diff_j^2."""
    return np.asarray(np.einsum("...j,...j->...", diff, diff))


def _pair_gains(
    made: Groups, gs: NDArray[Any], pa: NDArray[Any], pb: NDArray[Any], w: int
) -> Moves:
    """Improving exchanges and moves between groups ``gs[pa[t]]`` and ``gs[pb[t]]`` (<= w records).

    For records x_i of group g (a records, centroid c_g) and x_j of group h
    (b records), the change of SSE = sum ||x - c||^2 is
      exchange: ||x_j - c_g||^2 - ||x_i - c_g||^2 + ||x_i - c_h||^2 - ||x_j - c_h||^2
                - ||x_i - x_j||^2 (1/a + 1/b),
      move of x_i to h: -a/(a-1) ||x_i - c_g||^2 + b/(b+1) ||x_i - c_h||^2
    (from SSE of a group = sum ||x||^2 - size ||c||^2; the move is the
    single-point transfer of Hartigan and Wong's k-means, 1979), moves only
    while a > k and b < 2k-1. Gains within TOLERANCE of the terms are
    rounding and are dropped.
    """
    z, k = made.z, made.k
    mi, mj = made.members[gs[pa], :w], made.members[gs[pb], :w]
    size_a = made.sizes[gs[pa]].astype(np.float64)
    size_b = made.sizes[gs[pb]].astype(np.float64)
    ca, cb = made.centroids(gs[pa]), made.centroids(gs[pb])
    xi, xj = z[np.maximum(mi, 0)], z[np.maximum(mj, 0)]  # (P, w, p)
    ui, uj = xi - ca[:, None], xj - ca[:, None]  # both relative to c_g
    ia, ib = _sq(ui), _sq(xi - cb[:, None])  # (P, w)
    jb, ja = _sq(xj - cb[:, None]), _sq(uj)
    # ||x_i - x_j||^2 = ||u_i||^2 + ||u_j||^2 - 2 u_i.u_j: its rounding is far below
    # TOLERANCE x the terms, which hold ||u_i||^2 and ||u_j||^2
    ij = ia[:, :, None] + ja[:, None] - 2.0 * np.matmul(ui, uj.transpose(0, 2, 1))  # (P, w, w)
    inv = (1.0 / size_a + 1.0 / size_b)[:, None, None]
    terms = ia[:, :, None] + ib[:, :, None] + jb[:, None] + ja[:, None]
    gain = ja[:, None] - ia[:, :, None] + ib[:, :, None] - jb[:, None] - ij * inv
    ok = (mi[:, :, None] >= 0) & (mj[:, None] >= 0) & (gain < -TOLERANCE * terms)
    t, u, v = np.nonzero(ok)
    found = [Moves(mi[t, u], mj[t, v], pa[t], pb[t], gain[t, u, v])]
    for src, dst, here, there, mem in ((size_a, size_b, ia, ib, mi), (size_b, size_a, jb, ja, mj)):
        fits = ((src > k) & (dst < 2 * k - 1))[:, None] & (mem >= 0)
        move = (-src / (src - 1))[:, None] * here + (dst / (dst + 1))[:, None] * there
        t, u = np.nonzero(fits & (move < -TOLERANCE * (here + there)))
        ends = (pa[t], pb[t]) if mem is mi else (pb[t], pa[t])
        found.append(Moves(mem[t, u], np.full(t.size, -1, dtype=np.int64), *ends, move[t, u]))
    return Moves(*(np.concatenate(parts) for parts in zip(*found, strict=True)))


def _candidates(made: Groups, gs: NDArray[Any], pa: NDArray[Any], pb: NDArray[Any]) -> Moves:
    """Improving exchanges and moves of every pair; pairs of two k-record groups on k x k arrays."""
    k = made.k
    small = np.maximum(made.sizes[gs[pa]], made.sizes[gs[pb]]) == k
    parts = [
        _pair_gains(made, gs, pa[small], pb[small], k),
        _pair_gains(made, gs, pa[~small], pb[~small], 2 * k - 1),
    ]
    return Moves(*(np.concatenate(x) for x in zip(*parts, strict=True)))


def _disjoint(cand: Moves, groups: int) -> NDArray[Any]:
    """Candidates to apply together: no two touch the same group; the best gains first.

    A candidate is taken when it is the best (lowest gain, then lowest i, j)
    of every candidate left that touches either of its groups; the groups it
    touches then drop out, and the rule repeats on what is left.
    """
    order = np.lexsort((cand.j, cand.i, cand.gain))
    a, b = cand.a[order], cand.b[order]
    rank = np.arange(order.size)
    left = np.ones(order.size, dtype=bool)
    used = np.zeros(groups, dtype=bool)
    taken = np.zeros(order.size, dtype=bool)
    for _ in range(MATCH_PASSES):
        if not left.any():
            break
        best = np.full(groups, order.size)
        np.minimum.at(best, a[left], rank[left])
        np.minimum.at(best, b[left], rank[left])
        win = left & (best[a] == rank) & (best[b] == rank)
        taken |= win
        used[a[win]] = True
        used[b[win]] = True
        left &= ~used[a] & ~used[b]
    return np.asarray(order[taken])


def repair(made: Groups, gs: NDArray[Any], focus: int) -> None:
    """Lower the SSE of groups ``gs`` by exchanging and moving records between near groups.

    Each of the first ``focus`` groups of ``gs`` (a block's takers) is paired
    with its ``REPAIR_NEIGHBOURS`` nearest groups of ``gs`` (by centroid).
    Each round computes the change of SSE of every exchange of two records
    between the groups of a pair and of every move the bounds k..2k-1 allow
    (:func:`_pair_gains`) and applies the best ones that touch disjoint
    groups (:func:`_disjoint`), so every computed gain is the real one; the
    next round looks again only at the pairs that changed or still had a gain.
    Rounds stop after ``REPAIR_ROUNDS`` or when nothing improves. Each step
    lowers the SSE, and sizes stay within k..2k-1.
    """
    if gs.size < 2 or focus == 0:
        return
    pa, pb = _neighbour_pairs(made.centroids(gs), focus, REPAIR_NEIGHBOURS)
    active = np.ones(pa.size, dtype=bool)
    for _ in range(REPAIR_ROUNDS):
        cand = _candidates(made, gs, pa[active], pb[active])
        if cand.i.size == 0:
            return
        pick = _disjoint(cand, gs.size)
        swap = cand.j[pick] >= 0
        made.swap(cand.i[pick[swap]], cand.j[pick[swap]])
        made.move(cand.i[pick[~swap]], gs[cand.b[pick[~swap]]])
        # next round: pairs that touch a changed group or still had a gain left
        touched = np.zeros(gs.size, dtype=bool)
        touched[cand.a[pick]] = True
        touched[cand.b[pick]] = True
        left = np.unique(np.minimum(cand.a, cand.b) * gs.size + np.maximum(cand.a, cand.b))
        active = touched[pa] | touched[pb] | np.isin(pa * gs.size + pb, left)


def _block_labels(z: NDArray[Any], k: int, block_size: int, tally: Tally) -> NDArray[Any]:
    """The work of :func:`scalable_mdav_labels` (arguments checked)."""
    n = z.shape[0]
    blocks = kd_blocks(z, k, max(block_size, 2 * k))
    lows = np.array([z[b].min(axis=0) for b in blocks])
    highs = np.array([z[b].max(axis=0) for b in blocks])
    alive = np.ones(n, dtype=bool)
    made = Groups(z, k, tally)

    def emit(ids: NDArray[Any]) -> None:
        alive[ids] = False
        made.emit(ids)

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
        later = [
            j for j in range(b + 1, len(blocks)) if np.all(lows[j] <= hi) and np.all(highs[j] >= lo)
        ]
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
        first = made.count
        carry = group_block(space, k, emit)
        # repair the faces shared with earlier blocks: their groups that took records of this one
        taken = made.labels[rows]
        takers = np.unique(taken[(taken >= 0) & (taken < first)])
        repair(made, np.concatenate([takers, np.arange(first, made.count)]), takers.size)
    labels = made.labels
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
