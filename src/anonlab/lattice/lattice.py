"""The generalization lattice: every vector of levels, one per quasi-identifier.

A node is a level vector ``(a_1, ..., a_m)`` with ``0 <= a_i <= h_i``; its
*level* is ``sum(a_i)``; the lattice has ``prod(h_i + 1)`` nodes. Nodes are
numbered by mixed radix (the last quasi-identifier varies fastest), so a
successor of node ``x`` in dimension ``i`` is ``x + stride_i``.

Bounds (ARX's minimum and maximum generalization): with lower bounds ``l_i``
and upper bounds ``u_i`` the lattice holds only the nodes ``l_i <= a_i <=
u_i``, ``prod(u_i - l_i + 1)`` of them, numbered by the same mixed radix over
``a_i - l_i``. That box is itself a product of chains, so a generalization in
it is a generalization in the full lattice: every strategy runs on it
unchanged and its optimum is the optimum among the nodes within the bounds.
Level vectors are always the hierarchies' levels (``a_i``, not ``a_i - l_i``).

Large lattices: node numbers are Python integers, so a lattice of any size (beyond
int64) is numbered the same way; :meth:`Lattice.levels`, :meth:`Lattice.level_of`,
:meth:`Lattice.successors` and :meth:`Lattice.predecessors` compute from the number alone
when the lattice has more than :data:`ARRAY_NODES` nodes, and only the optimal searches,
which index the whole lattice, use the per-node arrays (:attr:`Lattice.all_levels`).

Degrees (docs/formulas.md §1): a node's out-degree is its number of successors (dimensions
not at the top), its in-degree its number of predecessors (dimensions not at 0);
the degree product is out-degree x in-degree (the ``degree`` search counts them
within the nodes not yet tagged, see :mod:`anonlab.lattice.degree`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: above this many nodes, node numbers and level vectors convert by arithmetic, never through
#: whole-lattice arrays (which stay available, built on first use, for the optimal searches)
ARRAY_NODES = 1 << 22
#: up to this many nodes a lattice keeps each node's successors once asked for (the optimal
#: searches ask for a node's several times; at most a few MiB)
SUCCESSOR_CACHE_NODES = 1 << 16


class Lattice:
    """The full-domain generalization lattice for hierarchies of the given heights.

    ``heights`` are the highest levels of the nodes (the hierarchy heights, or
    the upper bounds); ``lows`` the lowest (default 0 each): see the module
    docstring.
    """

    def __init__(
        self,
        heights: Sequence[int] | NDArray[Any],
        lows: Sequence[int] | NDArray[Any] | None = None,
    ) -> None:
        self.heights = np.asarray(heights, dtype=np.int64)
        if self.heights.ndim != 1 or len(self.heights) == 0:
            raise ValueError("a lattice needs at least one dimension")
        self.lows = (
            np.zeros_like(self.heights) if lows is None else np.asarray(lows, dtype=np.int64)
        )
        if (
            self.lows.shape != self.heights.shape
            or np.any(self.lows > self.heights)
            or np.any(self.lows < 0)
        ):
            raise ValueError("lower bounds must be one per dimension, from 0 to its height")
        self._height_list = [int(x) for x in self.heights]
        self._low_list = [int(x) for x in self.lows]
        self._radix_list = [
            h - low + 1 for h, low in zip(self._height_list, self._low_list, strict=True)
        ]
        stride_list = [1] * len(self._radix_list)
        for i in range(len(stride_list) - 2, -1, -1):
            stride_list[i] = stride_list[i + 1] * self._radix_list[i + 1]
        self._stride_list = stride_list
        #: Python integers: any size, beyond int64 too
        self.size = stride_list[0] * self._radix_list[0]
        #: int64 strides where they fit (object otherwise: only arithmetic uses them then)
        self.strides = np.asarray(stride_list, dtype=np.int64 if self.size < 2**62 else object)
        self.arrays = self.size <= ARRAY_NODES
        self.top = self.size - 1
        self.bottom = 0
        self.max_level = int(self.heights.sum())
        self.min_level = int(self.lows.sum())
        #: successors already listed (:meth:`successors`), on lattices of at most
        #: :data:`SUCCESSOR_CACHE_NODES` nodes
        self._successors: dict[int, list[int]] | None = (
            {} if self.size <= SUCCESSOR_CACHE_NODES else None
        )

    def index(self, levels: Sequence[int]) -> int:
        """Node number of a level vector (within the bounds)."""
        return sum(
            (int(a) - low) * s
            for a, low, s in zip(levels, self._low_list, self._stride_list, strict=True)
        )

    def contains(self, levels: Sequence[int]) -> bool:
        """Whether a level vector lies within the bounds."""
        vector = np.asarray(levels, dtype=np.int64)
        return bool(
            vector.shape == self.heights.shape
            and np.all(vector >= self.lows)
            and np.all(vector <= self.heights)
        )

    def levels(self, node: int) -> tuple[int, ...]:
        """Level vector of a node number."""
        if self.arrays:
            return tuple(self.all_levels[node].tolist())
        return self._levels_of(node)

    def _levels_of(self, node: int) -> tuple[int, ...]:
        """Level vector of a node number by mixed-radix division (any lattice size)."""
        out = []
        for stride, radix, low in zip(
            self._stride_list, self._radix_list, self._low_list, strict=True
        ):
            out.append((node // stride) % radix + low)
        return tuple(out)

    def level_counts(self) -> list[int]:
        """Number of nodes at each level from :attr:`min_level` to :attr:`max_level` (a
        product of chains: the coefficients of ``prod_i (x^l_i + ... + x^h_i)``; any size)."""
        counts = [1]
        for radix in self._radix_list:
            grown = [0] * (len(counts) + radix - 1)
            for i, c in enumerate(counts):
                for j in range(radix):
                    grown[i + j] += c
            counts = grown
        return counts

    def _level_column(self, dim: int) -> NDArray[Any]:
        """(size,) int16 level of dimension ``dim`` of every node: ``(node // stride) % radix
        + low``, i.e. each level repeated ``stride`` times, that block tiled."""
        stride, radix, low = self._stride_list[dim], self._radix_list[dim], self._low_list[dim]
        block = np.repeat(np.arange(low, low + radix, dtype=np.int16), stride)
        return np.tile(block, self.size // (stride * radix))

    @cached_property
    def all_levels(self) -> NDArray[Any]:
        """(size, m) level vectors of every node, in node-number order."""
        levels = np.empty((self.size, len(self._radix_list)), dtype=np.int16)
        for dim in range(levels.shape[1]):
            levels[:, dim] = self._level_column(dim)
        return levels

    @cached_property
    def level_sums(self) -> NDArray[Any]:
        """(size,) level of every node (the columns added one by one: no strided reduction)."""
        lv = self.all_levels
        sums = lv[:, 0].astype(np.int64)
        for dim in range(1, lv.shape[1]):
            sums += lv[:, dim]
        return sums

    def level_of(self, node: int) -> int:
        """Level (sum of generalization levels) of a node."""
        if self.arrays:
            return int(self.level_sums[node])
        return sum(self._levels_of(node))

    def successors(self, node: int) -> list[int]:
        """Direct successors (one level up in one dimension), in dimension order.

        The list is kept on a small lattice (:data:`SUCCESSOR_CACHE_NODES`): callers must not
        change it.
        """
        known = self._successors
        if known is not None:
            hit = known.get(node)
            if hit is not None:
                return hit
        lv = self.levels(node)
        out = [
            node + s
            for s, a, h in zip(self._stride_list, lv, self._height_list, strict=True)
            if a < h
        ]
        if known is not None:
            known[node] = out
        return out

    def predecessors(self, node: int) -> list[int]:
        """Direct predecessors (one level down in one dimension)."""
        lv = self.levels(node)
        return [
            node - s
            for s, a, low in zip(self._stride_list, lv, self._low_list, strict=True)
            if a > low
        ]

    @cached_property
    def _packed(self) -> tuple[NDArray[Any], int] | None:
        """Level vectors packed 5 bits a dimension (with a guard bit), if they fit."""
        if len(self.heights) > 12 or int(self.heights.max()) > 15:
            return None
        shifts = 5 * np.arange(len(self.heights), dtype=np.int64)
        lv = self.all_levels
        packed = np.zeros(self.size, dtype=np.int64)
        for dim, shift in enumerate(shifts.tolist()):
            packed |= lv[:, dim].astype(np.int64) << shift  # fields do not overlap
        guard = int((np.int64(1) << (shifts + 4)).sum())
        return packed, guard

    def below(self, node: int) -> NDArray[Any]:
        """Node numbers ``v <= node`` componentwise (all specializations, and the node)."""
        packed = self._packed
        if packed is None:
            lv = self.all_levels
            return np.flatnonzero(np.all(lv[: node + 1] <= lv[node], axis=1))
        codes, guard = packed
        # SWAR test of x <= y in every 5-bit field: ((y | G) - x) keeps every guard bit
        ok = ((codes[node] | guard) - codes[: node + 1]) & guard
        return np.flatnonzero(ok == guard)

    def below_mask(self, node: int) -> NDArray[Any]:
        """(node + 1,) bool: which of the nodes ``0 .. node`` are ``<= node`` componentwise
        (:meth:`below` as a mask over the nodes up to ``node``: no node above it is below it)."""
        packed = self._packed
        if packed is None:
            lv = self.all_levels
            return np.asarray(np.all(lv[: node + 1] <= lv[node], axis=1))
        codes, guard = packed
        return np.asarray((((codes[node] | guard) - codes[: node + 1]) & guard) == guard)

    def above_mask(self, node: int) -> NDArray[Any]:
        """(size - node,) bool: which of the nodes ``node .. size - 1`` are ``>= node``
        componentwise (:meth:`above` as a mask over the nodes from ``node`` on)."""
        packed = self._packed
        if packed is None:
            lv = self.all_levels
            return np.asarray(np.all(lv[node:] >= lv[node], axis=1))
        codes, guard = packed
        return np.asarray((((codes[node:] | guard) - codes[node]) & guard) == guard)

    def above(self, node: int) -> NDArray[Any]:
        """Node numbers ``v >= node`` componentwise (all generalizations, and the node)."""
        packed = self._packed
        if packed is None:
            lv = self.all_levels
            return node + np.flatnonzero(np.all(lv[node:] >= lv[node], axis=1))
        codes, guard = packed
        ok = ((codes[node:] | guard) - codes[node]) & guard
        return node + np.flatnonzero(ok == guard)

    def nodes_at_level(self, level: int) -> NDArray[Any]:
        """Node numbers whose level is ``level``, in node-number order."""
        return np.flatnonzero(self.level_sums == level)

    def between(self, low: int, high: int, level: int) -> Iterator[int]:
        """Nodes ``v`` with ``low <= v <= high`` componentwise and level ``level``, in order."""
        lo = [int(x) for x in self.all_levels[low]]
        hi = [int(x) for x in self.all_levels[high]]
        m = len(lo)
        suffix_hi = [0] * (m + 1)
        suffix_lo = [0] * (m + 1)
        for i in range(m - 1, -1, -1):
            suffix_hi[i] = suffix_hi[i + 1] + hi[i]
            suffix_lo[i] = suffix_lo[i + 1] + lo[i]

        def rec(i: int, remaining: int, acc: int) -> Iterator[int]:
            if i == m:
                if remaining == 0:
                    yield acc
                return
            start = max(lo[i], remaining - suffix_hi[i + 1])
            stop = min(hi[i], remaining - suffix_lo[i + 1])
            for a in range(start, stop + 1):
                step = (a - self._low_list[i]) * self._stride_list[i]
                yield from rec(i + 1, remaining - a, acc + step)

        yield from rec(0, level, 0)
