"""Sub-command ``party``: one real party of a networked fusion (one process per host)."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import (
    ATTACKER_COLUMNS,
    FAIL_ON_RISK,
    HTML,
    MAX_RISK,
    POPULATION,
    RISK_THRESHOLD,
    SAMPLING_FRACTION,
    SENSITIVE_HIERARCHY,
    WEIGHTS,
    as_text,
    progress_display,
    user_errors,
)
from anonlab.cli.fusion import VERIFY_TEMPLATES, end_rows
from anonlab.cli.release_risk import RISK_FLAGS, risk_guard, risk_overrides
from anonlab.errors import AnonlabError

PARTY_HELP = (
    "Run one party of a multi-party fusion: one process per party, each on its own host, all "
    "with the same fusion.toml.\n\n"
    "Every provider reads only its own file; each round's winner is picked by an MPyC secure "
    "max and its instructions travel over TLS. At the end every provider writes the same fused "
    'table; a helper (role = "helper") writes only its report. At least 3 parties are '
    "needed (with two providers add a helper). A connection to a party's port that fails its "
    "TLS handshake (a port scan, a certificate of another CA) is dropped with a warning, and "
    "the party keeps waiting for its peers. See docs/fusion-protocol.md.\n\n"
    "Every column needs a role, given in the config (the same for every party): a template "
    "column is a quasi-identifier; every other one is named identifying, sensitive or "
    'insensitive in its fusion table or the provider\'s parties entry, or other = "insensitive" '
    "releases the columns given no role unchanged. A column without a role stops the party "
    "before it connects. A provider measures the fused table's re-identification risk into "
    "its report; a risky release draws a warning (--fail-on-risk: exit code 3, this party "
    "writes nothing).\n\n"
    "Example (certificates first, then one command per party):\n\n"
    "  anonlab party examples/fusion/fusion.toml --make-certs examples/fusion/certs\n\n"
    "  anonlab party examples/fusion/fusion.toml --party provider-a --output a.csv\n\n"
    "  anonlab party examples/fusion/fusion.toml --party provider-b --output b.csv\n\n"
    "  anonlab party examples/fusion/fusion.toml --party recipient --report r.json\n"
)

_WARNINGS_FROM = "anonlab.fusion"

#: how the library's parameters are spelled on this command
FLAGS = {"config": "the CONFIG argument", **RISK_FLAGS}


@user_errors(flags=FLAGS)
def party_command(
    config: Path = typer.Argument(..., help="fusion.toml naming the parties (the same for all)."),
    party: str | None = typer.Option(None, "--party", help="This party's id in the config."),
    output: str | None = typer.Option(
        None, "--output", help="Fused table (.csv, or .parquet); providers only. (default: none)"
    ),
    report: Path | None = typer.Option(
        None, "--report", help="JSON report of this party. (default: none)"
    ),
    html: Path | None = HTML,
    timeout: float | None = typer.Option(
        None,
        "--timeout",
        metavar="SECONDS",
        help="Seconds to wait for another party at any step of the run (default: 120).",
    ),
    connect_timeout: float | None = typer.Option(
        None,
        "--connect-timeout",
        metavar="SECONDS",
        help="Seconds to wait for the other parties to start, connect and read their data "
        "(default: 300).",
    ),
    verify: bool | None = VERIFY_TEMPLATES,
    attacker_columns: str | None = ATTACKER_COLUMNS,
    max_risk: float | None = MAX_RISK,
    fail_on_risk: bool | None = FAIL_ON_RISK,
    risk_threshold: list[float] | None = RISK_THRESHOLD,
    population: float | None = POPULATION,
    sampling_fraction: float | None = SAMPLING_FRACTION,
    weights: str | None = WEIGHTS,
    sensitive_hierarchy: list[str] | None = SENSITIVE_HIERARCHY,
    make_certs: Path | None = typer.Option(
        None,
        "--make-certs",
        help="Write a test CA and a certificate + key per party into this folder, then exit.",
    ),
    quiet: bool = typer.Option(
        False,
        "--quiet",
        help="No progress, no summary and no connection warnings (errors "
        "and risk warnings still print).",
    ),
) -> None:
    """Run one party of a networked fusion (see --help for an example)."""
    if make_certs is not None:
        _make_certs(config, make_certs, quiet)
        return
    if party is None:
        raise AnonlabError("give --party ID (one of the config's [[parties]] ids)")
    from anonlab.runs.fusion import PartySettings, run_party

    settings = PartySettings.load(
        None,
        config=str(config),
        party=party,
        output=as_text(output),
        report=as_text(report),
        html=as_text(html),
        timeout=timeout,
        connect_timeout=connect_timeout,
        verify=verify,
        **risk_overrides(locals()),
    )
    with risk_guard(FLAGS), _warnings_to_stderr(quiet), progress_display(quiet) as progress:
        result = run_party(settings, progress=progress)
    if not quiet:
        _print_summary(result.report)


@contextlib.contextmanager
def _warnings_to_stderr(quiet: bool) -> Iterator[None]:
    """Show the library's logged warnings (dropped connections) as ``Warning: ...`` lines.

    With ``quiet`` they are not shown (Python's last-resort handler is kept
    away too).
    """
    handler: logging.Handler = logging.NullHandler() if quiet else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("Warning: %(message)s"))
    logger = logging.getLogger(_WARNINGS_FROM)
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def _make_certs(config: Path, folder: Path, quiet: bool) -> None:
    from anonlab.fusion.certs import make_certificates
    from anonlab.fusion.config import load_config

    fusion_config = load_config(config)
    written = make_certificates(folder, [(p.id, p.host) for p in fusion_config.parties])
    if not quiet:
        typer.echo(f"wrote {len(written)} files to {folder} (keep ca.key private)")


def _print_summary(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"anonlab party {report['party']} ({report['role']})", show_header=False)
    table.add_row("rounds", str(report["rounds"]))
    table.add_row("secure max", f"{report['secure_max_ms_per_call']:.1f} ms per call")
    for row in report.get("templates", []):
        table.add_row(
            f"<{', '.join(row['qid'])}; k={row['k']}>", f"smallest group {row['smallest_group']}"
        )
    table.add_row("bytes sent", ", ".join(f"{p} {b}" for p, b in report["bytes_sent"].items()))
    end_rows(table, report, report["time_seconds"])
    Console(stderr=True).print(table)


def register(app: typer.Typer) -> None:
    """Add the ``party`` sub-command."""
    app.command("party", help=PARTY_HELP)(party_command)
