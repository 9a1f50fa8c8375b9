"""OLA, the Optimal Lattice Anonymization of El Emam et al. (JAMIA 2009; docs/formulas.md §1).

``kmin(B, T)`` searches the sub-lattice between nodes ``B`` and ``T``: it takes
the nodes halfway up (by level) and, for each, either recurses below it (if it
is anonymous, by check or tag) or above it (if it is not). When the
sub-lattice has only one or two levels, its lowest anonymous node is checked.
Every k-minimal node is thereby checked; the optimum is chosen among them (or
above them, for a non-monotone metric). A sub-lattice already searched is not
searched again (the recursion reaches the same pair of nodes by many routes).
OLA here runs as published, without pruning by bounds.

One correction to the published two-level step: the paper checks only the
bottom node when it is untagged; if that is not anonymous we still check the
top, otherwise a k-minimal node could be missed (found by our property tests
against exhaustive search).

For a privacy model that is not monotone, the recursion runs on its monotone
sub-model and the search context's linear phase checks the rest (see
:mod:`anonlab.lattice.search`); without a monotone sub-model there is nothing
to recurse on.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from anonlab.lattice.search import UNKNOWN, SearchContext, SearchResult


def ola_search(ctx: SearchContext) -> SearchResult:
    """Run OLA and return the optimum over the k-minimal nodes it finds."""
    started = time.perf_counter()
    ctx.prune = False
    lattice = ctx.lattice
    if not np.any(ctx.tags == UNKNOWN):  # no monotone part to search (all tags known)
        return ctx.result("ola", started)
    done: set[tuple[int, int]] = set()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))

    def kmin(low: int, high: int) -> None:
        if (low, high) in done:
            return
        done.add((low, high))
        span = lattice.level_of(high) - lattice.level_of(low)
        if span > 1:
            mid = lattice.level_of(low) + span // 2
            for node in lattice.between(low, high, mid):
                if ctx.is_anonymous(node):
                    kmin(low, node)
                else:
                    kmin(node, high)
        elif not ctx.is_anonymous(low) and span == 1:
            ctx.is_anonymous(high)

    try:
        kmin(lattice.bottom, lattice.top)
    finally:
        sys.setrecursionlimit(limit)
    return ctx.result("ola", started)
