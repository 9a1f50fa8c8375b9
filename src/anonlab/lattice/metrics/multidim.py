"""ARX's multi-dimensional quality models: one value per quasi-identifier, then an aggregate.

ARX (``AbstractMetricMultiDimensional``) computes a vector ``v`` with one
entry per quasi-identifier and reduces it with an aggregate function and the
attribute weights ``w`` (each divided by the largest weight):

* ``arithmetic_mean``: ``sum_i (v_i / m) w_i``;
* ``geometric_mean``: ``prod_i (v_i w_i + 1)^(1/m) - 1``;
* ``sum``: ``sum_i v_i w_i``;
* ``max``: ``max_i v_i w_i``;
* ``rank``: the vector ``(v_i w_i)`` sorted in descending order, compared
  lexicographically (``ILMultiDimensionalRank``); ARX prints the vector.

Notation: ``n`` records, node levels ``l_i``, hierarchy heights ``h_i``,
generalization and suppression factors ``G`` and ``S`` from the
generalization/suppression factor ``gs`` (:func:`~anonlab.lattice.metrics.base.gs_factors`).
"""

from __future__ import annotations

import functools
import math
import sys
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.lattice.freqset import FrequencySet
from anonlab.lattice.metrics.base import (
    DEFAULT_GS_FACTOR,
    LossContext,
    LossValue,
    Metric,
    NodeClasses,
    arx_round,
    finished_sum,
    hppc_int_order,
    java_log2_terms,
    loss_text,
    safe_div,
    sequential_sum,
    sum_slack,
    summation_error,
    weight_vector,
)

AGGREGATES = ("arithmetic_mean", "geometric_mean", "sum", "max", "rank")

#: a margin under data-level bounds whose sums run in another order than ARX's
_BOUND_MARGIN = 1e-9


def aggregate(values: Sequence[float], weights: Sequence[float], how: str) -> LossValue:
    """Reduce per-attribute values as ARX's ``ILMultiDimensional*`` classes do (same steps)."""
    m = len(values)
    if how == "rank":
        return tuple(sorted((v * w for v, w in zip(values, weights, strict=True)), reverse=True))
    if how == "geometric_mean":
        product = 1.0
        for v, w in zip(values, weights, strict=True):
            product *= math.pow(v * w + 1.0, 1.0 / m)
        return product - 1.0
    result = 0.0
    for v, w in zip(values, weights, strict=True):
        if how == "arithmetic_mean":
            result += (v / m) * w
        elif how == "sum":
            result += v * w
        else:  # max
            result = max(result, v * w)
    if how == "sum" and not math.isfinite(result):
        result = sys.float_info.max
    return result


def aggregate_columns(
    columns: Sequence[NDArray[Any]], weights: Sequence[float], how: str
) -> NDArray[Any]:
    """:func:`aggregate` applied row-wise to per-attribute value columns of equal length.

    Returns (N,) values, or (N, m) descending rows for ``rank``. The
    arithmetic, sum, max and rank aggregates take exactly the steps of
    :func:`aggregate`; the geometric mean uses NumPy's ``power`` (see
    :func:`aggregate_levels` for the exact one where the values are few).
    """
    m = len(columns)
    cols = [np.asarray(c, dtype=np.float64) for c in columns]
    if how == "rank":
        weighted = np.column_stack([c * w for c, w in zip(cols, weights, strict=True)])
        return np.asarray(np.sort(weighted, axis=1)[:, ::-1])
    if how == "geometric_mean":
        product = np.ones_like(cols[0])
        for c, w in zip(cols, weights, strict=True):
            product = product * np.power(c * w + 1.0, 1.0 / m)
        return product - 1.0
    out = np.zeros_like(cols[0])
    for c, w in zip(cols, weights, strict=True):
        if how == "arithmetic_mean":
            out = out + (c / m) * w
        elif how == "sum":
            out = out + c * w
        else:
            out = np.maximum(out, c * w)
    if how == "sum":
        out[~np.isfinite(out)] = sys.float_info.max
    return out


