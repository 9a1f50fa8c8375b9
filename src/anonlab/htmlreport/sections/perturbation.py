"""Sections of the perturbation family: ``perturb`` (OBT, RBT, ...) and ``attack``.

The privacy measures per block (NOTES §4: S = Var(X - AX)/Var(X), R = prod(1 -
1/v_i^2), P = R x S), the attack table (median relative error and the share
of records recovered within 10 % and 25 %, drawn as bars) and the clustering
agreement (adjusted Rand index of the clusterers before and after).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from anonlab.htmlreport import plots
from anonlab.htmlreport.blocks import Block, Figure
from anonlab.htmlreport.sections.context import Built, RenderContext
from anonlab.htmlreport.sections.generic import value_blocks
from anonlab.htmlreport.sections.layout import Plan, find_key, plan_sections

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

BLOCK_KEYS = ("blocks", "per_block", "privacy", "measures")
ATTACK_KEYS = ("attacks", "attack", "attack_table")
CLUSTERING_KEYS = ("clustering", "ari", "agreement", "clustering_agreement")


def _number(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _rows(value: Any, name: str = "name") -> list[dict[str, Any]]:
    """A list of objects, or an object of objects as rows named by their key."""
    if isinstance(value, list):
        return [dict(v) for v in value if isinstance(v, Mapping)]
    if isinstance(value, Mapping) and value and all(isinstance(v, Mapping)
                                                    for v in value.values()):
        return [{name: k, **v} for k, v in value.items()]
    return []


def privacy_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-block rows holding S, R or P (names matched ignoring case)."""
    for name in BLOCK_KEYS:
        key = find_key(report, name)
        if key is None:
            continue
        rows = _rows(report[key], "block")
        found = []
        for row in rows:
            upper = {str(k).upper() if str(k).upper() in ("S", "R", "P") else str(k): v
                     for k, v in row.items()}
            if any(_number(upper.get(m)) for m in ("S", "R", "P")):
                found.append(upper)
        if found:
            return found
    return []


def attack_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The attack table's rows."""
    for name in ATTACK_KEYS:
        key = find_key(report, name)
        if key is not None:
            rows = _rows(report[key], "attack")
            if rows:
                return rows
    return []


def attack_label(row: Mapping[str, Any]) -> str:
    """An attack's name with the number of known records it used, when given."""
    name = next((str(row[k]) for k in ("attack", "name", "method") if k in row), "attack")
    known = next((row[k] for k in ("known", "m", "known_records") if _number(row.get(k))), None)
    return f"{name}, {known} known" if known is not None else name


def strongest_attack(report: Mapping[str, Any]) -> tuple[str, float, str] | None:
    """(attack, share recovered, 'within 25 %') of the attack recovering most records."""
    rows = attack_rows(report)
    if not rows:
        return None
    columns = _share_columns(rows[0])
    if not columns:
        return None
    column = next((c for c in columns if "25" in c), columns[0])
    scored = [(float(r[column]), r) for r in rows if _number(r.get(column))]
    if not scored:
        return None
    share, row = max(scored, key=lambda pair: pair[0])
    return attack_label(row), share, "within " + ("25 %" if "25" in column else "10 %")


def clustering_scores(report: Mapping[str, Any]) -> dict[str, float]:
    """The clustering agreement figures (adjusted Rand index per clusterer)."""
    for name in CLUSTERING_KEYS:
        key = find_key(report, name)
        if key is None:
            continue
        value = report[key]
        if _number(value):
            return {key: float(value)}
        out: dict[str, float] = {}
        if isinstance(value, Mapping):
            for k, v in value.items():
                if _number(v):
                    out[str(k)] = float(v)
                elif isinstance(v, Mapping):
                    ari = next((x for n, x in v.items() if "ari" in str(n).lower()
                                or "rand" in str(n).lower()), None)
                    if _number(ari):
                        out[str(k)] = float(ari)
        for row in _rows(value, "clusterer") if isinstance(value, list) else []:
            ari = next((x for n, x in row.items() if "ari" in str(n).lower()
                        or "rand" in str(n).lower()), None)
            if _number(ari):
                out[str(row.get("clusterer", row.get("name", len(out))))] = float(ari)
        if out:
            return out
    return {}


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
    labels = [attack_label(r) for r in rows]
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


def attack_plot(report: Mapping[str, Any]) -> Any:
    """The attack bar chart of a perturb or attack report (None without an attack table)."""
    rows = attack_rows(report)
    return attack_figure(rows) if rows else None


def perturbation_sections(ctx: RenderContext) -> Built:
    """Sections of a ``perturb`` or ``attack`` report."""
    renderers = {name: attack_blocks for name in ("attacks", "attack", "attack_table")}
    return plan_sections(ctx, PERTURBATION_PLAN, renderers)
