"""Sub-command ``fuse``: multi-party fusion with every provider in this process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import (
    ATTACKER_COLUMNS,
    FAIL_ON_RISK,
    HTML,
    INSENSITIVE,
    MAX_RISK,
    OTHER,
    POPULATION,
    QUIET,
    REPORT,
    RISK_THRESHOLD,
    SAMPLING_FRACTION,
    SENSITIVE_HIERARCHY,
    WEIGHTS,
    as_text,
    figure,
    progress_display,
    sensitive_rows,
    user_errors,
)
from anonlab.cli.release_risk import RISK_FLAGS, risk_guard, risk_overrides

FUSE_HELP = """Fuse the providers' tables by top-down specialization, all in this process.

The plain (not private) maximum replaces the secure one, so this is for trying
settings, tests and demos; `anonlab party` runs the real protocol with one
process per party. Paths in the TOML file are relative to its folder.

Every column needs a role: a column of some template is a quasi-identifier;
every other one is named identifying (never leaves its provider), sensitive
or insensitive (released as it is) in the config (its fusion table or the
provider's parties entry) or with the flags below; other = "insensitive"
(--other insensitive) releases every column given no role unchanged. The
class is sensitive unless named insensitive; the record id is dropped
unless --keep-id.

The outputs are written together, only after the fused table passed the
independent template check (unless --no-verify). The report holds the
release's re-identification risk; a risky release draws a warning
(--fail-on-risk: exit code 3, nothing written).

Example:

  anonlab fuse examples/fusion/fusion.toml --output fused.csv --report fused.json
"""

#: how the library's parameters are spelled on this command
FLAGS = {"config": "the CONFIG argument", **RISK_FLAGS}

#: the independent check of a fused table (fuse and party)
VERIFY_TEMPLATES = typer.Option(
    None,
    "--verify/--no-verify",
    help="Re-read the fused table and check every template independently (default: on).",
)


@user_errors(flags=FLAGS)
def fuse_command(
    config: Path = typer.Argument(..., help="fusion.toml naming parties, templates, taxonomies."),
    output: str | None = typer.Option(
        None, "--output", help="Fused table (.csv, or .parquet). (default: none)"
    ),
    report: Path | None = REPORT,
    html: Path | None = HTML,
    score: str | None = typer.Option(
        None,
        "--score",
        metavar="sensitivity|tds",
        help="Score of a specialization (default: the config's fusion.score).",
    ),
    keep_id: bool | None = typer.Option(
        None,
        "--keep-id/--drop-id",
        help="Keep the record-id column in the fused table, as an insensitive column "
        "(default: the config's keep_id).",
    ),
    identifying: list[str] | None = typer.Option(
        None,
        "--identifying",
        help="Column(s) in no template that never leave their provider, "
        "added to the config's (comma-separated or repeated; default: none).",
    ),
    sensitive: list[str] | None = typer.Option(
        None,
        "--sensitive",
        help="Column(s) released as they are whose l and t the risk "
        "section gives, added to the config's (default: none; the class is sensitive).",
    ),
    insensitive: list[str] | None = INSENSITIVE,
    other: str | None = OTHER,
    attacker_columns: str | None = ATTACKER_COLUMNS,
    max_risk: float | None = MAX_RISK,
    fail_on_risk: bool | None = FAIL_ON_RISK,
    risk_threshold: list[float] | None = RISK_THRESHOLD,
    population: float | None = POPULATION,
    sampling_fraction: float | None = SAMPLING_FRACTION,
    weights: str | None = WEIGHTS,
    sensitive_hierarchy: list[str] | None = SENSITIVE_HIERARCHY,
    verify: bool | None = VERIFY_TEMPLATES,
    quiet: bool = QUIET,
) -> None:
    """Fuse providers' tables in one process (see --help for an example)."""
    from anonlab.runs.fusion import FuseSettings, run_fuse

    settings = FuseSettings.load(
        None,
        config=str(config),
        output=as_text(output),
        report=as_text(report),
        html=as_text(html),
        score=score,
        keep_id=keep_id,
        identifying=identifying,
        sensitive=sensitive,
        insensitive=insensitive,
        other=other,
        verify=verify,
        **risk_overrides(locals()),
    )
    with risk_guard(FLAGS), progress_display(quiet) as progress:
        result = run_fuse(settings, progress=progress)
    if not quiet:
        _print_summary(result.report)


def risk_rows(table: Any, report: dict[str, Any]) -> None:
    """The release's headline risk figures and its unchanged columns, as summary rows."""
    risk = report.get("risk") or {}
    prosecutor = risk.get("prosecutor") or {}
    if prosecutor:
        table.add_row(
            "prosecutor risk",
            f"highest {figure(prosecutor['highest'])}, average {figure(prosecutor['average'])}",
        )
    sizes = (risk.get("classes") or {}).get("sizes") or {}
    if risk:
        table.add_row(
            "unique records",
            f"{int(sizes.get('1', sizes.get(1, 0))):,} of "
            f"{int(risk['records']):,} on {', '.join(risk['attacker_columns'])}",
        )
    sensitive_rows(table, risk)
    unchanged = report.get("released_unchanged")
    if unchanged:
        table.add_row("released unchanged", ", ".join(unchanged))


def end_rows(table: Any, report: dict[str, Any], seconds: float) -> None:
    """The rows a fusion summary ends with (fuse and party): the risk figures, whether the
    fused table was verified, and the run time."""
    risk_rows(table, report)
    table.add_row("verified", "yes" if report["verified"] else "no")
    table.add_row("time", f"{seconds:.2f} s")


def _print_summary(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="anonlab fuse (in-process, not private)", show_header=False)
    table.add_row("providers", ", ".join(report["providers"]))
    table.add_row("records", str(report["records"]))
    table.add_row("score", report["score"])
    table.add_row("rounds", f"{report['rounds']} ({report['rounds_per_second']:.0f}/s)")
    for t in report["templates"]:
        table.add_row(
            f"template k={t['k']}", f"{', '.join(t['qid'])}: smallest group {t['smallest_group']}"
        )
    for note in report["dropped_templates"]:
        table.add_row("dropped", note)
    end_rows(table, report, report["runtime_seconds"])
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add the ``fuse`` sub-command to ``app``."""
    app.command("fuse", help=FUSE_HELP)(fuse_command)
