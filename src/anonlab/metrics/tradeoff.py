"""Trade-off of the EM4ADOM model (NOTES §2, "Trade-off"): DR, score and the R-U map.

- ``DR`` = tau1 * DLD + tau2 * ID (default tau = 0.5, 0.5);
- ``score`` = gamma1 * IL + gamma2 * DR (default gamma = 0.5, 0.5; lower is better);
- the R-U map plots, for each k, disclosure risk DR against information loss IL;
  the chosen k (lowest score, the smallest k among equal scores) is marked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
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
    scored = [p for p in points if isinstance(p.get("score"), int | float)
              and p["score"] == p["score"]]
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


def ru_map_png(
    points: Sequence[Mapping[str, Any]],
    path: str | Path,
    title: str = "R-U map",
    x_key: str = "IL",
    y_key: str = "DR",
) -> None:
    """Draw the R-U map (x_key against y_key per k) as a PNG, written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from anonlab.io import atomic_write

    rows = [p for p in points if p.get(x_key) is not None and p.get(y_key) is not None]
    fig, ax = plt.subplots(figsize=(5.5, 4.2), dpi=120)
    xs = [float(p[x_key]) for p in rows]
    ys = [float(p[y_key]) for p in rows]
    ax.plot(xs, ys, "-o", color="#1f5f8b", markersize=4)
    for p, x, y in zip(rows, xs, ys, strict=True):
        ax.annotate(f"k={p['k']}", (x, y), textcoords="offset points", xytext=(4, 4),
                    fontsize=8)
    best = best_point(rows)
    if best is not None:
        ax.plot([float(best[x_key])], [float(best[y_key])], "o", markersize=12,
                markerfacecolor="none", markeredgecolor="#c0392b", markeredgewidth=2,
                label=f"lowest score: k={best['k']}")
        ax.legend(loc="best", fontsize=8)
    ax.set_xlabel(f"information loss {x_key}")
    ax.set_ylabel(f"disclosure risk {y_key}")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, format="png"))
    finally:
        plt.close(fig)
