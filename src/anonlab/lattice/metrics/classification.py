"""ARX's classification metric (``MetricSDClassification``; Iyengar 2002, as extended in Bild,
Kuhn and Prasser's SafePub, 2018, section 5.5).

The release is judged by how well each class predicts one or more *target*
attributes (ARX's response variables): a classifier that answers every
record of a class with the class's most frequent target value errs on the
records with another value. Notation: ``n`` records, ``gs`` the
generalization/suppression factor with ``G`` and ``S`` its factors.

Penalties (ARX's ``initializeInternal``): a suppressed record costs
``P_s = gs`` per target, a record whose value is not its class's majority
``P_i = G``, every record of a class without a unique majority value
``P_n = S``; ``P_max = max(P_s, P_i, P_n)``. Every penalty is divided by
``P_max n``, so the loss is at most the number of targets.

* A target that is not a quasi-identifier is judged in each released class
  (its records' values in the table): ``(|E| - top1) P_i / (P_max n)`` when the
  most frequent value ``top1`` is unique, else ``|E| P_n / (P_max n)``.
* A target that is a quasi-identifier is judged over the released classes
  that agree on every other quasi-identifier (ARX's ``MetaHashGroupify``),
  on its generalized values, with its penalties moved towards ``P_max`` as it
  is generalized: at level ``l`` with ``d_l`` distinct values (``d_0`` at the
  bottom), ``f = 1 - (d_l - 1) / (d_0 - 1)`` (0 if ``d_0 = 1``), and the
  penalties become ``P (1 - f) + P_max f``; at ``f = 1`` every record costs
  ``P_max``.
* A suppressed class costs ``|E| P_s / (P_max n)`` per target.

The terms are added one by one in ARX's order (classes as
:func:`~anonlab.lattice.metrics.order.arx_class_order` orders them): class by class the targets
that are not quasi-identifiers (in column order), then each
quasi-identifier target: its suppressed classes, then its groups in order of
first appearance. See docs/formulas.md §5.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.dataset import Role, as_text
from anonlab.errors import AnonlabError
from anonlab.grouping import group_tuples
from anonlab.lattice.freqset import FrequencySet, aggregate_histograms
from anonlab.lattice.metrics.base import (
    DEFAULT_GS_FACTOR,
    LossContext,
    Metric,
    NodeClasses,
    sequential_sum,
)
from anonlab.lattice.metrics.order import arx_class_order


def majority_stats(
    groups: NDArray[Any],
    values: NDArray[Any],
    weights: NDArray[Any],
    n_groups: int,
    n_values: int,
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """Per group: its records, the largest and second largest count of one value.

    ARX's ``getStatistics``: ``(count, top1, top2)`` with ``top2 = top1`` when
    two values share the largest count and ``-1`` when the group has a single
    value (and ``top1 = -1`` for a group without records).
    """
    cls, _, cnt = aggregate_histograms(groups, values, weights, n_groups, n_values)
    count = np.bincount(cls, weights=cnt, minlength=n_groups).astype(np.int64)
    top1 = np.full(n_groups, -1, dtype=np.int64)
    top2 = np.full(n_groups, -1, dtype=np.int64)
    if cls.shape[0]:
        order = np.lexsort((-cnt, cls))
        c, k = cls[order], cnt[order]
        start = np.ones(c.shape[0], dtype=bool)
        start[1:] = c[1:] != c[:-1]
        top1[c[start]] = k[start]
        second = np.zeros(c.shape[0], dtype=bool)
        second[1:] = start[:-1] & ~start[1:]
        top2[c[second]] = k[second]
    return count, top1, top2


class Classification(Metric):
    """ARX's classification metric (``MetricSDClassification``): the share of target
    values a majority vote per class gets wrong, with suppressed records penalized.

    ``targets`` are the target columns (ARX's response variables; at least
    one, none identifying). ARX declares it monotone neither with nor without
    suppression and gives no lower bound: the bound is 0 (no loss is negative).
    """

    name = "classification"
    takes_gs_factor = True
    monotone_with_generalization = False
    monotone_with_suppression = False
    needs_base_index = True
    options: ClassVar[tuple[str, ...]] = ("targets",)

    def __init__(
        self,
        ctx: LossContext,
        *,
        gs_factor: float = DEFAULT_GS_FACTOR,
        aggregate: str | None = None,
        weights: Mapping[str, float] | None = None,
        targets: Sequence[str] | None = None,
    ) -> None:
        super().__init__(ctx, gs_factor=gs_factor, aggregate=aggregate, weights=weights)
        self.targets = check_targets(ctx, targets)
        self.qi_targets = [ctx.names.index(t) for t in self.targets if t in ctx.names]
        self.other_targets = [t for t in self.targets if t not in ctx.names]
        self.p_suppressed = self.gs_factor
        self.p_infrequent = self.g_factor
        self.p_no_majority = self.s_factor
        self.p_max_scale = max(self.p_suppressed, self.p_infrequent, self.p_no_majority)
        self.p_max = self.p_max_scale * float(ctx.n)
        self._histograms: list[tuple[NDArray[Any], NDArray[Any], NDArray[Any], int]] | None = None

    def scale_factors(self, dim: int) -> NDArray[Any]:
        """``f`` at each level of quasi-identifier ``dim``: ``1 - (d_l - 1) / (d_0 - 1)``."""
        q = self.ctx.qis[dim]
        d0 = q.cardinality(0)
        if d0 == 1:
            return np.zeros(q.height + 1)
        return np.array(
            [1.0 - float(q.cardinality(lv) - 1) / float(d0 - 1) for lv in range(q.height + 1)]
        )

    def _tuple_histograms(self) -> list[tuple[NDArray[Any], NDArray[Any], NDArray[Any], int]]:
        """Per non-QI target: ``(tuple, value, count, values)`` over the table's distinct
        quasi-identifier tuples (computed once)."""
        if self._histograms is None:
            row_tuple, tuple_codes, _ = self.ctx.row_tuples()
            out = []
            for name in self.other_targets:
                codes, uniques = pd.factorize(as_text(self.ctx.dataset.frame[name]), sort=False)
                v = max(len(uniques), 1)
                t, val, cnt = aggregate_histograms(
                    row_tuple, codes.astype(np.int64), None, int(tuple_codes.shape[0]), v
                )
                out.append((t, val, cnt, v))
            self._histograms = out
        return self._histograms

    def _distribution_terms(
        self, count: NDArray[Any], top1: NDArray[Any], top2: NDArray[Any], scale: float
    ) -> NDArray[Any]:
        """ARX's ``getPenaltyDistribution`` of each group."""
        n = count.astype(np.float64)
        if scale == 1.0:
            return np.asarray(n * (self.p_max_scale / self.p_max))
        infrequent = self.p_infrequent * (1.0 - scale) + self.p_max_scale * scale
        no_majority = self.p_no_majority * (1.0 - scale) + self.p_max_scale * scale
        return np.where(
            top1 != top2,
            (count - top1).astype(np.float64) * (infrequent / self.p_max),
            n * (no_majority / self.p_max),
        )

    def _other_terms(
        self, node: NodeClasses, live: NDArray[Any], released: NDArray[Any], order: NDArray[Any]
    ) -> NDArray[Any]:
        """Class by class: the suppressed class's one term or each non-QI target's term."""
        fs = node.fs
        counts = fs.counts.astype(np.int64)
        width = len(self.other_targets)
        if width == 0:
            return np.zeros(0)
        cls = self.ctx.class_of_tuples(fs)
        terms = np.zeros((fs.classes, width))
        for j, (t, val, cnt, v) in enumerate(self._tuple_histograms()):
            count, top1, top2 = majority_stats(cls[t], val, cnt, fs.classes, v)
            terms[:, j] = self._distribution_terms(count, top1, top2, 0.0)
        outlier = (counts * width).astype(np.float64) * (self.p_suppressed / self.p_max)
        terms[~released, 0] = outlier[~released]
        terms[~released, 1:] = 0.0
        return np.asarray(terms[order][live[order]].reshape(-1))

    def _qi_terms(
        self,
        node: NodeClasses,
        dim: int,
        live: NDArray[Any],
        released: NDArray[Any],
        order: NDArray[Any],
    ) -> NDArray[Any]:
        """One quasi-identifier target: its suppressed classes, then its groups."""
        fs = node.fs
        counts = fs.counts.astype(np.int64)[order]
        live, released = live[order], released[order]
        outlier = counts[live & ~released].astype(np.float64) * (self.p_suppressed / self.p_max)
        kept = live & released
        codes = self.ctx.all_group_codes(fs)[order][kept]
        others = [i for i in range(self.ctx.m) if i != dim]
        if codes.shape[0] == 0:
            return np.asarray(outlier)
        if others:
            cards = [self.ctx.qis[i].cardinality(fs.levels[i]) for i in others]
            group, _ = group_tuples(np.ascontiguousarray(codes[:, others]), cards)
        else:
            group = np.zeros(codes.shape[0], dtype=np.int64)
        n_groups = int(group.max()) + 1
        count, top1, top2 = majority_stats(
            group.astype(np.int64),
            codes[:, dim].astype(np.int64),
            counts[kept],
            n_groups,
            self.ctx.qis[dim].cardinality(fs.levels[dim]),
        )
        scale = float(self.scale_factors(dim)[fs.levels[dim]])
        return np.concatenate((outlier, self._distribution_terms(count, top1, top2, scale)))

    def value(self, node: NodeClasses) -> float:
        """The penalties of every target, summed one by one in ARX's order."""
        live = node.live
        released = ~np.asarray(node.outliers, dtype=bool)
        order = arx_class_order(self.ctx, node.fs)
        parts = [self._other_terms(node, live, released, order)]
        parts.extend(self._qi_terms(node, dim, live, released, order) for dim in self.qi_targets)
        return sequential_sum(np.concatenate(parts))

    def class_loss(self, fs: FrequencySet) -> NDArray[Any]:
        """Each class's loss as ARX's ``getInformationLossInternal(node, entry)`` gives it,
        released: the penalty of the last non-QI target (0 without one; ARX's per-class loss
        leaves out quasi-identifier targets). Orders the suppression of equal-size classes for
        the risk-based models."""
        if not self.other_targets:
            return np.zeros(fs.classes)
        t, val, cnt, v = self._tuple_histograms()[-1]
        count, top1, top2 = majority_stats(self.ctx.class_of_tuples(fs)[t], val, cnt, fs.classes, v)
        return self._distribution_terms(count, top1, top2, 0.0)

    def lower_bound(self, node: NodeClasses) -> float:
        """0: no penalty is negative (ARX gives no bound)."""
        return 0.0


