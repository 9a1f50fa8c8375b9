"""Sub-commands ``microaggregate``, ``evaluate`` and ``tradeoff`` (MDAV and EM4ADOM).

Each command maps its flags to the family's settings
(:mod:`anonlab.runs.microaggregate`), runs it with a progress display and
prints a summary; the run itself is library code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import (
    ATTACKER_COLUMNS,
    CONFIG,
    DELIMITER,
    FAIL_ON_RISK,
    HTML,
    IDENTIFYING,
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
    STORAGE_OPTION,
    TABLE,
    VERIFY,
    WEIGHTS,
    as_text,
    engine_overrides,
    key_value,
    progress_display,
    read_overrides,
    require_an_output,
    role_overrides,
    user_errors,
)
from anonlab.cli.release_risk import RISK_FLAGS, risk_guard, risk_overrides
from anonlab.errors import AnonlabError

MICRO_HELP = """Microaggregate a table with MDAV: groups of k..2k-1 records share their mean.

--method onedims|pca|rmd|clustpca|influence runs sdcMicro's other methods on numeric
columns, --aggr median|trim|onestep releases another aggregate than the mean, and
--strata COL forms the groups within each stratum (in memory, a file output; onedims
also on the engines: --engine dask or a folder output ending in /).

Numeric columns get their group mean, --nominal columns the group mode, --ordinal
columns the group median: these masked columns are the quasi-identifiers. Every
other column needs a role: --identifying (dropped), --sensitive or --insensitive
(released as they are); --other insensitive releases every column given no role
unchanged (the report lists them). The release is re-read and checked by an
independent checker before anything is written (--no-verify skips it); its
re-identification risk goes into the report, and a risky release draws a warning
(--fail-on-risk: exit code 3, nothing written). Example:

  anonlab microaggregate data/sdc/Tarragona.csv --columns all-numeric --k 3
  --output t_k3.csv --report t_k3.json

  anonlab microaggregate people.csv --columns age,income --nominal sex --identifying name
  --sensitive diagnosis --k 5 --output people_k5.parquet

  anonlab microaggregate data/sdc/Tarragona.csv --method pca --aggr median --k 5
  --output t_pca.csv --report t_pca.json
"""

EVALUATE_HELP = """Score a masked table against its original with the EM4ADOM measures.

