"""Data shuffling of numeric columns: sdcMicro's ``shuffle`` (docs/masking.md, Shuffling).

Muralidhar and Sarathy (2006), "Data shuffling: a new masking approach for numerical data",
Management Science 52(5), as sdcMicro 5.8.1 implements it (``R/shuffle.R``). The
confidential columns (the *responses*, sdcMicro's formula's left side) are perturbed by a
model of them given the non-confidential columns (the *predictors*, the right side); the
perturbed values ``Y*`` only give an order: each response column's released values are its
original values sorted and handed out in the order of ``Y*`` (the *reverse mapping*:
record i gets the k-th smallest original value when its ``Y*`` is the k-th smallest, ties
in ``Y*`` by record order). So every released column is a permutation of the original
one and its marginal is kept exactly.

Methods (``Y*``):

- ``ds`` (sdcMicro's default; the normal-scores shuffling of Muralidhar and Sarathy): each
  column of ``[X, S]`` to normal scores ``z = Phi^-1((rank - 0.5) / n)`` (average ranks for
  ties); the rank correlations ``rho`` to product-moment ones ``2 sin(pi rho / 6)``
  (Pearson 1907; Kruskal 1958), giving ``P_XX, P_XS, P_SS``; then
  ``Y* = z_S (P_XS P_SS^-1)^T + e``, ``e ~ N(0, P_XX - P_XS P_SS^-1 P_SX)``: the conditional
  normal distribution of the responses' scores given the predictors' (GADP on the normal
  scores).
- ``mvn``: ``Y*`` from the general additive perturbation (GADP, Muralidhar, Parsa and
  Sarathy 1999, as sdcMicro's ``egadp``) of a sample drawn from the multivariate normal
  with the table's means and its rank (Spearman) covariance. The draw does not use the
  records, so the released responses keep (roughly) their joint rank correlations but no
  link to the records' predictors: a random permutation in effect.
- ``mlm``: ``Y*`` the fitted values of the multivariate linear regression of the responses
  on the predictors (with intercept). It draws no random number: the same table gives the
  same release.

``egadp`` (sdcMicro): ``Y* = F + R_V C_V^-1 C_R^-1``, where ``F`` and ``R`` are the fitted
values and residuals of the responses regressed on the predictors, ``V`` a draw from
``N(mean(X), C_s(X))``, ``R_V`` the residuals of ``V`` regressed on the predictors and the
responses, ``C_R``, ``C_V`` the rank covariances (covariance of the average ranks) of ``R``
and ``R_V``, and ``C_s(X)`` that of the responses. (GADP proper scales the residuals by
``C_V^-1/2 C_R^1/2``; anonlab follows sdcMicro so that its releases are distributed as
sdcMicro's.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import field_validator
from scipy import special

from anonlab.errors import AnonlabError
from anonlab.masking.registry import Masked, MaskingMethod, MethodParams
from anonlab.settings import split_names

ShuffleMethod = Literal["ds", "mvn", "mlm"]
SHUFFLE_METHODS: Final[tuple[str, ...]] = ("ds", "mvn", "mlm")
_DRAW_BLOCK: Final = 8192
"""Records a step of ``mvn``'s normal draws takes."""
_CROWDED: Final = 512
"""Records in one of :func:`_spread_order`'s buckets beyond which it checks the order."""
_NORMAL_COND: Final = 1e6
"""Largest condition number of the predictors' correlation matrix ``mvn``'s fits solve by
the normal equations (:func:`_fit_rows`)."""


