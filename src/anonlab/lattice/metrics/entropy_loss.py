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

from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.lattice.freqset import FrequencySet
from anonlab.lattice.metrics.base import Metric, NodeClasses, sequential_sum
from anonlab.lattice.metrics.order import arx_class_order
from anonlab.privacy.profitability import maximal_loss

#: a relative margin under the bound: its sum runs over other classes than a node's value
_BOUND_MARGIN = 1e-9


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
    #: ARX's class order on a research subset, rolled up with the frequency sets
    #: (:func:`~anonlab.lattice.metrics.order.population_order`)
    needs_population_order = True

    def max_il(self) -> float:
        """``maxIL``: ``log10`` of the product of the hierarchies' rows (multiplied in order)."""
        return maximal_loss([self.ctx.domain_size(dim) for dim in range(self.ctx.m)])

    def record_loss(self, node: NodeClasses) -> NDArray[Any]:
        """``IL(E)`` of each class: one record's loss, from 0 to 1."""
        return self.ctx.entropy_losses(node.fs, self.max_il())

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
