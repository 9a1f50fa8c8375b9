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

Models ARX does not recode locally (``PrivacyCriterion.isLocalRecodingSupported``: delta-
presence, population uniqueness, the profitability models, k-map on a population table) leave
the full-domain release as it is, as ARX does; :func:`local_recoding_refusal` says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from anonlab.dataset import Dataset
from anonlab.errors import AnonlabError
from anonlab.grouping import group_tuples
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

    ``step`` gives each record (row order) the search that released it: 0 for the full-domain
    optimum, ``i`` for the ``i``-th search on the suppressed records, -1 for a record still
    suppressed. ``levels[s]`` is search ``s``'s transformation (``levels[0]`` the full-domain
    optimum's); ``iterations`` lists every search after the first, including those that
    released no record. ``refusal`` says why no search ran after the first, if a model
    forbids local recoding.
    """

    step: NDArray[Any]
    levels: list[tuple[int, ...]]
    iterations: list[Iteration] = field(default_factory=list)
    refusal: str | None = None

    @property
    def suppressed(self) -> int:
        """Records suppressed in the release."""
        return int(np.count_nonzero(self.step < 0))

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
    metrics' bounds and sums are over the subset's records)."""
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


@dataclass
class _Search:
    """One optimal full-domain search: its optimum and each record's suppression there."""

    levels: tuple[int, ...]
    suppressed: NDArray[Any]


#: the most (node, distinct tuple) pairs for which every node is judged at once
#: (:class:`~anonlab.lattice.local_lattice.LatticeClasses`) instead of a Flash search: on
#: Adult's 4,320 nodes, subsets of up to about 900 distinct tuples (measured on ARX's
#: local-recoding cases: there one pass over the lattice, reused while the factor rises,
#: costs less than the searches)
WHOLE_LATTICE_PAIRS = 4_000_000


@dataclass
class _Search:
    """One optimal full-domain search: its optimum and each record's suppression there."""

    levels: tuple[int, ...]
    suppressed: NDArray[Any]


#: the most (node, distinct tuple) pairs the whole-lattice evaluation takes on; above, the
#: searches of :mod:`anonlab.lattice.flash` run (they prune; on small subsets they check
#: nearly every node, one at a time)
WHOLE_LATTICE_PAIRS = 4_000_000
#: (node, distinct tuple) pairs per block of the whole-lattice evaluation
_BLOCK_PAIRS = 1 << 17


def _class_based(criteria: Sequence[Criterion]) -> bool:
    """Whether every criterion judges classes one by one (no whole-node condition, no
    suppression of its own, no population, no class values)."""
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


