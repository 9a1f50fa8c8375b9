"""Sub-command ``risk``: measure the re-identification risk of any table."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import (
    DASK_WORKERS,
    DELIMITER,
    INSENSITIVE,
    MAX_RISK,
    MEMORY_LIMIT,
    OTHER,
    POPULATION,
    QUERY,
    QUIET,
    REPORT,
    RISK_THRESHOLD,
    SAMPLING_FRACTION,
    SCHEDULER,
    SENSITIVE,
    SHEET,
    STORAGE_OPTION,
    TABLE,
    WEIGHTS,
    key_value,
    storage_options_of,
    user_errors,
)
from anonlab.errors import AnonlabError

RISK_HELP = """Measure the re-identification risk of any table, e.g. another tool's release.

The attacker knows the --qi columns and nothing else, as sdcMicro's keyVars
and ARX's quasi-identifiers (--attacker-columns names other ones). Every
column needs a role: --qi, --sensitive, --insensitive (not known to the
attacker), --weights, or --other insensitive for all the rest. A record whose
attacker columns all hold '*' is suppressed: it is left out and counted.
The report holds ARX's prosecutor, journalist and marketer risk, records at
risk, class sizes, sample uniques, population uniques (Pitman, Zayatz, SNB,
Dankar; with --population or --sampling-fraction), sdcMicro's individual and
global risk (with --weights), SUDA2 scores, and for each sensitive attribute
the smallest distinct and entropy l and the largest t (docs/risk.md).
Examples:

  anonlab risk out/adult_k5.csv --qi sex,age,race --sensitive salary-class --other insensitive

  anonlab risk testdata.csv --qi urbrur,water,sex,age --weights sampling_weight --other insensitive

  anonlab risk release.csv --qi age,sex,zip --insensitive visits --report risk.json

  anonlab risk sqlite:///releases.db --table adult_k5 --qi sex,age,race --other insensitive

  anonlab risk big_release/ --qi age,sex,zip --engine dask --workers 2 --memory-limit 4GB

