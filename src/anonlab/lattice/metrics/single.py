"""ARX's single-dimensional quality models: one number per node, no aggregate or weights.

Notation: ``n`` records of the table to release, equivalence classes ``E``
with sizes ``|E|`` (classes without records ignored), ``s`` suppressed
records, ``G`` and ``S`` the generalization and suppression factors.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.lattice.freqset import FrequencySet
from anonlab.lattice.metrics.base import (
    Metric,
    NodeClasses,
    java_log2_terms,
    safe_div,
    sequential_sum,
)


class DiscernibilityWithSuppression(Metric):
    """ARX's non-monotonic discernibility (``MetricSDNMDiscernability``; Bayardo and Agrawal 2005).

    ``sum |E|^2`` over released classes plus ``n`` per suppressed record
    (today's ``discernibility`` before issue 13). Bound: ``sum |E|^2`` over
    all classes, since a suppressed record costs ``n >= |E|`` and
    generalizing only merges classes.
    """

    name = "discernibility_with_suppression"
    monotone_with_generalization = True
    monotone_with_suppression = False

    def value(self, node: NodeClasses) -> float:
        """``sum_{E released} |E|^2 + n s``."""
        c = node.fs.counts.astype(np.int64)
        kept = c[~np.asarray(node.outliers, dtype=bool)]
        return float(int((kept * kept).sum()) + node.suppressed * self.ctx.n)

    def lower_bound(self, node: NodeClasses) -> float:
        """``sum |E|^2`` over all classes."""
        c = node.fs.counts.astype(np.int64)
        return float(int((c * c).sum()))


class Discernibility(DiscernibilityWithSuppression):
    """ARX's monotonic discernibility DM* (``MetricSDDiscernability``): ``sum |E|^2``.

    Suppressed records count in their own classes, as if released, so it is
    monotone with and without suppression.
    """

    name = "discernibility"
    monotone_with_suppression = True

    def value(self, node: NodeClasses) -> float:
        """``sum |E|^2`` over all classes."""
        return self.lower_bound(node)


class AverageClassSize(Metric):
    """ARX's average equivalence class size (``MetricSDAECS``; LeFevre et al. 2006).

    ``n / (S r + G [s > 0])`` with ``r`` released classes: the suppressed
    records form one more class, weighted by ``G`` (ARX swaps the factors on
    purpose). With ``gs = 0.5`` this is ``n / (classes in the release)``.
    Bound: ARX's ``n / (S c)`` with ``c`` classes before suppression when
    ``G <= S`` (``gs >= 0.5``), else ``n / (S c + G)`` (ARX's bound does not
    hold there).
    """

    name = "aecs"
    takes_gs_factor = True
    monotone_with_generalization = True
    monotone_with_suppression = False

    def value(self, node: NodeClasses) -> float:
        """``n / (S r + G [s > 0])``."""
        live = node.live
        released = float(int((live & ~np.asarray(node.outliers, dtype=bool)).sum()))
        some_suppressed = released != float(int(live.sum()))
        groups = released * self.s_factor
        if some_suppressed:
            groups = groups + 1 * self.g_factor
        return safe_div(float(self.ctx.n), groups)

    def lower_bound(self, node: NodeClasses) -> float:
        """``n / (S c)``, or ``n / (S c + G)`` when ``G > S``."""
        groups = float(int(node.live.sum())) * self.s_factor
        if self.g_factor > self.s_factor:
            groups += self.g_factor
        return safe_div(float(self.ctx.n), groups)


def _class_areas(metric: Metric, node: NodeClasses, released_share: bool) -> NDArray[Any]:
    """``prod_i share_i D_i`` per class, in ARX's order of operations.

    ``share_i`` is the domain share of the class's group in attribute ``i``
    and ``D_i`` the hierarchy's rows, so each factor is the number of leaf
    values under the group. With ``released_share``, suppressed classes use
    ``1 * D_i`` (every leaf value) instead.
    """
    fs = node.fs
    released = ~np.asarray(node.outliers, dtype=bool)
    area = np.ones(fs.classes)
    for dim, level in enumerate(fs.levels):
        share = metric.ctx.shares(dim)[level][metric.ctx.group_codes(fs, dim)]
        if released_share:
            share = np.where(released, share, 1.0)
        area = area * (share * metric.ctx.domain_size(dim))
    return area


class Ambiguity(Metric):
    """ARX's ambiguity (``MetricSDNMAmbiguity``; Nergiz and Clifton 2007).

    ``sum_E |E| prod_i share_i D_i``: each record costs the number of value
    combinations its generalized tuple could stand for; a suppressed record
    could be any of ``prod_i D_i``. Bound: the same with every class
    released (a record's area only grows upward).
    """

    name = "ambiguity"
    monotone_with_generalization = True
    monotone_with_suppression = False

    def value(self, node: NodeClasses) -> float:
        """``sum_E |E| area(E)``, suppressed classes with the whole domain's area."""
        counts = node.fs.counts.astype(np.float64)
        return sequential_sum(_class_areas(self, node, released_share=True) * counts)

    def lower_bound(self, node: NodeClasses) -> float:
        """``sum_E |E| area(E)`` with every class released."""
        counts = node.fs.counts.astype(np.float64)
        return sequential_sum(_class_areas(self, node, released_share=False) * counts)

    def class_loss(self, fs: FrequencySet) -> NDArray[Any]:
        """Each class's ``area(E) |E|`` (ARX's per-class loss; orders suppression of equal-size
        classes for the risk-based models)."""
        node = NodeClasses(fs, np.zeros(fs.classes, dtype=bool))
        return _class_areas(self, node, released_share=False) * fs.counts.astype(np.float64)


class KLDivergence(Metric):
    """ARX's KL divergence (``MetricSDNMKLDivergence``; Kifer and Gehrke 2006).

    Summed over the table's records ``r`` in row order:
    ``p_r log2(p_r / q_r)`` with ``p_r`` the share of records with ``r``'s
    quasi-identifier tuple, and ``q_r`` the share of ``r``'s class spread
    evenly over the class's value combinations: ``|E| / n / area(E)``, or
    ``s / n / prod_i D_i`` for a suppressed record. ARX gives no bound:
    the bound is ``-inf`` (no pruning).

    ARX declares it monotone when nothing is suppressed, but it is not: a
    generalization can lower it (on ``q0 = v1 v0 v0 v0 v2 v2 v1``,
    ``q1 = v1 v0 v0 v0 v1 v1 v1`` with flat hierarchies, node ``(1, 0)``
    gives 2.706 and its generalization ``(1, 1)`` 2.641). It is declared
    non-monotone here, so that every search finds the optimum.
    """

    name = "kl_divergence"
    monotone_with_generalization = False
    monotone_with_suppression = False

    def value(self, node: NodeClasses) -> float:
        """The divergence, one term per record in row order."""
        fs = node.fs
        row_tuple, _, tuple_counts = self.ctx.row_tuples()
        cls = self.ctx.class_of_tuples(fs)
        n = float(self.ctx.n)
        released = ~np.asarray(node.outliers, dtype=bool)
        suppressed = float(node.suppressed)
        whole = 1.0
        for dim in range(self.ctx.m):
            whole *= self.ctx.domain_size(dim)
        area = _class_areas(self, node, released_share=False)
        kept = released[cls]
        out_freq = np.where(kept, fs.counts[cls].astype(np.float64), suppressed) / n
        out_freq = out_freq / np.where(kept, area[cls], whole)
        in_freq = tuple_counts.astype(np.float64) / n
        terms = java_log2_terms(in_freq, in_freq / out_freq)
        return sequential_sum(terms[row_tuple])

    def lower_bound(self, node: NodeClasses) -> float:
        """No bound: ``-inf``."""
        return -math.inf
