"""Fusion: re-count every anonymity template on the fused table.

Written apart from the fusion engine: :func:`check_templates` re-counts, with
pandas on the released strings alone, the group sizes of every anonymity
template, and never uses the engine's cut or group ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd


def check_fusion(
    release: pd.DataFrame,
    templates: Iterable[tuple[Sequence[str], int]],
    records: int | None = None,
) -> list[str]:
    """Problems with a fused table (empty list: every template <QID, k> holds).

    ``records``, when given, is the number of records the fusion released.
    """
    problems = []
    if records is not None and len(release) != records:
        problems.append(f"the release has {len(release)} records, the fusion released {records}")
    return problems + check_templates(release, templates)


def check_templates(
    table: pd.DataFrame, templates: Iterable[tuple[Sequence[str], int]]
) -> list[str]:
    """Problems with the templates <QID, k> on ``table`` (empty list: all hold)."""
    problems = []
    for qid, k in templates:
        cols = list(qid)
        missing = [c for c in cols if c not in table.columns]
        if missing:
            problems.append(
                f"the table has no column '{missing[0]}' of template <{', '.join(cols)}>"
            )
            continue
        sizes = table[cols].astype(str).value_counts()
        if len(sizes) and int(sizes.min()) < k:
            problems.append(
                f"template <{', '.join(cols)}; k={k}>: {int((sizes < k).sum())} "
                f"groups have fewer than {k} records (smallest {int(sizes.min())})"
            )
    return problems
