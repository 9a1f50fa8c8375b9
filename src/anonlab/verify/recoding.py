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

from anonlab.hierarchy import SUPPRESSED, Hierarchy
from anonlab.verify.criteria import check_criteria

__all__ = ["check_coverage", "check_recoding", "covers_in_order"]


def _text(column: pd.Series) -> pd.Series:
    """A column as text, a missing value as the empty string."""
    return column.astype(str).where(column.notna(), "")


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
        before = _text(original[column]).to_numpy()
        after = _text(release[column]).to_numpy()
        pairs = pd.unique(pd.Series(list(zip(before, after, strict=True)), dtype=object))
        if column in ordered:
            bad = [p for p in pairs if not covers_in_order(p[0], p[1])]
        elif column in hierarchies:
            up = _ancestors(hierarchies[column])
            bad = [
                p
                for p in pairs
                if p[1] not in (p[0], SUPPRESSED) and p[1] not in up.get(p[0], set())
            ]
        else:
            bad = [p for p in pairs if p[0] != p[1]]
        if bad:
            was, now = bad[0]
            rows = np.flatnonzero((before == was) & (after == now))
            problems.append(
                f"column '{column}': row {int(rows[0]) + 1} releases '{now}', which does not "
                f"cover its original '{was}'"
            )
    return problems


def check_recoding(
    original: pd.DataFrame,
    release: pd.DataFrame,
    criteria: Sequence[Mapping[str, Any]],
    hierarchies: Mapping[str, Hierarchy],
    ordered: Sequence[str],
    dropped: Iterable[str] = (),
) -> list[str]:
    """Every problem of a Mondrian release: coverage (:func:`check_coverage`) and every
    privacy model on its classes, no record suppressed (empty list: it holds)."""
    problems = check_coverage(original, release, hierarchies, ordered, dropped)
    if problems:
        return problems
    qi = [c for c in release.columns if c in hierarchies or c in ordered]
    top = np.ones(len(release), dtype=bool)
    for c in qi:
        top &= _text(release[c]).to_numpy() == SUPPRESSED
    return check_criteria(original, release, criteria, qi, 0, expected_star=top)
