"""Exhaustive search: check every node (the reference the other strategies must match).

Nodes are visited in node-number order, so each node's frequency set rolls up
from a just-checked predecessor. No predictive tagging; the optimum is the
minimum of the metric over all anonymous nodes (ties: lower level, then the
smaller level vector).
"""

from __future__ import annotations

import time

from anonlab.lattice.search import ANONYMOUS, NOT_ANONYMOUS, SearchContext, SearchResult


def exhaustive_search(ctx: SearchContext) -> SearchResult:
    """Check all nodes and return the global optimum."""
    started = time.perf_counter()
    best: int | None = None
    best_key: tuple[float, int, tuple[int, ...]] | None = None
    for node in range(ctx.lattice.size):
        classes = ctx.classes(node)
        if classes.suppressed <= ctx.max_suppressed:
            ctx.tags[node] = ANONYMOUS
            key = ctx.sort_key(node, ctx.metric.value(classes))
            if best_key is None or key < best_key:
                best, best_key = node, key
        else:
            ctx.tags[node] = NOT_ANONYMOUS
    if best is None or best_key is None:
        raise ctx.no_solution()
    return ctx.package("exhaustive", best, best_key[0], ctx.k_minimal_from_tags(), started)
