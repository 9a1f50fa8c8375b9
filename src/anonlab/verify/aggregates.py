"""Group aggregates for the microaggregation checker, computed apart from the methods.

:func:`anonlab.verify.microaggregation.check_microaggregation` groups a release by its
released values and asks whether each group's released value is the aggregate of its
original values. This module gives those aggregates from the original values and the
groups alone (never the method's order or code), by column:

- ``mean``: ``sum x / m``;
- ``median``: the middle of the ``m`` sorted values (the mean of the two middles when
  ``m`` is even);
- ``trim``: with ``c = floor(m * trim)``, the mean of the sorted values at positions
  ``c + 1 .. m - c`` (the median when ``trim >= 0.5``);
- ``onestep``: the mean of the values clipped to ``median +- (3 / 1.486) * MAD``,
  ``MAD = 1.4826 * median |x - median|``.

Two groups of one column that release the same value are one group to the checker. The
union of groups with one mean has that mean, and so has the union of groups with one
median, but a trimmed mean or a one-step value need not carry over to the union.
:func:`split_findings` therefore gives such a group a second chance when the method ranks
each column on its own (``onedims``): its groups are runs of consecutive values of the
column sorted, so a union of them is the sorted values cut into consecutive runs of ``k``
to ``2k - 1`` values; the union holds when such a cut exists whose every run has the
released value as its aggregate (a search over the cut points, run only on the groups
that fail).
"""

from __future__ import annotations

import numpy as np

from anonlab.verify.tables import FloatArray, IntArray

MAD_CONSTANT = 1.4826
CLIP_CONSTANT = 3 / 1.486
AGGREGATES = ("mean", "median", "trim", "onestep")


def _sorted_by_group(x: FloatArray, groups: IntArray) -> tuple[FloatArray, IntArray]:
    """``x`` sorted by group, then by value; and each group's first position."""
    order = np.lexsort((x, groups))
    sizes = np.bincount(groups)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return np.asarray(x[order]), starts


def group_medians(x: FloatArray, groups: IntArray, sizes: IntArray) -> FloatArray:
    """Each group's median (two middles: their mean)."""
    ordered, starts = _sorted_by_group(x, groups)
    low = ordered[starts + (sizes - 1) // 2]
    high = ordered[starts + sizes // 2]
    return np.asarray(low + (high - low) / 2)


def group_trimmed(x: FloatArray, groups: IntArray, sizes: IntArray, trim: float) -> FloatArray:
    """Each group's trimmed mean: ``floor(m * trim)`` values off each end (module text)."""
    if trim >= 0.5:
        return group_medians(x, groups, sizes)
    ordered, starts = _sorted_by_group(x, groups)
    cut = np.floor(sizes * trim).astype(np.int64)
    in_group = np.repeat(np.arange(sizes.size), sizes)
    position = np.arange(x.size) - starts[in_group]
    keep = (position >= cut[in_group]) & (position < (sizes - cut)[in_group])
    sums = np.bincount(in_group, weights=np.where(keep, ordered, 0.0), minlength=sizes.size)
    return np.asarray(sums / (sizes - 2 * cut))


def group_onestep(x: FloatArray, groups: IntArray, sizes: IntArray) -> FloatArray:
    """Each group's mean of its values clipped to median +- (3 / 1.486) MAD (module text)."""
    centre = group_medians(x, groups, sizes)
    spread = MAD_CONSTANT * group_medians(np.abs(x - centre[groups]), groups, sizes)
    upper = (centre + CLIP_CONSTANT * spread)[groups]
    lower = (centre - CLIP_CONSTANT * spread)[groups]
    clipped = np.minimum(np.maximum(x, lower), upper)
    return np.asarray(np.bincount(groups, weights=clipped, minlength=sizes.size) / sizes)


def group_aggregates(
    x: FloatArray, groups: IntArray, sizes: IntArray, aggr: str, trim: float
) -> FloatArray:
    """Each group's aggregate of the original values ``x`` (module text)."""
    if aggr == "mean":
        return np.asarray(np.bincount(groups, weights=x, minlength=sizes.size) / sizes)
    if aggr == "median":
        return group_medians(x, groups, sizes)
    if aggr == "trim":
        return group_trimmed(x, groups, sizes, trim)
    if aggr == "onestep":
        return group_onestep(x, groups, sizes)
    raise ValueError(f"unknown aggregate '{aggr}'")


def _aggregate(values: FloatArray, aggr: str, trim: float) -> float:
    """The aggregate of one run of values."""
    groups = np.zeros(values.size, dtype=np.int64)
    sizes = np.asarray([values.size], dtype=np.int64)
    return float(group_aggregates(values, groups, sizes, aggr, trim)[0])


def splits_into_runs(
    values: FloatArray, target: float, k: int, aggr: str, trim: float, tol: float
) -> bool:
    """Whether the sorted ``values`` cut into consecutive runs of ``k``..``2k - 1`` values,
    each with aggregate ``target`` (within ``tol``)."""
    ordered = np.sort(values)
    m = ordered.size
    reachable = np.zeros(m + 1, dtype=bool)
    reachable[0] = True
    for start in range(m):
        if not reachable[start]:
            continue
        for size in range(k, min(2 * k - 1, m - start) + 1):
            end = start + size
            if not reachable[end] and abs(_aggregate(ordered[start:end], aggr, trim) - target) <= (
                tol
            ):
                reachable[end] = True
    return bool(reachable[m])


def tolerance(aggregates: FloatArray, scale: FloatArray, column_scale: float) -> FloatArray:
    """The checker's tolerance: a relative 1e-9 of the group's scale plus 1e-12 of the
    column's mean absolute value (as the MDAV check)."""
    return np.asarray(1e-9 * np.maximum(np.abs(aggregates), scale) + 1e-12 * column_scale)
