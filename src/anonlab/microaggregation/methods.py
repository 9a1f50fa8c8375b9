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
- ``clustpca``: CLARA (Kaufman and Rousseeuw 1990, ch. 3) cuts the records into
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

from anonlab.errors import AnonlabError
from anonlab.microaggregation.aggregates import AGGREGATES, fixed_labels, ordered_aggregates
from anonlab.microaggregation.mdav import EuclideanSpace, k_nearest, mdav_partition
from anonlab.parameters import check_k
from anonlab.progress import ProgressFn, report_to

Method = Literal["mdav", "onedims", "pca", "rmd", "clustpca", "influence"]
METHODS: tuple[str, ...] = ("mdav", "onedims", "pca", "rmd", "clustpca", "influence")
#: methods that draw random numbers (the MCD's subsets, CLARA's samples): they take a seed
RANDOMIZED: tuple[str, ...] = ("rmd", "clustpca", "influence")
#: CLARA's clusters for clustpca and influence (sdcMicro's ``nc = 8``)
CLUSTERS = 8
#: CLARA's samples (R's ``clara(samples = 5)``); each of ``40 + 2 * CLUSTERS`` records
CLARA_SAMPLES = 5
#: the MCD of rmd is fitted on at most this many records drawn at random (its search's cost
#: grows with n; the centre and scatter of 5,000 records are as robust)
MCD_ROWS = 5_000
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
    """Squared Mahalanobis distances of ``z``'s rows from the reweighted MCD (scikit-learn's
    FastMCD, h = (n + p + 1) / 2 as robustbase's ``covMcd``), fitted on at most
    :data:`MCD_ROWS` rows drawn from ``rng``; its random subsets are seeded from ``rng``."""
    from sklearn.covariance import MinCovDet

    n, p = z.shape
    if n <= p + 1:  # no h-subset to search: the classical estimate
        centred = z - z.mean(axis=0)
        cov = centred.T @ centred / max(1, n - 1)
        return np.asarray(np.einsum("ij,ij->i", centred @ np.linalg.pinv(cov), centred))
    seed = int(rng.integers(0, 2**31 - 1))
    fit = z if n <= MCD_ROWS else z[rng.choice(n, MCD_ROWS, replace=False)]
    mcd = MinCovDet(random_state=seed).fit(fit)
    return np.asarray(mcd.mahalanobis(z), dtype=np.float64)


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
    for _ in range(groups - 1):
        live = np.where(space.alive, far[space.ids], -np.inf)
        seed = int(np.argmax(live))
        rows = k_nearest(space.near_row(seed), k, seed)
        order[placed : placed + k] = space.ids[rows]
        placed += k
        space.remove(rows)
        remaining -= k
        if remaining < 0.7 * space.alive.size:
            space.compact()
    order[placed:] = space.ids[np.flatnonzero(space.alive)]
    return order


