"""Degree-product-first traversal (the OLA-degree-product paper; docs/formulas.md §1).

The paper deletes a checked node from the lattice together with everything it
tags (an anonymous node's generalizations, a non-anonymous node's
specializations) and then picks, in what remains, the node whose degree
product is largest. So the degrees are those of the *remaining* lattice: a
node's out-degree counts its untagged direct successors, its in-degree its
untagged direct predecessors. A node with many untagged neighbours either way
sits in the middle of the undecided region, so checking it decides the most
nodes whatever the answer. The k-minimal nodes are the anonymous nodes with no
anonymous direct predecessor.

Choices where the paper is silent: ties in degree product go to the lower
level, then the smaller node number (the level vector in lexicographic order,
the last quasi-identifier varying fastest); a node whose data-free loss bound
is already no better than the best loss found is not checked (pruned), though
it still counts in its neighbours' degrees, and the search stops when every
node is tagged or pruned.

For a privacy model that is not monotone, the tags are those of its
monotone sub-model and the search context's linear phase checks the rest
(see :mod:`anonlab.lattice.search`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.lattice.search import UNKNOWN, SearchContext, SearchResult


class DegreeCounter:
    """Counts, for every node, its direct successors and predecessors in a node subset."""

    def __init__(self, ctx: SearchContext) -> None:
        lat = ctx.lattice
        lv = lat.all_levels
        self.size = lat.size
        # (node, neighbour) index pairs per dimension, computed once
        self.edges = []
        for i, stride in enumerate(lat.strides):
            lower = np.flatnonzero(lv[:, i] < lat.heights[i])
            self.edges.append((lower, lower + int(stride)))

    def products(self, open_nodes: NDArray[Any]) -> NDArray[Any]:
        """Out-degree x in-degree of every node within the sub-graph of ``open_nodes``."""
        out_deg = np.zeros(self.size, dtype=np.int64)
        in_deg = np.zeros(self.size, dtype=np.int64)
        for lower, upper in self.edges:
            out_deg[lower] += open_nodes[upper]
            in_deg[upper] += open_nodes[lower]
        return out_deg * in_deg


def degree_product_search(ctx: SearchContext) -> SearchResult:
    """Check the node of largest remaining degree product until none is undecided."""
    started = time.perf_counter()
    lat = ctx.lattice
    # order of tie-breaking: lower level first, then node number
    tie_rank = np.empty(lat.size, dtype=np.int64)
    tie_rank[np.lexsort((np.arange(lat.size), lat.level_sums))] = np.arange(lat.size)
    counter = DegreeCounter(ctx)
    while True:
        open_nodes = ctx.tags == UNKNOWN
        wanted = open_nodes & ctx.below_best()
        if not wanted.any():
            break
        products = np.where(wanted, counter.products(open_nodes), -1)
        top = products.max()
        candidates = np.flatnonzero(products == top)
        node = int(candidates[np.argmin(tie_rank[candidates])])
        ctx.is_anonymous(node)
    return ctx.result("degree", started)
