"""ARX's local recoding: full-domain searches repeated on the records still suppressed.

ARX 3.9 (``ARXResult.optimizeIterative``, Prasser et al., "Lightning: utility-driven
anonymization of high-dimensional data", and the ARX documentation of local recoding) improves
a full-domain release record by record. The release of the full-domain optimum is the
start; then, as long as some records are suppressed:

1. the records still suppressed form a table of their own, and the optimal full-domain
   search runs again on it, with the same privacy model, suppression limit and metric, except
   that the metric's generalization/suppression factor is ``gs_factor`` (ARX's default 0.05:
   suppressing a record costs far more than generalizing it, so the search prefers to release
   the records);
2. the records that search releases take its transformation, the others stay suppressed;
3. when a search releases no record the factor is raised by ``adaption`` (if the sum is still
   at most 1) and the search is tried again; otherwise the iterations end.

At most ``iterations`` searches are run, and none once fewer records are suppressed than the
model's minimal class size (the largest ``k``, ``ceil(l)`` or derived k-map ``k'`` of the
criteria: ARX's ``ARXConfiguration.getMinimalGroupSize``) or when none is left. Each record
thus carries the levels of the search that released it: classes of different iterations are
disjoint sets of records, each satisfying the model on its own.

What a search on the suppressed records keeps from the whole table, as ARX's
``DataManagerSubset`` does: the hierarchies and the value dictionaries, hence the domain
shares of the metrics and ARX's value codes; the distribution of each sensitive attribute over
the whole table (the reference of t-closeness and of the class sizes its models imply). What is
the subset's own: its records, their number (the metric's normalization, the suppression
limit's base). An estimated k-map becomes k-anonymity with its derived ``k'``, computed once
on the whole table (ARX's ``KMap.clone(subset)``), and of several k-anonymity models only the
largest ``k`` is kept (ARX's ``ARXConfiguration.getInstanceForLocalRecoding``).

**Without the rows.** A search judges classes, and a class is a union of the table's
distinct quasi-identifier tuples, so all records of one tuple share their fate: the records
still suppressed are always whole tuples. On an engine's rowless dataset (its base frequency
set, :func:`anonlab.lattice.pieces.rowless_dataset`) the *units* of the recoding are therefore
those tuples, each weighted by its records, and the set of records a later search runs on is
the base frequency set restricted to the suppressed tuples (:func:`subset_rowless`): the same
tuples in the same order of first appearance, the same counts and sensitive histograms, so the
same searches and optimum as on the rows (docs/generalization.md, "Local recoding"). In memory
the units are the records.

Models ARX does not recode locally (``PrivacyCriterion.isLocalRecodingSupported``: delta-
presence, population uniqueness, the profitability models, k-map on a population table) leave
the full-domain release as it is, as ARX does; :func:`local_recoding_refusal` says why.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.dataset import Dataset, Role
from anonlab.errors import AnonlabError
from anonlab.grouping import group_tuples
from anonlab.hierarchy import SUPPRESSED
from anonlab.lattice.freqset import FrequencyCache, FrequencyEngine
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.local_lattice import LatticeClasses, class_based
from anonlab.lattice.metrics import LossContext, metric_by_name
from anonlab.lattice.metrics.multidim import LossMetric
from anonlab.lattice.plan import SearchPlan, plan_search
from anonlab.lattice.search import SearchContext, sensitive_attributes
from anonlab.privacy import Criterion, KAnonymity, max_suppressed
from anonlab.privacy.presence import KMap
from anonlab.privacy.spec import bind_criteria

#: ARX's defaults (its GUI's and ``optimizeIterative``'s usual arguments)
DEFAULT_GS_FACTOR = 0.05
DEFAULT_ITERATIONS = 100
DEFAULT_ADAPTION = 0.05


@dataclass
class Iteration:
    """One search of local recoding: the transformation it chose (``None`` when it found no
    acceptable node), the generalization/suppression factor it ran with, the records it
    searched and the records it released."""

    levels: tuple[int, ...] | None
    gs_factor: float
    records: int
    released: int


@dataclass
class LocalRecoding:
    """The result of :func:`local_recoding`.

    ``step`` gives each unit (a record in row order; on a rowless dataset a distinct tuple of
    its base frequency set, weighted by ``counts``) the search that released it: 0 for the
    full-domain optimum, ``i`` for the ``i``-th search on the suppressed records, -1 for a unit
    still suppressed. ``levels[s]`` is search ``s``'s transformation (``levels[0]`` the full-domain
    optimum's); ``iterations`` lists every search after the first, including those that
    released no record. ``refusal`` says why no search ran after the first, if a model
    forbids local recoding.
    """

    step: NDArray[Any]
    levels: list[tuple[int, ...]]
    iterations: list[Iteration] = field(default_factory=list)
    refusal: str | None = None
    #: records of each unit (``None``: one each, the units are records)
    counts: NDArray[Any] | None = None

    def records(self, units: NDArray[Any]) -> int:
        """The records of ``units`` (unit numbers)."""
        if self.counts is None:
            return int(units.size)
        return int(np.asarray(self.counts)[units].sum())

    @property
    def suppressed(self) -> int:
        """Records suppressed in the release."""
        return self.records(np.flatnonzero(self.step < 0))

    def summary(self, names: Sequence[str]) -> dict[str, Any]:
        """The report's ``local_recoding`` section: the full-domain optimum, each search on
        the suppressed records (its factor, the records it searched and released, its
        transformation or ``None``), the records each transformation released and the
        records left suppressed."""
        kept = self.step >= 0
        weights = None if self.counts is None else np.asarray(self.counts)[kept]
        released = np.bincount(self.step[kept], weights=weights, minlength=len(self.levels))
        steps = []
        for number, levels in enumerate(self.levels):
            steps.append(
                {
                    "step": number,
                    "transformation": dict(zip(names, levels, strict=True)),
                    "records": int(released[number]),
                }
            )
        searches = [
            {
                "iteration": number,
                "gs_factor": it.gs_factor,
                "records_searched": it.records,
                "records_released": it.released,
                "transformation": None
                if it.levels is None
                else dict(zip(names, it.levels, strict=True)),
            }
            for number, it in enumerate(self.iterations, start=1)
        ]
        return {
            "recoding": "local",
            "iterations": len(self.iterations),
            "releases": steps,
            "searches": searches,
            "suppressed_records": self.suppressed,
            "not_recoded_because": self.refusal,
        }

    def row_levels(self) -> NDArray[Any]:
        """(n, m) each record's levels (a suppressed record: its last search's, irrelevant)."""
        table = np.asarray(self.levels, dtype=np.int64)
        return np.asarray(table[np.maximum(self.step, 0)])


#: models ARX does not recode locally (``isLocalRecodingSupported`` false)
ARX_REFUSED = (
    "delta-presence",
    "population-uniqueness",
    "sample-uniqueness",
    "profitability-journalist",
    "profitability-journalist-no-attack",
)
#: models ARX recodes locally through a projection of a research subset or a population that
#: anonlab's searches on the suppressed records do not make
NOT_HERE = ("inclusion", "profitability-prosecutor", "profitability-prosecutor-no-attack")


def local_recoding_refusal(criteria: Sequence[Criterion]) -> str | None:
    """Why ARX would not recode locally under these criteria (``None``: it would).

    ARX's ``isLocalRecodingSupported``: k-anonymity, the l-diversity, t-closeness, beta-
    likeness and delta-disclosure models, the average risk threshold and an *estimated*
    k-map are recoded locally; delta-presence, the uniqueness thresholds, the journalist
    profitability models and k-map on a population table are not (:data:`ARX_REFUSED`): ARX
    then keeps the full-domain release, and so does :func:`local_recoding`. The models of
    :data:`NOT_HERE` are refused with an error.
    """
    for c in criteria:
        if c.name in NOT_HERE:
            raise AnonlabError(
                f"local recoding does not support {c.name}: choose recoding full-domain",
                parameter="recoding",
            )
    for c in criteria:
        if isinstance(c, KMap) and c.estimator is None:
            return "k-map on a population table: ARX does not recode it locally"
        if c.name in ARX_REFUSED:
            return f"{c.name}: ARX does not recode it locally"
    return None


def minimal_group_size(criteria: Sequence[Criterion]) -> int | None:
    """The largest minimal class size of the criteria (ARX's ``getMinimalGroupSize``)."""
    sizes = [s for s in (c.minimal_class_size() for c in criteria) if s is not None]
    return max(sizes) if sizes else None


def subset_criteria(criteria: Sequence[Criterion]) -> list[Criterion]:
    """The criteria of a search on the suppressed records: an estimated k-map as k-anonymity
    with its derived ``k'``, only the largest of several k-anonymity models."""
    out: list[Criterion] = []
    largest: KAnonymity | None = None
    for c in criteria:
        if isinstance(c, KMap):
            derived = c.derived_k
            if derived is None:
                raise RuntimeError("k-map was not bound to the table")
            c = KAnonymity(derived)
        if isinstance(c, KAnonymity):
            if largest is None or c.k > largest.k:
                largest = c
            continue
        out.append(c)
    if largest is not None:
        out.insert(0, largest)
    return out


def subset_dataset(dataset: Dataset, rows: NDArray[Any]) -> Dataset:
    """The dataset of the records ``rows`` (row order kept), with the whole table's
    dictionaries, hierarchies and sensitive distributions (``EncodedSensitive.frequencies``,
    the reference of t-closeness); each quasi-identifier's value counts are the subset's (the
    metrics' bounds and sums are over the subset's records). On a rowless dataset ``rows``
    are units, tuples of its base frequency set (:func:`subset_rowless`)."""
    if dataset.rowless:
        return subset_rowless(dataset, rows)
    qis = []
    for q in dataset.qis:
        codes = q.codes[rows]
        counts = np.bincount(codes, minlength=len(q.values)).astype(q.frequencies.dtype)
        qis.append(dataclasses.replace(q, codes=codes, frequencies=counts))
    sensitive = tuple(dataclasses.replace(s, codes=s.codes[rows]) for s in dataset.sensitive)
    return Dataset(
        frame=dataset.frame.iloc[rows].reset_index(drop=True),
        roles=dataset.roles,
        qis=tuple(qis),
        source=dataset.source,
        sensitive=sensitive,
    )


def subset_rowless(dataset: Dataset, units: NDArray[Any]) -> Dataset:
    """The rowless dataset of the records of the base tuples ``units`` (increasing): the base
    frequency set restricted to them (their order of first appearance kept, their counts and
    sensitive histograms, the whole table's dictionaries and sensitive value counts), each
    quasi-identifier's value counts the subset's, as :func:`subset_dataset` makes them from
    the rows."""
    from anonlab.engine.base import BaseFrequencySet, SensitiveCounts

    base = dataset.base
    if not isinstance(base, BaseFrequencySet):
        raise TypeError("subset_rowless needs a rowless dataset")
    units = np.asarray(units, dtype=np.int64)
    position = np.full(len(base.counts), -1, dtype=np.int64)
    position[units] = np.arange(units.size, dtype=np.int64)
    sensitive = {}
    for name, h in base.sensitive.items():
        kept = position[np.asarray(h.classes, dtype=np.int64)] >= 0
        sensitive[name] = SensitiveCounts(
            name,
            h.dictionary,
            position[np.asarray(h.classes, dtype=np.int64)[kept]],
            np.asarray(h.values)[kept],
            np.asarray(h.counts)[kept],
            h.frequencies,
        )
    counts = np.asarray(base.counts)[units]
    tuples = np.asarray(base.tuples)[units]
    sub = dataclasses.replace(
        base,
        tuples=tuples,
        counts=counts,
        first_rows=np.asarray(base.first_rows)[units],
        sensitive=sensitive,
        rows=int(counts.sum()),
        weights=None if base.weights is None else np.asarray(base.weights)[units],
    )
    qis = tuple(
        dataclasses.replace(
            q,
            frequencies=np.bincount(tuples[:, j], weights=counts, minlength=len(q.values)).astype(
                q.frequencies.dtype
            ),
        )
        for j, q in enumerate(dataset.qis)
    )
    return dataclasses.replace(dataset, qis=qis, records=sub.rows, base=sub)


@dataclass
class _Search:
    """One optimal full-domain search: its optimum and each record's suppression there."""

    levels: tuple[int, ...]
    suppressed: NDArray[Any]


#: CPU seconds per (node, distinct tuple) pair of judging every node at once
#: (:class:`~anonlab.lattice.local_lattice.LatticeClasses`; measured on Adult's 4,320 nodes,
#: 60 ns on this project's 2-core machine): the estimate that chooses between that and the
#: Flash search (whose cost is not known before it runs: its bounds prune well on many
#: records and a low factor, hardly at all on few records or a high factor)
PAIR_SECONDS = 6e-8
#: a lattice judged at once for a subset whose estimate is below this many CPU seconds;
#: above, the Flash search runs first, and the lattice is judged for the next search on the
#: same records once the searches on them have cost half the estimate (a judged lattice
#: serves every later search on the same records)
JUDGE_AT_ONCE_SECONDS = 0.5
#: from this factor on Flash's bounds prune little (suppression costs nearly as much as
#: generalization, so the optimum lies high and most nodes' bounds are below it): the lattice
#: is judged at once up to :data:`JUDGE_AT_HIGH_FACTOR_SECONDS` (measured on ARX's cases: a
#: search on 3,439 records cost 1.3 s at 0.2, the whole lattice 0.6 s)
HIGH_FACTOR = 0.15
JUDGE_AT_HIGH_FACTOR_SECONDS = 3.0


def _judge_all(
    dataset: Dataset,
    criteria: Sequence[Criterion],
    metric: str,
    aggregate: str | None,
    weights: Mapping[str, float] | None,
) -> LatticeClasses | None:
    """Every node of the lattice judged at once (:class:`LatticeClasses`); ``None`` where
    that does not apply (ARX's loss metric and class-based criteria only) or would hold too
    many classes."""
    if metric != "loss" or not class_based(criteria):
        return None
    lattice = Lattice([q.height for q in dataset.qis], [0] * len(dataset.qis))
    bind_criteria(criteria, dataset)
    chosen = metric_by_name(metric, LossContext(dataset), aggregate=aggregate, weights=weights)
    return LatticeClasses.build(dataset, lattice, criteria, cast(LossMetric, chosen))


class _Searcher:
    """The searches on the suppressed records: an optimal search (:func:`search_once`) or
    every node judged at once (:func:`_judge_all`, kept while the same records are searched
    with a raised factor), whichever :meth:`search` expects to cost less."""

    def __init__(
        self,
        dataset: Dataset,
        criteria: list[Criterion],
        suppression: float,
        metric: str,
        *,
        aggregate: str | None,
        weights: Mapping[str, float] | None,
        plan: SearchPlan,
        cache_size: int,
    ) -> None:
        self.dataset = dataset
        self.criteria = criteria
        self.suppression = suppression
        self.metric = metric
        self.aggregate = aggregate
        self.weights = weights
        self.plan = plan
        self.cache_size = cache_size
        self._rows: NDArray[Any] | None = None
        self._judged: LatticeClasses | None = None
        #: the estimated CPU of judging the current records' lattice, and whether the next
        #: search on them judges it
        self._estimate = math.inf
        self._spent = 0.0
        self._judge_next = False

    def search(self, rows: NDArray[Any], factor: float) -> _Search | None:
        """The optimum on the records ``rows`` with the factor ``factor`` (``None``: no
        acceptable node).

        The two ways give the same optimum (tests/test_local_recoding.py); the choice is one
        of cost: a new set of records is judged at once if :data:`PAIR_SECONDS` estimates
        that below :data:`JUDGE_AT_ONCE_SECONDS` (or :data:`JUDGE_AT_HIGH_FACTOR_SECONDS` from
        a factor of :data:`HIGH_FACTOR`), else searched; once the searches on the same
        records have cost half the estimate, the next one judges the lattice instead.
        """
        sub = subset_dataset(self.dataset, rows)
        if self._rows is None or not np.array_equal(self._rows, rows):
            self._rows = rows
            self._judged = None
            self._estimate = self._judge_estimate(sub)
            self._spent = 0.0
            self._judge_next = self._estimate <= JUDGE_AT_ONCE_SECONDS
        if factor >= HIGH_FACTOR and self._estimate <= JUDGE_AT_HIGH_FACTOR_SECONDS:
            self._judge_next = True
        if self._judged is None and self._judge_next:
            self._judged = _judge_all(sub, self.criteria, self.metric, self.aggregate, self.weights)
            self._judge_next = False
        try:
            if self._judged is None:
                started = time.process_time()
                found = search_once(
                    sub,
                    self.criteria,
                    self.suppression,
                    self.metric,
                    gs_factor=factor,
                    aggregate=self.aggregate,
                    weights=self.weights,
                    plan=self.plan,
                    cache_size=self.cache_size,
                )
                self._spent += time.process_time() - started
                self._judge_next = self._spent > self._estimate / 2
                return found
            chosen = metric_by_name(
                self.metric,
                LossContext(sub),
                gs_factor=factor,
                aggregate=self.aggregate,
                weights=self.weights,
            )
            best = self._judged.optimum(
                cast(LossMetric, chosen), max_suppressed(self.suppression, sub.n)
            )
        except AnonlabError:
            return None
        return None if best is None else _Search(best[0], best[1])

    def _judge_estimate(self, sub: Dataset) -> float:
        """Estimated CPU seconds of judging every node for ``sub`` (infinite where that does
        not apply)."""
        if self.metric != "loss" or not class_based(self.criteria):
            return math.inf
        size = 1
        for q in sub.qis:
            size *= q.height + 1
        if sub.rowless:
            distinct = len(sub.base.counts)
        else:
            distinct = group_tuples(sub.code_matrix(), [q.cardinality(0) for q in sub.qis])[1].size
        return PAIR_SECONDS * float(distinct) * size


def search_once(
    dataset: Dataset,
    criteria: Sequence[Criterion],
    suppression: float,
    metric: str,
    *,
    gs_factor: float,
    aggregate: str | None,
    weights: Mapping[str, float] | None,
    plan: SearchPlan,
    cache_size: int = 256,
    bind: bool = True,
) -> _Search:
    """The optimal full-domain search on ``dataset`` and whether each of its units is
    suppressed at the optimum (an :class:`AnonlabError` if no node is acceptable): its
    records, or on a rowless dataset the tuples of its base frequency set."""
    if bind:
        bind_criteria(criteria, dataset)
    limit = max_suppressed(suppression, dataset.n)
    lattice = Lattice([q.height for q in dataset.qis], [0] * len(dataset.qis))
    loss: LossContext
    if dataset.rowless:
        from anonlab.lattice.pieces import BaseLossContext, search_engine

        engine = search_engine(dataset, sensitive_attributes(criteria))
        loss = BaseLossContext(dataset, engine.base_tuples, engine.bottom.counts)
    else:
        engine = FrequencyEngine(dataset, sensitive=sensitive_attributes(criteria))
        loss = LossContext(dataset, engine.base_tuples, engine.bottom.counts, engine.row_index)
    chosen = metric_by_name(metric, loss, gs_factor=gs_factor, aggregate=aggregate, weights=weights)
    engine.keep_base_index = chosen.needs_base_index and limit > 0
    engine.keep_population_order = chosen.needs_population_order
    ctx = SearchContext(lattice, engine, list(criteria), limit, chosen, cache_size, None)
    result = plan.run(ctx)
    engine.keep_base_index = True
    fs = engine.roll_up(engine.bottom, list(result.levels))
    outliers = np.asarray(ctx.evaluate(fs).classes.outliers, dtype=bool)
    ctx.cache = FrequencyCache(engine, 1)
    base_index = fs.base_index
    if base_index is None:
        raise RuntimeError("the optimum's frequency set lost its base index")
    per_tuple = outliers[base_index]
    suppressed = np.asarray(per_tuple if dataset.rowless else per_tuple[engine.row_index], bool)
    return _Search(tuple(int(v) for v in result.levels), suppressed)


def local_recoding(
    dataset: Dataset,
    criteria: Sequence[Criterion],
    suppression: float,
    metric: str = "loss",
    *,
    gs_factor: float = 0.5,
    aggregate: str | None = None,
    weights: Mapping[str, float] | None = None,
    search: str = "flash",
    local_gs_factor: float = DEFAULT_GS_FACTOR,
    iterations: int = DEFAULT_ITERATIONS,
    adaption: float = DEFAULT_ADAPTION,
    cache_size: int = 256,
) -> LocalRecoding:
    """ARX's local recoding (see the module docstring) of ``dataset`` under ``criteria``.

    The first search is the full-domain optimum with ``metric`` and its ``gs_factor``; the
    searches on the suppressed records use ``metric`` with ``local_gs_factor`` (raised by
    ``adaption`` whenever a search releases nothing), at most ``iterations`` of them.
    """
    for name, value in (("local_gs_factor", local_gs_factor), ("local_adaption", adaption)):
        if not 0.0 <= value <= 1.0:
            raise AnonlabError(f"{name} must lie in [0, 1] (got {value:g})", parameter=name)
    if iterations <= 0:
        raise AnonlabError(
            f"local_iterations must be at least 1 (got {iterations})", parameter="local_iterations"
        )
    plan = plan_search(search)
    first = search_once(
        dataset,
        criteria,
        suppression,
        metric,
        gs_factor=gs_factor,
        aggregate=aggregate,
        weights=weights,
        plan=plan,
        cache_size=cache_size,
    )
    step = np.where(first.suppressed, -1, 0).astype(np.int64)
    counts = np.asarray(dataset.base.counts, dtype=np.int64) if dataset.rowless else None
    out = LocalRecoding(step=step, levels=[first.levels], counts=counts)
    out.refusal = local_recoding_refusal(criteria)
    if out.refusal is not None:
        return out
    smallest = minimal_group_size(criteria)
    searcher = _Searcher(
        dataset,
        subset_criteria(criteria),
        suppression,
        metric,
        aggregate=aggregate,
        weights=weights,
        plan=plan,
        cache_size=cache_size,
    )
    factor = local_gs_factor
    while len(out.iterations) < iterations:
        rows = np.flatnonzero(out.step < 0)
        records = out.records(rows)
        if records == 0 or (smallest is not None and records < smallest):
            break
        found = searcher.search(rows, factor)
        released = 0
        levels: tuple[int, ...] | None = None
        if found is not None:
            levels = found.levels
            out.levels.append(levels)
            kept = rows[~found.suppressed]
            out.step[kept] = len(out.levels) - 1
            released = out.records(kept)
        out.iterations.append(Iteration(levels, factor, records, released))
        if released == 0:
            # ARX: raise the factor and search again while it stays at most 1
            factor += adaption
            if adaption <= 0.0 or not factor <= 1.0:
                break
    return out


__all__ = [
    "ARX_REFUSED",
    "DEFAULT_ADAPTION",
    "DEFAULT_GS_FACTOR",
    "DEFAULT_ITERATIONS",
    "NOT_HERE",
    "Iteration",
    "LocalRecoding",
    "local_recoding",
    "local_recoding_refusal",
    "local_release",
    "minimal_group_size",
    "search_once",
    "subset_criteria",
    "subset_dataset",
    "subset_rowless",
]


def local_release(dataset: Dataset, result: LocalRecoding) -> pd.DataFrame:
    """The release of a local recoding: each record's quasi-identifiers at the levels of the
    search that released it (``*`` in every one for a record still suppressed), the
    identifying columns dropped, every other column as it is, records in the table's order."""
    drop = dataset.columns_with(Role.IDENTIFYING)
    release = dataset.frame.drop(columns=drop).copy()
    levels = result.row_levels()
    suppressed = result.step < 0
    for d, q in enumerate(dataset.qis):
        labels = np.empty(dataset.n, dtype=object)
        for lv in range(q.height + 1):
            rows = np.flatnonzero(levels[:, d] == lv)
            if rows.size:
                names = np.asarray(q.level_labels[lv], dtype=object)
                labels[rows] = names[np.asarray(q.level_codes[lv])[q.codes[rows]]]
        labels[suppressed] = SUPPRESSED
        release[q.name] = labels
    return release
