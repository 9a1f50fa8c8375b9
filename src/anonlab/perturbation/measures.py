"""Privacy measures of an orthogonal transform (docs/formulas.md §4, the OBT paper eqs. 4-6, 18-19).

Records are rows: ``X`` is ``N x n`` and a transform ``A`` maps a record ``x``
to ``A x`` (so the released table is ``X @ A.T``).

* Distance privacy ``S(A, X) = Var(X - X') / Var(X)`` where the variance of a
  point set is the mean squared distance of its points to their centroid
  (eqs. 3-4). ``X'`` may also carry a translation and noise (geometric
  perturbation); the translation does not change ``S``.
* Its data-independent form ``S(A) = tr((E - A)^T (E - A)) / n`` (eq. 18). The
  two agree exactly in two cases: for every 2 x 2 rotation and any data, since
  then ``(E - A)^T (E - A) = (2 - 2 cos t) E``; and for every ``A`` on whitened
  data (centred, covariance exactly ``E``), since ``Var((E - A) X) =
  tr((E - A)^T (E - A) Cov X)`` and ``Var(X) = tr(Cov X)``. For standardized
  independent attributes they agree in probability as ``N`` grows (the
  paper's theorem).
* Direction privacy ``R(A) = prod_i (1 - 1 / v_i^2)`` with ``v_i = sum_j |a_ij|``
  (eq. 5); it is 0 as soon as one row is a signed unit vector, so over a whole
  block-diagonal matrix it collapses towards 0: report it per block.
* ``P(A, X) = R(A) * S(A, X)`` (eq. 6) and ``P(A) = R(A) * S(A)`` (eq. 19).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def point_set_variance(points: FloatArray) -> float:
    """Mean squared distance of the rows of ``points`` to their centroid (eq. 3)."""
    centred = points - points.mean(axis=0)
    return float(np.einsum("ij,ij->", centred, centred) / points.shape[0])


def distance_privacy(original: FloatArray, released: FloatArray) -> float:
    """``S = Var(X - X') / Var(X)`` on two aligned ``N x n`` tables (eq. 4)."""
    base = point_set_variance(original)
    if base == 0.0:
        return 0.0
    return point_set_variance(original - released) / base


def trace_privacy(matrix: FloatArray) -> float | Any:
    """Data-independent ``S(A) = tr((E - A)^T (E - A)) / n`` (eq. 18).

    Accepts one ``n x n`` matrix or a stack ``k x n x n`` (then returns an array).
    """
    a = np.asarray(matrix, dtype=np.float64)
    n = a.shape[-1]
    diff = np.eye(n) - a
    value = np.einsum("...ij,...ij->...", diff, diff) / n
    return float(value) if np.ndim(value) == 0 else value


def direction_privacy(matrix: FloatArray) -> float | Any:
    """``R(A) = prod_i (1 - 1/v_i^2)``, ``v_i = sum_j |a_ij|`` (eq. 5); stacks allowed."""
    a = np.asarray(matrix, dtype=np.float64)
    v = np.abs(a).sum(axis=-1)
    with np.errstate(divide="ignore"):
        factors = np.where(v > 0, 1.0 - 1.0 / np.square(v), 0.0)
    value = np.prod(factors, axis=-1)
    return float(value) if np.ndim(value) == 0 else value


def privacy_level(matrix: FloatArray) -> float | Any:
    """Data-independent ``P(A) = R(A) * S(A)`` (eq. 19); stacks allowed."""
    return direction_privacy(matrix) * trace_privacy(matrix)


def measure_block(
    matrix: FloatArray, original: FloatArray, released: FloatArray
) -> dict[str, float]:
    """``S``, ``S_trace``, ``R``, ``P = R x S`` and ``P_trace = R x S_trace`` of one block."""
    return block_measures(matrix, distance_privacy(original, released))


def block_measures(matrix: FloatArray, s: float) -> dict[str, float]:
    """The measures of a block whose distance privacy ``S`` is already known."""
    s_trace = float(trace_privacy(matrix))
    r = float(direction_privacy(matrix))
    return {"S": s, "S_trace": s_trace, "R": r, "P": r * s, "P_trace": r * s_trace}


def column_variances(original: FloatArray, released: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per column ``j``: ``Var(x_j)`` and ``Var(x_j - x'_j)`` (population, two-pass).

    The variance of a point set is the sum of its columns' variances, so the
    ``S`` of any group of columns is ``sum Var(x_j - x'_j) / sum Var(x_j)``
    over the group: one pass over the table gives every block's ``S`` and the
    overall one, with no copy of a block's columns.
    """
    d = original.shape[1]
    var_x = np.empty(d)
    var_diff = np.empty(d)
    for j in range(d):
        x = original[:, j] - original[:, j].mean()
        var_x[j] = x @ x
        diff = original[:, j] - released[:, j]
        diff -= diff.mean()
        var_diff[j] = diff @ diff
    n = original.shape[0]
    return var_x / n, var_diff / n


def grouped_privacy(var_x: FloatArray, var_diff: FloatArray, columns: Sequence[int]) -> float:
    """``S`` of the columns ``columns`` from :func:`column_variances` (0 when constant)."""
    idx = list(columns)
    base = float(np.sum(var_x[idx]))
    return 0.0 if base == 0.0 else float(np.sum(var_diff[idx])) / base
