"""Sections of the fusion and perturbation families, laid out by a plan of key names.

Each plan entry is a section title and the report keys (matched ignoring
case, first found wins per name) whose values it shows; any shape is
rendered (numbers, objects as lists, lists of objects as tables). Keys no
entry names fall to the generic section, so a report with other names loses
nothing. The perturbation plan also draws the attack table as a bar chart
when its rows hold the shares recovered within 10 % and 25 %.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anonlab.htmlreport import plots
from anonlab.htmlreport.blocks import Block, Figure, Section
from anonlab.htmlreport.sections.context import Built, RenderContext
from anonlab.htmlreport.sections.generic import is_record_level, value_blocks

Plan = list[tuple[str, str, tuple[str, ...]]]

FUSION_PLAN: Plan = [
    ("Fusion", "fusion", ("parties", "providers", "records", "rounds", "score", "private",
                          "protocol", "time_seconds", "rounds_per_second", "stopped",
                          "stop_reason")),
    ("Anonymity templates", "templates", ("templates", "template_groups", "smallest_groups",
                                          "dropped_templates")),
    ("The fused table: attributes and cut", "cut", ("attributes", "columns", "cut",
                                                    "final_cut", "generalization")),
    ("Specializations in order", "specializations", ("specializations", "history", "steps")),
    ("Communication", "communication", ("bytes_sent", "bytes", "messages")),
]

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

PLANS: dict[str, Plan] = {
    "fuse": FUSION_PLAN, "party": FUSION_PLAN,
    "perturb": PERTURBATION_PLAN, "attack": PERTURBATION_PLAN,
}


def _find(report: Mapping[str, Any], name: str) -> str | None:
    for key in report:
        if str(key).lower() == name.lower():
            return str(key)
    return None


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
    columns = _share_columns(rows[0])
    if not columns:
        return None
    name_key = next((k for k in ("attack", "name", "method") if k in rows[0]), None)
    labels = [" ".join(str(r.get(k, "")) for k in (name_key, "known") if k and k in r) or str(i)
              for i, r in enumerate(rows)]
    column = next((c for c in columns if "25" in c), columns[0])
    return plots.bar_figure(labels, [float(r.get(column) or 0) for r in rows],
                            ylabel=column.replace("_", " "))


def planned_sections(ctx: RenderContext) -> Built:
    """The sections of ``ctx.command``'s plan, from the keys the report holds."""
    plan = PLANS.get(ctx.command, [])
    used: set[str] = set()
    sections: list[Section] = []
    for title, anchor, names in plan:
        blocks: list[Block] = []
        for name in names:
            key = _find(ctx.report, name)
            if key is None or key in used:
                continue
            value = ctx.report[key]
            if is_record_level(key, value) and not ctx.internal:
                continue  # left to the generic section, which names it as hidden
            used.add(key)
            blocks.extend(value_blocks(key, value, key))
            if anchor == "attacks":
                fig = attack_figure(value)
                if fig is not None:
                    blocks.append(Figure(plots.svg_data_uri(fig),
                                         "Share of records an attack recovers within the "
                                         "stated relative error (higher = weaker protection).",
                                         "Bar chart of records recovered per attack"))
        if blocks:
            sections.append(Section(title, anchor, blocks))
    return Built(sections, used)
