"""Noise addition to numeric columns: sdcMicro's ``addNoise`` methods (docs/masking.md, Noise).

Every function takes the columns as one float array ``x`` of shape ``(n, m)`` (records by
columns), an explicit :class:`numpy.random.Generator`, and returns the released columns as a
new array of the same shape; the input is never changed. Missing values (NaN) stay missing
and the moments are taken over the values present (sdcMicro's ``na.rm = TRUE``), except
where a method needs complete records (``correlated`` uses the complete records for the
covariance, as sdcMicro's ``cov(na.omit(x))``; ``romm`` and ``outdect`` refuse missing
values).

The methods and their parameters follow sdcMicro 5.8.1 (``R/addNoise.r``), with sdcMicro's
parameter names and meanings:

- ``additive``: ``x_j + e``, ``e ~ N(0, (noise/100 * sd_j)^2)`` independently per value
  (Brand 2002; Domingo-Ferrer, Sebe and Castella 2004).
- ``correlated``: ``x + e``, ``e ~ N_m(0, noise/100 * Cov(x))`` (Brand 2002; Kim 1986):
  here ``noise`` is a share of the *covariance*, so the noise SD of column j is
  ``sqrt(noise/100) * sd_j``; the release's covariance is ``(1 + noise/100) Cov(x)`` in
  expectation, so correlations are kept.
- ``correlated2``: ``sqrt(1 - delta^2) x_j + delta * e_j``,
  ``e_j ~ N((1 - sqrt(1 - delta^2)) / delta * mean_j, sd_j^2)`` (``delta``, default 0.1):
  means and variances kept in expectation, covariances scaled by ``1 - delta^2``.
- ``restr``: sdcMicro's restricted method is deterministic: ``c x_j + (1 - c) mean_j`` with
  ``c = sqrt((n - 1 - w) / ((n + 1)(1 + w)))`` for ``n < 500`` and
  ``c = sqrt((n - 1) / (n + n w - 1))`` otherwise, ``w = noise/100`` (the linear
  transformation of Kim 1986, without Kim's added noise term). It draws no random number:
  it shrinks every value towards its column's mean, keeps the ranks, and protects nothing
  on its own.
- ``romm``: random orthogonalized matrix masking (Ting, Fienberg and Trottini 2008):
  ``T x`` with ``T`` the Gram-Schmidt orthonormalization of ``I + p M``, ``M`` an ``n x n``
  matrix of standard normal numbers (``p``, default 0.001). ``T`` is orthogonal, so
  ``x^T x`` (every column's sum of squares and every pair's cross product) is kept exactly.
  sdcMicro builds the whole ``n x n`` matrix (80 GB at 100,000 records); anonlab does so up
  to :data:`ROMM_BLOCK` records and beyond that masks the records in random blocks of about
  :data:`ROMM_PIECE`, each with its own ``T`` and ``p`` scaled by ``sqrt((n - 1) / (b - 1))``
  so that a value's perturbation has sdcMicro's size (the first-order perturbation of record i is
  ``p sum_{j != i} ±m_ij x_j``, whose variance grows with the number of records mixed).
- ``outdect``: noise on outliers only: a record is an outlier when one of its values lies
  above its column's 99 % quantile, or when its robust Mahalanobis distance (minimum
  covariance determinant, half of the records: Rousseeuw and Van Driessen 1999;
  :mod:`anonlab.masking.mcd`) exceeds
  ``sqrt(chi2_{m, 0.975})`` (Templ and Meindl 2008); each outlier's value j gets
  ``N(0, (1.96 sd_j / sqrt(n) * noise/100)^2)``.

Additive noise by blocks (docs/masking.md, "Seeds" and "Engines"): ``additive`` draws
its normals per block of :data:`BLOCK_ROWS` records (:func:`additive_draws`) and takes
each column's SD from its blocks' moments (:func:`blocked_sd`), so an engine's pieces
release exactly what the whole table releases in memory.

sdcMicro's default ``noise = 150`` gives ``additive`` a noise SD of 1.5 times the column's:
the release's variance is 3.25 times the original's and every correlation shrinks to
about 0.31 of its value. anonlab's default is :data:`DEFAULT_NOISE` (50, a noise SD of half
the column's: variance 1.25 times, correlations 0.8 of their value, a value moved by 0.4 SD
on average); give ``noise=150`` for sdcMicro's release.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import field_validator

from anonlab.encoding import EXTREME_MAGNITUDE, extreme_magnitude, scale_exponent
from anonlab.errors import AnonlabError
from anonlab.masking.registry import Masked, MaskingMethod, MethodParams
from anonlab.masking.values import is_numeric, number_text, numbers_of
from anonlab.threads import blas_threads

NoiseMethod = Literal["additive", "correlated", "correlated2", "restr", "romm", "outdect"]
NOISE_METHODS: Final[tuple[str, ...]] = (
    "additive",
    "correlated",
    "correlated2",
    "restr",
    "romm",
    "outdect",
)
DEFAULT_NOISE: Final = 50.0
"""anonlab's default ``noise`` (sdcMicro's is 150): a noise SD of half the column's."""
SDCMICRO_NOISE: Final = 150.0
DEFAULT_DELTA: Final = 0.1
DEFAULT_P: Final = 0.001
ROMM_BLOCK: Final = 1024
"""Largest number of records ``romm`` masks with one orthogonal matrix (as sdcMicro)."""
MCD_ROWS: Final = 2000
"""Records ``outdect`` fits its robust covariance on (a random subset beyond that)."""
_ROW_BLOCK: Final = 8192
"""Records a step of ``outdect``'s, ``correlated``'s and ``correlated2``'s draws and
additions takes (a whole table's temporary arrays cost more in page faults than the
additions)."""
ROMM_PIECE: Final = 256
"""Records per block beyond :data:`ROMM_BLOCK`: the QR factors of one block cost ``b^3``."""


