"""Sections of the fusion family: ``fuse`` (all parties in one process) and ``party``.

Top-down specialization over several providers (NOTES §3): the rounds run,
each anonymity template with its smallest group, the fused table's
attributes and final cut, the specializations in order, the bytes sent.
"""

from __future__ import annotations

from anonlab.htmlreport.sections.context import Built, RenderContext
from anonlab.htmlreport.sections.layout import Plan, plan_sections

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


def fusion_sections(ctx: RenderContext) -> Built:
    """Sections of a ``fuse`` or ``party`` report."""
    return plan_sections(ctx, FUSION_PLAN)
