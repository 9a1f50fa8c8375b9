"""The next-best transformations: the ``n`` acceptable nodes of least loss (ARX's solution
space, as its explorer lists it).

After a search, :func:`best_nodes` finds the ``n`` acceptable nodes that come
first in the optimum's order (:meth:`SearchContext.sort_key`: loss, then
level, then level vector) with the search's optimum always first. It reuses
the search's work: a node tagged "not acceptable" is skipped, a checked node's
loss is known. The other nodes are checked in the order of the metric's
data-free lower bound ``b(x) <= loss(x)`` (:meth:`Metric.level_bounds`);
once ``n`` acceptable nodes are known and the next bound is above the
``n``-th smallest loss, no node left can enter the list (its loss is at least
its bound), so the walk stops. Without data-free bounds every node is judged.

:func:`node_facts` gives what the list shows of a node: its levels, loss,
suppressed records and highest prosecutor risk ``max_c 1 / |c|`` over the
released classes ``c`` (an attacker who knows every quasi-identifier;
suppressed records are in no class).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from anonlab.lattice.search import NOT_ANONYMOUS, Loss, SearchContext, SearchResult, ordered


@dataclass(frozen=True)
class NodeFacts:
    """One transformation of the list: levels, loss, suppressed records, highest risk."""

    levels: tuple[int, ...]
    loss: Loss
    suppressed_records: int
    highest_prosecutor_risk: float | None


def _candidates(ctx: SearchContext) -> list[int]:
    """Every node not known to fail the model, in order of data-free bound (node number)."""
    open_nodes = np.flatnonzero(ctx.model_tags != NOT_ANONYMOUS)
    order = ctx.bound_order()
    if order is None:
        return [int(x) for x in open_nodes]
    return [int(x) for x in open_nodes[np.lexsort((open_nodes, order[open_nodes]))]]


def _loss_of(ctx: SearchContext, node: int) -> Loss | None:
    """A node's loss if it is acceptable (judged now unless known), else ``None``."""
    if node in ctx.losses:
        return ctx.losses[node]
    return ctx.losses[node] if ctx.verdict(node).acceptable else None


def _out_of_reach(ctx: SearchContext, node: int, found: list[tuple[Any, int]], wanted: int) -> bool:
    """With ``wanted`` nodes found: the node's bound exceeds the largest of their losses."""
    if ctx.bounds is None or len(found) < wanted:
        return False
    last = ctx.losses[found[wanted - 1][1]]
    return bool(ordered(ctx.bound_of(node)) > ordered(last))


def best_nodes(ctx: SearchContext, result: SearchResult, n: int) -> list[int]:
    """The search's optimum and the ``n - 1`` next acceptable nodes in the optimum's order."""
    if n < 1:
        raise ValueError("n must be at least 1")
    wanted = n - 1
    found: list[tuple[Any, int]] = []
    for node in _candidates(ctx) if wanted else []:
        if _out_of_reach(ctx, node, found, wanted):
            break
        loss = _loss_of(ctx, node)
        if loss is None or node == result.optimum:
            continue
        found.append((ctx.sort_key(node, loss), node))
        found.sort()
        del found[wanted:]
    return [result.optimum, *(node for _, node in found)]


def node_facts(ctx: SearchContext, node: int) -> NodeFacts:
    """What the list shows of an acceptable node (see the module docstring)."""
    classes = ctx.classes(node)
    counts = classes.fs.counts
    kept = counts[~classes.outliers & (counts > 0)]
    risk = float(1.0 / kept.min()) if kept.size else None
    return NodeFacts(
        levels=ctx.lattice.levels(node),
        loss=ctx.losses[node],
        suppressed_records=int(classes.suppressed),
        highest_prosecutor_risk=risk,
    )