def aggregate_levels(
    tables: Sequence[NDArray[Any]], weights: Sequence[float], how: str, all_levels: NDArray[Any]
) -> NDArray[Any]:
    """:func:`aggregate` over many nodes whose per-attribute values depend on the levels only.

    ``tables[i][l]`` is attribute ``i``'s value at level ``l``. Returns (N,)
    values, or (N, m) descending rows for ``rank``. Each element goes through
    exactly the floating-point steps of :func:`aggregate` (for the geometric
    mean, ``math.pow`` of each table entry).
    """
    if how == "geometric_mean":
        m = len(tables)
        out = np.ones(all_levels.shape[0])
        for t, w, lv in zip(tables, weights, all_levels.T, strict=True):
            factors = np.array([math.pow(float(x) * w + 1.0, 1.0 / m) for x in t])
            out = out * factors[lv]
        return out - 1.0
    cols = [np.asarray(t, dtype=np.float64)[all_levels[:, i]] for i, t in enumerate(tables)]
    return aggregate_columns(cols, weights, how)


def _negated(raw: float) -> float:
    """ARX's ``round(x == 0 ? x : -x)`` of the entropy metrics."""
    return arx_round(raw if raw == 0.0 else -raw)


class MultiDimensionalMetric(Metric):
    """A vector per node, reduced by an aggregate function with attribute weights."""

    multi_dimensional = True
    default_aggregate: ClassVar[str] = "arithmetic_mean"

    def set_dimensions(self, aggregate: str | None, weights: Mapping[str, float] | None) -> None:
        """Check and keep the aggregate function (default: the metric's ARX default) and the
        attribute weights (default: 1 each)."""
        how = self.default_aggregate if aggregate is None else str(aggregate)
        if how not in AGGREGATES:
            raise AnonlabError(
                f"aggregate '{how}' is unknown: choose one of {', '.join(AGGREGATES)}",
                parameter="aggregate",
            )
        self.aggregate = how
        self.weights = weight_vector(self.ctx, weights)

    @abstractmethod
    def vector(self, node: NodeClasses) -> list[float]:
        """ARX's per-attribute values at the node (``InformationLoss.getValue()``)."""

    @abstractmethod
    def bound_vector(self, node: NodeClasses) -> list[float]:
        """Per-attribute lower bounds for the node and all its generalizations."""

    def reduce(self, values: Sequence[float]) -> LossValue:
        """The aggregate of a vector with this metric's weights."""
        return aggregate(values, self.weights, self.aggregate)

    def value(self, node: NodeClasses) -> LossValue:
        """The aggregate of :meth:`vector`."""
        return self.reduce(self.vector(node))

    def lower_bound(self, node: NodeClasses) -> LossValue:
        """The aggregate of :meth:`bound_vector` (every aggregate is monotone in each entry)."""
        return self.reduce(self.bound_vector(node))

    def per_attribute(self, node: NodeClasses) -> dict[str, float] | None:
        """The vector by quasi-identifier (unweighted, as ARX reports it)."""
        return dict(zip(self.ctx.names, self.vector(node), strict=True))

    def report(self, node: NodeClasses) -> dict[str, Any]:
        """Value, ARX's text, per-attribute values; for rank also ARX's scalar.

        ARX relates a rank value to others through the geometric mean of the
        unweighted vector, ``prod_i (v_i + 1)^(1/m) - 1``: that is ``scalar``.
        """
        vec = self.vector(node)
        value = self.reduce(vec)
        out: dict[str, Any] = {
            "value": list(value) if isinstance(value, tuple) else value,
            "arx": loss_text(value),
            "aggregate": self.aggregate,
            "per_attribute": dict(zip(self.ctx.names, vec, strict=True)),
        }
        if isinstance(value, tuple):
            out["scalar"] = aggregate(vec, [1.0] * len(vec), "geometric_mean")
        return out


