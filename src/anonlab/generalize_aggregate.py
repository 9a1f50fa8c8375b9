"""Microaggregation of numeric quasi-identifiers inside the classes of a release
(``generalize --aggregate-qi age=mean``; docs/generalization.md, "Aggregated
quasi-identifiers").

ARX 3.9 lets a quasi-identifier carry a microaggregation function
(``DataDefinition.setMicroAggregationFunction(attribute, function, true)``, the function
one of ``AttributeType.MicroAggregationFunction``): the column still takes part in the
search through its hierarchy, and once the transformation is chosen every record of an
equivalence class gets, in that column, one value computed from the class's original
values instead of the hierarchy's label. The classes are those of the release *before*
the replacement (the generalized values of every quasi-identifier, ARX's
``HashGroupify.performMicroaggregation``); a suppressed record keeps ``*`` in the column
as in every other quasi-identifier. Here the same runs after any recoding: full-domain,
local recoding, Mondrian (whose numeric range of a partition is then replaced).

The functions (``x_1 .. x_n`` the class's original values that are not missing):

- ``mean``: the arithmetic mean ``m = sum(x_i) / n``, computed in two passes as Commons
  Math's weighted ``Mean`` does, over the class's distinct values ``v`` and their counts
  ``c_v``: ``m = sum(c_v v) / n``, then ``m + sum(c_v (v - m)) / n`` (every function here is
  computed from such counts, :func:`class_aggregates`, so that an engine's pieces can count
  them apart and merge them);
- ``geometric``: ``exp(sum(log(x_i + 1)) / n) - 1`` (ARX shifts every value by 1 so that a
  0 is allowed; values must be above -1);
- ``median``: the middle value in numeric order, or the mean of the two middle ones when
  ``n`` is even;
- ``mode``: the most frequent value, released as written in the table; of several, the one
  ARX finds first: ARX numbers a column's values in the order they first appear in the
  table and keeps a class's values in an open-addressing hash table of those numbers
  (``Distribution``), which its mode scans slot by slot (:func:`arx_bucket_order`);
- ``interval``: ``[min, max]``, also when ``min = max`` (as ARX writes it).

A column whose values are all integers gets integer results, rounded half up as Java's
``Math.round`` (ARX's ``ARXInteger.fromDouble``); any other numeric column decimal ones,
written as Java's ``Double.toString`` writes them (``38.0``, ``1.5E-4``).

A missing value (an empty cell; ARX's ``NULL``) is treated as ARX 3.9.2 treats it, which
was checked by running ARX on a small table: ``mean`` and ``geometric`` leave it out (ARX's
``ignoreMissingData``, its default), or with ``missing="zero"`` count it as 0 (ARX's
``ignoreMissingData = false``); the flag changes nothing else. ``median`` counts it as a
value after every number, so a class whose middle value is missing is released missing
(ARX stops with a ``NullPointerException`` when one of two middle values is missing; here
the class is released missing too); ``mode`` counts it as a value like any other, so it
may be the mode; ``interval`` leaves it out. A class with no value left is released
missing (empty).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.engine import kernels
from anonlab.errors import AnonlabError
from anonlab.hierarchy import SUPPRESSED

__all__ = [
    "AGGREGATE_FUNCTIONS",
    "MISSING_RULES",
    "ClassHistogram",
    "PieceCounts",
    "aggregate_classes",
    "aggregates_on_engine",
    "check_aggregate_qi",
    "class_aggregates",
    "count_piece",
    "java_double_text",
    "write_parts",
    "write_piece",
]

#: the aggregate functions by name, with ARX's name of each
AGGREGATE_FUNCTIONS: dict[str, str] = {
    "mean": "arithmetic mean",
    "geometric": "geometric mean",
    "median": "median",
    "mode": "mode",
    "interval": "interval",
}
#: how a missing value enters ``mean`` and ``geometric``: left out (ARX's default) or as 0
MISSING_RULES = ("ignore", "zero")

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


def check_aggregate_qi(
    aggregate_qi: Mapping[str, str], qis: Iterable[str], missing: str = "ignore"
) -> dict[str, str]:
    """``aggregate_qi`` checked: each key a quasi-identifier, each value a function name of
    :data:`AGGREGATE_FUNCTIONS`; ``missing`` one of :data:`MISSING_RULES`."""
    names = list(qis)
    for column, function in aggregate_qi.items():
        if column not in names:
            raise AnonlabError(
                f"aggregate_qi names '{column}', which is not a quasi-identifier "
                f"(qi: {', '.join(names)})",
                parameter="aggregate_qi",
            )
        if function not in AGGREGATE_FUNCTIONS:
            raise AnonlabError(
                f"aggregate_qi {column}={function}: choose one of "
                f"{', '.join(AGGREGATE_FUNCTIONS)} (e.g. {column}=mean)",
                parameter="aggregate_qi",
            )
    if missing not in MISSING_RULES:
        raise AnonlabError(
            f"aggregate_missing '{missing}' is unknown: choose ignore or zero",
            parameter="aggregate_missing",
        )
    return dict(aggregate_qi)


def aggregate_classes(
    release: pd.DataFrame,
    original: pd.DataFrame,
    qis: Sequence[str],
    aggregate_qi: Mapping[str, str],
    *,
    missing: str = "ignore",
) -> pd.DataFrame:
    """``release`` with each column of ``aggregate_qi`` replaced by its class's aggregate.

    ``release`` holds the generalized labels of every quasi-identifier ``qis`` (a class is
    one combination of them; a record with ``*`` in all of them is suppressed and keeps
    ``*``); ``original`` the same records, in the same order, as the table held them.
    An aggregated column is one of ``qis`` (ARX's clustering: generalized, then aggregated)
    or any other column of the release (a quasi-identifier not generalized, aggregated in
    the classes of ``qis``: ARX's microaggregation without clustering). The new columns are
    categoricals of texts (module text).
    """
    check_aggregate_qi(aggregate_qi, list(release.columns), missing)
    if len(release) != len(original):
        raise AnonlabError(
            f"the release has {len(release)} records and the table {len(original)}: "
            "they cannot be aggregated together"
        )
    classes, suppressed = release_classes(release, qis)
    out = release.copy(deep=False)
    for column, function in aggregate_qi.items():
        out[column] = _aggregated(
            _texts(original[column]), classes, suppressed, function, missing, column
        )
    return out


def release_classes(release: pd.DataFrame, qis: Sequence[str]) -> tuple[IntArray, NDArray[Any]]:
    """Each record's class (0, 1, ... in order of first record) and the suppressed records
    (``*`` in every quasi-identifier)."""
    group = np.zeros(len(release), dtype=np.int64)
    suppressed = np.ones(len(release), dtype=bool)
    for column in qis:
        codes, uniques = pd.factorize(release[column].astype(str), use_na_sentinel=False)
        star = np.flatnonzero(np.asarray(uniques) == SUPPRESSED)
        suppressed &= np.isin(codes, star)
        group, _ = pd.factorize(group * max(len(uniques), 1) + codes)
    return np.asarray(group, dtype=np.int64), suppressed


def _texts(column: pd.Series) -> NDArray[Any]:
    """The column's values as texts, a missing value as ``''``."""
    return np.asarray(column.astype(str).where(column.notna(), "").to_numpy(), dtype=object)


def _aggregated(
    texts: NDArray[Any],
    classes: IntArray,
    suppressed: NDArray[Any],
    function: str,
    missing: str,
    column: str,
) -> pd.Categorical:
    """One released column: each class's aggregate on its records, ``*`` where suppressed."""
    inverse_codes, uniques = pd.factorize(texts.astype(str))  # numbered as they first appear
    inverse = np.asarray(inverse_codes, dtype=np.int64)
    keep = ~suppressed
    rows_class = classes[keep]
    n_classes = int(classes.max()) + 1 if len(classes) else 0
    width = max(len(uniques), 1)
    pairs, first_row, counts = np.unique(
        rows_class * width + inverse[keep], return_index=True, return_counts=True
    )
    histogram = ClassHistogram(
        distinct=np.asarray(uniques, dtype=object),
        cls=pairs // width,
        code=pairs % width,
        count=np.asarray(counts, dtype=np.int64),
        first=np.asarray(first_row, dtype=np.int64),
        n_classes=n_classes,
    )
    texts_out = class_aggregates(histogram, function, missing, column)
    labels = [*texts_out, SUPPRESSED]
    codes = np.full(len(classes), len(texts_out), dtype=np.int64)
    codes[keep] = rows_class
    categories, remap = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    return pd.Categorical.from_codes(
        remap[codes].astype(np.int32), categories=pd.Index(categories.tolist())
    )


@dataclass(frozen=True)
class ClassHistogram:
    """A column's original values counted by class: what every aggregate is a function of,
    and what a pass over a table's pieces can count piece by piece and merge
    (:func:`aggregates_on_engine`).

    ``distinct`` are the column's texts (a missing value ``''``) numbered in the order they
    first appear in the table, every record counted, the suppressed ones too (ARX's
    dictionary codes); one entry per (class, value) pair of the records not suppressed:
    ``cls`` the class (0 .. ``n_classes - 1``), ``code`` the value's number, ``count`` its
    records in the class and ``first`` a number that orders the pairs of a class as their
    first records appear in the table (a row number).
    """

    distinct: NDArray[Any]
    cls: IntArray
    code: IntArray
    count: IntArray
    first: IntArray
    n_classes: int


def class_aggregates(
    histogram: ClassHistogram, function: str, missing: str, column: str
) -> list[str]:
    """The aggregate of every class of ``histogram`` as text (``''`` for a class with no
    value counted), by the rules of the module text. The pairs are taken in the order
    (class, value number), so the result depends on the counts alone, not on the order in
    which the records were read."""
    distinct = histogram.distinct
    present = np.array([str(t).strip() != "" for t in distinct], dtype=bool)
    order = np.lexsort((histogram.code, histogram.cls))
    cls, code = histogram.cls[order], histogram.code[order]
    count, first = histogram.count[order], histogram.first[order]
    n_classes = histogram.n_classes
    if function == "mode":
        return _modes(cls, code, count, first, distinct, n_classes)
    numbers, integer = _numbers(distinct, present, column, function)
    pair_present = present[code] if len(code) else np.zeros(0, dtype=bool)
    if function in ("mean", "geometric") and missing == "zero":
        values = np.where(pair_present, numbers[code], 0.0)
        counted = np.ones(len(cls), dtype=bool)
    elif function == "median":  # a missing value counts, after every number
        values = np.where(pair_present, numbers[code], math.inf)
        counted = np.ones(len(cls), dtype=bool)
    else:
        values = numbers[code]
        counted = pair_present
    return _per_class(function, cls[counted], values[counted], count[counted], n_classes, integer)


def _per_class(
    function: str,
    cls: IntArray,
    values: FloatArray,
    weights: IntArray,
    n_classes: int,
    integer: bool,
) -> list[str]:
    """The aggregate of every class as text (``''`` for a class with no value counted):
    ``values`` each counted ``weights`` times in class ``cls``."""
    counts = np.rint(np.bincount(cls, weights=weights, minlength=n_classes)).astype(np.int64)
    out = [""] * n_classes
    w = weights.astype(np.float64)
    if function == "mean":
        first = np.bincount(cls, weights=w * values, minlength=n_classes) / np.maximum(counts, 1)
        correction = np.bincount(cls, weights=w * (values - first[cls]), minlength=n_classes)
        mean = first + correction / np.maximum(counts, 1)
        return [
            _number_text(float(m), integer) if c else "" for m, c in zip(mean, counts, strict=True)
        ]
    if function == "geometric":
        logs = np.log(values + 1.0)
        sums = np.bincount(cls, weights=w * logs, minlength=n_classes)
        geo = np.exp(sums / np.maximum(counts, 1)) - 1.0
        return [
            _number_text(float(g), integer) if c else "" for g, c in zip(geo, counts, strict=True)
        ]
    order = np.lexsort((values, cls))
    cls_sorted, values_sorted = cls[order], values[order]
    ends = np.cumsum(weights[order])  # records up to and including each pair, all classes
    starts = np.searchsorted(cls_sorted, np.arange(n_classes), side="left")
    stops = np.searchsorted(cls_sorted, np.arange(n_classes), side="right")
    before = np.concatenate([[0], ends])[starts]  # records of the classes before
    if function == "interval":
        for c in np.flatnonzero(counts):
            lo = float(values_sorted[starts[c]])
            hi = float(values_sorted[stops[c] - 1])
            out[c] = f"[{_number_text(lo, integer)}, {_number_text(hi, integer)}]"
        return out
    for c in np.flatnonzero(counts):  # median
        n = int(counts[c])
        ranks = ends[starts[c] : stops[c]] - before[c]  # the class's records up to each pair
        middle = _nth(values_sorted[starts[c] : stops[c]], ranks, n // 2)
        if n % 2 == 0:
            middle = (_nth(values_sorted[starts[c] : stops[c]], ranks, n // 2 - 1) + middle) / 2.0
        out[c] = _number_text(middle, integer) if math.isfinite(middle) else ""
    return out


def _nth(values: FloatArray, ranks: IntArray, i: int) -> float:
    """The ``i``-th record's value (0-based) of a class whose sorted ``values`` hold
    ``ranks`` records up to and including each."""
    return float(values[int(np.searchsorted(ranks, i, side="right"))])


def _modes(
    cls: IntArray,
    code: IntArray,
    count: IntArray,
    first: IntArray,
    distinct: NDArray[Any],
    n_classes: int,
) -> list[str]:
    """Each class's most frequent text (``code``: the values numbered in the order of first
    appearance in the table, ARX's dictionary codes; ``first`` orders a class's values as
    they first appear in it); a tie goes to the value ARX's
    ``DistributionAggregateFunctionMode`` finds first (:func:`arx_bucket_order`)."""
    out = [""] * n_classes
    order = np.lexsort((first, cls))  # each class's values as they first appear
    per_class: dict[int, list[tuple[int, int]]] = {}
    for c, v, n in zip(
        cls[order].tolist(), code[order].tolist(), count[order].tolist(), strict=True
    ):
        per_class.setdefault(c, []).append((v, n))
    for c, entries in per_class.items():
        frequency = dict(entries)
        best, top = -1, -1
        for value in arx_bucket_order([value for value, _ in entries]):
            if frequency[value] > top:
                best, top = value, frequency[value]
        out[c] = str(distinct[best])
    return out


def arx_bucket_order(codes: Sequence[int]) -> list[int]:
    """The order in which ARX's ``Distribution`` (an open-addressing hash table of a class's
    value codes) lists ``codes`` inserted in this order: a table of 8 slots, a code's home
    slot ``code mod slots``, the next free slot on a collision, the slots doubled and every
    code reinserted in slot order once more than 3/4 of them are taken."""
    slots = 8
    table = [-1] * slots
    for size, code in enumerate(codes, start=1):
        _place(table, code)
        if size > int(slots * 0.75):
            slots *= 2
            grown = [-1] * slots
            for held in table:
                if held != -1:
                    _place(grown, held)
            table = grown
    return [code for code in table if code != -1]


def _place(table: list[int], code: int) -> None:
    at = code & (len(table) - 1)
    while table[at] != -1:
        at = (at + 1) & (len(table) - 1)
    table[at] = code


def _number_or_nan(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        return math.nan
    return number if math.isfinite(number) else math.nan


def _numbers(
    distinct: NDArray[Any], present: NDArray[Any], column: str, function: str
) -> tuple[FloatArray, bool]:
    """The distinct texts as numbers (missing ones NaN), and whether all are integers."""
    numbers = np.full(len(distinct), math.nan)
    integer = True
    for i, text in enumerate(distinct):
        if not present[i]:
            continue
        number = _number_or_nan(str(text))
        if math.isnan(number):
            raise AnonlabError(
                f"aggregate_qi {column}={function} needs numbers, but '{column}' holds "
                f"'{text}': choose mode, or give the column's values as numbers",
                parameter="aggregate_qi",
            )
        if function == "geometric" and number <= -1:
            raise AnonlabError(
                f"aggregate_qi {column}=geometric needs values above -1 (ARX's geometric "
                f"mean of x + 1), but '{column}' holds {text}",
                parameter="aggregate_qi",
            )
        numbers[i] = number
        integer = integer and _is_integer_text(str(text))
    return numbers, integer


def _is_integer_text(text: str) -> bool:
    try:
        int(text.strip())
    except ValueError:
        return False
    return True


def java_round(x: float) -> int:
    """Java's ``Math.round``: the nearest integer, a half rounded up (``floor(x + 0.5)``)."""
    return math.floor(x + 0.5)


def _number_text(x: float, integer: bool) -> str:
    return str(java_round(x)) if integer else java_double_text(x)


def java_double_text(x: float) -> str:
    """A double as Java's ``Double.toString`` writes it (ARX's decimal format when none is
    set): the shortest digits, at least one after the point; from 10^-3 up to 10^7 as a
    plain number (``38.0``), otherwise ``d.dddE<exponent>`` (``1.5E-4``, ``1.0E7``)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits = Decimal(repr(abs(x))).as_tuple()
    text = "".join(str(d) for d in digits.digits).rstrip("0") or "0"
    exponent = len(digits.digits) + int(digits.exponent) - 1  # of the first digit
    if 1e-3 <= abs(x) < 1e7:
        if exponent >= 0:
            whole = text[: exponent + 1].ljust(exponent + 1, "0")
            frac = text[exponent + 1 :] or "0"
        else:
            whole, frac = "0", "0" * (-exponent - 1) + text
        return f"{sign}{whole}.{frac}"
    return f"{sign}{text[0]}.{text[1:] or '0'}E{exponent}"


# On an engine's pieces ----------------------------------------------------------------
#
# Aggregated quasi-identifiers (``generalize --aggregate-qi``) over an engine's pieces: the
# same release as :func:`anonlab.generalize_aggregate.aggregate_classes` in memory.
#
# Every aggregate is a function of its class's histogram of the column's original values
# (:class:`anonlab.generalize_aggregate.ClassHistogram`), and histograms add up. So one pass
# over the pieces (:func:`count_piece`, in piece order) counts, for each record, the pair
# (class, value): the class is the tuple of the labels the release plan gives the
# quasi-identifiers (the aggregated one's own label among them when it was generalized too,
# ARX's clustering), a record with ``*`` in all of them suppressed and left out, as in
# memory; each pair keeps its count and its first record, each value its first record over
# all records (the order ARX numbers the values in, which the mode's tie rule needs). The
# driver merges the pieces' counts (the rows of a piece numbered after those of the pieces
# before it), computes every class's aggregate once with the in-memory code
# (:func:`anonlab.generalize_aggregate.class_aggregates`), and a second pass
# (:func:`write_piece`) writes the plan's release with each aggregated column replaced by its
# class's aggregate (``*`` where suppressed).

ClassKey = tuple[str, ...]


@dataclass
class PieceCounts:
    """One piece's counts: its ``rows``, and by aggregated column each value's first row
    (``values``) and each (class, value) pair's ``[count, first row]`` (``pairs``), the rows
    numbered from 0 in the piece."""

    index: int
    rows: int = 0
    values: dict[str, dict[str, int]] = field(default_factory=dict)
    pairs: dict[str, dict[tuple[ClassKey, str], list[int]]] = field(default_factory=dict)


def _label_arrays(batch: Any, plan: Any, where: str) -> list[Any]:
    """The released labels of the plan's quasi-identifiers in ``batch`` (``*`` in every one
    for a suppressed record), as the engine writes them (:func:`kernels.release_tables`)."""
    groups = np.column_stack(
        [
            plan.groups_of(j, *kernels.encode_text(batch.column(name)), where=where)
            for j, name in enumerate(plan.columns)
        ]
    )
    hidden = plan.suppressed_rows(groups)
    return [plan.label_array(j, groups[:, j], hidden) for j in range(len(plan.columns))]


def _class_keys(arrays: Sequence[Any], rows: int) -> tuple[NDArray[np.int64], list[ClassKey]]:
    """Each row's class (an index into the returned keys, the label tuples)."""
    if not arrays:
        return np.zeros(rows, dtype=np.int64), [()]
    columns = [np.asarray(a.indices.to_numpy(zero_copy_only=False), np.int64) for a in arrays]
    radix = [max(len(a.dictionary), 1) for a in arrays]
    if math.prod(radix) < 2**62:  # each row's indices packed in one number
        packed = np.zeros(rows, dtype=np.int64)
        for column, size in zip(columns, radix, strict=True):
            packed = packed * size + column
        numbers, inverse = np.unique(packed, return_inverse=True)
        unpacked = []
        for size in reversed(radix):
            unpacked.append(numbers % size)
            numbers = numbers // size
        distinct = np.column_stack(unpacked[::-1])
    else:
        distinct, inverse = np.unique(np.column_stack(columns), axis=0, return_inverse=True)
    dictionaries = [a.dictionary.to_pylist() for a in arrays]
    keys = [
        tuple(str(dictionaries[j][int(i)]) for j, i in enumerate(row)) for row in distinct.tolist()
    ]
    return np.asarray(inverse, dtype=np.int64).reshape(-1), keys


def _suppressed(key: ClassKey) -> bool:
    return len(key) > 0 and all(label == SUPPRESSED for label in key)


def count_piece(piece: Any, plan: Any, columns: Sequence[str], batch_rows: int) -> PieceCounts:
    """Count one piece's (class, value) pairs of every aggregated column (module text)."""
    counts = PieceCounts(piece.index)
    for name in columns:
        counts.values[name] = {}
        counts.pairs[name] = {}
    names = list(dict.fromkeys([*plan.columns, *columns]))
    for batch in piece.batches(names, batch_rows):
        rows = batch.num_rows
        inverse, keys = _class_keys(_label_arrays(batch, plan, piece.describe()), rows)
        kept = np.array([not _suppressed(k) for k in keys], dtype=bool)[inverse]
        for name in columns:
            codes, texts = kernels.encode_text(batch.column(name))
            codes = np.asarray(codes, dtype=np.int64)
            seen = counts.values[name]
            _, first_of_code = np.unique(codes, return_index=True)
            for code, row in zip(np.unique(codes).tolist(), first_of_code.tolist(), strict=True):
                seen.setdefault(str(texts[code]), counts.rows + int(row))
            width = max(len(texts), 1)
            at = np.flatnonzero(kept)
            pairs, first, number = np.unique(
                inverse[at] * width + codes[at], return_index=True, return_counts=True
            )
            found = counts.pairs[name]
            for pair, row, n in zip(pairs.tolist(), first.tolist(), number.tolist(), strict=True):
                entry = (keys[pair // width], str(texts[pair % width]))
                held = found.get(entry)
                if held is None:
                    found[entry] = [int(n), counts.rows + int(at[row])]
                else:
                    held[0] += int(n)
        counts.rows += rows
    return counts


def merged_histograms(
    pieces: Sequence[PieceCounts], columns: Sequence[str]
) -> dict[str, tuple[ClassHistogram, list[ClassKey]]]:
    """By aggregated column, the whole table's histogram (the pieces' counts added, their
    rows numbered after the pieces before them) and the class keys it numbers."""
    out: dict[str, tuple[ClassHistogram, list[ClassKey]]] = {}
    offsets = np.concatenate([[0], np.cumsum([p.rows for p in pieces])]).tolist()
    for name in columns:
        first_of_value: dict[str, int] = {}
        pairs: dict[tuple[ClassKey, str], list[int]] = {}
        for piece, offset in zip(pieces, offsets, strict=False):
            for text, row in piece.values[name].items():
                first_of_value.setdefault(text, offset + row)
            for entry, (n, row) in piece.pairs[name].items():
                held = pairs.get(entry)
                if held is None:
                    pairs[entry] = [n, offset + row]
                else:
                    held[0] += n
        distinct = sorted(first_of_value, key=first_of_value.__getitem__)
        code_of = {text: i for i, text in enumerate(distinct)}
        class_first: dict[ClassKey, int] = {}
        for (key, _), (_, row) in pairs.items():
            class_first[key] = min(row, class_first.get(key, row))
        keys = sorted(class_first, key=class_first.__getitem__)
        class_of = {key: i for i, key in enumerate(keys)}
        entries = list(pairs.items())
        histogram = ClassHistogram(
            distinct=np.asarray(distinct, dtype=object),
            cls=np.array([class_of[k] for (k, _), _ in entries], dtype=np.int64),
            code=np.array([code_of[t] for (_, t), _ in entries], dtype=np.int64),
            count=np.array([n for _, (n, _) in entries], dtype=np.int64),
            first=np.array([row for _, (_, row) in entries], dtype=np.int64),
            n_classes=len(keys),
        )
        out[name] = (histogram, keys)
    return out


def aggregates_on_engine(
    engine: Any,
    table: Any,
    plan: Any,
    aggregate_qi: Mapping[str, str],
    missing: str = "ignore",
    progress: Any = None,
) -> dict[str, dict[ClassKey, str]]:
    """By aggregated column, each class's aggregate (its key the labels of ``plan``'s
    quasi-identifiers): one counting pass over ``table``'s pieces, merged, then
    :func:`class_aggregates` once per column."""
    from anonlab.engine.base import base_engine

    check_aggregate_qi(aggregate_qi, list(table.column_names), missing)
    runner = base_engine(engine)
    columns = list(aggregate_qi)
    pieces: list[PieceCounts] = runner.map_pieces(
        table,
        count_piece,
        plan,
        columns,
        runner.batch_rows,
        progress=progress,
        step="counting the aggregated values",
    )
    pieces = sorted(pieces, key=lambda p: p.index)
    out: dict[str, dict[ClassKey, str]] = {}
    for name, (histogram, keys) in merged_histograms(pieces, columns).items():
        texts = class_aggregates(histogram, aggregate_qi[name], missing, name)
        out[name] = dict(zip(keys, texts, strict=True))
    return out


def write_piece(
    piece: Any,
    plan: Any,
    aggregates: Mapping[str, Mapping[ClassKey, str]],
    folder: str,
    batch_rows: int,
) -> int:
    """Write one piece by ``plan`` (:func:`kernels.release_tables`) with each column of
    ``aggregates`` replaced by its class's aggregate, ``*`` for a suppressed record (a
    dictionary array of text); returns the rows written. A class the counting pass did not
    see is an error (the table changed since)."""

    def tables() -> Iterator[Any]:
        import pyarrow as pa

        for released in kernels.release_tables(piece, plan, batch_rows, [0]):
            arrays = [released.column(name).combine_chunks() for name in plan.columns]
            inverse, keys = _class_keys(arrays, released.num_rows)
            columns = list(released.column_names)
            for name, by_class in aggregates.items():
                texts = []
                for key in keys:
                    if _suppressed(key):
                        texts.append(SUPPRESSED)
                    elif key in by_class:
                        texts.append(by_class[key])
                    else:
                        raise AnonlabError(
                            f"input: {piece.describe()} holds a record the first pass did "
                            "not count: the table changed while it was read; run again",
                            parameter="input",
                        )
                dictionary, remap = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
                column = pa.DictionaryArray.from_arrays(
                    pa.array(np.asarray(remap, dtype=np.int32).reshape(-1)[inverse]),
                    pa.array([str(t) for t in dictionary.tolist()], pa.string()),
                )
                released = released.set_column(columns.index(name), name, column)
            yield released

    return int(kernels.write_batches(folder, piece.index, tables()))


def write_parts(
    engine: Any,
    table: Any,
    plan: Any,
    aggregates: Mapping[str, Mapping[ClassKey, str]],
    folder: str,
    progress: Any = None,
) -> int:
    """Write the release, one Parquet part per piece (:func:`write_piece`); returns the rows
    written."""
    from anonlab.engine.base import write_pieces

    rows: list[int] = write_pieces(
        engine, table, write_piece, plan, aggregates, folder, progress=progress
    )
    return sum(rows)
