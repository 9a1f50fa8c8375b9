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

Two groups that release the same values are one group to the checker. The union of
groups with one mean has that mean. The union of groups with one median ``c`` has median
``c``: each part has at most half of its values below ``c`` and at most half above, so the
union has too; when the union's count is even and no value equals ``c``, every part is even
with ``c`` the mean of its two middles ``a_i <= c <= b_i``, ``a_i + b_i = 2c``, and the
union's middles ``max a_i`` and ``min b_i`` again add up to ``2c``.

For individual ranking (``onedims``) a union of groups of one column also keeps a trimmed
mean or a one-step value. Every aggregate here lies between its group's smallest and
largest value and the groups are runs of the sorted column, so groups that release one
value ``c`` are consecutive runs: the first has ``c`` as its largest value, the last as its
smallest, those between hold ``c`` alone. A trimmed mean equal to its group's largest value
keeps only ``c``s, so the first group has at most ``floor(m_1 trim)`` values below ``c``
and the last at most ``floor(m_2 trim)`` above; the union cuts ``floor(m trim) >=
floor(m_1 trim) + floor(m_2 trim)`` values off each end and keeps only ``c``s. A one-step
value equal to its group's largest value ``c`` has every clipped value at ``c``, so a value
below ``c`` is clipped up to it: the median is ``c`` and the MAD 0, and more than half of
the group is at ``c`` (likewise in the last group); the union then has more than half of
its values at ``c``, MAD 0, and every value clipped to ``c``.

Records of the methods that form groups on all columns at once (pca, rmd, clustpca,
influence) release the same values in every column only by coincidence; then a trimmed
mean or one-step value of the union may differ, and the checker reports it (a false
alarm, never a false pass).
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


def tolerance(aggregates: FloatArray, scale: FloatArray, column_scale: float) -> FloatArray:
    """The checker's tolerance: a relative 1e-9 of the group's scale plus 1e-12 of the
    column's mean absolute value (as the MDAV check)."""
    return np.asarray(1e-9 * np.maximum(np.abs(aggregates), scale) + 1e-12 * column_scale)
