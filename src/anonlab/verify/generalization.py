"""An independent check of generalized releases, written apart from the engine.

It uses only pandas on the released strings and the hierarchy files, never the
engine's encodings or frequency sets, so a bug in the search cannot hide
itself: it re-derives every released value from the original and the stated
levels, and re-counts the equivalence classes of the release. The privacy
models beyond k-anonymity (l-diversity, t-closeness, beta-likeness,
delta-disclosure, delta-presence, k-map, the risk thresholds) are checked by
:func:`anonlab.verify.criteria.check_criteria`, re-exported here. The stated
levels themselves must lie within the run's bounds (``min_level <= level <=
max_level``, :func:`check_level_bounds`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.hierarchy import SUPPRESSED, Hierarchy
from anonlab.verify.criteria import check_criteria
from anonlab.verify.tables import category_codes, plain_text

__all__ = [
    "check_criteria",
    "check_generalization",
    "check_k_anonymity",
    "check_level_bounds",
    "expected_stars",
]

BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.int64]


def check_level_bounds(
    levels: Mapping[str, int], min_levels: Mapping[str, int], max_levels: Mapping[str, int]
) -> list[str]:
    """Problems with the released levels against the run's bounds (empty: within them).

    Each quasi-identifier's level ``L`` must satisfy ``min_level <= L <=
    max_level`` where the run gives a bound; a bound naming a column that is
    not released as a quasi-identifier is a problem too.
    """
    problems = [
        f"a level bound names '{c}', which is not a released quasi-identifier"
        for c in [*min_levels, *max_levels]
        if c not in levels
    ]
    for column, level in levels.items():
        low, high = min_levels.get(column), max_levels.get(column)
        if low is not None and level < low:
            problems.append(
                f"column '{column}' is released at level {level}, below its min_level {low}"
            )
        if high is not None and level > high:
            problems.append(
                f"column '{column}' is released at level {level}, above its max_level {high}"
            )
    return problems


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
    absent = [c for c in cols if c not in release.columns]
    if absent:
        return [f"quasi-identifier '{absent[0]}' is missing from the release"]
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


def _class_sizes(frame: pd.DataFrame, cols: list[str], rows: BoolArray) -> IntArray:
    """Number of ``rows`` (a mask) with each distinct combination of ``cols``."""
    sizes = np.bincount(_class_ids(frame, cols)[rows])
    return np.asarray(sizes[sizes > 0], dtype=np.int64)


def _class_ids(frame: pd.DataFrame, cols: list[str]) -> IntArray:
    """Equivalence class id of each row (0, 1, ... in order of first row)."""
    group = np.zeros(len(frame), dtype=np.int64)
    for col in cols:
        codes, uniques = pd.factorize(_text(frame[col]))
        # group ids stay below the row count, so the product cannot overflow
        group, _ = pd.factorize(group * max(len(uniques), 1) + codes)
    return np.asarray(group, dtype=np.int64)


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

    Each column is compared as text through its own dictionary (:func:`_coded`):
    an original value's label is looked up once per distinct value, and rows are
    compared as integer codes, so a million-row release costs a few passes over
    integers (a release read back with categorical columns is coded already).
    """
    if len(original) != len(release):
        return [f"release has {len(release)} rows, original {len(original)}"]
    qis = list(levels)
    problems = _other_column_findings(original, release, qis, list(dropped))
    absent = [c for c in qis if c not in release.columns]
    if absent:
        return [*problems, f"quasi-identifier '{absent[0]}' is missing from the release"]
    released = {col: _coded(release[col]) for col in qis}
    all_star = np.ones(len(release), dtype=bool)
    for codes, values in released.values():
        all_star &= codes == _position(values, SUPPRESSED)
    expected_star = np.ones(len(original), dtype=bool)
    for col, level in levels.items():
        codes, values = _coded(original[col])
        _check_covered(hierarchies[col], values, col, level)
        labels = [hierarchies[col].label(v, level) for v in values]
        expected_star &= np.array([label == SUPPRESSED for label in labels], dtype=bool)[codes]
        got_codes, got_values = released[col]
        at = {v: i for i, v in enumerate(got_values)}
        want = np.array([at.get(label, -1) for label in labels], dtype=np.int32)[codes]
        wrong = (want != got_codes) & ~all_star
        if wrong.any():
            row = int(wrong.nonzero()[0][0])
            problems.append(
                f"column '{col}' row {row + 1}: released '{got_values[got_codes[row]]}', "
                f"expected '{labels[codes[row]]}'"
            )
    suppressed = int((all_star & ~expected_star).sum())
    if max_suppressed is not None and suppressed > max_suppressed:
        problems.append(f"{suppressed} records are suppressed but the limit is {max_suppressed}")
    return problems


