"""An independent check of a microaggregated release, written apart from MDAV.

It sees only the original table, the release and the list of masked columns,
never the method's partition, encodings or centroids. A *group* is a set of
records with identical released values on every masked column; the release
holds when

* every group has at least ``k`` records;
* each numeric value is the mean of the group's original values, to a relative
  1e-9 of the group's mean absolute value (plus 1e-12 of the column's mean
  absolute value, for a group of zeros);
* each nominal value is a mode of the group's originals (any of tied modes);
* each ordinal value is the group's lower median: the value at sorted position
  ``ceil(m / 2)`` (1-based) of its ``m`` originals, i.e. the value ``c`` with
  ``#{x < c} < ceil(m / 2) <= #{x <= c}``;
* every other column equals the original, row by row.

Two groups the method formed apart may release identical values and are then
seen as one. That union still passes when both parts are right: the mean of a
union of groups with one mean is that mean; a value that is a mode of each
part has the largest count in the union too (its counts add up, and so do
every other value's); and a value ``c`` that is the lower median of parts of
sizes ``m_i`` (``p >= 2`` parts, ``m = sum m_i``) has ``#{x <= c} >= sum
ceil(m_i / 2) >= ceil(m / 2)`` and ``#{x < c} <= sum (ceil(m_i / 2) - 1) <=
m / 2 - p / 2 < ceil(m / 2)``, so it is the lower median of the union.

The ordinal order is the one the report gives, or else the natural order the
method uses: numeric when every value spells a finite number, else text order.

The methods other than MDAV (sdcMicro's ``onedims``, ``pca``, ``rmd``, ``clustpca``,
``influence``) are checked the same way with their aggregate (``aggr``: the group's mean,
median, trimmed mean or one-step value of its originals, :mod:`anonlab.verify.aggregates`)
and their strata: a group is then a set of records with identical released values and
identical strata values (strata are released unchanged, so a group never crosses them).
Individual ranking (``per_column``) forms groups in each column on its own: each column is
grouped by its released value (and the strata) alone, and every such group must have at
least ``k`` records and release the aggregate of its originals in that column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.verify.aggregates import AGGREGATES, group_aggregates, tolerance
from anonlab.verify.tables import (
    FloatArray,
    IntArray,
    ObjectArray,
    check_present,
    numeric_matrix,
    original_matrix,
    rows_of,
    shape_findings,
    stripped,
    unchanged_findings,
)

MEAN_RTOL = 1e-9
MEAN_ATOL = 1e-12  # times the column's mean absolute value


def check_microaggregation(
    original: pd.DataFrame,
    release: pd.DataFrame,
    k: int,
    *,
    numeric: Sequence[str] = (),
    nominal: Sequence[str] = (),
    ordinal: Sequence[str] = (),
    orders: Mapping[str, Sequence[str]] | None = None,
    aggr: str = "mean",
    trim: float = 0.0,
    per_column: bool = False,
    strata: Sequence[str] = (),
) -> list[str]:
    """Problems with ``release`` as a microaggregation of ``original`` (empty list: it holds).

    ``numeric``, ``nominal`` and ``ordinal`` name the masked columns;
    ``orders`` gives an ordinal column's values in order (default: natural
    order). ``aggr`` (and ``trim``) is the numeric columns' aggregate, ``per_column``
    says the groups are formed in each column on its own (individual ranking), ``strata``
    names the columns within whose values the groups were formed. See the module
    docstring for what is checked.
    """
    categorical = [*nominal, *ordinal]
    masked = [*numeric, *categorical]
    if not masked:
        raise AnonlabError("numeric, nominal and ordinal are all empty: name the masked columns")
    if aggr not in AGGREGATES:
        raise AnonlabError(f"unknown aggregate '{aggr}': choose {', '.join(AGGREGATES)}")
    if (aggr != "mean" or per_column) and categorical:
        raise AnonlabError("nominal and ordinal columns are microaggregated by MDAV only")
    check_present(original, [*masked, *strata], "input")
    problems = shape_findings(original, release)
    if problems:
        return problems
    problems += unchanged_findings(original, release, masked)
    released, problem = numeric_matrix(release, numeric, "release")
    if problem is not None:
        return [*problems, problem]
    x = original_matrix(original, numeric)
    if per_column:
        for j, name in enumerate(numeric):
            groups = released_groups(release, released[:, [j]], strata)
            sizes = np.bincount(groups)
            problems += [f"column '{name}': {p}" for p in size_findings(groups, sizes, k)]
            problems += aggregate_findings(
                x[:, [j]], released[:, [j]], groups, sizes, [name], aggr, trim
            )
        return problems
    groups = released_groups(release, released, [*categorical, *strata])
    sizes = np.bincount(groups)
    problems += size_findings(groups, sizes, k)
    if aggr == "mean":
        problems += mean_findings(x, released, groups, sizes, numeric)
    else:
        problems += aggregate_findings(x, released, groups, sizes, numeric, aggr, trim)
    for name in nominal:
        problems += mode_findings(stripped(original[name]), stripped(release[name]), groups, name)
    for name in ordinal:
        order = ordinal_order(stripped(original[name]), name, (orders or {}).get(name))
        problems += median_findings(
            stripped(original[name]), stripped(release[name]), groups, sizes, name, order
        )
    return problems


def released_groups(
    release: pd.DataFrame, numeric: FloatArray, categorical: Sequence[str]
) -> IntArray:
    """Group id (0, 1, ... in order of first row) of each record by its released values.

    Numeric values are compared as doubles (``-0.0`` equals ``0.0``),
    categorical ones as stripped text.
    """
    keys: list[NDArray[Any]] = [numeric[:, j] + 0.0 for j in range(numeric.shape[1])]
    keys += [stripped(release[name]) for name in categorical]
    group = np.zeros(len(release), dtype=np.int64)
    for key in keys:
        codes, uniques = pd.factorize(key)
        # both factors stay below the row count, so the product cannot overflow
        group, _ = pd.factorize(group * max(len(uniques), 1) + codes)
    return np.asarray(group, dtype=np.int64)


def size_findings(groups: IntArray, sizes: IntArray, k: int) -> list[str]:
    """A finding when some group has fewer than ``k`` records, naming the smallest."""
    small = np.flatnonzero(sizes < k)
    if not small.size:
        return []
    worst = int(small[np.argmin(sizes[small])])
    return [
        f"{small.size} group(s) of identical released values have fewer than k = {k} "
        f"records: e.g. the group of {rows_of(groups, worst)} has {int(sizes[worst])} "
        f"record{'s' if sizes[worst] > 1 else ''}"
    ]


def _first_rows(groups: IntArray, count: int) -> IntArray:
    """The first row of each group (groups are numbered by first appearance)."""
    first = np.full(count, -1, dtype=np.int64)
    order = np.arange(groups.size - 1, -1, -1)
    first[groups[order]] = order  # later writes (earlier rows) win
    return first


def mean_findings(
    x: FloatArray, y: FloatArray, groups: IntArray, sizes: IntArray, names: Sequence[str]
) -> list[str]:
    """Findings for numeric columns whose released value is not the group mean.

    Mean ``sum_g x / m_g``; tolerance ``1e-9 * max(|mean|, mean |x|) + 1e-12 *
    (mean |x| over the column)``.
    """
    problems = []
    first = _first_rows(groups, sizes.size)
    for j, name in enumerate(names):
        means = np.bincount(groups, weights=x[:, j]) / sizes
        scale = np.bincount(groups, weights=np.abs(x[:, j])) / sizes
        tol = MEAN_RTOL * np.maximum(np.abs(means), scale) + MEAN_ATOL * np.abs(x[:, j]).mean()
        got = y[first, j]
        bad = np.flatnonzero(np.abs(got - means) > tol)
        if bad.size:
            g = int(bad[0])
            problems.append(
                f"column '{name}': the group of {rows_of(groups, g)} releases {float(got[g])!r}, "
                f"but the mean of its {int(sizes[g])} original values is {float(means[g])!r}"
                + (f" ({bad.size} groups differ)" if bad.size > 1 else "")
            )
    return problems


def aggregate_findings(
    x: FloatArray,
    y: FloatArray,
    groups: IntArray,
    sizes: IntArray,
    names: Sequence[str],
    aggr: str,
    trim: float,
) -> list[str]:
    """Findings for numeric columns whose released value is not the group's aggregate
    (:func:`anonlab.verify.aggregates.group_aggregates`; the tolerance of
    :func:`mean_findings`)."""
    problems = []
    first = _first_rows(groups, sizes.size)
    for j, name in enumerate(names):
        wanted = group_aggregates(x[:, j], groups, sizes, aggr, trim)
        scale = np.bincount(groups, weights=np.abs(x[:, j])) / sizes
        tol = tolerance(wanted, scale, float(np.abs(x[:, j]).mean()))
        got = y[first, j]
        bad = np.flatnonzero(~(np.abs(got - wanted) <= tol))
        if bad.size:
            g = int(bad[0])
            problems.append(
                f"column '{name}': the group of {rows_of(groups, g)} releases {float(got[g])!r}, "
                f"but the {aggr} of its {int(sizes[g])} original values is {float(wanted[g])!r}"
                + (f" ({bad.size} groups differ)" if bad.size > 1 else "")
            )
    return problems


def mode_findings(
    before: ObjectArray, after: ObjectArray, groups: IntArray, name: str
) -> list[str]:
    """A finding when a group's released nominal value is not a mode of its originals."""
    n = before.size
    codes, uniques = pd.factorize(np.concatenate([before, after]))
    orig, rel = codes[:n], codes[n:]
    size = max(len(uniques), 1)
    count = groups.max() + 1
    held = np.bincount(groups, weights=(orig == rel), minlength=count)
    pairs, pair_counts = np.unique(groups * size + orig, return_counts=True)
    best = np.zeros(count)
    np.maximum.at(best, pairs // size, pair_counts)
    bad = np.flatnonzero(held < best)
    if not bad.size:
        return []
    g = int(bad[0])
    mine = pairs // size == g
    mode = uniques[int(pairs[mine][np.argmax(pair_counts[mine])] % size)]
    value = after[int(np.argmax(groups == g))]
    return [
        f"column '{name}': the group of {rows_of(groups, g)} releases '{value}', held by "
        f"{int(held[g])} of its originals, but '{mode}' is held by {int(best[g])}: not a "
        "mode" + (f" ({bad.size} groups differ)" if bad.size > 1 else "")
    ]


def _number(value: str) -> float | None:
    """The finite number ``value`` spells, or None."""
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def ordinal_order(before: ObjectArray, name: str, given: Sequence[str] | None) -> list[str]:
    """The ordered domain: ``given`` (stripped), else numeric order if all values are numbers.

    Natural order sorts the distinct values (in order of first appearance) by
    their number when every one spells a finite number, else as text.
    """
    present = [str(v) for v in pd.unique(before)]
    if given is not None:
        order = [str(v).strip() for v in given]
        outside = [v for v in present if v not in set(order)]
        if outside:
            raise AnonlabError(
                f"value '{outside[0]}' of ordinal column '{name}' in the input "
                "is not in its order: give the order the release was made with"
            )
        return order
    if all(_number(v) is not None for v in present):
        return sorted(present, key=float)
    return sorted(present)


def median_findings(
    before: ObjectArray,
    after: ObjectArray,
    groups: IntArray,
    sizes: IntArray,
    name: str,
    order: Sequence[str],
) -> list[str]:
    """Findings when a group's released ordinal value is not its lower median.

    ``c`` is the lower median of ``m`` values when ``#{x < c} < ceil(m / 2) <=
    #{x <= c}``.
    """
    rank = {v: i for i, v in enumerate(order)}
    unknown = [i for i, v in enumerate(after) if v not in rank]
    if unknown:
        row = unknown[0]
        return [
            f"column '{name}' row {row + 1} releases '{after[row]}', which is not a value "
            "of the input's ordinal domain"
        ]
    orig = np.fromiter((rank[v] for v in before), dtype=np.int64, count=before.size)
    rel = np.fromiter((rank[v] for v in after), dtype=np.int64, count=after.size)
    half = (sizes + 1) // 2
    below = np.bincount(groups, weights=orig < rel, minlength=sizes.size)
    upto = np.bincount(groups, weights=orig <= rel, minlength=sizes.size)
    bad = np.flatnonzero((below >= half) | (upto < half))
    if not bad.size:
        return []
    g = int(bad[0])
    mine = np.sort(orig[groups == g])
    median = order[int(mine[(mine.size - 1) // 2])]
    value = after[int(np.argmax(groups == g))]
    return [
        f"column '{name}': the group of {rows_of(groups, g)} releases '{value}', but the "
        f"lower median of its {int(sizes[g])} originals is '{median}'"
        + (f" ({bad.size} groups differ)" if bad.size > 1 else "")
    ]
