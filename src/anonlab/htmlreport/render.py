"""Render a JSON report as one self-contained HTML page (Jinja2, no JavaScript).

The templates live in ``anonlab/templates`` (package data): ``report.html``
is the page, ``section.html`` the default section, ``blocks.html`` the macros
for paragraphs, key/value lists, tables and figures, ``report.css`` the
screen and print style, inlined into the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from anonlab.htmlreport.sections import FAMILY, RenderContext, build_sections
from anonlab.htmlreport.sections.risk import risk_warnings
from anonlab.htmlreport.summary import plain_summary
from anonlab.htmlreport.validate import validate_report
from anonlab.paths import PathLike

TITLES = {
    "generalize": "Generalization to k-anonymity",
    "apply": "Generalization applied to a new table",
    "microaggregate": "Microaggregation",
    "evaluate": "Quality of masked data (EM4ADOM)",
    "tradeoff": "Risk-utility trade-off over k",
    "fuse": "Multi-party fusion (one process)",
    "party": "Multi-party fusion (this party)",
    "perturb": "Perturbation for clustering",
    "attack": "Attacks on a perturbed release",
    "suppress": "Cell suppression to k-anonymity",
    "mask": "Masking by an sdcMicro method",
    "compare": "Methods compared on one table",
}


@lru_cache(maxsize=1)
def environment() -> Any:
    """The Jinja2 environment over the packaged templates (autoescaping on)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    return Environment(
        loader=PackageLoader("anonlab", "templates"),
        autoescape=select_autoescape(["html", "htm"], default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(
    report: Mapping[str, Any],
    internal: bool = False,
    *,
    base_dirs: Sequence[Path] | None = None,
    source: str = "report",
) -> str:
    """The HTML page of ``report``.

    ``internal`` adds record-level samples the report holds and examples of
    original values (from the hierarchy files it names, looked up as given
    and under ``base_dirs``, default the working folder) and marks the page
    as internal at the top. Raises :class:`~anonlab.errors.AnonlabError` when
    ``report`` is not an anonlab report.
    """
    checked = validate_report(report, source)
    dirs = list(base_dirs) if base_dirs is not None else [Path.cwd()]
    ctx = RenderContext(checked, internal, dirs)
    sections = build_sections(ctx)
    command = ctx.command
    env = environment()
    return str(
        env.get_template("report.html").render(
            title=TITLES.get(command, f"anonlab {command}"),
            command=command,
            family=FAMILY.get(command, command),
            internal=internal,
            summary=plain_summary(checked),
            warnings=risk_warnings(checked),
            sections=sections,
            created=str(checked.get("created", "")).replace("+00:00", " UTC"),
            version=str(checked.get("anonlab_version", "")),
            css=env.loader.get_source(env, "report.css")[0],
        )
    )


def main_figure(report: Mapping[str, Any]) -> Any:
    """The command's natural picture (class sizes, R-U map, ...) as a matplotlib Figure.

    Raises :class:`~anonlab.errors.AnonlabError` when the report has none.
    """
    from anonlab.errors import AnonlabError
    from anonlab.htmlreport.sections import FIGURES

    checked = validate_report(report)
    make = FIGURES.get(str(checked["command"]))
    fig = make(checked) if make is not None else None
    if fig is None:
        raise AnonlabError(
            f"a '{checked['command']}' report has no plot to draw: leave out "
            "--plot (the HTML report shows every figure the report holds)"
        )
    return fig


def write_plot(report: Mapping[str, Any], path: Path) -> None:
    """Write :func:`main_figure` of ``report`` as a PNG file (atomically)."""
    from anonlab.htmlreport.plots import save_png

    save_png(main_figure(report), Path(path))


def write_html(report: Mapping[str, Any], path: PathLike, internal: bool = False) -> None:
    """Render ``report`` and write the page atomically."""
    from anonlab.io import write_text

    write_text(render_html(report, internal), path)