#: records per block of ``additive``'s draws and of its columns' moments (module text)
BLOCK_ROWS: Final = 1 << 16
#: the report's name of ``additive``'s seed layout
ADDITIVE_LAYOUT: Final = "default_rng([seed, 0, block]), 65536 records a block"


#: a block's moments: the count of its values present, their mean, and the sum of their
#: squared deviations as ``(m2 / 4**e, e)`` (:func:`block_moments`)
Moments = tuple[int, float, float, int]


def block_moments(values: NDArray[np.float64]) -> Moments:
    """Count, mean and sum of squared deviations of the values present (not NaN) of one
    block of a column, each by NumPy's pairwise sum over the contiguous values.

    The sum of squares is kept as ``(m2 / 4**e, e)``: ``e = 0`` for ordinary numbers; for
    a block of extreme magnitude (:func:`extreme_magnitude`: near 1e300, whose squares overflow, or
    near 1e-300, whose squares underflow) the figures are computed again on the values
    divided by ``2**e`` (``e`` :func:`_exponent`'s), which is exact.
    """
    present = np.ascontiguousarray(values[~np.isnan(values)])
    if present.size == 0:
        return 0, 0.0, 0.0, 0
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is computed again
        mean = float(present.mean())
        deviations = present - mean
        m2 = float(np.dot(deviations, deviations))
    if not extreme_magnitude(mean, math.sqrt(m2 / present.size) if m2 >= 0 else math.inf):
        return int(present.size), mean, m2, 0
    e = _exponent(present)
    scaled = np.ldexp(present, -e)
    mean = float(scaled.mean())
    deviations = scaled - mean
    return int(present.size), math.ldexp(mean, e), float(np.dot(deviations, deviations)), e


def combine_moments(a: Moments, b: Moments) -> Moments:
    """Two blocks' moments as one (Chan, Golub and LeVeque 1979, "Updating formulae and a
    pairwise algorithm for computing sample variances": ``M2 = M2_a + M2_b + delta^2 n_a
    n_b / n``), each term in the scale ``4**e`` of the larger of the two exponents."""
    if a[0] == 0:
        return b
    if b[0] == 0:
        return a
    n = a[0] + b[0]
    delta = b[1] - a[1]
    e = max(a[3], b[3])
    scaled = math.ldexp(delta, -e)
    m2 = math.ldexp(a[2], 2 * (a[3] - e)) + math.ldexp(b[2], 2 * (b[3] - e))
    return n, a[1] + delta * b[0] / n, m2 + scaled * scaled * a[0] * b[0] / n, e


