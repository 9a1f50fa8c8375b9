"""sdcMicro's microaggregation methods other than MDAV: ``onedims``, ``pca``, ``rmd``,
``clustpca`` and ``influence`` (sdcMicro 5.8.1, ``microaggregation(method = ...)``), and
MDAV within strata.

Each method orders the records of a stratum and cuts the order into fixed groups (``k``
records each, the last ``k``..``2k - 1``:
:func:`anonlab.microaggregation.aggregates.fixed_labels`); each record releases its
group's aggregate (``aggr``: mean, median, trimmed mean, one-step;
:mod:`anonlab.microaggregation.aggregates`). The orders (docs/microaggregation.md):

- ``onedims`` (individual ranking; Defays and Nanopoulos 1993): every column on its own,
  its values in ascending order (ties by row), so each column has its own groups;
- ``pca``: the records by their score on the first principal component of the columns
  standardized to mean 0 and sd 1 (divisor n - 1), the component's sign fixed so that its
  first loading is not negative (R's ``princomp``), ties by row;
- ``rmd`` (robust Mahalanobis distance; Templ and Meindl 2008, PSD 2008, LNCS 5262): on
  the standardized columns, the remaining record farthest from the robust centre (the
  squared Mahalanobis distance under the reweighted minimum covariance determinant,
  Rousseeuw and Van Driessen 1999) and its ``k - 1`` nearest remaining records
  (Euclidean) form a group, until ``k``..``2k - 1`` records remain: the last group. The
  MCD draws random subsets: its seed is the run's;
- ``clustpca``: CLARA (Kaufman and Rousseeuw 1990, ch. 3; as R's ``clara(x, 8)`` with its
  own generator, so deterministic: :func:`clara_labels`) cuts the records into
  :data:`CLUSTERS` clusters; the clusters in turn, each's records by their first
  principal component score (a cluster of fewer records than columns: by the first
  column); the groups are cut from this whole order, so a group may span two clusters;
- ``influence``: the same clusters; each cluster's records by the column in which its
  medoid's value is largest (sdcMicro's rule, values in their own units).

As in sdcMicro (``mafast``), a single masked column is individual ranking whatever the
method, since every order of one column is its sort. With strata, every stratum is
microaggregated on its own (a stratum needs at least ``k`` records; one of ``k`` to
``2k - 1`` records is one group, where sdcMicro stops with "Too less observations").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError, present
from anonlab.microaggregation.aggregates import (
    AGGREGATES,
    fixed_group_aggregates,
    fixed_labels,
    ordered_aggregates,
)
from anonlab.microaggregation.mdav import EuclideanSpace, k_nearest, mdav_partition
from anonlab.parameters import check_k
from anonlab.progress import ProgressFn, report_to

Method = Literal["mdav", "onedims", "pca", "rmd", "clustpca", "influence"]
METHODS: tuple[str, ...] = ("mdav", "onedims", "pca", "rmd", "clustpca", "influence")
#: methods that draw random numbers (the MCD's subsets): they take a seed
RANDOMIZED: tuple[str, ...] = ("rmd",)
#: CLARA's clusters for clustpca and influence (sdcMicro's ``nc = 8``)
CLUSTERS = 8
#: CLARA's samples (R's ``clara(samples = 5)``); each of ``40 + 2 * CLUSTERS`` records
CLARA_SAMPLES = 5
#: the MCD of rmd is fitted on at most this many records drawn at random (the search's
#: cost grows with the records; the centre and scatter of 2,000 records are as robust,
#: their sampling error small; the masking family's outdect does the same)
MCD_ROWS = 2_000
STEP = "microaggregation: strata done"


def check_method(method: str, aggr: str, trim: float) -> None:
    """Refuse an unknown method or aggregate, or a trim outside [0, 0.5]."""
    if method not in METHODS:
        raise AnonlabError(
            f"unknown method '{method}': choose {', '.join(METHODS)}", parameter="method"
        )
    if aggr not in AGGREGATES:
        raise AnonlabError(
            f"unknown aggr '{aggr}': choose {', '.join(AGGREGATES)}", parameter="aggr"
        )
    if not 0.0 <= trim <= 0.5:
        raise AnonlabError(f"trim must be between 0 and 0.5, got {trim}", parameter="trim")


def stratum_rows(frame: pd.DataFrame, strata: Sequence[str]) -> list[NDArray[np.int64]]:
    """The rows of each stratum (the distinct value combinations of ``strata``, as text), in
    ascending row order; one stratum of every row without strata."""
    n = len(frame)
    if not strata:
        return [np.arange(n, dtype=np.int64)]
    missing = [c for c in strata if c not in frame.columns]
    if missing:
        raise AnonlabError(f"strata column '{missing[0]}' is not in the table", parameter="strata")
    keys = frame[list(strata)].astype(str)
    codes = keys.groupby(list(strata), sort=True).ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    return [np.asarray(part, dtype=np.int64) for part in np.split(order, bounds)]


# ---------------------------------------------------------------------------
# Orders
# ---------------------------------------------------------------------------


def standardized(x: NDArray[Any]) -> NDArray[np.float64]:
    """``(x - mean) / sd`` by column, sd with divisor n - 1 (R's ``scale``); a constant column
    is centred only (its sd taken as 1)."""
    centred = x - x.mean(axis=0)
    sd = np.sqrt(np.sum(centred * centred, axis=0) / max(1, x.shape[0] - 1))
    return np.asarray(centred / np.where(sd > 0, sd, 1.0))


def pca_order(x: NDArray[Any]) -> NDArray[np.int64]:
    """Rows ordered by their first principal component score (module text, ``pca``).

    The covariance of the standardized columns (R's ``princomp``: divisor n; only its
    eigenvectors matter), its leading eigenvector ``v`` with ``v[0] >= 0``; the scores
    ``(z - mean z) v`` sorted ascending, ties by row.
    """
    z = standardized(x)
    centred = z - z.mean(axis=0)
    cov = centred.T @ centred / z.shape[0]
    _, vectors = np.linalg.eigh(cov)
    v = vectors[:, -1]
    if v[0] < 0:
        v = -v
    scores = centred @ v
    return np.asarray(np.argsort(scores, kind="stable"), dtype=np.int64)


def robust_distances(z: NDArray[Any], rng: np.random.Generator) -> NDArray[np.float64]:
    """Squared Mahalanobis distances of ``z``'s rows from the reweighted MCD with ``h = (n + p
    + 1) // 2`` (robustbase's ``covMcd`` default, which sdcMicro's rmd calls), searched by
    :func:`anonlab.masking.mcd.fast_mcd` on at most :data:`MCD_ROWS` rows; the rows and the
    search's random starts are drawn from ``default_rng(s)``, ``s`` the first number drawn
    from ``rng``. Only the order of the distances matters to rmd, so a constant factor on
    the covariance (the consistency corrections) changes nothing."""
    from anonlab.masking.mcd import fast_mcd

    n, p = z.shape
    if n <= p + 1:  # no h-subset to search: the classical estimate
        centred = z - z.mean(axis=0)
        cov = centred.T @ centred / max(1, n - 1)
        return np.asarray(np.einsum("ij,ij->i", centred @ np.linalg.pinv(cov), centred))
    search = np.random.default_rng(int(rng.integers(0, 2**31 - 1)))
    fit = z if n <= MCD_ROWS else z[search.choice(n, MCD_ROWS, replace=False)]
    m = fit.shape[0]
    mcd = fast_mcd(np.asarray(fit, dtype=np.float64), search, h=(m + p + 1) // 2)
    return mcd.mahalanobis(np.asarray(z, dtype=np.float64))


def rmd_order(x: NDArray[Any], k: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Rows in the order of rmd's groups (module text), the last group's rows last.

    Far record: the largest robust distance among the remaining records (ties: lowest row,
    as R's ``which.max``); its group: itself and its ``k - 1`` nearest remaining records by
    Euclidean distance on the standardized columns (exact ties: lowest row, as R's repeated
    ``which.min``; :func:`anonlab.microaggregation.mdav.k_nearest`).
    """
    z = standardized(x)
    n = z.shape[0]
    groups = n // k
    far = robust_distances(z, rng)
    space = EuclideanSpace(z)
    order = np.empty(n, dtype=np.int64)
    placed = 0
    remaining = n
    live = far.copy()  # the working rows' distances; a grouped row's is -inf
    for _ in range(groups - 1):
        seed = int(np.argmax(live))
        rows = k_nearest(space.near_row(seed), k, seed)
        order[placed : placed + k] = space.ids[rows]
        placed += k
        space.remove(rows)
        live[rows] = -np.inf
        remaining -= k
        if remaining < 0.7 * space.alive.size:
            space.compact()
            live = far[space.ids]
    order[placed:] = space.ids[np.flatnonzero(space.alive)]
    return order


