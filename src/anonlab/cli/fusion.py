"""Sub-command ``fuse``: multi-party fusion with every provider in this process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import progress_display, user_errors

FUSE_HELP = """Fuse the providers' tables by top-down specialization, all in this process.

The plain (not private) maximum replaces the secure one, so this is for trying
settings, tests and demos; `anonlab party` runs the real protocol with one
process per party. Paths in the TOML file are relative to its folder. The
outputs are written together, only after the fused table passed the
independent template check (unless --no-verify).

Example:

  anonlab fuse examples/fusion/fusion.toml --output fused.csv --report fused.json
"""


def _text(path: Path | None) -> str | None:
    return None if path is None else str(path)


@user_errors
def fuse_command(
    config: Path = typer.Argument(..., help="fusion.toml naming parties, templates, taxonomies."),
    output: Path | None = typer.Option(
        None, "--output", help="Fused table (.csv, or .parquet). (default: none)"
    ),
    report: Path | None = typer.Option(None, "--report", help="JSON report. (default: none)"),
    html: Path | None = typer.Option(
        None, "--html", help="Shareable HTML report (see `anonlab report`). (default: none)"
    ),
    score: str | None = typer.Option(
        None, "--score", metavar="sensitivity|tds",
        help="Score of a specialization (default: the config's fusion.score).",
    ),
    keep_id: bool | None = typer.Option(
        None, "--keep-id/--drop-id",
        help="Keep the record-id column in the fused table (default: the config's keep_id).",
    ),
    verify: bool | None = typer.Option(
        None, "--verify/--no-verify",
        help="Re-read the fused table and check every template independently (default: on).",
    ),
    quiet: bool = typer.Option(False, "--quiet", help="No progress and no summary."),
) -> None:
    """Fuse providers' tables in one process (see --help for an example)."""
    from anonlab.runs.fusion import FuseSettings, run_fuse

    settings = FuseSettings.load(None, config=str(config), output=_text(output),
                                 report=_text(report), html=_text(html), score=score,
                                 keep_id=keep_id, verify=verify)
    with progress_display(quiet) as progress:
        result = run_fuse(settings, progress=progress)
    if not quiet:
        _print_summary(result.report)


def _print_summary(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="anonlab fuse (in-process, not private)", show_header=False)
    table.add_row("providers", ", ".join(report["providers"]))
    table.add_row("records", str(report["records"]))
    table.add_row("score", report["score"])
    table.add_row("rounds", f"{report['rounds']} ({report['rounds_per_second']:.0f}/s)")
    for t in report["templates"]:
        table.add_row(f"template k={t['k']}",
                      f"{', '.join(t['qid'])}: smallest group {t['smallest_group']}")
    for note in report["dropped_templates"]:
        table.add_row("dropped", note)
    table.add_row("verified", "yes" if report["verified"] else "no")
    table.add_row("time", f"{report['runtime_seconds']:.2f} s")
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add the ``fuse`` sub-command to ``app``."""
    app.command("fuse", help=FUSE_HELP)(fuse_command)
