"""ARX's entropy-based information loss (``MetricSDNMEntropyBasedInformationLoss``).

Each record costs a number from 0 to 1: how much of the information needed
to single out its quasi-identifier tuple the release hides, measured in
log10 units. With ``s_i`` the domain share of the record's group in
attribute ``i`` (the share of the hierarchy's leaf values under the group's
label) and ``D_i`` the hierarchy's rows, a record costs
``log10(prod_i s_i) / log10(prod_i D_i) + 1``: 0 when every value is kept
(``s_i = 1 / D_i``), 1 when every value is generalized to the top
(``s_i = 1``). Released records count ``G`` times their cost, suppressed ones
``S`` each (the factors of the generalization/suppression factor ``gs``).
See docs/formulas.md §5.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.lattice.freqset import FrequencySet
from anonlab.lattice.metrics.base import _LONG_DOUBLE_OK, Metric, NodeClasses, sequential_sum
from anonlab.lattice.metrics.order import arx_class_order

_LN_CONTEXT = Context(prec=40)
#: ``ln(10)`` to 40 digits (for the correctly rounded log10)
_LN10 = Decimal(10).ln(_LN_CONTEXT)
#: a relative margin under the bound: its sum runs over other classes than a node's value
_BOUND_MARGIN = 1e-9


def _decimal_log10(x: float) -> float:
    """Correctly rounded base-10 logarithm through 40-digit decimals."""
    if not math.isfinite(x) or x <= 0.0:
        return math.log10(x) if x > 0.0 else (-math.inf if x == 0.0 else math.nan)
    return float(_LN_CONTEXT.divide(Decimal(x).ln(_LN_CONTEXT), _LN10))


def java_log10_array(x: NDArray[Any]) -> NDArray[Any]:
    """``Math.log10`` element-wise: the correctly rounded base-10 logarithm.

    As :func:`~anonlab.lattice.metrics.base.java_log_array`: long double, then
    a decimal recomputation for results too close to a rounding midpoint (and
    for all on platforms without an extended long double).
    """
    x = np.asarray(x, dtype=np.float64)
    if not _LONG_DOUBLE_OK:
        return np.fromiter((_decimal_log10(float(v)) for v in x.reshape(-1)),
                           dtype=np.float64, count=x.size).reshape(x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        wide = np.log10(x.astype(np.longdouble))
    out = wide.astype(np.float64)
    finite = np.isfinite(out) & (out != 0.0)
    gap = np.abs(wide - out.astype(np.longdouble))
    ulp = np.spacing(np.abs(out)).astype(np.longdouble)
    risky = finite & (np.abs(gap - ulp / 2) < ulp * np.longdouble(2.0 ** -8))
    flat = out.reshape(-1)
    for i in np.flatnonzero(risky.reshape(-1)):
        flat[i] = _decimal_log10(float(x.reshape(-1)[i]))
    return out


class EntropyInformationLoss(Metric):
    """ARX's entropy-based information loss (``MetricSDNMEntropyBasedInformationLoss``).

    ``sum_E (G |E| IL(E) if E is released, else S |E|)`` over the classes in
    ARX's order (:func:`~anonlab.lattice.metrics.order.arx_class_order`), with
    ``IL(E) = log10(prod_i s_i) / maxIL + 1`` clamped to [0, 1] and
    ``maxIL = log10(prod_i D_i)`` (``getEntropyBasedInformationLoss`` and
    ``getMaximalEntropyBasedInformationLoss``; 0 when ``maxIL`` is 0).
    Ranges from 0 to ``n``. ARX declares it monotone without suppression
    (a record's shares only grow upward) and not with it.

    Bound: ``sum_E |E| min(G IL(E), S)`` over all classes, lowered by a
    relative ``1e-9`` (sums over other classes round differently): a record's
    cost never falls under it at the node or above it. ARX's own bound,
    ``sum_E G |E| IL(E)``, is the same when ``gs >= 0.5`` (``S = 1``) and not a
    bound below that, where a suppressed record may cost less.
    """

    name = "entropy_information_loss"
    takes_gs_factor = True
    monotone_with_generalization = True
    monotone_with_suppression = False

    def max_il(self) -> float:
        """``maxIL``: ``log10`` of the product of the hierarchies' rows (multiplied in order)."""
        product = 1.0
        for dim in range(self.ctx.m):
            product *= self.ctx.domain_size(dim)
        return float(java_log10_array(np.array([product]))[0])

    def record_loss(self, node: NodeClasses) -> NDArray[Any]:
        """``IL(E)`` of each class: one record's loss, from 0 to 1."""
        fs = node.fs
        max_il = self.max_il()
        if max_il == 0.0 or not math.isfinite(max_il):
            return np.zeros(fs.classes)
        shares = self.ctx.share_matrix(fs)
        product = np.ones(fs.classes)
        for dim in range(self.ctx.m):
            product = product * shares[:, dim]
        result = java_log10_array(product) / max_il + 1.0
        return np.asarray(np.clip(result, 0.0, 1.0))

    def value(self, node: NodeClasses) -> float:
        """``sum_E G |E| IL(E)`` over released classes plus ``S |E|`` over suppressed ones."""
        counts = node.fs.counts.astype(np.float64)
        live = counts > 0
        loss = counts * self.record_loss(node)
        released = ~np.asarray(node.outliers, dtype=bool)
        terms = np.where(released, self.g_factor * loss, self.s_factor * counts)
        order = arx_class_order(self.ctx, node.fs)
        return sequential_sum(terms[order][live[order]])

    def class_loss(self, fs: FrequencySet) -> NDArray[Any]:
        """Each class's ``G |E| IL(E)``, released (ARX's per-class loss; orders the suppression
        of equal-size classes for the risk-based models)."""
        node = NodeClasses(fs, np.zeros(fs.classes, dtype=bool))
        return np.asarray(self.g_factor * (fs.counts.astype(np.float64) * self.record_loss(node)))

    def lower_bound(self, node: NodeClasses) -> float:
        """``sum_E |E| min(G IL(E), S)``, lowered by a relative ``1e-9``."""
        counts = node.fs.counts.astype(np.float64)
        live = counts > 0
        cost = np.minimum(self.g_factor * self.record_loss(node), self.s_factor)
        return sequential_sum((counts * cost)[live]) * (1.0 - _BOUND_MARGIN)
