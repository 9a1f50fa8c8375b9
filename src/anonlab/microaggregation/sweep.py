"""The trade-off sweep: microaggregate for each k, evaluate, choose k by the lowest score."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from anonlab.metrics.em4adom import evaluate
from anonlab.metrics.tradeoff import best_point
from anonlab.microaggregation.masking import microaggregate
from anonlab.microaggregation.scalable import DEFAULT_BLOCK_SIZE
from anonlab.microaggregation.settings import parse_k_range

POINT_KEYS = ("ILh", "ILs", "IL", "ZIL", "ZIL_percent", "ILR", "DLD", "DLD_expected", "ID",
              "DR", "score")


def run_tradeoff(
    data: pd.DataFrame,
    ks: str | int | Sequence[int],
    columns: str | Sequence[str] | None = "all-numeric",
    *,
    nominal: Sequence[str] = (),
    ordinal: Sequence[str] = (),
    orders: Mapping[str, Sequence[str]] | None = None,
    variant: str = "exact",
    block_size: int = DEFAULT_BLOCK_SIZE,
    **measure_settings: Any,
) -> dict[str, Any]:
    """Report keys ``points`` (one row per k: k, groups, IL, DR, score, ...), ``best_k``.

    ``measure_settings`` go to :func:`anonlab.metrics.evaluate` (lambdas, tau,
    gamma, interval_p, workers). The best k has the lowest score; among equal
    scores the smallest k.
    """
    k_values = parse_k_range(ks if isinstance(ks, str | int) else list(ks))
    points: list[dict[str, Any]] = []
    parameters: dict[str, Any] = {}
    for k in k_values:
        masked = microaggregate(data, columns, k, nominal=nominal, ordinal=ordinal,
                                orders=orders, variant=variant, block_size=block_size)
        ev = evaluate(data, masked.masked, masked.columns or None, nominal=nominal,
                      ordinal=ordinal, orders=orders, **measure_settings)
        row: dict[str, Any] = {"k": k, "groups": int(masked.labels.max()) + 1}
        row.update({key: ev.measures[key] for key in POINT_KEYS if key in ev.measures})
        points.append(row)
        parameters = ev.parameters
    best = best_point(points)
    return {
        "method": "MDAV",
        "variant": variant,
        "records": int(data.shape[0]),
        "k_values": k_values,
        "points": points,
        "best_k": best["k"] if best is not None else None,
        "measure_parameters": parameters,
    }
