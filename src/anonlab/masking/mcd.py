"""The minimum covariance determinant estimator for ``outdect`` (docs/masking.md, Noise).

The MCD of ``n`` records in ``p`` columns is the mean and covariance of the ``h`` records
whose covariance has the least determinant (Rousseeuw 1984), by default ``h = ceil(n / 2)``
(scikit-learn's ``MinCovDet(support_fraction=0.5)``, which anonlab used before; robustbase's
``covMcd(alpha = 1/2)``, which sdcMicro's ``outdect`` and ``microaggregation(method =
"rmd")`` call, takes ``(n + p + 1) // 2``, which rmd passes as ``h``).
:func:`fast_mcd` searches it as FastMCD does (Rousseeuw and Van Driessen 1999, "A fast
algorithm for the minimum covariance determinant estimator", Technometrics 41(3),
212-223), every start at once as whole-array steps:

1. :data:`STARTS` random subsets of ``p + 1`` records, each giving a mean and covariance;
2. two C-steps from each: the ``h`` records nearest (Mahalanobis) to the current mean and
   covariance give the next ones; a C-step never raises the determinant (the paper's
   Theorem 1). Beyond twice :data:`SUBSET` records these two steps run on :data:`SUBSET`
   records drawn at random, with the ``ceil(h SUBSET / n)`` nearest (the paper's nested
   extension for large ``n``, with one subset), and the kept starts take one C-step on
   all records before step 3;
3. the :data:`KEEP` starts of least determinant go on with C-steps, each until a step no
   longer lowers its determinant (at most :data:`MAX_STEPS`); the least wins (the raw
   MCD);
4. the raw covariance is made consistent at the normal (:func:`consistency` of the share
   ``h / n``), and the records with ``d^2 < chi2_{p, 0.975}`` give the reweighted mean and
   covariance (divisor the number of those records, times :func:`consistency` of 0.975),
   as scikit-learn's ``MinCovDet`` (1.9) does.

A covariance that is singular (tied values: the ``p + 1`` records of a start, or ``h`` of
them, on a hyperplane) gets a ridge of ``1e-10`` times the mean variance of the data on
its diagonal, so its distances stay finite and the next C-step moves on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray
from scipy import special

STARTS: Final = 20
"""Random starts of ``p + 1`` records (step 1)."""
KEEP: Final = 10
"""Starts of least determinant carried on to convergence (step 3)."""
MAX_STEPS: Final = 30
"""Most C-steps of a kept start."""
SUBSET: Final = 500
"""Records the starts' first two C-steps run on when there are more than twice as many
(step 2; below that the saving is small): the search on 2,000 records costs a quarter
to a third less, and its least log-determinant was within 1e-3 of the search without a
subset on ten samples (docs/benchmarks.md, issue 25 second pass)."""
_RIDGE: Final = 1e-10
_BLOCK: Final = 4096


@dataclass(frozen=True)
class Mcd:
    """The reweighted MCD: ``location``, ``covariance`` (divisor the records kept),
    ``support`` (the records kept by the reweighting) and ``precision`` (the inverse)."""

    location: NDArray[np.float64]
    covariance: NDArray[np.float64]
    support: NDArray[np.bool_]
    precision: NDArray[np.float64]

    def mahalanobis(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """Each record's squared Mahalanobis distance from the location (a block of
        records at a time: the temporary arrays stay small)."""
        out = np.empty(x.shape[0])
        for start in range(0, x.shape[0], _BLOCK):
            centred = x[start : start + _BLOCK] - self.location
            out[start : start + _BLOCK] = np.einsum("ij,ij->i", centred @ self.precision, centred)
        return out


def consistency(p: int, share: float) -> float:
    """The factor that makes the covariance of the share ``share`` of records nearest the
    centre consistent at the normal: ``share / P(chi2_{p+2} <= chi2_{p, share})`` (Croux
    and Haesbroeck 1999, eq. 4.2; Pison, Van Aelst and Willems 2002, section 3)."""
    return float(share / special.chdtr(p + 2, chi2_quantile(share, p)))


def chi2_quantile(q: float, p: int) -> float:
    """``chi2_{p, q}``, the ``q`` quantile of the chi-squared distribution with ``p``
    degrees of freedom: ``2 P^-1(p / 2, q)`` (``P`` the regularized lower incomplete gamma
    function), the special function ``scipy.stats.chi2.ppf`` evaluates, without its
    distribution machinery (a tenth of a millisecond a call)."""
    return float(2.0 * special.gammaincinv(p / 2.0, q))


def _ridge(cov: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    """``cov`` with ``_RIDGE * scale`` added to the diagonal of each matrix."""
    out = cov.copy()
    diagonal = np.arange(cov.shape[-1])
    out[..., diagonal, diagonal] += _RIDGE * scale
    return out


@dataclass(frozen=True)
class _Records:
    """The records less their columns' means (``centred``, ``n x p``) and each record's
    products ``c_a c_b``, ``a <= b`` (``products``, ``n x p(p + 1)/2``; ``upper`` the
    pairs ``(a, b)``): what a subset's moments and every record's distances are sums of.

    A subset's mean is ``w c / h`` and its covariance ``w P / h - mean mean^T`` (``w`` the
    subset's 0/1 row), and a record's squared distance from a mean ``m`` and precision
    ``Q`` is ``sum_{a<=b} (2 - [a = b]) Q_ab c_a c_b - 2 c^T Q m + m^T Q m``: products of
    the whole tables by the starts' small matrices (one matrix product for all starts)
    instead of the starts' records gathered and centred, each start apart.
    """

    centred: NDArray[np.float64]
    products: NDArray[np.float64]
    upper: tuple[NDArray[np.intp], NDArray[np.intp]]

    @classmethod
    def of(cls, x: NDArray[np.float64]) -> _Records:
        centred = x - x.mean(axis=0)
        upper = np.triu_indices(x.shape[1])
        products = centred[:, upper[0]] * centred[:, upper[1]]
        return cls(centred, products, (upper[0], upper[1]))

    def rows(self, rows: NDArray[np.intp]) -> _Records:
        """The records ``rows`` (their centring kept)."""
        return _Records(self.centred[rows], self.products[rows], self.upper)

    def moments(self, rows: NDArray[np.intp]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Mean and covariance (divisor the records) of the records ``rows`` (``k x h``),
        one pair a row of ``rows``."""
        weight = np.zeros((rows.shape[0], self.centred.shape[0]))
        np.put_along_axis(weight, rows, 1.0, axis=1)
        return self.weighted(weight, rows.shape[1])

    def weighted(
        self, weight: NDArray[np.float64], h: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """:meth:`moments` of the ``h`` records of each row of ``weight`` (``k x n``, 1
        for a record of the subset, else 0)."""
        k = weight.shape[0]
        p = self.centred.shape[1]
        mean = weight @ self.centred
        mean /= h
        second = weight @ self.products
        second /= h
        cov = np.empty((k, p, p))
        a, b = self.upper
        cov[:, a, b] = second
        cov[:, b, a] = second
        cov -= mean[:, :, None] * mean[:, None, :]
        return mean, cov

    def distances(
        self, mean: NDArray[np.float64], cov: NDArray[np.float64], scale: float
    ) -> NDArray[np.float64]:
        """Squared Mahalanobis distances of every record from each of ``k`` means and
        covariances (``k x p``, ``k x p x p``): ``k x n``."""
        precision = np.linalg.inv(_ridge(cov, scale))
        a, b = self.upper
        quadratic = precision[:, a, b] * np.where(a == b, 1.0, 2.0)
        linear = np.einsum("kpq,kq->kp", precision, mean)
        out: NDArray[np.float64] = quadratic @ self.products.T
        out -= 2.0 * (linear @ self.centred.T)
        out += np.einsum("kp,kp->k", mean, linear)[:, None]
        return out


def _c_step(
    records: _Records,
    mean: NDArray[np.float64],
    cov: NDArray[np.float64],
    h: int,
    scale: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One C-step from each mean and covariance: the ``h`` nearest records' moments.

    The records at or below each row's ``h``-th least distance (a partition of the
    distances, cheaper than of their positions) are the ``h`` nearest when they are
    ``h``; a row with a tie at that distance takes ``argpartition``'s ``h`` instead."""
    d2 = records.distances(mean, cov, scale)
    cut = np.partition(d2, h - 1, axis=1)[:, h - 1]
    near = d2 <= cut[:, None]
    weight = near.astype(np.float64)
    for row in np.flatnonzero(np.count_nonzero(near, axis=1) != h):
        weight[row] = 0.0
        weight[row, np.argpartition(d2[row], h - 1)[:h]] = 1.0
    return records.weighted(weight, h)


def _log_det(cov: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    sign, value = np.linalg.slogdet(_ridge(cov, scale))
    out: NDArray[np.float64] = np.where(sign > 0, value, -np.inf)
    return out


def fast_mcd(x: NDArray[np.float64], rng: np.random.Generator, *, h: int | None = None) -> Mcd:
    """The reweighted MCD of the records ``x`` (``n x p``, ``n > p + 1``; module text), its
    random starts drawn from ``rng``; ``h`` records in the raw MCD (default ``ceil(n / 2)``;
    robustbase's ``covMcd`` default is ``(n + p + 1) // 2``)."""
    n, p = x.shape
    if h is None:
        h = -(-n // 2)  # half of the records, rounded up
    if not p < h <= n:
        raise ValueError(f"h = {h} must be in {p + 1}..{n}")
    scale = max(float(np.mean(np.var(x, axis=0))), 1e-300)
    records = _Records.of(x)
    nested = n > 2 * SUBSET
    first = records.rows(rng.choice(n, SUBSET, replace=False)) if nested else records
    first_h = -(-h * SUBSET // n) if nested else h
    size = first.centred.shape[0]
    starts = np.argpartition(rng.random((STARTS, size)), p, axis=1)[:, : p + 1]
    mean, cov = first.moments(starts)
    for _ in range(2):
        mean, cov = _c_step(first, mean, cov, first_h, scale)
    best = np.argsort(_log_det(cov, scale), kind="stable")[:KEEP]
    mean, cov = mean[best], cov[best]
    if nested:  # the kept starts on all records
        mean, cov = _c_step(records, mean, cov, h, scale)
    det = _log_det(cov, scale)
    active = np.arange(len(best))  # the starts whose last C-step lowered the determinant
    for _ in range(MAX_STEPS):
        new_mean, new_cov = _c_step(records, mean[active], cov[active], h, scale)
        new_det = _log_det(new_cov, scale)
        lower = new_det < det[active]
        if not lower.any():
            break
        active = active[lower]
        mean[active], cov[active], det[active] = new_mean[lower], new_cov[lower], new_det[lower]
    winner = int(np.argmin(det))
    d2 = records.distances(mean[winner][None], cov[winner][None], scale)[0]
    d2 /= consistency(p, h / n)
    support = d2 < special.chdtri(p, 0.025)  # chi2_{p, 0.975}, as chi2.isf(0.025, p)
    if np.count_nonzero(support) <= p:  # degenerate: the raw MCD's records
        support = d2 <= np.partition(d2, h - 1)[h - 1]
    kept = x[support]
    location = kept.mean(axis=0)
    centred = kept - location
    covariance: NDArray[np.float64] = centred.T @ centred / kept.shape[0] * consistency(p, 0.975)
    precision = np.asarray(np.linalg.inv(_ridge(covariance, scale)), dtype=np.float64)
    return Mcd(location, covariance, np.asarray(support, dtype=bool), precision)
