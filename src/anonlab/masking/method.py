"""``mask``: one masking method on a table in memory (docs/masking.md).

The run (:func:`anonlab.runs.mask.run_mask`) adds what every release gets: roles,
the independent check, the measures, the risk and the outputs written all or none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.masking.registry import get_method, method_params
from anonlab.settings import split_names


@dataclass
class MaskResult:
    """A masking's release (the table with its masked columns replaced) and what was done:
    the ``method``, its ``parameters``, the ``seed`` and the method's report ``section``."""

    release: pd.DataFrame
    method: str
    columns: list[str]
    parameters: dict[str, Any]
    seed: int | None
    section: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Report keys: ``method``, ``masked_columns``, ``records`` and the method's own
        section under ``masking``."""
        return {
            "method": self.method,
            "masked_columns": self.columns,
            "records": len(self.release),
            "masking": self.section,
        }


def mask(
    table: pd.DataFrame | str,
    method: str,
    columns: str | Sequence[str],
    *,
    seed: int | None = None,
    **params: Any,
) -> MaskResult:
    """Mask ``columns`` of ``table`` by ``method`` (``pram``, ``topbot``, ``recode``...)
    with the method's ``params`` under sdcMicro's names (docs/masking.md); the other
    columns pass through.

    ``table`` is a DataFrame (used as it is: a numeric column stays numeric where the
    method keeps numbers) or anything :func:`anonlab.io.read_table` reads (every value
    text, as the run reads it). ``seed`` seeds a method that draws random
    numbers (required by those; ``numpy.random.default_rng`` streams, docs/masking.md).
    Example: ``mask(frame, "pram", "roof", seed=1, pd=0.8, alpha=0.5)``.
    """
    from anonlab.io import read_table

    chosen = get_method(method)
    values = method_params(chosen, params)
    names = split_names(columns)
    frame = table if isinstance(table, pd.DataFrame) else read_table(table)
    if not names:
        raise AnonlabError("columns: name the columns to mask", parameter="columns")
    absent = [c for c in names if c not in frame.columns]
    if absent:
        raise AnonlabError(
            f"columns: unknown column {', '.join(absent)} (the table has "
            f"{', '.join(map(str, frame.columns))})",
            parameter="columns",
        )
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise AnonlabError(f"seed {seed!r} must be a whole number >= 0", parameter="seed")
    masked = chosen.apply(frame, names, values, seed if chosen.randomized else None)
    release = frame.copy(deep=False)  # the masked columns are replaced, never written into
    for name in names:
        release[name] = masked.columns[name]
    return MaskResult(
        release=release,
        method=chosen.name,
        columns=names,
        parameters=values.model_dump(),
        seed=seed if chosen.randomized else None,
        section=masked.section,
    )