def shuffle(
    responses: NDArray[np.float64],
    predictors: NDArray[np.float64],
    rng: np.random.Generator,
    *,
    method: str = "ds",
) -> NDArray[np.float64]:
    """The responses (``n x r``) shuffled given the predictors (``n x s``) by ``method``.

    Every released column is a permutation of the same response column (module docstring).
    """
    x = _matrix(responses, "responses")
    s = _matrix(predictors, "predictors")
    if method not in SHUFFLE_METHODS:
        raise AnonlabError(
            f"shuffle_method must be one of {', '.join(SHUFFLE_METHODS)} (got {method!r})",
            parameter="shuffle_method",
        )
    if x.shape[0] != s.shape[0]:
        raise AnonlabError("the responses and the predictors must have the same records")
    if x.shape[1] == 0 or s.shape[1] == 0:
        raise AnonlabError("shuffle needs at least one response and one predictor column")
    if x.shape[0] < 3:
        return x.copy()
    if method == "ds":
        ystar = normal_scores_draw(x, s, rng)
    elif method == "mvn":
        return _mvn_shuffle(x, s, rng)
    else:
        ystar = _regression(x, s)[0]
    return reverse_map(x, ystar)


def _matrix(values: NDArray[np.float64], what: str) -> NDArray[np.float64]:
    data = np.asarray(values, dtype=np.float64)
    if data.ndim == 1:
        data = data[:, None]
    if data.ndim != 2:
        raise AnonlabError(f"shuffle's {what} must be a table of columns")
    if not np.isfinite(data).all():
        raise AnonlabError(f"shuffle's {what} must have no missing or infinite values")
    return data


def _ascending(values: NDArray[np.float64]) -> NDArray[np.intp]:
    """The positions of ``values`` from the lowest to the highest, equal values in record
    order (a stable sort): an unstable sort (about twice as fast) when no two values are
    equal, which gives the same order, else the stable one."""
    order = np.argsort(values)
    ranked = values[order]
    if np.any(ranked[1:] == ranked[:-1]):
        return np.argsort(values, kind="stable")
    return order


