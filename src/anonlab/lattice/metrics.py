"""Information-loss metrics of a generalized table, computed from a node's classes.

Each metric gives a node's ``value`` (lower is better), a ``lower_bound`` that
holds for the node *and every generalization of it* (used to prune the search
when the metric is not monotone), and whether it is monotone over the lattice.
With a suppression limit of zero every metric here is monotone; with
suppression only the plain ``precision`` is (NOTES.md §1; Kohlmayer et al. 2012
for the pruning by lower bounds).

Notation: ``n`` records, ``m`` quasi-identifiers, node levels ``l_i`` with
hierarchy heights ``h_i``, equivalence classes ``E`` with sizes ``|E|``, ``s``
suppressed records (those in classes smaller than k).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.dataset import Dataset
from anonlab.errors import AnonlabError
from anonlab.lattice.freqset import FrequencySet


@dataclass(frozen=True)
class NodeClasses:
    """A node's classes with the criterion applied: which classes are suppressed."""

    fs: FrequencySet
    outliers: NDArray[Any]  # (classes,) bool: class is suppressed

    @property
    def levels(self) -> tuple[int, ...]:
        """The node's level vector."""
        return self.fs.levels

    @property
    def suppressed(self) -> int:
        """Number of suppressed records."""
        return int(self.fs.counts[self.outliers].sum())


class LossContext:
    """Data-only quantities the metrics need, computed once per dataset."""

    def __init__(
        self, dataset: Dataset, base_tuples: NDArray[Any], base_counts: NDArray[Any]
    ) -> None:
        self.n = dataset.n
        self.heights = np.array([q.height for q in dataset.qis], dtype=np.float64)
        self.base_tuples = base_tuples
        self.base_counts = base_counts
        self.freqs = [q.frequencies.astype(np.float64) for q in dataset.qis]
        # group totals F_g per (qi, level), expanded to each value: F_{g_l(v)}
        self.group_totals: list[list[NDArray[Any]]] = []
        self.entropy_terms: list[list[float]] = []
        for q, f in zip(dataset.qis, self.freqs, strict=True):
            totals_by_level = []
            terms = []
            for level in range(q.height + 1):
                codes = q.level_codes[level]
                totals = np.bincount(codes, weights=f, minlength=q.cardinality(level))[codes]
                totals_by_level.append(totals)
                present = f > 0
                terms.append(float(-(f[present] * np.log2(f[present] / totals[present])).sum()))
            self.group_totals.append(totals_by_level)
            self.entropy_terms.append(terms)

    def precision(self, levels: Sequence[int]) -> float:
        """Mean over quasi-identifiers of ``l_i / h_i`` (0 for a height-0 hierarchy)."""
        lv = np.asarray(levels, dtype=np.float64)
        ratio = np.divide(lv, self.heights, out=np.zeros_like(lv), where=self.heights > 0)
        return float(ratio.mean())

    def precision_all(self, all_levels: NDArray[Any]) -> NDArray[Any]:
        """Vectorized :meth:`precision` over an (N, m) array of level vectors."""
        lv = all_levels.astype(np.float64)
        ratio = np.divide(lv, self.heights, out=np.zeros_like(lv), where=self.heights > 0)
        return np.asarray(ratio.mean(axis=1))

    def entropy_unsuppressed_all(self, all_levels: NDArray[Any]) -> NDArray[Any]:
        """Vectorized :meth:`entropy_unsuppressed` over an (N, m) array of level vectors."""
        total = np.zeros(all_levels.shape[0])
        for i, terms in enumerate(self.entropy_terms):
            total += np.asarray(terms)[all_levels[:, i]]
        return total

    def entropy_unsuppressed(self, levels: Sequence[int]) -> float:
        """Non-uniform entropy if no record were suppressed (data-only, level-only)."""
        return float(sum(t[lv] for t, lv in zip(self.entropy_terms, levels, strict=True)))


class Metric(ABC):
    """An information-loss metric (lower is better)."""

    name: str = ""
    needs_base_index: bool = False

    def __init__(self, ctx: LossContext) -> None:
        self.ctx = ctx

    @abstractmethod
    def value(self, node: NodeClasses) -> float:
        """The loss of the node's release."""

    @abstractmethod
    def lower_bound(self, node: NodeClasses) -> float:
        """A bound no larger than the loss of this node and of every generalization of it."""

    def level_bounds(self, all_levels: NDArray[Any]) -> NDArray[Any] | None:
        """Data-free loss bounds for the nodes of an (N, m) array of level vectors.

        Each bound holds for its node and every generalization of it; ``None``
        when the metric has none.
        """
        return None

    def monotone(self, suppression_allowed: bool) -> bool:
        """True if the loss never decreases from a node to its generalizations."""
        return not suppression_allowed


class Precision(Metric):
    """Precision (Sweeney 2002; NOTES.md §1): ``(1/m) sum_i l_i / h_i``.

    Depends on the levels only, so it is monotone with or without suppression.
    """

    name = "precision"

    def value(self, node: NodeClasses) -> float:
        """``mean_i l_i / h_i``."""
        return self.ctx.precision(node.levels)

    def lower_bound(self, node: NodeClasses) -> float:
        """The value itself (monotone)."""
        return self.value(node)

    def level_bounds(self, all_levels: NDArray[Any]) -> NDArray[Any] | None:
        """The values, from the levels."""
        return self.ctx.precision_all(all_levels)

    def monotone(self, suppression_allowed: bool) -> bool:
        """Always monotone."""
        return True


