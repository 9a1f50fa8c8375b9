"""An independent check of multidimensional (local) recodings: Mondrian's releases.

Written apart from :mod:`anonlab.mondrian` (it imports none of it): it reads the original
table, the release and the hierarchy files as text, and checks, record by record, that
every released quasi-identifier value *covers* the original one:

- a column cut in order (no hierarchy, or named numeric): the released text is the
  original itself, or ``[lo, hi]`` with ``lo <= original <= hi`` (numbers by value when
  the three are numbers, otherwise in the order numbers first, then texts by character);
- a column with a hierarchy: the released text is the original itself, the label of one
  of the original's ancestors (its label at some level of the hierarchy), or ``*`` (every
  value: a root above a hierarchy whose top level has several labels);
- any other column is released as it is, the identifying ones dropped, the records in
  order and none missing.

The privacy models are then re-checked on the release's classes by
:func:`anonlab.verify.criteria.check_criteria`. A Mondrian release suppresses no record.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.hierarchy import SUPPRESSED, Hierarchy
from anonlab.verify.criteria import check_criteria

__all__ = ["check_coverage", "check_recoding", "covers_in_order"]


def _order_key(text: str) -> tuple[int, float, str]:
    """Numbers first by value, then texts by character (docs/mondrian.md, "Release")."""
    try:
        number = float(text)
    except ValueError:
        return (1, 0.0, text)
    return (0, number, text) if math.isfinite(number) else (1, 0.0, text)


def covers_in_order(original: str, released: str) -> bool:
    """Whether ``released`` (the value itself or ``[lo, hi]``) covers ``original`` in order."""
    if released == original:
        return True
    if not (released.startswith("[") and released.endswith("]") and ", " in released):
        return False
    lo, _, hi = released[1:-1].partition(", ")
    key = _order_key(original)
    return _order_key(lo) <= key <= _order_key(hi) and _order_key(lo) < _order_key(hi)


def _ancestors(hierarchy: Hierarchy) -> dict[str, set[str]]:
    """Each original value's labels at every level (itself included)."""
    return {row[0]: set(row) for row in hierarchy.rows}


def check_coverage(
    original: pd.DataFrame,
    release: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    ordered: Sequence[str],
    dropped: Iterable[str] = (),
) -> list[str]:
    """Problems with the released cells against the original (empty: every cell covers its
    original; module text). ``hierarchies`` are the quasi-identifiers cut along a hierarchy,
    ``ordered`` the ones cut in order."""
    problems: list[str] = []
    dropped = list(dropped)
    expected_columns = [c for c in original.columns if c not in dropped]
    if list(release.columns) != expected_columns:
        return [
            f"the release's columns {list(release.columns)} are not the original's without "
            f"the identifying ones {expected_columns}"
        ]
    if len(release) != len(original):
        return [f"the release has {len(release)} records, the original {len(original)}"]
    for column in expected_columns:
        was, was_text = _codes(original[column])
        now, now_text = _codes(release[column])
        # each distinct (original, released) pair once: the rows are compared by their codes
        pair = was * max(len(now_text), 1) + now
        seen, first = np.unique(pair, return_index=True)
        old_codes, new_codes = seen // max(len(now_text), 1), seen % max(len(now_text), 1)
        if column in ordered:
            fine = _covered_in_order(was_text, now_text, old_codes, new_codes)
        elif column in hierarchies:
            up = _ancestors(hierarchies[column])
            olds = [was_text[int(c)] for c in old_codes]
            news = [now_text[int(c)] for c in new_codes]
            fine = np.array(
                [
                    n in (o, SUPPRESSED) or n in up.get(o, ())
                    for o, n in zip(olds, news, strict=True)
                ],
                dtype=bool,
            )
        else:
            same = {i: t for i, t in enumerate(now_text)}
            fine = np.array(
                [
                    was_text[int(o)] == same[int(n)]
                    for o, n in zip(old_codes, new_codes, strict=True)
                ],
                dtype=bool,
            )
        if not fine.all():
            bad = int(np.flatnonzero(~fine)[np.argmin(first[~fine])])
            problems.append(
                f"column '{column}': row {int(first[bad]) + 1} releases "
                f"'{now_text[int(new_codes[bad])]}', which does not cover its original "
                f"'{was_text[int(old_codes[bad])]}'"
            )
    return problems


