"""What a section builder gets (the report and the render options) and gives back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anonlab.htmlreport.blocks import Section


@dataclass
class RenderContext:
    """The validated report, the version asked for, and where to look for its input files."""

    report: dict[str, Any]
    internal: bool = False
    base_dirs: list[Path] = field(default_factory=lambda: [Path.cwd()])
    cache: dict[str, Any] = field(default_factory=dict)  # inputs read once per page

    @property
    def command(self) -> str:
        return str(self.report["command"])

    @property
    def parameters(self) -> dict[str, Any]:
        params = self.report.get("parameters")
        return dict(params) if isinstance(params, dict) else {}

    def find_file(self, name: str) -> Path | None:
        """An input file named in the report, as given or relative to ``base_dirs``."""
        p = Path(name)
        candidates = [p] if p.is_absolute() else [d / p for d in self.base_dirs]
        for c in candidates:
            if c.is_file():
                return c
        return None


@dataclass
class Built:
    """A builder's sections and the top-level report keys it has shown."""

    sections: list[Section]
    used: set[str]
