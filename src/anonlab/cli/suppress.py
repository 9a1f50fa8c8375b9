"""Sub-command ``suppress``: local cell suppression (sdcMicro's ``localSuppression``/``kAnon``).

Maps its flags to :class:`anonlab.runs.suppress.SuppressSettings`, runs it and
prints a summary; the run itself is library code.
"""

from __future__ import annotations

from pathlib import Path

import typer

from anonlab.cli.common import (
    ATTACKER_COLUMNS,
    CONFIG,
    DASK_WORKERS,
    DELIMITER,
    FAIL_ON_RISK,
    HTML,
    IDENTIFYING,
    INPUT,
    INSENSITIVE,
    MAX_RISK,
    MEMORY_LIMIT,
    OTHER,
    OUTPUT_TABLE,
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
    TABLE,
    VERIFY,
    WEIGHTS,
    as_text,
    engine_overrides,
    progress_display,
    read_overrides,
    require_an_output,
    role_overrides,
    user_errors,
    verified_and_time,
)
from anonlab.cli.release_risk import RISK_FLAGS, risk_guard, risk_overrides

SUPPRESS_HELP = """Blank single key cells until every combination of the keys is k-anonymous.

sdcMicro's localSuppression (kAnon): a blank cell is released empty and matches
every value when frequencies are counted (--alpha 1, sdcMicro's default; --alpha 0
counts records with blanks towards no record without). --importance KEY=RANK ranks
the keys (1 = blanked last; default: the fewer distinct values, the more important);
--combs SIZE[=K],... makes every combination of SIZE keys K-anonymous instead of all
keys together; --strata COL makes each stratum k-anonymous on its own. Every other
column needs a role, as in microaggregate (--other insensitive releases them as
they are). The release is re-read and checked by an independent checker before
anything is written. Example:

  anonlab suppress data/sdc/testdata.csv --qi urbrur,roof,walls,water,electcon,relat,sex
  --k 3 --other insensitive --output t_k3.csv --report t_k3.json

  anonlab suppress data/sdc/testdata.csv --qi urbrur,roof,walls,water,sex --k 3
  --combs 3=5,2=10 --importance urbrur=1,sex=2,roof=3,walls=4,water=5
  --other insensitive --output t_combs.csv
"""

FLAGS = {"input": "the INPUT argument", **RISK_FLAGS}


@user_errors(flags=FLAGS)
def suppress_command(
    input: str | None = INPUT,
    config: Path | None = CONFIG,
    overwrite: bool = OVERWRITE,
    delimiter: str | None = DELIMITER,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    qi: list[str] | None = typer.Option(
        None, "--qi", help="Key variables, comma-separated or repeated (sdcMicro's keyVars)."
    ),
    k: int | None = typer.Option(None, "--k", help="Smallest frequency (default: 2)."),
    importance: list[str] | None = typer.Option(
        None,
        "--importance",
        help="KEY=RANK, comma-separated or repeated, every key ranked 1..n (1 = blanked "
        "last; default: fewer distinct values, more important).",
    ),
    combs: list[str] | None = typer.Option(
        None,
        "--combs",
        help="Combination sizes, each SIZE or SIZE=K (default: all keys together, k).",
    ),
    strata: list[str] | None = typer.Option(
        None, "--strata", help="Column(s): each stratum k-anonymous on its own (default: none)."
    ),
    alpha: float | None = typer.Option(
        None,
        "--alpha",
        help="Weight of a record with blanks in another's frequency, 0..1 (default: 1, "
        "a blank matches every value).",
    ),
    identifying: list[str] | None = IDENTIFYING,
    sensitive: list[str] | None = SENSITIVE,
    insensitive: list[str] | None = INSENSITIVE,
    other: str | None = OTHER,
    engine: str | None = typer.Option(
        None,
        "--engine",
        help="numpy (this process, the default) or dask; a folder --output ending in / or dask "
        "has the engine count the key groups and write the release as Parquet parts.",
    ),
    scheduler: str | None = SCHEDULER,
    workers: int | None = DASK_WORKERS,
    memory_limit: str | None = MEMORY_LIMIT,
    output: str | None = typer.Option(
        None, "--output", help="Release, format by extension; blanks empty (default: none)."
    ),
    output_table: str | None = OUTPUT_TABLE,
    report: Path | None = REPORT,
    html: Path | None = HTML,
    verify: bool | None = VERIFY,
    attacker_columns: str | None = ATTACKER_COLUMNS,
    max_risk: float | None = MAX_RISK,
    fail_on_risk: bool | None = FAIL_ON_RISK,
    risk_threshold: list[float] | None = RISK_THRESHOLD,
    population: float | None = POPULATION,
    sampling_fraction: float | None = SAMPLING_FRACTION,
    weights: str | None = WEIGHTS,
    sensitive_hierarchy: list[str] | None = SENSITIVE_HIERARCHY,
    quiet: bool = QUIET,
) -> None:
    """Blank key cells until the keys are k-anonymous (see --help for an example)."""
    from anonlab.runs.suppress import SuppressSettings, run_suppress

    s = SuppressSettings.load(
        config,
        overwrite=overwrite,
        input=as_text(input),
        **read_overrides(locals()),
        qi=qi,
        k=k,
        importance=importance,
        combs=combs,
        strata=strata,
        alpha=alpha,
        **role_overrides(locals()),
        **engine_overrides(locals()),
        output=output,
        output_table=output_table,
        report=as_text(report),
        html=as_text(html),
        verify=verify,
        **risk_overrides(locals()),
    )
    require_an_output(s.output, s.output_table, s.report, s.html)
    with risk_guard(FLAGS), progress_display(quiet) as progress:
        out = run_suppress(s, progress=progress).report
    if not quiet:
        per_key = ", ".join(f"{key} {n}" for key, n in out["suppressed_per_key"].items())
        lowest = min(
            (c["smallest_frequency"] / c["k"] for c in out["combinations"]),
            default=None,
        )
        print(
            f"local suppression k={s.k}: {out['cells_suppressed']} cells blanked in "
            f"{out['records_touched']} of {out['records']} records ({per_key}); "
            f"{len(out['combinations'])} combination(s) k-anonymous"
            + ("" if lowest is None or lowest >= 1 else " (NOT all)")
            + verified_and_time(out)
        )


def register(app: typer.Typer) -> None:
    """Add ``suppress`` to ``app``."""
    app.command("suppress", help=SUPPRESS_HELP)(suppress_command)