def blocked_sd(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each column's sample SD (divisor n - 1, 0 below two values) over its values present,
    from the moments of its blocks of :data:`BLOCK_ROWS` records combined in order: the
    same figure however the records are cut into pieces (an engine's, which meets the
    same blocks: :mod:`anonlab.masking.pieces`)."""
    out = np.zeros(x.shape[1])
    for j in range(x.shape[1]):
        total: Moments = (0, 0.0, 0.0, 0)
        for start in range(0, x.shape[0], BLOCK_ROWS):
            total = combine_moments(total, block_moments(x[start : start + BLOCK_ROWS, j]))
        out[j] = sd_of(total)
    return out


def sd_of(moments: Moments) -> float:
    """The sample SD of combined moments (0 below two values)."""
    count, _, m2, e = moments
    return math.ldexp(math.sqrt(m2 / (count - 1)), e) if count > 1 else 0.0


def additive_draws(seed: int, columns: int, first_row: int, rows: int) -> NDArray[np.float64]:
    """``additive``'s standard normals of records ``first_row`` to ``first_row + rows - 1``
    (one row of ``columns`` numbers a record): the records of block ``b`` (of
    :data:`BLOCK_ROWS`) draw theirs in record order from ``default_rng([seed, 0, b])``, so
    a record's noise depends on its position alone; a run starting inside a block draws
    and drops the block's earlier records' numbers."""
    out = np.empty((rows, columns), dtype=np.float64)
    end = first_row + rows
    start = first_row
    while start < end:
        block = start // BLOCK_ROWS
        stop = min(end, (block + 1) * BLOCK_ROWS)
        generator = np.random.default_rng([seed, 0, block])
        skip = start - block * BLOCK_ROWS
        if skip:
            generator.standard_normal((skip, columns))
        out[start - first_row : stop - first_row] = generator.standard_normal(
            (stop - start, columns)
        )
        start = stop
    return out


def additive_rows(
    x: NDArray[np.float64], scale: NDArray[np.float64], seed: int, first_row: int
) -> NDArray[np.float64]:
    """``x`` (records ``first_row`` on) with ``additive``'s noise of SD ``scale`` per
    column: ``z * scale + x``, ``z`` :func:`additive_draws`."""
    out = additive_draws(seed, x.shape[1], first_row, x.shape[0])
    out *= scale
    out += x
    return out


def add_noise(
    x: NDArray[np.float64],
    rng: np.random.Generator,
    *,
    method: str = "additive",
    noise: float = DEFAULT_NOISE,
    delta: float = DEFAULT_DELTA,
    p: float = DEFAULT_P,
) -> NDArray[np.float64]:
    """The columns ``x`` (``n x m``) with noise added by ``method`` (module docstring).

    ``noise`` is sdcMicro's amount in percent (a share of each column's SD for ``additive``
    and ``outdect``, of the covariance for ``correlated``, the ``w`` of ``restr``);
    ``delta`` is ``correlated2``'s and ``p`` ``romm``'s parameter.
    """
    data = _as_matrix(x)
    _check_parameters(method, noise, delta, p, data.shape[1])
    if data.shape[0] == 0:
        return data.copy()
    if method == "additive":
        return additive(data, rng, noise=noise)
    if method == "correlated":
        return correlated(data, rng, noise=noise)
    if method == "correlated2":
        return correlated2(data, rng, delta=delta)
    if method == "restr":
        return restricted(data, noise=noise)
    if method == "romm":
        return romm(data, rng, p=p)
    return outdect(data, rng, noise=noise)


def _as_matrix(x: NDArray[np.float64]) -> NDArray[np.float64]:
    data = np.asarray(x, dtype=np.float64)
    if data.ndim == 1:
        data = data[:, None]
    if data.ndim != 2:
        raise AnonlabError(f"noise needs a table of columns (got an array of {data.ndim} axes)")
    return data


def _check_parameters(method: str, noise: float, delta: float, p: float, columns: int) -> None:
    if method not in NOISE_METHODS:
        raise AnonlabError(
            f"noise_method must be one of {', '.join(NOISE_METHODS)} (got {method!r})",
            parameter="noise_method",
        )
    if not np.isfinite(noise) or noise < 0:
        raise AnonlabError(f"noise must be a number >= 0 (got {noise})", parameter="noise")
    if method == "correlated2" and not 0 < delta < 1:
        raise AnonlabError(f"delta must lie in (0, 1) (got {delta})", parameter="delta")
    if method == "romm" and not (np.isfinite(p) and p >= 0):
        raise AnonlabError(f"p must be a number >= 0 (got {p})", parameter="p")
    if method == "correlated" and columns < 2:
        raise AnonlabError("noise method correlated needs at least 2 columns")


def _by_column(data: NDArray[np.float64]) -> NDArray[np.float64]:
    """``data`` as one contiguous row per column (a copy unless it is column-major).

    Every column moment is taken on these rows, so each column's sum is NumPy's pairwise
    sum of its values whatever the memory order of ``data`` (a row-major table reduced
    down its columns would be summed one record after the other: slower, and rounded
    differently from the same table column-major).
    """
    return np.ascontiguousarray(data.T)


def _column_sd(data: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each column's sample SD (divisor n - 1) over its values present (R's ``sd``)."""
    return _column_moments(data)[1]


