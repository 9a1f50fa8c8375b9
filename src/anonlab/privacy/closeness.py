"""t-closeness of a sensitive attribute with ARX 3.9's three earth mover's distances.

Li, Li and Venkatasubramanian, "t-closeness: privacy beyond k-anonymity and
l-diversity", ICDE 2007. A class passes when the earth mover's distance (EMD)
between its distribution ``p`` of the sensitive attribute (``p_v = n_v / n``
with ``n`` its records) and the attribute's distribution ``q`` over the whole
table (``q_v = N_v / N``, computed once before the search, see
:mod:`anonlab.privacy.sensitive`) is at most ``t``. ARX declares every
t-closeness model monotone with generalization, not with suppression
(``TCloseness``).

* **equal ground distance** (ARX ``EqualDistanceTCloseness``):
  ``D = 1/2 sum_v |p_v - q_v|``, which ARX evaluates over the class's own
  values as ``(1 + sum_{v in class} (|q_v - p_v| - q_v)) / 2``.
* **ordered distance** (ARX ``OrderedDistanceTCloseness``): with the ``m``
  values in order and ``r_i = p_i - q_i``,
  ``D = 1/(m-1) sum_{i=1..m} |r_1 + ... + r_i|``; ARX compares the unscaled
  sum with ``t (m - 1)``. ``m`` is the number of values in the attribute's
  dictionary: its distinct values in the table (in ARX, the values of the
  input table, so with a research subset also those found only outside it,
  with share 0; anonlab counts what the dataset's dictionary holds).
* **hierarchical distance** (ARX ``HierarchicalDistanceTCloseness``): the
  ground distance of two values is the level of their lowest common ancestor
  in the attribute's hierarchy divided by its height ``H``. ARX works in
  integers scaled by ``N n``: a leaf (a value of the table) carries
  ``e_v = N_v n - n_v N``; each inner node ``u`` at level ``i`` sums its
  children's positive parts (``pos_u``) and negative parts (``neg_u``), where
  a child's part is ``e_v`` for a leaf and ``pos - neg`` for an inner node,
  and costs ``(i / H) min(pos_u, neg_u)``; ``D`` is the sum of the costs
  divided by ``N n``.

Every distance is computed for all classes at once. The ordered distance uses
dense ``(classes, m)`` blocks in chunks for attributes with at most
:data:`DENSE_MAX_VALUES` values (prefix sums along the value axis, the order
in which ARX adds, so the comparison with ``t`` is ARX's to the last bit), and
a sparse form otherwise (``sum_k |P_k - Q_k|`` over the runs where the class's
cumulative share ``P`` is constant, with the table's cumulative shares ``Q``
nondecreasing: each run is split where ``Q`` passes ``P``). The hierarchical
distance is computed sparsely, level by level, on the nodes above a class's
values only: a node none of whose leaves occur in the class has
``neg_u = 0`` and costs nothing, and an untouched child adds ``n`` times its
leaves' table count to ``pos_u``. Its integer parts are exact (int64 where
ARX uses 32-bit ``int``, which overflows once ``N n`` times the distance
passes ``2^31``), and the costs are added per class in ARX's node order.

ARX orders the values of ordered t-closeness by the attribute's data type
(``DataManager.getOrder``); an attribute whose type was not set is a string,
ordered by Java's ``String.compareTo`` (UTF-16 code units). anonlab has no
declared types. When ``order`` is not given, the natural order is numeric if
every value other than a missing one (empty, or ``NULL`` in any case, which
go last as in ARX's decimal type) is a decimal number, else Java's string
order. Give ``order`` (every value of the table, in order) to choose another;
values listed that are not in the table are ignored.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.paths import PathLike
from anonlab.privacy.base import ClassStats, Criterion, SensitiveHistograms
from anonlab.privacy.sensitive import (
    SensitiveCriterion,
    check_number,
    class_starts,
    global_frequencies,
    highest,
    released,
)
from anonlab.privacy.smallest import (
    closeness_size,
    coverage,
    ordered_minimum,
    tree_minimum,
)

if TYPE_CHECKING:
    from anonlab.dataset import EncodedSensitive

#: the ordered distance is computed on dense (classes, values) blocks up to this many values
DENSE_MAX_VALUES = 256
#: cells of one dense block
_BLOCK_CELLS = 1 << 20
#: the hierarchical distance's dense form sums integers up to ``N^2`` (``N`` records) in
#: doubles: exact below ``2^53``
_DENSE_MAX_RECORDS = 2**26

_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


class TClosenessModel(SensitiveCriterion):
    """What the three t-closeness models share: ``t`` in ``[0, 1]`` and the report."""

    monotone_with_generalization = True
    monotone_with_suppression = False

    def __init__(self, attribute: str, t: float) -> None:
        super().__init__(attribute)
        self.t = check_number(self.name, self.attribute, "t", t)
        if not 0.0 <= self.t <= 1.0:
            raise self.error(f"t must be from 0 to 1 (got {t!r}): choose e.g. t = 0.2")

    def distances(self, stats: ClassStats) -> NDArray[Any]:
        """The EMD of each class to the table's distribution (0 for a class with no record)."""
        return self.emd(stats, self.histograms(stats))

    @abstractmethod
    def emd(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """The EMD of each class to the table's distribution."""

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """The largest distance of a released class to the table's distribution."""
        return {"t": highest(self.distances(stats), released(stats, outliers))}


class EqualDistanceTCloseness(TClosenessModel):
    """t-closeness with equal ground distance (ARX ``EqualDistanceTCloseness``): half the
    L1 distance (total variation) between the class's and the table's distributions."""

    name = "equal-distance-t-closeness"

    def parameters(self) -> dict[str, Any]:
        """``{"t": t}``."""
        return {"t": self.t}

    def emd(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """``(1 + sum_{v in class} (|q_v - p_v| - q_v)) / 2``, added in value order from 1."""
        q = global_frequencies(h)[h.values]
        size = np.maximum(np.asarray(stats.counts, dtype=np.float64), 1.0)
        p = np.asarray(h.counts, dtype=np.float64) / size[h.classes]
        out = np.ones(stats.classes, dtype=np.float64)
        np.add.at(out, h.classes, np.abs(q - p) - q)
        out /= 2
        return np.where(stats.counts > 0, out, 0.0)

    def violations(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """Classes with distance above ``t`` (ARX: ``val <= t`` passes)."""
        return np.asarray(~(self.emd(stats, h) <= self.t))

    def smallest_class(self, h: SensitiveHistograms) -> int:
        """The first size whose least distance (the tree of height 1) is at most ``t``."""
        q = global_frequencies(h)
        root = [np.zeros(q.shape[0], dtype=np.int64)]
        return closeness_size(
            lambda s: tree_minimum(s, q, root, [np.ones(1)]), self.t, lambda s: q.shape[0] * (s + 1)
        )

    def coverage(self, h: SensitiveHistograms) -> Criterion | None:
        """The values' shares missing from a class must not exceed ``t``."""
        return coverage(self.attribute, [None], [global_frequencies(h)], self.t)


# ---------------------------------------------------------------------------
# ordered distance


def java_string_key(value: str) -> bytes:
    """Sort key of Java's ``String.compareTo``: the UTF-16 code units, compared in turn."""
    return value.encode("utf-16-be", "surrogatepass")


def is_missing(value: str) -> bool:
    """A missing value: empty, or ``NULL`` in any case (ARX's ``DataType.NULL_VALUE``)."""
    return value == "" or value.upper() == "NULL"


def natural_order(values: Sequence[str]) -> list[int]:
    """Positions of ``values`` in their natural order (see the module text).

    Numeric if every non-missing value is a decimal number (missing last, ties
    kept in the given order, as ARX's stable merge sort keeps dictionary
    order); otherwise Java's string order.
    """
    present = [v for v in values if not is_missing(v)]
    if present and all(_DECIMAL.fullmatch(v.strip()) for v in present):

        def numeric(i: int) -> tuple[int, float]:
            v = values[i]
            return (1, 0.0) if is_missing(v) else (0, float(v.strip()) + 0.0)

        return sorted(range(len(values)), key=numeric)
    return sorted(range(len(values)), key=lambda i: java_string_key(values[i]))


class OrderedDistanceTCloseness(TClosenessModel):
    """t-closeness with ordered distance (ARX ``OrderedDistanceTCloseness``).

    ``order`` lists the values of the table from first to last; ``None`` uses
    the natural order (numeric when every value is a number, else Java's
    string order: see the module text). :meth:`bind` fixes the order of the
    data's values.
    """

    name = "ordered-distance-t-closeness"

    def __init__(self, attribute: str, t: float, order: Sequence[str] | None = None) -> None:
        super().__init__(attribute, t)
        if order is not None:
            if isinstance(order, str) or not all(isinstance(v, str) for v in order):
                raise self.error(
                    f"order must be a list of the attribute's values as text (got {order!r})"
                )
            twice = [v for i, v in enumerate(order) if v in order[:i]]
            if twice:
                raise self.error(f"order lists '{twice[0]}' twice: list each value once")
        self.order: tuple[str, ...] | None = None if order is None else tuple(order)
        self._rank: NDArray[Any] | None = None  # value code -> position in the order

    def parameters(self) -> dict[str, Any]:
        """``{"t": t, "order": [...] or None}``."""
        return {"t": self.t, "order": None if self.order is None else list(self.order)}

    def bind_values(self, encoded: EncodedSensitive) -> None:
        """Rank the data's values: by ``order`` (which must list each of them) or naturally."""
        self._rank = self.ranks(encoded.values)

    def ranks(self, values: Sequence[str]) -> NDArray[Any]:
        """Position of each of ``values`` (value codes) in the order."""
        if self.order is None:
            positions = natural_order(values)
        else:
            where = {v: i for i, v in enumerate(self.order)}
            missing = [v for v in values if v not in where]
            if missing:
                more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
                raise self.error(
                    f"order does not list the value '{missing[0]}'{more} of "
                    f"'{self.attribute}': list every value of the table"
                )
            positions = sorted(range(len(values)), key=lambda i: where[values[i]])
        rank = np.empty(len(values), dtype=np.int64)
        rank[np.asarray(positions, dtype=np.int64)] = np.arange(len(values), dtype=np.int64)
        return rank

    def bound_rank(self, h: SensitiveHistograms) -> NDArray[Any]:
        """The ranks of :meth:`bind`; an error if the criterion was not bound to the data."""
        if self._rank is None or self._rank.shape[0] != h.global_counts.shape[0]:
            raise AnonlabError(
                f"{self.name} on '{self.attribute}' was not bound to the "
                "dataset: call bind(dataset) before checking classes",
                parameter="criteria",
            )
        return self._rank

    def sums(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """Per class: ARX's unscaled distance ``sum_i |r_1 + ... + r_i|``."""
        rank = self.bound_rank(h)
        if rank.shape[0] <= DENSE_MAX_VALUES:
            return self._dense_sums(stats, h, rank)
        return self._sparse_sums(stats, h, rank)

    def _dense_sums(
        self, stats: ClassStats, h: SensitiveHistograms, rank: NDArray[Any]
    ) -> NDArray[Any]:
        """Prefix sums along dense ``(classes, m)`` blocks (ARX's order of additions)."""
        m = rank.shape[0]
        q = np.empty(m, dtype=np.float64)
        q[rank] = global_frequencies(h)
        size = np.maximum(np.asarray(stats.counts, dtype=np.float64), 1.0)
        p = np.asarray(h.counts, dtype=np.float64) / size[h.classes]
        starts = class_starts(h, stats.classes)
        out = np.zeros(stats.classes, dtype=np.float64)
        step = max(1, _BLOCK_CELLS // m)
        for first in range(0, stats.classes, step):
            last = min(first + step, stats.classes)
            lo, hi = starts[first], starts[last]
            block = np.zeros((last - first, m), dtype=np.float64)
            block[h.classes[lo:hi] - first, rank[h.values[lo:hi]]] = p[lo:hi]
            running = np.cumsum(block - q, axis=1)
            out[first:last] = np.cumsum(np.abs(running), axis=1)[:, -1]
        return out

    def _sparse_sums(
        self, stats: ClassStats, h: SensitiveHistograms, rank: NDArray[Any]
    ) -> NDArray[Any]:
        """``sum_k |P_k - Q_k|`` summed over the runs where the class's share ``P`` is constant.

        On a run ``[a, b)`` with share ``x``, ``Q`` nondecreasing passes ``x``
        at ``s`` (``searchsorted``), so the run adds
        ``x (s - a) - (CQ_s - CQ_a) + (CQ_b - CQ_s) - x (b - s)`` with ``CQ``
        the prefix sums of ``Q``; before a class's first value ``P = 0``.
        """
        m = rank.shape[0]
        q = np.empty(m, dtype=np.float64)
        q[rank] = global_frequencies(h)
        cq_running = np.cumsum(q)
        cq = np.concatenate(([0.0], np.cumsum(cq_running)))
        size = np.maximum(np.asarray(stats.counts, dtype=np.float64), 1.0)
        pos = rank[h.values]
        order = np.lexsort((pos, h.classes))
        classes = np.asarray(h.classes, dtype=np.int64)[order]
        a = pos[order]
        share = np.asarray(h.counts, dtype=np.float64)[order] / size[classes]
        starts = class_starts(h, stats.classes)
        x = np.cumsum(share)
        x -= np.concatenate(([0.0], x))[starts[classes]]  # cumulative share within the class
        b = np.append(a[1:], m)
        last = np.append(classes[1:] != classes[:-1], True)
        b[last] = m
        s = np.clip(np.searchsorted(cq_running, x, side="left"), a, b)
        runs = x * (s - a) - (cq[s] - cq[a]) + (cq[b] - cq[s]) - x * (b - s)
        out = np.bincount(classes, weights=runs, minlength=stats.classes)
        first = np.zeros(stats.classes, dtype=np.int64)
        has = starts[1:] > starts[:-1]
        first[has] = a[starts[:-1][has]]
        return np.asarray(out + cq[first] * has, dtype=np.float64)

    def emd(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """The ordered EMD ``sum / (m - 1)`` (0 when the attribute has one value)."""
        m = h.global_counts.shape[0]
        sums = self.sums(stats, h)
        return np.where(stats.counts > 0, sums / (m - 1.0) if m > 1 else 0.0 * sums, 0.0)

    def violations(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """Classes whose unscaled distance exceeds ``t (m - 1)`` (ARX's comparison)."""
        threshold = self.t * (h.global_counts.shape[0] - 1.0)
        return np.asarray(self.sums(stats, h) > threshold)

    def smallest_class(self, h: SensitiveHistograms) -> int:
        """The first size whose least unscaled distance is at most ``t (m - 1)``."""
        rank = self.bound_rank(h)
        m = rank.shape[0]
        if m <= 1:
            return 1
        q = np.empty(m, dtype=np.float64)
        q[rank] = global_frequencies(h)
        cumulative = np.cumsum(q)
        return closeness_size(
            lambda s: ordered_minimum(s, cumulative), self.t * (m - 1.0), lambda s: m
        )

    def coverage(self, h: SensitiveHistograms) -> Criterion | None:
        """The values' shares missing from a class must not exceed ``t (m - 1)``."""
        m = h.global_counts.shape[0]
        return coverage(self.attribute, [None], [global_frequencies(h)], self.t * (m - 1.0))


# ---------------------------------------------------------------------------
# hierarchical distance


@dataclass(frozen=True)
class Level:
    """One level ``i >= 1`` of the EMD tree over the table's values.

    ``parent[c]`` is the node at this level above node ``c`` of the level
    below (leaves = value codes at level 1); ``weight[u]`` counts the table's
    records under node ``u``. Nodes are numbered in ARX's order: by first
    appearance when the values are read in dictionary order.
    """

    number: int
    parent: NDArray[Any]
    weight: NDArray[Any]


def hierarchy_levels(
    values: Sequence[str], frequencies: NDArray[Any], hierarchy: Hierarchy
) -> list[Level]:
    """The inner levels of ARX's tree (``DataManager.getTree``) for the table's values."""
    levels: list[Level] = []
    below = np.arange(len(values), dtype=np.int64)  # node of each value one level down
    weight = np.asarray(frequencies, dtype=np.int64)
    for number in range(1, hierarchy.height + 1):
        codes, uniques = pd.factorize(
            pd.Series(hierarchy.labels(values, number), dtype=object), sort=False
        )
        nodes = np.asarray(codes, dtype=np.int64)
        parent = np.zeros(weight.shape[0], dtype=np.int64)
        parent[below] = nodes
        weight = np.bincount(parent, weights=weight, minlength=len(uniques)).astype(np.int64)
        levels.append(Level(number, parent, weight))
        below = nodes
    return levels


def class_sizes(stats: ClassStats) -> NDArray[Any]:
    """Each class's records as doubles: the sum of its histogram's counts (every record of the
    table holds a sensitive value), exact as integers below ``2^53``."""
    return np.asarray(stats.counts, dtype=np.float64)


def _group(keys: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """Stable grouping of ``keys``: the order that sorts them, the group starts, the keys."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))
    return order, starts, sorted_keys[starts]


class HierarchicalDistanceTCloseness(TClosenessModel):
    """t-closeness with hierarchical distance (ARX ``HierarchicalDistanceTCloseness``).

    ``hierarchy`` is the sensitive attribute's hierarchy (an object or an ARX
    CSV file); every value of the table must be in it. The distance of two
    values is the level of their lowest common ancestor over the height.
    """

    name = "hierarchical-distance-t-closeness"

    def __init__(self, attribute: str, t: float, hierarchy: Hierarchy | PathLike) -> None:
        super().__init__(attribute, t)
        if isinstance(hierarchy, Hierarchy):
            self.hierarchy = hierarchy
            self.hierarchy_source: str = hierarchy.source
        elif isinstance(hierarchy, (str, Path)):
            self.hierarchy_source = str(hierarchy)
            self.hierarchy = Hierarchy.from_csv(hierarchy)
        else:
            raise self.error(f"hierarchy must be a file path or a Hierarchy (got {hierarchy!r})")
        self._levels: list[Level] | None = None
        self._children: list[NDArray[Any]] | None = None

    def parameters(self) -> dict[str, Any]:
        """``{"t": t, "hierarchy": path as given}``."""
        return {"t": self.t, "hierarchy": self.hierarchy_source}

    def bind_values(self, encoded: EncodedSensitive) -> None:
        """Require every value of the table in the hierarchy; build ARX's tree levels."""
        missing = self.hierarchy.missing(encoded.values)
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise self.error(
                f"value '{missing[0]}'{more} of '{self.attribute}' is missing "
                f"from the hierarchy '{self.hierarchy_source}': add a row for it"
            )
        self._levels = hierarchy_levels(encoded.values, encoded.frequencies, self.hierarchy)
        self._children = None

    def bound_levels(self) -> list[Level]:
        """The levels of :meth:`bind`; an error if the criterion was not bound."""
        if self._levels is None:
            raise AnonlabError(
                f"{self.name} on '{self.attribute}' was not bound to the "
                "dataset: call bind(dataset) before checking classes",
                parameter="criteria",
            )
        return self._levels

    def costs(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """Per class: ARX's ``sum_u (i / H) min(pos_u, neg_u)`` over the inner nodes."""
        levels = self.bound_levels()
        total = int(np.asarray(h.global_counts, dtype=np.int64).sum())
        if levels and levels[0].weight.shape[0] <= DENSE_MAX_VALUES and total <= _DENSE_MAX_RECORDS:
            return self._dense_costs(stats, h, levels, total)
        return self._sparse_costs(stats, h, levels, total)

    def _dense_costs(
        self, stats: ClassStats, h: SensitiveHistograms, levels: list[Level], total: int
    ) -> NDArray[Any]:
        """:meth:`costs` on dense ``(nodes, classes)`` blocks from level 1 up.

        A leaf ``v`` outside the class has ``e_v = N_v n > 0``, so a level-1
        node ``u`` with table count ``W_u`` has
        ``pos_u = n W_u - sum_{v in u, class} min(n_v N, N_v n)`` and
        ``neg_u = sum_{v in u, class} max(n_v N - N_v n, 0)``: sums over the
        class's triples only. Higher nodes sum their children's ``pos - neg``
        parts, positive and negative apart (a product with the level's 0/1
        parent-child matrix). Every quantity is an integer below ``2^53``
        (``N n`` is, see ``_DENSE_MAX_RECORDS``), so the float sums are exact.
        The costs are added per class in ARX's node order (levels up, nodes in
        order within a level), one node at a time.
        """
        n_classes = stats.classes
        out = np.zeros(n_classes, dtype=np.float64)
        if not levels:
            return out
        height = float(levels[-1].number)
        first_level = levels[0]
        width = first_level.weight.shape[0]
        g = np.asarray(h.global_counts, dtype=np.float64)
        leaf_parent = np.asarray(first_level.parent, dtype=np.int64)
        weight = np.asarray(first_level.weight, dtype=np.float64)[:, None]
        parents = [matrix.T for matrix in self.child_matrices()[1:]]
        size = class_sizes(stats)
        step = max(1, _BLOCK_CELLS // max(width, 1))
        starts = None if n_classes <= step else class_starts(h, n_classes)
        for first in range(0, n_classes, step):  # blocks of classes, one column per class
            last = min(first + step, n_classes)
            lo, hi = (0, h.classes.shape[0]) if starts is None else (starts[first], starts[last])
            classes = np.asarray(h.classes[lo:hi], dtype=np.int64)
            if first:
                classes = classes - first
            table = g[h.values[lo:hi]] * size[first:last][classes]  # N_v n
            mine = np.asarray(h.counts[lo:hi], dtype=np.float64) * float(total)  # n_v N
            key = leaf_parent[h.values[lo:hi]] * (last - first) + classes
            cells = width * (last - first)
            taken = np.bincount(key, weights=np.minimum(mine, table), minlength=cells)
            minus = np.bincount(key, weights=np.maximum(mine - table, 0.0), minlength=cells)
            minus = minus.reshape(width, last - first)
            plus = weight * size[first:last] - taken.reshape(width, last - first)
            block = out[first:last]
            for number, level in enumerate(levels):
                if number:
                    part = plus - minus
                    matrix = parents[number - 1]
                    plus = matrix @ np.maximum(part, 0.0)
                    minus = matrix @ np.maximum(-part, 0.0)
                cost = (level.number / height) * np.minimum(plus, minus)
                for row in cost:  # one node at a time: a class's costs add in node order
                    block += row
        return out

    def child_matrices(self) -> list[NDArray[Any]]:
        """Per level: the 0/1 matrix of child (node one level down) by parent (cached)."""
        if self._children is None:
            levels = self.bound_levels()
            matrices = []
            for level in levels:
                matrix = np.zeros((level.parent.shape[0], level.weight.shape[0]))
                matrix[np.arange(level.parent.shape[0]), level.parent] = 1.0
                matrices.append(matrix)
            self._children = matrices
        return self._children

    def _sparse_costs(
        self, stats: ClassStats, h: SensitiveHistograms, levels: list[Level], total: int
    ) -> NDArray[Any]:
        """:meth:`costs` on the triples, for attributes with many values (see the module)."""
        size = np.bincount(h.classes, weights=h.counts, minlength=stats.classes).astype(np.int64)
        classes = np.asarray(h.classes, dtype=np.int64)
        nodes = np.asarray(h.values, dtype=np.int64)
        g = np.asarray(h.global_counts, dtype=np.int64)
        weight = g[nodes]
        net = weight * size[classes] - np.asarray(h.counts, dtype=np.int64) * total
        height = float(levels[-1].number) if levels else 0.0
        rank_parts: list[NDArray[Any]] = []
        class_parts: list[NDArray[Any]] = []
        cost_parts: list[NDArray[Any]] = []
        offset = 0
        for level in levels:
            parents = level.parent[nodes]
            keys = classes * (level.weight.shape[0]) + parents
            order, starts, _ = _group(keys)
            up_classes = classes[order][starts]
            up_nodes = parents[order][starts]
            plus = np.add.reduceat(np.maximum(net, 0)[order], starts)
            minus = np.add.reduceat(np.maximum(-net, 0)[order], starts)
            seen = np.add.reduceat(weight[order], starts)
            plus = plus + size[up_classes] * (level.weight[up_nodes] - seen)
            rank_parts.append(offset + up_nodes)
            class_parts.append(up_classes)
            cost_parts.append((level.number / height) * np.minimum(plus, minus).astype(np.float64))
            offset += level.weight.shape[0]
            classes, nodes, weight, net = up_classes, up_nodes, level.weight[up_nodes], plus - minus
        if not cost_parts:
            return np.zeros(stats.classes, dtype=np.float64)
        all_classes = np.concatenate(class_parts)
        order = np.lexsort((np.concatenate(rank_parts), all_classes))
        return np.bincount(
            all_classes[order], weights=np.concatenate(cost_parts)[order], minlength=stats.classes
        ).astype(np.float64)

    def emd(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """The hierarchical EMD: the cost over ``N n``."""
        total = float(np.asarray(h.global_counts, dtype=np.int64).sum())
        scale = total * np.maximum(class_sizes(stats), 1.0)
        return np.where(stats.counts > 0, self.costs(stats, h) / scale, 0.0)

    def violations(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """Classes whose EMD exceeds ``t`` (ARX: ``cost <= t`` passes)."""
        return np.asarray(~(self.emd(stats, h) <= self.t))

    def tree_shares(self, h: SensitiveHistograms) -> list[NDArray[Any]] | None:
        """The table's share under each node of each level from 1 up (the distribution of
        ``h``); ``None`` unless the hierarchy ends in a single group over the table's values
        (what :meth:`smallest_class` and :meth:`coverage` need)."""
        levels = self.bound_levels()
        below = global_frequencies(h)
        if (
            not levels
            or levels[-1].weight.shape[0] != 1
            or levels[0].parent.shape[0] != below.shape[0]
        ):
            return None
        shares = []
        for level in levels:
            below = np.bincount(level.parent, weights=below, minlength=level.weight.shape[0])
            shares.append(below)
        return shares

    def smallest_class(self, h: SensitiveHistograms) -> int:
        """The first size whose least tree EMD is at most ``t`` (1 without a single root,
        see :meth:`tree_shares`)."""
        shares = self.tree_shares(h)
        if shares is None:
            return 1
        q = global_frequencies(h)
        parents = [level.parent for level in self.bound_levels()]
        nodes = q.shape[0] + sum(share.shape[0] for share in shares)
        return closeness_size(
            lambda s: tree_minimum(s, q, parents, shares), self.t, lambda s: nodes * (s + 1)
        )

    def coverage(self, h: SensitiveHistograms) -> Criterion | None:
        """The table's shares of the subtrees below the root that hold no value of a class,
        over ``H``, must not exceed ``t`` (1 layer per level below the root)."""
        shares = self.tree_shares(h)
        if shares is None:
            return None
        q = global_frequencies(h)
        height = float(len(shares))
        groups: list[NDArray[Any] | None] = [None]
        weights = [q / height]
        node_of_value = np.arange(q.shape[0], dtype=np.int64)
        for level, share in zip(self.bound_levels()[:-1], shares[:-1], strict=True):
            node_of_value = level.parent[node_of_value]
            groups.append(node_of_value)
            weights.append(share / height)
        return coverage(self.attribute, groups, weights, self.t)
