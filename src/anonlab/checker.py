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
    rows must number at least ``k`` or at most ``max_suppressed``.
    """
    cols = list(qi_columns)
    problems = []
    all_star = (release[cols].astype(str) == SUPPRESSED).all(axis=1)
    sizes = release.loc[~all_star, cols].astype(str).value_counts(dropna=False)
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
    all_star = (release[qis].astype(str) == SUPPRESSED).all(axis=1).to_numpy()
    for col in original.columns:
        if col in qis or col in set(dropped):
            continue
        if col not in release.columns:
            problems.append(f"column '{col}' is missing from the release")
        elif not np.array_equal(original[col].astype(str).to_numpy(),
                                release[col].astype(str).to_numpy()):
            problems.append(f"column '{col}' was changed")
    expected_star = np.ones(len(original), dtype=bool)
    for col, level in levels.items():
        hier = hierarchies[col]
        lookup = {v: hier.label(v, level) for v in original[col].astype(str).unique()}
        expected = original[col].astype(str).map(lookup).to_numpy()
        expected_star &= expected == SUPPRESSED
        got = release[col].astype(str).to_numpy()
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
