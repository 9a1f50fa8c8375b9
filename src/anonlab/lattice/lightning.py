"""Lightning: ARX's best-first heuristic searches, bottom-up and top-down.

After Prasser, Eicher, Kohlmayer, Kuhn: "Lightning: Utility-Driven Anonymization of
High-Dimensional Data", Transactions on Data Privacy 9(2), 2016 (ARX 3.9's
``LIGHTNINGAlgorithm`` and ``LIGHTNINGTopDownAlgorithm``).

**Bottom-up** (:func:`lightning_search`). Every node checked is measured, acceptable or not
(see :mod:`anonlab.lattice.heuristic`). A priority queue holds checked nodes, least loss
first; it starts with the bottom node. The search takes the head of the queue and, unless
it was expanded already or its lower bound is no better than the best acceptable loss found
(then no generalization of it can do better: it and all its generalizations are marked so,
as ARX's predictive property "insufficient utility" marks them), *expands* it: checks its
direct generalizations that are neither expanded nor marked, queues them, and marks the node
expanded. Every ``h``-th step (``h`` the height of the lattice) it dives instead: it expands
the node, then the cheapest successor just checked, and so on up to the top, a greedy path
that reaches an acceptable node early and so gives the bound something to prune by.

**Top-down** (:func:`top_down_search`). The same best-first search from the top node
downwards, expanding each node's direct specializations, without the dive and without
pruning by bounds (ARX's ``BEST_EFFORT_TOP_DOWN``).

Both stop when the queue is empty or a limit is reached and return the best acceptable node
checked. The order among nodes of equal loss follows ARX: successors are visited by
ascending dimension and predecessors by descending dimension (ARX's solution space), and the
queue breaks ties as ``java.util.PriorityQueue`` does (:mod:`anonlab.lattice.javautil`), so a
search under a step limit returns ARX's node.
"""

from __future__ import annotations

from anonlab.lattice.heuristic import HeuristicLimits, HeuristicRun, UpwardMarks, compare_losses
from anonlab.lattice.javautil import JavaPriorityQueue
from anonlab.lattice.search import SearchContext, SearchResult


class _Walk:
    """The state of a Lightning search: its run, queue and the expanded and pruned nodes."""

    def __init__(self, ctx: SearchContext, limits: HeuristicLimits) -> None:
        self.run = HeuristicRun(ctx, limits)
        self.lattice = ctx.lattice
        run = self.run
        self.queue: JavaPriorityQueue[int] = JavaPriorityQueue(
            lambda a, b: compare_losses(run.loss(a), run.loss(b))
        )
        self.expanded: set[int] = set()
        #: lower bound no better than the best loss, with all generalizations (bottom-up)
        self.pruned = UpwardMarks(len(self.lattice.heights))

    def is_pruned(self, node: int) -> bool:
        return self.lattice.levels(node) in self.pruned

    def neighbours(self, node: int, up: bool) -> list[int]:
        """ARX's order: successors by ascending dimension, predecessors by descending."""
        if up:
            return self.lattice.successors(node)
        return self.lattice.predecessors(node)[::-1]

    def prune(self, node: int, up: bool) -> bool:
        """Whether to skip a node taken from the queue (ARX's ``prune``)."""
        if node in self.expanded or (up and self.is_pruned(node)):
            return True
        run = self.run
        if (
            up
            and run.optimum is not None
            and run.optimum != node
            and compare_losses(run.lower_bound(node), run.best_loss) >= 0
        ):
            self.pruned.add(self.lattice.levels(node))
            return True
        return False

    def expand(self, node: int, up: bool) -> int | None:
        """Check and queue the node's open neighbours; the cheapest of them (``None`` when
        there is none, or a limit stopped the search)."""
        best: int | None = None
        run = self.run
        for other in self.neighbours(node, up):
            if other not in self.expanded and not self.is_pruned(other):
                run.check(other)
                self.queue.add(other)
                if best is None or compare_losses(run.loss(other), run.loss(best)) < 0:
                    best = other
            if run.must_stop():
                return None
        self.expanded.add(node)
        return best

    def dive(self, node: int) -> None:
        """Expand greedily up from ``node`` (ARX's depth-first search without backtracking)."""
        current: int | None = node
        while current is not None and not self.run.must_stop():
            current = self.expand(current, True)
            if current is not None:
                self.queue.remove(current)

    def search(self, start: int, up: bool) -> None:
        """The best-first loop from ``start``."""
        run = self.run
        run.check(start)
        self.queue.add(start)
        stepping = max(1, self.lattice.max_level - self.lattice.min_level) if up else 0
        step = 0
        while (node := self.queue.poll()) is not None:
            if self.prune(node, up):
                continue
            step += 1
            if up and step % stepping == 0:
                self.dive(node)
            else:
                self.expand(node, up)
            if run.must_stop():
                break


def lightning_search(ctx: SearchContext, limits: HeuristicLimits) -> SearchResult:
    """ARX's Lightning (bottom-up best-first with greedy dives); the best node found."""
    walk = _Walk(ctx, limits)
    walk.search(ctx.lattice.bottom, up=True)
    return walk.run.result("lightning")


def top_down_search(ctx: SearchContext, limits: HeuristicLimits) -> SearchResult:
    """ARX's top-down best-first search; the best node found."""
    walk = _Walk(ctx, limits)
    walk.search(ctx.lattice.top, up=False)
    return walk.run.result("top-down")
