"""ARX's publisher-payout quality model (``MetricSDNMPublisherPayout``), prosecutor and journalist.

The game-theoretic figures of :mod:`anonlab.privacy.profitability`: a
released record of a class with entropy-based information loss ``IL`` and an
adversary's success probability ``p`` earns the publisher
``payout = benefit * (1 - IL) - [gain * p > cost] * loss * p``
(:meth:`~anonlab.privacy.profitability.CostBenefit.publisher_payout`). The
metric is what the release falls short of the most a record can earn,
``benefit``::

    sum over released classes E:   G * |E| * (benefit - payout(E))
  + sum over suppressed classes E: S * |E| * benefit

with ARX's generalization and suppression factors ``G`` and ``S``, summed
one class at a time in ARX's class order. ``p`` is ``1 / |E|``, or for the
journalist variant ``1 / pcount`` (the class's population records) where
the class has population records. The figures are the model's profitability
criteria's (:func:`~anonlab.privacy.profitability.model_costs`), ARX's
defaults when it has none. ARX declares the metric monotone neither with
generalization nor with suppression.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.grouping import group_tuples
from anonlab.lattice.freqset import FrequencySet
from anonlab.lattice.metrics.base import Metric, NodeClasses, sequential_sum
from anonlab.lattice.metrics.order import population_order
from anonlab.privacy.profitability import (
    SIZE_TABLE_LIMIT,
    CostBenefit,
    SizeTables,
    attack_sizes,
    maximal_loss,
    success_probability,
)


class PublisherPayout(Metric):
    """ARX ``MetricSDNMPublisherPayout`` with the prosecutor attacker model
    (``Metric.createPublisherPayoutMetric(false, gs)``)."""

    name = "publisher_payout"
    takes_gs_factor = True
    monotone_with_generalization = False
    monotone_with_suppression = False
    #: ARX's class order on a research subset, rolled up with the frequency sets
    needs_population_order = True
    #: ARX's ``journalistAttackerModel``
    journalist = False

    @property
    def costs(self) -> CostBenefit:
        """The run's cost-benefit figures (``LossContext.cost_benefit``), else ARX's defaults."""
        costs = getattr(self.ctx, "cost_benefit", None)
        return costs if isinstance(costs, CostBenefit) else CostBenefit()

    def _max_loss(self) -> float:
        cached: float | None = getattr(self, "_cached_max_loss", None)
        if cached is None:
            cached = maximal_loss([self.ctx.domain_size(d) for d in range(self.ctx.m)])
            self._cached_max_loss = cached
        return cached

    def record_loss(self, node: NodeClasses, exact: bool = True) -> NDArray[Any]:
        """Each class's entropy-based information loss of one record (``exact=False``: with
        NumPy's ``log10``, a few units in the last place off). The exact figures of the last
        frequency set are kept: the search asks for the value and the bound of one node."""
        fs = node.fs
        cached: tuple[FrequencySet, NDArray[Any]] | None = getattr(self, "_last_loss", None)
        if cached is not None and cached[0] is fs:
            return cached[1]
        loss = self.ctx.entropy_losses(fs, self._max_loss(), exact)
        if exact:
            self._last_loss = (fs, loss)
        return loss

    def class_payout(self, node: NodeClasses) -> NDArray[Any]:
        """The publisher's expected payout per record of each class."""
        fs = node.fs
        success = success_probability(fs.counts, fs.population, self.journalist)
        return self.costs.publisher_payout(self.record_loss(node), success)

    def class_loss(self, fs: FrequencySet) -> NDArray[Any]:
        """Each class's ``G |E| (benefit - payout(E))``, released (ARX's per-class loss,
        ``getInformationLossInternal(transformation, entry)``; orders the suppression of
        equal-size classes for the risk-based models)."""
        node = NodeClasses(fs, np.zeros(fs.classes, dtype=bool))
        counts = fs.counts.astype(np.float64)
        return np.asarray(
            self.g_factor * counts * (self.costs.publisher_benefit - self.class_payout(node))
        )

    def arx_order(self, fs: FrequencySet) -> NDArray[Any]:
        """The node's classes in ARX's order: of first appearance in the table's rows, or with
        a population (a research subset) in the population's rows, which ARX groups."""
        population = getattr(self.ctx.dataset, "population", None)
        if population is None:
            return np.arange(fs.classes)
        seen = population_order(self.ctx, fs)
        if seen is not None:
            return seen
        layout = self.ctx.layout
        parts = self._population_key_parts(np.asarray(population))
        keys = np.zeros((parts[0][0].shape[0], layout.chunks), dtype=np.int64)
        for dim, level in enumerate(fs.levels):
            keys[:, layout.chunk[dim]] += parts[dim][level]
        if keys.shape[1] == 1:
            index = pd.Index(fs.keys[:, 0]).get_indexer(pd.unique(keys[:, 0]))
        else:
            ordered = pd.MultiIndex.from_arrays(list(keys.T)).unique()
            index = pd.MultiIndex.from_arrays(list(fs.keys.T)).get_indexer(ordered)
        return np.asarray(index[index >= 0], dtype=np.int64)

    def _population_first(self, population: NDArray[Any]) -> NDArray[Any]:
        """Row of each distinct population tuple's first appearance, in that order."""
        _, first = group_tuples(population, [q.cardinality(0) for q in self.ctx.qis])
        return np.asarray(first)

    def _population_key_parts(self, population: NDArray[Any]) -> list[list[NDArray[Any]]]:
        """``parts[dim][level]``: the population's distinct tuples (in order of first
        appearance) lifted to ``level`` in ``dim``, as that dimension's part of the packed
        key; made once."""
        parts: list[list[NDArray[Any]]] | None = getattr(self, "_key_parts", None)
        if parts is None:
            layout = self.ctx.layout
            distinct = population[self._population_first(population)]
            parts = [
                [
                    np.asarray(codes[distinct[:, dim]], dtype=np.int64) * layout.weight[dim]
                    for codes in q.level_codes
                ]
                for dim, q in enumerate(self.ctx.qis)
            ]
            self._key_parts = parts
        return parts

    def value(self, node: NodeClasses) -> float:
        """ARX's ``getInformationLossInternal``: the shortfall from ``benefit`` per record."""
        figures = self._figures(node.fs)
        top = self.costs.publisher_benefit
        outliers = np.asarray(node.outliers, dtype=bool)
        if figures is None:
            counts = node.fs.counts.astype(np.float64)
            payout = self.class_payout(node)
            terms = np.where(
                outliers, self.s_factor * counts * top, self.g_factor * counts * (top - payout)
            )
        else:
            payout = figures.benefit - figures.attack
            terms = np.where(outliers, figures.suppressed, figures.weight * (top - payout))
        order = self.arx_order(node.fs)
        return sequential_sum(terms[order][node.fs.counts[order] > 0])

    def _figures(self, fs: FrequencySet) -> _NodeFigures | None:
        """The node's per-class figures from size tables (:class:`_NodeFigures`; ``None`` for a
        table too large for them); those of the last frequency set are kept, since the
        search asks for a node's value and bound in turn."""
        cached: tuple[FrequencySet, _NodeFigures] | None = getattr(self, "_last_figures", None)
        if cached is not None and cached[0] is fs:
            return cached[1]
        tables = self._tables()
        if tables is None:
            return None
        figures = _NodeFigures(self, tables, fs)
        self._last_figures = (fs, figures)
        return figures

    def _tables(self) -> _Tables | None:
        """The metric's tables by class size (made once; ``None`` above
        :data:`~anonlab.privacy.profitability.SIZE_TABLE_LIMIT` records)."""
        made: tuple[_Tables | None] | None = getattr(self, "_size_tables", None)
        if made is None:
            population = getattr(self.ctx.dataset, "population", None)
            largest = max(self.ctx.n, 0 if population is None else int(population.shape[0]))
            made = (None if largest > SIZE_TABLE_LIMIT else _Tables(self, largest),)
            self._size_tables = made
        return made[0]

    def payout(self, node: NodeClasses) -> float:
        """ARX's "Publisher payout" figure: the released records' expected payout."""
        counts = node.fs.counts.astype(np.float64)
        kept = (counts > 0) & ~np.asarray(node.outliers, dtype=bool)
        order = self.arx_order(node.fs)
        return sequential_sum((counts * self.class_payout(node))[order][kept[order]])

    def lower_bound(self, node: NodeClasses) -> float:
        """``sum |E| min(G (benefit - benefit (1 - IL)), S benefit)`` over all classes.

        Each record costs at least ``G`` times the benefit its information loss
        takes away (an attack only lowers the payout) if released, ``S *
        benefit`` if suppressed; ``IL`` only grows with generalization, so this
        holds for every generalization too. With ``gs >= 0.5`` it is ARX's
        bound (``getLowerBoundInternal``), lowered by a relative ``1e-9``.
        """
        counts = node.fs.counts
        figures = self._figures(node.fs)
        if figures is None:
            weights = counts.astype(np.float64)
            top = self.costs.publisher_benefit
            kept = self.g_factor * weights * (top - top * (1.0 - self.record_loss(node)))
            terms = np.minimum(kept, self.s_factor * weights * top)
        else:
            terms = np.minimum(figures.weight * figures.shortfall(), figures.suppressed)
        # the sum's order is a few units in the last place off: lowered
        return sequential_sum(terms[counts > 0]) * (1.0 - 1e-9)

    def report(self, node: NodeClasses) -> dict[str, Any]:
        """The loss as ARX prints it, with the release's expected payout and the figures."""
        out = super().report(node)
        out["publisher_payout"] = self.payout(node)
        out["cost_benefit"] = self.costs.as_dict()
        return out