def whole_lattice_search(
    dataset: Dataset,
    criteria: Sequence[Criterion],
    suppression: float,
    metric: LossMetric,
    lattice: Lattice,
) -> _Search | None:
    """The optimum of ARX's loss metric over every node of ``lattice``, evaluated in blocks
    of nodes at once (``None`` where this evaluation does not apply: see below).

    For each node the distinct QI tuples of ``dataset`` (numbered by first appearance) are
    grouped by their generalized codes; the classes of a block of nodes are numbered node by
    node in order of first appearance, which is the class order of the frequency sets (and
    of ARX's hash groupify), and the criteria judge all of them in one call (they are
    class-based: :func:`_class_based`). Each class's term per attribute is the loss metric's
    (:class:`~anonlab.lattice.metrics.multidim.LossMetric`: ``|E| s G`` released,
    ``|E| s + S (|E| - |E| s)`` suppressed); the terms of each node are added left to right in
    class order (``numpy.bincount`` with weights adds each bin's weights in input order, one
    rounding per term, as ARX's loop does),
    normalized and rounded as ARX does, and reduced by the metric's aggregate. A node is
    acceptable when it suppresses at most ``floor(suppression * n)`` records. Among the
    acceptable nodes the optimum is the least loss, then the lowest level, then the smallest
    level vector (:meth:`SearchContext.sort_key`).
    """
    qis = dataset.qis
    m = len(qis)
    n = dataset.n
    if n == 0 or not _class_based(criteria):
        return None
    if any(
        metric.ctx.domain_size(i) == 0 or n - metric.g_factor * n / metric.ctx.domain_size(i) == 0
        for i in range(m)
    ):
        return None
    codes = dataset.code_matrix()
    inverse, first = group_tuples(codes, [q.cardinality(0) for q in qis])
    tuples = codes[first]
    distinct = int(first.shape[0])
    counts = np.bincount(inverse, minlength=distinct).astype(np.int64)
    nodes = lattice.all_levels
    if distinct * nodes.shape[0] > WHOLE_LATTICE_PAIRS:
        return None
    radix = [q.cardinality(0) for q in qis]
    space = 1
    for r in radix:
        space *= r
    block = max(1, _BLOCK_PAIRS // distinct)
    if space * block >= 2**62:
        return None
    # per attribute and level: the generalized code of each distinct tuple, and the shares
    mult = []
    step = 1
    for r in reversed(radix):
        mult.append(step)
        step *= r
    mult.reverse()
    general = [
        np.stack([q.level_codes[lv][tuples[:, i]] for lv in range(q.height + 1)]).astype(np.int64)
        for i, q in enumerate(qis)
    ]
    keyed = [g * mult[i] for i, g in enumerate(general)]
    shares = [metric.ctx.shares(i) for i in range(m)]
    flat_shares = [np.concatenate(t) for t in shares]
    share_start = [
        np.concatenate(([0], np.cumsum([t.shape[0] for t in per])[:-1])).astype(np.int64)
        for per in shares
    ]
    names = sensitive_attributes(criteria)
    pairs = {}
    for name in names:
        attr = dataset.sensitive_attribute(name)
        pt, pv, pc = aggregate_histograms(inverse, attr.codes, None, distinct, len(attr.values))
        pairs[name] = (
            pt.astype(np.int64),
            pv.astype(np.int64),
            pc.astype(np.int64),
            len(attr.values),
            np.asarray(attr.frequencies, dtype=np.int64),
        )
    limit = max_suppressed(suppression, n)
    g, s = metric.g_factor, metric.s_factor
    lows = [g * n / metric.ctx.domain_size(i) for i in range(m)]
    heights = nodes.sum(axis=1)
    best: tuple[Any, ...] | None = None
    best_out: NDArray[Any] | None = None
    best_levels: tuple[int, ...] = ()
    for start in range(0, nodes.shape[0], block):
        lv = nodes[start : start + block]
        c = lv.shape[0]
        key = keyed[0][lv[:, 0]]
        for i in range(1, m):
            key = key + keyed[i][lv[:, i]]
        key += (np.arange(c, dtype=np.int64) * space)[:, None]
        cls, firsts = factorize_int64(key.ravel())
        n_classes = int(firsts.shape[0])
        # classes are numbered by first appearance, node by node: the first position of each
        # is where the running maximum of the class numbers rises
        flat = cls.ravel()
        rises = np.diff(np.maximum.accumulate(flat), prepend=-1) > 0
        first_pos = np.flatnonzero(rises)
        cls = cls.reshape(c, distinct)
        node_of = first_pos // distinct
        rep = first_pos % distinct
        class_counts = np.bincount(cls.ravel(), weights=np.tile(counts, c), minlength=n_classes)
        class_counts = class_counts.astype(np.int64)
        sensitive = {}
        for name, (pt, pv, pc, n_values, global_counts) in pairs.items():
            hc, hv, hn = aggregate_histograms(
                cls[:, pt].ravel(), np.tile(pv, c), np.tile(pc, c), n_classes, n_values
            )
            sensitive[name] = SensitiveHistograms(
                classes=hc.astype(np.int64),
                values=hv.astype(np.int64),
                counts=np.rint(hn).astype(np.int64),
                global_counts=global_counts,
            )
        stats = ClassStats(
            levels=tuple(int(v) for v in lv[0]), counts=class_counts, sensitive=sensitive
        )
        outliers = np.zeros(n_classes, dtype=bool)
        for crit in criteria:
            outliers |= np.asarray(crit.outliers(stats), dtype=bool)
        level_of_class = lv[node_of]
        share = np.empty((n_classes, m), dtype=np.float64)
        for i in range(m):
            li = level_of_class[:, i]
            share[:, i] = flat_shares[i][share_start[i][li] + general[i][li, rep]]
        size = class_counts.astype(np.float64)[:, None]
        share = size * share
        suppressed_term = (
            np.broadcast_to(size, share.shape) if s == 1.0 else share + s * (size - share)
        )
        terms = np.where(outliers[:, None], suppressed_term, share * g)
        # bincount adds each bin's weights in input order, one rounding per term: the
        # sequential sum of each node's terms in class order
        totals = np.column_stack(
            [np.bincount(node_of, weights=terms[:, i], minlength=c) for i in range(m)]
        )
        values = np.empty_like(totals)
        for i in range(m):
            ratio = (totals[:, i] - lows[i]) / (n - lows[i])
            ratio = np.where(ratio >= 0.0, ratio, 0.0)
            values[:, i] = np.floor(ratio * ROUND_FACTOR) / ROUND_FACTOR
        dropped = np.bincount(node_of, weights=np.where(outliers, class_counts, 0), minlength=c)
        for j in np.flatnonzero(dropped <= limit).tolist():
            loss = metric.reduce(values[j].tolist())
            levels = tuple(int(v) for v in lv[j])
            order = (ordered(loss), int(heights[start + j]), levels)
            if best is None or order < best:
                best = order
                best_levels = levels
                best_out = outliers[cls[j]]
    if best_out is None:
        return None
    return _Search(best_levels, np.asarray(best_out[inverse], dtype=bool))


def _judge_all(
    dataset: Dataset,
    criteria: Sequence[Criterion],
    metric: str,
    aggregate: str | None,
    weights: Mapping[str, float] | None,
) -> LatticeClasses | None:
    """Every node of the lattice judged at once (:class:`LatticeClasses`) where that
    applies (ARX's loss metric, class-based criteria) and pays (:data:`WHOLE_LATTICE_PAIRS`);
    else ``None``."""
    if metric != "loss" or not class_based(criteria):
        return None
    lattice = Lattice([q.height for q in dataset.qis], [0] * len(dataset.qis))
    codes = dataset.code_matrix()
    distinct = int(group_tuples(codes, [q.cardinality(0) for q in dataset.qis])[1].shape[0])
    if distinct * lattice.size > WHOLE_LATTICE_PAIRS:
        return None
    bind_criteria(criteria, dataset)
    chosen = metric_by_name(metric, LossContext(dataset), aggregate=aggregate, weights=weights)
    return LatticeClasses.build(dataset, lattice, criteria, cast(LossMetric, chosen))


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
    """The optimal full-domain search on ``dataset`` and whether each of its records is
    suppressed at the optimum (an :class:`AnonlabError` if no node is acceptable)."""
    if bind:
        bind_criteria(criteria, dataset)
    limit = max_suppressed(suppression, dataset.n)
    lattice = Lattice([q.height for q in dataset.qis], [0] * len(dataset.qis))
    engine = FrequencyEngine(dataset, sensitive=sensitive_attributes(criteria))
    loss = LossContext(dataset, engine.base_tuples, engine.bottom.counts, engine.row_index)
    chosen = metric_by_name(metric, loss, gs_factor=gs_factor, aggregate=aggregate, weights=weights)
    engine.keep_base_index = chosen.needs_base_index and limit > 0
    ctx = SearchContext(lattice, engine, list(criteria), limit, chosen, cache_size, None)
    result = plan.run(ctx)
    engine.keep_base_index = True
    fs = engine.roll_up(engine.bottom, list(result.levels))
    outliers = np.asarray(ctx.evaluate(fs).classes.outliers, dtype=bool)
    ctx.cache = FrequencyCache(engine, 1)
    base_index = fs.base_index
    if base_index is None:
        raise RuntimeError("the optimum's frequency set lost its base index")
    suppressed = np.asarray(outliers[base_index][engine.row_index], dtype=bool)
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
    out = LocalRecoding(step=step, levels=[first.levels])
    out.refusal = local_recoding_refusal(criteria)
    if out.refusal is not None:
        return out
    smallest = minimal_group_size(criteria)
    model = subset_criteria(criteria)
    factor = local_gs_factor
    done = 0
    judged: tuple[NDArray[Any], LatticeClasses] | None = None
    while done < iterations:
        rows = np.flatnonzero(out.step < 0)
        if rows.size == 0 or (smallest is not None and rows.size < smallest):
            break
        sub = subset_dataset(dataset, rows)
        found: _Search | None = None
        if judged is None or not np.array_equal(judged[0], rows):
            judged = None
            classes = _judge_all(sub, model, metric, aggregate, weights)
            if classes is not None:
                judged = (rows, classes)
        try:
            if judged is not None:
                chosen = metric_by_name(
                    metric,
                    LossContext(sub),
                    gs_factor=factor,
                    aggregate=aggregate,
                    weights=weights,
                )
                best = judged[1].optimum(
                    cast(LossMetric, chosen), max_suppressed(suppression, sub.n)
                )
                if best is not None:
                    found = _Search(best[0], best[1])
            else:
                found = search_once(
                    sub,
                    model,
                    suppression,
                    metric,
                    gs_factor=factor,
                    aggregate=aggregate,
                    weights=weights,
                    plan=plan,
                    cache_size=cache_size,
                )
        except AnonlabError:
            found = None
        released = 0
        levels: tuple[int, ...] | None = None
        if found is not None:
            levels = found.levels
            out.levels.append(levels)
            kept = rows[~found.suppressed]
            out.step[kept] = len(out.levels) - 1
            released = int(kept.size)
        out.iterations.append(Iteration(levels, factor, int(rows.size), released))
        done += 1
        if released == 0:
            if adaption <= 0.0:
                break
            factor += adaption
            if not factor <= 1.0:
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
    "minimal_group_size",
    "search_once",
    "subset_criteria",
    "subset_dataset",
]
