"""Sub-commands ``perturb`` (and ``perturb --invert``) and ``attack`` (perturbation family).

Each command maps its flags to the library's settings
(:mod:`anonlab.runs.perturb`), runs it with a progress display and prints a
summary; the library checks, computes, verifies and writes. Each risk
warning of the library (a ``ReleaseRiskWarning``, such as the
``RecoverableReleaseWarning``) is printed as one line ``Warning: ...`` on
standard error; ``--fail-on-risk`` turns one into exit code 3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import (
    ATTACKER_COLUMNS,
    CONFIG,
    DASK_WORKERS,
    DELIMITER,
    FAIL_ON_RISK,
    HTML,
    IDENTIFYING,
    INSENSITIVE,
    MAX_RISK,
    MEMORY_LIMIT,
    OTHER,
    OVERWRITE,
    POPULATION,
    QUERY,
    QUIET,
    REPORT,
    RISK_THRESHOLD,
    SAMPLING_FRACTION,
    SCHEDULER,
    SENSITIVE,
    SENSITIVE_HIERARCHY,
    SHEET,
    STORAGE_OPTION,
    TABLE,
    WEIGHTS,
    as_text,
    engine_overrides,
    fail,
    flag_of,
    progress_display,
    read_overrides,
    role_overrides,
    user_errors,
)
from anonlab.cli.release_risk import RISK_FLAGS, risk_guard, risk_overrides

PERTURB_HELP = """Z-score numeric columns and transform them so that distances (and so
clusters) are kept: obt (pairs/triples, matrices from a seeded library with
P >= --min-privacy), rbt (pairwise rotations, Var(A - A') >= --rho), rotation
(one random orthogonal matrix) or gdp (rotation + translation + Gaussian noise
of scale --noise). The perturbed columns are the quasi-identifiers; every other
column needs a role: --identifying (dropped), --sensitive or --insensitive
(released as they are), or --other insensitive (the report lists them). The key
that undoes it goes only to --key. The report holds the attack table, the
clustering agreement, the smallest S and P over the blocks and the release's
risk, never records, the key or a block's pairing; --internal writes the
custodian's secret copy with each block's figures (owner-only). Warns when the
release alone (tied values give obt's, rbt's and a rotation's matrix away) or a
few known records recover records or columns, or the columns released
unchanged identify records (--fail-on-risk: exit code 3, nothing written), and
when a release written without --key can never be inverted. Nothing is written
unless every output can be.

Example:

  anonlab perturb data/sdc/Tarragona.csv --method obt --min-privacy 0.5 --seed 7
  --output released.csv --key key.json --report report.json

  anonlab perturb people.csv --columns age,income --identifying name
  --sensitive diagnosis --output released.csv --key key.json

  anonlab perturb --invert --key key.json released.csv --output restored.csv

  anonlab perturb --config examples/perturb_tarragona.toml

  anonlab perturb big/ --method obt --engine dask --workers 2 --memory-limit 4GB
  --output released/ --key key.json
"""

ATTACK_HELP = """Run the attacks on an original table and its perturbed release (same
records in the same order): naive, known input-output (least squares,
Procrustes, the OBT-aware attack) with each number of known records in
--known, known sample (PCA) and ICA. Reports the median relative error and the
share of records recovered within 10% and 25%. The original's columns need roles
as in perturb.

Example:

  anonlab attack data/sdc/Tarragona.csv released.csv --known 2,5,13 --report attack.json
"""

#: how the library's parameters are spelled on these commands
FLAGS = {
    "input": "the INPUT argument",
    "original": "the ORIGINAL argument",
    "released": "the RELEASED argument",
    **RISK_FLAGS,
}

# where the passes over the rows run (docs/perturbation.md, "On Dask")
ENGINE = typer.Option(
    None,
    "--engine",
    help="Where the passes over the rows run: numpy (this process) | dask (a "
    "Dask cluster; obt and rotation; --output must be a folder, ending in /) (default: numpy).",
)

# this family's own options, shared by its commands
COLUMNS = typer.Option(
    None,
    "--columns",
    help="Numeric columns to perturb, a,b,c, or "
    "all-numeric: every numeric column given no other role (default: every "
    "column given no other role).",
)
KNOWN = typer.Option(
    None, "--known", help="Numbers of known records the attacks try (default: 2,5,10)."
)


def _flag(name: str) -> str:
    return flag_of(FLAGS, name)


@user_errors(flags=FLAGS)
def perturb_command(
    input: str | None = typer.Argument(
        None,
        help="Table to perturb: CSV, Parquet, Excel or a SQLAlchemy URL (default: the "
        "config's input); with --invert, the release to restore.",
    ),
    config: Path | None = CONFIG,
    overwrite: bool = OVERWRITE,
    columns: list[str] | None = COLUMNS,
    identifying: list[str] | None = IDENTIFYING,
    sensitive: list[str] | None = SENSITIVE,
    insensitive: list[str] | None = INSENSITIVE,
    other: str | None = OTHER,
    method: str | None = typer.Option(
        None,
        "--method",
        help="obt | rbt | rotation | gdp (default: obt). Only gdp's "
        "noise hides tied values; see docs/perturbation.md, Ties.",
    ),
    min_privacy: float | None = typer.Option(
        None, "--min-privacy", help="obt: least P = R x S of every library matrix (default: 0.5)."
    ),
    rho: str | None = typer.Option(
        None,
        "--rho",
        help="rbt: least Var(A - A') of the two columns of a pair, r1,r2 or r (default: 0.5).",
    ),
    noise: float | None = typer.Option(
        None, "--noise", help="gdp: deviation of the Gaussian noise on z-scores (default: 0.1)."
    ),
    seed: int | None = typer.Option(
        None,
        "--seed",
        help="Random seed (default: fresh from the operating system). It "
        "regenerates the transform: a given seed is as secret as the key.",
    ),
    library: str | None = typer.Option(
        None,
        "--library",
        help="obt: matrix library JSON, reused when it exists, else built "
        "from --seed and written there (default: none).",
    ),
    delimiter: str | None = DELIMITER,
    storage_option: list[str] | None = STORAGE_OPTION,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    output: str | None = typer.Option(
        None,
        "--output",
        help="Release: CSV, or Parquet/Excel by extension (default: none); "
        "with --invert, the restored table.",
    ),
    key: str | None = typer.Option(
        None,
        "--key",
        help="Secret key JSON, owner-only (written; read with --invert; default: none).",
    ),
    invert: bool = typer.Option(
        False,
        "--invert/--no-invert",
        help="Restore the original from a release and its --key (default: off).",
    ),
    report: str | None = REPORT,
    html: str | None = HTML,
    known: str | None = KNOWN,
    clusters: int | None = typer.Option(
        None, "--clusters", help="k of k-means and Ward in the report (default: 3)."
    ),
    attack_records: int | None = typer.Option(
        None,
        "--attack-records",
        help="Attacks and checks run on at most this many random records (default: 10000).",
    ),
    verify: bool | None = typer.Option(
        None,
        "--verify/--no-verify",
        help="Re-read the release and check it with the "
        "independent checker (distances, and inverting with the key) before anything is "
        "written (default: on).",
    ),
    internal: bool | None = typer.Option(
        None,
        "--internal/--shareable",
        help="Make --report and --html the custodian's "
        "SECRET copy: they add each block's column pairing and S, R, P (which undo the "
        "release with it), are marked secret and readable by their owner only (default: "
        "shareable).",
    ),
    attacker_columns: str | None = ATTACKER_COLUMNS,
    max_risk: float | None = MAX_RISK,
    fail_on_risk: bool | None = FAIL_ON_RISK,
    risk_threshold: list[float] | None = RISK_THRESHOLD,
    population: float | None = POPULATION,
    sampling_fraction: float | None = SAMPLING_FRACTION,
    weights: str | None = WEIGHTS,
    sensitive_hierarchy: list[str] | None = SENSITIVE_HIERARCHY,
    engine: str | None = ENGINE,
    scheduler: str | None = SCHEDULER,
    workers: int | None = DASK_WORKERS,
    memory_limit: str | None = MEMORY_LIMIT,
    quiet: bool = QUIET,
) -> None:
    """Perturb numeric columns for clustering (see --help for an example)."""
    risk = risk_overrides(locals())
    if invert:
        given = {
            "--method": method,
            "--min-privacy": min_privacy,
            "--rho": rho,
            "--noise": noise,
            "--seed": seed,
            "--library": library,
            "--report": report,
            "--html": html,
            "--known": known,
            "--clusters": clusters,
            "--attack-records": attack_records,
            "--columns": columns or None,
            "--identifying": identifying or None,
            "--sensitive": sensitive or None,
            "--insensitive": insensitive or None,
            "--other": other,
            "--internal": internal,
            **{_flag(name): value for name, value in risk.items()},
        }
        _invert(
            input,
            config,
            key,
            output,
            verify,
            quiet,
            [flag for flag, value in given.items() if value is not None],
            {**read_overrides(locals()), **engine_overrides(locals())},
        )
        return
    from anonlab.runs.perturb import PerturbSettings, check_input_override, run_perturb

    overrides: dict[str, Any] = {
        "input": input,
        "columns": columns,
        "method": method,
        "min_privacy": min_privacy,
        "rho": rho,
        "noise": noise,
        "seed": seed,
        "library": as_text(library),
        **read_overrides(locals()),
        "output": as_text(output),
        "key": as_text(key),
        "report": as_text(report),
        "html": as_text(html),
        "known": known,
        "clusters": clusters,
        "attack_records": attack_records,
        "verify": verify,
        **role_overrides(locals()),
        "internal": internal,
        **engine_overrides(locals()),
        **risk,
    }
    if config is not None:
        check_input_override(config, overrides, _flag)
    settings = PerturbSettings.load(config, overwrite=overwrite, **overrides)
    if not any((settings.output, settings.report, settings.html)):
        raise fail("nothing to write: give --output (with --key), --report and/or --html")
    with risk_guard(FLAGS), progress_display(quiet) as progress:
        result = run_perturb(settings, progress=progress)
    if not quiet:
        _print_perturb(result.report, result.written)


def _invert(
    input: str | None,
    config: Path | None,
    key: str | None,
    output: str | None,
    verify: bool | None,
    quiet: bool,
    unused: list[str],
    reading: dict[str, Any],
) -> None:
    """``perturb --invert``: restore a release with its key; ``reading``: how the release is
    read, and where (the reading and engine flags' settings)."""
    from anonlab.runs.perturb import InvertSettings, run_invert

    if unused:
        raise fail(
            f"{' and '.join(unused)} {'is' if len(unused) == 1 else 'are'} not used "
            "with --invert: drop them"
        )
    if config is not None:  # a perturb config names the original as input: not invert's
        raise fail(
            "--config describes a perturbation, not its inversion: with --invert give "
            "the release, --key and --output"
        )
    if key is None or output is None:
        raise fail("--invert needs --key (the key file) and --output (the restored table)")
    settings = InvertSettings.load(
        None,
        input=input,
        key=as_text(key),
        output=as_text(output),
        verify=verify,
        **reading,
    )
    with progress_display(quiet) as progress:
        result = run_invert(settings, progress=progress)
    if not quiet:
        report = result.report
        print(
            f"restored {len(report['columns'])} columns of {report['records']} records; "
            f"wrote {settings.output} ({report['runtime_seconds']:.2f} s)"
        )
        if report["not_restored"]:
            print(
                f"not restored: {', '.join(report['not_restored'])} (dropped as identifying "
                "when perturbing: in no release, so no key brings them back)"
            )


def _print_perturb(report: dict[str, Any], written: list[Path]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="anonlab perturb", show_header=False)
    table.add_row("method", str(report["method"]))
    table.add_row("columns", f"{len(report['columns'])} in {report['blocks_count']} block(s)")
    table.add_row("records", str(report["records"]))
    summary = report.get("privacy_summary")
    if summary and summary["min_P"] is not None:
        table.add_row(
            "S, P per block",
            f"smallest S {summary['min_S']:.4g}, smallest P {summary['min_P']:.4g}",
        )
    if "attacks" in report:
        best = max(report["attacks"], key=lambda r: r["within_10"])
        table.add_row(
            "strongest attack",
            f"{best['attack']} (known {best['known']}): "
            f"{best['within_10']:.0%} of records within 10%",
        )
        cols = max(report["attacks"], key=lambda r: r.get("columns_recovered", 0))
        if cols.get("columns_recovered"):
            table.add_row(
                "columns recovered",
                f"{cols['columns_recovered']} of "
                f"{len(report['columns'])} within 10% ({cols['attack']}, known "
                f"{cols['known']})",
            )
        cl = report["clustering"]
        table.add_row(
            "clustering ARI",
            f"k-means {cl['kmeans']:.4g}, DBSCAN {cl['dbscan']:.4g}, Ward {cl['ward']:.4g}",
        )
    table.add_row("verified", "yes" if report.get("verified") else "no")
    risk = report["risk"]["prosecutor"]
    table.add_row(
        "risk (all released columns known)",
        f"prosecutor highest {risk['highest']:.4g}, average {risk['average']:.4g}",
    )
    unchanged = report.get("risk_of_unchanged")
    if unchanged is not None:
        table.add_row(
            "risk (columns released unchanged)",
            f"prosecutor highest {unchanged['prosecutor']['highest']:.4g}; "
            f"{', '.join(unchanged['attacker_columns'])}",
        )
    if report.get("insensitive_by_other"):
        table.add_row(
            "released unchanged (--other insensitive)", ", ".join(report["insensitive_by_other"])
        )
    if report.get("secret"):
        table.add_row("SECRET", "the report/page hold each block's pairing: keep them with the key")
    table.add_row("wrote", ", ".join(str(p) for p in written))
    table.add_row("time", f"{report['runtime_seconds']:.2f} s")
    Console().print(table)


@user_errors(flags=FLAGS)
def attack_command(
    original: str | None = typer.Argument(
        None,
        help="Original table: CSV, Parquet, Excel or a SQLAlchemy URL (default: the config's).",
    ),
    released: str | None = typer.Argument(
        None, help="Its perturbed release, same records in the same order (default: the config's)."
    ),
    config: Path | None = CONFIG,
    overwrite: bool = OVERWRITE,
    columns: list[str] | None = COLUMNS,
    identifying: list[str] | None = IDENTIFYING,
    sensitive: list[str] | None = SENSITIVE,
    insensitive: list[str] | None = INSENSITIVE,
    other: str | None = OTHER,
    known: str | None = KNOWN,
    sample: str | None = typer.Option(
        None,
        "--sample",
        help="Attacker's independent sample for PCA/ICA (default: a random half of the original).",
    ),
    seed: int | None = typer.Option(None, "--seed", help="Random seed (default: 0)."),
    max_records: int | None = typer.Option(
        None,
        "--max-records",
        help="Attack a random subset of at most this many records (default: all).",
    ),
    delimiter: str | None = DELIMITER,
    storage_option: list[str] | None = STORAGE_OPTION,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    report: str | None = REPORT,
    html: str | None = HTML,
    quiet: bool = QUIET,
) -> None:
    """Measure what an attacker recovers from a release (see --help for an example)."""
    from anonlab.runs.perturb import AttackSettings, run_attack

    settings = AttackSettings.load(
        config,
        overwrite=overwrite,
        original=original,
        released=released,
        columns=columns,
        known=known,
        sample=as_text(sample),
        seed=seed,
        max_records=max_records,
        **read_overrides(locals()),
        report=as_text(report),
        html=as_text(html),
        **role_overrides(locals()),
    )
    with risk_guard(FLAGS), progress_display(quiet) as progress:
        result = run_attack(settings, progress=progress)
    if not quiet:
        _print_attacks(result.report["attacks"], result.report["runtime_seconds"])


def _print_attacks(rows: list[dict[str, Any]], seconds: float) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"anonlab attack ({seconds:.2f} s)")
    for col in ("attack", "known", "median rel. error", "within 10%", "within 25%", "columns"):
        table.add_column(col, justify="left" if col == "attack" else "right")
    for r in rows:
        table.add_row(
            r["attack"],
            str(r["known"]),
            f"{r['median_relative_error']:.4g}",
            f"{r['within_10']:.1%}",
            f"{r['within_25']:.1%}",
            str(r.get("columns_recovered", "")),
        )
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``perturb`` and ``attack`` to ``app``."""
    app.command("perturb", help=PERTURB_HELP)(perturb_command)
    app.command("attack", help=ATTACK_HELP)(attack_command)