def reverse_map(x: NDArray[np.float64], ystar: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each column of ``x`` sorted and handed out in the order of ``ystar``'s column: the
    record with the k-th smallest ``ystar`` (ties by record order) gets the k-th smallest
    value of ``x``. Column by column, each contiguous."""
    ordered = np.sort(np.ascontiguousarray(x.T), axis=1)
    return _hand_out(ordered, np.ascontiguousarray(ystar.T))


def _hand_out(
    ordered: NDArray[np.float64], ystar: NDArray[np.float64], *, spread: bool = False
) -> NDArray[np.float64]:
    """:func:`reverse_map` of the columns' sorted values ``ordered`` (one row a column) in
    the order of ``ystar`` (one row a column): an ``n x r`` table. ``spread``: the rows
    of ``ystar`` ordered by :func:`_spread_order`."""
    out = np.empty((ordered.shape[1], ordered.shape[0]))
    for j in range(ordered.shape[0]):
        order = _spread_order(ystar[j]) if spread else _ascending(ystar[j])
        out[order, j] = ordered[j]
    return out


def _spread_order(values: NDArray[np.float64]) -> NDArray[np.intp]:
    """The stable order of ``values`` (from the lowest, equal values in record order), as
    ``argsort(kind="stable")``, cheaper for values spread over their range.

    Each value's bucket, ``floor(65535 (v - min) / (max - min))``, never decreases with
    the value (each step is monotone); a stable radix sort of the 16-bit buckets leaves
    the values in order but within a bucket (a few records for draws of a smooth
    distribution), and a stable merge sort of that sequence, nearly in order, costs little
    (its runs are long). Equal values share a bucket, so they stay in record order. When
    a bucket holds more than :data:`_CROWDED` records and more than one pair in 32 is out
    of order after the first sort (values crowded into a small part of their range, as
    beside a far outlier), the values are sorted directly instead.
    """
    low, high = values.min(), values.max()
    width = float(high) - float(low)  # a Python float: inf, not a warning, on overflow
    if not (np.isfinite(width) and width > 0):
        order: NDArray[np.intp] = np.argsort(values, kind="stable")
        return order
    bucket = np.subtract(values, low)
    bucket *= 65535.0 / width
    ids = bucket.astype(np.uint16)
    first = np.argsort(ids, kind="stable")
    nearly = values[first]
    crowded = np.bincount(ids).max() > _CROWDED
    if crowded and np.count_nonzero(nearly[1:] < nearly[:-1]) > values.size // 32:
        order = np.argsort(values, kind="stable")
        return order
    second = np.argsort(nearly, kind="stable")
    out: NDArray[np.intp] = first[second]
    return out


def _ranks(data: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each column's average ranks (R's ``rank``, ``ties.method = "average"``): a tie's
    values share the mean of the ranks they span. Column by column, each contiguous; the
    ranks are exact (whole or half numbers), so the sort's stability does not matter."""
    columns = np.ascontiguousarray(data.T)
    n = columns.shape[1]
    out = np.empty(columns.shape, dtype=np.float64)
    for j, column in enumerate(columns):
        order = np.argsort(column)
        ordered = column[order]
        tie = ordered[1:] == ordered[:-1]
        if tie.any():
            start = np.flatnonzero(np.concatenate([[True], ~tie]))
            end = np.append(start[1:], n)
            out[j, order] = np.repeat((start + 1 + end) / 2.0, end - start)
        else:
            out[j, order] = np.arange(1, n + 1, dtype=np.float64)
    return np.ascontiguousarray(out.T)


def _correlation(data: NDArray[np.float64]) -> NDArray[np.float64]:
    """Pearson correlation of the columns; a constant column correlates 0 (1 with itself)."""
    centred = data - data.mean(axis=0)
    norms = np.sqrt(np.einsum("ij,ij->j", centred, centred))
    safe = np.where(norms > 0, norms, 1.0)
    unit = centred / safe
    corr: NDArray[np.float64] = unit.T @ unit
    np.fill_diagonal(corr, 1.0)
    return corr


def _mvnormal(
    rng: np.random.Generator, n: int, mean: NDArray[np.float64], cov: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``n`` draws of ``N(mean, cov)`` through ``cov``'s eigen decomposition (as
    MASS::mvrnorm), so a singular ``cov`` is allowed."""
    values, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    draws: NDArray[np.float64] = mean + rng.standard_normal((n, cov.shape[0])) @ root.T
    return draws


def normal_scores_draw(
    x: NDArray[np.float64], s: NDArray[np.float64], rng: np.random.Generator
) -> NDArray[np.float64]:
    """``Y*`` of method ``ds`` (module docstring)."""
    n, r = x.shape
    joint = np.hstack([x, s])
    ranks = _ranks(joint)
    scores = special.ndtri((ranks - 0.5) / n)
    pmc = 2.0 * np.sin(np.pi * _correlation(ranks) / 6.0)
    p_xs = pmc[:r, r:]
    p_ss = pmc[r:, r:]
    coef = np.linalg.lstsq(p_ss, p_xs.T, rcond=None)[0]  # P_SS^-1 P_SX
    conditional = pmc[:r, :r] - p_xs @ coef
    conditional = (conditional + conditional.T) / 2.0
    mean = scores[:, r:] @ coef
    draws: NDArray[np.float64] = mean + _mvnormal(rng, n, np.zeros(r), conditional)
    return draws


def _regression(
    y: NDArray[np.float64], s: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Fitted values and residuals of the least-squares regression of ``y`` on ``s`` with
    an intercept (R's ``lm``; a collinear predictor adds nothing, as ``lm``'s aliased
    coefficient)."""
    design = np.hstack([np.ones((s.shape[0], 1)), s])
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    fitted: NDArray[np.float64] = design @ coef
    return fitted, y - fitted


def _mvn_shuffle(
    x: NDArray[np.float64], s: NDArray[np.float64], rng: np.random.Generator
) -> NDArray[np.float64]:
    """:func:`shuffle` of method ``mvn``: :func:`_mvn_rows`'s ``Y*`` and the responses'
    sorted values (from the ranking of the table, not sorted again) to :func:`_hand_out`."""
    r = x.shape[1]
    rows = np.empty((r + s.shape[1], x.shape[0]))
    rows[:r] = x.T
    rows[r:] = s.T
    ystar, ordered = _mvn_rows(rows, r, rng)
    return _hand_out(ordered, ystar, spread=True)


def _mvn_rows(
    rows: NDArray[np.float64], r: int, rng: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``Y*`` of method ``mvn`` (one row a response) from the table ``rows`` (one row a
    column, the ``r`` responses first), and the responses' sorted values.

    sdcMicro's ``egadp`` steps (module docstring) on a draw of the multivariate normal,
    one row a column (contiguous rows for the rankings, no transposed copies; the
    step-by-step version on ``n x r`` tables is tests/test_mask_shuffle.py's reference
    ``mvn_draw``): the sample ``N(mean,
    C_s([X, S]))``; the fit of its responses ``X'`` on its predictors ``S'``; the draw
    ``V ~ N(mean(X'), C_s(X'))``; ``V``'s residuals on ``[S', X']``, which span what
    ``[S', R]`` spans (``R`` the first fit's residuals, orthogonal to ``S'``), so the
    second fit is of ``V`` on ``[S', R]``: the same residuals, a better conditioned
    system.
    """
    n = rows.shape[1]
    ranks, ordered = _centred_ranks(rows, r, spread=True)
    sample = _mvnormal_rows(rng, n, rows.mean(axis=1), _centred_cov(ranks))
    fitted, residuals = _fit_rows(sample[:r], sample[r:])
    c_r = _centred_cov(_centred_ranks(residuals, 0, spread=True)[0])
    c_x = _centred_cov(_centred_ranks(sample[:r], 0, spread=True)[0])
    v = _mvnormal_rows(rng, n, sample[:r].mean(axis=1), c_x)
    basis = np.empty((rows.shape[0], n))
    basis[:r] = residuals
    basis[r:] = sample[r:]
    v_residuals = _fit_rows(v, basis)[1]
    c_v = _centred_cov(_centred_ranks(v_residuals, 0, spread=True)[0])
    # Y* = F + R_V C_V^-1 C_R^-1, one row a response: F^T + (C_V^-1 C_R^-1)^T R_V^T
    scale = np.linalg.solve(c_v, np.linalg.inv(c_r))
    fitted += scale.T @ v_residuals
    return fitted, ordered


def _centred_ranks(
    rows: NDArray[np.float64], keep: int, *, spread: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each row's average ranks (R's ``rank``) less their mean ``(n + 1) / 2``, and the
    first ``keep`` rows' values sorted (read off the same ordering). The centred ranks
    are whole or half numbers, exact. ``spread``: the rows ordered by
    :func:`_spread_order`."""
    k, n = rows.shape
    out = np.empty((k, n))
    ordered = np.empty((keep, n))
    plain = np.arange(n, dtype=np.float64) - (n - 1) / 2.0  # ranks 1..n less (n + 1) / 2
    for j in range(k):
        order = _spread_order(rows[j]) if spread else np.argsort(rows[j])
        values = rows[j][order]
        tie = values[1:] == values[:-1]
        if tie.any():
            start = np.flatnonzero(np.concatenate([[True], ~tie]))
            end = np.append(start[1:], n)
            out[j, order] = np.repeat((start + 1 + end) / 2.0 - (n + 1) / 2.0, end - start)
        else:
            out[j, order] = plain
        if j < keep:
            ordered[j] = values
    return out, ordered


def _centred_cov(centred: NDArray[np.float64]) -> NDArray[np.float64]:
    """The covariance (divisor n - 1) of the rows ``centred`` (each of mean 0): R's
    ``cov(method = "spearman")`` of centred ranks."""
    cov: NDArray[np.float64] = centred @ centred.T
    cov *= 1.0 / (centred.shape[1] - 1)
    return cov


def _mvnormal_rows(
    rng: np.random.Generator, n: int, mean: NDArray[np.float64], cov: NDArray[np.float64]
) -> NDArray[np.float64]:
    """:func:`_mvnormal`'s draws (the same normals, in the same order) with one row a
    column: ``mean + root z^T``, a block of :data:`_DRAW_BLOCK` records at a time (the
    block's normals stay cached)."""
    values, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    k = cov.shape[0]
    out = np.empty((k, n))
    z = np.empty((min(n, _DRAW_BLOCK), k))
    for start in range(0, n, _DRAW_BLOCK):
        stop = min(n, start + _DRAW_BLOCK)
        block = z[: stop - start]
        rng.standard_normal(out=block)
        out[:, start:stop] = root @ block.T
    out += mean[:, None]
    return out


def _fit_rows(
    y: NDArray[np.float64], s: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`_regression` with one row a column: fitted values and residuals of each row
    of ``y`` regressed on the rows of ``s`` with an intercept.

    By the normal equations of the centred predictors scaled to unit length (their
    correlation matrix ``G``, solved once for all responses) when ``G``'s condition number
    is below :data:`_NORMAL_COND` (the fitted values then lose at most about ``cond(G)``
    times the rounding error); else (collinear or nearly collinear predictors, a constant
    one) by :func:`_regression`'s least squares.
    """
    y_mean = y.mean(axis=1)
    centred = s - s.mean(axis=1)[:, None]
    gram = centred @ centred.T
    length = np.sqrt(np.diag(gram))
    if np.all(length > 0):
        unit = gram / np.outer(length, length)
        eig = np.linalg.eigvalsh(unit)
        if eig[0] > eig[-1] / _NORMAL_COND:
            residuals = y - y_mean[:, None]
            cross = centred @ residuals.T
            coef = np.linalg.solve(unit, cross / length[:, None]) / length[:, None]
            fitted = coef.T @ centred
            residuals -= fitted
            fitted += y_mean[:, None]
            return fitted, residuals
    fit, residuals = _regression(y.T, s.T)
    return np.ascontiguousarray(fit.T), np.ascontiguousarray(residuals.T)


# ---------------------------------------------------------------------------
# The registered method (anonlab mask --method shuffle; docs/masking.md)
# ---------------------------------------------------------------------------


class ShuffleParams(MethodParams):
    """``shuffle_method`` (sdcMicro's ``method``: ``ds``, ``mvn``, ``mlm``) and
    ``predictors``: the non-confidential numeric columns (the right side of sdcMicro's
    formula; the masked columns are its left side), released as they are."""

    shuffle_method: ShuffleMethod = "ds"
    predictors: list[str]

    @field_validator("predictors", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return split_names(value) if isinstance(value, str | list | tuple) else value

    def read_columns(self) -> list[str]:
        return list(self.predictors)


def apply_shuffle(
    frame: pd.DataFrame, columns: Sequence[str], params: Any, seed: int | None
) -> Masked:
    """:func:`shuffle` of ``columns`` given the predictors, ``default_rng([seed, 0])``."""
    from anonlab.masking.noise import numeric_block, released_columns

    p: ShuffleParams = params
    if seed is None and p.shuffle_method != "mlm":
        raise AnonlabError("shuffle draws random numbers: give a seed", parameter="seed")
    absent = [c for c in p.predictors if c not in frame.columns]
    if absent:
        raise AnonlabError(
            f"predictors: unknown column {', '.join(absent)}", parameter="predictors"
        )
    both = [c for c in p.predictors if c in columns]
    if both:
        raise AnonlabError(
            f"predictors: {', '.join(both)} is masked too: a predictor is released as it is",
            parameter="predictors",
        )
    if not p.predictors:
        raise AnonlabError("predictors: name at least one column", parameter="predictors")
    x = numeric_block(frame, columns)
    s = numeric_block(frame, p.predictors)
    rng = np.random.default_rng([seed if seed is not None else 0, 0])
    y = shuffle(x, s, rng, method=p.shuffle_method)
    section = {
        "shuffle_method": p.shuffle_method,
        "predictors": list(p.predictors),
        "seed_layout": "default_rng([seed, 0])",
        "records_moved": {
            name: int(np.count_nonzero(y[:, j] != x[:, j])) for j, name in enumerate(columns)
        },
    }
    return Masked(released_columns(frame, columns, y), section)


METHOD = MaskingMethod(
    name="shuffle",
    sdcmicro="shuffle",
    params=ShuffleParams,
    apply=apply_shuffle,
    randomized=True,
    kind="numeric",
    summary="data shuffling (--shuffle-method ds|mvn|mlm) given --predictors",
)