Both tables hold the same records in the same order (any tool's output). The
measured columns are --columns (all-numeric: every numeric column no other
option names), --nominal and --ordinal; the roles are microaggregate's:
--identifying, --sensitive and --insensitive columns are not measured (an
identifying column the release dropped need not be in it), and a column no
option names is not measured either. Example:

  anonlab evaluate data/sdc/Tarragona.csv t_k3.csv --lambda 0.5,0,0.5 --report eval.json

  anonlab evaluate people.csv people_k5.csv --columns all-numeric --identifying name
  --report eval.json

  anonlab evaluate big/ big_k3/ --engine dask --workers 2 --memory-limit 4GB --report eval.json
"""

TRADEOFF_HELP = """Microaggregate for each k, evaluate, and pick k on the R-U map.

Prints k, IL, DR, score and the highest prosecutor risk per k and marks the
lowest score. Columns need roles as in microaggregate. Example:

  anonlab tradeoff data/sdc/Tarragona.csv --k 3-10 --lambda 0.5,0,0.5
  --plot ru.png --report ru.json
"""

# library parameters whose flag is not "--" + the name with dashes
FLAGS = {
    "input": "the INPUT argument",
    "original": "ORIGINAL",
    "masked": "MASKED",
    "orders": "--order",
    "interval_p": "--p",
    "lambdas": "--lambda",
    "lambda_": "--lambda",
    **RISK_FLAGS,
}

# this family's own options, shared by its commands
TABLE_TO_MASK = typer.Argument(None, help="Table to mask (CSV, Parquet, Excel or URL).")
COLUMNS = typer.Option(
    None,
    "--columns",
    help="Numeric columns: comma-separated names or all-numeric (default: all-numeric).",
)
NOMINAL = typer.Option(
    None, "--nominal", help="Nominal column(s), comma-separated or repeated (default: none)."
)
ORDINAL = typer.Option(
    None, "--ordinal", help="Ordinal column(s), comma-separated or repeated (default: none)."
)
ORDER = typer.Option(
    None,
    "--order",
    help="Order of an ordinal column's values: "
    "COLUMN=v1,v2,... (default: numbers ascending if all values are numbers, "
    "else text order).",
)
METHOD = typer.Option(
    None,
    "--method",
    help="mdav | onedims (each column ranked alone) | pca (first principal component) | "
    "rmd (robust Mahalanobis distance, seeded) | clustpca | influence (CLARA clusters); "
    "sdcMicro's methods, see docs/em4adom.md (default: mdav).",
)
AGGR = typer.Option(
    None,
    "--aggr",
    help="What a group releases: mean | median | trim (trimmed mean, --trim) | onestep; "
    "sdcMicro's measure, for the methods other than mdav (default: mean).",
)
TRIM = typer.Option(
    None, "--trim", help="Share cut off each end of a group for --aggr trim, 0..0.5 (default: 0)."
)
STRATA = typer.Option(
    None,
    "--strata",
    help="Column(s): the groups are formed within each stratum, released as they are "
    "(default: none).",
)
SEED = typer.Option(
    None,
    "--seed",
    help="Seed of rmd's robust covariance, the only method that draws random numbers "
    "(default: drawn, and recorded in the report).",
)
VARIANT = typer.Option(
    None, "--variant", help="exact or scalable (k-d blocks, numeric columns only) (default: exact)."
)
BLOCK_SIZE = typer.Option(
    None, "--block-size", help="Largest block of the scalable variant (default: 16384)."
)
LAMBDA = typer.Option(
    None,
    "--lambda",
    help="ILs weights l1,l2,l3 of IL1, IL2, IL3 (default: 1/3 each; the paper 0.5,0,0.5).",
)
TAU = typer.Option(None, "--tau", help="DR weights of DLD and ID (default: 0.5,0.5).")
GAMMA = typer.Option(None, "--gamma", help="Score weights of IL and DR (default: 0.5,0.5).")
P_VALUES = typer.Option(
    None,
    "--p",
    help="ID interval size(s) in percent: 5, 1,5,10 or 1-10 (default: the mean over 1-10).",
)
WORKERS_HELP = "Threads of MDAV and DLD; -1 for every CPU (default: 1)."
MDAV_WORKERS_HELP = (
    "BLAS threads of MDAV; -1 for every CPU (default: 1). With --engine dask: "
    "the worker processes of the local Dask cluster (default: one per core)."
)
MICRO_ENGINE = typer.Option(
    None,
    "--engine",
    help="Where MDAV runs: numpy (this process) | dask (a Dask cluster; "
    "--variant scalable, numeric columns, the release a folder of Parquet parts, one per "
    "region; see docs/engine.md). A folder --output ending in / runs on the numpy engine.",
)
REGION_ROWS = typer.Option(
    None,
    "--region-rows",
    help="On an engine: the table is cut into regions of about this "
    "many records, each microaggregated apart (default: 200000).",
)
DLD_WORKERS_HELP = (
    "Threads for DLD; -1 for every CPU (default: 1). With --engine dask: the "
    "worker processes of the local Dask cluster (default: one per core)."
)
EVALUATE_ENGINE = typer.Option(
    None,
    "--engine",
    help="Where the passes over the rows run: numpy (this process) | dask (a "
    "Dask cluster). On an engine both tables are read in pieces; DLD and ID run within blocks "
    "of --block-rows records (see docs/engine.md). Default: numpy, in memory.",
)
BLOCK_ROWS = typer.Option(
    None,
    "--block-rows",
    help="Records per block of DLD and ID on an engine; giving it runs "
    "the numpy engine (default: 20000).",
)

EVALUATE_OTHER = typer.Option(
    None,
    "--other",
    help="Role of every column given no other role: only 'insensitive' "
    "(not measured; the report lists them). Default: insensitive, as evaluate releases "
    "nothing.",
)


def _column_overrides(flags: dict[str, Any]) -> dict[str, Any]:
    """The measured columns every command of the family takes: ``--columns``,
    ``--nominal``, ``--ordinal`` and ``--order`` (``flags``: the command's parameters)."""
    return {
        "columns": flags["columns"],
        "nominal": flags["nominal"],
        "ordinal": flags["ordinal"],
        "orders": _orders(flags["order"]),
    }


def _orders(items: list[str] | None) -> dict[str, list[str]] | None:
    """Repeated ``--order COLUMN=v1,v2,...`` flags to a mapping (``None`` when none given)."""
    if not items:
        return None
    out: dict[str, list[str]] = {}
    for item in items:
        pair = key_value(item)
        if pair is None:
            raise AnonlabError(
                f"--order '{item}' is not COLUMN=v1,v2,...: e.g. --order education=low,middle,high"
            )
        out[pair[0]] = [v.strip() for v in pair[1].split(",") if v.strip()]
    return out


@user_errors(flags=FLAGS)
def microaggregate_command(
    input: str | None = TABLE_TO_MASK,
    config: Path | None = CONFIG,
    overwrite: bool = OVERWRITE,
    delimiter: str | None = DELIMITER,
    storage_option: list[str] | None = STORAGE_OPTION,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    columns: str | None = COLUMNS,
    nominal: list[str] | None = NOMINAL,
    ordinal: list[str] | None = ORDINAL,
    order: list[str] | None = ORDER,
    identifying: list[str] | None = IDENTIFYING,
    sensitive: list[str] | None = SENSITIVE,
    insensitive: list[str] | None = INSENSITIVE,
    other: str | None = OTHER,
    k: int | None = typer.Option(None, "--k", help="Smallest group size (default: 3)."),
    method: str | None = METHOD,
    aggr: str | None = AGGR,
    trim: float | None = TRIM,
    strata: list[str] | None = STRATA,
    seed: int | None = SEED,
    variant: str | None = VARIANT,
    block_size: int | None = BLOCK_SIZE,
    workers: int | None = typer.Option(None, "--workers", help=MDAV_WORKERS_HELP),
    engine: str | None = MICRO_ENGINE,
    scheduler: str | None = SCHEDULER,
    memory_limit: str | None = MEMORY_LIMIT,
    region_rows: int | None = REGION_ROWS,
    output: str | None = typer.Option(
        None,
        "--output",
        help="Masked table, format by extension; a folder of Parquet parts "
        "when it ends in / (default: none).",
    ),
    output_table: str | None = OUTPUT_TABLE,
    report: str | None = REPORT,
    html: str | None = HTML,
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
    """Microaggregate a table with MDAV (see --help for an example)."""
    from anonlab.runs.microaggregate import MicroaggregateSettings, run_microaggregate

    s = MicroaggregateSettings.load(
        config,
        overwrite=overwrite,
        input=as_text(input),
        **read_overrides(locals()),
        **_column_overrides(locals()),
        **role_overrides(locals()),
        k=k,
        method=method,
        aggr=aggr,
        trim=trim,
        strata=strata,
        seed=seed,
        variant=variant,
        block_size=block_size,
        **engine_overrides(locals()),
        region_rows=region_rows,
        output=output,
        output_table=output_table,
        report=as_text(report),
        html=as_text(html),
        verify=verify,
        **risk_overrides(locals()),
    )
    require_an_output(s.output, s.report, s.html)
    with risk_guard(FLAGS), progress_display(quiet) as progress:
        out = run_microaggregate(s, progress=progress).report
    if not quiet:
        sizes = out["group_sizes"]
        ilh = out["measures"].get("ILh")
        prosecutor = out["risk"]["prosecutor"]
        name = f"MDAV ({s.variant})" if s.method == "mdav" else s.method
        if "aggr" in out:
            name += f", {out['aggr']}" + (f" {s.trim:g}" if out["aggr"] == "trim" else "")
            name += f", strata {','.join(s.strata)}" if s.strata else ""
            name += f", seed {out['seed']}" if out.get("seed") is not None else ""
        print(
            f"{name} k={s.k}: {out['records']} records in {out['groups']} groups "
            f"of {sizes['min']}..{sizes['max']}"
            + (" in each column" if out.get("per_column") else "")
            + (f"; SSE/SST = {100 * ilh:.4f} %" if ilh is not None else "")
            + f"; prosecutor risk highest {prosecutor['highest']:.4g}, average "
            f"{prosecutor['average']:.4g}"
            + ("; release verified" if out.get("verified") else "")
            + _engine_text(out.get("engine"))
            + f"; {out['runtime_seconds']:.2f} s"
        )
        if out.get("insensitive_by_other"):
            print(
                f"released unchanged (--other insensitive): "
                f"{', '.join(out['insensitive_by_other'])}"
            )


def _engine_text(engine: dict[str, Any] | None) -> str:
    """The summary line's engine part: MDAV's regions, or the parts of onedims's release."""
    if engine is None:
        return ""
    if "regions" in engine:
        return f"; {engine['regions']} region(s) on engine {engine['name']}"
    return f"; {engine['parts']} part(s) on engine {engine['name']}"


@user_errors(flags=FLAGS)
def evaluate_command(
    original: str | None = typer.Argument(None, help="Original table."),
    masked: str | None = typer.Argument(None, help="Masked table, same rows in the same order."),
    config: Path | None = CONFIG,
    overwrite: bool = OVERWRITE,
    delimiter: str | None = DELIMITER,
    storage_option: list[str] | None = STORAGE_OPTION,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    columns: str | None = COLUMNS,
    nominal: list[str] | None = NOMINAL,
    ordinal: list[str] | None = ORDINAL,
    order: list[str] | None = ORDER,
    identifying: list[str] | None = IDENTIFYING,
    sensitive: list[str] | None = SENSITIVE,
    insensitive: list[str] | None = INSENSITIVE,
    other: str | None = EVALUATE_OTHER,
    lambda_: str | None = LAMBDA,
    tau: str | None = TAU,
    gamma: str | None = GAMMA,
    p: str | None = P_VALUES,
    workers: int | None = typer.Option(None, "--workers", help=DLD_WORKERS_HELP),
    engine: str | None = EVALUATE_ENGINE,
    scheduler: str | None = SCHEDULER,
    memory_limit: str | None = MEMORY_LIMIT,
    block_rows: int | None = BLOCK_ROWS,
    report: str | None = REPORT,
    html: str | None = HTML,
    quiet: bool = QUIET,
) -> None:
    """Score a masked table with the EM4ADOM measures (see --help for an example)."""
    from anonlab.runs.microaggregate import EvaluateSettings, run_evaluate

    s = EvaluateSettings.load(
        config,
        overwrite=overwrite,
        original=as_text(original),
        masked=as_text(masked),
        **read_overrides(locals()),
        **_column_overrides(locals()),
        **role_overrides(locals()),
        tau=tau,
        gamma=gamma,
        p=p,
        **engine_overrides(locals()),
        block_rows=block_rows,
        report=as_text(report),
        html=as_text(html),
        **{"lambda": lambda_},
    )
    with progress_display(quiet) as progress:
        out = run_evaluate(s, progress=progress).report
    if not quiet:
        _print_measures(out["measures"])


def _print_measures(measures: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="EM4ADOM measures", show_header=True)
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in measures.items():
        if isinstance(value, float):
            table.add_row(name, f"{value:.6g}")
    Console().print(table)


@user_errors(flags=FLAGS)
def tradeoff_command(
    input: str | None = TABLE_TO_MASK,
    config: Path | None = CONFIG,
    overwrite: bool = OVERWRITE,
    delimiter: str | None = DELIMITER,
    storage_option: list[str] | None = STORAGE_OPTION,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    columns: str | None = COLUMNS,
    nominal: list[str] | None = NOMINAL,
    ordinal: list[str] | None = ORDINAL,
    order: list[str] | None = ORDER,
    identifying: list[str] | None = IDENTIFYING,
    sensitive: list[str] | None = SENSITIVE,
    insensitive: list[str] | None = INSENSITIVE,
    other: str | None = OTHER,
    k: str | None = typer.Option(None, "--k", help="k values: 3,5,10, 5 or 3-10 (default: 3-10)."),
    variant: str | None = VARIANT,
    block_size: int | None = BLOCK_SIZE,
    lambda_: str | None = LAMBDA,
    tau: str | None = TAU,
    gamma: str | None = GAMMA,
    p: str | None = P_VALUES,
    workers: int | None = typer.Option(None, "--workers", help=WORKERS_HELP),
    plot: str | None = typer.Option(
        None,
        "--plot",
        help="R-U maps as PNG: DR and the prosecutor risk against IL (default: none).",
    ),
    report: str | None = REPORT,
    html: str | None = HTML,
    attacker_columns: str | None = ATTACKER_COLUMNS,
    risk_threshold: list[float] | None = RISK_THRESHOLD,
    population: float | None = POPULATION,
    sampling_fraction: float | None = SAMPLING_FRACTION,
    weights: str | None = WEIGHTS,
    sensitive_hierarchy: list[str] | None = SENSITIVE_HIERARCHY,
    quiet: bool = QUIET,
) -> None:
    """Pick k by the IL/DR trade-off and the R-U map (see --help for an example)."""
    from anonlab.runs.microaggregate import TradeoffSettings, run_tradeoff

    risk = risk_overrides(locals())
    s = TradeoffSettings.load(
        config,
        overwrite=overwrite,
        input=as_text(input),
        **read_overrides(locals()),
        **_column_overrides(locals()),
        **role_overrides(locals()),
        k=k,
        variant=variant,
        block_size=block_size,
        tau=tau,
        gamma=gamma,
        p=p,
        workers=workers,
        plot=as_text(plot),
        report=as_text(report),
        html=as_text(html),
        **{"lambda": lambda_},
        **risk,
    )
    with progress_display(quiet) as progress:
        out = run_tradeoff(s, progress=progress).report
    if not quiet:
        _print_points(out)


def _print_points(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from anonlab.metrics.tradeoff import ru_axes

    loss, _ = ru_axes(result["points"])
    shown: tuple[str, ...] = ("IL", "DR", "score") if loss == "IL" else ("ZIL", "ILR", "DLD")
    if any("prosecutor_highest" in row for row in result["points"]):
        shown = (*shown, "prosecutor_highest")
    table = Table(title="Trade-off per k (lowest score marked)")
    for name in ("k", *shown):
        table.add_column(name, justify="right")
    table.add_column("")
    for row in result["points"]:
        mark = "◀ best" if row["k"] == result.get("best_k") else ""
        cells = [
            f"{row[c]:.6g}" if isinstance(row.get(c), float) else str(row.get(c)) for c in shown
        ]
        table.add_row(str(row["k"]), *cells, mark)
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``microaggregate``, ``evaluate`` and ``tradeoff`` to ``app``."""
    app.command("microaggregate", help=MICRO_HELP)(microaggregate_command)
    app.command("evaluate", help=EVALUATE_HELP)(evaluate_command)
    app.command("tradeoff", help=TRADEOFF_HELP)(tradeoff_command)
