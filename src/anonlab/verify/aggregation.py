"""An independent check of aggregated quasi-identifiers (``generalize --aggregate-qi``).

Written apart from :mod:`anonlab.generalize_aggregate` (it imports none of it, and computes
each aggregate again in exact arithmetic): a release whose column ``age`` was replaced, in
every class, by an aggregate of the class's original values is checked in two steps.

1. The classes. They are the release's classes *before* the replacement: the combination
   of every quasi-identifier's generalized value. The checker takes them from a *labelled*
   release, the same records with each aggregated column holding its generalized value
   again: for full-domain generalization it rebuilds that column itself from the original
   value and the stated level (:func:`relabel_full_domain`: the hierarchy's label, or
   ``*`` where the record is suppressed); for Mondrian and local recoding, whose labels no
   level describes, the run gives the release it built before the replacement, and the
   checker first requires every other column of the two to be the same. The labelled
   release then goes through the family's own checker (coverage, levels, every privacy
   model).
2. The values (:func:`check_aggregates`): a suppressed record (``*`` in every
   quasi-identifier of the labelled release) holds ``*``; every other record holds the
   aggregate of its class's original values, recomputed here from the texts:

   - ``mean``: the exact mean (fractions); ``geometric``: ``exp(mean(log(x + 1))) - 1``;
     ``median``: the middle value, or the mean of the two middle ones, a missing value
     sorted after every number (a missing middle value: released missing); ``interval``:
     ``[min, max]``; on a column of integers rounded half up to an integer, which the
     released value must equal (``mean`` exactly, ``geometric`` within 0.5 + 1e-9, as a
     rounding of a float); on a decimal column equal within a relative 1e-9;
   - ``mode``: the released text must be one of the class's most frequent texts, a missing
     value (released empty) counted as one;
   - otherwise missing values (empty cells) are left out, or with ``missing="zero"`` count
     as 0 in ``mean`` and ``geometric``; a class with no value left must be released empty.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from fractions import Fraction

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.hierarchy import SUPPRESSED, Hierarchy

__all__ = [
    "check_aggregates",
    "check_within_classes",
    "relabel_full_domain",
    "same_other_columns",
    "with_originals",
]

#: relative slack when a decimal aggregate is compared (the method computes in floats)
REL_TOL = 1e-9


def _text(column: pd.Series) -> list[str]:
    codes, texts = _factorized(column)
    return [str(v) for v in texts[codes]]


def _factorized(column: pd.Series) -> tuple[NDArray[np.int64], NDArray[np.object_]]:
    """Each row's code into the column's distinct texts (a missing value is ``''``), and the
    texts: a categorical column through its categories, once per distinct value."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = np.asarray(column.cat.codes.to_numpy(), dtype=np.int64)
        texts = [str(c) for c in column.cat.categories] + [""]
        codes = np.where(codes < 0, len(texts) - 1, codes)
        merged, back = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
        return back.reshape(-1)[codes].astype(np.int64), np.asarray(merged, dtype=object)
    found, uniques = pd.factorize(column.astype(str).where(column.notna(), ""))
    return np.asarray(found, dtype=np.int64), np.asarray([str(u) for u in uniques], dtype=object)


def relabel_full_domain(
    original: pd.DataFrame,
    release: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    levels: Mapping[str, int],
    aggregated: Sequence[str],
) -> pd.DataFrame:
    """``release`` with each ``aggregated`` column holding the hierarchy label of the original
    value at its stated level again, ``*`` where the release holds ``*``; a column with no
    level (aggregated in the other quasi-identifiers' classes, not generalized) holds the
    original values, as any column the release leaves as it is."""
    out = release.copy()
    for column in aggregated:
        if column not in levels:
            out[column] = _text(original[column])
            continue
        hierarchy, level = hierarchies[column], levels[column]
        labels = {row[0]: row[min(level, len(row) - 1)] for row in hierarchy.rows}
        before = _text(original[column])
        after = _text(release[column])
        out[column] = [
            SUPPRESSED if got == SUPPRESSED else labels.get(value, f"<{value} not in hierarchy>")
            for value, got in zip(before, after, strict=True)
        ]
    return out


def same_other_columns(
    release: pd.DataFrame, labelled: pd.DataFrame, aggregated: Sequence[str]
) -> list[str]:
    """Problems where ``release`` and the ``labelled`` release differ outside the aggregated
    columns (empty: the same columns, records and texts)."""
    if list(release.columns) != list(labelled.columns) or len(release) != len(labelled):
        return ["the aggregated release's columns or records are not those of the generalized one"]
    for column in release.columns:
        if column in aggregated:
            continue
        if _text(release[column]) != _text(labelled[column]):
            return [f"column '{column}' differs from the generalized release"]
    return []


