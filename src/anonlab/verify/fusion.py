"""Fusion: re-count every anonymity template on the fused table.

Wraps :func:`anonlab.fusion.check.check_templates`, which counts group sizes
with pandas on the released strings alone, never with the engine's cut or
group ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from anonlab.fusion.check import check_templates


def check_fusion(release: pd.DataFrame, templates: Iterable[tuple[Sequence[str], int]],
                 records: int | None = None) -> list[str]:
    """Problems with a fused table (empty list: every template <QID, k> holds).

    ``records``, when given, is the number of records the fusion released.
    """
    problems = []
    if records is not None and len(release) != records:
        problems.append(f"the release has {len(release)} records, the fusion released {records}")
    return problems + check_templates(release, templates)
