"""The trade-off sweep: microaggregate for each k, evaluate, choose k by the lowest score.

With a ``risk`` function, each k's masked table is also measured for
re-identification risk (the report's ``risk`` section for that k, under
``risk_by_k``), and the point of that k gets the prosecutor risk's highest
and average value, so the R-U map can draw it against the information loss.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from anonlab.encoding import ALL_NUMERIC
from anonlab.metrics.evaluation import evaluate
from anonlab.metrics.tradeoff import best_point
from anonlab.microaggregation.masking import microaggregate
from anonlab.microaggregation.scalable import DEFAULT_BLOCK_SIZE
from anonlab.microaggregation.settings import parse_k_range
from anonlab.progress import ProgressFn, report_to
from anonlab.table import MicrodataTable, as_table

POINT_KEYS = (
    "ILh",
    "ILs",
    "IL",
    "ZIL",
    "ZIL_percent",
    "ILR",
    "DLD",
    "DLD_expected",
    "ID",
    "DR",
    "score",
)
#: the prosecutor risk figures a point carries when the sweep measures risk
RISK_POINT_KEYS = {"prosecutor_highest": "highest", "prosecutor_average": "average"}

RiskFn = Callable[[pd.DataFrame], Mapping[str, Any]]
SWEEP_STEP = "trade-off: values of k done"


def run_tradeoff(
    data: pd.DataFrame | MicrodataTable,
    ks: str | int | Sequence[int],
    columns: str | Sequence[str] | None = ALL_NUMERIC,
    *,
    nominal: Sequence[str] = (),
    ordinal: Sequence[str] = (),
    orders: Mapping[str, Sequence[str]] | None = None,
    variant: str = "exact",
    block_size: int = DEFAULT_BLOCK_SIZE,
    workers: int = 1,
    progress: ProgressFn | None = None,
    risk: RiskFn | None = None,
    **measure_settings: Any,
) -> dict[str, Any]:
    """Report keys ``points`` (one row per k: k, groups, IL, DR, score, ...), ``best_k``.

    ``data`` is a :class:`~anonlab.table.MicrodataTable` or a DataFrame with
    the column settings (as :func:`anonlab.microaggregate` takes them); it is
    encoded once for every k and every evaluation.
    ``measure_settings`` go to :func:`anonlab.metrics.evaluate` (lambdas, tau,
    gamma, interval_p); ``workers`` to both MDAV and the measures. The best k
    has the lowest score; among equal scores the smallest k. ``progress``
    hears of each k done (and of MDAV's records grouped). ``risk`` maps a
    masked table to its ``risk`` section (e.g.
    :func:`anonlab.risk.release.measure_release`); with it the result has
    ``risk_by_k`` (k as text -> section) and every point
    ``prosecutor_highest`` and ``prosecutor_average``.
    """
    k_values = parse_k_range(ks if isinstance(ks, str | int) else list(ks))
    table = as_table(
        data, columns, nominal=nominal, ordinal=ordinal, orders=orders, purpose="microaggregate"
    )
    tell = report_to(progress)
    points: list[dict[str, Any]] = []
    by_k: dict[str, Mapping[str, Any]] = {}
    parameters: dict[str, Any] = {}
    tell(SWEEP_STEP, 0, len(k_values))
    for done, k in enumerate(k_values, start=1):
        masked = microaggregate(
            table, k=k, variant=variant, block_size=block_size, workers=workers, progress=progress
        )
        ev = evaluate(table, masked.masked, workers=workers, **measure_settings)
        row: dict[str, Any] = {"k": k, "groups": int(masked.labels.max()) + 1}
        row.update({key: ev.measures[key] for key in POINT_KEYS if key in ev.measures})
        if risk is not None:
            section = risk(masked.masked)
            row.update({key: section["prosecutor"][name] for key, name in RISK_POINT_KEYS.items()})
            by_k[str(k)] = section
        points.append(row)
        parameters = ev.parameters
        tell(SWEEP_STEP, done, len(k_values))
    best = best_point(points)
    result: dict[str, Any] = {
        "method": "MDAV",
        "variant": variant,
        "records": table.n,
        "k_values": k_values,
        "points": points,
        "best_k": best["k"] if best is not None else None,
        "measure_parameters": parameters,
    }
    if risk is not None:
        result["risk_by_k"] = by_k
    return result
