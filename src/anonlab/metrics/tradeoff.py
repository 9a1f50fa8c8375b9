"""Trade-off of the EM4ADOM model (docs/formulas.md §2, "Trade-off"): DR, score and the R-U map.

- ``DR`` = tau1 * DLD + tau2 * ID (default tau = 0.5, 0.5);
- ``score`` = gamma1 * IL + gamma2 * DR (default gamma = 0.5, 0.5; lower is better);
- the R-U map plots, for each k, disclosure risk DR against information loss IL;
  the chosen k (lowest score, the smallest k among equal scores) is marked
  (drawn by :func:`anonlab.htmlreport.plots.ru_map_figure`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_TAU = (0.5, 0.5)
DEFAULT_GAMMA = (0.5, 0.5)


def disclosure_risk(dld: float, interval: float, tau: Sequence[float] = DEFAULT_TAU) -> float:
    """DR = tau1 * DLD + tau2 * ID."""
    return float(tau[0] * dld + tau[1] * interval)


def score(il: float, dr: float, gamma: Sequence[float] = DEFAULT_GAMMA) -> float:
    """score = gamma1 * IL + gamma2 * DR (lower is better)."""
    return float(gamma[0] * il + gamma[1] * dr)


def best_point(points: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The row with the lowest finite score (the first such row among equals)."""
    scored = [
        p for p in points if isinstance(p.get("score"), int | float) and p["score"] == p["score"]
    ]
    if not scored:
        return None
    return min(scored, key=lambda p: float(p["score"]))


def ru_axes(points: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """The R-U map's (loss, risk) keys: IL and DR, or ZIL and DLD without numeric columns.

    ZIL against DLD is the paper's map for categorical data (its Adult run).
    """
    if any(p.get("IL") is not None for p in points):
        return "IL", "DR"
    return "ZIL", "DLD"
