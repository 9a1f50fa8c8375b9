"""An independent check of a fused table, written apart from the engine.

It re-counts, with pandas on the released strings alone, the group sizes of
every anonymity template and never uses the engine's cut or group ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd


def check_templates(table: pd.DataFrame, templates: Iterable[tuple[Sequence[str], int]]
                    ) -> list[str]:
    """Problems with the templates <QID, k> on ``table`` (empty list: all hold)."""
    problems = []
    for qid, k in templates:
        cols = list(qid)
        missing = [c for c in cols if c not in table.columns]
        if missing:
            problems.append(f"the table has no column '{missing[0]}' of template "
                            f"<{', '.join(cols)}>")
            continue
        sizes = table[cols].astype(str).value_counts()
        if len(sizes) and int(sizes.min()) < k:
            problems.append(f"template <{', '.join(cols)}; k={k}>: {int((sizes < k).sum())} "
                            f"groups have fewer than {k} records (smallest {int(sizes.min())})")
    return problems
