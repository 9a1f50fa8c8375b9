"""Information-loss measures of the EM4ADOM model (docs/formulas.md §2, "Utility").

Continuous attributes (x original, x' masked, n records, p attributes, S_j the
population standard deviation of original attribute j; in IL1 the sample one,
divisor n - 1, as sdcMicro's IL1s):

- ``ILh`` = SSE / SST with SSE = sum_i ||z_i - z'_i||^2 and
  SST = sum_i ||z_i - mean(z)||^2 on the standardized values z = (x - mean) / S.
- ``IL1`` = 1/(p n) * sum_j sum_i |x_ij - x'_ij| / (sqrt(2) S_j).
- ``IL2`` = ( mean_j |m_j - m'_j| / |m_j| + mean_j |v_jj - v'_jj| / |v_jj| ) / 2.
- ``IL3`` = ( mean_{i<=j} |v_ij - v'_ij| / |v_ij| + mean_{i<j} |r_ij - r'_ij| ) / 2.
- ``ILs`` = l1 IL1 + l2 IL2 + l3 IL3 and ``IL`` = (ILh + ILs) / 2.

Relative terms with a zero denominator (a zero mean or covariance in the
original, zero up to rounding) are undefined; they are left out of their
average and counted in the result; a half of IL2/IL3 with no defined term is
left out, and a measure with weight 0 is left out of ILs. A masked attribute
that became constant has no correlation: its r'_ij is taken as 0.

Categorical attributes:

- ``ZIL`` = sum over records of d(t, t'), d the per-attribute sum of 0/1
  (nominal) or the ordinal distance o_j (see
  :mod:`anonlab.encoding`); also reported per record and
  attribute in percent (``ZIL_percent``).
- ``ILR`` = |H - H'| / H * 100 with H = sum_j H_j, nominal
  H_j = -sum_i p_i log2 p_i, ordinal
  H_j = -sum_{i=1}^{L-1} [p_i log2 p_i + (1 - p_i) log2 (1 - p_i)] / (L - 1)
  with p_i = n_i / n the share of the i-th of the L domain values in order
  (the original's domain, also for the masked table), as docs/formulas.md §2 reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.encoding import CategoricalColumn, category_distance, column_scale

DEFAULT_LAMBDA = (1 / 3, 1 / 3, 1 / 3)


def il_h(z: NDArray[Any], z_masked: NDArray[Any]) -> float:
    """ILh = SSE / SST on standardized values (z, z' scaled by the original's mean and S)."""
    sse = float(np.sum((z - z_masked) ** 2))
    sst = float(np.sum((z - z.mean(axis=0)) ** 2))
    return sse / sst


def il_h_of(
    x: NDArray[Any], x_masked: NDArray[Any], columns: Sequence[str], what: str = "table"
) -> float:
    """ILh = SSE / SST of ``x_masked`` against ``x`` (both (n, p), any memory layout), column
    by column: SSE = sum_j sum_i ((x_ij - x'_ij) / S_j)^2 and SST = sum_j sum_i
    ((x_ij - mean_j) / S_j)^2, the mean and S_j (ddof=0) of each original column
    (:func:`anonlab.encoding.column_scale`, which refuses a constant column by name).

    The same measure as :func:`il_h` (``z - z'`` is ``(x - x') / S_j``), without its (n, p)
    temporaries: each column is one contiguous row of the transposed table, so its terms
    are taken and summed (NumPy's pairwise sum) while it is in cache. Its last bits may
    differ from :func:`il_h`'s, whose sums run in another order.
    """
    xt = np.ascontiguousarray(np.asarray(x, dtype=np.float64).T)
    mt = np.ascontiguousarray(np.asarray(x_masked, dtype=np.float64).T)
    mean, std = column_scale(xt.T, columns, what)
    sse = sst = 0.0
    term = np.empty(xt.shape[1], dtype=np.float64)
    for j in range(xt.shape[0]):
        np.subtract(xt[j], mt[j], out=term)
        term /= std[j]
        sse += float(np.sum(np.square(term, out=term)))
        np.subtract(xt[j], mean[j], out=term)
        term /= std[j]
        sst += float(np.sum(np.square(term, out=term)))
    return sse / sst


def il_1(x: NDArray[Any], x_masked: NDArray[Any], std: NDArray[Any] | None = None) -> float:
    """IL1: mean over records and attributes of |x - x'| / (sqrt(2) S_j).

    S_j is sdcMicro's (R's ``sd``, divisor n - 1) unless ``std`` is given, so
    that IL1 = sdcMicro's IL1s / (n p) as issue 3 states.
    """
    n, p = x.shape
    if std is None:
        std = x.std(axis=0, ddof=1)
    return float(np.sum(np.abs(x - x_masked) / (np.sqrt(2.0) * std)) / (n * p))


ROUNDING = 64 * float(np.finfo(np.float64).eps)  # per record summed into a mean or covariance


def _relative(a: NDArray[Any], b: NDArray[Any], scale: NDArray[Any], n: int) -> tuple[float, int]:
    """Mean of |a - b| / |a| over entries with a != 0, and how many were left out.

    "0" is up to the rounding of a sum over n records, ``tol = ROUNDING * n *
    scale`` (``scale`` the size of the entries' terms: max |x_j| for a mean,
    S_i S_j for a covariance): a centred column's mean of 1e-17 is 0, and a
    difference within ``tol`` is 0 (else a kept mean would give noise / noise).
    """
    tol = ROUNDING * max(n, 1) * scale
    ok = np.abs(a) > tol
    if not ok.any():
        return float("nan"), int(a.size)
    diff = np.abs(a - b)
    diff[diff <= tol] = 0.0
    return float(np.mean(diff[ok] / np.abs(a[ok]))), int(a.size - ok.sum())


def _mean_defined(*terms: float) -> float:
    """Mean of the terms that are defined (not NaN); NaN when none is."""
    defined = [t for t in terms if not np.isnan(t)]
    return float(np.mean(defined)) if defined else float("nan")


def covariance(x: NDArray[Any]) -> NDArray[Any]:
    """Population covariance matrix (ddof=0) of the columns of ``x``."""
    c = x - x.mean(axis=0)
    return np.asarray((c.T @ c) / x.shape[0])


def correlation(v: NDArray[Any]) -> NDArray[Any]:
    """Correlation matrix from a covariance matrix; 0 where a variance is 0."""
    s = np.sqrt(np.diag(v))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = v / np.outer(s, s)
    return np.where(np.outer(s, s) > 0, r, 0.0)


@dataclass(frozen=True)
class StatisticalLoss:
    """IL2, IL3 and how many undefined relative terms were left out."""

    il2: float
    il3: float
    excluded_terms: int


def il_2_3(x: NDArray[Any], x_masked: NDArray[Any]) -> StatisticalLoss:
    """IL2 (means and variances) and IL3 (covariances and correlations), docs/formulas.md §2.

    A half whose every term is undefined (e.g. the mean term of centred data)
    is left out: IL2 or IL3 is then the other half alone.
    """
    return il_2_3_moments(
        x.shape[0],
        x.mean(axis=0),
        covariance(x),
        x_masked.mean(axis=0),
        covariance(x_masked),
        np.abs(x).max(axis=0),
    )


def il_2_3_moments(
    n: int,
    mean: NDArray[Any],
    v: NDArray[Any],
    mean_masked: NDArray[Any],
    vm: NDArray[Any],
    absmax: NDArray[Any],
) -> StatisticalLoss:
    """IL2 and IL3 of :func:`il_2_3` from the tables' moments.

    ``mean``/``mean_masked`` are the column means, ``v``/``vm`` the
    population covariance matrices (ddof=0) and ``absmax`` the largest
    ``|x_j|`` of each original column (the scale of "0 up to rounding"):
    sums over records, so an engine may compute them piece by piece.
    """
    p = v.shape[0]
    s = np.sqrt(np.diag(v))
    mean_term, out1 = _relative(mean, mean_masked, absmax, n)
    var_term, out2 = _relative(np.diag(v), np.diag(vm), s * s, n)
    il2 = _mean_defined(mean_term, var_term)
    upper = np.triu_indices(p)
    cov_term, out3 = _relative(v[upper], vm[upper], np.outer(s, s)[upper], n)
    if p > 1:
        strict = np.triu_indices(p, 1)
        cor_term = float(np.mean(np.abs(correlation(v)[strict] - correlation(vm)[strict])))
        il3 = _mean_defined(cov_term, cor_term)
    else:
        il3 = cov_term  # one attribute: no correlation pair
    return StatisticalLoss(il2, il3, out1 + out2 + out3)


def il_s(lam: Sequence[float], il1: float, il2: float, il3: float) -> float:
    """ILs = l1 IL1 + l2 IL2 + l3 IL3; a measure with weight 0 is left out (even if undefined)."""
    return float(sum(w * v for w, v in zip(lam, (il1, il2, il3), strict=True) if w != 0))


def weights(values: Sequence[float], name: str, count: int) -> tuple[float, ...]:
    """Check a weight vector: ``count`` non-negative numbers adding up to 1."""
    from anonlab.errors import AnonlabError

    w = tuple(float(v) for v in values)
    if len(w) != count:
        raise AnonlabError(
            f"{name} needs {count} weights, got {len(w)}: e.g. "
            f"{','.join(['0.5'] * 2) if count == 2 else '0.5,0,0.5'}",
            parameter=name,
        )
    if any(not np.isfinite(v) or v < 0 for v in w):
        raise AnonlabError(f"{name} weights must be non-negative numbers, got {w}", parameter=name)
    if abs(sum(w) - 1.0) > 1e-9:
        raise AnonlabError(
            f"{name} weights must add up to 1, got {w} (sum {sum(w):g})", parameter=name
        )
    return w


def zil(original: Sequence[CategoricalColumn], masked: Sequence[CategoricalColumn]) -> float:
    """ZIL = sum over records and categorical attributes of d(c, c')."""
    total = 0.0
    for a, b in zip(original, masked, strict=True):
        total += float(np.sum(category_distance(a, a.codes, b.codes)))
    return total


def entropy(col: CategoricalColumn) -> float:
    """H_j of one attribute: Shannon (nominal) or the cumulative ordinal form (bits)."""
    return entropy_of_counts(np.bincount(col.codes, minlength=col.size), col.ordinal)


def entropy_of_counts(counts: NDArray[Any], ordinal: bool) -> float:
    """H_j from the records holding each domain value (``counts[c]``, code order)."""
    counts = np.asarray(counts).astype(np.float64)
    size = counts.size
    share = counts / counts.sum()
    if not ordinal:
        nz = share[share > 0]
        return float(-np.sum(nz * np.log2(nz)))
    if size < 2:
        return 0.0
    head = share[:-1]

    def plogp(q: NDArray[Any]) -> NDArray[Any]:
        out = np.zeros_like(q)
        ok = q > 0
        out[ok] = q[ok] * np.log2(q[ok])
        return out

    return float(-np.sum(plogp(head) + plogp(1 - head)) / (size - 1))


def ilr(original: Sequence[CategoricalColumn], masked: Sequence[CategoricalColumn]) -> float:
    """ILR = |H - H'| / H * 100 with H the sum of the attributes' entropies."""
    return ilr_of_entropies(sum(entropy(c) for c in original), sum(entropy(c) for c in masked))


def ilr_of_entropies(h: float, hm: float) -> float:
    """ILR from the summed entropies H of the original and H' of the masked table."""
    if h == 0:
        return 0.0 if hm == 0 else float("inf")
    return abs(h - hm) / h * 100.0