def check_targets(ctx: LossContext, targets: Sequence[str] | None) -> list[str]:
    """The target columns in table order; errors name ``targets``.

    Each must be a column of the table, not identifying (identifying columns
    are not released), named once; at least one is needed. A target that is
    not a quasi-identifier needs the table's rows (not a rowless dataset).
    """
    given = [str(t) for t in (targets or [])]
    if not given:
        raise AnonlabError(
            "metric 'classification' needs targets: name the column(s) whose "
            "values the release should still predict, e.g. salary-class",
            parameter="targets",
        )
    columns = [str(c) for c in ctx.dataset.frame.columns]
    for name in given:
        if given.count(name) > 1:
            raise AnonlabError(
                f"targets names '{name}' twice: name each column once", parameter="targets"
            )
        if name not in columns:
            raise AnonlabError(
                f"targets names '{name}', which is not a column of the table "
                f"(columns: {', '.join(columns)})",
                parameter="targets",
            )
        if ctx.dataset.roles.get(name) == Role.IDENTIFYING:
            raise AnonlabError(
                f"targets names '{name}', an identifying column the release "
                "drops: choose a column that is released",
                parameter="targets",
            )
        if name not in ctx.names and ctx.dataset.rowless:
            raise AnonlabError(
                f"targets names '{name}', which is not a quasi-identifier, but "
                "the table's rows stay in an engine (a rowless dataset), where "
                "only quasi-identifiers can be targets",
                parameter="targets",
            )
    return sorted(given, key=columns.index)
