"""Exhaustive search: check every node (the reference the other strategies must match).

Nodes are visited in node-number order, so each node's frequency set rolls
up from a just-checked predecessor. No predictive tagging: every node's tag
is its own check's result, for the whole privacy model (and, when the model is
not monotone, for its monotone sub-model). The optimum is the minimum of the
metric over all acceptable nodes (ties: lower level, then the smaller level
vector).
"""

from __future__ import annotations

import time

from anonlab.lattice.search import ANONYMOUS, NOT_ANONYMOUS, SearchContext, SearchResult


def exhaustive_search(ctx: SearchContext) -> SearchResult:
    """Check all nodes and return the global optimum."""
    started = time.perf_counter()
    for node in range(ctx.lattice.size):
        result = ctx.verdict(node)
        ctx.model_tags[node] = ANONYMOUS if result.acceptable else NOT_ANONYMOUS
        ctx.tags[node] = ANONYMOUS if result.sub_acceptable else NOT_ANONYMOUS
    if ctx.best is None:
        raise ctx.no_solution()
    best = ctx.best[1]
    return ctx.package("exhaustive", best, ctx.best_loss, ctx.k_minimal_from_tags(), started)