def check_aggregates(
    original: pd.DataFrame,
    release: pd.DataFrame,
    labelled: pd.DataFrame,
    qis: Sequence[str],
    aggregate_qi: Mapping[str, str],
    missing: str = "ignore",
) -> list[str]:
    """Problems with the aggregated cells of ``release`` (empty: each is its class's aggregate;
    module text). ``labelled`` holds the generalized value of every quasi-identifier ``qis``
    (the classes), ``original`` the same records as the table held them. The classes are
    counted with pandas, and each class's aggregate judged once, on its distinct original
    values and their counts."""
    if not len(release) == len(labelled) == len(original):
        return ["the release, its generalized form and the original differ in records"]
    classes = np.zeros(len(labelled), dtype=np.int64)
    suppressed = np.ones(len(labelled), dtype=bool)
    for column in qis:
        codes, uniques = _factorized(labelled[column])
        suppressed &= (uniques == SUPPRESSED)[codes]
        classes, _ = pd.factorize(classes * max(len(uniques), 1) + codes)
    classes = np.asarray(classes, dtype=np.int64)
    kept = np.flatnonzero(~suppressed)
    problems: list[str] = []
    for column, function in aggregate_qi.items():
        released_codes, released_texts = _factorized(release[column])
        wrong = np.flatnonzero(suppressed & (released_texts != SUPPRESSED)[released_codes])
        if wrong.shape[0]:
            row = int(wrong[0])
            problems.append(
                f"column '{column}' row {row + 1}: the record is suppressed but holds "
                f"'{released_texts[released_codes[row]]}', not '*'"
            )
            continue
        value_codes, values = _factorized(original[column])
        texts = [str(v) for v in values]
        integer = all(_is_integer(t) for t in texts if t.strip())
        got_codes, got = released_codes[kept], released_texts
        pairs = np.unique(np.stack([classes[kept], got_codes]), axis=1)
        several = np.flatnonzero(np.bincount(pairs[0]) > 1)
        if several.shape[0]:
            row = int(kept[np.flatnonzero(classes[kept] == several[0])[0]])
            problems.append(
                f"column '{column}': the class of row {row + 1} holds several values "
                f"{sorted(str(g) for g in got[pairs[1][pairs[0] == several[0]]])[:3]}"
            )
            continue
        shown = {int(c): str(got[v]) for c, v in zip(*pairs.tolist(), strict=True)}
        seen, at = np.unique(classes[kept], return_index=True)
        first_row = dict(zip(seen.tolist(), kept[at].tolist(), strict=True))
        members, counts = np.unique(
            np.stack([classes[kept], value_codes[kept]]), axis=1, return_counts=True
        )
        held: dict[int, list[tuple[str, int]]] = {}
        for c, v, n in zip(members[0].tolist(), members[1].tolist(), counts.tolist(), strict=True):
            held.setdefault(c, []).append((texts[v], n))
        for c, multiset in held.items():
            finding = _judge(function, multiset, shown[c], integer, missing)
            if finding is not None:
                problems.append(
                    f"column '{column}' ({function}) row {first_row[c] + 1}: released "
                    f"'{shown[c]}', {finding}"
                )
                break
    return problems


def _is_integer(text: str) -> bool:
    try:
        int(text.strip())
    except ValueError:
        return False
    return True


def _half_up(x: Fraction) -> int:
    return math.floor(x + Fraction(1, 2))


