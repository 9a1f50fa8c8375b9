"""Fixed-size groups of sorted records and their aggregates (sdcMicro's ``measure``).

The microaggregation methods other than MDAV (:mod:`anonlab.microaggregation.methods`)
put the records of a stratum in an order and cut that order into groups: with ``n``
records and group size ``k``, ``floor(n / k) - 1`` groups of ``k`` consecutive records
and a last group of the ``k + n mod k`` records left (``k``..``2k - 1``). Every record
then releases its group's aggregate, column by column (docs/microaggregation.md):

- ``mean``: the arithmetic mean, summed in extended precision (``np.longdouble``) in the
  group's order and divided there, then rounded once to a double, as R's ``colMeans``;
- ``median``: the middle value, or the mean of the two middle values of an even group;
- ``trim``: the trimmed mean of R's ``mean(x, trim)``: with ``m`` values, drop the
  ``floor(m * trim)`` smallest and as many largest (``trim`` >= 0.5: the median), and
  take the mean with R's second pass ``s + sum(x - s) / m`` (Neely 1966);
- ``onestep``: each value clipped to ``median +- (3 / 1.486) * MAD`` of its group
  (MAD = 1.4826 * median |x - median|, R's ``mad``), then the mean of the clipped values
  (a one-step Huber-type estimate; Templ 2008, Transactions on Data Privacy 1(2)).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError

Aggregate = Literal["mean", "median", "trim", "onestep"]
AGGREGATES: tuple[str, ...] = ("mean", "median", "trim", "onestep")
MAD_CONSTANT = 1.4826  # R's mad(): consistent for the normal's standard deviation
ONESTEP_CONSTANT = 3 / 1.486  # sdcMicro's clipping bound, in MADs


def group_count(n: int, k: int) -> int:
    """The number of groups of ``n`` ordered records: ``floor(n / k)`` (at least k records)."""
    if n < k:
        raise AnonlabError(f"{n} record(s) cannot form a group of k = {k}", parameter="k")
    return n // k


def fixed_labels(n: int, k: int) -> NDArray[np.int64]:
    """The group (0, 1, ...) of each position of ``n`` ordered records: ``k`` per group, the
    last group taking the ``n mod k`` records left over."""
    groups = group_count(n, k)
    return np.minimum(np.arange(n, dtype=np.int64) // k, groups - 1)


def _sum_in_order(blocks: NDArray[Any]) -> NDArray[Any]:
    """Sums over axis 1 of ``blocks`` (g, s, p) in extended precision, one term after the other."""
    total = blocks[:, 0, :].astype(np.longdouble)
    for j in range(1, blocks.shape[1]):
        total += blocks[:, j, :]
    return total


def _mean(blocks: NDArray[Any]) -> NDArray[np.float64]:
    """R's ``colMeans``: the extended-precision sum divided by the count, rounded once."""
    return np.asarray(_sum_in_order(blocks) / blocks.shape[1], dtype=np.float64)


def _refined_mean(blocks: NDArray[Any]) -> NDArray[np.float64]:
    """R's ``mean``: the extended mean ``s``, corrected by ``sum(x - s) / m`` (second pass)."""
    m = blocks.shape[1]
    s = _sum_in_order(blocks) / m
    t = (blocks[:, 0, :] - s).astype(np.longdouble)
    for j in range(1, m):
        t += blocks[:, j, :] - s
    refined = np.where(np.isfinite(s), s + t / m, s)
    return np.asarray(refined, dtype=np.float64)


def _median_sorted(ordered: NDArray[Any]) -> NDArray[np.float64]:
    """The median over axis 1 of values sorted along it (two middles: their mean)."""
    m = ordered.shape[1]
    if m % 2:
        return np.asarray(ordered[:, m // 2, :], dtype=np.float64)
    low = ordered[:, m // 2 - 1, :].astype(np.longdouble)
    return np.asarray((low + ordered[:, m // 2, :]) / 2, dtype=np.float64)


def _onestep(blocks: NDArray[Any]) -> NDArray[np.float64]:
    """The mean of the values clipped to ``median +- ONESTEP_CONSTANT * MAD`` (module text)."""
    centre = _median_sorted(np.sort(blocks, axis=1))
    spread = MAD_CONSTANT * _median_sorted(np.sort(np.abs(blocks - centre[:, None, :]), axis=1))
    upper = centre + ONESTEP_CONSTANT * spread
    lower = centre - ONESTEP_CONSTANT * spread
    clipped = np.minimum(np.maximum(blocks, lower[:, None, :]), upper[:, None, :])
    return _mean(clipped)


def aggregate_blocks(blocks: NDArray[Any], aggregate: str, trim: float) -> NDArray[np.float64]:
    """The aggregate of each group of ``blocks`` (groups, size, columns) by column."""
    if aggregate == "mean":
        return _mean(blocks)
    if aggregate == "median":
        return _median_sorted(np.sort(blocks, axis=1))
    if aggregate == "trim":
        m = blocks.shape[1]
        if trim >= 0.5:
            return _median_sorted(np.sort(blocks, axis=1))
        if trim <= 0:
            return _refined_mean(blocks)
        low = math.floor(m * trim)
        return _refined_mean(np.sort(blocks, axis=1)[:, low : m - low, :])
    if aggregate == "onestep":
        return _onestep(blocks)
    raise AnonlabError(
        f"unknown aggr '{aggregate}': choose {', '.join(AGGREGATES)}", parameter="aggr"
    )


def ordered_aggregates(
    ordered: NDArray[Any], k: int, aggregate: str, trim: float = 0.0, *, refined: bool = False
) -> NDArray[np.float64]:
    """Each row of ``ordered`` (n, p), cut into fixed groups (:func:`fixed_labels`), replaced
    by its group's aggregate. ``refined`` takes R's ``mean`` for ``mean`` (sdcMicro's
    one-variable path) instead of ``colMeans``."""
    n = ordered.shape[0]
    values = fixed_group_aggregates(ordered, k, aggregate, trim, refined=refined)
    return np.repeat(values, group_sizes(n, k), axis=0)


def group_sizes(n: int, k: int) -> NDArray[np.int64]:
    """The sizes of the fixed groups of ``n`` ordered records (:func:`fixed_labels`): ``k``
    each, the last ``k + n mod k``."""
    sizes = np.full(group_count(n, k), k, dtype=np.int64)
    sizes[-1] += n % k
    return sizes


def fixed_group_aggregates(
    ordered: NDArray[Any],
    k: int,
    aggregate: str,
    trim: float = 0.0,
    *,
    refined: bool = False,
    transposed: bool = False,
) -> NDArray[np.float64]:
    """The aggregate of each fixed group (:func:`fixed_labels`) of ``ordered`` (n, p), by
    column: one row per group. ``refined`` as in :func:`ordered_aggregates`.
    ``transposed``: ``ordered`` is (p, n), one sorted column a row; its groups are then
    taken as views (no copy), the same values in the same order of summation."""
    columns = ordered.T if transposed else ordered
    n, p = columns.shape
    groups = group_count(n, k)
    regular = (groups - 1) * k
    out = np.empty((groups, p), dtype=np.float64)
    how, cut = ("trim", 0.0) if refined and aggregate == "mean" else (aggregate, trim)
    if regular:
        blocks = (
            ordered[:, :regular].reshape(p, groups - 1, k).transpose(1, 2, 0)
            if transposed
            else ordered[:regular].reshape(groups - 1, k, p)
        )
        out[:-1] = aggregate_blocks(blocks, how, cut)
    out[-1] = aggregate_blocks(columns[regular:][None], how, cut)[0]
    return out
