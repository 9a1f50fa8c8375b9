"""What a class needs before a sensitive-attribute model can hold on it: enough records
(the first part below) and values covering enough of the table (:class:`ValueCoverage`).

A class of ``s`` records has shares ``p_v = n_v / s`` with integer counts
``n_v``, so for small ``s`` no histogram at all comes close enough to the
table's distribution ``q``: one record of an occupation with 14 values is at
equal-distance ``1 - q_v >= 0.87`` from it, and fails t-closeness with
``t = 0.2`` whatever its value. Every class with fewer records than the first
size ``s`` at which some histogram can pass is an outlier of the model. That is
a k-anonymity the model implies (ARX uses only the ``l`` of l-diversity this
way, as its minimal class size): the lattice search adds it to the model's
monotone sub-model (:mod:`anonlab.lattice.search`), where it tags nodes
predictively and rejects a node by its class sizes alone, before any
histogram is read. It never changes a node's verdict or outliers.

The sizes come from exact minima over all integer histograms of ``s`` records,
computed here without enumerating them:

* **t-closeness with hierarchical or equal ground distance.** The earth
  mover's distance on a tree whose leaves all lie at depth ``H``, with ground
  distance ``level(lca) / H``, is ``1/(2H) sum_x |P_x - Q_x|`` over the tree's
  nodes ``x`` below the root, ``P_x`` and ``Q_x`` the class's and the table's
  shares under ``x`` (each edge carries ``1/(2H)``; Li, Li and
  Venkatasubramanian 2007 give the same distance as ARX's ``pos``/``neg``
  sums). The equal distance is the tree of height 1 (``1/2 sum_v |p_v - q_v|``).
  With ``f_x(c)`` the least cost inside ``x``'s subtree when it holds ``c``
  records, ``f_x(c) = |c/s - Q_x| / (2H) + min over c_1 + ... = c of
  sum_j f_{child j}(c_j)``. Each ``f`` is convex in ``c`` (a sum of convex
  terms and of min-plus convolutions of convex sequences), and the min-plus
  convolution of convex sequences merges their sorted slopes; the minimum is
  ``f_root(s)`` without the root's own term.
* **t-closeness with ordered distance.** ``sum_i |C_i / s - Q_i|`` over the
  values in order, ``C_i`` the class's cumulative count: each term is least at
  the integer nearest ``s Q_i``, and those integers are nondecreasing (``Q``
  is) and end at ``s``, so they are the least sum's ``C``.
* **beta-likeness.** A value may hold at most ``floor(s q_v (1 + b_v))`` of the
  class's records (``b_v = beta``, or ``min(beta, -ln q_v)`` for the enhanced
  model); some histogram passes exactly when these caps add up to ``s``.
* **delta-disclosure.** A value in the class holds strictly between
  ``s q_v 2^-delta`` and ``s q_v 2^delta`` records, or none: some histogram
  passes when counts in these ranges can add up to ``s`` (reachable sums, one
  value at a time).

Each test leaves a relative margin of ``1e-9`` on the side of "may pass", far
more than the rounding of the models' own floating-point expressions, so a
size is declared failing only when every histogram of that size fails in the
models' arithmetic too. Sizes are tried from 1 up to :data:`SIZE_CAP`: when
none passes, the cap itself is returned (every smaller class fails).

A class's values matter too: the table's share of the values a class lacks
must travel to the values it holds, and the caps of beta-likeness and
delta-disclosure on the values it holds must leave room for all its records.
:class:`ValueCoverage` turns each model's version of this into a monotone
criterion (a merged class holds every value its parts hold), which the search
also adds to the sub-model (:meth:`anonlab.privacy.base.Criterion.monotone_part`).
The l-diversity models take distinct ``ceil(l)``-diversity as theirs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.privacy.base import ClassStats, Criterion

#: largest size tried
SIZE_CAP = 256
#: relative margin, on the side of "may pass", of every comparison with the model's bound
MARGIN = 1e-9
#: the most array elements the sizes tried may touch together (the size reached then counts
#: as "may pass": the result stays a valid bound)
_WORK_LIMIT = 5_000_000


def first_passing_size(may_pass: Callable[[int], bool], cost: Callable[[int], int]) -> int:
    """The smallest size ``s`` in ``1..SIZE_CAP`` for which ``may_pass(s)``, else the cap.

    ``cost(s)`` estimates the elements one call touches; once their total would
    pass :data:`_WORK_LIMIT`, the current size is returned (every smaller one
    was shown to fail, so it is still a valid bound).
    """
    spent = 0
    for size in range(1, SIZE_CAP):
        spent += cost(size)
        if spent > _WORK_LIMIT or may_pass(size):
            return size
    return SIZE_CAP


def _convex_costs(size: int, shares: NDArray[Any], weight: float) -> NDArray[Any]:
    """``(nodes, size + 1)``: ``weight |c / size - share|`` for each share and
    ``c = 0..size``."""
    grid = np.arange(size + 1, dtype=np.float64) / size
    return np.asarray(
        weight * np.abs(grid[None, :] - np.asarray(shares)[:, None]), dtype=np.float64
    )


def _min_plus(costs: NDArray[Any], parent: NDArray[Any], n_parents: int) -> NDArray[Any]:
    """Min-plus convolution of the convex rows of ``costs`` (on ``0..s``) that share a
    parent, kept on ``0..s``: the sum of their first values, then their slopes merged in
    increasing order (each row has ``s`` slopes, so every parent keeps ``s``)."""
    size = costs.shape[1] - 1
    slopes = np.diff(costs, axis=1).ravel()
    owner = np.repeat(parent, size)
    order = np.lexsort((slopes, owner))
    owner, slopes = owner[order], slopes[order]
    first = np.concatenate(([0], np.cumsum(np.bincount(owner, minlength=n_parents))[:-1]))
    rank = np.arange(owner.shape[0]) - first[owner]
    keep = rank < size
    out = np.zeros((n_parents, size + 1), dtype=np.float64)
    out[:, 0] = np.bincount(parent, weights=costs[:, 0], minlength=n_parents)
    out[owner[keep], 1 + rank[keep]] = slopes[keep]
    return np.asarray(np.cumsum(out, axis=1), dtype=np.float64)


def tree_minimum(
    size: int,
    leaf_share: NDArray[Any],
    parents: Sequence[NDArray[Any]],
    node_share: Sequence[NDArray[Any]],
) -> float:
    """The least tree EMD of a class of ``size`` records to the table's distribution.

    ``leaf_share[v]`` is ``q_v``; ``parents[i][x]`` is the node one level up of
    node ``x`` of level ``i`` (level 0 = the leaves) and ``node_share[i][u]``
    the table's share under node ``u`` of level ``i + 1``. The last level must
    hold a single node, the root. Ground distance ``level(lca) / H`` with
    ``H = len(parents)`` (see the module text). All nodes of a level at once.
    """
    height = len(parents)
    weight = 1.0 / (2.0 * height)
    costs = _convex_costs(size, leaf_share, weight)
    for level, parent in enumerate(parents):
        costs = _min_plus(costs, np.asarray(parent, dtype=np.int64), node_share[level].shape[0])
        if level < height - 1:  # the root has no edge of its own
            costs = costs + _convex_costs(size, node_share[level], weight)
    return float(costs[0, size])


def ordered_minimum(size: int, cumulative_share: NDArray[Any]) -> float:
    """The least ``sum_i |C_i / size - Q_i|`` over nondecreasing integer ``C`` ending at
    ``size``, for the table's cumulative shares ``Q`` in the values' order.

    Each term alone is least at the integer nearest ``size Q_i``; rounding a
    nondecreasing sequence to the nearest integers keeps it nondecreasing, and
    ``Q`` ends at 1, so those integers are a valid ``C`` and the least sum is
    ``sum_i |round(size Q_i) - size Q_i| / size``.
    """
    scaled = np.asarray(cumulative_share, dtype=np.float64) * size
    return float(np.abs(np.round(scaled) - scaled).sum() / size)


def caps_reach(size: int, caps: NDArray[Any]) -> bool:
    """Whether per-value caps on a class's counts (``floor`` of the real caps) admit
    ``size`` records."""
    return bool(np.floor(caps * size).sum() >= size)


def ranges_reach(size: int, low: NDArray[Any], high: NDArray[Any]) -> bool:
    """Whether counts ``n_v`` that are 0 or integers from ``low_v * size`` to
    ``high_v * size`` (both included) can add up to ``size`` (reachable sums, one value at
    a time)."""
    reach = np.zeros(size + 1, dtype=bool)
    reach[0] = True
    target = np.arange(size + 1)
    for lo, hi in zip((low * size).tolist(), (high * size).tolist(), strict=True):
        first = max(math.ceil(lo), 1)
        last = min(math.floor(hi), size)
        if first > last:
            continue
        before = np.concatenate(([0], np.cumsum(reach, dtype=np.int64)))
        # c is reachable with this value when some c - n, first <= n <= last, was before
        start = np.clip(target - last, 0, size + 1)
        stop = np.clip(target - first + 1, 0, size + 1)
        reach = reach | (before[stop] > before[start])
    return bool(reach[size])


def closeness_size(
    minimum: Callable[[int], float], bound: float, cost: Callable[[int], int]
) -> int:
    """The implied size of a t-closeness model whose least distance at size ``s`` is
    ``minimum(s)`` (computed touching about ``cost(s)`` elements): the first size at
    which it is not above ``bound`` with the margin."""
    slack = bound * (1.0 + MARGIN) + MARGIN
    return first_passing_size(lambda s: minimum(s) <= slack, cost)


class ValueCoverage(Criterion):
    """A necessary condition of a sensitive-attribute model on the values a class holds.

    The table's weight is spread over *layers* of groups of the attribute's
    values: ``groups[j][v]`` is the group of value ``v`` in layer ``j`` (``None``:
    the values themselves) and ``weights[j][g]`` the weight of group ``g``. A
    class *covers* the groups its values fall in; it is an outlier when the
    weight it leaves uncovered exceeds ``bound`` (by the module's margin). A
    merged class covers every group its parts cover, so when it is an outlier
    so is each part: the criterion is monotone with and without suppression.

    The models give (see the module text for their distances):

    * t-closeness, equal or hierarchical distance: the mass of an empty subtree
      whose root is at level ``l`` travels at least ``(l + 1) / H`` to a value of
      the class, so the distance is at least ``1/H`` times the table's share of
      every empty subtree below the root (one layer per level, the equal distance
      being ``H = 1``); bound ``t``.
    * ordered distance: each value's mass missing from the class moves at least
      one step: layer ``q``, bound ``t (m - 1)``.
    * beta-likeness: a value may take at most ``q_v (1 + b_v)`` of the class, so
      the values held must have caps adding up to 1: layer ``q_v (1 + b_v)``,
      bound its total less 1.
    * delta-disclosure: likewise with caps ``q_v 2^delta`` (strict).
    """

    name = "value-coverage"

    def __init__(
        self,
        attribute: str,
        groups: Sequence[NDArray[Any] | None],
        weights: Sequence[NDArray[Any]],
        bound: float,
    ) -> None:
        self.attribute: str = attribute
        self.groups = [None if g is None else np.asarray(g, dtype=np.int64) for g in groups]
        self.weights = [np.asarray(w, dtype=np.float64) for w in weights]
        self.bound = float(bound)
        self.total = float(sum(float(w.sum()) for w in self.weights))

    def __repr__(self) -> str:
        return f"ValueCoverage(attribute={self.attribute!r}, bound={self.bound!r})"

    def parameters(self) -> dict[str, Any]:
        """``{"bound": bound}``."""
        return {"bound": self.bound}

    def uncovered(self, stats: ClassStats) -> NDArray[Any]:
        """Per class: the weight of the groups none of its values falls in."""
        h = stats.sensitive[self.attribute]
        n_classes = stats.classes
        covered = np.zeros(n_classes, dtype=np.float64)
        for groups, weights in zip(self.groups, self.weights, strict=True):
            if groups is None:  # a class's triples hold distinct values
                covered += np.bincount(h.classes, weights=weights[h.values], minlength=n_classes)
                continue
            n_groups = weights.shape[0]
            hit = np.zeros(n_classes * n_groups, dtype=bool)
            hit[h.classes * n_groups + groups[h.values]] = True
            covered += hit.reshape(n_classes, n_groups) @ weights
        return np.asarray(self.total - covered, dtype=np.float64)

    def outliers(self, stats: ClassStats) -> NDArray[Any]:
        """Classes with records whose uncovered weight exceeds the bound."""
        slack = self.bound + MARGIN * (1.0 + abs(self.bound))
        return np.asarray((self.uncovered(stats) > slack) & (stats.counts > 0))


def coverage(
    attribute: str,
    groups: Sequence[NDArray[Any] | None],
    weights: Sequence[NDArray[Any]],
    bound: float,
) -> ValueCoverage | None:
    """The :class:`ValueCoverage` of these layers, or ``None`` when no class can leave more
    than ``bound`` uncovered (the condition would never hold)."""
    criterion = ValueCoverage(attribute, groups, weights, bound)
    if criterion.total <= criterion.bound + MARGIN * (1.0 + abs(criterion.bound)):
        return None
    return criterion
