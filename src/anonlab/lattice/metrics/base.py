"""What every quality model shares: a node's classes, the data-level context, ARX's arithmetic.

The quality models (information-loss metrics) follow ARX 3.9's definitions
(``org.deidentifier.arx.metric.v2``), including its floating-point steps, so
that a node's value equals ARX's ``ARXNode.getHighestScore()`` there:

* sums over equivalence classes run in ARX's class order (the order in which
  the classes first appear in the table's rows, which is also the order of a
  :class:`~anonlab.lattice.freqset.FrequencySet`) and are accumulated one term
  at a time (``np.cumsum``, not NumPy's pairwise ``sum``);
* ``round`` is ARX's ``Metric.round``: ``floor(x * 1e10) / 1e10``;
* ``log2(x)`` is ARX's ``Math.log(x) / Math.log(2)``, with Java's correctly
  rounded ``log`` (:func:`java_log_array`);
* where ARX sums in the order of a hash map (the suppressed records' entropy),
  that order is reproduced (:func:`hppc_int_order`);
* aggregates over attributes follow ARX's loops; only ``Math.pow`` (geometric
  mean) may differ from Python's ``math.pow`` in the last bit, rarely.

Classes with ``counts == 0`` (population records only, when a population is
given) are not part of the release and count for nothing, as in ARX (whose
loops skip ``count == 0``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.dataset import Dataset
from anonlab.errors import AnonlabError
from anonlab.lattice.freqset import FrequencySet, KeyLayout, group_tuples
from anonlab.privacy.base import ClassStats
from anonlab.privacy.profitability import ShareTables

#: a metric's value: a float, or for ARX's "rank" aggregate a tuple compared lexicographically
LossValue = float | tuple[float, ...]

#: ARX's ``Metric.FACTOR``: values are rounded down to 10 decimal digits
ROUND_FACTOR = 1e10
#: ARX's ``LOG2`` constant, ``Math.log(2)``
LOG2 = float(Decimal(2).ln(Context(prec=40)))
#: ARX's generalization/suppression factor when none is given
DEFAULT_GS_FACTOR = 0.5


def arx_round(value: float) -> float:
    """ARX's ``Metric.round``: ``floor(value * 10^10) / 10^10``."""
    if not math.isfinite(value):
        return value
    return math.floor(value * ROUND_FACTOR) / ROUND_FACTOR


_LN_CONTEXT = Context(prec=40)
#: long double has at least 11 more mantissa bits than double (x86-64: 80-bit)
_LONG_DOUBLE_OK = np.finfo(np.longdouble).nmant >= 63


def _decimal_log(x: float) -> float:
    """Correctly rounded natural logarithm through a 40-digit decimal logarithm."""
    if not math.isfinite(x) or x <= 0.0:
        return math.log(x) if x > 0.0 else (-math.inf if x == 0.0 else math.nan)
    return float(Decimal(x).ln(_LN_CONTEXT))


