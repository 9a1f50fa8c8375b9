"""Sub-command ``verify``: re-check a release on disk against its JSON report and input."""

from __future__ import annotations

import typer

from anonlab.cli.common import QUIET, STORAGE_OPTION, as_text, storage_options_of, user_errors

EXIT_FINDING = 1

VERIFY_HELP = """Re-check a release against the JSON report of the run that made it.

For the custodian's audit, or a release made earlier. The check shares
no code with the method that made the release: generalization (every
privacy model of the report: k-anonymity, l-diversity, t-closeness,
beta-likeness, delta-disclosure, delta-presence, k-map, risk
thresholds; and every value the hierarchy label at the report's levels,
see docs/privacy_models.md), microaggregation (groups of >= k records
whose values are the group's mean, mode or lower median), perturbation
(pairwise distances equal those of the input's z-scores; with --key, the
key undoes the release) and fusion (every anonymity template). Paths in the report are
looked for beside the report, then in the current folder; --release and
--input override them.

Exit code 0 and one summary line: the release holds. Exit code 1 and one
line naming the class, group, pair or column that fails: it does not.
Exit code 2: the check could not run (a file missing, a report of
another kind). --report writes the findings as JSON (ok, findings, the
files checked with their SHA-256); --quiet prints nothing, the exit code
says it all.

Examples:

  anonlab verify out/adult_k5.json

  anonlab verify out/tarragona_obt_report.json --key out/tarragona_obt_key.json

  anonlab verify old/report.json --release old/release.csv --input data/original.csv

  anonlab verify out/adult_k5.json --report out/adult_k5_verify.json --quiet
"""


@user_errors
def verify_command(
    report: str = typer.Argument(..., help="JSON report written with the release."),
    release: str | None = typer.Option(
        None, "--release", help="The release to check (default: the report's output)."
    ),
    input: str | None = typer.Option(
        None,
        "--input",
        help="The original table, a file or database URL (default: the report's input).",
    ),
    key: str | None = typer.Option(
        None, "--key", help="Perturbation key: also check that it undoes the release."
    ),
    seed: int | None = typer.Option(
        None,
        "--seed",
        help="A mask run's seed (its report never holds it): also draw the release again.",
    ),
    findings: str | None = typer.Option(
        None,
        "--report",
        help="JSON report of the check: ok, findings, files checked (default: none).",
    ),
    storage_option: list[str] | None = STORAGE_OPTION,
    quiet: bool = QUIET,
) -> None:
    """Check a release against its report (see --help for examples)."""
    from anonlab.runs.verify import VerifySettings, run_verify

    settings = VerifySettings(
        report_in=str(report),
        release=as_text(release),
        input=input,
        key=as_text(key),
        seed=seed,
        report=as_text(findings),
        storage_options=storage_options_of(storage_option) or {},
    )
    result = run_verify(settings)
    if not quiet:
        typer.echo(result.report["line"])
        if result.written:
            typer.echo(f"wrote {', '.join(str(p) for p in result.written)}")
    if not result.report["ok"]:
        raise typer.Exit(EXIT_FINDING)


def register(app: typer.Typer) -> None:
    """Add ``verify`` to ``app``."""
    app.command("verify", help=VERIFY_HELP)(verify_command)