def _column_mean(data: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each column's mean over its values present."""
    return _column_moments(data, sd=False)[0]


def _column_moments(
    data: NDArray[np.float64], columns: NDArray[np.float64] | None = None, *, sd: bool = True
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each column's mean and (with ``sd``) sample SD (divisor n - 1) over its values
    present, each column's values contiguous (:func:`_by_column`'s rows, which
    ``columns`` is when the caller has them; else one column copied at a time, so the
    temporary arrays are a column's, not the whole table's). A column of extreme
    magnitude (:func:`extreme_magnitude`: numbers near 1e300, whose squares overflow, or near
    1e-300, whose squares underflow) has them computed on its values scaled by a power
    of two (:func:`_scaled_moments`), which is exact: the figures every other column
    would get, never an infinite or a zero SD."""
    m = data.shape[1]
    mean = np.zeros(m)
    sds = np.zeros(m)
    for j in range(m):
        column = columns[j] if columns is not None else np.ascontiguousarray(data[:, j])
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is computed again
            if not np.isnan(column).any():  # the common case: no NaN-aware pass
                mean[j] = column.mean()
                if sd and column.size > 1:
                    sds[j] = column.std(ddof=1)
            else:
                count = int(np.count_nonzero(~np.isnan(column)))
                mean[j] = np.nanmean(column) if count else np.nan
                if sd and count > 1:
                    sds[j] = np.nanstd(column, ddof=1)
        if extreme_magnitude(float(mean[j]), float(sds[j])):
            mean[j], scaled = _scaled_moments(column)
            if sd:
                sds[j] = scaled
    return mean, sds


def _exponent(column: NDArray[np.float64]) -> int:
    """The power of two at or above the largest magnitude of the finite values of
    ``column`` (:func:`anonlab.encoding.scale_exponent`; 0 for none or all 0)."""
    finite = column[np.isfinite(column)]
    return scale_exponent(float(np.max(np.abs(finite)))) if finite.size else 0


def _scaled_moments(column: NDArray[np.float64]) -> tuple[float, float]:
    """Mean and sample SD (divisor n - 1) of the values present of ``column`` computed on
    ``column / 2**e`` (``2**e`` :func:`_exponent`'s, so the scaled values lie below 1 in
    magnitude) and scaled back: ``2**e`` times them, exactly (a power of two scales every
    sum, difference, square and root exactly); a column with an infinite value keeps
    its plain moments."""
    present = column[~np.isnan(column)]
    if not present.size:
        return float("nan"), 0.0
    if not np.isfinite(present).all():
        return float(present.mean()), float(present.std(ddof=1)) if present.size > 1 else 0.0
    e = _exponent(present)
    part = np.ldexp(present, -e)
    sd = float(np.ldexp(part.std(ddof=1), e)) if present.size > 1 else 0.0
    return float(np.ldexp(part.mean(), e)), sd


def additive(
    data: NDArray[np.float64], rng: np.random.Generator, *, noise: float
) -> NDArray[np.float64]:
    """``x_j + N(0, (noise/100 sd_j)^2)`` per value (sdcMicro ``addNoise_additive``)."""
    scale = noise / 100.0 * _column_sd(data)
    out: NDArray[np.float64] = rng.standard_normal(data.shape)
    out *= scale
    out += data
    return out


def correlated(
    data: NDArray[np.float64], rng: np.random.Generator, *, noise: float
) -> NDArray[np.float64]:
    """``x + N_m(0, noise/100 Cov(x))`` (sdcMicro ``addNoise_correlated``; Brand 2002).

    The covariance is that of the complete records (divisor n - 1); the normal vectors are
    drawn through a symmetric square root of it (eigen decomposition, as MASS::mvrnorm),
    so a singular covariance (a constant or collinear column) is allowed.
    """
    columns = _by_column(data)
    # a sum is NaN when a value is (or inf - inf): the exact check only then
    if not np.isfinite(columns.sum()) and np.isnan(columns).any():
        columns = columns[:, ~np.isnan(columns).any(axis=0)]
    if columns.shape[1] < 2:
        raise AnonlabError("noise method correlated needs at least 2 complete records")
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is computed again
        cov = np.cov(columns, ddof=1) * (noise / 100.0)
    exponents = _covariance_exponents(columns, cov)
    if exponents is not None:
        cov = np.cov(np.ldexp(columns, -exponents[:, None]), ddof=1) * (noise / 100.0)
    root_t = np.ascontiguousarray(_psd_root(cov).T)
    # z @ root.T + x a block of records at a time: the normals drawn in record order (the
    # same numbers as one draw of them all), the temporary arrays a block's
    n, m = data.shape
    out: NDArray[np.float64] = np.empty(data.shape)
    draws = np.empty((min(n, _ROW_BLOCK), m))
    for start in range(0, n, _ROW_BLOCK):
        stop = min(n, start + _ROW_BLOCK)
        block = draws[: stop - start]
        rng.standard_normal(out=block)
        np.matmul(block, root_t, out=out[start:stop])
        if exponents is not None:
            np.ldexp(out[start:stop], exponents, out=out[start:stop])
        out[start:stop] += data[start:stop]
    return out


def _covariance_exponents(
    columns: NDArray[np.float64], cov: NDArray[np.float64]
) -> NDArray[np.int64] | None:
    """``None`` when the covariance of ``columns`` (one row a column) is that of ordinary
    numbers, else each column's power of two (:func:`_exponent`, 0 for an ordinary
    column) to divide it by before the covariance is computed again.

    With ``D = diag(2**e)``, the noise ``D z`` for ``z ~ N(0, D^-1 C D^-1)`` is
    ``N(0, C)``: the same distribution, without the squares of numbers near 1e300
    overflowing or of numbers near 1e-300 underflowing (:func:`extreme_magnitude`).
    """
    variances = np.diag(cov)
    limit = EXTREME_MAGNITUDE * EXTREME_MAGNITUDE
    if np.isfinite(cov).all() and bool(np.all((variances > 1.0 / limit) & (variances < limit))):
        return None
    mean, sd = _column_moments(columns.T, columns)
    exponents = [
        _exponent(column) if extreme_magnitude(float(mu), float(s)) else 0
        for column, mu, s in zip(columns, mean, sd, strict=True)
    ]
    return np.asarray(exponents, dtype=np.int64) if any(exponents) else None


def _psd_root(cov: NDArray[np.float64]) -> NDArray[np.float64]:
    """``V diag(sqrt(max(l, 0)))`` from ``cov = V diag(l) V^T``: ``root @ root.T == cov``."""
    values, vectors = np.linalg.eigh(cov)
    tolerance = -1e-6 * max(abs(float(values[-1])), 1e-300)
    if values[0] < tolerance:
        raise AnonlabError("the covariance of the columns is not positive semi-definite")
    root: NDArray[np.float64] = vectors * np.sqrt(np.clip(values, 0.0, None))
    return root


def correlated2(
    data: NDArray[np.float64], rng: np.random.Generator, *, delta: float
) -> NDArray[np.float64]:
    """``d x_j + delta N((1 - d)/delta mean_j, sd_j^2)``, ``d = sqrt(1 - delta^2)``.

    sdcMicro ``addNoise_correlated2`` (Brand 2002, method "correlated noise 2"): the expected
    mean is ``mean_j`` and the expected variance ``sd_j^2``.
    """
    d1 = np.sqrt(1.0 - delta**2)
    mean, sd = _column_moments(data)
    shift = (1.0 - d1) * mean
    n, m = data.shape
    out: NDArray[np.float64] = np.empty(data.shape)
    kept = np.empty((min(n, _ROW_BLOCK), m))
    # delta * (z sd + (1 - d1)/delta mean) + d1 x, a block of records at a time (the
    # normals in record order: the same numbers as one draw of them all)
    for start in range(0, n, _ROW_BLOCK):
        stop = min(n, start + _ROW_BLOCK)
        block = out[start:stop]
        rng.standard_normal(out=block)
        block *= delta * sd
        part = kept[: stop - start]
        np.multiply(data[start:stop], d1, out=part)
        part += shift
        block += part
    return out


def restricted(data: NDArray[np.float64], *, noise: float) -> NDArray[np.float64]:
    """sdcMicro's ``restr``: ``c x_j + (1 - c) mean_j`` (module docstring; no randomness)."""
    n = data.shape[0]
    w = noise / 100.0
    if n < 500:
        c = np.sqrt((n - 1 - w) / ((n + 1) * (1 + w)))
    else:
        c = np.sqrt((n - 1) / (n + n * w - 1))
    out: NDArray[np.float64] = data * c
    out += (1.0 - c) * _column_mean(data)
    return out


