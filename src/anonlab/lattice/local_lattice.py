"""Every node of a lattice judged at once, for the searches of local recoding.

Local recoding (:mod:`anonlab.lattice.local`) searches the same lattice again and again on
the records still suppressed, which soon are few: a few hundred, then a dozen. There the
pruning of a Flash search saves little (ARX's loss metric with a low generalization/
suppression factor bounds few nodes away) while each node check costs the same fixed time.
:class:`LatticeClasses` instead judges every node of the lattice in a few array passes:

* Nodes are taken level by level (the sum of their levels). The classes of a node are those
  of one predecessor (of the nodes with one attribute one level lower, the one with the
  fewest classes) with that attribute lifted one level and equal codes merged, all nodes of
  a level in one factorization. Classes keep the order of their first record, as the
  frequency sets (and ARX's hash groupify) number them: the predecessor's classes are in
  that order, and a merged class's first record is its first part's.
* The criteria judge all classes of a level in one call (they must be class-based: each
  class judged alone, :func:`class_based`), with each class's histograms of the sensitive
  attributes rolled up alongside and the reference distributions of the whole table.
* ARX's loss metric (:class:`~anonlab.lattice.metrics.multidim.LossMetric`) is then a sum of
  one term per class and attribute; :meth:`LatticeClasses.optimum` computes it for every
  node for a given generalization/suppression factor, so the searches that only raise the
  factor on the same records reuse the classes and verdicts.

The sums follow ARX's arithmetic: each class's term ``|E| s G`` (released) or
``|E| s + S (|E| - |E| s)`` (suppressed) is one product as ARX writes it, and a node's terms
are added left to right in class order (``numpy.bincount`` with weights adds the weights of
each bin in input order, one rounding per term); then ARX's normalization
``(sum - G n / D) / (n - G n / D)``, floored at 0, rounded down to 10 decimals. The aggregate
over attributes is computed for all nodes with ``numpy.power`` and recomputed with the
metric's own :meth:`~anonlab.lattice.metrics.multidim.MultiDimensionalMetric.reduce` for the
nodes near the least value, so the chosen node is the one a search would choose: least loss
(ARX's ``compareTo``), then lowest level, then smallest level vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.dataset import Dataset
from anonlab.grouping import factorize_int64, group_tuples
from anonlab.lattice.freqset import aggregate_histograms
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.metrics.base import ROUND_FACTOR, sequential_sum
from anonlab.lattice.metrics.multidim import LossMetric
from anonlab.lattice.search import ordered, sensitive_attributes
from anonlab.privacy import ClassStats, Criterion, SensitiveHistograms

#: the most classes the roll-ups of one lattice level may hold (above, the caller searches
#: instead)
MAX_PAIRS = 4_000_000

#: how far above the least approximate loss a node's loss is computed exactly: the
#: approximation differs from ARX's sums by rounding (about 1e-15 relative) and by one step of
#: ARX's rounding down to 10 decimals per attribute
_MARGIN = 1e-8


def class_based(criteria: Sequence[Criterion]) -> bool:
    """Whether every criterion judges classes one by one: no whole-node condition, no
    suppression of its own (sample-based), no population, no class values."""
    for c in criteria:
        kind = type(c)
        if (
            kind.enforce is not Criterion.enforce
            or kind.acceptable is not Criterion.acceptable
            or c.needs_population
            or getattr(c, "needs_codes", False)
        ):
            return False
    return True


@dataclass
class _Level:
    """The classes of the nodes of one lattice level, node after node, each node's classes
    in order of their first record."""

    nodes: NDArray[Any]  # (k,) node numbers
    starts: NDArray[Any]  # (k + 1,) where each node's classes start
    keys: NDArray[Any]  # (C,) int64 each class's codes at its node's levels, packed
    counts: NDArray[Any]  # (C,) int64
    #: per sensitive attribute: (class, value, count) triples sorted by class
    pairs: dict[str, tuple[NDArray[Any], NDArray[Any], NDArray[Any]]]


def _ranges(starts: NDArray[Any], ends: NDArray[Any]) -> NDArray[Any]:
    """The concatenation of ``arange(s, e)`` for each pair (vectorized)."""
    sizes = ends - starts
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
    return np.asarray(np.arange(total, dtype=np.int64) + offsets, dtype=np.int64)


class LatticeClasses:
    """Every node's classes of a table, judged by class-based criteria (see the module
    docstring). Build it with :meth:`build`, which returns ``None`` when the lattice's
    roll-ups of one lattice level would hold more than ``max_pairs`` classes."""

    def __init__(self, dataset: Dataset, lattice: Lattice) -> None:
        self.dataset = dataset
        self.lattice = lattice
        self.qis = dataset.qis
        self.m = len(dataset.qis)
        self.n = dataset.n
        #: node number = levels @ strides (a lattice from level 0 in every attribute)
        self.strides = np.array(
            [lattice.index([1 if i == d else 0 for i in range(self.m)]) for d in range(self.m)],
            dtype=np.int64,
        )
        #: each unit's distinct tuple (first-appearance numbering) and the tuples' codes: the
        #: units are the records, or on a rowless dataset the tuples of its base frequency set
        if dataset.rowless:
            base = dataset.base
            self.tuples = np.asarray(base.tuples, dtype=np.int64)
            self.distinct = int(self.tuples.shape[0])
            self.inverse = np.arange(self.distinct, dtype=np.int64)
            self.tuple_counts = np.asarray(base.counts, dtype=np.int64)
        else:
            codes = dataset.code_matrix()
            self.inverse, first = group_tuples(codes, [q.cardinality(0) for q in self.qis])
            self.tuples = codes[first].astype(np.int64)
            self.distinct = int(first.shape[0])
            self.tuple_counts = np.bincount(self.inverse, minlength=self.distinct).astype(np.int64)
        #: the packing of a class's codes into one int64 (mixed radix of the level-0
        #: cardinalities, which bound every level's)
        self.radix = np.array([q.cardinality(0) for q in self.qis], dtype=np.int64)
        self.mult = np.ones(self.m, dtype=np.int64)
        for d in range(self.m - 2, -1, -1):
            self.mult[d] = self.mult[d + 1] * self.radix[d + 1]
        #: per node (filled by build): records suppressed, and per attribute the sums of
        #: ``|E| s`` over all classes and over the suppressed ones (the loss metric's sums
        #: for any factor follow from them, up to rounding: :meth:`optimum`)
        self.suppressed = np.zeros(lattice.size, dtype=np.int64)
        self.all_shares = np.zeros((lattice.size, self.m))
        self.suppressed_shares = np.zeros((lattice.size, self.m))
        self.criteria: Sequence[Criterion] = ()
        self.share_flat = np.zeros(0)
        self.share_at = np.zeros((self.m, 1), dtype=np.int64)

    # ------------------------------------------------------------------ build
    @classmethod
    def build(
        cls,
        dataset: Dataset,
        lattice: Lattice,
        criteria: Sequence[Criterion],
        metric: LossMetric,
        max_pairs: int = MAX_PAIRS,
    ) -> LatticeClasses | None:
        """Judge every node of ``lattice`` on ``dataset`` (``None`` if too large)."""
        if dataset.n == 0 or not class_based(criteria):
            return None
        out = cls(dataset, lattice)
        return out if out._judge(criteria, metric, max_pairs) else None

    def histograms(
        self, name: str, class_of_tuple: NDArray[Any], n_classes: int
    ) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
        """The (class, value, count) triples of sensitive attribute ``name`` for the classes
        ``class_of_tuple`` gives each distinct tuple, sorted by class, then value: from the
        records' codes, or from the base frequency set's per-tuple histograms (the same
        integer sums)."""
        attr = self.dataset.sensitive_attribute(name)
        if self.dataset.rowless:
            h = self.dataset.base.sensitive[name]
            c, v, k = aggregate_histograms(
                class_of_tuple[np.asarray(h.classes, dtype=np.int64)],
                np.asarray(h.values, dtype=np.int64),
                np.asarray(h.counts, dtype=np.float64),
                n_classes,
                len(attr.values),
            )
        else:
            c, v, k = aggregate_histograms(
                class_of_tuple[self.inverse], attr.codes, None, n_classes, len(attr.values)
            )
        return c.astype(np.int64), v.astype(np.int64), np.rint(k).astype(np.int64)

    def _lift_table(self) -> tuple[NDArray[Any], NDArray[Any]]:
        """A flat table lifting a code of attribute ``d`` at level ``l`` to level ``l + 1``,
        and the offset of each (attribute, level) in it."""
        parts: list[NDArray[Any]] = []
        offset = np.zeros((self.m, max(int(q.height) for q in self.qis) + 1), dtype=np.int64)
        position = 0
        for d, q in enumerate(self.qis):
            for lv in range(q.height):
                offset[d, lv] = position
                lift = q.lift(lv, lv + 1).astype(np.int64)
                parts.append(lift)
                position += lift.shape[0]
        flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return flat, offset

    def _share_table(self, metric: LossMetric) -> tuple[NDArray[Any], NDArray[Any]]:
        """ARX's domain share of each group, flat, and the offset of each (attribute, level)."""
        parts: list[NDArray[Any]] = []
        offset = np.zeros((self.m, max(int(q.height) for q in self.qis) + 1), dtype=np.int64)
        position = 0
        for d in range(self.m):
            for lv, table in enumerate(metric.ctx.shares(d)):
                offset[d, lv] = position
                parts.append(np.asarray(table, dtype=np.float64))
                position += table.shape[0]
        return np.concatenate(parts), offset

    def _bottom(self, names: Sequence[str]) -> _Level:
        """The bottom node: one class per distinct tuple."""
        every = np.arange(self.distinct, dtype=np.int64)
        pairs = {name: self.histograms(name, every, self.distinct) for name in names}
        return _Level(
            nodes=np.array([self.lattice.index([0] * self.m)], dtype=np.int64),
            starts=np.array([0, self.distinct], dtype=np.int64),
            keys=self.tuples @ self.mult,
            counts=self.tuple_counts,
            pairs=pairs,
        )

    def _judge(self, criteria: Sequence[Criterion], metric: LossMetric, max_pairs: int) -> bool:
        """Roll the classes up level by level, judge them, keep each node's sums."""
        levels = np.asarray(self.lattice.all_levels, dtype=np.int64)
        sums = levels.sum(axis=1)
        names = sensitive_attributes(criteria)
        globals_ = {
            name: np.asarray(self.dataset.sensitive_attribute(name).frequencies, dtype=np.int64)
            for name in names
        }
        n_values = {name: len(self.dataset.sensitive_attribute(name).values) for name in names}
        lift, lift_at = self._lift_table()
        share_flat, share_at = self._share_table(metric)
        space = int(self.mult[0] * self.radix[0])
        if space * self.lattice.size >= 2**62:
            return False
        # every record's share at each level (ARX's bound, a node's sum over all its classes)
        everything = np.zeros((self.m, levels.max(initial=0) + 1))
        for d, q in enumerate(self.qis):
            for lv in range(q.height + 1):
                group = np.asarray(q.level_codes[lv], dtype=np.int64)[self.tuples[:, d]]
                share = share_flat[share_at[d, lv] + group]
                everything[d, lv] = float(np.dot(self.tuple_counts.astype(np.float64), share))
        order = np.argsort(sums, kind="stable")
        by_level = np.split(order, np.flatnonzero(np.diff(sums[order])) + 1)
        # node number -> (level list position, index within that level)
        where = np.zeros(levels.shape[0], dtype=np.int64)
        self.criteria = criteria
        self.share_flat, self.share_at = share_flat, share_at
        previous = self._bottom(names)
        held = 0
        for step, nodes in enumerate(by_level):
            nodes = np.asarray(nodes, dtype=np.int64)
            if step == 0:
                current = previous
                current.nodes = nodes
            else:
                current = self._roll_up(
                    previous, nodes, levels, where, lift, lift_at, space, n_values
                )
                held = int(current.keys.shape[0])
                if held > max_pairs:
                    return False
            where[nodes] = np.arange(nodes.shape[0])
            sizes = np.diff(current.starts)
            of = np.repeat(nodes, sizes)
            stats = ClassStats(
                levels=tuple(int(v) for v in levels[nodes[0]]),
                counts=current.counts,
                sensitive={
                    name: SensitiveHistograms(
                        classes=c, values=v, counts=k, global_counts=globals_[name]
                    )
                    for name, (c, v, k) in current.pairs.items()
                },
            )
            bad = np.zeros(current.counts.shape[0], dtype=bool)
            for criterion in criteria:
                bad |= np.asarray(criterion.outliers(stats), dtype=bool)
            self.suppressed[nodes] = np.rint(
                np.bincount(
                    of, weights=np.where(bad, current.counts, 0), minlength=self.lattice.size
                )[nodes]
            ).astype(np.int64)
            for d in range(self.m):
                self.all_shares[nodes, d] = everything[d, levels[nodes, d]]
            # the suppressed classes' shares, summed over the fewer of the suppressed and the
            # released classes (the latter then taken from the node's total)
            complement = 2 * int(np.count_nonzero(bad)) > bad.shape[0]
            side = np.flatnonzero(~bad if complement else bad)
            side_of = of[side]
            size = current.counts[side].astype(np.float64)
            keys = current.keys[side]
            for d in range(self.m):
                code = (keys // self.mult[d]) % self.radix[d]
                share = size * share_flat[share_at[d, levels[side_of, d]] + code]
                total = np.bincount(side_of, weights=share, minlength=self.lattice.size)[nodes]
                self.suppressed_shares[nodes, d] = (
                    self.all_shares[nodes, d] - total if complement else total
                )
            previous = current
        return True

    def _roll_up(
        self,
        previous: _Level,
        nodes: NDArray[Any],
        levels: NDArray[Any],
        where: NDArray[Any],
        lift: NDArray[Any],
        lift_at: NDArray[Any],
        space: int,
        n_values: dict[str, int],
    ) -> _Level:
        """The classes of ``nodes`` (one lattice level) from those of their predecessors on
        ``previous`` (the level below): of its predecessors, the one with the fewest classes."""
        lv = levels[nodes]
        # the predecessor with the fewest classes: the fewest entries to merge
        classes_of = np.diff(previous.starts)
        candidates = nodes[:, None] - self.strides[None, :]
        raised = lv > 0
        held = np.where(
            raised,
            classes_of[where[np.where(raised, candidates, nodes[0])]],
            np.iinfo(np.int64).max,
        )
        dim = np.argmin(held, axis=1)
        parent_levels = lv.copy()
        parent_levels[np.arange(nodes.shape[0]), dim] -= 1
        index = where[candidates[np.arange(nodes.shape[0]), dim]]
        begin, end = previous.starts[index], previous.starts[index + 1]
        take = _ranges(begin, end)
        sizes = end - begin
        block = np.repeat(np.arange(nodes.shape[0], dtype=np.int64), sizes)
        keys = previous.keys[take]
        d_row = dim[block]
        level_row = parent_levels[block, d_row]
        step = self.mult[d_row]
        code = (keys // step) % self.radix[d_row]
        keys += (lift[lift_at[d_row, level_row] + code] - code) * step
        cls, _ = factorize_int64(keys + block * space)
        rises = np.diff(np.maximum.accumulate(cls), prepend=-1) > 0
        first = np.flatnonzero(rises)
        n_classes = int(first.shape[0])
        counts = np.bincount(cls, weights=previous.counts[take], minlength=n_classes)
        owner = block[first]
        starts = np.searchsorted(owner, np.arange(nodes.shape[0] + 1))
        pairs = {}
        for name, (pc, pv, pk) in previous.pairs.items():
            # each pair of a parent class goes, for every node rolled up from that parent, to
            # the node's class that absorbs it: parent classes are contiguous, and so are
            # their pairs (sorted by class)
            pair_start = np.searchsorted(pc, previous.starts[:-1])
            pair_end = np.searchsorted(pc, previous.starts[1:])
            ps, pe = pair_start[index], pair_end[index]
            ptake = _ranges(ps, pe)
            pblock = np.repeat(np.arange(nodes.shape[0], dtype=np.int64), pe - ps)
            # position of the pair's class within the gathered classes of its node
            gathered_start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
            position = gathered_start[pblock] + (pc[ptake] - begin[pblock])
            c, v, k = aggregate_histograms(
                cls[position], pv[ptake], pk[ptake].astype(np.float64), n_classes, n_values[name]
            )
            pairs[name] = (c.astype(np.int64), v.astype(np.int64), np.rint(k).astype(np.int64))
        return _Level(
            nodes=nodes,
            starts=starts.astype(np.int64),
            keys=keys[first],
            counts=np.rint(counts).astype(np.int64),
            pairs=pairs,
        )

    # ---------------------------------------------------------------- optimum
    def approximate_losses(self, metric: LossMetric) -> NDArray[Any]:
        """(N, m) each node's per-attribute loss under ``metric``, from the node's sums: the
        sum of ARX's terms is ``G (A - B) + B + S (R - B)`` (``A`` all classes' ``|E| s``,
        ``B`` the suppressed classes', ``R`` the suppressed records; ``R`` alone if
        ``S = 1``), which differs from ARX's sum in class order by rounding only."""
        g, s = metric.g_factor, metric.s_factor
        a, b = self.all_shares, self.suppressed_shares
        r = self.suppressed.astype(np.float64)[:, None]
        total = g * (a - b) + (r if s == 1.0 else b + s * (r - b))
        return self._normalized(total, metric)

    def _normalized(self, total: NDArray[Any], metric: LossMetric) -> NDArray[Any]:
        """ARX's ``normalizeGeneralized`` of (..., m) sums, floored at 0, rounded down to 10
        decimals."""
        n = float(self.n)
        out = np.empty_like(total)
        for d in range(self.m):
            low = metric.g_factor * n / metric.ctx.domain_size(d)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = (total[..., d] - low) / (n - low)
            ratio = np.where(ratio >= 0.0, ratio, 0.0)
            out[..., d] = np.floor(ratio * ROUND_FACTOR) / ROUND_FACTOR
        return out

    def exact(self, levels: Sequence[int], metric: LossMetric) -> tuple[list[float], NDArray[Any]]:
        """The node's per-attribute loss as ARX computes it (terms added in class order) and
        whether each distinct tuple is suppressed there."""
        key = np.zeros(self.distinct, dtype=np.int64)
        codes = []
        for d, (q, lv) in enumerate(zip(self.qis, levels, strict=True)):
            column = np.asarray(q.level_codes[lv], dtype=np.int64)[self.tuples[:, d]]
            codes.append(column)
            key = key * q.cardinality(0) + column
        cls, _ = factorize_int64(key)
        rises = np.diff(np.maximum.accumulate(cls), prepend=-1) > 0
        first = np.flatnonzero(rises)
        n_classes = int(first.shape[0])
        counts = np.bincount(cls, weights=self.tuple_counts, minlength=n_classes)
        counts = np.rint(counts).astype(np.int64)
        sensitive = {}
        for name in sensitive_attributes(self.criteria):
            attr = self.dataset.sensitive_attribute(name)
            c, v, k = self.histograms(name, cls, n_classes)
            sensitive[name] = SensitiveHistograms(
                classes=c,
                values=v,
                counts=k,
                global_counts=np.asarray(attr.frequencies, dtype=np.int64),
            )
        stats = ClassStats(levels=tuple(levels), counts=counts, sensitive=sensitive)
        bad = np.zeros(n_classes, dtype=bool)
        for criterion in self.criteria:
            bad |= np.asarray(criterion.outliers(stats), dtype=bool)
        size = counts.astype(np.float64)
        g, s = metric.g_factor, metric.s_factor
        totals = np.empty(self.m)
        for d in range(self.m):
            share = size * self.share_flat[self.share_at[d, levels[d]] + codes[d][first]]
            suppressed = size if s == 1.0 else share + s * (size - share)
            terms = np.where(bad, suppressed, share * g)
            totals[d] = sequential_sum(terms)
        values = self._normalized(totals[None, :], metric)[0]
        return [float(v) for v in values], bad[cls]

    def optimum(
        self, metric: LossMetric, limit: int
    ) -> tuple[tuple[int, ...], NDArray[Any]] | None:
        """The optimal node among those suppressing at most ``limit`` records, and whether
        each record is suppressed there; ``None`` if no node is acceptable.

        The loss of every node is approximated from its sums (:meth:`approximate_losses`,
        aggregated with ``numpy.power``); the nodes within :data:`_MARGIN` of the least
        approximation (an error far above rounding's) are computed exactly
        (:meth:`exact`) and compared as a search compares them: least loss (ARX's
        ``compareTo``), then lowest level, then smallest level vector.
        """
        acceptable = np.flatnonzero(self.suppressed <= limit)
        if acceptable.size == 0:
            return None
        levels = np.asarray(self.lattice.all_levels, dtype=np.int64)
        candidates = acceptable
        if metric.aggregate != "rank":
            approx = self._aggregate(self.approximate_losses(metric)[acceptable], metric)
            finite = np.isfinite(approx)
            if finite.any():
                best = float(approx[finite].min())
                candidates = acceptable[approx <= best + _MARGIN]
        chosen: tuple[Any, ...] | None = None
        tuples_out: NDArray[Any] | None = None
        if metric.s_factor == 1.0:
            # a node suppressing every record costs each of them 1 (S = 1): its sums are the
            # record count, exact in any order, so all such nodes tie; the lowest stands for
            # them (they are often most of the lattice)
            whole = self.suppressed[candidates] == self.n
            if whole.any():
                rows = [tuple(int(v) for v in levels[x]) for x in candidates[whole].tolist()]
                row = min(rows, key=lambda r: (sum(r), r))
                values = self._normalized(np.full((1, self.m), float(self.n)), metric)[0]
                chosen = (ordered(metric.reduce(values.tolist())), sum(row), row)
                tuples_out = np.ones(self.distinct, dtype=bool)
                candidates = candidates[~whole]
        for node in candidates.tolist():
            row = tuple(int(v) for v in levels[node])
            values_, bad = self.exact(row, metric)
            key = (ordered(metric.reduce(values_)), sum(row), row)
            if chosen is None or key < chosen:
                chosen, tuples_out = key, bad
        if chosen is None or tuples_out is None:
            return None
        return chosen[2], np.asarray(tuples_out[self.inverse], dtype=bool)

    def _aggregate(self, values: NDArray[Any], metric: LossMetric) -> NDArray[Any]:
        """The metric's aggregate of each row of ``values`` (vectorized, close to exact)."""
        weights = metric.weights
        m = values.shape[1]
        if metric.aggregate == "geometric_mean":
            product = np.ones(values.shape[0])
            for d in range(m):
                product = product * np.power(values[:, d] * weights[d] + 1.0, 1.0 / m)
            return np.asarray(product - 1.0)
        if metric.aggregate == "max":
            return np.asarray((values * np.asarray(weights)).max(axis=1))
        if metric.aggregate == "arithmetic_mean":
            return np.asarray(((values / m) * np.asarray(weights)).sum(axis=1))
        return np.asarray((values * np.asarray(weights)).sum(axis=1))
