"""Frontier descent: anonlab's own heuristic search for wide lattices (not in ARX).

ARX's Lightning spends its first checks below the acceptable region: with ``m``
quasi-identifiers every expansion checks up to ``m`` successors, and its first greedy dive
comes only after ``h`` expansions (``h`` the lattice's height). On a wide table (20
quasi-identifiers, a height near 60) that is over a thousand checks before any acceptable
node is known. This search starts where acceptable nodes are, at the top, and walks down:

1. **Descent** (first improvement). From the current acceptable node, its direct
   specializations are tried in the order of the metric's data-free bound
   (:meth:`Metric.level_bounds`: the loss with nothing suppressed; without such bounds, the
   sum of the relative levels), and the walk moves to the first acceptable one. When none
   is, the node is a local minimum (a minimal acceptable node, for a monotone model).
   Far above the frontier one check takes one step down.
2. **Perturbation** (iterated local search, after Lourenço, Martin and Stützle, "Iterated
   Local Search", Handbook of Metaheuristics, 2003). From the best node found, one
   quasi-identifier is raised by one level and another lowered by one, in the order of the
   bound of the result, and the descent runs again from there; the best acceptable node
   over all descents is kept, and a better one becomes the centre of the next moves. Moves
   already tried are not tried again. When every such move around the best node is tried,
   the larger moves follow: one quasi-identifier up by one and two others down by one.

For a monotone privacy model, a node that fails is remembered with all its specializations
(they fail too) and never checked; otherwise every candidate is checked. The search stops
when no untried move is left, or at a limit, and returns the best acceptable node checked
(:mod:`anonlab.lattice.heuristic`): like ARX's heuristics it proves nothing.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from anonlab.errors import present
from anonlab.lattice.heuristic import (
    STOP_STEPS,
    STOP_TIME,
    DownwardMarks,
    HeuristicLimits,
    HeuristicRun,
    compare_losses,
)
from anonlab.lattice.search import SearchContext, SearchResult

#: why a descent that no limit stopped ended
STOP_LOCAL = "no untried move around the best node"


class _Descent:
    """One run of the frontier descent."""

    def __init__(self, ctx: SearchContext, limits: HeuristicLimits) -> None:
        self.run = HeuristicRun(ctx, limits)
        self.ctx = ctx
        self.lattice = ctx.lattice
        self.failing = DownwardMarks(len(self.lattice.heights))
        self.monotone = ctx.monotone_model
        self.tried: set[int] = set()  # start nodes of descents already run

    def order(self, nodes: list[int]) -> list[int]:
        """Candidates by data-free bound (ties: node number), lowest first."""
        if not nodes:
            return nodes
        levels = np.asarray([self.lattice.levels(n) for n in nodes], dtype=np.int64)
        bounds = self.ctx.metric.level_bounds(levels)
        if bounds is None:
            heights = np.maximum(self.lattice.heights, 1).astype(np.float64)
            keys: list[Any] = list((levels / heights).sum(axis=1))
        elif bounds.ndim == 1:
            keys = list(bounds)
        else:
            keys = [tuple(row) for row in bounds]
        return [n for _, n in sorted(zip(keys, nodes, strict=True))]

    def acceptable(self, node: int) -> bool:
        """Check a node (unless known to fail); remember a failure below it."""
        levels = self.lattice.levels(node)
        if self.monotone and levels in self.failing:
            return False
        ok, _ = self.run.check(node)
        if not ok and self.monotone:
            self.failing.add(levels)
        return ok

    def descend(self, node: int) -> None:
        """Walk down from an acceptable node to a local minimum (or until a limit)."""
        current = node
        while not self.run.must_stop():
            for down in self.order(self.lattice.predecessors(current)):
                if self.acceptable(down):
                    current = down
                    break
                if self.run.must_stop():
                    return
            else:
                return

    def moves(self, node: int, lowered: int) -> list[int]:
        """One quasi-identifier up by one and ``lowered`` others down by one, by bound of
        the result."""
        levels = list(self.lattice.levels(node))
        highs, lows = self.lattice._height_list, self.lattice._low_list
        m = len(levels)
        out = []
        for up in range(m):
            if levels[up] >= highs[up]:
                continue
            downs = [d for d in range(m) if d != up and levels[d] > lows[d]]
            for chosen in itertools.combinations(downs, lowered):
                moved = list(levels)
                moved[up] += 1
                for d in chosen:
                    moved[d] -= 1
                out.append(self.lattice.index(moved))
        return self.order(out)

    def perturb(self) -> bool:
        """Descend from the untried moves around the best node until one improves it;
        whether one did."""
        for lowered in (1, 2):
            best = present(self.run.optimum, "the best node")
            for start in self.moves(best, lowered):
                if start in self.tried:
                    continue
                self.tried.add(start)
                if self.acceptable(start):
                    before = self.run.best_loss
                    self.descend(start)
                    if compare_losses(self.run.best_loss, before) < 0:
                        return True
                if self.run.must_stop():
                    return False
        return False

    def search(self) -> None:
        top = self.lattice.top
        if not self.acceptable(top):
            return
        self.tried.add(top)
        self.descend(top)
        while not self.run.must_stop() and self.perturb():
            pass


def descent_search(ctx: SearchContext, limits: HeuristicLimits) -> SearchResult:
    """Frontier descent from the top with perturbations; the best node found."""
    descent = _Descent(ctx, limits)
    descent.search()
    if descent.run.stopped_by not in (STOP_STEPS, STOP_TIME):
        descent.run.stopped_by = STOP_LOCAL
    return descent.run.result("descent")
