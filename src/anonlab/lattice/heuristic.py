"""What ARX's heuristic (best-effort) searches share: limits, node checks, the best node found.

A heuristic search checks nodes until it runs out of nodes to try, or hits a *step limit*
(a number of node checks) or a *time limit*, and returns the best acceptable node it
checked. Unlike the optimal searches (:mod:`anonlab.lattice.search`) it proves nothing: a
better node may exist. It works on lattices of any size: nodes are numbered as in
:class:`~anonlab.lattice.lattice.Lattice` (Python integers, beyond int64 where needed),
the search context is *sparse* (no array spans the lattice), and the memory used grows with
the nodes checked only.

A check here is ARX's ``TransformationChecker.check(node, forceMeasureInfoLoss=true)``:
the node is judged by the whole privacy model (:meth:`SearchContext.verdict`, its frequency
set rolled up from a cached node below) and its loss is measured whether it is acceptable or
not. For a node that fails, the loss is that of the node with every class that fails a
criterion suppressed (``HashGroupify.analyzeAll``: the sample-based criteria enforce without
the suppression limit), which is what ARX's heuristics steer by. A node's *lower bound* is the
metric's data-dependent bound at the node (:meth:`Metric.lower_bound`, which reads the
frequency set only, not the outliers); it is computed when a search first asks for it (only
Lightning does, for the nodes it takes from its queue), from the cached frequency set or one
rolled up again.

Stopping (ARX's ``AbstractAlgorithm.mustStop``): after a check, the search stops once the
checks reach the step limit or the time since the search started exceeds the time limit.
The optimum kept is ARX's (``AbstractAlgorithm.trackOptimum``): the first acceptable node
checked with the lowest loss, a later one of equal loss replacing it only if its level is
lower.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.lattice.metrics import NodeClasses
from anonlab.lattice.search import SEARCH_STEP, Loss, SearchContext, SearchResult, ordered

#: ARX's default time limit of its heuristic searches (``heuristicSearchTimeLimit``, 30,000 ms)
DEFAULT_TIME_LIMIT = 30.0
#: ARX's default lattice size above which its optimal search refuses to run
#: (``heuristicSearchThreshold``); ``auto`` searches optimally at or below it
DEFAULT_THRESHOLD = 100_000

#: why a heuristic search stopped
STOP_STEPS, STOP_TIME, STOP_DONE = "step limit", "time limit", "search space exhausted"


@dataclass(frozen=True)
class HeuristicLimits:
    """A heuristic search's limits: ``step_limit`` node checks, ``time_limit`` seconds
    (``None``: no limit of that kind)."""

    time_limit: float | None = DEFAULT_TIME_LIMIT
    step_limit: int | None = None

    def __post_init__(self) -> None:
        if self.time_limit is not None and not (
            self.time_limit > 0 and math.isfinite(self.time_limit)
        ):
            raise AnonlabError(
                f"time_limit must be a positive number of seconds (got {self.time_limit})",
                parameter="time_limit",
            )
        if self.step_limit is not None and (
            isinstance(self.step_limit, bool) or self.step_limit < 1
        ):
            raise AnonlabError(
                f"step_limit must be a whole number of node checks of 1 or more "
                f"(got {self.step_limit})",
                parameter="step_limit",
            )


def compare_losses(a: Loss, b: Loss) -> int:
    """``InformationLoss.compareTo``: -1, 0 or 1 in the order of :func:`ordered`."""
    x, y = ordered(a), ordered(b)
    return -1 if x < y else (1 if x > y else 0)


def relative_loss(loss: Loss, low: Loss, high: Loss) -> float:
    """ARX's ``InformationLoss.relativeTo(min, max)``: where ``loss`` lies from ``low`` to
    ``high`` (0 when they are equal); a rank tuple by its mean, clamped to [0, 1]
    (``ILMultiDimensionalRank.relativeTo``)."""
    if isinstance(loss, tuple):
        lo, hi, value = (float(np.mean(v)) for v in (low, high, loss))
        if hi - lo == 0.0:
            return 0.0
        return min(1.0, max(0.0, (value - lo) / (hi - lo)))
    if isinstance(low, tuple) or isinstance(high, tuple):
        raise TypeError("a single-number loss is compared with rank tuples")
    if high - low == 0.0:
        return 0.0
    return (loss - low) / (high - low)


class LevelRows:
    """Level vectors appended one at a time into a numpy array that doubles as it grows (so
    the membership tests of :class:`UpwardMarks` and :class:`DownwardMarks` stay vectorized
    without copying every row for every new one)."""

    def __init__(self, dimensions: int) -> None:
        self._array: NDArray[Any] = np.zeros((16, dimensions), dtype=np.int64)
        self.count = 0

    def add(self, levels: tuple[int, ...]) -> None:
        if self.count == len(self._array):
            self._array = np.concatenate([self._array, np.zeros_like(self._array)])
        self._array[self.count] = levels
        self.count += 1

    @property
    def rows(self) -> NDArray[Any]:
        return self._array[: self.count]


class UpwardMarks(LevelRows):
    """Nodes marked together with all their generalizations (ARX's predictive properties of
    direction "up"): a node is marked when some marked node lies at or below it."""

    def __contains__(self, levels: tuple[int, ...]) -> bool:
        return self.count > 0 and bool(np.any(np.all(self.rows <= np.asarray(levels), axis=1)))


class DownwardMarks(LevelRows):
    """Nodes marked with all their specializations: a node is marked when some marked node
    lies at or above it (failing nodes of a monotone model)."""

    def __contains__(self, levels: tuple[int, ...]) -> bool:
        return self.count > 0 and bool(np.any(np.all(self.rows >= np.asarray(levels), axis=1)))


class HeuristicRun:
    """One heuristic search's checks, limits and best node (see the module docstring)."""

    def __init__(self, ctx: SearchContext, limits: HeuristicLimits) -> None:
        if not ctx.sparse:
            raise ValueError("a heuristic search needs a sparse search context")
        self.ctx = ctx
        self.lattice = ctx.lattice
        self.limits = limits
        #: node -> (acceptable, loss as measured by a forced check)
        self.results: dict[int, tuple[bool, Loss]] = {}
        self._bounds: dict[int, Loss] = {}
        #: whether a failing node's verdict may lack outliers a forced check finds (sample-based
        #: criteria stop enforcing at the limit; a short-circuited sub-model check)
        self._recheck = bool(ctx._sample_based) or not ctx.monotone_model
        self.optimum: int | None = None
        self.optimum_loss: Loss | None = None
        self.stopped_by = STOP_DONE
        self._records = int(ctx.engine.bottom.counts.sum())
        self._progress = ctx.progress
        ctx.progress = None  # progress counts against the step limit, reported here
        self.started = time.perf_counter()

    @property
    def best_loss(self) -> Loss:
        """The loss of the best acceptable node found (one must have been found)."""
        if self.optimum_loss is None:
            raise TypeError("the best node's loss is not set")
        return self.optimum_loss

    # ------------------------------------------------------------------ checks
    def check(self, node: int) -> tuple[bool, Loss]:
        """Check a node once (later calls return the first result) and track the optimum."""
        known = self.results.get(node)
        if known is not None:
            return known
        ctx = self.ctx
        verdict = ctx.verdict(node)
        classes = verdict.classes
        if verdict.acceptable:
            loss = ctx.losses[node]
        else:
            if self._recheck:
                classes = ctx.evaluate(classes.fs, enforce_limit=self._records).classes
            loss = ctx.metric.value(classes)
        result = (verdict.acceptable, loss)
        self.results[node] = result
        if verdict.acceptable:
            self._track(node, loss)
        if self._progress is not None:
            total = self.limits.step_limit or self.lattice.size
            self._progress(SEARCH_STEP, self.checks, min(total, self.lattice.size))
        return result

    def _track(self, node: int, loss: Loss) -> None:
        """ARX's ``trackOptimum``: a lower loss, or an equal loss at a lower level."""
        if self.optimum is None or self.optimum_loss is None:
            self.optimum, self.optimum_loss = node, loss
            return
        order = compare_losses(loss, self.optimum_loss)
        if order < 0 or (order == 0 and self.level(node) < self.level(self.optimum)):
            self.optimum, self.optimum_loss = node, loss

    def lower_bound(self, node: int) -> Loss:
        """A checked node's lower bound (for it and all its generalizations)."""
        bound = self._bounds.get(node)
        if bound is None:
            ctx = self.ctx
            levels = self.lattice.levels(node)
            fs = ctx.cache.get(levels)
            if fs is None:
                fs = ctx.cache.build(levels)
                ctx.cache.store(fs)
            none = np.zeros(fs.classes, dtype=bool)
            bound = self._bounds[node] = ctx.metric.lower_bound(NodeClasses(fs=fs, outliers=none))
        return bound

    def loss(self, node: int) -> Loss:
        """A checked node's loss (measured whether it is acceptable or not)."""
        return self.results[node][1]

    def level(self, node: int) -> int:
        """A node's level within the bounds (ARX's ``Transformation.getLevel``)."""
        return self.lattice.level_of(node) - self.lattice.min_level

    @property
    def checks(self) -> int:
        """Nodes checked so far."""
        return len(self.results)

    def must_stop(self) -> bool:
        """Whether a limit is reached (ARX's ``mustStop``); records which one."""
        limits = self.limits
        if limits.step_limit is not None and self.checks >= limits.step_limit:
            self.stopped_by = STOP_STEPS
            return True
        if limits.time_limit is not None and time.perf_counter() - self.started > limits.time_limit:
            self.stopped_by = STOP_TIME
            return True
        return False

    # ----------------------------------------------------------------- results
    def result(self, strategy: str) -> SearchResult:
        """The best acceptable node found, packaged; an error when none was."""
        ctx = self.ctx
        if self.optimum is None or self.optimum_loss is None:
            raise self.nothing_found()
        node = self.optimum
        return SearchResult(
            strategy=strategy,
            optimum=node,
            levels=self.lattice.levels(node),
            loss=self.optimum_loss,
            nodes_checked=self.checks,
            k_minimal=[],
            checked=np.zeros(0, dtype=bool),
            tags=np.zeros(0, dtype=np.int8),
            runtime_seconds=time.perf_counter() - self.started,
            classes=ctx.classes(node),
            cpu_seconds=time.process_time() - ctx.cpu_started,
            extra={"heuristic": self.report(), "visited": self.visited_levels()},
        )

    def report(self) -> dict[str, Any]:
        """What the reports say of the search: heuristic, its limits, why it stopped."""
        return {
            "optimal": False,
            "time_limit_seconds": self.limits.time_limit,
            "step_limit": self.limits.step_limit,
            "stopped_by": self.stopped_by,
            "nodes_checked": self.checks,
        }

    def visited_levels(self) -> dict[int, tuple[int, int]]:
        """Per lattice level: nodes checked and how many of them were acceptable."""
        out: dict[int, tuple[int, int]] = {}
        for node, (ok, _) in self.results.items():
            level = self.lattice.level_of(node)
            checked, good = out.get(level, (0, 0))
            out[level] = (checked + 1, good + int(ok))
        return out

    def nothing_found(self) -> AnonlabError:
        """No acceptable node among the nodes checked."""
        why = (
            "every node it could reach was checked"
            if self.stopped_by == STOP_DONE
            else f"it stopped at its {self.stopped_by} after {self.checks} checks"
        )
        return AnonlabError(
            f"the heuristic search found no generalization that satisfies the privacy model "
            f"({why}): raise step_limit or time_limit, search optimally, relax the privacy "
            "models (e.g. lower k) or raise the suppression limit",
            parameter="search",
        )
