"""Sections of the fusion family: ``fuse`` (all parties in one process) and ``party``.

Top-down specialization over several providers (NOTES §3): the rounds run,
each anonymity template with its smallest group, the fused table's
attributes and final cut, the specializations in order, the bytes sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from anonlab.htmlreport.sections.context import Built, RenderContext
from anonlab.htmlreport.sections.layout import Plan, find_key, plan_sections

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

TEMPLATE_KEYS = ("templates", "template_groups", "smallest_groups")
NAME_KEYS = ("qid", "name", "template", "attributes", "columns")
SMALLEST_WORDS = ("smallest", "min")


def _is_count(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _name(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def smallest_groups(report: Mapping[str, Any]) -> list[tuple[str, float, float | None]]:
    """Each anonymity template's (QID, smallest group, k), from the rows the report holds."""
    out: list[tuple[str, float, float | None]] = []
    for name in TEMPLATE_KEYS:
        key = find_key(report, name)
        if key is None:
            continue
        value = report[key]
        rows: list[tuple[str, Mapping[str, Any]]] = []
        if isinstance(value, list):
            rows = [("", v) for v in value if isinstance(v, Mapping)]
        elif isinstance(value, Mapping):
            rows = [(str(k), v) for k, v in value.items() if isinstance(v, Mapping)]
        for label, row in rows:
            lowered = {str(k).lower(): v for k, v in row.items()}
            smallest = next((v for k, v in lowered.items()
                             if any(w in k for w in SMALLEST_WORDS) and _is_count(v)), None)
            if not _is_count(smallest):
                continue
            qid = next((lowered[n] for n in NAME_KEYS if n in lowered), label)
            k = lowered.get("k")
            out.append((_name(qid) or "?", float(smallest), float(k) if _is_count(k) else None))
        if out:
            return out
    return out


def fusion_sections(ctx: RenderContext) -> Built:
    """Sections of a ``fuse`` or ``party`` report."""
    return plan_sections(ctx, FUSION_PLAN)
