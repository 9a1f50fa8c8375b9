"""One self-contained HTML report per JSON report: settings, summary, tables, plots.

``render_html(report)`` turns any anonlab JSON report into a single HTML page
(Jinja2 templates shipped in ``anonlab/templates``, matplotlib figures inlined
as SVG, no JavaScript). The default version is safe to share: it never shows
records, unique combinations or suppressed rows. ``internal=True`` adds the
samples a report holds (and examples of original values from hierarchy files)
and says so at the top.
"""

from __future__ import annotations

from anonlab.htmlreport.render import main_figure, render_html, write_html, write_plot
from anonlab.htmlreport.validate import load_report, validate_report

__all__ = [
    "load_report",
    "main_figure",
    "render_html",
    "validate_report",
    "write_html",
    "write_plot",
]