def clara_labels(
    x: NDArray[Any], clusters: int, rng: np.random.Generator
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """CLARA (Kaufman and Rousseeuw 1990, ch. 3): each row's cluster and the medoids.

    :data:`CLARA_SAMPLES` samples of ``min(n, 40 + 2 * clusters)`` rows (drawn from ``rng``;
    every sample after the first holds the best medoids so far); PAM (BUILD, then SWAP
    while a swap lowers the total distance) on each sample; every row assigned to its
    nearest medoid (Euclidean, values in their own units, as sdcMicro calls ``clara``);
    the sample whose medoids give the smallest mean distance wins. Clusters are numbered
    by their medoid's row.
    """
    n = x.shape[0]
    clusters = min(clusters, n)
    size = min(n, 40 + 2 * clusters)
    best: NDArray[np.int64] | None = None
    best_cost = np.inf
    for _ in range(CLARA_SAMPLES if size < n else 1):
        if best is None:
            sample = np.sort(rng.choice(n, size, replace=False))
        else:
            free = np.ones(n, dtype=bool)
            free[best] = False
            extra = rng.choice(np.flatnonzero(free), size - best.size, replace=False)
            sample = np.sort(np.concatenate([best, extra]))
        medoids = sample[_pam(x[sample], clusters)]
        cost = float(np.mean(np.sqrt(_nearest(x, medoids)[1])))
        if cost < best_cost:
            best, best_cost = np.sort(medoids), cost
    assert best is not None
    labels, _ = _nearest(x, best)
    return labels, np.asarray(x[best], dtype=np.float64)


def _nearest(x: NDArray[Any], medoids: NDArray[np.int64]) -> tuple[NDArray[np.int64], Any]:
    """Each row's nearest medoid and its squared Euclidean distance, by one matrix product:
    ``||x||^2 - 2 x.m + ||m||^2`` (the rounding of the products may decide between two
    medoids at equal distances: either is nearest)."""
    centres = x[medoids]
    d = (centres * centres).sum(axis=1) - 2.0 * (x @ centres.T)
    nearest = np.argmin(d, axis=1)
    rows = np.arange(x.shape[0])
    return np.asarray(nearest, dtype=np.int64), np.maximum(
        d[rows, nearest] + (x * x).sum(axis=1), 0.0
    )


def _pam(x: NDArray[Any], clusters: int) -> NDArray[np.int64]:
    """PAM's medoids of the rows of ``x``: BUILD (greedy), then the best SWAP while it helps."""
    d = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2))
    medoids = [int(np.argmin(d.sum(axis=0)))]
    near = d[:, medoids[0]].copy()
    while len(medoids) < clusters:
        gain = np.maximum(near[:, None] - d, 0.0).sum(axis=0)
        gain[medoids] = -1.0
        pick = int(np.argmax(gain))
        medoids.append(pick)
        near = np.minimum(near, d[:, pick])
    cost = near.sum()
    while True:
        best = (cost, -1, -1)
        for slot in range(len(medoids)):
            rest = [m for i, m in enumerate(medoids) if i != slot]
            without = d[:, rest].min(axis=1) if rest else np.full(d.shape[0], np.inf)
            totals = np.minimum(without[:, None], d).sum(axis=0)
            totals[medoids] = np.inf
            h = int(np.argmin(totals))
            if totals[h] < best[0] - 1e-12 * max(1.0, abs(best[0])):
                best = (float(totals[h]), slot, h)
        if best[1] < 0:
            return np.asarray(medoids, dtype=np.int64)
        medoids[best[1]] = best[2]
        cost = best[0]


def clustered_order(x: NDArray[Any], method: str, rng: np.random.Generator) -> NDArray[np.int64]:
    """The order of ``clustpca`` or ``influence`` (module text): the clusters in turn, each's
    rows by its first principal component or by its medoid's largest column."""
    labels, medoids = clara_labels(x, CLUSTERS, rng)
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


def ranked(xt: NDArray[Any]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Each row of ``xt`` (p, n) in ascending order, equal values by position (R's
    ``order``): the argsort and the sorted values.

    An introsort (about twice as fast as a stable sort on doubles) sorts; then, in each run
    of equal values, the positions are put in ascending order (only the tied values are
    sorted again).
    """
    order = np.argsort(xt, axis=1)
    ordered = np.take_along_axis(xt, order, axis=1)
    for j in range(xt.shape[0]):
        ties = ordered[j, 1:] == ordered[j, :-1]
        if not ties.any():
            continue
        in_run = np.zeros(xt.shape[1], dtype=bool)
        in_run[1:] |= ties
        in_run[:-1] |= ties
        starts = in_run.copy()
        starts[1:] &= ~ties
        run = np.cumsum(starts)
        tied = np.flatnonzero(in_run)
        rows = order[j, tied]
        order[j, tied] = rows[np.lexsort((rows, run[tied]))]
    return np.asarray(order, dtype=np.int64), np.asarray(ordered, dtype=np.float64)


def onedims_release(
    x: NDArray[Any], k: int, aggr: str, trim: float, *, refined: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Individual ranking: each column sorted (ties by row), cut into fixed groups and
    aggregated on its own. Returns the release and each value's group (n, p).

    The columns are sorted as the rows of the transposed table (contiguous in memory).
    """
    xt = np.ascontiguousarray(x.T)
    order, ordered = ranked(xt)
    values = ordered_aggregates(ordered.T, k, aggr, trim, refined=refined).T
    released = np.empty_like(xt)
    labels = np.empty(xt.shape, dtype=np.int64)
    fixed = fixed_labels(x.shape[0], k)
    for j in range(xt.shape[0]):
        released[j, order[j]] = values[j]
        labels[j, order[j]] = fixed
    return np.ascontiguousarray(released.T), np.ascontiguousarray(labels.T)


def ordered_release(
    x: NDArray[Any], order: NDArray[np.int64], k: int, aggr: str, trim: float
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The release of the fixed groups cut from ``order``, and each row's group."""
    released = np.empty_like(x, dtype=np.float64)
    released[order] = ordered_aggregates(x[order], k, aggr, trim)
    labels = np.empty(x.shape[0], dtype=np.int64)
    labels[order] = fixed_labels(x.shape[0], k)
    return released, labels


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
        order = clustered_order(x, method, rng)
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