class _ClaraRandom:
    """CLARA's own generator (Kaufman and Rousseeuw 1990; R's ``clara(rngR = FALSE)``): the
    state ``r`` steps to ``(5761 r + 999) mod 65536`` from 0, and a draw is ``r / 65536``."""

    def __init__(self) -> None:
        self.state = 0

    def index(self, n: int) -> int:
        """A row number in 1..n: ``1 + floor(n u)``."""
        self.state = (self.state * 5761 + 999) & 0xFFFF
        return min(n, 1 + int(n * (self.state / 65536.0)))


def _clara_sample(n: int, size: int, best: list[int] | None, draw: _ClaraRandom) -> list[int]:
    """The rows (1-based, ascending) of one CLARA sample of ``size`` rows.

    Rows are drawn one by one, a row drawn twice drawn again. After the first sample the
    best medoids so far are in every sample. When the sample is more than half of the
    table, the rows left out are drawn instead (never a best medoid).
    """
    large = n < 2 * size
    wanted = n - size if large else size
    chosen: list[int] = []
    if best is not None and not large:
        chosen = sorted(best)
    while len(chosen) < wanted:
        row = draw.index(n)
        if best is not None and (large or not chosen) and row in best:
            continue
        if row in chosen:
            continue
        chosen.append(row)
        chosen.sort()
    if large:
        left_out = set(chosen)
        return [r for r in range(1, n + 1) if r not in left_out]
    return chosen


