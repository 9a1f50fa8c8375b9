"""An independent checker of generalized releases, written apart from the engine.

It uses only pandas on the released strings and the hierarchy files, never the
engine's encodings or frequency sets, so a bug in the search cannot hide
itself: it re-derives every released value from the original and the stated
levels, and re-counts the equivalence classes of the release.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from anonlab.hierarchy import SUPPRESSED, Hierarchy


def check_k_anonymity(
    release: pd.DataFrame, qi_columns: Iterable[str], k: int, max_suppressed: int
) -> list[str]:
    """Problems with k-anonymity of a release (empty list: it holds).

    Rows whose quasi-identifiers are all ``'*'`` are the suppressed records
    (or one fully generalized class); every other combination of
    quasi-identifier values must occur at least ``k`` times, and the all-``'*'``
    rows must number at least ``k`` or at most ``max_suppressed``. Works one
    column at a time, so that checking a million-row release costs little
    memory beyond the release itself.
    """
    cols = list(qi_columns)
    problems = []
    all_star = np.ones(len(release), dtype=bool)
    for col in cols:
        all_star &= release[col].astype(str).to_numpy() == SUPPRESSED
    sizes = _class_sizes(release, cols, ~all_star)
    small = sizes[sizes < k]
    if len(small):
        problems.append(
            f"{len(small)} equivalence classes have fewer than {k} records "
            f"(smallest: {int(small.min())})"
        )
    stars = int(all_star.sum())
    if 0 < stars < k and stars > max_suppressed:
        problems.append(f"{stars} suppressed records exceed the limit of {max_suppressed}")
    return problems


def _class_sizes(frame: pd.DataFrame, cols: list[str], rows: np.ndarray) -> np.ndarray:
    """Number of ``rows`` (a mask) with each distinct combination of ``cols``."""
    group = np.zeros(len(frame), dtype=np.int64)
    for col in cols:
        codes, uniques = pd.factorize(_text(frame[col]))
        # group ids stay below the row count, so the product cannot overflow
        group, _ = pd.factorize(group * max(len(uniques), 1) + codes)
    sizes = np.bincount(group[rows])
    return sizes[sizes > 0]


def check_generalization(
    original: pd.DataFrame,
    release: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    levels: Mapping[str, int],
    dropped: Iterable[str] = (),
    max_suppressed: int | None = None,
) -> list[str]:
    """Problems with the release as a generalization of ``original`` (empty: none).

    Checks: same number and order of rows; identifying columns absent; every
    other non-QI column unchanged; every QI value either ``'*'`` in all QIs of
    that row (suppressed) or exactly the hierarchy label of the original value
    at the stated level; and, if ``max_suppressed`` is given, that at most that
    many rows are suppressed (all ``'*'`` where the stated levels would not
    give ``'*'`` in every QI).
    """
    problems = []
    if len(original) != len(release):
        return [f"release has {len(release)} rows, original {len(original)}"]
    for col in dropped:
        if col in release.columns:
            problems.append(f"identifying column '{col}' is in the release")
    qis = list(levels)
    all_star = np.ones(len(release), dtype=bool)
    for col in qis:
        all_star &= _strings(release[col]) == SUPPRESSED
    for col in original.columns:
        if col in qis or col in set(dropped):
            continue
        if col not in release.columns:
            problems.append(f"column '{col}' is missing from the release")
        elif not np.array_equal(_strings(original[col]), _strings(release[col])):
            problems.append(f"column '{col}' was changed")
    expected_star = np.ones(len(original), dtype=bool)
    for col, level in levels.items():
        hier = hierarchies[col]
        codes, values = pd.factorize(_text(original[col]))
        labels = np.array([hier.label(str(v), level) for v in values], dtype=object)
        expected = labels[codes]
        expected_star &= expected == SUPPRESSED
        got = _strings(release[col])
        wrong = (expected != got) & ~all_star
        if wrong.any():
            row = int(wrong.nonzero()[0][0])
            problems.append(
                f"column '{col}' row {row + 1}: released '{got[row]}', expected '{expected[row]}'"
            )
    suppressed = int((all_star & ~expected_star).sum())
    if max_suppressed is not None and suppressed > max_suppressed:
        problems.append(f"{suppressed} records are suppressed but the limit is {max_suppressed}")
    return problems


def _strings(column: pd.Series) -> np.ndarray:
    """A column's values as text, one shared string object per distinct value.

    (Converting a million-row text column element by element would create a
    million string objects.)
    """
    codes, values = pd.factorize(_text(column))
    return np.asarray(values.astype(object), dtype=object)[codes]


def _text(column: pd.Series) -> pd.Series:
    """A column as text, a missing value (null) as the empty string an empty CSV field reads as."""
    return column.astype(str).where(column.notna(), "")
