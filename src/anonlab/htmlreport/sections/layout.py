"""Lay out a family's sections by a plan of report key names.

A plan is a list of (section title, anchor, key names). Each named key the
report holds (matched ignoring case; a key is shown once, in the first
section naming it) is shown in whatever shape it has, by
:func:`~anonlab.htmlreport.sections.generic.value_blocks`. Record-level keys
are left to the generic section in the external version, which names them as
hidden. Keys no plan names fall to the generic section too, so a report with
other names loses nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from anonlab.htmlreport.blocks import Block, Section
from anonlab.htmlreport.sections.context import Built, RenderContext
from anonlab.htmlreport.sections.generic import is_record_level, value_blocks

Plan = list[tuple[str, str, tuple[str, ...]]]
# a family's own way of showing one key: (context, key, value) -> blocks, or None to
# fall back to the generic rendering
KeyRenderer = Callable[[RenderContext, str, Any], list[Block] | None]


def find_key(report: Mapping[str, Any], name: str) -> str | None:
    """The key of ``report`` equal to ``name`` ignoring case."""
    for key in report:
        if str(key).lower() == name.lower():
            return str(key)
    return None


def plan_sections(ctx: RenderContext, plan: Plan,
                  renderers: Mapping[str, KeyRenderer] | None = None) -> Built:
    """The sections of ``plan`` from the keys ``ctx.report`` holds.

    ``renderers`` maps a lower-case key name to the family's own renderer of
    that key (tables with units, figures); other keys render generically.
    """
    used: set[str] = set()
    sections: list[Section] = []
    for title, anchor, names in plan:
        blocks: list[Block] = []
        for name in names:
            key = find_key(ctx.report, name)
            if key is None or key in used:
                continue
            value = ctx.report[key]
            if is_record_level(key, value) and not ctx.internal:
                continue
            used.add(key)
            render = (renderers or {}).get(key.lower())
            own = render(ctx, key, value) if render is not None else None
            blocks.extend(own if own is not None else value_blocks(key, value, key))
        if blocks:
            sections.append(Section(title, anchor, blocks))
    return Built(sections, used)