def _codes(column: pd.Series) -> tuple[NDArray[np.int64], list[str]]:
    """A column's rows as codes into its distinct texts (a missing value is the empty
    string), the texts made once per distinct value."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    texts = [str(u) for u in uniques]
    codes = np.asarray(codes, dtype=np.int64)
    if (codes < 0).any():
        if "" in texts:
            codes[codes < 0] = texts.index("")
        else:
            codes[codes < 0] = len(texts)
            texts.append("")
    # two distinct values with one text (e.g. 1 and "1" in an object column) share a code
    merged, back = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
    return back.reshape(-1)[codes].astype(np.int64), [str(t) for t in merged]


def _covered_in_order(
    was_text: Sequence[str],
    now_text: Sequence[str],
    old_codes: NDArray[np.int64],
    new_codes: NDArray[np.int64],
) -> NDArray[np.bool_]:
    """:func:`covers_in_order` of each (original, released) pair given by codes into
    ``was_text`` and ``now_text``: each distinct text parsed once, the pairs compared as
    ranks in the one order (docs/mondrian.md, "Release")."""
    keys = {text: _order_key(text) for text in was_text}
    spans: list[tuple[tuple[int, float, str], tuple[int, float, str]] | None] = []
    for text in now_text:
        span = None
        if text.startswith("[") and text.endswith("]") and ", " in text:
            lo, _, hi = text[1:-1].partition(", ")
            low, high = _order_key(lo), _order_key(hi)
            span = (low, high) if low < high else None
        spans.append(span)
        if span is not None:
            keys.setdefault(lo, low)
            keys.setdefault(hi, high)
    order = sorted(set(keys.values()))
    rank_of = {key: i for i, key in enumerate(order)}
    was_rank = np.array([rank_of[keys[t]] for t in was_text], dtype=np.int64)
    low_rank = np.array([rank_of[s[0]] if s else -1 for s in spans], dtype=np.int64)
    high_rank = np.array([rank_of[s[1]] if s else -2 for s in spans], dtype=np.int64)
    # the released text equal to the original: the same text
    lookup = {text: i for i, text in enumerate(was_text)}
    equal_to = np.array([lookup.get(text, -1) for text in now_text], dtype=np.int64)
    rank = was_rank[old_codes]
    inside = (low_rank[new_codes] <= rank) & (rank <= high_rank[new_codes])
    return np.asarray(inside | (equal_to[new_codes] == old_codes), dtype=bool)


def check_recoding(
    original: pd.DataFrame,
    release: pd.DataFrame,
    criteria: Sequence[Mapping[str, Any]],
    hierarchies: Mapping[str, Hierarchy],
    ordered: Sequence[str],
    dropped: Iterable[str] = (),
    aggregated: Mapping[str, str] | None = None,
) -> list[str]:
    """Every problem of a Mondrian release: coverage (:func:`check_coverage`) and every
    privacy model on its classes, no record suppressed (empty list: it holds).
    ``aggregated`` (column -> function, ``generalize --aggregate-qi``): those columns hold
    their classes' aggregates, checked from the files alone
    (:func:`anonlab.verify.aggregation.check_within_classes`)."""
    from anonlab.verify.aggregation import check_within_classes, with_originals

    aggregated = dict(aggregated or {})
    probe = with_originals(release, original, list(aggregated))
    problems = check_coverage(original, probe, hierarchies, ordered, dropped)
    if problems:
        return problems
    qi = [c for c in release.columns if c in hierarchies or c in ordered]
    if aggregated:
        problems = check_within_classes(original, release, qi, aggregated)
        if problems:
            return problems
    top = np.ones(len(release), dtype=bool)
    for c in qi:
        codes, texts = _codes(release[c])
        top &= codes == (texts.index(SUPPRESSED) if SUPPRESSED in texts else -1)
    return check_criteria(original, release, criteria, qi, 0, expected_star=top)
