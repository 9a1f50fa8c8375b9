"""What every search strategy shares: checking nodes, predictive tagging, the optimum.

A strategy decides *which* nodes to check; this module does the checking (a
frequency set rolled up from the closest cached lower node, judged by every
privacy criterion in one pass), the predictive tagging and, once the strategy
is done, the choice of the optimum.

**Node check** (ARX 3.9, ``HashGroupify.analyzeAll``): the outliers are the
classes smaller than the model's minimal class size (the largest one a
criterion implies, :meth:`Criterion.minimal_class_size`) and those that violate
any class-based criterion; the sample-based criteria then ``enforce`` their
condition in order, suppressing further classes; a node is *acceptable* when
at most ``max_suppressed`` records are suppressed and every criterion finds
the node ``acceptable`` (delta-presence's whole-node condition, which ARX
meets only without a minimal class size: see
:func:`anonlab.privacy.presence.model_acceptable`). Once the class-based
outliers exceed the limit the rest is skipped (ARX's early abort): the node
fails whatever follows.

**Monotone models.** When every criterion is monotone for this suppression
setting (or ``practical_monotonicity`` is asked for), an acceptable node makes
all its generalizations acceptable and a failing one all its specializations
fail: the strategies tag both ways, and

* with a monotone metric the optimum is among the checked acceptable nodes
  (which include every minimal acceptable node that was not pruned);
* otherwise (a suppression-aware metric with a suppression limit), a best-first
  walk up from the checked acceptable nodes through the acceptable region,
  ordered by each metric's lower bound and stopped when the bound exceeds the
  best loss found (the role of ARX's pruning by lower bounds).

A criterion with a whole-node condition counts as monotone only while that
condition applies: with a minimal class size ARX never meets it, and then
delta-presence is not monotone even without suppression (a class of
population records only, ignored at one node, lowers delta once merged with a
released class above it), so the search treats it as not monotone where ARX
would still tag predictively.

**Other models** (ARX's partially and non-monotone cases, after the two phases
of ARX's FLASH). The *monotone sub-model* is the model's monotone class-based
criteria plus k-anonymity with the largest class size some criterion implies
(ARX's minimal group size, or the larger size a sensitive-attribute model
implies, :meth:`Criterion.implied_class_size`), the monotone parts of the
other criteria (:meth:`Criterion.monotone_part`, e.g. the values a class must
hold) and the whole-node conditions that are monotone on their own
(``Criterion.condition_monotone``): its outliers are a subset of the whole
model's and its conditions are the model's, so a node failing it fails the
model, and, the sub-model being monotone, so do all its specializations. A
strategy runs its phase on the sub-model, tagging *its* property both ways
(``tags``); every check judges the whole model too (``model_tags``: a node's
own result, and "not acceptable" below every node failing the sub-model). Then
a linear phase checks the nodes the sub-model leaves open, best-first by their
lower bound: a node's data-free bound, raised by the data-dependent bounds of
the checked nodes below it (and, for a monotone metric, by the loss of
acceptable nodes below it), and it stops when the smallest bound left is no
better than the best loss found. When there is no monotone sub-model the
linear phase covers the whole lattice, less what the bounds prune. Every
strategy thus returns the exact optimum loss.

Pruning: a strategy may skip a node whose data-free lower bound
(``Metric.level_bounds``) is already no better than the best loss found, since
neither it nor any generalization of it can do better. The optimum's *loss* is
therefore exact in every strategy; among nodes of equal loss, the exhaustive
search returns the lowest level, then the smallest level vector, and the other
strategies return one of the tied nodes, deterministically.

Losses may be floats or tuples of floats (ARX's "rank" aggregate, compared
lexicographically); data-free bound arrays exist only for float losses.

**Sparse contexts** (``sparse=True``, for the heuristic searches of
:mod:`anonlab.lattice.heuristic` on lattices of any size): no array spans the
lattice. The checked nodes are a set, there are no tags and no data-free bound
array; node checks (:meth:`SearchContext.verdict`) and the optimum's bookkeeping
work on node numbers that are Python integers of any size.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Union

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError, present
from anonlab.hierarchy import SUPPRESSED
from anonlab.lattice.freqset import (
    CACHE_ENTRIES,
    FrequencyCache,
    FrequencyEngine,
    FrequencySet,
)
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.metrics import Metric, NodeClasses
from anonlab.privacy.base import (
    ClassStats,
    Criterion,
    KAnonymity,
    model_monotone,
    suppression_order,
)
from anonlab.progress import ProgressFn

UNKNOWN, ANONYMOUS, NOT_ANONYMOUS = 0, 1, -1

#: the step name of the search's progress calls
SEARCH_STEP = "searching the lattice"

#: a metric's value: a float, or a tuple of floats compared lexicographically
Loss = Union[float, tuple[float, ...]]  # noqa: UP007 (a runtime alias)

#: heap keys of the best-first walks: ``(0,)`` for "no bound known", ``(1, bound)`` otherwise,
#: so that float and tuple bounds both order after the unknown one
_LOW: tuple[Any, ...] = (0,)


def _key(value: Any) -> tuple[Any, ...]:
    """The walk key of a known bound or loss."""
    return (1, value)


def ordered(loss: Loss) -> Any:
    """A loss as the optimum's choice compares it, in the order of Java's ``Double.compare``
    (ARX's ``InformationLoss.compareTo``): NaN after every number, -0.0 before 0.0; tuples
    element-wise."""
    if isinstance(loss, tuple):
        return tuple(ordered(x) for x in loss)
    if math.isnan(loss):
        return (1, 0.0, 0)
    return (0, loss, 0 if loss == 0.0 and math.copysign(1.0, loss) < 0 else 1)


@dataclass
class SearchResult:
    """The outcome of a search.

    ``tags`` judge the whole privacy model (ANONYMOUS: acceptable); when the
    model is not monotone, ``sub_tags`` are the tags of its monotone sub-model
    (see the module docstring), else ``None``.
    """

    strategy: str
    optimum: int
    levels: tuple[int, ...]
    loss: Loss
    nodes_checked: int
    k_minimal: list[int]
    checked: NDArray[Any]  # (size,) bool: node's frequency set was computed
    tags: NDArray[Any]  # (size,) int8: ANONYMOUS / NOT_ANONYMOUS / UNKNOWN
    runtime_seconds: float
    classes: NodeClasses
    cpu_seconds: float = 0.0  # CPU time of the process since the search context was made
    sub_tags: NDArray[Any] | None = None
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """A checked node: its classes under the whole model and both judgements."""

    classes: NodeClasses
    acceptable: bool  # the whole model holds
    sub_acceptable: bool  # the monotone sub-model holds (== acceptable for a monotone model)


def sensitive_attributes(criteria: Sequence[Criterion]) -> tuple[str, ...]:
    """The sensitive attributes a frequency engine must carry for these criteria."""
    return tuple(dict.fromkeys(c.attribute for c in criteria if c.attribute is not None))


def criterion_text(criterion: Criterion) -> str:
    """A criterion as a message names it, e.g. ``distinct-l-diversity on 'occupation' (l=3)``."""
    params = {k: v for k, v in criterion.parameters().items() if k != "attribute"}
    text = criterion.name or type(criterion).__name__
    if criterion.attribute is not None:
        text += f" on '{criterion.attribute}'"
    if params:
        text += " (" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"
    return text


def _overrides(criterion: Criterion, method: str) -> bool:
    """Whether a criterion's class overrides a method of :class:`Criterion`."""
    return getattr(type(criterion), method) is not getattr(Criterion, method)


class NodeFlags:
    """A set of node numbers read and written like a boolean array (a sparse context's
    checked nodes: its memory grows with the nodes checked, not with the lattice)."""

    def __init__(self) -> None:
        self.nodes: set[int] = set()

    def __getitem__(self, node: int) -> bool:
        return node in self.nodes

    def __setitem__(self, node: int, value: bool) -> None:
        if value:
            self.nodes.add(node)
        else:
            self.nodes.discard(node)

    def __len__(self) -> int:
        return len(self.nodes)


class SearchContext:
    """Node checks, predictive tagging and counters for one search.

    ``criteria`` are combined (all must hold). ``practical_monotonicity`` (ARX's
    option) treats every criterion, and the metric, as monotone: the
    strategies then tag both ways whatever the criteria declare and choose the
    optimum among the acceptable nodes they checked, which saves checks but is
    *not guaranteed to find the optimum* (or any acceptable node) when a
    criterion or the metric is not monotone; the node returned is always
    acceptable. ``sparse`` builds no whole-lattice array (see the module
    docstring): only node checks are available then, not tagging.
    """

    #: the best node's loss (:attr:`best_loss`) once one is found, read by :meth:`prunable`
    #: node after node
    _best_loss: Loss = math.nan

    def __init__(
        self,
        lattice: Lattice,
        engine: FrequencyEngine,
        criteria: Sequence[Criterion],
        max_suppressed: int,
        metric: Metric,
        cache_size: int = CACHE_ENTRIES,
        progress: ProgressFn | None = None,
        practical_monotonicity: bool = False,
        sparse: bool = False,
    ) -> None:
        if not criteria:
            raise ValueError("a search needs at least one privacy criterion")
        self.lattice = lattice
        self.engine = engine
        self.criteria = tuple(criteria)
        self.max_suppressed = max_suppressed
        self.metric = metric
        self.practical_monotonicity = practical_monotonicity
        self.cache = FrequencyCache(engine, cache_size)
        self.sparse = sparse
        #: which nodes were checked: an array, or a set of node numbers when sparse
        self.checked: Any = NodeFlags() if sparse else np.zeros(lattice.size, dtype=bool)
        self.nodes_checked, self.progress, self.prune = 0, progress, True
        self.losses: dict[int, Loss] = {}
        #: (sort key, node) of the best acceptable node found (see :meth:`sort_key`)
        self.best: tuple[tuple[Any, int, tuple[int, ...]], int] | None = None
        self.cpu_started = time.process_time()
        #: data-free bounds: (size,) floats, or (size, d) rows compared lexicographically
        self.bounds: NDArray[Any] | None = (
            None if sparse else metric.level_bounds(lattice.all_levels)
        )
        self.suppression_allowed = max_suppressed > 0
        self._class_based = tuple(c for c in self.criteria if not c.sample_based)
        self._sample_based = tuple(c for c in self.criteria if c.sample_based)
        #: whether a criterion reads the classes' values (:attr:`ClassStats.codes`)
        self._needs_codes = any(getattr(c, "needs_codes", False) for c in self.criteria)
        sizes = [c.minimal_class_size() for c in self._class_based]
        #: ARX's minimal class size (the largest one a criterion implies; 0: none). ARX checks
        #: it before every criterion (``HashGroupify.isPrivacyModelFulfilled``): a smaller
        #: class is an outlier whatever the criteria say of it
        self.minimal_class_size = max((x for x in sizes if x is not None), default=0)
        k_values = [c.k for c in self._class_based if isinstance(c, KAnonymity)]
        self._size_mask = (
            self.minimal_class_size if self.minimal_class_size > max(k_values, default=0) else 0
        )
        # whole-node conditions (delta-presence): ARX meets them only for classes that pass
        # the minimal class size, which a class without records never does, so with a
        # minimal class size they never fail a node (as presence.model_acceptable says)
        self._conditions = (
            ()
            if any(x is not None for x in sizes)
            else tuple(c for c in self.criteria if _overrides(c, "acceptable"))
        )
        #: criteria whose declared monotonicity needs their whole-node condition, which the
        #: minimal class size switches off: no longer monotone (e.g. delta-presence with
        #: k-anonymity: a population-only class ignored below joins a released one above)
        self._unmonotone = frozenset(
            id(c)
            for c in self.criteria
            if _overrides(c, "acceptable") and not any(c is x for x in self._conditions)
        )
        self._check_engine(engine)
        self._star: list[list[NDArray[Any]]] = []
        self._class_loss: Callable[[FrequencySet], Any] | None = None
        if self._sample_based:
            # ARX orders classes for the sample-based criteria by size, the metric's loss of
            # each class, then the class's first record, and leaves out the classes that are
            # '*' in every quasi-identifier (HashGroupifyDistribution)
            engine.keep_representatives = True
            self._star = [
                [
                    np.asarray([label == SUPPRESSED for label in labels], dtype=bool)
                    for labels in q.level_labels
                ]
                for q in engine.qis
            ]
            self._class_loss = getattr(metric, "class_loss", None)
        self.monotone_model = practical_monotonicity or (
            model_monotone(list(self.criteria), self.suppression_allowed) and not self._unmonotone
        )
        #: the metric is taken as monotone if it declares so, or with practical monotonicity
        #: (ARX's ``getMonotonicityOfUtility``)
        self.monotone_metric = practical_monotonicity or metric.monotone(self.suppression_allowed)
        #: tags of the property the strategies search: the model's if it is monotone,
        #: else its monotone sub-model's
        self.tags = np.zeros(0 if sparse else lattice.size, dtype=np.int8)
        #: tags of the whole model (the same array when it is monotone)
        self.model_tags = self.tags
        self._sub: tuple[int, ...] = ()  # indexes into _class_based of the sub-model
        #: walk keys of the lower bounds of checked nodes that pass the sub-model
        self._lower: dict[int, tuple[Any, ...]] = {}
        self._sub_min_size = 0
        #: monotone parts of the model's other criteria (:meth:`Criterion.monotone_part`)
        self._sub_parts: tuple[Criterion, ...] = ()
        self._sub_conditions: tuple[Criterion, ...] = ()
        if not self.monotone_model:
            self.model_tags = np.zeros(0 if sparse else lattice.size, dtype=np.int8)
            self._sub = tuple(
                i
                for i, c in enumerate(self._class_based)
                if c.monotone(self.suppression_allowed) and id(c) not in self._unmonotone
            )
            self._sub_min_size = max(self.minimal_class_size, self.implied_class_size())
            self._sub_parts = self.monotone_parts()
            self._sub_conditions = tuple(
                c
                for c in self._conditions
                if c.monotone(self.suppression_allowed) or c.condition_monotone
            )
            if not self.has_sub_model:
                self.tags[:] = ANONYMOUS  # an empty sub-model holds everywhere

    def implied_class_size(self) -> int:
        """The largest class size the class-based criteria imply (their
        :meth:`~anonlab.privacy.base.Criterion.implied_class_size`), for the monotone
        sub-model. Unlike ARX's minimal class size it leaves whole-node conditions on."""
        bottom = self.engine.bottom.stats()
        return max((c.implied_class_size(bottom) for c in self._class_based), default=0)

    def monotone_parts(self) -> tuple[Criterion, ...]:
        """The monotone parts of the model's criteria that are not monotone themselves
        (:meth:`~anonlab.privacy.base.Criterion.monotone_part`), for the sub-model."""
        bottom = self.engine.bottom.stats()
        parts = (
            c.monotone_part(bottom) for i, c in enumerate(self._class_based) if i not in self._sub
        )
        return tuple(p for p in parts if p is not None)

    def _check_engine(self, engine: FrequencyEngine) -> None:
        """Refuse an engine that lacks what a criterion reads (a programming error)."""
        missing = [a for a in sensitive_attributes(self.criteria) if a not in engine.sensitive]
        if missing:
            raise ValueError(
                f"the frequency engine does not carry sensitive attribute(s) "
                f"{', '.join(missing)}: build it with "
                "sensitive=sensitive_attributes(criteria)"
            )
        if any(c.needs_population for c in self.criteria) and engine.bottom.population is None:
            raise ValueError("a criterion needs population counts: give the dataset its population")

    def stats(self, fs: FrequencySet) -> ClassStats:
        """What the criteria see of a node (with ARX's class order for sample-based ones)."""
        stats = ClassStats(
            levels=fs.levels,
            counts=fs.counts,
            sensitive=fs.sensitive,
            population=fs.population,
            codes=fs.codes if self._needs_codes else None,
        )
        if not self._sample_based:
            return stats
        star = np.ones(fs.classes, dtype=bool)
        for dim, level in enumerate(fs.levels):
            star &= self._star[dim][level][fs.group_codes(dim)]
        order = None
        if fs.representatives is not None:
            loss = self._class_loss(fs) if self._class_loss is not None else None
            order = suppression_order(fs.representatives, loss)
        return dataclasses.replace(stats, order=order, completely_generalized=star)

    # ------------------------------------------------------------------ checks
    def classify(self, fs: FrequencySet) -> NodeClasses:
        """A frequency set's classes with the whole model's outliers (no check counted)."""
        return self.evaluate(fs).classes

    def evaluate(
        self, fs: FrequencySet, short_circuit: bool = False, enforce_limit: int | None = None
    ) -> Verdict:
        """Judge a node's classes by the whole model and by its monotone sub-model.

        With ``short_circuit``, a model that is not monotone has its sub-model's
        criteria judged first: when the sub-model's outliers alone exceed the
        suppression limit, the whole model's outliers (a superset of them: the
        sub-model's criteria and minimal class size are part of the model)
        exceed it too, so both verdicts are known without the other criteria.
        The verdict's classes then carry the sub-model's outliers only; the
        searches read such a node's frequency set alone (its metric's lower
        bound, which never reads the outliers).

        ``enforce_limit`` (the heuristic searches' view of a node that fails,
        ARX's ``HashGroupify.analyzeAll`` for ``forceMeasureInfoLoss``): the
        sample-based criteria enforce their condition up to this many suppressed
        records rather than the suppression limit, so a failing node's outliers
        are all its classes that fail, and its loss can be measured.
        """
        stats = self.stats(fs)
        counts = fs.counts
        early: dict[int, NDArray[Any]] = {}
        has_sub = not self.monotone_model and self.has_sub_model
        if short_circuit and has_sub:
            sub = self._sub_outliers(stats, early, stop_above_limit=True)
            if int(counts[sub].sum()) > self.max_suppressed or not all(
                c.acceptable(stats, sub) for c in self._sub_conditions
            ):
                return Verdict(NodeClasses(fs=fs, outliers=sub, stats=stats), False, False)
        masks = [
            early[i] if i in early else c.outliers(stats) for i, c in enumerate(self._class_based)
        ]
        if len(masks) == 1:
            outliers = np.asarray(masks[0], dtype=bool)
        elif masks:
            outliers = np.logical_or.reduce(masks)
        else:
            outliers = np.zeros(fs.classes, dtype=bool)
        if self._size_mask > 1:
            outliers = outliers | (counts < self._size_mask)
        limit = self.max_suppressed
        sub_ok = True
        if has_sub:  # else it holds everywhere
            early.update((i, masks[i]) for i in self._sub)
            sub = self._sub_outliers(stats, early, stop_above_limit=False)
            sub_ok = int(counts[sub].sum()) <= limit and all(
                c.acceptable(stats, sub) for c in self._sub_conditions
            )
        ok = self._within_limit(counts, outliers, fs.population is None)
        enforce = limit if enforce_limit is None else max(limit, enforce_limit)
        if self._sample_based and (ok or enforce > limit):
            for c in self._sample_based:
                outliers = outliers | np.asarray(c.enforce(stats, outliers, enforce), dtype=bool)
                if int(counts[outliers].sum()) > enforce:
                    break
            ok = ok and int(counts[outliers].sum()) <= limit
        classes = NodeClasses(fs=fs, outliers=outliers, stats=stats)
        ok = ok and all(c.acceptable(stats, outliers) for c in self._conditions)
        return Verdict(classes, ok, ok if self.monotone_model else sub_ok)

    def _within_limit(self, counts: NDArray[Any], outliers: NDArray[Any], all_live: bool) -> bool:
        """Whether the outlier classes hold at most the suppression limit's records: always
        when the limit is the whole table, else no outlier at all for a limit of 0 when every
        class holds records (``all_live``), else their records counted."""
        limit = self.max_suppressed
        if limit >= self.engine.n:
            return True
        if limit == 0 and all_live:
            return not outliers.any()
        return int(counts[outliers].sum()) <= limit

    @property
    def has_sub_model(self) -> bool:
        """Whether the monotone sub-model (of a model that is not monotone) holds anything."""
        return bool(self._sub or self._sub_parts or self._sub_min_size > 1 or self._sub_conditions)

    def _sub_outliers(
        self, stats: ClassStats, early: dict[int, NDArray[Any]], stop_above_limit: bool
    ) -> NDArray[Any]:
        """The monotone sub-model's outliers: the classes below its minimal size, then its
        criteria's outliers (kept in ``early`` by criterion index, negative for the models'
        monotone parts), cheapest first. With ``stop_above_limit`` it returns as soon as
        they hold more records than the suppression limit (the node then fails)."""
        counts = stats.counts
        sub = (
            counts < self._sub_min_size
            if self._sub_min_size > 1
            else np.zeros(stats.classes, dtype=bool)
        )
        judged = [(i, self._class_based[i]) for i in self._sub]
        judged += [(-1 - j, part) for j, part in enumerate(self._sub_parts)]
        for key, criterion in judged:
            if stop_above_limit and int(counts[sub].sum()) > self.max_suppressed:
                return sub
            mask = early.get(key)
            if mask is None:
                mask = early[key] = np.asarray(criterion.outliers(stats), dtype=bool)
            sub = sub | mask
        return sub

    def verdict(self, node: int) -> Verdict:
        """Check a node (the first time counts as a check) and keep its loss if acceptable.

        The frequency set comes from the cache, or is rolled up from the
        closest cached node below (never from the rows). Tags are left to the
        caller.
        """
        levels = self.lattice.levels(node)
        cached = self.cache.get(levels)
        fs = cached if cached is not None else self.cache.build(levels)
        if not self.checked[node]:
            self.checked[node] = True
            self.nodes_checked += 1
            if self.progress is not None:
                self.progress(SEARCH_STEP, self.nodes_checked, self.lattice.size)
        result = self.evaluate(fs, short_circuit=True)
        if cached is None:  # stored once judged: with the histograms the criteria built
            self.cache.store(fs)
        if result.acceptable:
            self.consider(node, result.classes)
        return result

    def classes(self, node: int) -> NodeClasses:
        """The node's classes with the model's outliers marked (see :meth:`verdict`)."""
        return self.verdict(node).classes

    def is_anonymous(self, node: int) -> bool:
        """The searched property of a node: from its tag, or checked and tagged.

        The property is the model's when it is monotone, else its monotone
        sub-model's (see the module docstring).
        """
        tag = self.tags[node]
        if tag != UNKNOWN:
            return bool(tag == ANONYMOUS)
        return self._record(node, self.verdict(node))

    def _record(self, node: int, result: Verdict) -> bool:
        """Tag a checked node (predictively where valid); returns the searched property.

        For a model that is not monotone, a node that passes the sub-model keeps
        its lower bound for the linear phase, which then need not judge it again.
        """
        if self.model_tags is not self.tags:
            if self.model_tags[node] == UNKNOWN:
                self.model_tags[node] = ANONYMOUS if result.acceptable else NOT_ANONYMOUS
            if result.sub_acceptable:
                self._lower[node] = _key(self.metric.lower_bound(result.classes))
        if result.sub_acceptable:
            self.tag_anonymous(node)
        else:
            self.tag_not_anonymous(node)
        return result.sub_acceptable

    def consider(self, node: int, classes: NodeClasses) -> Loss:
        """Record an acceptable node's loss and keep the best one seen."""
        loss = self.losses.get(node)
        if loss is None:
            loss = self.metric.value(classes)
            self.losses[node] = loss
        key = self.sort_key(node, loss)
        if self.best is None or key < self.best[0]:
            self.best = (key, node)
            self._best_loss = loss
        return loss

    @property
    def best_loss(self) -> Loss:
        """The loss of the best acceptable node found (one must have been found)."""
        return self.losses[present(self.best, "the best node")[1]]

    def prunable(self, node: int) -> bool:
        """True if the node's data-free bound is no better than the best loss found."""
        if not self.prune or self.bounds is None or self.best is None:
            return False
        if self.bounds.ndim == 1:
            best: Any = self._best_loss  # the best node's loss: a float with 1-D bounds
            return bool(self._bound_list[node] >= best)
        return bool(_key(self.bound_of(node)) >= _key(self.best_loss))

    @cached_property
    def _bound_list(self) -> list[float]:
        """The 1-D :attr:`bounds` as Python floats (:meth:`prunable` reads them one by one:
        the same comparisons, faster)."""
        floats: list[float] = np.asarray(present(self.bounds, "the bounds"), np.float64).tolist()
        return floats

    def bound_of(self, node: int) -> Loss:
        """A node's data-free bound as a value comparable with losses (bounds must exist)."""
        row = present(self.bounds, "the bounds")[node]
        if np.ndim(row) == 0:
            return float(row)
        return tuple(float(x) for x in row)

    def below_best(self) -> NDArray[Any]:
        """(size,) bool: the data-free bound is better than the best loss (all True if unknown).

        Rows of a 2-D bound array compare lexicographically with a tuple loss.
        """
        size = self.lattice.size
        if not self.prune or self.bounds is None or self.best is None:
            return np.ones(size, dtype=bool)
        best = self.best_loss
        if self.bounds.ndim == 1:
            return np.asarray(self.bounds < best)
        less = np.zeros(size, dtype=bool)
        equal = np.ones(size, dtype=bool)
        for j, value in enumerate(best if isinstance(best, tuple) else (best,)):
            column = self.bounds[:, j]
            less |= equal & (column < value)
            equal &= column == value
        return less

    def bound_order(self) -> NDArray[Any] | None:
        """(size,) float order of the data-free bounds (their rank for 2-D rows), or ``None``."""
        if self.bounds is None:
            return None
        if self.bounds.ndim == 1:
            return self.bounds
        rows = np.lexsort(tuple(self.bounds[:, j] for j in range(self.bounds.shape[1] - 1, -1, -1)))
        rank = np.empty(self.lattice.size, dtype=np.float64)
        rank[rows] = np.arange(self.lattice.size, dtype=np.float64)
        return rank

    # ----------------------------------------------------------------- tagging
    def tag_anonymous(self, node: int) -> None:
        """Tag the node and all its generalizations as having the searched property."""
        if self.tags[node] == ANONYMOUS:
            return
        self._set_tags(self.tags[node:], node, self.lattice.above_mask(node), ANONYMOUS)

    def tag_not_anonymous(self, node: int) -> None:
        """Tag the node and all its specializations as lacking the searched property.

        They fail the whole model too (the sub-model's outliers are a subset of
        the model's).
        """
        if self.tags[node] == NOT_ANONYMOUS:
            return
        below = self.lattice.below_mask(node)
        self._set_tags(self.tags[: node + 1], 0, below, NOT_ANONYMOUS)
        if self.model_tags is not self.tags:
            self._set_tags(self.model_tags[: node + 1], 0, below, NOT_ANONYMOUS)

    def _set_tags(self, tags: NDArray[Any], first: int, mask: NDArray[Any], tag: int) -> None:
        """Tag the nodes ``mask`` marks in ``tags``, a view of the tags from node ``first`` on
        (a mask rather than node numbers: no gather and scatter of the tags)."""
        # a node marked that holds the other tag (tags are -1, 0, 1): one reduction finds it
        if (
            tags.max(where=mask, initial=-1) == 1
            if tag == NOT_ANONYMOUS
            else tags.min(where=mask, initial=1) == -1
        ):
            clash = mask & (tags == -tag)
            if not self.practical_monotonicity:
                bad = first + int(np.flatnonzero(clash)[0])
                raise RuntimeError(
                    f"node {self.lattice.levels(bad)} tagged both ways: a criterion declared "
                    "monotone is not"
                )
            mask = mask & ~clash  # practical monotonicity: keep what checks found
        np.copyto(tags, tag, where=mask)

    # ----------------------------------------------------------------- results
    def _minimal(self, mask: NDArray[Any]) -> NDArray[Any]:
        """Nodes of ``mask`` none of whose direct predecessors is in ``mask``."""
        lv = self.lattice.all_levels
        minimal = mask.copy()
        for i, stride in enumerate(self.lattice.strides):
            has_pred = lv[:, i] > self.lattice.lows[i]
            pred_in = np.zeros_like(mask)
            pred_in[has_pred] = mask[np.flatnonzero(has_pred) - stride]
            minimal &= ~pred_in
        return np.flatnonzero(minimal)

    def k_minimal_from_tags(self) -> list[int]:
        """Acceptable nodes none of whose direct predecessors is acceptable (all tags known)."""
        if np.any(self.model_tags == UNKNOWN):
            raise RuntimeError("minimal nodes need every node tagged")
        return [int(x) for x in self._minimal(self.model_tags == ANONYMOUS)]

    def sort_key(self, node: int, loss: Loss) -> tuple[Any, int, tuple[int, ...]]:
        """Order of preference: loss (NaN last, :func:`ordered`), then level, then level
        vector."""
        return (ordered(loss), self.lattice.level_of(node), self.lattice.levels(node))

    def optimum(self) -> tuple[int, Loss]:
        """The optimum over the acceptable nodes (see the module docstring)."""
        if not self.monotone_model:
            self._linear_phase()
        elif not self.monotone_metric and self.best is not None:
            self._best_first()
        if self.best is None:
            raise self.no_solution()
        return self.best[1], self.best_loss

    def _beaten(self, key: tuple[Any, ...]) -> bool:
        """Whether a walk key is no better than the best loss found."""
        return self.best is not None and key >= _key(self.best_loss)

    def _free_key(self, node: int) -> tuple[Any, ...]:
        """The walk key of a node's data-free bound (or "unknown")."""
        return _LOW if self.bounds is None else _key(self.bound_of(node))

    def _best_first(self) -> None:
        """Monotone model: a best-first walk up from the checked acceptable nodes.

        Ordered by the larger of a node's data-free bound and its parent's
        lower bound; stopped when that exceeds the best loss found.
        """
        start = [int(x) for x in np.flatnonzero(self.checked & (self.tags == ANONYMOUS))]
        heap: list[tuple[tuple[Any, ...], int, int]] = []
        seen: set[int] = set(start)

        def bound(node: int, parent: tuple[Any, ...]) -> tuple[Any, ...]:
            return max(self._free_key(node), parent)

        for x in start:
            heapq.heappush(heap, (bound(x, _LOW), self.lattice.level_of(x), x))
        while heap:
            key, _, node = heapq.heappop(heap)
            if key > _key(self.best_loss):
                break
            result = self.verdict(node)
            if not result.acceptable:  # impossible for a monotone model
                if not self.practical_monotonicity:
                    raise RuntimeError(
                        f"node {self.lattice.levels(node)} above an acceptable "
                        "node is not acceptable: a criterion declared monotone "
                        "is not"
                    )
                self.tags[node] = NOT_ANONYMOUS
            elif self.tags[node] == UNKNOWN:
                self.tag_anonymous(node)
            lb = _key(self.metric.lower_bound(result.classes))
            if lb > _key(self.best_loss):
                continue
            for up in self.lattice.successors(node):
                if up not in seen:
                    seen.add(up)
                    heapq.heappush(heap, (bound(up, lb), self.lattice.level_of(up), up))

    def _linear_phase(self) -> None:
        """Other models: check the nodes the sub-model leaves open, best-first by bound.

        The walk starts at the minimal open nodes and moves up through open
        successors. A node's key is a lower bound of its loss and its
        generalizations': its data-free bound, raised by the keys and
        data-dependent bounds of the checked nodes below it on the walk (and,
        for a monotone metric, by their losses when acceptable). A node's key
        is raised again when another of its predecessors is expanded after it
        was queued. The walk stops once the smallest key is no better than the
        best loss found: every node left lies above a queued one.
        """
        lat = self.lattice
        heap: list[tuple[tuple[Any, ...], int, int]] = []
        raised: dict[int, tuple[Any, ...]] = {}
        seen: set[int] = set()
        for x in self._minimal(self.tags != NOT_ANONYMOUS).tolist():
            seen.add(x)
            heapq.heappush(heap, (self._free_key(x), lat.level_of(x), x))
        while heap:
            key, level, node = heapq.heappop(heap)
            if self._beaten(key):
                break
            higher = raised.pop(node, None)
            if higher is not None and higher > key:
                heapq.heappush(heap, (higher, level, node))
                continue
            if self.tags[node] == NOT_ANONYMOUS:
                continue  # a check above it failed the sub-model since it was queued
            bound = max(key, self._walk_bound(node))
            if self._beaten(bound):
                continue  # neither this node's generalizations can do better
            for up in lat.successors(node):
                if self.tags[up] == NOT_ANONYMOUS:
                    continue
                if up in seen:
                    raised[up] = max(raised.get(up, _LOW), bound)
                    continue
                seen.add(up)
                heapq.heappush(heap, (max(self._free_key(up), bound), lat.level_of(up), up))

    def _walk_bound(self, node: int) -> tuple[Any, ...]:
        """The linear phase's bound from a node (checked now if it was not): its lower bound
        and, for a monotone metric, its loss if it is acceptable."""
        lower = self._lower.get(node)
        if lower is None:
            result = self.verdict(node)
            self._record(node, result)
            lower = self._lower.get(node)
            if lower is None:  # fails the sub-model: its bound still holds above it
                lower = _key(self.metric.lower_bound(result.classes))
        if self.model_tags[node] == ANONYMOUS and self.monotone_metric:
            lower = max(lower, _key(self.losses[node]))
        return lower

    def no_solution(self) -> AnonlabError:
        """The error for a lattice with no acceptable node (not even the top one)."""
        models = " and ".join(criterion_text(c) for c in self.criteria)
        found = (
            "no generalization satisfies"
            if not self.practical_monotonicity
            else "the search with practical monotonicity found no generalization that satisfies"
        )
        hint = (
            ""
            if not self.practical_monotonicity
            else ", or turn practical monotonicity off (it may miss acceptable nodes)"
        )
        heights = tuple(getattr(self.engine, "heights", ()))
        if self.lattice.min_level > 0 or heights != tuple(self._height_bounds()):
            return AnonlabError(
                f"{found} {models} with at most {self.max_suppressed} suppressed records "
                "within the level bounds, not even their highest node: raise max_level, relax "
                f"the privacy models (e.g. lower k) or raise the suppression limit{hint}"
            )
        return AnonlabError(
            f"{found} {models} with at most {self.max_suppressed} suppressed records, not even "
            "the top node: relax the privacy models (e.g. lower k), raise the suppression limit "
            f"(suppression), or end every hierarchy in a single group such as '*'{hint}"
        )

    def _height_bounds(self) -> list[int]:
        """The lattice's highest level of each quasi-identifier."""
        return [int(x) for x in self.lattice.heights]

    def k_minimal_found(self) -> list[int]:
        """Checked acceptable nodes whose direct predecessors are all known not acceptable.

        For a monotone model these are provably minimal. A node with an
        untagged predecessor (one that pruning skipped) is left out: that
        predecessor may be acceptable.
        """
        out = []
        for node in np.flatnonzero(self.checked & (self.model_tags == ANONYMOUS)):
            preds = self.lattice.predecessors(int(node))
            if all(self.model_tags[p] == NOT_ANONYMOUS for p in preds):
                out.append(int(node))
        return out

    def result(self, strategy: str, started: float) -> SearchResult:
        """Pick the optimum and package the search's outcome."""
        best, loss = self.optimum()
        return self.package(strategy, best, loss, self.k_minimal_found(), started)

    def package(
        self, strategy: str, best: int, loss: Loss, k_minimal: list[int], started: float
    ) -> SearchResult:
        """Package a search's outcome."""
        return SearchResult(
            strategy=strategy,
            optimum=best,
            levels=self.lattice.levels(best),
            loss=loss,
            nodes_checked=self.nodes_checked,
            k_minimal=sorted(k_minimal),
            checked=self.checked,
            tags=self.model_tags,
            runtime_seconds=time.perf_counter() - started,
            classes=self.classes(best),
            cpu_seconds=time.process_time() - self.cpu_started,
            sub_tags=None if self.monotone_model else self.tags,
        )
