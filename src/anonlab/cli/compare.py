"""Sub-command ``compare``: methods of every family on one table, one table and one R-U map.

Maps its flags to :class:`anonlab.runs.compare.CompareSettings` (the methods come from the
``--config`` file's ``[[method]]`` tables), runs it and prints the comparison table; the
run itself is library code (:mod:`anonlab.runs.compare`).
"""

from __future__ import annotations

from pathlib import Path

import typer

from anonlab.cli.common import (
    CONFIG,
    DELIMITER,
    HTML,
    OVERWRITE,
    QUIET,
    REPORT,
    as_text,
    progress_display,
    user_errors,
)
from anonlab.errors import AnonlabError

COMPARE_HELP = """Run methods of every family on one table and measure every release alike.

The --config file names the table (input), the columns the attacker knows (attacker)
and one [[method]] table per method: a name, a command (generalize, with recoding
full-domain, mondrian or local; microaggregate; perturb; suppress; mask) and that
command's own settings as in its TOML. Each method runs through its family's own run
and checker; a method that fails is reported with its error and the others still run.
Every release gets the same utility loss (NCP of coded cells, scaled gap of numbers,
0/1 of changed categories) and linkage risk (share of records an attacker who knows
their attacker values re-identifies). Example:

  anonlab compare --config examples/compare_tarragona.toml --report cmp.json
  --html cmp.html --plot cmp.png
"""

FLAGS = {"methods": "the config's [[method]] tables", "attacker": "attacker"}


@user_errors(flags=FLAGS)
def compare_command(
    config: Path | None = CONFIG,
    overwrite: bool = OVERWRITE,
    input: str | None = typer.Option(None, "--input", help="Table (default: the config's input)."),
    delimiter: str | None = DELIMITER,
    attacker: list[str] | None = typer.Option(
        None,
        "--attacker",
        help="Columns the attacker knows, comma-separated or repeated (default: the "
        "config's attacker).",
    ),
    categorical: list[str] | None = typer.Option(
        None,
        "--categorical",
        help="Attacker columns whose numbers are category codes (default: none).",
    ),
    threshold: float | None = typer.Option(
        None,
        "--threshold",
        help="Re-identification probability a record counts as at risk from (default: 0.2).",
    ),
    sample: int | None = typer.Option(
        None,
        "--sample",
        help="Original records linked on a larger table, a seeded sample (default: 5000).",
    ),
    seed: int | None = typer.Option(None, "--seed", help="Seed of that sample (default: 0)."),
    report: Path | None = REPORT,
    html: Path | None = HTML,
    plot: Path | None = typer.Option(None, "--plot", help="PNG of the R-U map (default: none)."),
    releases: str | None = typer.Option(
        None,
        "--releases",
        help="Folder receiving each method's release as NAME.csv (default: none).",
    ),
    quiet: bool = QUIET,
) -> None:
    """Compare methods of every family on one table (see --help for an example)."""
    from anonlab.runs.compare import CompareSettings, run_compare, summary_rows

    if config is None:
        raise AnonlabError(
            "give --config: a TOML file with the input, the attacker columns and one "
            "[[method]] table per method (e.g. examples/compare_tarragona.toml)"
        )
    s = CompareSettings.load(
        config,
        overwrite=overwrite,
        input=input,
        delimiter=delimiter,
        attacker=attacker,
        categorical=categorical,
        threshold=threshold,
        sample=sample,
        seed=seed,
        report=as_text(report),
        html=as_text(html),
        plot=as_text(plot),
        releases=releases,
    )
    if s.report is None and s.html is None and s.plot is None and s.releases is None:
        raise AnonlabError("nothing to write: give --report, --html, --plot and/or --releases")
    with progress_display(quiet) as progress:
        out = run_compare(s, progress=progress).report
    if quiet:
        return
    rows = summary_rows(out["methods"])
    print(format_table(rows))
    for row in rows:
        if row["status"] != "ok":
            print(f"{row['name']} failed: {row['error']}")
    measured = "a sample of" if out["sampled"] else "all"
    print(
        f"{len(out['methods'])} methods on {out['records']} records ({measured} "
        f"{min(out['sample'], out['records'])} linked); {out['cpu_seconds']:.1f} s CPU"
        + (f"; failed: {', '.join(out['failed'])}" if out["failed"] else "")
    )


def format_table(rows: list[dict[str, object]]) -> str:
    """The comparison as aligned text: one line per method."""
    headers = ["method", "command", "loss", "risk", "at risk", "suppressed", "CPU s"]
    lines = [headers]
    for row in rows:
        if row["status"] != "ok":
            lines.append([str(row["name"]), str(row["command"]), "failed", "", "", "", ""])
            continue
        lines.append(
            [
                str(row["name"]),
                str(row["command"]),
                f"{row['utility_loss']:.4f}",
                f"{row['linkage_mean']:.4f}",
                f"{row['linkage_at_risk']:.4f}",
                str(row["suppressed_records"]),
                f"{row['cpu_seconds']:.2f}",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return "\n".join(
        "  ".join(
            text.ljust(w) if i < 2 else text.rjust(w)
            for i, (text, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    )


def register(app: typer.Typer) -> None:
    """Add ``compare`` to ``app``."""
    app.command("compare", help=COMPARE_HELP)(compare_command)