def _judge(
    function: str, multiset: list[tuple[str, int]], value: str, integer: bool, missing: str
) -> str | None:
    """Why ``value`` is not the aggregate of the texts ``multiset`` (each with its count;
    ``None``: it is)."""
    if function == "mode":  # a missing value is a value here, as in ARX
        counted: Counter[str] = Counter()
        for text, n in multiset:
            counted[text if text.strip() else ""] += n
        top = max(counted.values())
        best = sorted(t for t, n in counted.items() if n == top)
        return None if value in best else f"expected one of {best[:3]}"
    numbers = sorted((Fraction(t.strip()), n) for t, n in multiset if t.strip())
    absent = sum(n for t, n in multiset if not t.strip())
    if function == "median":  # missing values sort after every number, as in ARX
        total = sum(n for _, n in numbers) + absent
        middle = [_at(numbers, i) for i in sorted({(total - 1) // 2, total // 2})]
        if any(m is None for m in middle):
            return None if value == "" else "expected '' (a middle value is missing)"
        exact = sum((m for m in middle if m is not None), Fraction(0)) / len(middle)
        return _compare(value, exact, integer, slack=Fraction(0))
    if missing == "zero" and function in ("mean", "geometric") and absent:
        numbers = sorted([*numbers, (Fraction(0), absent)])
    n = sum(count for _, count in numbers)
    if not n:
        return None if value == "" else "expected '' (every value missing)"
    if function == "interval":
        low, high = _shown(numbers[0][0], integer), _shown(numbers[-1][0], integer)
        try:
            inner = value[1:-1].split(", ")
            same = (
                value.startswith("[")
                and value.endswith("]")
                and len(inner) == 2
                and all(
                    _close(Fraction(a), b, integer) for a, b in zip(inner, (low, high), strict=True)
                )
            )
        except (ValueError, ZeroDivisionError):
            same = False
        return None if same else f"expected [{low}, {high}]"
    if function == "mean":
        exact = sum((x * count for x, count in numbers), Fraction(0)) / n
        return _compare(value, exact, integer, slack=Fraction(0))
    logs = math.fsum(math.log(float(x) + 1.0) * count for x, count in numbers)
    geometric = math.exp(logs / n) - 1.0
    return _compare(value, Fraction(geometric), integer, slack=Fraction(1, 10**9))


def _at(numbers: list[tuple[Fraction, int]], index: int) -> Fraction | None:
    """The value at ``index`` of the sorted values (each with its count), ``None`` past them
    (a missing value)."""
    for x, count in numbers:
        if index < count:
            return x
        index -= count
    return None


def _shown(x: Fraction, integer: bool) -> Fraction:
    return Fraction(_half_up(x)) if integer else x


def _close(got: Fraction, want: Fraction, integer: bool) -> bool:
    if integer:
        return got == want
    return abs(got - want) <= abs(want) * Fraction(REL_TOL) + Fraction(1, 10**12)


def _compare(value: str, exact: Fraction, integer: bool, slack: Fraction) -> str | None:
    """Whether ``value`` is ``exact`` as the column writes it (module text)."""
    try:
        got = Fraction(value.strip())
    except (ValueError, ZeroDivisionError):
        return f"expected a number near {float(exact):.6g}"
    if integer:
        if not _is_integer(value):
            return f"expected the integer {_half_up(exact)}"
        if got == _half_up(exact):
            return None
        # a float's rounding of a value at about a half may go either way
        if slack and abs(got - exact) <= Fraction(1, 2) + slack:
            return None
        return f"expected {_half_up(exact)}"
    return None if _close(got, exact, integer=False) else f"expected {float(exact)!r}"


def check_within_classes(
    original: pd.DataFrame,
    release: pd.DataFrame,
    qis: Sequence[str],
    aggregate_qi: Mapping[str, str],
) -> list[str]:
    """The check of aggregated cells from the files alone, when no level rebuilds the classes
    (Mondrian, local recoding): each released class (one combination of the released
    quasi-identifiers, aggregates included) is a union of the classes the aggregates were
    made in, so every aggregate of it lies between the smallest and the largest original
    value of its records (an ``[lo, hi]`` both ends), and a suppressed record holds ``*``.
    Empty list: every cell passes. Weaker than :func:`check_aggregates`, which knows the
    classes."""
    if len(release) != len(original):
        return [f"the release has {len(release)} records, the original {len(original)}"]
    keys = list(zip(*(_text(release[c]) for c in qis), strict=True))
    problems: list[str] = []
    for column in aggregate_qi:
        values = _text(original[column])
        released = _text(release[column])
        bounds: dict[tuple[str, ...], tuple[Fraction, Fraction]] = {}
        for key, text in zip(keys, values, strict=True):
            if not text.strip():
                continue
            try:
                x = Fraction(text.strip())
            except (ValueError, ZeroDivisionError):
                continue  # a text value: only a mode, which is one of the class's texts
            low, high = bounds.get(key, (x, x))
            bounds[key] = (min(low, x), max(high, x))
        for row, (key, got) in enumerate(zip(keys, released, strict=True)):
            if all(v == SUPPRESSED for v in key) or got == "":
                continue
            ends = got[1:-1].split(", ") if got.startswith("[") and got.endswith("]") else [got]
            span = bounds.get(key)
            try:
                size = Fraction(0) if span is None else abs(span[0]) + abs(span[1])
                slack = size * Fraction(REL_TOL)
                inside = span is not None and all(
                    span[0] - slack <= Fraction(e) <= span[1] + slack for e in ends
                )
            except (ValueError, ZeroDivisionError):
                inside = False
            if not inside:
                problems.append(
                    f"column '{column}' row {row + 1}: released '{got}', outside the original "
                    f"values of its class"
                )
                break
    return problems


def with_originals(
    release: pd.DataFrame, original: pd.DataFrame, aggregated: Sequence[str]
) -> pd.DataFrame:
    """``release`` with each ``aggregated`` column holding the original values (so that a
    coverage check passes it and judges the other columns)."""
    out = release.copy()
    for column in aggregated:
        if column in out.columns and len(out) == len(original):
            out[column] = _text(original[column])
    return out
