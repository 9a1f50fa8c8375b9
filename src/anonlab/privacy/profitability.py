"""The profitability models: ARX 3.9's game-theoretic privacy models and their cost-benefit figures.

Wan et al. ("A Game Theoretic Framework for Analyzing Re-Identification
Risk", PLOS ONE 2015) weigh what a release earns the data publisher against
what a re-identification attack earns an adversary. ARX 3.9 implements four
models on that game (``org.deidentifier.arx.criteria.Profitability*``), all
reading one set of monetary figures (``ARXCostBenefitConfiguration``,
:class:`CostBenefit` here): the publisher's benefit per published record,
the publisher's loss per successfully attacked record, the adversary's gain
per re-identified record and the adversary's cost per attempted one.

For a class of the release with entropy-based information loss ``IL``
(:func:`entropy_based_loss`, ARX ``MetricSDNMEntropyBasedInformationLoss``)
and an adversary's success probability ``p`` (``1 / size``), ARX's
``RiskModelCostBenefit`` gives

* the adversary's expected payout ``gain * p - cost``;
* the publisher's expected benefit ``benefit * (1 - IL)``;
* the publisher's expected payout: the benefit, less ``loss * p`` when the
  adversary's payout is positive (an attack pays, so it happens).

The models (docs/privacy_models.md):

* ``profitability-prosecutor`` (``ProfitabilityProsecutor``): a class is kept
  when the publisher's expected payout is positive, ``p = 1 / count``. ARX
  declares it monotone neither with generalization nor with suppression.
* ``profitability-journalist`` (``ProfitabilityJournalist``): the same with a
  research subset; ``p = 1 / pcount``, the class's records in the population.
* ``profitability-prosecutor-no-attack`` (``ProfitabilityProsecutorNoAttack``):
  no adversary gains from an attack, ``gain / size < cost``: k-anonymity with
  :func:`no_attack_k`. Monotone both ways; ``k`` is its minimal class size.
* ``profitability-journalist-no-attack``
  (``ProfitabilityJournalistNoAttack``): the same on the population's class
  sizes, ``pcount >= k``; no minimal class size (ARX declares none).

The journalist models take the research subset as delta-presence does: the
table given is the population, ``subset`` the records released
(:func:`anonlab.privacy.presence.population_dataset`). A class of population
records only is never suppressed (ARX suppresses only classes holding subset
records).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from decimal import Context, Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.privacy.base import ClassStats, Criterion
from anonlab.privacy.presence import TableSource, _source_text

if TYPE_CHECKING:
    from anonlab.dataset import Dataset, EncodedQI

#: the cost-benefit figures by their names in the settings
COST_BENEFIT_KEYS = ("publisher_benefit", "publisher_loss", "adversary_gain", "adversary_cost")


@dataclass(frozen=True)
class CostBenefit:
    """ARX's ``ARXCostBenefitConfiguration``: money per record, each a finite number >= 0.

    ``publisher_benefit`` is earned by the publisher for each published record,
    ``publisher_loss`` lost by it (a fine) for each successfully attacked one,
    ``adversary_gain`` earned by an adversary for each re-identified record,
    ``adversary_cost`` spent by it on each attempt. The defaults are ARX's.
    """

    publisher_benefit: float = 1200.0
    publisher_loss: float = 300.0
    adversary_gain: float = 300.0
    adversary_cost: float = 4.0

    def __post_init__(self) -> None:
        for key in COST_BENEFIT_KEYS:
            value = getattr(self, key)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(float(value))
                or float(value) < 0.0
            ):
                raise AnonlabError(
                    f"{key} must be a finite number of at least 0 (got "
                    f"{value!r}): money per record, e.g. {key} = "
                    f"{getattr(CostBenefit, key):g}",
                    parameter="criteria",
                )
            object.__setattr__(self, key, float(value))

    def as_dict(self) -> dict[str, float]:
        """The four figures by their settings names."""
        return asdict(self)

    def adversary_payout(self, success: NDArray[Any]) -> NDArray[Any]:
        """ARX ``RiskModelCostBenefit.getExpectedAdversaryPayout``: ``gain * p - cost``."""
        return np.asarray(self.adversary_gain * success - self.adversary_cost)

    def publisher_payout(self, loss: NDArray[Any], success: NDArray[Any]) -> NDArray[Any]:
        """ARX ``getExpectedPublisherPayout``: ``benefit * (1 - IL)``, less ``loss * p`` where
        the adversary's payout is positive (element-wise, ARX's operation order)."""
        benefit = self.publisher_benefit * (1.0 - loss)
        attacked = self.adversary_payout(success) > 0.0
        return np.asarray(benefit - np.where(attacked, self.publisher_loss * success, 0.0))


def no_attack_k(costs: CostBenefit) -> int:
    """The class size from which an attack does not pay (ARX
    ``ProfitabilityProsecutorNoAttack.initialize``).

    The adversary's payout ``gain / size - cost`` must not be positive, so
    ``size > gain / cost``: with ``t = gain / cost``, ``k = t + 1`` for a whole
    ``t``, else ``ceil(t)``; ``k = 1`` without gain, and no finite ``k`` (every
    class fails) when an attack costs nothing but gains.
    """
    if costs.adversary_gain == 0.0:
        return 1
    if costs.adversary_cost == 0.0:
        return 2**31 - 1  # ARX: Integer.MAX_VALUE
    threshold = costs.adversary_gain / costs.adversary_cost
    if math.isinf(threshold):
        return 2**31 - 1
    if threshold == math.floor(threshold):
        return min(int(threshold) + 1, 2**31 - 1)
    return min(math.ceil(threshold), 2**31 - 1)


# ---------------------------------------------------------------------------
# Entropy-based information loss of a class


_DECIMAL = Context(prec=40)


@lru_cache(maxsize=65536)
def _log10_exact(x: float) -> float:
    """Correctly rounded ``log10`` of one positive double (40-digit decimal logarithm; the
    same products of domain shares recur from node to node, so results are kept)."""
    return float(Decimal(x).log10(_DECIMAL))


_LONG_DOUBLE_WIDE = bool(np.finfo(np.longdouble).nmant >= 63)


class _Log10Table:
    """Correctly rounded ``log10`` of the values met so far, sorted for ``searchsorted``
    (the domain-share products recur from node to node: a search meets a few thousand);
    emptied when it grows past ``limit`` values. The keys and their logarithms are one
    tuple, replaced whole: a lookup reads one consistent table even when another thread
    adds to it meanwhile (that thread's additions may then be dropped, never mixed up)."""

    def __init__(self, limit: int = 1 << 20) -> None:
        self.limit = limit
        self.table: tuple[NDArray[Any], NDArray[Any]] = (np.zeros(0), np.zeros(0))

    @property
    def keys(self) -> NDArray[Any]:
        """The values met so far, sorted."""
        return self.table[0]

    def lookup(self, x: NDArray[Any]) -> NDArray[Any]:
        """``log10`` of a 1-d array: looked up, the values not met before computed and kept."""
        keys, values = self.table
        hit = _hits(keys, x)
        if not hit.all():
            new = np.unique(x[~hit])
            if keys.shape[0] + new.shape[0] > self.limit:
                keys, values = np.zeros(0), np.zeros(0)
                new = np.unique(x)
            keys, values = _merged(keys, values, new, _log10_new(new))
            self.table = (keys, values)
        out = np.asarray(values[_where(keys, x)], dtype=np.float64)
        out[np.isnan(x)] = np.nan  # NaN never equals a key
        return out


def _where(keys: NDArray[Any], x: NDArray[Any]) -> NDArray[Any]:
    """Where each value of ``x`` is or would go among the sorted ``keys`` (clipped)."""
    return np.minimum(np.searchsorted(keys, x), max(keys.shape[0] - 1, 0))


def _hits(keys: NDArray[Any], x: NDArray[Any]) -> NDArray[Any]:
    """Which values of ``x`` are among the sorted ``keys``."""
    if not keys.shape[0]:
        return np.zeros(x.shape, dtype=bool)
    return np.asarray(keys[_where(keys, x)] == x)


def _merged(
    keys: NDArray[Any], values: NDArray[Any], new: NDArray[Any], logs: NDArray[Any]
) -> tuple[NDArray[Any], NDArray[Any]]:
    """The table with the ``new`` values (not NaN) and their logarithms, sorted by value."""
    keep = ~np.isnan(new)
    merged = np.concatenate((keys, new[keep]))
    rows = np.argsort(merged, kind="stable")
    return merged[rows], np.concatenate((values, logs[keep]))[rows]


_LOG10_TABLE = _Log10Table()
#: :func:`log10_array`'s results for arrays of at most :data:`_SMALL` values, by value (a
#: node's few combinations of domain shares: one dict look-up each costs less than the
#: table's sorted search); emptied when it holds :data:`_SMALL_KEPT` values
_LOG10_SMALL: dict[float, float] = {}
_SMALL = 64
_SMALL_KEPT = 1 << 20


def _log10_small(flat: NDArray[Any]) -> NDArray[Any]:
    """:func:`log10_array` of at most :data:`_SMALL` values through :data:`_LOG10_SMALL`
    (the same :func:`_log10_new` results, computed once per value)."""
    known = _LOG10_SMALL
    values = flat.tolist()
    logs = [known.get(v) for v in values]
    if None in logs:
        missing = [i for i, v in enumerate(logs) if v is None]
        new = _log10_new(flat[missing]).tolist()
        if len(known) + len(new) > _SMALL_KEPT:
            known.clear()
        for i, v in zip(missing, new, strict=True):
            logs[i] = v
            if values[i] == values[i]:  # NaN is never found again: not kept
                known[values[i]] = v
    return np.array(logs, dtype=np.float64)


def log10_array(x: NDArray[Any]) -> NDArray[Any]:
    """Correctly rounded ``log10`` element-wise (Java's ``Math.log10`` on the values ARX
    meets), each value computed once per process (:class:`_Log10Table`, :func:`_log10_new`,
    a dict for a few values): a node's classes share a handful of domain-share products, and
    nodes share them."""
    x = np.asarray(x, dtype=np.float64)
    flat = x.ravel()
    if flat.size <= _SMALL:
        return _log10_small(flat).reshape(x.shape)
    from anonlab.grouping import factorize_int64

    # hashed by bit pattern, not sorted: the distinct values in order of first appearance
    inverse, bits = factorize_int64(flat.view(np.int64))
    if bits.size < flat.size // 2:
        return np.asarray(_LOG10_TABLE.lookup(bits.view(np.float64))[inverse]).reshape(x.shape)
    return _LOG10_TABLE.lookup(flat).reshape(x.shape)


def _log10_new(x: NDArray[Any]) -> NDArray[Any]:
    """Correctly rounded ``log10`` of a 1-d array: long double, with the results near a
    rounding midpoint recomputed exactly (decimal), or all exactly where long double is no
    wider than a double."""
    if not _LONG_DOUBLE_WIDE:
        return np.array([_log10_exact(float(v)) for v in x], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        wide = np.log10(x.astype(np.longdouble))
        out = wide.astype(np.float64)
        gap = np.abs(wide - out.astype(np.longdouble))
        ulp = np.spacing(np.abs(out)).astype(np.longdouble)
        # long double's log10 errs by well under 2^-11 of a double's unit in the last place;
        # results within 2^-8 of a midpoint are recomputed exactly
        risky = (out != 0.0) & (np.abs(gap - ulp / 2) < ulp * np.longdouble(2.0**-8))
    for i in np.flatnonzero(risky):
        out[i] = _log10_exact(float(x[i]))
    return out


def domain_shares(qi: EncodedQI, rows: Sequence[Sequence[str]]) -> list[NDArray[Any]]:
    """``shares[level][group]``: ARX's domain share of each group of one quasi-identifier.

    ``DomainShareMaterialized``: the hierarchy's rows (all its values, in the
    data or not) whose label at the level is the group's, over the rows.
    """
    size = float(len(rows))
    tables = []
    for level in range(qi.height + 1):
        counted = Counter(row[level] for row in rows)
        tables.append(
            np.array([counted[label] / size for label in qi.level_labels[level]], dtype=np.float64)
        )
    return tables


def maximal_loss(domain_sizes: Sequence[float]) -> float:
    """ARX ``getMaximalEntropyBasedInformationLoss``: ``log10`` of the product of the
    domain sizes (multiplied in order)."""
    product = 1.0
    for size in domain_sizes:
        product *= float(size)
    return _log10_exact(product) if product > 0.0 and math.isfinite(product) else math.nan


def entropy_based_loss(shares: NDArray[Any], max_loss: float, exact: bool = True) -> NDArray[Any]:
    """Each class's entropy-based information loss from its ``(classes, m)`` domain shares.

    ARX ``MetricSDNMEntropyBasedInformationLoss.getEntropyBasedInformationLoss``:
    ``log10(share_1 * ... * share_m) / maxIL + 1`` with the shares multiplied
    in attribute order starting from 1, clipped to ``[0, 1]``; 0 when
    ``maxIL`` is 0 or not finite (no information to lose). ``exact=False``
    takes NumPy's ``log10`` (a few units in the last place off), for callers
    that redo the borderline classes exactly.
    """
    shares = np.asarray(shares, dtype=np.float64)
    product = np.ones(shares.shape[0], dtype=np.float64)
    for dim in range(shares.shape[1]):
        product = product * shares[:, dim]
    return loss_of_products(product, max_loss, exact)


def loss_of_products(product: NDArray[Any], max_loss: float, exact: bool = True) -> NDArray[Any]:
    """:func:`entropy_based_loss` from each class's product of domain shares (multiplied in
    attribute order from 1, e.g. by :meth:`ShareTables.products`)."""
    if max_loss == 0.0 or not math.isfinite(max_loss):
        return np.zeros(product.shape[0], dtype=np.float64)
    logs = log10_array(product) if exact else np.log10(product)
    loss = logs / max_loss + 1.0
    return np.asarray(np.clip(loss, 0.0, 1.0), dtype=np.float64)


#: the combination grids a :class:`ShareTables` keeps (emptied when full): a search meets each
#: node's level vector a few times in a row
_GRIDS_KEPT = 4096


class ShareTables:
    """The domain shares ``tables[dim][level][group]`` (:func:`domain_shares`), with each
    table's one value where all its groups share it (the leaves: ``1 / rows``; a single
    top group: 1), for :meth:`products`."""

    def __init__(self, tables: Sequence[Sequence[NDArray[Any]]]) -> None:
        self.tables = [list(per_dim) for per_dim in tables]
        #: ``constant[dim][level]``: the table's value when every group has it, else None
        self.constant: list[list[float | None]] = [
            [float(t[0]) if t.shape[0] and bool(np.all(t == t[0])) else None for t in per_dim]
            for per_dim in self.tables
        ]
        #: the losses of every combination (:meth:`loss_parts`) by level vector, bound and
        #: rounding: a node's criterion, value and bound read the same ones
        self._grids: dict[tuple[tuple[int, ...], float, bool], NDArray[Any]] = {}

    def products(self, codes: NDArray[Any], levels: Sequence[int]) -> NDArray[Any]:
        """``(classes,)``: ``((1 * share_1) * share_2) ... * share_m`` of each class's group
        ``codes[:, dim]`` at ``levels[dim]``, in attribute order (ARX's order).

        A table of one value multiplies by that scalar: as one Python float while no other
        table came (IEEE double arithmetic, the same roundings), not at all when it is 1
        (``x * 1 == x``). Only the other tables are looked up class by class.
        """
        scalar = 1.0
        product: NDArray[Any] | None = None
        for dim, level in enumerate(levels):
            value = self.constant[dim][level]
            if value is None:
                shares = self.tables[dim][level].take(codes[:, dim])
                if product is None:
                    product = np.multiply(shares, scalar, out=shares)
                else:
                    np.multiply(product, shares, out=product)
            elif product is None:
                scalar *= value
            elif value != 1.0:
                np.multiply(product, value, out=product)
        if product is None:
            return np.full(codes.shape[0], scalar, dtype=np.float64)
        return product

    def losses(
        self, codes: NDArray[Any], levels: Sequence[int], max_loss: float, exact: bool = True
    ) -> NDArray[Any]:
        """``(classes,)``: each class's entropy-based information loss
        (:func:`loss_of_products` of :meth:`products`), :meth:`loss_parts` put together."""
        values, index = self.loss_parts(codes, levels, max_loss, exact)
        return values if index is None else np.asarray(values.take(index))

    def loss_parts(
        self, codes: NDArray[Any], levels: Sequence[int], max_loss: float, exact: bool = True
    ) -> tuple[NDArray[Any], NDArray[Any] | None]:
        """Each class's entropy-based information loss as ``(values, index)``: class ``c``'s
        loss is ``values[index[c]]``, or ``values[c]`` when ``index`` is ``None``.

        The loss depends on a class's groups in the dimensions whose table is not one value
        only. When those groups have no more combinations than there are classes, the loss
        of every combination is computed once (its product with the same multiplications in
        the same order as a class's, so the same value; kept for the level vector, since a
        node's criterion, value and bound all ask) and ``index`` is each class's
        combination, ``(g_1 n_2 + g_2) n_3 + ...``: a caller that maps the losses element
        by element (e.g. to payouts) maps the few combinations, then looks the classes up.
        Otherwise the losses are computed class by class (``index`` is ``None``).
        """
        varying = [d for d, level in enumerate(levels) if self.constant[d][level] is None]
        sizes = [self.tables[d][levels[d]].shape[0] for d in varying]
        if not varying or math.prod(sizes) > codes.shape[0]:
            return loss_of_products(self.products(codes, levels), max_loss, exact), None
        key = (tuple(levels), max_loss, exact)
        grid = self._grids.get(key)
        if grid is None:
            if len(self._grids) >= _GRIDS_KEPT:
                self._grids.clear()
            grid = loss_of_products(self._grid_products(levels), max_loss, exact)
            self._grids[key] = grid
        combination = codes[:, varying[0]].astype(np.int64)
        for d, size in zip(varying[1:], sizes[1:], strict=True):
            combination *= size
            combination += codes[:, d]
        return grid, combination

    def _grid_products(self, levels: Sequence[int]) -> NDArray[Any]:
        """The product of every combination of groups of the varying tables at ``levels``
        (the last varying dimension's group changing fastest), multiplied as
        :meth:`products` multiplies a class's."""
        scalar = 1.0
        grid: NDArray[Any] | None = None
        for dim, level in enumerate(levels):
            value = self.constant[dim][level]
            if value is None:
                table = self.tables[dim][level]
                grid = table * scalar if grid is None else np.multiply.outer(grid, table).ravel()
            elif grid is None:
                scalar *= value
            elif value != 1.0:
                grid = grid * value
        return np.full(1, scalar) if grid is None else grid


def success_probability(
    counts: NDArray[Any], population: NDArray[Any] | None, journalist: bool
) -> NDArray[Any]:
    """The adversary's success probability per class: ``1 / count``, or for the journalist
    ``1 / pcount`` where the class has population records (ARX ``getSuccessProbability``).
    Classes without records get 0 (they are not judged)."""
    size = np.asarray(counts, dtype=np.float64)
    if journalist and population is not None:
        size = np.where(population > 0, population.astype(np.float64), size)
    # no division by 0 to silence: the divisor is at least 1
    return np.where(size > 0, 1.0 / np.maximum(size, 1.0), 0.0)


class SizeTables:
    """The adversary's success probability and the publisher's loss from an attack, by class
    size: what :func:`success_probability` and :meth:`CostBenefit.publisher_payout` compute
    class by class, computed once for every size from 0 to ``largest`` with the same
    operations on the same values (so the same doubles), then looked up by each class's size
    (:func:`attack_sizes`).

    ``success[s]`` is ``1 / s`` (0 for ``s = 0``); ``attack[s]`` is ``loss * success[s]``
    where the adversary's payout ``gain * success[s] - cost`` is positive, else 0, so a
    class's expected payout is ``benefit * (1 - IL) - attack[size]``.
    """

    def __init__(self, costs: CostBenefit, largest: int) -> None:
        size = np.arange(largest + 1, dtype=np.float64)
        self.success = success_probability(size, None, False)
        attacked = costs.adversary_payout(self.success) > 0.0
        self.attack = np.asarray(np.where(attacked, costs.publisher_loss * self.success, 0.0))


#: the largest class size :class:`SizeTables` are made for (8 MiB a table); a larger table's
#: figures are computed class by class
SIZE_TABLE_LIMIT = 1 << 20


def attack_sizes(
    counts: NDArray[Any], population: NDArray[Any] | None, journalist: bool
) -> NDArray[Any]:
    """The size each class's success probability is ``1 / size`` of
    (:func:`success_probability`): its records, or for the journalist its population records
    where it has some."""
    if journalist and population is not None:
        return np.asarray(np.where(population > 0, population, counts))
    return counts


# ---------------------------------------------------------------------------
# The criteria


def _costs(values: Mapping[str, Any]) -> CostBenefit:
    """A :class:`CostBenefit` from the keyword arguments given (ARX's defaults elsewhere)."""
    return CostBenefit(**{k: v for k, v in values.items() if v is not None})


class _Profitability(Criterion):
    """What the four models share: the cost-benefit figures and, for the journalist ones,
    the research subset."""

    journalist = False
    needs_codes = False

    def __init__(
        self,
        publisher_benefit: float | None = None,
        publisher_loss: float | None = None,
        adversary_gain: float | None = None,
        adversary_cost: float | None = None,
    ) -> None:
        self.costs = _costs(
            {
                "publisher_benefit": publisher_benefit,
                "publisher_loss": publisher_loss,
                "adversary_gain": adversary_gain,
                "adversary_cost": adversary_cost,
            }
        )

    def __repr__(self) -> str:
        figures = ", ".join(f"{k}={v:g}" for k, v in self.costs.as_dict().items())
        return f"{type(self).__name__}({figures})"

    def parameters(self) -> dict[str, Any]:
        """The four cost-benefit figures (and the subset of a journalist model)."""
        return dict(self.costs.as_dict())


class _Journalist(_Profitability):
    """The research subset of a journalist model (the table given is the population)."""

    needs_population = True
    #: the model names the research subset: the dataset is built as for delta-presence
    defines_subset = True

    def __init__(
        self,
        subset: TableSource | None = None,
        publisher_benefit: float | None = None,
        publisher_loss: float | None = None,
        adversary_gain: float | None = None,
        adversary_cost: float | None = None,
    ) -> None:
        super().__init__(publisher_benefit, publisher_loss, adversary_gain, adversary_cost)
        self.subset = subset

    def parameters(self) -> dict[str, Any]:
        """The subset and the four cost-benefit figures."""
        return {"subset": _source_text(self.subset), **self.costs.as_dict()}

    def _bind_subset(self, dataset: Dataset) -> None:
        if dataset.population is None:
            raise AnonlabError(
                f"{self.name} needs the research subset: give subset (the "
                "table is then the population it was drawn from)",
                parameter="criteria",
            )


class ProfitabilityProsecutor(_Profitability):
    """ARX ``ProfitabilityProsecutor``: keep a class when publishing it pays.

    A class (with records) is an outlier unless the publisher's expected payout
    (:meth:`CostBenefit.publisher_payout`) with the class's entropy-based
    information loss and success probability ``1 / count`` is positive. Not
    monotone (ARX: generalizing lowers the adversary's success only a little
    but the publisher's benefit a lot).
    """

    name = "profitability-prosecutor"
    monotone_with_generalization = False
    monotone_with_suppression = False
    needs_codes = True
    # what bind takes from the dataset; until then, none (bind assigns each anew)
    _shares: list[list[NDArray[Any]]] | None = None
    _flat: NDArray[Any] = np.zeros(0)
    _offsets: NDArray[np.int64] = np.zeros((0, 0), dtype=np.int64)
    _max_loss = math.nan
    _tables: ShareTables | None = None
    _sizes: SizeTables | None = None

    def bind(self, dataset: Dataset) -> None:
        """Take the domain shares of every quasi-identifier and ARX's maximal loss."""
        self._shares = [domain_shares(q, q.hierarchy.rows) for q in dataset.qis]
        self._tables = ShareTables(self._shares)
        self._max_loss = maximal_loss([len(q.hierarchy.rows) for q in dataset.qis])
        population = dataset.population
        largest = max(dataset.n, 0 if population is None else int(population.shape[0]))
        self._sizes = None if largest > SIZE_TABLE_LIMIT else SizeTables(self.costs, largest)
        # one flat table: shares[dim][level][code] at flat[offsets[dim, level] + code]
        tables = [t for per_dim in self._shares for t in per_dim]
        sizes = np.array([t.shape[0] for t in tables], dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        self._flat = np.concatenate(tables) if tables else np.zeros(0)
        self._offsets = np.zeros(
            (len(self._shares), max(map(len, self._shares), default=0)), dtype=np.int64
        )
        position = 0
        for dim, per_dim in enumerate(self._shares):
            self._offsets[dim, : len(per_dim)] = starts[position : position + len(per_dim)]
            position += len(per_dim)

    def class_shares(self, stats: ClassStats, rows: NDArray[Any] | None = None) -> NDArray[Any]:
        """``(classes, m)``: each class's domain share in each quasi-identifier (of the
        classes ``rows`` only, when given)."""
        if self._shares is None or stats.codes is None:
            raise AnonlabError(
                f"{self.name} needs the classes' values: bind it to the dataset "
                "and judge it through the lattice search",
                parameter="criteria",
            )
        codes = stats.codes if rows is None else stats.codes[rows]
        if not stats.levels:
            return np.ones((codes.shape[0], 0))
        base = self._offsets[np.arange(len(stats.levels)), np.asarray(stats.levels)]
        return np.asarray(self._flat.take(codes.astype(np.int64, copy=False) + base))

    def class_products(self, stats: ClassStats, rows: NDArray[Any]) -> NDArray[Any]:
        """``(len(rows),)``: the product of the domain shares of each class of ``rows``, in
        attribute order (each row of :meth:`class_shares` multiplied out,
        :meth:`ShareTables.products`)."""
        if self._tables is None or stats.codes is None:
            raise AnonlabError(
                f"{self.name} needs the classes' values: bind it to the dataset "
                "and judge it through the lattice search",
                parameter="criteria",
            )
        return self._tables.products(stats.codes[rows], stats.levels)

    def class_loss(self, stats: ClassStats) -> NDArray[Any]:
        """Each class's entropy-based information loss at the node."""
        return entropy_based_loss(self.class_shares(stats), self._max_loss)

    def payout(self, stats: ClassStats) -> NDArray[Any]:
        """The publisher's expected payout per record of each class with records (``inf``
        for a class of population records only, which is never judged), in ARX's arithmetic.

        NumPy's ``log10`` first; the classes whose payout lies within a relative
        ``1e-9`` of 0 (where a last-place difference could flip the verdict) are
        computed again with the correctly rounded logarithm.
        """
        sizes = self._sizes
        if sizes is not None and self._tables is not None and stats.codes is not None:
            return self._payout_by_tables(stats, self._tables, sizes, stats.codes)
        live = np.flatnonzero(stats.counts > 0)
        success = success_probability(stats.counts, stats.population, self.journalist)[live]
        products = self.class_products(stats, live)
        payout = self.costs.publisher_payout(
            loss_of_products(products, self._max_loss, exact=False), success
        )
        scale = max(self.costs.publisher_benefit, self.costs.publisher_loss, 1.0)
        near = np.flatnonzero(np.abs(payout) <= 1e-9 * scale)
        if near.size:
            payout[near] = self.costs.publisher_payout(
                loss_of_products(products[near], self._max_loss), success[near]
            )
        out = np.full(stats.classes, np.inf)
        out[live] = payout
        return out

    def _payout_by_tables(
        self, stats: ClassStats, tables: ShareTables, sizes: SizeTables, codes: NDArray[Any]
    ) -> NDArray[Any]:
        """:meth:`payout` from the tables by class size (:class:`SizeTables`) and the losses'
        combinations (:meth:`ShareTables.loss_parts`): the same operations on the same values,
        the benefit ``benefit (1 - IL)`` mapped on the combinations before each class looks
        its own up, and every class computed (those without records then set to ``inf``)."""
        counts = stats.counts
        attack = sizes.attack.take(attack_sizes(counts, stats.population, self.journalist))
        top = self.costs.publisher_benefit
        payout = self._benefit(tables, codes, stats.levels, False) - attack
        scale = max(self.costs.publisher_benefit, self.costs.publisher_loss, 1.0)
        near = np.flatnonzero(np.abs(payout) <= 1e-9 * scale)
        if near.size:
            values, index = tables.loss_parts(codes, stats.levels, self._max_loss)
            exact = values if index is None else values.take(index[near])
            if index is None:
                exact = exact[near]
            payout[near] = top * (1.0 - exact) - attack[near]
        return np.asarray(np.where(counts > 0, payout, np.inf))

    def _benefit(
        self, tables: ShareTables, codes: NDArray[Any], levels: Sequence[int], exact: bool
    ) -> NDArray[Any]:
        """Each class's ``benefit (1 - IL)``, computed on the losses' combinations."""
        values, index = tables.loss_parts(codes, levels, self._max_loss, exact)
        benefit = self.costs.publisher_benefit * (1.0 - values)
        return benefit if index is None else np.asarray(benefit.take(index))

    def outliers(self, stats: ClassStats) -> NDArray[Any]:
        """Classes with records whose publisher payout is not positive."""
        return np.asarray((self.payout(stats) <= 0.0) & (stats.counts > 0))

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """The smallest publisher payout per record over the released classes, and the
        released classes an adversary's attack pays on."""
        released = ~outliers & (stats.counts > 0)
        payout = self.payout(stats)[released]
        success = success_probability(stats.counts, stats.population, self.journalist)[released]
        attacked = self.costs.adversary_payout(success) > 0.0
        return {
            "lowest_payout": float(payout.min()) if payout.size else None,
            "classes_attacked": int(np.count_nonzero(attacked)),
        }


class ProfitabilityJournalist(_Journalist, ProfitabilityProsecutor):
    """ARX ``ProfitabilityJournalist``: :class:`ProfitabilityProsecutor` with a research
    subset; the adversary's success probability is ``1 / pcount``."""

    name = "profitability-journalist"
    journalist = True

    def bind(self, dataset: Dataset) -> None:
        """Require the research subset, then take the domain shares."""
        self._bind_subset(dataset)
        super().bind(dataset)


class ProfitabilityProsecutorNoAttack(_Profitability):
    """ARX ``ProfitabilityProsecutorNoAttack``: no adversary gains from attacking a record.

    k-anonymity with ``k`` from :func:`no_attack_k` (the class size at which
    ``gain / size - cost`` is no longer positive); ``k`` is the model's minimal
    class size. Monotone with and without suppression.
    """

    name = "profitability-prosecutor-no-attack"
    monotone_with_generalization = True
    monotone_with_suppression = True

    @property
    def k(self) -> int:
        """The class size from which no attack pays."""
        return no_attack_k(self.costs)

    def minimal_class_size(self) -> int | None:
        """``k``."""
        return self.k

    def outliers(self, stats: ClassStats) -> NDArray[Any]:
        """Classes with fewer than ``k`` records."""
        return np.asarray(stats.counts < self.k)

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """``k`` and the smallest released class."""
        kept = stats.counts[~outliers & (stats.counts > 0)]
        return {"k": self.k, "smallest_class": int(kept.min()) if kept.size else None}


class ProfitabilityJournalistNoAttack(_Journalist):
    """ARX ``ProfitabilityJournalistNoAttack``: no attack pays on the population's classes.

    Every class with subset records needs at least ``k`` (:func:`no_attack_k`)
    records in the population, ``pcount >= k``. No minimal class size (ARX
    declares none); monotone both ways.
    """

    name = "profitability-journalist-no-attack"
    monotone_with_generalization = True
    monotone_with_suppression = True

    @property
    def k(self) -> int:
        """The population class size from which no attack pays."""
        return no_attack_k(self.costs)

    def bind(self, dataset: Dataset) -> None:
        """Require the research subset."""
        self._bind_subset(dataset)

    def outliers(self, stats: ClassStats) -> NDArray[Any]:
        """Classes with subset records and fewer than ``k`` population records."""
        population = stats.population
        if population is None:
            raise AnonlabError(
                f"{self.name} needs the population counts of each class: build "
                "the dataset with anonlab.privacy.presence.population_dataset",
                parameter="criteria",
            )
        return np.asarray((population < self.k) & (stats.counts > 0))

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """``k`` and the smallest population class among the released ones."""
        released = ~outliers & (stats.counts > 0)
        population = stats.population if stats.population is not None else stats.counts
        kept = population[released]
        return {"k": self.k, "smallest_population_class": int(kept.min()) if kept.size else None}


#: every profitability model by name
PROFITABILITY_MODELS = (
    ProfitabilityProsecutor,
    ProfitabilityJournalist,
    ProfitabilityProsecutorNoAttack,
    ProfitabilityJournalistNoAttack,
)


def model_costs(criteria: Sequence[Criterion]) -> CostBenefit | None:
    """The cost-benefit figures of a model's profitability criteria (``None``: it has none).

    ARX keeps one set per configuration; two profitability criteria with
    different figures are refused.
    """
    found = [c.costs for c in criteria if isinstance(c, _Profitability)]
    if any(f != found[0] for f in found[1:]):
        raise AnonlabError(
            "the profitability models give different cost-benefit figures: "
            "give the same publisher_benefit, publisher_loss, adversary_gain "
            "and adversary_cost to each (ARX keeps one set)",
            parameter="criteria",
        )
    return found[0] if found else None
