"""Degree-product-first traversal (the OLA-degree-product paper; NOTES.md §1).

Repeatedly check the untagged node with the largest degree product
(out-degree x in-degree, i.e. successors x predecessors): those nodes sit in
the middle of the lattice and tag the most other nodes either way. An
anonymous node tags all its generalizations, a non-anonymous one all its
specializations; the k-minimal nodes are the anonymous nodes with no anonymous
direct predecessor.

A node whose data-free loss bound is already no better than the best loss
found is skipped (pruned), as are, in effect, its generalizations.

Ties in degree product are broken by lower level first, then by node number
(the smaller level vector in lexicographic order).
"""

from __future__ import annotations

import time

import numpy as np

from anonlab.lattice.search import UNKNOWN, SearchContext, SearchResult


def degree_order(ctx: SearchContext) -> np.ndarray:
    """All nodes by descending degree product, then ascending level, then node number."""
    lat = ctx.lattice
    nodes = np.arange(lat.size)
    return np.lexsort((nodes, lat.level_sums, -lat.degree_products))


def degree_product_search(ctx: SearchContext) -> SearchResult:
    """Check nodes in degree-product order until every node is tagged."""
    started = time.perf_counter()
    for node in degree_order(ctx):
        if ctx.tags[node] == UNKNOWN and not ctx.prunable(int(node)):
            ctx.is_anonymous(int(node))
    return ctx.result("degree", started)