class LevelTableMetric(MultiDimensionalMetric):
    """A metric whose per-attribute bound depends on the attribute's level only."""

    _tables: list[NDArray[Any]] | None = None

    @abstractmethod
    def level_table(self, dim: int) -> NDArray[Any]:
        """Attribute ``dim``'s bound at each of its levels."""

    def tables(self) -> list[NDArray[Any]]:
        """:meth:`level_table` of every attribute (computed once)."""
        if self._tables is None:
            self._tables = [self.level_table(i) for i in range(self.ctx.m)]
        return self._tables

    def bound_vector(self, node: NodeClasses) -> list[float]:
        """Table entries at the node's levels."""
        return [float(t[lv]) for t, lv in zip(self.tables(), node.levels, strict=True)]

    def level_bounds(self, all_levels: NDArray[Any]) -> NDArray[Any] | None:
        """The tables aggregated over all nodes at once."""
        return aggregate_levels(self.tables(), self.weights, self.aggregate, all_levels)


class LossMetric(MultiDimensionalMetric):
    """ARX's "Loss" (``MetricMDNMLoss``; Iyengar 2002), default aggregate geometric mean.

    Each record costs, in each attribute ``i``, the domain share ``s_i`` of
    its group: the fraction of the hierarchy's leaf values (its file rows)
    under the group's label. A released class ``E`` costs ``|E| s G``; a
    suppressed one ``|E|`` if ``S = 1``, else ``|E| s + S (|E| - |E| s)``.
    Per attribute: ``(sum - G n / D_i) / (n - G n / D_i)``, floored at 0 and
    rounded down to 10 decimals, ``D_i`` the hierarchy's rows.

    Bound (ARX's): the same with every class released, ``sum |E| s G``
    (a record's share only grows upward and a suppressed record costs at least
    its share). It depends on each attribute's level only, so
    :meth:`level_bounds` gives it for the whole lattice.
    """

    name = "loss"
    takes_gs_factor = True
    default_aggregate = "geometric_mean"
    monotone_with_generalization = True
    monotone_with_suppression = False

    def __init__(
        self,
        ctx: LossContext,
        *,
        gs_factor: float = DEFAULT_GS_FACTOR,
        aggregate: str | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        super().__init__(ctx, gs_factor=gs_factor, aggregate=aggregate, weights=weights)
        #: (attribute, level) -> sum of every record's share times G, and its relative error
        self._level_sums: dict[tuple[int, int], tuple[float, float]] = {}
        #: (attribute, level) -> whether its sums are exact (:meth:`_exact_sums`)
        self._exact: dict[tuple[int, int], bool] = {}
        #: (attribute, level) -> its bound at every node, if one (:meth:`_level_bound`)
        self._fixed: dict[tuple[int, int], float | None] = {}

    def _normalize(self, total: float, dim: int) -> float:
        """ARX's ``normalizeGeneralized``."""
        n = float(self.ctx.n)
        low = self.g_factor * n / self.ctx.domain_size(dim)
        result = safe_div(total - low, n - low)
        return arx_round(result if result >= 0.0 else 0.0)

    def _sums(self, node: NodeClasses, bound_only: bool) -> tuple[list[float], list[float]]:
        """Per attribute: the normalized loss (unless ``bound_only``) and bound.

        ARX adds each attribute's terms one by one in class order. The bound
        comes from :meth:`_bounds`; the loss's terms are built for all
        attributes at once on (classes, m) arrays, summed by a matrix product
        and made exact by :func:`~anonlab.lattice.metrics.base.finished_sum`
        (a sequential sum only where the normalized value could depend on it).
        """
        fs = node.fs
        counts = fs.counts.astype(np.float64)
        bounds = self._bounds(node, counts)
        if bound_only:
            return [], bounds
        rows = counts.shape[0]
        released = ~np.asarray(node.outliers, dtype=bool)
        share = counts[:, None] * self.ctx.share_matrix(fs)
        suppressed = (
            np.broadcast_to(counts[:, None], share.shape)
            if self.s_factor == 1.0
            else share + self.s_factor * (counts[:, None] - share)
        )
        terms = np.where(released[:, None], share * self.g_factor, suppressed)
        each = summation_error(rows)  # both sums add the same rounded terms
        slack = sum_slack(each, each)
        values = []
        for dim, total in enumerate((np.ones(rows) @ terms).tolist()):
            values.append(
                finished_sum(
                    total,
                    0.0 if self._exact_sums(dim, fs.levels[dim]) else slack,
                    functools.partial(self._normalize, dim=dim),
                    functools.partial(sequential_sum, terms[:, dim]),
                )
            )
        return values, bounds

    def _bounds(self, node: NodeClasses, counts: NDArray[Any]) -> list[float]:
        """Per attribute: ARX's bound, the normalized ``sum_E |E| s_i G`` in class order.

        In exact arithmetic the sum is every record's domain share at the
        attribute's level, whatever the classes: it depends on the level only
        (:meth:`_level_sum`). Where the normalized value is the same wherever
        in the sum's error bound for any node the sum lies, it is kept per
        level (:meth:`_level_bound`); otherwise the node's own error bound
        decides, and at worst its sequential sum.
        """
        fs = node.fs
        out = []
        rows = counts.shape[0]
        for dim in range(len(fs.levels)):
            fixed = self._level_bound(node, dim)
            if fixed is not None:
                out.append(fixed)
                continue
            total, error = self._level_sum(node, dim)
            out.append(
                finished_sum(
                    total,
                    sum_slack(summation_error(rows, 2), error),
                    functools.partial(self._normalize, dim=dim),
                    functools.partial(self._class_order_sum, fs, counts, dim),
                )
            )
        return out

    def _class_order_sum(self, fs: FrequencySet, counts: NDArray[Any], dim: int) -> float:
        """ARX's ``sum_E (|E| s_i) G`` of attribute ``dim``, added one class at a time."""
        share = self.ctx.shares(dim)[fs.levels[dim]][self.ctx.group_codes(fs, dim)]
        return sequential_sum((counts * share) * self.g_factor)

    def _level_bound(self, node: NodeClasses, dim: int) -> float | None:
        """The bound of attribute ``dim`` at the node's level if it is the same at every node.

        So when the normalized value is one at both ends of the level's sum
        plus or minus the error of any sequential sum over at most ``n``
        classes (or when the sums are exact, :meth:`_exact_sums`); cached per
        level.
        """
        key = (dim, node.fs.levels[dim])
        if key not in self._fixed:
            total, error = self._level_sum(node, dim)
            slack = (
                0.0
                if self._exact_sums(*key)
                else sum_slack(summation_error(max(self.ctx.n, node.fs.classes), 2), error)
            )
            low = self._normalize(total - slack * abs(total), dim)
            high = self._normalize(total + slack * abs(total), dim)
            self._fixed[key] = low if low == high else None
        return self._fixed[key]

    def _level_sum(self, node: NodeClasses, dim: int) -> tuple[float, float]:
        """``sum_E |E| s_i G`` at the node's level of attribute ``dim``, up to rounding, and
        its relative error bound (:func:`~anonlab.lattice.metrics.base.summation_error`).

        The first node at a level computes it, for every attribute whose level
        is new, by one matrix product over its classes.
        """
        fs = node.fs
        known = self._level_sums
        if (dim, fs.levels[dim]) not in known:
            sums = (
                (fs.counts.astype(np.float64) @ self.ctx.share_matrix(fs)) * self.g_factor
            ).tolist()
            error = summation_error(fs.classes, 2)
            for d, level in enumerate(fs.levels):
                known.setdefault((d, level), (float(sums[d]), error))
        return known[(dim, fs.levels[dim])]

    def _exact_sums(self, dim: int, level: int) -> bool:
        """Whether every sum of the attribute's terms at this level is exact in any order.

        So when the domain shares at the level and the factors ``G`` and ``S``
        are multiples of ``2^-11`` (e.g. shares of 1 at the top level, or
        halves) and there are at most ``2^31`` records: each term
        (``|E| s G``, ``|E|`` or ``|E| s + S (|E| - |E| s)``, at most ``|E|``) and
        every partial sum is then a multiple of ``2^-22`` below ``2^31``,
        which a double holds exactly.
        """
        key = (dim, level)
        known = self._exact.get(key)
        if known is None:
            values = np.concatenate((self.ctx.shares(dim)[level], [self.g_factor, self.s_factor]))
            scaled = np.ldexp(values, 11)
            known = bool(
                np.all(np.isfinite(scaled))
                and np.all(np.floor(scaled) == scaled)
                and self.ctx.n <= 2**31
            )
            self._exact[key] = known
        return known

    def vector(self, node: NodeClasses) -> list[float]:
        """Per-attribute loss."""
        return self._sums(node, bound_only=False)[0]

    def class_loss(self, fs: FrequencySet) -> NDArray[Any]:
        """Each class's loss as ARX's ``getInformationLossInternal(node, entry)`` gives it.

        Per attribute ``|E| s_i`` (no factors, not normalized), reduced by the
        metric's aggregate and weights: ``(classes,)``, or ``(classes, m)``
        rows for ``rank``. ARX orders equal-size classes by it when a
        risk-based model suppresses classes (``HashGroupifyDistribution``).
        """
        share = fs.counts.astype(np.float64)[:, None] * self.ctx.share_matrix(fs)
        return aggregate_columns(list(share.T), self.weights, self.aggregate)

    def bound_vector(self, node: NodeClasses) -> list[float]:
        """Per-attribute loss with nothing suppressed."""
        return self._sums(node, bound_only=True)[1]

    def level_bounds(self, all_levels: NDArray[Any]) -> NDArray[Any] | None:
        """The bound from value frequencies, lowered by a margin (its sums run in another order)."""
        tables = []
        for dim, q in enumerate(self.ctx.qis):
            f = q.frequencies.astype(np.float64)
            row = []
            for level in range(q.height + 1):
                share = self.ctx.shares(dim)[level][q.level_codes[level]]
                total = sequential_sum(f * share * self.g_factor)
                row.append(max(0.0, self._normalize(total, dim) - _BOUND_MARGIN))
            tables.append(np.array(row))
        return aggregate_levels(tables, self.weights, self.aggregate, all_levels)


class Precision(LevelTableMetric):
    """ARX's monotonic precision (``MetricMDPrecision``; Sweeney 2002): ``(l_i / h_i) G``.

    0 for a hierarchy of height 0; default aggregate arithmetic mean. Ignores
    suppression, so it is monotone with and without it.
    """

    name = "precision"
    takes_gs_factor = True
    default_aggregate = "arithmetic_mean"
    monotone_with_generalization = True
    monotone_with_suppression = True

    def _ratio(self, dim: int) -> NDArray[Any]:
        h = int(self.ctx.heights[dim])
        levels = np.arange(h + 1, dtype=np.float64)
        return levels / float(h) if h else np.zeros(1)

    def level_table(self, dim: int) -> NDArray[Any]:
        """``(l / h) G`` at each level."""
        return self._ratio(dim) * self.g_factor

    def vector(self, node: NodeClasses) -> list[float]:
        """``(l_i / h_i) G``."""
        return self.bound_vector(node)


class PrecisionWithSuppression(Precision):
    """ARX's non-monotonic precision (``MetricMDNMPrecision``).

    Per attribute ``((n - s) (l_i / h_i) G + s S) / n`` with ``s`` suppressed
    records. Bound: ``min((l_i / h_i) G, S)``, every record's smallest
    possible cost; this is ARX's bound ``(l_i / h_i) G`` when ``gs >= 0.5``
    (ARX's bound is not a bound below 0.5, where ``S < G``). It is lowered by
    a relative ``1e-12``: the value's division by ``n`` may round it a unit in
    the last place below the bound's exact ratio.
    """

    name = "precision_with_suppression"
    monotone_with_suppression = False

    def level_table(self, dim: int) -> NDArray[Any]:
        """``min((l / h) G, S)`` at each level, lowered by a relative ``1e-12``."""
        return np.minimum(self._ratio(dim) * self.g_factor, self.s_factor) * (1.0 - 1e-12)

    def vector(self, node: NodeClasses) -> list[float]:
        """``((n - s) (l_i / h_i) G + s S) / n``."""
        counts = node.fs.counts
        outliers = np.asarray(node.outliers, dtype=bool)
        suppressed = float(int(counts[outliers].sum()))
        released = float(int(counts.sum()) - int(suppressed))
        n = float(self.ctx.n)
        ratios = self._ratio_lists()
        return [
            safe_div(
                (released * ratios[dim][level]) * self.g_factor + suppressed * self.s_factor, n
            )
            for dim, level in enumerate(node.levels)
        ]

    def _ratio_lists(self) -> list[list[float]]:
        """:meth:`_ratio` of every quasi-identifier as Python floats (made once)."""
        ratios: list[list[float]] | None = getattr(self, "_ratios", None)
        if ratios is None:
            ratios = [self._ratio(dim).tolist() for dim in range(len(self.ctx.heights))]
            self._ratios = ratios
        return ratios


class Height(LevelTableMetric):
    """ARX's height (``MetricMDHeight``): the levels, default aggregate sum (the node's height)."""

    name = "height"
    default_aggregate = "sum"
    monotone_with_generalization = True
    monotone_with_suppression = True

    def level_table(self, dim: int) -> NDArray[Any]:
        """The level itself."""
        return np.arange(int(self.ctx.heights[dim]) + 1, dtype=np.float64)

    def vector(self, node: NodeClasses) -> list[float]:
        """``l_i``."""
        return [float(lv) for lv in node.levels]


class NonUniformEntropy(LevelTableMetric):
    """ARX's monotonic non-uniform entropy (``MetricMDNUEntropy``; Gionis and Tassa 2009).

    Per attribute ``G sum_v a_v log2(b_v / a_v)``: ``a_v`` records with value
    ``v``, ``b_v`` records in ``v``'s group at the node's level, rounded down
    to 10 decimals; default aggregate sum. Suppressed records count as if
    released, so it depends on the levels only and is monotone with and
    without suppression.
    """

    name = "entropy"
    takes_gs_factor = True
    default_aggregate = "sum"
    monotone_with_generalization = True
    monotone_with_suppression = True

    def level_table(self, dim: int) -> NDArray[Any]:
        """The entropy at each level."""
        h = int(self.ctx.heights[dim])
        return np.array(
            [_negated(self.ctx.entropy_raw(dim, lv) * self.g_factor) for lv in range(h + 1)]
        )

    def vector(self, node: NodeClasses) -> list[float]:
        """The entropy at the node's levels."""
        return self.bound_vector(node)


class NonUniformEntropyWithSuppression(NonUniformEntropy):
    """ARX's non-monotonic non-uniform entropy (``MetricMDNUNMEntropy``).

    The monotonic entropy of all records (times ``G``) plus ``S`` times the
    entropy of the suppressed block: per attribute,
    ``sum_g c_g log2(s / c_g)`` over the groups ``g`` (at the node's level)
    of the ``s`` suppressed records, ``c_g`` of them in ``g``. The monotonic
    entropy is its bound.
    """

    name = "entropy_with_suppression"
    monotone_with_suppression = False

    def vector(self, node: NodeClasses) -> list[float]:
        """Per-attribute entropy with the suppressed block's term."""
        fs = node.fs
        out_mask = np.asarray(node.outliers, dtype=bool) & (fs.counts > 0)
        counts = fs.counts[out_mask].astype(np.float64)
        total = float(counts.sum())
        values = []
        for dim, level in enumerate(fs.levels):
            raw = self.ctx.entropy_raw(dim, level) * self.g_factor
            if total != 0.0:
                codes = self.ctx.group_codes(fs, dim)[out_mask]
                per_group = _suppressed_groups(self.ctx.arx_ids(dim)[level][codes], counts)
                terms = java_log2_terms(per_group, per_group / total) * self.s_factor
                raw = float(np.cumsum(np.concatenate(([raw], terms)))[-1])
            values.append(_negated(raw))
        return values


#: above this many groups the suppressed block's terms are summed in code order, not ARX's
_HPPC_EMULATION_LIMIT = 20000


def _suppressed_groups(ids: NDArray[Any], counts: NDArray[Any]) -> NDArray[Any]:
    """Suppressed records per group, in the order ARX's hash map yields the groups.

    ``ids`` are the suppressed classes' group labels in ARX's dictionary, in
    class order (the map's insertion order); see
    :func:`~anonlab.lattice.metrics.base.hppc_int_order`. Beyond
    ``_HPPC_EMULATION_LIMIT`` groups, ascending label order (the sum may then
    differ from ARX's in the last bits).
    """
    uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    totals = np.bincount(inverse.reshape(-1), weights=counts, minlength=uniq.size)
    if uniq.size > _HPPC_EMULATION_LIMIT:
        return np.asarray(totals)
    inserted = uniq[np.argsort(first, kind="stable")]
    order = np.array(hppc_int_order([int(x) for x in inserted]), dtype=np.int64)
    return np.asarray(totals[np.searchsorted(uniq, order)])


class NormalizedEntropy(NonUniformEntropyWithSuppression):
    """ARX's normalized non-uniform entropy (``MetricMDNUNMNormalizedEntropy``).

    The non-monotonic entropy of each attribute divided by its entropy when
    every record is generalized to one group, ``sum_v a_v log2(N / a_v)``
    (``N`` the rows of ARX's input table). ARX fixes ``gs`` at 0.5 here and
    defines it only when every quasi-identifier has at least two distinct
    values in the table (otherwise it divides by zero); default aggregate sum.
    """

    name = "normalized_entropy"
    takes_gs_factor = False

    @cached_property
    def upper(self) -> list[float]:
        """Each attribute's entropy with every record in one group (:func:`_entropy_upper`)."""
        return _entropy_upper(self.ctx)

    @classmethod
    def undefined_reason(cls, ctx: LossContext) -> str | None:
        """Undefined when a quasi-identifier has a single value (ARX divides by zero)."""
        flat = [name for name, u in zip(ctx.names, _entropy_upper(ctx), strict=True) if u == 0.0]
        if not flat:
            return None
        return (
            f"metric 'normalized_entropy' is not defined when a quasi-identifier has a "
            f"single value in the table ({', '.join(flat)}): choose metric 'entropy' or "
            "'entropy_with_suppression'"
        )

    def level_table(self, dim: int) -> NDArray[Any]:
        """The monotonic entropy at each level over the attribute's upper bound."""
        table = super().level_table(dim)
        return np.array([safe_div(float(v), self.upper[dim]) for v in table])

    def vector(self, node: NodeClasses) -> list[float]:
        """Per-attribute non-monotonic entropy over its upper bound (ARX's NaN or infinity
        where the bound is 0)."""
        return [safe_div(v, u) for v, u in zip(super().vector(node), self.upper, strict=True)]


def _entropy_upper(ctx: LossContext) -> list[float]:
    """ARX's normalization of each attribute: its entropy with every record in one group."""
    return [_negated(ctx.entropy_top_raw(i)) for i in range(ctx.m)]
