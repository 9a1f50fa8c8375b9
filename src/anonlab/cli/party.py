"""Sub-command ``party``: one real party of a networked fusion (one process per host)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import user_errors
from anonlab.errors import AnonlabError

PARTY_HELP = (
    "Run one party of a multi-party fusion: one process per party, each on its own host, all "
    "with the same fusion.toml.\n\n"
    "Every provider reads only its own file; each round's winner is picked by an MPyC secure "
    "max and its instructions travel over TLS. At the end every provider writes the same fused "
    "table; a helper (role = \"helper\") writes only its report. At least 3 parties are "
    "needed (with two providers add a helper). See docs/fusion-protocol.md.\n\n"
    "Example (certificates first, then one command per party):\n\n"
    "  anonlab party examples/fusion/fusion.toml --make-certs examples/fusion/certs\n\n"
    "  anonlab party examples/fusion/fusion.toml --party provider-a --output a.csv\n\n"
    "  anonlab party examples/fusion/fusion.toml --party provider-b --output b.csv\n\n"
    "  anonlab party examples/fusion/fusion.toml --party recipient --report r.json\n"
)


@user_errors
def party_command(
    config: Path = typer.Argument(..., help="fusion.toml naming the parties (the same for all)."),
    party: str | None = typer.Option(None, "--party", help="This party's id in the config."),
    output: Path | None = typer.Option(
        None, "--output", help="Fused table (CSV or .parquet); providers only."
    ),
    report: Path | None = typer.Option(None, "--report", help="JSON report of this party."),
    html: Path | None = typer.Option(
        None, "--html", help="Shareable HTML report (see `anonlab report`)."
    ),
    timeout: float = typer.Option(
        120.0, "--timeout", help="Seconds to wait for another party at any step of the run."
    ),
    connect_timeout: float = typer.Option(
        300.0, "--connect-timeout",
        help="Seconds to wait for the other parties to start, connect and read their data.",
    ),
    make_certs: Path | None = typer.Option(
        None, "--make-certs",
        help="Write a test CA and a certificate + key per party into this folder, then exit.",
    ),
    quiet: bool = typer.Option(False, "--quiet", help="No summary output."),
) -> None:
    """Run one party of a networked fusion (see --help for an example)."""
    from anonlab.fusion.config import load_config

    fusion_config = load_config(config)
    if make_certs is not None:
        _make_certs(fusion_config, make_certs, quiet)
        return
    if party is None:
        raise AnonlabError("give --party ID (one of the config's [[parties]] ids)")
    if timeout <= 0 or connect_timeout <= 0:
        bad = "--timeout" if timeout <= 0 else "--connect-timeout"
        raise AnonlabError(f"{bad} must be a positive number of seconds")
    run_party_command(fusion_config, party, output=output, report=report, html=html,
                      timeout=timeout, connect_timeout=connect_timeout, quiet=quiet)


def _make_certs(config: Any, folder: Path, quiet: bool) -> None:
    from anonlab.fusion.certs import make_certificates

    written = make_certificates(folder, [(p.id, p.host) for p in config.parties])
    if not quiet:
        typer.echo(f"wrote {len(written)} files to {folder} (keep ca.key private)")


def run_party_command(
    config: Any, party: str, *, output: Path | None, report: Path | None, html: Path | None,
    timeout: float, connect_timeout: float, quiet: bool,
) -> dict[str, Any]:
    """Check the outputs, run the party, and write only after every party finished."""
    from anonlab.fusion.party import check_party_setup, run_party
    from anonlab.io import check_outputs, write_json, write_table
    from anonlab.report import report_header

    me = config.party(party)
    if me.role == "helper" and output is not None:
        raise AnonlabError(f"party '{party}' is a helper: it holds no data and writes no table; "
                           "leave out --output (give --report)")
    if me.role == "provider" and output is None and report is None and html is None:
        raise AnonlabError("nothing to write: give --output, --report and/or --html")
    if me.role == "helper" and report is None and html is None:
        raise AnonlabError("nothing to write: give --report and/or --html")
    inputs = [me.file, config.source, *config.taxonomies.values(), *config.tls.values()]
    check_outputs({"--output": output, "--report": report, "--html": html},
                  [p for p in inputs if isinstance(p, str)])
    check_party_setup(config, party)
    outcome = run_party(config, party, timeout=timeout, connect_timeout=connect_timeout)
    params = {"config": config.source, "party": party, "timeout": timeout,
              "connect_timeout": connect_timeout, "output": str(output) if output else None}
    full = report_header("party", params, {"data": me.file, "config": config.source})
    full.update(outcome.report())
    if output is not None and outcome.result is not None:
        write_table(outcome.result.table, output)
    if report is not None:
        write_json(full, report)
    if html is not None:
        from anonlab.htmlreport import write_html

        write_html(full, html)
    if not quiet:
        _print_summary(full)
    return full


def _print_summary(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"anonlab party {report['party']} ({report['role']})", show_header=False)
    table.add_row("rounds", str(report["rounds"]))
    table.add_row("secure max", f"{report['secure_max_ms_per_call']:.1f} ms per call")
    for row in report.get("templates", []):
        table.add_row(f"<{', '.join(row['qid'])}; k={row['k']}>",
                      f"smallest group {row['smallest_group']}")
    table.add_row("bytes sent", ", ".join(f"{p} {b}" for p, b in report["bytes_sent"].items()))
    table.add_row("time", f"{report['time_seconds']:.2f} s")
    Console(stderr=True).print(table)


def register(app: typer.Typer) -> None:
    """Add the ``party`` sub-command."""
    app.command("party", help=PARTY_HELP)(party_command)