def restricted_factor(n: int, noise: float) -> float:
    """The shrinkage factor ``c`` of ``restr`` for ``n`` records (module docstring)."""
    w = noise / 100.0
    if n < 500:
        return float(np.sqrt((n - 1 - w) / ((n + 1) * (1 + w))))
    return float(np.sqrt((n - 1) / (n + n * w - 1)))


def _orthonormal(n: int, p: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Gram-Schmidt orthonormalization of ``I + p M``: the Q of its QR factors with a
    positive diagonal of R (classical Gram-Schmidt, sdcMicro's ``orthonormalization``)."""
    matrix = np.eye(n) + p * rng.standard_normal((n, n))
    q, r = np.linalg.qr(matrix)
    signs = np.sign(np.diag(r))
    signs[signs == 0] = 1.0
    out: NDArray[np.float64] = q * signs
    return out


def romm(data: NDArray[np.float64], rng: np.random.Generator, *, p: float) -> NDArray[np.float64]:
    """Random orthogonalized matrix masking ``T x`` (module docstring; Ting et al. 2008)."""
    if np.isnan(data).any():
        raise AnonlabError("noise method romm needs columns without missing values")
    n = data.shape[0]
    with blas_threads(1):  # small QR factors: one thread is several times faster
        if n <= ROMM_BLOCK:
            return _orthonormal(n, p, rng) @ data
        order = rng.permutation(n)
        out = np.empty_like(data)
        for rows in np.array_split(order, -(-n // ROMM_PIECE)):
            size = rows.size
            scaled = p * np.sqrt((n - 1) / max(size - 1, 1))
            out[rows] = _orthonormal(size, scaled, rng) @ data[rows]
    return out


def quantile_linear(values: NDArray[np.float64], q: float) -> float:
    """``numpy.quantile(values, q)`` (the linear method, R's type 7) of a column without
    missing values, found without ordering the whole column when ``q`` is high.

    The value at index ``i = (n - 1) q`` of the ordered values, moved by ``g = i -
    floor(i)`` towards the next: NumPy's ``a + (b - a) g``, or ``b - (b - a) (1 - g)`` for
    ``g >= 0.5``. The two order statistics come from the values above a threshold read
    off every 64th value (a cheap lower bound, checked: when fewer values lie above it
    than needed, the whole column is partitioned).
    """
    n = values.size
    index = (n - 1) * q
    low = int(np.floor(index))
    high = min(low + 1, n - 1)
    needed = n - low  # values at or above the order statistic ``low``
    candidates = values
    if needed * 8 < n:
        sample = values[::64]
        rank = max(sample.size - 2 * (needed // 64) - 16, 0)
        threshold = np.partition(sample, rank)[rank]
        above = values[values >= threshold]
        if above.size >= needed:
            candidates = above
    shift = n - candidates.size
    ordered = np.partition(candidates, [low - shift, high - shift])
    a, b = ordered[low - shift], ordered[high - shift]
    gamma = index - low
    if gamma >= 0.5:
        return float(b - (b - a) * (1 - gamma))
    return float(a + (b - a) * gamma)


def outliers(data: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.bool_]:
    """The records ``outdect`` perturbs: a value above its column's 99 % quantile (R's type 7
    quantile) or a robust Mahalanobis distance above ``sqrt(chi2_{m, 0.975})``.

    The distance uses the minimum covariance determinant (half of the records, reweighted:
    Rousseeuw and Van Driessen 1999), the estimator of robustbase's ``covMcd(alpha = 1/2)``
    that sdcMicro calls, searched by :func:`anonlab.masking.mcd.fast_mcd` (FastMCD with
    every start at once) with its random starts drawn from ``default_rng(s)``, ``s`` the
    first number drawn from ``rng``. Beyond :data:`MCD_ROWS` records the estimator is fitted
    on that many records drawn at random by the same generator (the search's cost grows
    with the records; the estimate of a centre and scatter from 2,000 records is as
    robust, its sampling error small).
    """
    return _outliers(data, _by_column(data), rng)


def _outliers(
    data: NDArray[np.float64],
    columns: NDArray[np.float64],
    rng: np.random.Generator,
    moments: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
) -> NDArray[np.bool_]:
    """:func:`outliers` (``columns`` :func:`_by_column`'s rows, ``moments`` the columns'
    :func:`_column_moments` when the caller has them). A column of extreme magnitude
    (:func:`extreme_magnitude`) enters the MCD and the distances scaled by a power of two (exact,
    and the distances do not change with a column's scale), so numbers near 1e300 or
    1e-300 neither overflow nor underflow in its covariances."""
    from anonlab.masking.mcd import chi2_quantile, consistency, fast_mcd

    n, m = data.shape
    flagged = np.zeros(n, dtype=bool)
    for column in columns:  # a value above its column's 99 % quantile
        flagged |= column > quantile_linear(column, 0.99)
    seed = int(rng.integers(0, 2**31 - 1))  # drawn always: the noise's draws come after it
    if -(-n // 2) <= m:  # half of the records span no full-rank covariance: no MCD
        return flagged
    mean, sd = _column_moments(data, columns) if moments is None else moments
    exponents = np.asarray(
        [_exponent(columns[j]) if extreme_magnitude(mean[j], sd[j]) else 0 for j in range(m)]
    )
    if exponents.any():
        data = np.ldexp(data, -exponents)
    search = np.random.default_rng(seed)
    fit = data
    if n > MCD_ROWS:  # the estimate from a random subset: the search's cost grows with n
        fit = data[search.choice(n, MCD_ROWS, replace=False)]
    mcd = fast_mcd(fit, search)
    limit = chi2_quantile(0.975, m)
    # robustbase scales the reweighted covariance to be consistent at the normal for the
    # share of records kept (Croux and Haesbroeck 1999): the distances are divided by it
    factor = consistency(m, float(np.mean(mcd.support)))
    far: NDArray[np.bool_] = np.asarray(mcd.mahalanobis(data) / factor > limit)
    return flagged | far


def outdect(
    data: NDArray[np.float64], rng: np.random.Generator, *, noise: float
) -> NDArray[np.float64]:
    """Noise ``N(0, (1.96 sd_j / sqrt(n) noise/100)^2)`` on the outliers only (sdcMicro
    ``addNoise_outdect``; Templ and Meindl 2008); :func:`outliers` names them."""
    # a sum is NaN when a value is (or inf - inf): the exact check only then
    with np.errstate(over="ignore", invalid="ignore"):
        total = data.sum()
    if not np.isfinite(total) and np.isnan(data).any():
        raise AnonlabError("noise method outdect needs columns without missing values")
    n = data.shape[0]
    columns = _by_column(data)
    moments = _column_moments(data, columns)
    rows = np.flatnonzero(_outliers(data, columns, rng, moments))
    scale = 1.96 * moments[1] / np.sqrt(n) * (noise / 100.0)
    out = data.copy()
    # the outliers' normals in record order, a block at a time (the same numbers as one
    # draw of them all: the generator fills values in turn), added while they are cached
    draws = np.empty((min(rows.size, _ROW_BLOCK), data.shape[1]))
    for start in range(0, rows.size, _ROW_BLOCK):
        block = rows[start : start + _ROW_BLOCK]
        noise_block = draws[: block.size]
        rng.standard_normal(out=noise_block)
        noise_block *= scale
        out[block] += noise_block
    return out


# ---------------------------------------------------------------------------
# The registered method (anonlab mask --method noise; docs/masking.md, Noise)
# ---------------------------------------------------------------------------


class NoiseParams(MethodParams):
    """``noise`` (percent, anonlab default 50), ``noise_method`` (sdcMicro's ``method``;
    ``ROMM`` may be spelled so), ``delta`` (``correlated2``), ``p`` (``romm``)."""

    noise: float = DEFAULT_NOISE
    noise_method: NoiseMethod = "additive"
    delta: float = DEFAULT_DELTA
    p: float = DEFAULT_P

    @field_validator("noise_method", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value


def numeric_block(frame: pd.DataFrame, columns: Sequence[str]) -> NDArray[np.float64]:
    """The ``columns`` of ``frame`` as one ``n x m`` float array (NaN where missing)."""
    block = np.empty((len(frame), len(columns)), dtype=np.float64)
    for j, name in enumerate(columns):
        block[:, j] = numbers_of(frame[name], name)[0]
    return block


def released_columns(
    frame: pd.DataFrame, columns: Sequence[str], block: NDArray[np.float64]
) -> dict[str, pd.Series]:
    """Released columns from ``block``: numbers where the frame held numbers, else text
    (:func:`~anonlab.masking.values.number_text`; a missing value ``""``)."""
    out: dict[str, pd.Series] = {}
    for j, name in enumerate(columns):
        values = block[:, j]
        if is_numeric(frame[name]):
            out[name] = pd.Series(values, index=frame.index, name=name)
        else:
            texts = np.asarray(
                ["" if np.isnan(v) else number_text(float(v)) for v in values], dtype=object
            )
            out[name] = pd.Series(texts, index=frame.index, name=name, dtype=object)
    return out


def noise_rng(seed: int) -> np.random.Generator:
    """The generator of a noise release: ``default_rng([seed, 0])`` (docs/masking.md)."""
    return np.random.default_rng([seed, 0])


def _noise_sd(values: NDArray[np.float64]) -> float:
    """The SD (divisor n - 1) of a column's noise over its values present (``nanstd``); a
    noise of extreme magnitude (:func:`extreme_magnitude`) by :func:`_scaled_moments`."""
    with np.errstate(over="ignore", invalid="ignore"):
        sd = float(np.nanstd(values, ddof=1))
        mean = float(np.nanmean(values)) if np.isfinite(sd) else float("inf")
    if extreme_magnitude(mean, sd) and np.count_nonzero(~np.isnan(values)) > 1:
        return _scaled_moments(values)[1]
    return sd


def apply_noise(
    frame: pd.DataFrame, columns: Sequence[str], params: Any, seed: int | None
) -> Masked:
    """:func:`add_noise` on ``columns``; every method but ``restr`` needs ``seed``."""
    p: NoiseParams = params
    if seed is None and p.noise_method != "restr":
        raise AnonlabError("noise draws random numbers: give a seed", parameter="seed")
    x = numeric_block(frame, columns)
    if p.noise_method == "additive":  # by blocks of records (module text of pieces.py)
        _check_parameters(p.noise_method, p.noise, p.delta, p.p, len(columns))
        sd = blocked_sd(x)
        y = additive_rows(x, p.noise / 100.0 * sd, seed if seed is not None else 0, 0)
        noise_sd = blocked_sd(y - x)
        layout = ADDITIVE_LAYOUT
    else:
        rng = noise_rng(seed if seed is not None else 0)
        y = add_noise(x, rng, method=p.noise_method, noise=p.noise, delta=p.delta, p=p.p)
        sd = _column_sd(x) if len(x) else np.zeros(len(columns))
        noise_sd = np.asarray(
            [_noise_sd(y[:, j] - x[:, j]) if len(x) > 1 else 0.0 for j in range(len(columns))]
        )
        layout = "default_rng([seed, 0])"
    changed = ~np.isclose(y, x, rtol=0.0, atol=0.0) & ~np.isnan(x)
    section: dict[str, Any] = {
        "noise_method": p.noise_method,
        "seed_layout": layout,
        "records_changed": int(changed.any(axis=1).sum()),
        "columns": {
            name: {
                "sd": float(sd[j]),
                "noise_sd": float(noise_sd[j]),
                "changed": int(changed[:, j].sum()),
            }
            for j, name in enumerate(columns)
        },
    }
    if p.noise_method == "restr":
        section["restr_factor"] = restricted_factor(len(x), p.noise)
    if p.noise_method == "romm":
        section["romm_blocks"] = 1 if len(x) <= ROMM_BLOCK else -(-len(x) // ROMM_PIECE)
    return Masked(released_columns(frame, columns, y), section)


METHOD = MaskingMethod(
    name="noise",
    sdcmicro="addNoise",
    params=NoiseParams,
    apply=apply_noise,
    randomized=True,
    kind="numeric",
    summary="noise addition (--noise-method additive|correlated|correlated2|restr|romm|outdect)",
)