With --engine dask the table (a Parquet folder, file or glob, or a CSV file)
is counted on a Dask cluster and only its frequency set comes back: the
figures are those of --engine numpy; --weights needs the records in memory.
"""

FLAGS = {
    "input": "the TABLE argument",
    "table_name": "--table",
    "population_size": "--population",
    "thresholds": "--risk-threshold",
    "hierarchies": "--hierarchy",
}
QI = typer.Option(..., "--qi", help="Quasi-identifiers, comma-separated: the attacker's knowledge.")


def _names(text: str | None, flag: str) -> list[str]:
    """A comma-separated list of column names ('' -> [])."""
    if text is None:
        return []
    names = [part.strip() for part in text.split(",") if part.strip()]
    if len(set(names)) != len(names):
        raise AnonlabError(f"{flag} names a column twice: {text}")
    return names


def _hierarchies(items: list[str]) -> dict[str, Path]:
    """``COLUMN=FILE`` items as a mapping."""
    out: dict[str, Path] = {}
    for item in items:
        pair = key_value(item)
        if pair is None:
            raise AnonlabError(
                f"--hierarchy takes COLUMN=FILE (got '{item}'), e.g. "
                "--hierarchy salary-class=hierarchy_salary.csv"
            )
        out[pair[0]] = Path(pair[1])
    return out


def _percent(value: Any) -> str:
    return "-" if value is None else f"{100.0 * float(value):.2f} %"


def _summary(report: dict[str, Any]) -> None:
    """Print the headline figures as Rich tables."""
    from rich.console import Console
    from rich.table import Table

    risk = report["risk"]
    console = Console()
    table = Table(
        title=f"Re-identification risk ({risk['records']} records, "
        f"{risk['suppressed']} suppressed, {risk['classes']['count']} classes)"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    pros, jour = risk["prosecutor"], risk["journalist"]
    table.add_row("prosecutor highest", _percent(pros["highest"]))
    table.add_row("prosecutor average", _percent(pros["average"]))
    for t, share in pros["records_at_risk"].items():
        table.add_row(f"records at risk > {t}", _percent(share))
    table.add_row(f"journalist highest ({jour['population']})", _percent(jour["highest"]))
    table.add_row("marketer", _percent(risk["marketer"]["average"]))
    table.add_row("sample uniques", _percent(risk["sample_uniques"]))
    population = risk.get("population_uniques")
    if population is not None:
        table.add_row(
            f"population uniques (Dankar: {population['dankar_model']})",
            _percent(population["dankar"]),
        )
    individual = risk["individual_risk"]
    table.add_row(
        "expected re-identifications (sdcMicro)", f"{individual['expected_reidentifications']:.2f}"
    )
    table.add_row("smallest class", str(risk["classes"]["smallest"]))
    console.print(table)
    if risk["sensitive"]:
        sens = Table(title="Sensitive attributes")
        for name in ("attribute", "distinct l", "entropy l", "t (equal)", "t (hierarchical)"):
            sens.add_column(name, justify="right" if name != "attribute" else "left")
        for column, fig in risk["sensitive"].items():
            cells = [fig["distinct_l"], fig["entropy_l"], fig["t_equal"], fig["t_hierarchical"]]
            sens.add_row(column, *("-" if v is None else f"{v:.4g}" for v in cells))
        console.print(sens)
    console.print(
        f"attacker knows: {', '.join(risk['attacker_columns'])} ({report['attacker_knowledge']})"
    )


def risk_command(
    table: str = typer.Argument(
        ...,
        help="Table to measure: CSV, Parquet, Excel or a SQLAlchemy URL with --table or "
        "--query (with --engine dask also a Parquet folder or glob).",
    ),
    qi: str = QI,
    attacker_columns: str | None = typer.Option(
        None,
        "--attacker-columns",
        help="Columns the attacker knows, comma-separated (default: the --qi columns).",
    ),
    sensitive: list[str] | None = SENSITIVE,
    insensitive: list[str] | None = INSENSITIVE,
    other: str | None = OTHER,
    weights: str | None = WEIGHTS,
    population: float | None = POPULATION,
    sampling_fraction: float | None = SAMPLING_FRACTION,
    risk_threshold: list[float] | None = RISK_THRESHOLD,
    hierarchy: list[str] = typer.Option(
        [],
        "--hierarchy",
        help="COLUMN=FILE: hierarchy of a sensitive attribute, for t with hierarchical "
        "distance (repeatable).",
    ),
    max_risk: float | None = MAX_RISK,
    delimiter: str | None = DELIMITER,
    storage_option: list[str] | None = STORAGE_OPTION,
    sheet: str | None = SHEET,
    table_name: str | None = TABLE,
    query: str | None = QUERY,
    report: str | None = REPORT,
    engine: str = typer.Option(
        "numpy",
        "--engine",
        help="Where the rows are read: numpy (this process, the whole "
        "table) | dask (a Dask cluster counts the frequency set; docs/risk.md, 'On Dask').",
    ),
    scheduler: str | None = SCHEDULER,
    workers: int | None = DASK_WORKERS,
    memory_limit: str | None = MEMORY_LIMIT,
    quiet: bool = QUIET,
) -> None:
    """Measure a table's re-identification risk (see --help for examples)."""
    from anonlab.errors import ReleaseRiskWarning
    from anonlab.risk.measure import DEFAULT_MAX_RISK
    from anonlab.runs.risk import run_risk

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ReleaseRiskWarning)
        result = run_risk(
            table,
            _names(qi, "--qi"),
            attacker_columns=_names(attacker_columns, "--attacker-columns") or None,
            sensitive=_names(",".join(sensitive or []), "--sensitive"),
            insensitive=_names(",".join(insensitive or []), "--insensitive"),
            other=other,
            weights=weights,
            population_size=population,
            sampling_fraction=sampling_fraction,
            thresholds=risk_threshold or [],
            hierarchies=_hierarchies(hierarchy),
            max_risk=DEFAULT_MAX_RISK if max_risk is None else max_risk,
            delimiter=delimiter,
            storage_options=storage_options_of(storage_option),
            sheet=sheet,
            table_name=table_name,
            query=query,
            report=report,
            engine=engine,
            scheduler=scheduler,
            workers=workers,
            memory_limit=memory_limit,
        )
    if not quiet:
        _summary(result.report)
        if result.written:
            print(f"wrote {', '.join(str(p) for p in result.written)}")
    from rich.console import Console

    errors = Console(stderr=True)
    for item in caught:
        if issubclass(item.category, ReleaseRiskWarning):
            errors.print(
                f"[bold yellow]ReleaseRiskWarning:[/] {item.message}",
                highlight=False,
                soft_wrap=True,
            )
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)


def register(app: typer.Typer) -> None:
    """Add ``risk`` to ``app``."""
    command: Callable[..., None] = user_errors(risk_command, flags=FLAGS)
    app.command("risk", help=RISK_HELP)(command)
