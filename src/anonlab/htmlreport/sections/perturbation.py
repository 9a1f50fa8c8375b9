"""Sections of the perturbation family: ``perturb`` (OBT, RBT, ...) and ``attack``.

The privacy measures per block (NOTES §4: S = Var(X - AX)/Var(X), R = prod(1 -
1/v_i^2), P = R x S), the attack table (median relative error and the share
of records recovered within 10 % and 25 %, drawn as bars) and the clustering
agreement (adjusted Rand index of the clusterers before and after).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anonlab.htmlreport import plots
from anonlab.htmlreport.blocks import Block, Figure
from anonlab.htmlreport.sections.context import Built, RenderContext
from anonlab.htmlreport.sections.generic import value_blocks
from anonlab.htmlreport.sections.layout import Plan, plan_sections

PERTURBATION_PLAN: Plan = [
    ("Perturbation", "perturbation", ("method", "columns", "records", "blocks_count",
                                      "min_privacy", "noise", "warnings", "warning")),
    ("Privacy per block (S, R, P)", "privacy", ("blocks", "per_block", "privacy",
                                                "measures", "overall", "S", "R", "P")),
    ("Attacks: what an attacker could recover", "attacks", ("attacks", "attack",
                                                           "attack_table")),
    ("Clustering agreement", "clustering", ("clustering", "ari", "agreement",
                                           "clustering_agreement")),
]


def _share_columns(row: Mapping[str, Any]) -> list[str]:
    """Columns of an attack row that hold the share recovered within 10 % / 25 %."""
    return [str(k) for k in row if ("10" in str(k) or "25" in str(k))
            and isinstance(row[k], int | float) and not isinstance(row[k], bool)]


def attack_figure(value: Any) -> Any:
    """Bars of the share of records recovered per attack (None if the rows lack it)."""
    if isinstance(value, Mapping) and all(isinstance(v, Mapping) for v in value.values()):
        rows = [{"attack": k, **v} for k, v in value.items()]
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        rows = [dict(v) for v in value]
    else:
        return None
    if not rows:
        return None
    columns = _share_columns(rows[0])
    if not columns:
        return None
    name_key = next((k for k in ("attack", "name", "method") if k in rows[0]), None)
    labels = [" ".join(str(r.get(k, "")) for k in (name_key, "known") if k and k in r) or str(i)
              for i, r in enumerate(rows)]
    column = next((c for c in columns if "25" in c), columns[0])
    return plots.bar_figure(labels, [float(r.get(column) or 0) for r in rows],
                            ylabel=column.replace("_", " "))


def attack_blocks(ctx: RenderContext, key: str, value: Any) -> list[Block] | None:
    """The attack table and its bar chart."""
    blocks = value_blocks(key, value, key)
    fig = attack_figure(value)
    if fig is not None:
        blocks.append(Figure(plots.svg_data_uri(fig),
                             "Share of records an attack recovers within the stated relative "
                             "error (higher = weaker protection).",
                             "Bar chart of records recovered per attack"))
    return blocks


def perturbation_sections(ctx: RenderContext) -> Built:
    """Sections of a ``perturb`` or ``attack`` report."""
    renderers = {name: attack_blocks for name in ("attacks", "attack", "attack_table")}
    return plan_sections(ctx, PERTURBATION_PLAN, renderers)
