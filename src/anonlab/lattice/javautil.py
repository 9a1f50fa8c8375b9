"""Java's random numbers and priority queue, in Python, so the heuristic searches replay ARX.

ARX's heuristic searches are deterministic given their inputs only through these two
pieces of the Java library: the genetic search draws from ``java.util.Random`` (seeded with
``0xDEADBEEF`` in its deterministic mode), and the Lightning searches keep their frontier in a
``java.util.PriorityQueue``, whose order among equal keys is that of its binary heap. Both are
specified by their Java documentation and reproduced here from those specifications:

* :class:`JavaRandom`: the 48-bit linear congruential generator of ``java.util.Random``
  (multiplier ``0x5DEECE66D``, increment ``0xB``; Knuth, TAOCP vol. 2, §3.2.1), with its
  ``nextInt(bound)`` rejection rule and its 53-bit ``nextDouble``;
* :func:`shuffle`: ``java.util.Collections.shuffle(list, rnd)`` (swaps from the end);
* :class:`EnumeratedSampler`: Apache Commons Math 3.6's ``EnumeratedDistribution.sample``
  (cumulative probabilities of the normalized weights, a binary search as
  ``java.util.Arrays.binarySearch`` does it);
* :class:`JavaPriorityQueue`: ``java.util.PriorityQueue`` with a comparator (array heap,
  ``siftUp``/``siftDown``, ``remove(Object)`` of the first equal element in array order).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")

_MULTIPLIER = 0x5DEECE66D
_ADDEND = 0xB
_MASK = (1 << 48) - 1


def _int32(value: int) -> int:
    """A Python integer wrapped to Java's 32-bit ``int``."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class JavaRandom:
    """``java.util.Random`` with a given seed (a Java ``long``)."""

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ _MULTIPLIER) & _MASK

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * _MULTIPLIER + _ADDEND) & _MASK
        return _int32(self._seed >> (48 - bits))

    def next_int(self, bound: int) -> int:
        """``nextInt(bound)``: uniform in ``[0, bound)``."""
        if bound <= 0:
            raise ValueError("bound must be positive")
        r = self._next(31)
        m = bound - 1
        if bound & m == 0:  # a power of two
            return _int32((bound * r) >> 31)
        u = r
        r = u % bound
        while _int32(u - r + m) < 0:
            u = self._next(31)
            r = u % bound
        return r

    def next_double(self) -> float:
        """``nextDouble()``: 53 random bits in ``[0, 1)``."""
        return ((self._next(26) << 27) + self._next(27)) * 2.0**-53


def java_round(value: float) -> int:
    """``Math.round(double)``: the closest integer, halves rounded up."""
    return math.floor(value + 0.5)


def shuffle(items: list[T], rnd: JavaRandom) -> None:
    """``Collections.shuffle(list, rnd)`` in place."""
    for i in range(len(items), 1, -1):
        j = rnd.next_int(i)
        items[i - 1], items[j] = items[j], items[i - 1]


def _double_bits(x: float) -> int:
    return int(struct.unpack(">q", struct.pack(">d", x))[0])


def binary_search(values: Sequence[float], key: float) -> int:
    """``java.util.Arrays.binarySearch(double[], double)``: an index of ``key``, or
    ``-(insertion point) - 1``."""
    low, high = 0, len(values) - 1
    while low <= high:
        mid = (low + high) >> 1
        mid_val = values[mid]
        if mid_val < key:
            low = mid + 1
        elif mid_val > key:
            high = mid - 1
        else:
            mid_bits, key_bits = _double_bits(mid_val), _double_bits(key)
            if mid_bits == key_bits:
                return mid
            if mid_bits < key_bits:
                low = mid + 1
            else:
                high = mid - 1
    return -(low + 1)


class EnumeratedSampler(Generic[T]):
    """Commons Math's ``EnumeratedDistribution`` over ``items`` with ``weights`` (not
    normalized), sampling with a :class:`JavaRandom`."""

    def __init__(self, rnd: JavaRandom, items: Sequence[T], weights: Sequence[float]) -> None:
        if any(w < 0 or math.isinf(w) or math.isnan(w) for w in weights):
            raise ValueError("weights must be finite and not negative")
        total = 0.0
        for w in weights:
            total += w
        if total == 0.0:
            raise ValueError("weights sum to zero")
        self._rnd = rnd
        self._items = list(items)
        self._cumulative: list[float] = []
        running = 0.0
        for w in weights:
            running += w * 1.0 / total  # MathArrays.normalizeArray(values, 1.0)
            self._cumulative.append(running)

    def sample(self) -> T:
        """One draw (``EnumeratedDistribution.sample``)."""
        value = self._rnd.next_double()
        index = binary_search(self._cumulative, value)
        if index < 0:
            index = -index - 1
        if 0 <= index < len(self._cumulative) and value < self._cumulative[index]:
            return self._items[index]
        return self._items[-1]  # rounding: the last item, as Commons Math does


class JavaPriorityQueue(Generic[T]):
    """``java.util.PriorityQueue`` with a comparator (negative: first argument first)."""

    def __init__(self, compare: Callable[[T, T], int]) -> None:
        self._compare = compare
        self._queue: list[T] = []

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, item: T) -> None:
        """``offer``: append and sift up."""
        self._queue.append(item)
        self._sift_up(len(self._queue) - 1, item)

    def poll(self) -> T | None:
        """Remove and return the head (``None`` when empty)."""
        q = self._queue
        if not q:
            return None
        head = q[0]
        last = q.pop()
        if q:
            self._sift_down(0, last)
        return head

    def remove(self, item: T) -> bool:
        """Remove the first element equal to ``item`` in array order (``remove(Object)``)."""
        for i, x in enumerate(self._queue):
            if x == item:
                self._remove_at(i)
                return True
        return False

    def _remove_at(self, i: int) -> None:
        q = self._queue
        s = len(q) - 1
        if s == i:
            q.pop()
            return
        moved = q.pop()
        self._sift_down(i, moved)
        if q[i] == moved:  # not sifted down (a smaller element would differ)
            self._sift_up(i, moved)

    def _sift_up(self, k: int, x: T) -> None:
        q, cmp = self._queue, self._compare
        while k > 0:
            parent = (k - 1) >> 1
            e = q[parent]
            if cmp(x, e) >= 0:
                break
            q[k] = e
            k = parent
        q[k] = x

    def _sift_down(self, k: int, x: T) -> None:
        q, cmp = self._queue, self._compare
        n = len(q)
        half = n >> 1
        while k < half:
            child = 2 * k + 1
            c = q[child]
            right = child + 1
            if right < n and cmp(c, q[right]) > 0:
                child = right
                c = q[child]
            if cmp(x, c) <= 0:
                break
            q[k] = c
            k = child
        q[k] = x
