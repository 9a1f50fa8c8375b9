"""What every search strategy shares: checking nodes, predictive tagging, the optimum.

A strategy decides *which* nodes to check; this module does the checking (a
frequency set rolled up from the closest cached lower node), the predictive
tagging (an anonymous node makes all its generalizations anonymous, a
non-anonymous one all its specializations non-anonymous) and, once the
strategy has found the k-minimal nodes, the choice of the optimum:

* monotone metric: the optimum is among the checked anonymous nodes (which
  include every k-minimal node that was not pruned);
* otherwise (a suppression-aware metric with a suppression limit), a best-first
  walk up from the checked anonymous nodes through the anonymous region,
  ordered by each metric's lower bound and stopped when the bound exceeds the
  best loss found (the role of ARX's pruning by lower bounds).

Pruning: a strategy may skip a node whose data-free lower bound
(``Metric.level_bounds``) is already no better than the best loss found, since
neither it nor any generalization of it can do better. The optimum's *loss* is
therefore exact in every strategy; among nodes of equal loss, the exhaustive
search returns the lowest level, then the smallest level vector, and the other
strategies return one of the tied nodes, deterministically.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.lattice.freqset import FrequencyCache, FrequencyEngine, FrequencySet
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.metrics import Metric, NodeClasses
from anonlab.privacy import Criterion
from anonlab.progress import ProgressFn

UNKNOWN, ANONYMOUS, NOT_ANONYMOUS = 0, 1, -1

#: the step name of the search's progress calls
SEARCH_STEP = "searching the lattice"


@dataclass
class SearchResult:
    """The outcome of a search."""

    strategy: str
    optimum: int
    levels: tuple[int, ...]
    loss: float
    nodes_checked: int
    k_minimal: list[int]
    checked: NDArray[Any]  # (size,) bool: node's frequency set was computed
    tags: NDArray[Any]  # (size,) int8: ANONYMOUS / NOT_ANONYMOUS / UNKNOWN
    runtime_seconds: float
    classes: NodeClasses
    cpu_seconds: float = 0.0  # CPU time of the process since the search context was made
    extra: dict[str, object] = field(default_factory=dict)


class SearchContext:
    """Node checks, predictive tagging and counters for one search."""

    def __init__(
        self,
        lattice: Lattice,
        engine: FrequencyEngine,
        criterion: Criterion,
        max_suppressed: int,
        metric: Metric,
        cache_size: int = 256,
        progress: ProgressFn | None = None,
    ) -> None:
        self.lattice = lattice
        self.engine = engine
        self.criterion = criterion
        self.max_suppressed = max_suppressed
        self.metric = metric
        self.cache = FrequencyCache(engine, cache_size)
        self.tags = np.zeros(lattice.size, dtype=np.int8)
        self.checked = np.zeros(lattice.size, dtype=bool)
        self.nodes_checked = 0
        self.progress = progress
        self.prune = True
        self.losses: dict[int, float] = {}
        self.best: tuple[tuple[float, int, tuple[int, ...]], int] | None = None
        self.cpu_started = time.process_time()
        bounds = metric.level_bounds(lattice.all_levels)
        self.bounds: NDArray[Any] | None = bounds

    def require_monotone(self, strategy: str) -> None:
        """Refuse a criterion that does not declare monotonicity (tagging would be wrong)."""
        if not self.criterion.monotone:
            raise AnonlabError(
                f"the '{strategy}' search relies on predictive tagging, which needs a monotone "
                f"privacy criterion, and {type(self.criterion).__name__} is not: choose search "
                "'exhaustive'", parameter="search")

    # ------------------------------------------------------------------ checks
    def classes(self, node: int) -> NodeClasses:
        """The node's classes with outliers marked; the first time counts as a check.

        The frequency set comes from the cache, or is rolled up from the
        closest cached node below (never from the rows).
        """
        fs = self.cache.compute(self.lattice.levels(node))
        if not self.checked[node]:
            self.checked[node] = True
            self.nodes_checked += 1
            if self.progress is not None:
                self.progress(SEARCH_STEP, self.nodes_checked, self.lattice.size)
        return self._classify(fs)

    def _classify(self, fs: FrequencySet) -> NodeClasses:
        return NodeClasses(fs=fs, outliers=self.criterion.outliers(fs.counts))

    def is_anonymous(self, node: int) -> bool:
        """Check an untagged node (or read its tag) and tag accordingly."""
        tag = self.tags[node]
        if tag != UNKNOWN:
            return bool(tag == ANONYMOUS)
        classes = self.classes(node)
        ok = classes.suppressed <= self.max_suppressed
        if ok:
            self.tag_anonymous(node)
            self.consider(node, classes)
        else:
            self.tag_not_anonymous(node)
        return ok

    def consider(self, node: int, classes: NodeClasses) -> float:
        """Record an anonymous node's loss and keep the best one seen."""
        loss = self.losses.get(node)
        if loss is None:
            loss = self.metric.value(classes)
            self.losses[node] = loss
        key = self.sort_key(node, loss)
        if self.best is None or key < self.best[0]:
            self.best = (key, node)
        return loss

    def prunable(self, node: int) -> bool:
        """True if the node's data-free bound is no better than the best loss found."""
        if not self.prune or self.bounds is None or self.best is None:
            return False
        return bool(self.bounds[node] >= self.best[0][0])

    # ----------------------------------------------------------------- tagging
    def tag_anonymous(self, node: int) -> None:
        """Tag the node and all its generalizations anonymous (monotonicity)."""
        if self.tags[node] == ANONYMOUS:
            return
        self._set_tags(self.lattice.above(node), ANONYMOUS)

    def tag_not_anonymous(self, node: int) -> None:
        """Tag the node and all its specializations not anonymous (monotonicity)."""
        if self.tags[node] == NOT_ANONYMOUS:
            return
        self._set_tags(self.lattice.below(node), NOT_ANONYMOUS)

    def _set_tags(self, nodes: NDArray[Any], tag: int) -> None:
        current = self.tags[nodes]
        if np.any(current == -tag):
            bad = int(nodes[np.flatnonzero(current == -tag)[0]])
            raise RuntimeError(
                f"node {self.lattice.levels(bad)} tagged both ways: the criterion is not monotone"
            )
        self.tags[nodes] = tag

    # ----------------------------------------------------------------- results
    def k_minimal_from_tags(self) -> list[int]:
        """Anonymous nodes none of whose direct predecessors is anonymous (all tags known)."""
        if np.any(self.tags == UNKNOWN):
            raise RuntimeError("k-minimal nodes need every node tagged")
        anon = self.tags == ANONYMOUS
        lv = self.lattice.all_levels
        minimal = anon.copy()
        for i, stride in enumerate(self.lattice.strides):
            has_pred = lv[:, i] > 0
            pred_anon = np.zeros_like(anon)
            pred_anon[has_pred] = anon[np.flatnonzero(has_pred) - stride]
            minimal &= ~pred_anon
        return [int(x) for x in np.flatnonzero(minimal)]

    def sort_key(self, node: int, loss: float) -> tuple[float, int, tuple[int, ...]]:
        """Order of preference: loss, then level, then level vector."""
        return (loss, self.lattice.level_of(node), self.lattice.levels(node))

    def optimum(self) -> tuple[int, float]:
        """The optimum over the anonymous region (see the module docstring)."""
        if self.best is None:
            raise self.no_solution()
        if not self.metric.monotone(self.max_suppressed > 0):
            self._best_first()
        key, node = self.best
        return node, key[0]

    def _best_first(self) -> None:
        """Best-first walk up from the checked anonymous nodes, pruned by lower bounds."""
        start = [int(x) for x in np.flatnonzero(self.checked & (self.tags == ANONYMOUS))]
        heap: list[tuple[float, int, int]] = []
        seen: set[int] = set(start)

        def bound(node: int, parent_bound: float) -> float:
            if self.bounds is None:
                return parent_bound
            return max(float(self.bounds[node]), parent_bound)

        for x in start:
            heapq.heappush(heap, (bound(x, -np.inf), self.lattice.level_of(x), x))
        while heap:
            key, _, node = heapq.heappop(heap)
            assert self.best is not None
            if key > self.best[0][0]:
                break
            classes = self.classes(node)
            if classes.suppressed > self.max_suppressed:  # impossible for a monotone criterion
                raise RuntimeError(f"node {self.lattice.levels(node)} above an anonymous node "
                                   "is not anonymous: the criterion is not monotone")
            if self.tags[node] == UNKNOWN:
                self.tag_anonymous(node)
            self.consider(node, classes)
            lb = self.metric.lower_bound(classes)
            if lb > self.best[0][0]:
                continue
            for up in self.lattice.successors(node):
                if up not in seen:
                    seen.add(up)
                    heapq.heappush(heap, (bound(up, lb), self.lattice.level_of(up), up))

    def no_solution(self) -> AnonlabError:
        """The error for a lattice with no acceptable node (not even the top one)."""
        return AnonlabError(
            f"no generalization makes the table {getattr(self.criterion, 'k', '?')}-anonymous "
            f"with at most {self.max_suppressed} suppressed records, not even the top node: "
            "lower k, raise the suppression limit (suppression), or end every hierarchy in a "
            "single group such as '*'"
        )

    def k_minimal_found(self) -> list[int]:
        """Checked anonymous nodes whose direct predecessors are all known not anonymous.

        These are provably k-minimal. A node with an untagged predecessor (one
        that pruning skipped) is left out: that predecessor may be anonymous.
        """
        out = []
        for node in np.flatnonzero(self.checked & (self.tags == ANONYMOUS)):
            preds = self.lattice.predecessors(int(node))
            if all(self.tags[p] == NOT_ANONYMOUS for p in preds):
                out.append(int(node))
        return out

    def result(self, strategy: str, started: float) -> SearchResult:
        """Pick the optimum and package the search's outcome."""
        best, loss = self.optimum()
        return self.package(strategy, best, loss, self.k_minimal_found(), started)

    def package(
        self, strategy: str, best: int, loss: float, k_minimal: list[int], started: float
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
            tags=self.tags,
            runtime_seconds=time.perf_counter() - started,
            classes=self.classes(best),
            cpu_seconds=time.process_time() - self.cpu_started,
        )