def expected_stars(
    original: pd.DataFrame, hierarchies: Mapping[str, Hierarchy], levels: Mapping[str, int]
) -> BoolArray:
    """Rows the stated levels themselves make ``'*'`` in every quasi-identifier.

    Such rows form one class of the release (the fully generalized one);
    every other all-``'*'`` row of a release is a suppressed record.
    """
    stars = np.ones(len(original), dtype=bool)
    for col, level in levels.items():
        text = _text(original[col])
        values = [str(v) for v in pd.unique(text)]
        _check_covered(hierarchies[col], values, col, level)
        starred = [v for v in values if hierarchies[col].label(v, level) == SUPPRESSED]
        if not starred:  # no row is '*' in this column, so none in every column
            return np.zeros(len(original), dtype=bool)
        stars &= text.isin(starred).to_numpy()
    return stars


def _other_column_findings(
    original: pd.DataFrame, release: pd.DataFrame, qis: list[str], dropped: list[str]
) -> list[str]:
    """Identifying columns must be gone; every other non-QI column unchanged."""
    problems = [
        f"identifying column '{col}' is in the release" for col in dropped if col in release.columns
    ]
    for col in original.columns:
        if col in qis or col in dropped:
            continue
        if col not in release.columns:
            problems.append(f"column '{col}' is missing from the release")
        elif not _same_text(original[col], release[col]):
            problems.append(f"column '{col}' was changed")
    return problems


def _same_text(before: pd.Series, after: pd.Series) -> bool:
    """Whether two columns of the same length hold the same text in every row."""
    codes, values = _coded(before)
    after_codes, after_values = _coded(after)
    at = {v: i for i, v in enumerate(after_values)}
    mapped = np.array([at.get(v, -1) for v in values], dtype=np.int32)[codes]
    return bool(np.array_equal(mapped, after_codes))


def _coded(column: pd.Series) -> tuple[NDArray[np.int32], list[str]]:
    """Each row's text as a code into the column's distinct texts.

    The texts are those of :func:`_text` (a missing value is ``''``); equal
    codes mean equal text, so rows can be compared as integers. Codes lie below
    the number of rows and are kept in 32 bits (half the memory of pandas' codes
    for the quasi-identifiers of a million-row release held at once). A categorical of
    texts with every category used (as a release is read back) gives its own codes and
    categories (:func:`~anonlab.verify.tables.category_codes`: equal codes are equal texts,
    in the categories' order), without a pass over its rows.
    """
    own = category_codes(column)
    if own is not None:
        return own[0].astype(np.int32, copy=False), own[1]
    codes, values = pd.factorize(_text(column))
    if len(values) >= np.iinfo(np.int32).max:  # pragma: no cover - two billion distinct texts
        raise AnonlabError(f"column '{column.name}' has too many distinct values to check")
    return codes.astype(np.int32), [str(v) for v in values]


def _position(values: list[str], value: str) -> int:
    """Where ``value`` is among ``values`` (-1: absent, so that no code equals it)."""
    return values.index(value) if value in values else -1


def _check_covered(hier: Hierarchy, values: list[str], col: str, level: int) -> None:
    """Refuse an original value the hierarchy lacks, or a level above its height."""
    if not 0 <= level <= hier.height:
        raise AnonlabError(
            f"level {level} of column '{col}' is not a level of its hierarchy "
            f"(height {hier.height}): give the hierarchy the release was made "
            "with"
        )
    missing = hier.missing(values)
    if missing:
        raise AnonlabError(
            f"value '{missing[0]}' of column '{col}' in the original is not in "
            "its hierarchy: give the original and hierarchy the release was "
            "made with"
        )


def _text(column: pd.Series) -> pd.Series:
    """A column as text, a missing value (null) as the empty string an empty CSV field reads.

    A column of text with nothing missing (a categorical of texts, as a release
    is read back, or pandas' text) is already that and is returned as it is.
    """
    if plain_text(column):
        return column
    return column.astype(str).where(column.notna(), "")
