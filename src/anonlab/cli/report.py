"""Sub-command ``report``: one self-contained HTML page from any earlier JSON report."""

from __future__ import annotations

from pathlib import Path

import typer

from anonlab.cli.common import QUIET, user_errors
from anonlab.errors import AnonlabError

REPORT_HELP = """Turn the JSON report of any anonlab command into one HTML page.

The page holds the settings, a plain-language summary, every figure the
report measured and its plots, in one file with no network resources and no
JavaScript; it prints well. The default page is safe to share: it never shows
records, unique combinations or suppressed rows. --internal makes the
custodian's copy, which may show examples of original values and says so at
the top. Examples:

  anonlab report out/adult_k5.json --html out/adult_k5.html

  anonlab report out/adult_k5.json --html internal.html --internal --plot classes.png

  anonlab report ru.json --html ru.html --plot ru.png     # tradeoff: the R-U map
"""


@user_errors
def report_command(
    report_in: Path = typer.Argument(..., help="JSON report written by an anonlab command."),
    html: Path | None = typer.Option(None, "--html", help="HTML page to write."),
    internal: bool = typer.Option(
        False,
        "--internal/--shareable",
        help="The custodian's copy, which may show original "
        "values, or the shareable page (default: shareable).",
    ),
    plot: Path | None = typer.Option(
        None, "--plot", help="Also write the command's main figure as PNG."
    ),
    quiet: bool = QUIET,
) -> None:
    """Render a JSON report as HTML (see --help for examples)."""
    from anonlab.htmlreport import load_report, render_html
    from anonlab.htmlreport.plots import png_bytes
    from anonlab.htmlreport.render import main_figure
    from anonlab.outputs import Outputs

    if html is None and plot is None:
        raise AnonlabError("nothing to write: give --html PAGE.html and/or --plot FIGURE.png")
    # every output is checked (not the report read, not a folder, not each other) before the
    # report is read; both are written or neither
    outputs = Outputs({"html": html, "plot": plot}, inputs=[report_in])
    for out, suffixes in ((html, (".html", ".htm")), (plot, (".png",))):
        if out is not None and out.suffix.lower() not in suffixes:
            raise AnonlabError(f"'{out}' should end in {' or '.join(suffixes)}")
    with outputs:
        report = load_report(report_in)
        if html is not None:
            # files the report names (hierarchies) are relative to its folder; then as given
            page = render_html(
                report,
                internal,
                base_dirs=[report_in.resolve().parent, Path.cwd()],
                source=str(report_in),
            )
            outputs.stage("html", lambda tmp: tmp.write_text(page, encoding="utf-8"))
        if plot is not None:
            data = png_bytes(main_figure(report))
            outputs.stage("plot", lambda tmp: tmp.write_bytes(data))
        outputs.commit()
    if not quiet:
        written = [str(p) for p in (html, plot) if p is not None]
        kind = "internal" if internal else "shareable"
        print(f"wrote {' and '.join(written)} ({kind} report of '{report['command']}')")


def register(app: typer.Typer) -> None:
    """Add ``report`` to ``app``."""
    app.command("report", help=REPORT_HELP)(report_command)
