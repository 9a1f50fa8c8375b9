"""Sub-command ``fuse``: multi-party fusion with every provider in this process."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import user_errors
from anonlab.errors import AnonlabError

FUSE_HELP = """Fuse the providers' tables by top-down specialization, all in this process.

The plain (not private) maximum replaces the secure one, so this is for trying
settings, tests and demos; `anonlab party` runs the real protocol with one
process per party. Paths in the TOML file are relative to its folder.

Example:

  anonlab fuse examples/fusion/fusion.toml --output fused.csv --report fused.json --verify
"""


@user_errors
def fuse_command(
    config: Path = typer.Argument(..., help="fusion.toml naming parties, templates, taxonomies."),
    output: Path | None = typer.Option(None, "--output", help="Fused table (CSV or .parquet)."),
    report: Path | None = typer.Option(None, "--report", help="JSON report."),
    html: Path | None = typer.Option(
        None, "--html", help="Shareable HTML report (see `anonlab report`)."
    ),
    score: str | None = typer.Option(
        None, "--score", help="sensitivity | tds (overrides the config's score)."
    ),
    keep_id: bool | None = typer.Option(
        None, "--keep-id/--drop-id", help="Keep the record-id column (overrides keep_id)."
    ),
    verify: bool = typer.Option(
        False, "--verify", help="Re-check every template on the written table independently."
    ),
    quiet: bool = typer.Option(False, "--quiet", help="No summary output."),
) -> None:
    """Fuse providers' tables in one process (see --help for an example)."""
    run_fuse(config, output=output, report=report, html=html, score=score, keep_id=keep_id,
             verify=verify, quiet=quiet)


def run_fuse(
    config_path: Path, *, output: Path | None = None, report: Path | None = None,
    html: Path | None = None, score: str | None = None, keep_id: bool | None = None,
    verify: bool = False, quiet: bool = True,
) -> dict[str, Any]:
    """Load the config, fuse, verify and write as asked; returns the report."""
    from anonlab.cli.common import load_toml
    from anonlab.fusion.check import check_templates
    from anonlab.fusion.config import CONTINUOUS, config_from_dict
    from anonlab.fusion.engine import fuse
    from anonlab.io import atomic_write, check_outputs, read_table, write_json, write_table
    from anonlab.report import report_header

    started = time.perf_counter()
    if output is None and report is None and html is None:
        raise AnonlabError("nothing to write: give --output, --report and/or --html")
    data = load_toml(config_path)
    if score is not None or keep_id is not None:
        fusion = dict(data.get("fusion", {}))
        if score is not None:
            fusion["score"] = score
        if keep_id is not None:
            fusion["keep_id"] = keep_id
        data["fusion"] = fusion
    config = config_from_dict(data, config_path.parent, source=str(config_path))
    inputs: dict[str, Any] = {"config": config_path}
    inputs.update({f"provider:{p.id}": p.file for p in config.providers})
    inputs.update({f"taxonomy:{a}": f for a, f in config.taxonomies.items() if f != CONTINUOUS})
    check_outputs({"--output": output, "--report": report, "--html": html}, inputs.values())
    result = fuse(config)
    templates = [(t.qid, t.k) for t in config.templates]

    if output is not None:
        if verify:
            def writer(tmp: Path) -> None:
                staged = tmp.with_name(tmp.name + output.suffix)
                try:
                    write_table(result.table, staged)
                    problems = check_templates(read_table(staged), templates)
                    if problems:
                        raise AnonlabError(f"verification failed, nothing written: "
                                           f"{problems[0]}")
                    staged.replace(tmp)
                finally:
                    staged.unlink(missing_ok=True)

            atomic_write(output, writer)
        else:
            write_table(result.table, output)
    elif verify:
        problems = check_templates(result.table, templates)
        if problems:
            raise AnonlabError(f"verification failed, nothing written: {problems[0]}")
    params = {"config": str(config_path), "score": config.fusion.score,
              "s_aggregate": config.fusion.s_aggregate, "keep_id": config.fusion.keep_id,
              "class": config.class_column,
              "templates": [{"qid": t.qid, "k": t.k} for t in config.templates],
              "output": str(output) if output else None,
              "report": str(report) if report else None, "verify": verify}
    out = report_header("fuse", params, inputs)
    out.update(result.report())
    out["protocol"] = "in-process (plain maximum, not private)"
    out["verified"] = bool(verify)
    out["runtime_seconds"] = time.perf_counter() - started
    if report is not None:
        write_json(out, report)
    if html is not None:
        from anonlab.htmlreport import write_html

        write_html(out, html)
    if not quiet:
        _print_summary(out)
    return out


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
    table.add_row("time", f"{report['runtime_seconds']:.2f} s")
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add the ``fuse`` sub-command to ``app``."""
    app.command("fuse", help=FUSE_HELP)(fuse_command)