def _distance_matrix(points: NDArray[Any]) -> NDArray[np.float64]:
    """Euclidean distances between the rows of ``points``, each sum taken column by column."""
    total = np.zeros((points.shape[0], points.shape[0]))
    for j in range(points.shape[1]):
        diff = points[:, None, j] - points[None, :, j]
        total += diff * diff
    return np.asarray(np.sqrt(total))


def _clara_pam(d: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Medoids of one sample (distances ``d``): BUILD, then SWAP as CLARA does it.

    BUILD adds, :data:`CLUSTERS` times, the row with the largest gain ``sum_j max(D_j -
    d(i, j), 0)`` (``D_j`` the distance to the nearest medoid so far, at first 1.1 times
    the largest distance plus 1; ties: the last row). SWAP computes for every medoid ``i``
    and other row ``h`` the change of the total distance ``T_ih`` with CLARA's rule for a
    row whose nearest medoid is ``i`` (``E_j`` the second nearest: ``d(h, j)`` when
    ``E_j > D_j``, else ``E_j``; R's ``clara(pamLike = FALSE)``), makes the first swap of
    the smallest ``T_ih < 0`` (h, then i, ascending) and starts again, until none is
    negative.
    """
    m = d.shape[0]
    clusters = min(CLUSTERS, m - 1) if m > 1 else 1
    top = float(d.max()) * 1.1 + 1.0
    medoid = np.zeros(m, dtype=bool)
    nearest = np.full(m, top)
    for _ in range(clusters):
        step = nearest[None, :] - d  # [i, j]: D_j - d(i, j)
        gain = np.cumsum(np.where(step > 0.0, step, 0.0), axis=1)[:, -1]  # j in turn
        gain[medoid] = -np.inf
        pick = m - 1 - int(np.argmax(gain[::-1]))
        medoid[pick] = True
        nearest = np.minimum(nearest, d[pick])
    if clusters == 1:
        return medoid
    while True:
        rows = np.flatnonzero(medoid)
        near = np.full(m, top)
        second = np.full(m, top)
        for i in rows:
            closer = d[i] < near
            second = np.where(closer, near, np.where(d[i] < second, d[i], second))
            near = np.where(closer, d[i], near)
        # terms [j, h, i] of T_ih, summed over j in turn (as CLARA adds them)
        to_medoid = d[rows].T[:, None, :]  # d(i, j) as [j, 1, i]
        to_row = d.T[:, :, None]  # d(h, j) as [j, h, 1]
        lowest = near[:, None, None]
        small = np.where(second[:, None, None] > to_medoid, to_row, second[:, None, None])
        terms = np.where(
            to_medoid == lowest,
            small - lowest,
            np.where(to_row < lowest, to_row - lowest, 0.0),
        )
        change = np.cumsum(terms, axis=0)[-1]
        change[medoid] = np.inf
        h, slot = np.unravel_index(int(np.argmin(change)), change.shape)
        if not change[h, slot] < 0.0:
            return medoid
        medoid[h] = True
        medoid[rows[slot]] = False


def _squared_to(xt: NDArray[Any], medoids: list[int]) -> NDArray[np.float64]:
    """Squared Euclidean distances (medoids, n) of every row (``xt``: the table transposed)
    to each medoid, summed column by column."""
    total = np.zeros((len(medoids), xt.shape[1]))
    diff = np.empty_like(total)
    for j in range(xt.shape[0]):
        np.subtract(xt[j][None, :], xt[j, medoids][:, None], out=diff)
        np.multiply(diff, diff, out=diff)
        total += diff
    return total


def _nearest(values: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Each column's smallest value in ``values`` (clusters, n) and its row, the first of
    equal ones (``argmin`` and ``min`` down the columns, in one pass over the rows, which
    costs a third of NumPy's ``argmin(axis=0)`` on a C-ordered array)."""
    low = values[0].copy()
    row = np.zeros(values.shape[1], dtype=np.intp)
    closer = np.empty(values.shape[1], dtype=bool)
    for c in range(1, values.shape[0]):
        np.less(values[c], low, out=closer)
        np.copyto(row, c, where=closer)
        np.minimum(low, values[c], out=low)
    return row, low


def clara_labels(x: NDArray[Any]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """CLARA (Kaufman and Rousseeuw 1990, ch. 3) as R's ``clara(x, 8)`` runs it: each row's
    cluster (0-based) and the medoids' values, one row per cluster.

    :data:`CLARA_SAMPLES` samples of ``min(n, 40 + 2 * 8)`` rows drawn by CLARA's own
    generator (:class:`_ClaraRandom`, :func:`_clara_sample`); the medoids of each
    (:func:`_clara_pam`, Euclidean distances on the values in their own units); every row
    assigned to its nearest medoid; the sample with the smallest total distance wins (the
    first of equal ones). Clusters are numbered in the order of their first row. The same
    table gives the same clusters: CLARA's generator starts from 0 on every call.
    """
    n = x.shape[0]
    size = min(n, 40 + 2 * CLUSTERS)
    xt = np.ascontiguousarray(x.T)
    draw = _ClaraRandom()
    best: list[int] | None = None
    best_total = np.inf
    best_squares = np.zeros((0, n))
    seen: dict[tuple[int, ...], float] = {}
    for _ in range(CLARA_SAMPLES if size < n else 1):
        sample = list(range(1, n + 1)) if size == n else _clara_sample(n, size, best, draw)
        rows = np.asarray(sample, dtype=np.int64) - 1
        medoids = [int(r) for r in rows[_clara_pam(_distance_matrix(x[rows]))]]
        if tuple(medoids) in seen:  # the same medoids give the same total: not better
            continue
        squares = _squared_to(xt, medoids)
        nearest, lowest = _nearest(squares)  # a sample's assignment: by the squared sums
        total = float(np.cumsum(np.sqrt(lowest))[-1])  # row after row
        seen[tuple(medoids)] = total
        if best is None or best_total > total:
            first = np.asarray([np.argmax(nearest == c) for c in range(len(medoids))])
            kept = [c for c in range(len(medoids)) if nearest[first[c]] == c]
            by_first = np.asarray(kept)[np.argsort(first[kept], kind="stable")]
            best = [medoids[c] + 1 for c in by_first]
            best_total = total
            best_squares = squares[by_first]
    medoid_rows = [r - 1 for r in present(best, "the best medoids")]
    labels = _nearest(np.sqrt(best_squares))[0]  # the final one: by the distances
    labels[medoid_rows] = np.arange(len(medoid_rows))  # a medoid is in its own cluster
    return np.asarray(labels, dtype=np.int64), np.asarray(x[medoid_rows], dtype=np.float64)


def clustered_order(x: NDArray[Any], method: str) -> NDArray[np.int64]:
    """The order of ``clustpca`` or ``influence`` (module text): the clusters in turn, each's
    rows by its first principal component or by its medoid's largest column."""
    labels, medoids = clara_labels(x)
    parts = []
    for c in range(medoids.shape[0]):
        rows = np.flatnonzero(labels == c)
        if method == "influence":
            column = int(np.argmax(medoids[c]))
            inner = np.argsort(x[rows, column], kind="stable")
        elif rows.size < x.shape[1] or rows.size < 2:
            inner = np.argsort(x[rows, 0], kind="stable")
        else:
            inner = pca_order(x[rows])
        parts.append(rows[inner])
    return np.asarray(np.concatenate(parts), dtype=np.int64)


# ---------------------------------------------------------------------------
# One stratum
# ---------------------------------------------------------------------------


#: the sign bit of a double's bit pattern
_SIGN = np.uint64(1 << 63)


def column_order(values: NDArray[np.float64]) -> NDArray[np.int64]:
    """The positions of ``values`` (one column, contiguous) in ascending order, equal values
    by position (R's ``order``; a ``-0.0`` and a ``0.0`` tie).

    A column without NaN is sorted by :func:`radix_order`, about twice as cheap as an
    introsort of the doubles (and a stable sort of them three times dearer); a column
    holding a NaN (the table model refuses them) by a stable sort, which puts the NaNs last
    in row order, as R's ``order``.
    """
    if np.isnan(values).any():
        return np.asarray(np.argsort(values, kind="stable"), dtype=np.int64)
    return radix_order(values)


def radix_order(values: NDArray[np.float64]) -> NDArray[np.int64]:
    """The positions of ``values`` (no NaN) in ascending order, equal values by position.

    Each double is mapped to a 64-bit unsigned key that orders as the doubles do (IEEE 754
    bit patterns: a non-negative double's with its sign bit set, a negative double's bits
    all flipped; ``-0.0`` first made ``0.0`` by adding ``0.0``, so the two zeros tie). The
    keys' upper 48 bits are sorted by a stable least-significant-digit radix sort (Knuth,
    TAOCP vol. 3, sec. 5.2.5): NumPy's ``lexsort`` of their three 16-bit digits, which
    sorts each digit stably (a radix sort for 16-bit integers), the highest digit last.
    Keys equal in those bits are then in position order; where such a run is not also in
    order of the whole key (doubles within about 1e-11 of each other, relatively, but not
    equal: rare), that run alone is sorted again by the whole key and the position.
    """
    bits = (values + 0.0).view(np.uint64)
    # flip every bit of a negative double (its sign copied down), only the sign bit else
    key = bits ^ ((bits.view(np.int64) >> np.int64(63)).view(np.uint64) | _SIGN)
    # the 16-bit digits as views of the little-endian keys (digit 0 the lowest)
    digits = key.astype("<u8", copy=False).view("<u2").reshape(-1, 4)
    order = np.asarray(np.lexsort((digits[:, 1], digits[:, 2], digits[:, 3])), dtype=np.int64)
    ordered = key[order]
    inverted = ordered[1:] < ordered[:-1]
    if inverted.any():  # runs of equal upper bits out of order in the lower 16 bits
        upper = ordered >> np.uint64(16)
        run = np.cumsum(np.r_[True, upper[1:] != upper[:-1]]) - 1
        unsorted = np.zeros(int(run[-1]) + 1, dtype=bool)
        unsorted[run[1:][inverted]] = True
        chosen = np.flatnonzero(unsorted[run])  # whole runs, each in its place
        rows = order[chosen]
        order[chosen] = rows[np.lexsort((rows, ordered[chosen]))]
    return order


def onedims_release(
    x: NDArray[Any], k: int, aggr: str, trim: float, *, refined: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Individual ranking: each column sorted (ties by row), cut into fixed groups and
    aggregated on its own. Returns the release and each value's group (n, p).

    The columns are taken one at a time as the rows of the transposed table (contiguous in
    memory): sorted (:func:`column_order`), the sorted values (each as it is at its row,
    so a ``-0.0`` and a ``0.0``, which tie, keep their rows' ranks, as R's
    ``x[order(x)]``) cut into groups and aggregated while in cache, each row's group put
    back at its row and its aggregate looked up there. The sorted values and the groups
    go through buffers of one column, reused; both results are the transposes of (p, n)
    arrays (column-major views).
    """
    xt = np.ascontiguousarray(np.asarray(x, dtype=np.float64).T)
    released = np.empty_like(xt)
    labels = np.empty(xt.shape, dtype=np.int64)
    fixed = fixed_labels(x.shape[0], k)
    ordered = np.empty((1, xt.shape[1]), dtype=np.float64)  # buffers of one column
    row = np.empty(xt.shape[1], dtype=np.int64)
    for j in range(xt.shape[0]):
        order = column_order(xt[j])
        np.take(xt[j], order, out=ordered[0])
        values = fixed_group_aggregates(ordered, k, aggr, trim, refined=refined, transposed=True)
        row[order] = fixed  # each row's group
        labels[j] = row
        np.take(values[:, 0], row, out=released[j])  # each row's group's aggregate
    return released.T, labels.T


def ordered_release(
    x: NDArray[Any], order: NDArray[np.int64], k: int, aggr: str, trim: float
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The release of the fixed groups cut from ``order``, and each row's group."""
    place = np.empty_like(order)
    place[order] = np.arange(order.size)  # each row's position in the order
    values = ordered_aggregates(np.take(x, order, axis=0), k, aggr, trim)
    released = np.take(values, place, axis=0)
    return released, np.asarray(fixed_labels(x.shape[0], k)[place], dtype=np.int64)


def mdav_release(x: NDArray[Any], k: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """MDAV within one stratum: columns standardized by the stratum's mean and population
    sd (as the whole table's MDAV), groups replaced by their means."""
    from anonlab.microaggregation.mdav import group_means

    sd = x.std(axis=0)
    z = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    labels = mdav_partition(EuclideanSpace(z), x.shape[0], k)
    return group_means(x, labels), np.asarray(labels, dtype=np.int64)


def stratum_release(
    x: NDArray[Any],
    k: int,
    method: str,
    aggr: str,
    trim: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """One stratum's release (n, p) and its groups: (n,) or, for individual ranking, (n, p)."""
    check_k(k, x.shape[0])
    if method == "mdav":
        if aggr != "mean":
            raise AnonlabError(
                "method 'mdav' releases group means: aggr applies to the other methods",
                parameter="aggr",
            )
        return mdav_release(x, k)
    if method == "onedims" or x.shape[1] == 1:
        return onedims_release(x, k, aggr, trim, refined=x.shape[1] == 1)
    if method == "pca":
        order = pca_order(x)
    elif method == "rmd":
        order = rmd_order(x, k, rng)
    else:
        order = clustered_order(x, method)
    return ordered_release(x, order, k, aggr, trim)


def microaggregate_strata(
    x: NDArray[Any],
    strata: list[NDArray[np.int64]],
    k: int,
    *,
    method: str,
    aggr: str = "mean",
    trim: float = 0.0,
    seed: int | None = None,
    progress: ProgressFn | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The release of ``x`` (n, p) stratum by stratum, and each record's group (numbered
    across strata; (n, p) for individual ranking)."""
    check_method(method, aggr, trim)
    if method in RANDOMIZED and seed is None:
        raise AnonlabError(f"method '{method}' draws random numbers: give a seed", parameter="seed")
    if method not in RANDOMIZED and seed is not None:
        raise AnonlabError(
            f"seed applies to method 'rmd' only: method '{method}' draws no random numbers",
            parameter="seed",
        )
    x = np.asarray(x, dtype=np.float64)
    rng = np.random.default_rng(seed)
    released = np.empty_like(x)
    per_column = method == "onedims" or x.shape[1] == 1
    labels = np.empty(x.shape if per_column else x.shape[0], dtype=np.int64)
    report = report_to(progress)
    if len(strata) == 1:  # no strata: no gathering and scattering of rows
        released, labels = stratum_release(x, k, method, aggr, trim, rng)
        report(STEP, 1, 1)
        return released, labels
    offset = 0
    for done, rows in enumerate(strata, start=1):
        values, groups = stratum_release(x[rows], k, method, aggr, trim, rng)
        released[rows] = values
        labels[rows] = groups + offset
        offset += int(groups.max()) + 1
        report(STEP, done, len(strata))
    return released, labels