class PrecisionWithSuppression(Metric):
    """Precision with suppressed records fully generalized (ARX's precision loss).

    ``((n - s) * P + s) / n`` with ``P = (1/m) sum_i l_i / h_i``: a suppressed
    record counts as generalized to the top in every quasi-identifier.
    Bound: ``P`` (every record contributes at least ``P``; ``P`` is monotone).
    """

    name = "precision_with_suppression"

    def value(self, node: NodeClasses) -> float:
        """``((n - s) P + s) / n``."""
        p = self.ctx.precision(node.levels)
        s = node.suppressed
        return ((self.ctx.n - s) * p + s) / self.ctx.n

    def lower_bound(self, node: NodeClasses) -> float:
        """``P`` of the node."""
        return self.ctx.precision(node.levels)

    def level_bounds(self, all_levels: NDArray[Any]) -> NDArray[Any] | None:
        """``P`` from the levels."""
        return self.ctx.precision_all(all_levels)


class Discernibility(Metric):
    """Discernibility (Bayardo and Agrawal 2005): ``sum_{E not suppressed} |E|^2 + s * n``.

    Bound: ``sum_E |E|^2`` over all classes, suppressed or not: a record's
    class only grows upward and a suppressed record costs ``n >= |E|``.
    """

    name = "discernibility"

    def value(self, node: NodeClasses) -> float:
        """``sum |E|^2`` over released classes plus ``n`` per suppressed record."""
        c = node.fs.counts
        kept = c[~node.outliers]
        return float(int((kept * kept).sum()) + node.suppressed * self.ctx.n)

    def lower_bound(self, node: NodeClasses) -> float:
        """``sum |E|^2`` over all classes."""
        c = node.fs.counts
        return float(int((c * c).sum()))


class AverageClassSize(Metric):
    """Average equivalence class size: ``n / (number of released classes)``.

    The suppressed records (all quasi-identifiers '*') count as one class of
    the release. LeFevre et al. 2006 divide this by k (C_AVG); we report the
    plain size. Bound: ``n / (number of classes)`` before suppression, since
    generalizing only merges classes.
    """

    name = "aecs"

    def value(self, node: NodeClasses) -> float:
        """``n / (released classes + [s > 0])``."""
        classes = int((~node.outliers).sum()) + (1 if node.suppressed > 0 else 0)
        return self.ctx.n / classes

    def lower_bound(self, node: NodeClasses) -> float:
        """``n / classes``."""
        return self.ctx.n / node.fs.classes


class NonUniformEntropy(Metric):
    """Non-uniform entropy (Gionis and Tassa 2009), suppression as full generalization.

    ``sum_i sum_r -log2( f_i(v_r) / F_i(g_r) )`` where ``f_i(v)`` counts value
    ``v`` of quasi-identifier ``i`` in the table and ``F_i(g)`` the records whose
    value falls in the released group ``g``; a suppressed record counts as
    generalized to the top (``F = n``), as ARX does. Bound: the same sum with
    nothing suppressed, which is monotone and depends on the levels only.
    """

    name = "entropy"
    needs_base_index = True

    def value(self, node: NodeClasses) -> float:
        """Entropy with suppressed records' terms ``-log2(f(v)/n)``."""
        total = self.ctx.entropy_unsuppressed(node.levels)
        if node.suppressed == 0:
            return total
        base_index = node.fs.base_index
        if base_index is None:
            raise RuntimeError("entropy with suppression needs the base index")
        sup = node.outliers[base_index]
        tuples = self.ctx.base_tuples[sup]
        weights = self.ctx.base_counts[sup].astype(np.float64)
        for i, level in enumerate(node.levels):
            totals = self.ctx.group_totals[i][level]
            sf = np.bincount(tuples[:, i], weights=weights, minlength=len(totals))
            present = sf > 0
            total += float((sf[present] * np.log2(self.ctx.n / totals[present])).sum())
        return total

    def lower_bound(self, node: NodeClasses) -> float:
        """Entropy without suppression."""
        return self.ctx.entropy_unsuppressed(node.levels)

    def level_bounds(self, all_levels: NDArray[Any]) -> NDArray[Any] | None:
        """Entropy without suppression, from the levels."""
        return self.ctx.entropy_unsuppressed_all(all_levels)


METRICS: dict[str, type[Metric]] = {
    m.name: m
    for m in (Precision, PrecisionWithSuppression, Discernibility, AverageClassSize,
              NonUniformEntropy)
}


def metric_by_name(name: str, ctx: LossContext) -> Metric:
    """Instantiate a metric by its report/CLI name."""
    cls = METRICS.get(name)
    if cls is None:
        raise AnonlabError(f"metric '{name}' is unknown: choose one of {', '.join(METRICS)}",
                           parameter="metric")
    return cls(ctx)