def java_log_array(x: NDArray[Any]) -> NDArray[Any]:
    """Correctly rounded ``log`` element-wise (Java's ``Math.log``; the C library's may be
    one unit in the last place off).

    Computed in long double (64-bit mantissa) and rounded to double; the rare
    results that lie too close to the midpoint between two doubles, and every
    result on platforms without an extended long double, are recomputed with
    :func:`_decimal_log`.
    """
    x = np.asarray(x, dtype=np.float64)
    if not _LONG_DOUBLE_OK:
        return np.fromiter(
            (_decimal_log(float(v)) for v in x.reshape(-1)), dtype=np.float64, count=x.size
        ).reshape(x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        wide = np.log(x.astype(np.longdouble))
    out = wide.astype(np.float64)
    finite = np.isfinite(out) & (out != 0.0)
    gap = np.abs(wide - out.astype(np.longdouble))
    ulp = np.spacing(np.abs(out)).astype(np.longdouble)
    risky = finite & (np.abs(gap - ulp / 2) < ulp * np.longdouble(2.0**-8))
    for i in np.flatnonzero(risky.reshape(-1)):
        out.reshape(-1)[i] = _decimal_log(float(x.reshape(-1)[i]))
    return out


def java_log2_terms(a: NDArray[Any], ratio: NDArray[Any]) -> NDArray[Any]:
    """``a * log2(ratio)`` element-wise, with ARX's ``log2(x) = Math.log(x) / LOG2``."""
    return np.asarray(a * (java_log_array(ratio) / LOG2))


def sequential_sum(terms: NDArray[Any]) -> float:
    """``sum`` accumulated left to right, one rounding per term, as a Java loop does."""
    if terms.size == 0:
        return 0.0
    return float(np.cumsum(terms, dtype=np.float64)[-1])


#: the unit roundoff of a double, 2^-53
_UNIT_ROUNDOFF = 2.0**-53


def finished_sum(
    approx: float, slack: float, finish: Callable[[float], float], exact: Callable[[], float]
) -> float:
    """``finish(S)`` for a sum ``S`` known approximately, summed exactly only on demand.

    ``S`` (``exact()``, e.g. a sequential sum) lies within
    ``slack * |approx|`` of ``approx``; ``finish`` is non-decreasing in the
    sum (ARX's normalization and rounding down to 10 decimals are). Where
    ``finish`` gives one value at both ends of that interval, it is the value
    at ``S``; elsewhere (rarely: the interval straddles a rounding step) ``S``
    is computed.
    """
    error = slack * abs(approx)
    low, high = finish(approx - error), finish(approx + error)
    return low if low == high else finish(exact())


def summation_error(terms: int, roundings: int = 0) -> float:
    """Relative error bound of a floating-point sum of ``terms`` nonnegative values, each
    the result of up to ``roundings`` roundings of exact inputs (products, factors).

    Any summation order of ``c`` nonnegative terms errs by at most
    ``gamma_c = c u / (1 - c u)`` relative to their exact sum (``u = 2^-53``, the
    unit roundoff; Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd
    ed., section 4.2, which covers dot products too, section 3.1), and the terms
    by ``gamma_r`` relative to the exact inputs': together at most
    ``gamma_{c + r}``. Two such sums of the same exact quantity differ by at
    most the sum of their bounds (relative to the exact sum, which is at most
    ``1 / (1 - gamma)`` times either).
    """
    k = float(terms + roundings)
    return k * _UNIT_ROUNDOFF / (1.0 - k * _UNIT_ROUNDOFF)


def sum_slack(first: float, second: float) -> float:
    """``slack`` of :func:`finished_sum` for two sums with relative error bounds ``first``
    and ``second`` (:func:`summation_error`) of one exact quantity: their distance relative
    to either, doubled as a margin."""
    return 2.0 * (first + second) / (1.0 - max(first, second))


def gs_factors(gs_factor: float) -> tuple[float, float]:
    """ARX's ``(gFactor, sFactor)`` from the generalization/suppression factor (``Metric``).

    ``sFactor = 2 gs`` below 0.5, else 1; ``gFactor = 1`` up to 0.5, else
    ``1 - 2 (gs - 0.5)``: 0 favours suppression, 1 generalization, 0.5 both alike.
    """
    s = 2.0 * gs_factor if gs_factor < 0.5 else 1.0
    g = 1.0 if gs_factor <= 0.5 else 1.0 - 2.0 * (gs_factor - 0.5)
    return g, s


def java_str(x: float) -> str:
    """``java.lang.Double.toString(x)`` (shortest digits, Java's layout).

    Plain notation for ``1e-3 <= |x| < 1e7`` with at least one fractional
    digit (``"1.0"``), else ``"d.dddE-n"``.
    """
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    a = abs(x)
    _, digit_tuple, exponent = Decimal(repr(a)).normalize().as_tuple()
    digits = "".join(str(d) for d in digit_tuple)
    sci = len(digits) - 1 + int(exponent)
    if 1e-3 <= a < 1e7:
        if sci >= 0:
            whole = digits[: sci + 1].ljust(sci + 1, "0")
            frac = digits[sci + 1 :] or "0"
            return f"{sign}{whole}.{frac}"
        return f"{sign}0.{'0' * (-sci - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{sci}"


def loss_text(value: LossValue) -> str:
    """A value as ARX prints it: ``Double.toString``, or ``Arrays.toString`` for rank."""
    if isinstance(value, tuple):
        return "[" + ", ".join(java_str(v) for v in value) + "]"
    return java_str(value)


#: HPPC 0.6.0's ``HashContainerUtils.PERTURBATIONS`` (by leading zeros of the capacity)
_HPPC_PERTURBATIONS = (
    -657416472,
    -704359657,
    -504277740,
    -766834399,
    -367894171,
    2018242870,
    -776455028,
    -1144722961,
    2138298170,
    -1177589347,
    1159698088,
    1116325088,
    787152282,
    -381796403,
    1257683291,
    -1437948040,
    -85127662,
    44775438,
    -297881302,
    1857804000,
    -1739192497,
    1379613681,
    2087190152,
    1732903491,
    1862275992,
    142593372,
    -582727230,
    2129619989,
    -111286646,
    -1552844519,
    -470891926,
    -929850856,
)
_M32 = 0xFFFFFFFF


def _murmur3_mix(k: int) -> int:
    """HPPC's ``MurmurHash3.hash(int)`` (the 32-bit finalizer) on an unsigned int."""
    k ^= k >> 16
    k = (k * 0x85EBCA6B) & _M32
    k ^= k >> 13
    k = (k * 0xC2B2AE35) & _M32
    return k ^ (k >> 16)


def hppc_int_order(keys: Sequence[int]) -> list[int]:
    """The iteration order of HPPC 0.6.0's ``IntIntOpenHashMap`` after inserting ``keys``.

    ARX sums the suppressed records' entropy terms in this order. The map
    starts with 16 slots, probes linearly from ``hash(key ^ perturbation)``,
    and doubles when ``ceil(0.75 capacity) - 1`` keys are in it, re-inserting
    the old slots from last to first. ``keys`` are distinct, in insertion order.
    """
    cap = 16
    slots: list[int | None] = [None] * cap
    pert = _HPPC_PERTURBATIONS[32 - cap.bit_length()] & _M32
    resize_at = max(2, math.ceil(cap * 0.75)) - 1
    assigned = 0
    for key in keys:
        mask = cap - 1
        slot = _murmur3_mix((key & _M32) ^ pert) & mask
        while slots[slot] is not None:
            slot = (slot + 1) & mask
        if assigned != resize_at:
            slots[slot] = key
            assigned += 1
            continue
        old = slots
        old[slot] = key
        cap *= 2
        slots = [None] * cap
        pert = _HPPC_PERTURBATIONS[32 - cap.bit_length()] & _M32
        resize_at = max(2, math.ceil(cap * 0.75)) - 1
        assigned += 1
        mask = cap - 1
        for item in reversed(old):
            if item is None:
                continue
            pos = _murmur3_mix((item & _M32) ^ pert) & mask
            while slots[pos] is not None:
                pos = (pos + 1) & mask
            slots[pos] = item
    return [k for k in slots if k is not None]


@dataclass(frozen=True)
class NodeClasses:
    """A node's classes with the privacy models applied: which classes are suppressed.

    ``stats`` (optional) is what the criteria saw of the node; the metrics
    read only the frequency set and ``outliers``.
    """

    fs: FrequencySet
    outliers: NDArray[Any]  # (classes,) bool: class is suppressed
    stats: ClassStats | None = None

    @property
    def levels(self) -> tuple[int, ...]:
        """The node's level vector."""
        return self.fs.levels

    @property
    def live(self) -> NDArray[Any]:
        """Classes with records in the release (``counts > 0``)."""
        return np.asarray(self.fs.counts > 0)

    @property
    def suppressed(self) -> int:
        """Number of suppressed records (outlier classes with records)."""
        return int(self.fs.counts[self.outliers].sum())


class LossContext:
    """Data-level quantities of the metrics, computed once per dataset (lazily where costly).

    ``n`` is ARX's number of records (``Metric.getNumRecords``: the records of
    the table to release); ``population_rows`` the rows of ARX's input table
    (the population table when one is given, else ``n``). ``row_tuple`` (with
    ``base_tuples`` and ``base_counts``) is each row's bottom tuple as the
    frequency engine numbered them, so :meth:`row_tuples` need not group the rows again.
    """

    def __init__(
        self,
        dataset: Dataset,
        base_tuples: NDArray[Any] | None = None,
        base_counts: NDArray[Any] | None = None,
        row_tuple: NDArray[Any] | None = None,
    ) -> None:
        self.dataset = dataset
        self.n = dataset.n
        self.qis = dataset.qis
        self.names = tuple(q.name for q in dataset.qis)
        self.m = len(dataset.qis)
        self.heights = np.array([q.height for q in dataset.qis], dtype=np.int64)
        population = getattr(dataset, "population", None)
        self.population_rows = int(population.shape[0]) if population is not None else self.n
        self.layout = KeyLayout([q.cardinality(0) for q in dataset.qis])
        self.base_tuples = base_tuples
        self.base_counts = base_counts
        self._shares: list[list[NDArray[Any]]] | None = None
        self._entropy: list[list[float]] | None = None
        self._rows: tuple[NDArray[Any], NDArray[Any], NDArray[Any]] | None = None
        if row_tuple is not None and base_tuples is not None and base_counts is not None:
            # the frequency engine's grouping of the rows (same numbering): not made twice
            self._rows = (row_tuple, base_tuples, base_counts)
        self._arx_ids: list[list[NDArray[Any]]] | None = None
        self._flat_shares: tuple[NDArray[Any], NDArray[Any]] | None = None
        self._share_products: ShareTables | None = None
        #: :meth:`population_tuples`, once made (a 1-tuple: its value may be ``None``)
        self._population_tuples: tuple[NDArray[Any] | None] | None = None
        #: the run's cost-benefit figures (the profitability models'), read by the
        #: publisher-payout metrics; ``None``: ARX's defaults
        self.cost_benefit: Any = None

    # --------------------------------------------------------------- classes
    def group_codes(self, fs: FrequencySet, dim: int) -> NDArray[Any]:
        """Codes of quasi-identifier ``dim`` at the node's level, one per class."""
        if getattr(fs, "layout", None) is not None:
            return np.asarray(fs.group_codes(dim))
        return self.layout.digit(fs.keys, dim)

    def all_group_codes(self, fs: FrequencySet) -> NDArray[Any]:
        """(classes, m) codes of every quasi-identifier at the node's levels."""
        if getattr(fs, "layout", None) is not None:
            return np.asarray(fs.codes)
        return self.layout.digits(fs.keys)

    def share_matrix(self, fs: FrequencySet) -> NDArray[Any]:
        """(classes, m): each class's domain share in each quasi-identifier at the node's levels
        (``shares(dim)[level][code]`` for every ``dim`` at once, one look-up in a flat table)."""
        if self._flat_shares is None:
            tables = [self.shares(i) for i in range(self.m)]
            sizes = [t.shape[0] for per_dim in tables for t in per_dim]
            starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
            offsets = np.zeros((self.m, int(self.heights.max(initial=0)) + 1), dtype=np.int64)
            position = 0
            for dim, per_dim in enumerate(tables):
                for level in range(len(per_dim)):
                    offsets[dim, level] = starts[position]
                    position += 1
            flat = (
                np.concatenate([t for per_dim in tables for t in per_dim]) if sizes else np.zeros(0)
            )
            self._flat_shares = (flat, offsets)
        flat, offsets = self._flat_shares
        codes = self.all_group_codes(fs)
        base = offsets[np.arange(self.m), np.asarray(fs.levels, dtype=np.int64)]
        return np.asarray(flat.take(codes + base.astype(codes.dtype)))

    def entropy_losses(self, fs: FrequencySet, max_loss: float, exact: bool = True) -> NDArray[Any]:
        """(classes,): each class's entropy-based information loss at the node, from the
        product of its domain shares (each row of :meth:`share_matrix` multiplied out in
        attribute order; :meth:`ShareTables.losses`)."""
        if self._share_products is None:
            self._share_products = ShareTables([self.shares(i) for i in range(self.m)])
        return self._share_products.losses(self.all_group_codes(fs), fs.levels, max_loss, exact)

    def entropy_loss_parts(
        self, fs: FrequencySet, max_loss: float, exact: bool = True
    ) -> tuple[NDArray[Any], NDArray[Any] | None]:
        """:meth:`entropy_losses` as ``(values, index)`` (:meth:`ShareTables.loss_parts`):
        class ``c``'s loss is ``values[index[c]]``, or ``values[c]`` without an index. The
        values may be shared: read them, never write them."""
        if self._share_products is None:
            self._share_products = ShareTables([self.shares(i) for i in range(self.m)])
        return self._share_products.loss_parts(self.all_group_codes(fs), fs.levels, max_loss, exact)

    # ---------------------------------------------------------- domain shares
    def domain_size(self, dim: int) -> float:
        """ARX's ``DomainShareMaterialized.getDomainSize``: rows of the hierarchy file."""
        return float(len(self.qis[dim].hierarchy.rows))

    def shares(self, dim: int) -> list[NDArray[Any]]:
        """``shares(dim)[level][group]``: ARX's domain share of each group at each level.

        ``DomainShareMaterialized``: the number of the hierarchy's rows (all
        its leaf values, whether in the data or not) whose label at ``level``
        is the group's label, divided by the number of rows.
        """
        if self._shares is None:
            self._shares = [self._share_tables(i) for i in range(self.m)]
        return self._shares[dim]

    def _share_tables(self, dim: int) -> list[NDArray[Any]]:
        q = self.qis[dim]
        rows = q.hierarchy.rows
        size = float(len(rows))
        tables = []
        for level in range(q.height + 1):
            counted = Counter(row[level] for row in rows)
            labels = q.level_labels[level]
            tables.append(np.array([counted[label] / size for label in labels], dtype=np.float64))
        return tables

    def arx_ids(self, dim: int) -> list[NDArray[Any]]:
        """``arx_ids(dim)[level][group]``: the group label's code in ARX's dictionary.

        ARX codes the data's values in order of first appearance (our value
        codes), then the labels of the hierarchy's rows for those values, row
        by row in file order and level by level, each new text the next code
        (``GeneralizationHierarchy``).
        """
        if self._arx_ids is None:
            self._arx_ids = [self._arx_id_tables(i) for i in range(self.m)]
        return self._arx_ids[dim]

    def _arx_id_tables(self, dim: int) -> list[NDArray[Any]]:
        q = self.qis[dim]
        ids = {value: code for code, value in enumerate(q.values)}
        in_data = set(q.values)
        for row in q.hierarchy.rows:
            if row[0] in in_data:
                for label in row:
                    ids.setdefault(label, len(ids))
        return [
            np.array([ids[label] for label in labels], dtype=np.int64) for labels in q.level_labels
        ]

    # ---------------------------------------------------------------- entropy
    def entropy_raw(self, dim: int, level: int) -> float:
        """ARX's ``sum_v a_v log2(a_v / b_v)`` (<= 0) of one quasi-identifier at one level.

        ``a_v`` counts value ``v`` in the table, ``b_v`` the records whose value
        falls in ``v``'s group at ``level`` (``MetricMDNUEntropyPrecomputed``;
        values in the order of their first appearance, ARX's dictionary order).
        """
        if self._entropy is None:
            self._entropy = [
                [self._entropy_level(i, lv) for lv in range(q.height + 1)]
                for i, q in enumerate(self.qis)
            ]
        return self._entropy[dim][level]

    def _entropy_level(self, dim: int, level: int) -> float:
        q = self.qis[dim]
        a = q.frequencies.astype(np.float64)
        codes = q.level_codes[level]
        b = np.bincount(codes, weights=a, minlength=q.cardinality(level))[codes]
        present = a != 0.0
        return sequential_sum(java_log2_terms(a[present], a[present] / b[present]))

    def entropy_top_raw(self, dim: int) -> float:
        """``sum_v a_v log2(a_v / rows)`` with ARX's input rows (the normalization's bound)."""
        a = self.qis[dim].frequencies.astype(np.float64)
        a = a[a != 0.0]
        return sequential_sum(java_log2_terms(a, a / float(self.population_rows)))

    # ------------------------------------------------------------------- rows
    def row_tuples(self) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
        """``(row_tuple, tuple_codes, tuple_counts)``: each row's distinct QI tuple, in row order.

        Tuples are numbered by first appearance, as the frequency engine's
        bottom node numbers them (``FrequencySet.base_index`` indexes them).
        """
        if self._rows is None:
            rows = self.dataset.code_matrix()
            inverse, first = group_tuples(rows, [q.cardinality(0) for q in self.qis])
            counts = np.bincount(inverse, minlength=first.shape[0]).astype(np.int64)
            self._rows = (inverse, rows[first], counts)
        return self._rows

    def class_of_tuples(self, fs: FrequencySet) -> NDArray[Any]:
        """The class (index into ``fs``) of each distinct QI tuple of the table at ``fs``'s node."""
        if fs.base_index is not None and getattr(self.dataset, "population", None) is None:
            return np.asarray(fs.base_index)
        _, codes, _ = self.row_tuples()
        index = self.classes_of_codes(fs, codes)
        if np.any(index < 0):
            raise RuntimeError(f"frequency set of node {fs.levels} misses a tuple of the table")
        return index

    def population_tuples(self) -> NDArray[Any] | None:
        """The population's distinct QI tuples in order of first appearance, as indices of the
        frequency engine's bottom tuples (``base_tuples``); ``None`` without a population, or
        when one of its tuples is not among them. Made once."""
        if self._population_tuples is None:
            found: NDArray[Any] | None = None
            population = getattr(self.dataset, "population", None)
            base = None if self.base_tuples is None else np.asarray(self.base_tuples)
            if population is not None and base is not None and base.ndim == 2:
                population = np.asarray(population)
                _, first = group_tuples(population, [q.cardinality(0) for q in self.qis])
                distinct = population[np.asarray(first)]
                if base.shape[1] == distinct.shape[1]:
                    index = pd.MultiIndex.from_arrays(list(base.T)).get_indexer(
                        pd.MultiIndex.from_arrays(list(distinct.T))
                    )
                    if index.shape[0] == 0 or index.min() >= 0:
                        found = np.asarray(index, dtype=np.int64)
            self._population_tuples = (found,)
        return self._population_tuples[0]

    def classes_of_codes(self, fs: FrequencySet, codes: NDArray[Any]) -> NDArray[Any]:
        """The class (index into ``fs``, -1 where it has none) of each row of bottom-level
        QI ``codes`` (rows x QIs), lifted to ``fs``'s node."""
        lifted = np.column_stack(
            [
                q.level_codes[lv][codes[:, i]]
                for i, (q, lv) in enumerate(zip(self.qis, fs.levels, strict=True))
            ]
        )
        packed = self.layout.pack(lifted)
        if packed.shape[1] == 1:
            index = pd.Index(fs.keys[:, 0]).get_indexer(packed[:, 0])
        else:
            index = pd.MultiIndex.from_arrays(list(fs.keys.T)).get_indexer(
                pd.MultiIndex.from_arrays(list(packed.T))
            )
        return np.asarray(index, dtype=np.int64)


def check_gs_factor(gs_factor: float) -> float:
    """Reject a generalization/suppression factor outside [0, 1] (ARX's rule)."""
    try:
        value = float(gs_factor)
    except (TypeError, ValueError):
        raise AnonlabError(
            f"gs_factor must be a number from 0 to 1 (got {gs_factor!r})", parameter="gs_factor"
        ) from None
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise AnonlabError(
            f"gs_factor must be from 0 to 1 (got {value:g}): 0 favours "
            "suppression, 1 generalization, 0.5 treats them alike",
            parameter="gs_factor",
        )
    return value


#: every metric class by its name, as it is defined (:func:`metric_names`)
_NAMED: dict[str, type[Metric]] = {}


class Metric(ABC):
    """A quality model (lower is better), as ARX 3.9 defines it.

    ``value`` is ARX's information loss at a node, ``lower_bound`` a value no
    larger than the loss of the node and of every generalization of it, and
    ``monotone`` ARX's declaration (with a suppression limit of zero, ARX's
    "monotonic with generalization"; otherwise "monotonic with suppression").
    """

    name: ClassVar[str] = ""
    #: ARX's declarations (``Metric(monotonicWithGeneralization, monotonicWithSuppression)``)
    monotone_with_generalization: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = False
    #: whether ARX's class takes a generalization/suppression factor
    takes_gs_factor: ClassVar[bool] = False
    #: whether ARX's class is multi-dimensional (aggregate function and attribute weights)
    multi_dimensional: ClassVar[bool] = False
    #: whether the search should keep the base index for the metric (``classification``)
    needs_base_index: ClassVar[bool] = False
    #: whether the search should roll up the classes' population order for the metric (ARX's
    #: class order on a research subset, :attr:`FrequencySet.population_order`)
    needs_population_order: ClassVar[bool] = False
    #: the parameters the metric needs besides the common ones (keyword arguments of its class)
    options: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            _NAMED[cls.name] = cls

    def __init__(
        self,
        ctx: LossContext,
        *,
        gs_factor: float = DEFAULT_GS_FACTOR,
        aggregate: str | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        self.ctx = ctx
        self.gs_factor = check_gs_factor(gs_factor)
        if not self.takes_gs_factor and self.gs_factor != DEFAULT_GS_FACTOR:
            raise AnonlabError(
                f"gs_factor applies to the metrics {', '.join(metric_names('takes_gs_factor'))}, "
                f"not to '{self.name}': leave it at 0.5 or choose one of them",
                parameter="gs_factor",
            )
        self.set_dimensions(aggregate, weights)
        self.g_factor, self.s_factor = gs_factors(self.gs_factor)

    def set_dimensions(self, aggregate: str | None, weights: Mapping[str, float] | None) -> None:
        """Take the aggregate function and attribute weights of a multi-dimensional metric.

        A single-number metric (this base) refuses both; a multi-dimensional
        one (:class:`~anonlab.lattice.metrics.multidim.MultiDimensionalMetric`)
        checks and keeps them.
        """
        if aggregate is not None:
            raise AnonlabError(
                f"aggregate applies to the metrics {', '.join(metric_names('multi_dimensional'))}"
                f", not to '{self.name}' (a single number in ARX): leave it out",
                parameter="aggregate",
            )
        if weights:
            raise AnonlabError(
                f"weights apply to the metrics {', '.join(metric_names('multi_dimensional'))}, "
                f"not to '{self.name}' (ARX does not weight it): leave them out",
                parameter="weights",
            )

    @classmethod
    def undefined_reason(cls, ctx: LossContext) -> str | None:
        """Why ARX does not define the metric on this data (``None``: it does)."""
        return None

    @abstractmethod
    def value(self, node: NodeClasses) -> LossValue:
        """The loss of the node's release (ARX's ``getHighestScore()`` there)."""

    @abstractmethod
    def lower_bound(self, node: NodeClasses) -> LossValue:
        """A bound no larger than the loss of this node and of every generalization of it."""

    def level_bounds(self, all_levels: NDArray[Any]) -> NDArray[Any] | None:
        """Data-free bounds for an (N, m) array of level vectors, or ``None``.

        Each bound holds for its node and every generalization of it. Scalar
        metrics return shape (N,); with the "rank" aggregate, rows of shape
        (N, m) compared lexicographically (see :meth:`bound_at`).
        """
        return None

    def bound_at(self, bounds: NDArray[Any], index: int) -> LossValue:
        """Entry ``index`` of :meth:`level_bounds`' result as a value comparable with losses."""
        row = bounds[index]
        if np.ndim(row) == 0:
            return float(row)
        return tuple(float(x) for x in row)

    def monotone(self, suppression_allowed: bool) -> bool:
        """ARX's ``isMonotonic(suppressionLimit)``: never decreasing from a node to its
        generalizations."""
        if suppression_allowed:
            return self.monotone_with_suppression
        return self.monotone_with_generalization

    def per_attribute(self, node: NodeClasses) -> dict[str, float] | None:
        """Per quasi-identifier values where ARX reports a vector, else ``None``."""
        return None

    def report(self, node: NodeClasses) -> dict[str, Any]:
        """The node's loss for a report: value, ARX's printed text, per-attribute values."""
        value = self.value(node)
        out: dict[str, Any] = {
            "value": list(value) if isinstance(value, tuple) else value,
            "arx": loss_text(value),
        }
        per = self.per_attribute(node)
        if per is not None:
            out["per_attribute"] = per
        return out


def metric_names(flag: str) -> list[str]:
    """Names of the metrics whose class attribute ``flag`` is true, sorted.

    Every metric class with a name is known here as soon as it is defined
    (:meth:`Metric.__init_subclass__`); the package imports them all, so none
    is missing once any metric can be built.
    """
    return sorted(name for name, cls in _NAMED.items() if getattr(cls, flag))


def safe_div(a: float, b: float) -> float:
    """``a / b`` with Java's IEEE semantics (division by zero gives infinity or NaN)."""
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


#: ARX's weight of an attribute given none (``ARXConfiguration.getAttributeWeight``)
DEFAULT_WEIGHT = 0.5


def weight_vector(ctx: LossContext, weights: Mapping[str, float] | None) -> list[float]:
    """ARX's attribute weights: each divided by the largest one.

    ``AbstractMetricMultiDimensional.initializeInternal`` with
    ``ARXConfiguration.getAttributeWeight``: an attribute given no weight
    weighs 0.5 (so with no weights at all every attribute weighs 1); if every
    weight is 0, all become 1. Unknown attributes or negative weights are errors.
    """
    raw = [DEFAULT_WEIGHT] * ctx.m
    for key, w in (weights or {}).items():
        if key not in ctx.names:
            raise AnonlabError(
                f"weights names '{key}', which is not a quasi-identifier (quasi-identifiers: "
                f"{', '.join(ctx.names)}): weight only quasi-identifiers",
                parameter="weights",
            )
        try:
            value = float(w)
        except (TypeError, ValueError):
            raise AnonlabError(
                f"weights of '{key}' must be a number (got {w!r})", parameter="weights"
            ) from None
        if not math.isfinite(value) or value < 0.0:
            raise AnonlabError(
                f"weights of '{key}' must be a number >= 0 (got {value:g})", parameter="weights"
            )
        raw[ctx.names.index(key)] = value
    top = max(raw) if raw else 0.0
    if top == 0.0:
        return [1.0] * ctx.m
    return [w / top for w in raw]
