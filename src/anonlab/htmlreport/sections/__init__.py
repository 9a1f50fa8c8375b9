"""Report sections by command: each family's builder turns its JSON keys into blocks.

``build_sections(ctx)`` returns the settings section, the command's own
sections (dispatching on the report's ``command``), the roles and
re-identification risk sections of any report that holds them
(:mod:`~anonlab.htmlreport.sections.risk`) and, for any key no builder used,
a generic section, so a key added later is never lost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from anonlab.htmlreport.blocks import Section
from anonlab.htmlreport.sections.compare import compare_plot, compare_sections
from anonlab.htmlreport.sections.context import Built, RenderContext
from anonlab.htmlreport.sections.fusion import fusion_plot, fusion_sections
from anonlab.htmlreport.sections.generalization import (
    apply_sections,
    class_size_plot,
    generalize_sections,
)
from anonlab.htmlreport.sections.generic import HEADER_KEYS, generic_section
from anonlab.htmlreport.sections.microaggregation import (
    microaggregation_sections,
    tradeoff_plot,
    tradeoff_sections,
)
from anonlab.htmlreport.sections.perturbation import attack_plot, perturbation_sections
from anonlab.htmlreport.sections.risk import risk_sections
from anonlab.htmlreport.sections.settings import SETTINGS_KEYS, settings_section
from anonlab.htmlreport.sections.suppression import suppression_sections

Builder = Callable[[RenderContext], Built]

BUILDERS: dict[str, Builder] = {
    "generalize": generalize_sections,
    "apply": apply_sections,
    "microaggregate": microaggregation_sections,
    "evaluate": microaggregation_sections,
    "tradeoff": tradeoff_sections,
    "fuse": fusion_sections,
    "party": fusion_sections,
    "perturb": perturbation_sections,
    "attack": perturbation_sections,
    "suppress": suppression_sections,
    "compare": compare_sections,
}

# a command's natural picture for --plot (None when the report lacks its data)
FIGURES: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "generalize": class_size_plot,
    "tradeoff": tradeoff_plot,
    "fuse": fusion_plot,
    "party": fusion_plot,
    "perturb": attack_plot,
    "attack": attack_plot,
    "compare": compare_plot,
}

FAMILY: dict[str, str] = {
    "generalize": "generalization",
    "apply": "generalization",
    "microaggregate": "microaggregation",
    "evaluate": "microaggregation",
    "tradeoff": "microaggregation",
    "fuse": "fusion",
    "party": "fusion",
    "perturb": "perturbation",
    "attack": "perturbation",
    "suppress": "suppression",
    "mask": "masking",
    "compare": "comparison",
}


def build_sections(ctx: RenderContext) -> list[Section]:
    """All sections of the page, in reading order: results first, then the settings."""
    sections: list[Section] = []
    used: set[str] = set(HEADER_KEYS) | SETTINGS_KEYS
    builder = BUILDERS.get(ctx.command)
    if builder is not None:
        built = builder(ctx)
        sections.extend(built.sections)
        used |= built.used
    risk = risk_sections(ctx)  # any family: the roles of the columns and the release's risk
    sections.extend(risk.sections)
    used |= risk.used
    rest = generic_section(ctx, used, title="Further results" if builder else "Results")
    if rest is not None:
        sections.append(rest)
    sections.append(settings_section(ctx))
    return sections


__all__ = ["BUILDERS", "FAMILY", "FIGURES", "Built", "RenderContext", "build_sections"]
