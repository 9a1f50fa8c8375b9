"""MDAV on records mixing numeric, nominal and ordinal attributes (the paper's Adult run).

One record distance over all types (docs/formulas.md §2; Domingo-Ferrer and Torra 2005):

    d(x, y)^2 = sum_numeric ((x_j - y_j) / S_j)^2
              + sum_nominal [x_j != y_j]
              + sum_ordinal o_j(x_j, y_j)^2

with numeric attributes standardized (population S_j), nominal attributes
compared 0/1 and the ordinal distance o_j(c, c') = |{c'' : min(c, c') <= c''
<= max(c, c')}| / |D_j| (the domain values between the two, inclusive, over
the domain size D_j) for c != c' and 0 for c = c' (a distance must vanish on
equal values; see docs/em4adom.md).

The centroid of a set of records is its numeric mean, the mode of each
nominal attribute (ties: the first value in the domain's order) and the lower
median of each ordinal attribute. Groups are aggregated the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.encoding import CategoricalColumn, category_distance
from anonlab.microaggregation.mdav import Distances, squared_distances


def mode_code(counts: NDArray[Any]) -> int:
    """The most frequent code (the lowest code among ties)."""
    return int(np.argmax(counts))


def lower_median_code(counts: NDArray[Any]) -> int:
    """The lower median code of a frequency vector over ordered codes."""
    total = int(counts.sum())
    return int(np.searchsorted(np.cumsum(counts), (total + 1) // 2))


class MixedSpace:
    """Working set of mixed records for :func:`anonlab.microaggregation.mdav.mdav_partition`.

    Distances are computed directly (no products), so they are exact in the
    sense of :mod:`anonlab.microaggregation.mdav`: ``err`` is 0.
    """

    def __init__(self, z: NDArray[Any], cats: Sequence[CategoricalColumn]) -> None:
        n = z.shape[0] if z.size else (cats[0].codes.size if cats else 0)
        self.zt = np.ascontiguousarray(np.asarray(z, dtype=np.float64).reshape(n, -1).T)
        self.cats = list(cats)
        self.codes = (
            np.stack([c.codes for c in cats], axis=1) if cats else np.zeros((n, 0), dtype=np.int64)
        )
        self.ids = np.arange(n)
        self.alive = np.ones(n, dtype=bool)
        self.total = self.zt.sum(axis=1)
        self.count = n
        self.counts = [np.bincount(c.codes, minlength=c.size) for c in cats]

    def _distance(self, num: NDArray[Any], codes: Sequence[int]) -> NDArray[Any]:
        d = squared_distances(self.zt, num)
        for j, col in enumerate(self.cats):
            part = category_distance(col, self.codes[:, j], codes[j])
            d += part * part
        return np.asarray(d)

    def _centroid(self) -> tuple[NDArray[Any], list[int]]:
        num = self.total / self.count
        codes = [
            lower_median_code(cnt) if col.ordinal else mode_code(cnt)
            for col, cnt in zip(self.cats, self.counts, strict=True)
        ]
        return num, codes

    def far_from_centroid(self) -> Distances:
        num, codes = self._centroid()
        d = self._distance(num, codes)
        return Distances(np.where(self.alive, d, -np.inf), 0.0, d.__getitem__)

    def from_row(self, i: int) -> tuple[Distances, Distances]:
        d = self._distance(self.zt[:, i].copy(), [int(v) for v in self.codes[i]])
        return (
            Distances(np.where(self.alive, d, -np.inf), 0.0, d.__getitem__),
            Distances(np.where(self.alive, d, np.inf), 0.0, d.__getitem__),
        )

    def near_row(self, i: int) -> Distances:
        return self.from_row(i)[1]

    def remove(self, rows: NDArray[Any]) -> None:
        self.alive[rows] = False
        self.count -= rows.size
        self.total = self.total - self.zt[:, rows].sum(axis=1)
        for j, col in enumerate(self.cats):
            self.counts[j] = self.counts[j] - np.bincount(self.codes[rows, j], minlength=col.size)

    def compact(self) -> None:
        keep = self.alive
        self.zt = np.ascontiguousarray(self.zt[:, keep])
        self.codes = self.codes[keep]
        self.ids = self.ids[keep]
        self.alive = np.ones(self.zt.shape[1], dtype=bool)
        self.total = self.zt.sum(axis=1)


def group_modes(codes: NDArray[Any], labels: NDArray[Any], size: int) -> NDArray[Any]:
    """Each record's group mode code (ties: lowest code), vectorized over groups."""
    groups = int(labels.max()) + 1
    table = np.bincount(labels * size + codes, minlength=groups * size).reshape(groups, size)
    return np.asarray(np.argmax(table, axis=1)[labels])


def group_lower_medians(codes: NDArray[Any], labels: NDArray[Any]) -> NDArray[Any]:
    """Each record's group lower-median code, vectorized over groups."""
    order = np.lexsort((codes, labels))
    sizes = np.bincount(labels)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    med = codes[order][starts + (sizes - 1) // 2]
    return np.asarray(med[labels])