class PublisherPayoutJournalist(PublisherPayout):
    """ARX ``MetricSDNMPublisherPayout`` with the journalist attacker model
    (``Metric.createPublisherPayoutMetric(true, gs)``): success ``1 / pcount``."""

    name = "publisher_payout_journalist"
    journalist = True


class _Tables:
    """A publisher-payout metric's figures by class size, each computed once for every size
    with the operations :meth:`PublisherPayout.value` applies class by class (the same
    doubles): the attack's cost (:class:`~anonlab.privacy.profitability.SizeTables`),
    ``G |E|`` and ``S |E| benefit``."""

    def __init__(self, metric: PublisherPayout, largest: int) -> None:
        self.sizes = SizeTables(metric.costs, largest)
        counts = np.arange(largest + 1, dtype=np.float64)
        self.weight = metric.g_factor * counts
        self.suppressed = metric.s_factor * counts * metric.costs.publisher_benefit


class _NodeFigures:
    """One node's per-class figures for :meth:`PublisherPayout.value` and
    :meth:`~PublisherPayout.lower_bound`, looked up in the size tables and, through the
    entropy-based losses' combinations (:meth:`~anonlab.privacy.profitability.ShareTables.
    loss_parts`), mapped on the few combinations before each class looks its own up."""

    def __init__(self, metric: PublisherPayout, tables: _Tables, fs: FrequencySet) -> None:
        counts = fs.counts
        self.weight = tables.weight.take(counts)  # G |E|
        self.suppressed = tables.suppressed.take(counts)  # S |E| benefit
        sizes = attack_sizes(counts, fs.population, metric.journalist)
        self.attack = tables.sizes.attack.take(sizes)
        self._top = metric.costs.publisher_benefit
        self._losses, self._index = metric.ctx.entropy_loss_parts(fs, metric._max_loss())
        self.benefit = self._classes(self._top * (1.0 - self._losses))  # benefit (1 - IL)

    def _classes(self, values: NDArray[Any]) -> NDArray[Any]:
        """Per-class values from values of the losses' parts."""
        return values if self._index is None else np.asarray(values.take(self._index))

    def shortfall(self) -> NDArray[Any]:
        """Each class's ``benefit - benefit (1 - IL)`` (the bound's released cost per ``G``
        and record)."""
        top = self._top
        return self._classes(top - top * (1.0 - self._losses))
