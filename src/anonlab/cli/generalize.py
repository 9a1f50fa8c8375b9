"""Sub-commands ``generalize`` and ``apply`` (full-domain generalization).

The ``hierarchy`` builders are in :mod:`anonlab.cli.hierarchy`.

Each command maps its flags to the library's settings
(:mod:`anonlab.runs.generalize`), runs it and prints a summary; the library
checks, computes, verifies and writes.
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
    fail,
    figure,
    flag_of,
    progress_display,
    read_overrides,
    require_an_output,
    role_overrides,
    sensitive_rows,
    user_errors,
)
from anonlab.cli.release_risk import RISK_FLAGS, risk_guard, risk_overrides

GENERALIZE_HELP = """Generalize a table under privacy models with an optimal lattice search.

The models are k-anonymity (--k) and any --criterion: l-diversity,
t-closeness, beta-likeness, delta-disclosure, delta-presence, inclusion (a
research subset released, --criterion inclusion:subset=FILE), k-map and risk
thresholds, e.g. --criterion distinct-l-diversity:occupation:l=3 (the
attribute must be --sensitive; see docs/privacy_models.md).

Every column needs a role: --qi (with its hierarchy), --identifying
(dropped), --sensitive or --insensitive (released as they are). A column given none is
refused, unless --other insensitive releases all such columns unchanged (the
report lists them). The report holds the release's re-identification risk;
a risky release draws a warning (--fail-on-risk: exit code 3, nothing
written). Example:

  anonlab generalize data/adult/adult.csv --delimiter ';' --qi age=data/adult/hierarchy_age.csv
  --qi sex=data/adult/hierarchy_sex.csv --qi race=data/adult/hierarchy_race.csv
  --identifying marital-status,education,native-country,workclass,occupation
  --sensitive salary-class --k 5 --suppression 1% --output adult_k5.csv --report adult_k5.json

  anonlab generalize --config examples/adult.toml --k 10
  --output out/adult_k10.csv --report out/adult_k10.json

A table given on the command line with --config needs its own --output and
--report (and --html, --plot) wherever the config names them; so does any
flag that changes the config's parameters (--k above), unless --overwrite.
"""

APPLY_HELP = """Apply the transformation of an earlier `generalize` report to another table.

The new table must have the same columns, which keep the roles the report gave
them (a column the report does not know is refused unless --other insensitive);
every privacy model of the report, with the same suppression limit, is
re-checked on it, and the
release's risk is measured as in generalize. The hierarchy files are found
where the report says (relative to the report's folder), from any folder.
Example:

  anonlab apply adult_k5.json new.csv --output new_k5.csv

--node N releases transformation N of the report's list (generalize
--alternatives), --levels COLUMN=LEVEL,... any levels within the report's
--min-level/--max-level, with the same checks (docs/generalization.md,
"Steering the optimum"):

  anonlab apply out/adult_age2.json data/adult/adult.csv --node 3
  --output out/adult_age2_node3.csv

As generalize, apply runs on an engine (docs/engine.md): --engine dask counts
the table and writes the release on a Dask cluster (--scheduler
tcp://host:port to join one, else a local one of --workers processes with
--memory-limit each), and an --output folder ending in / receives the release
as partitioned Parquet, written part by part (needed with --engine dask):

  anonlab apply adult_k5.json data/big/ --engine dask --workers 2 --memory-limit 4GB
  --output out/release/ --report out/applied.json
"""

#: how the library's parameters are spelled on these commands
FLAGS = {
    "input": "the INPUT argument",
    "report_in": "the REPORT argument",
    "hierarchies": "--qi",
    "criteria": "--criterion",
    "attribute_weights": "--weight",
    "targets": "--target",
    "aggregate_qi": "--aggregate-qi",
    "aggregate_missing": "--aggregate-missing",
    **RISK_FLAGS,
}
#: ``apply``'s spelling: its privacy model comes from the report
APPLY_FLAGS = {**FLAGS, "criteria": "the REPORT's criteria"}


ENGINE = typer.Option(
    None,
    "--engine",
    help="Where the passes over the rows run: numpy (this process) | dask (a "
    "Dask cluster; --output must be a folder, ending in /) (default: numpy; see "
    "docs/engine.md).",
)


@user_errors(flags=FLAGS)
def generalize_command(
    input: str | None = typer.Argument(
        None,
        help="Table to anonymize: CSV, Parquet, Excel or a SQLAlchemy URL (default: the "
        "config's input).",
    ),
    config: Path | None = CONFIG,
    overwrite: bool = OVERWRITE,
    delimiter: str | None = DELIMITER,
    storage_option: list[str] | None = STORAGE_OPTION,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    qi: list[str] | None = typer.Option(
        None, "--qi", help="Quasi-identifier and its hierarchy: COLUMN=FILE (repeat)."
    ),
    identifying: list[str] | None = IDENTIFYING,
    sensitive: list[str] | None = SENSITIVE,
    insensitive: list[str] | None = INSENSITIVE,
    other: str | None = OTHER,
    k: int | None = typer.Option(
        None,
        "--k",
        help="Every class has at least k records: a shorthand for "
        "--criterion k-anonymity:k=K (default: 2 when no --criterion is given).",
    ),
    criterion: list[str] | None = typer.Option(
        None,
        "--criterion",
        help="A privacy model, MODEL[:ATTRIBUTE][:KEY=VALUE,...], e.g. "
        "distinct-l-diversity:occupation:l=3 or k-anonymity:k=5 (repeat; all must hold; "
        "replaces the config's criteria; see docs/privacy_models.md) (default: none).",
    ),
    suppression: str | None = typer.Option(
        None,
        "--suppression",
        help="Largest share of records that may be suppressed: a fraction below 1 (0.01) or a "
        "percentage (1%) (default: 0).",
    ),
    search: str | None = typer.Option(
        None,
        "--search",
        help="Optimal: exhaustive | ola | degree | flash; heuristic, for "
        "lattices of any size, not proven optimal: lightning | top-down | genetic (ARX's) | "
        "descent; auto: flash "
        "up to --heuristic-threshold nodes, lightning above (default: flash).",
    ),
    time_limit: float | None = typer.Option(
        None,
        "--time-limit",
        help="A heuristic search stops after this many seconds (inf: "
        "no limit) (default: 30, ARX's).",
    ),
    step_limit: int | None = typer.Option(
        None,
        "--step-limit",
        help="A heuristic search stops after checking this many nodes (default: no limit).",
    ),
    heuristic_threshold: int | None = typer.Option(
        None,
        "--heuristic-threshold",
        help="With --search auto: the largest lattice searched "
        "optimally, in nodes (default: 100000, ARX's).",
    ),
    metric: str | None = typer.Option(
        None,
        "--metric",
        help="loss | precision | precision_with_suppression | height | discernibility | "
        "discernibility_with_suppression | aecs | entropy | entropy_with_suppression | "
        "normalized_entropy | ambiguity | kl_divergence | entropy_information_loss | "
        "classification (needs --target) | static (needs --static-loss) (default: "
        "precision_with_suppression when --suppression is above 0, which counts suppressed "
        "records; else precision).",
    ),
    gs_factor: float | None = typer.Option(
        None,
        "--gs-factor",
        help="ARX's generalization/suppression factor from 0 to 1, for "
        "the metrics that take it (default: 0.5).",
    ),
    aggregate: str | None = typer.Option(
        None,
        "--aggregate",
        help="How a multi-dimensional metric (loss, precision, height, "
        "the entropies) combines its attributes: arithmetic_mean | geometric_mean | sum | max "
        "| rank (default: the metric's ARX default, geometric_mean for loss).",
    ),
    weight: list[str] | None = typer.Option(
        None,
        "--weight",
        help="Weight of a quasi-identifier in the metric: COLUMN=NUMBER, "
        "e.g. age=2 (repeat; default: 1 each).",
    ),
    target: list[str] | None = typer.Option(
        None,
        "--target",
        help="A column the classification metric judges the release by "
        "(ARX's response variable): a majority vote per class should still predict it "
        "(repeat; needed by --metric classification).",
    ),
    static_loss: list[str] | None = typer.Option(
        None,
        "--static-loss",
        help="The static metric's loss of a quasi-identifier at each "
        "level, level 0 first: COLUMN=NUMBER,NUMBER,..., e.g. sex=0,1 (repeat for every "
        "quasi-identifier; needed by --metric static).",
    ),
    practical_monotonicity: bool | None = typer.Option(
        None,
        "--practical-monotonicity/--no-practical-monotonicity",
        help="Treat every privacy model as monotone, as ARX's option does: fewer nodes "
        "checked, but the optimum may be missed (default: off).",
    ),
    min_level: list[str] | None = typer.Option(
        None,
        "--min-level",
        help="Lowest level the search may give a quasi-identifier: "
        "COLUMN=LEVEL, e.g. sex=1 (repeat; default: 0).",
    ),
    max_level: list[str] | None = typer.Option(
        None,
        "--max-level",
        help="Highest level the search may give a quasi-identifier: "
        "COLUMN=LEVEL, e.g. age=2 (repeat; default: its hierarchy's height).",
    ),
    alternatives: int | None = typer.Option(
        None,
        "--alternatives",
        help="List the N best transformations that satisfy the "
        "models, numbered for `anonlab apply --node` (default: 0, none).",
    ),
    recoding: str | None = typer.Option(
        None,
        "--recoding",
        help="full-domain (one level per quasi-identifier for every record), mondrian "
        "(multidimensional partitions, docs/mondrian.md; a --qi COLUMN without a file is "
        "then a numeric range) or local (ARX's local recoding: the search again on the "
        "records still suppressed, docs/generalization.md) (default: full-domain).",
    ),
    local_gs_factor: float | None = typer.Option(
        None,
        "--local-gs-factor",
        help="With --recoding local: the generalization/suppression factor of each search "
        "on the suppressed records, in [0, 1] (default: ARX's 0.05).",
    ),
    local_iterations: int | None = typer.Option(
        None,
        "--local-iterations",
        help="With --recoding local: the most searches on the suppressed records "
        "(default: ARX's 100).",
    ),
    local_adaption: float | None = typer.Option(
        None,
        "--local-adaption",
        help="With --recoding local: added to the factor when a search releases no record, "
        "in [0, 1] (default: ARX's 0.05).",
    ),
    relaxed: bool | None = typer.Option(
        None,
        "--relaxed/--strict",
        help="Mondrian's relaxed cuts: records of the median value may go to both halves "
        "(default: strict).",
    ),
    numeric: list[str] | None = typer.Option(
        None,
        "--numeric",
        help="With --recoding mondrian: a quasi-identifier cut and released as a numeric "
        "range [lo, hi], hierarchy or not (repeat, or COLUMN,COLUMN).",
    ),
    aggregate_qi: list[str] | None = typer.Option(
        None,
        "--aggregate-qi",
        help="Release a numeric quasi-identifier, in every class, as the aggregate of the "
        "class's original values instead of its label (ARX's microaggregation): "
        "COLUMN=mean|geometric|median|mode|interval, e.g. age=mean (repeat; any --recoding; "
        "in memory; a --qi COLUMN without a file is then not generalized and aggregated in "
        "the other quasi-identifiers' classes; docs/generalization.md).",
    ),
    aggregate_missing: str | None = typer.Option(
        None,
        "--aggregate-missing",
        help="With --aggregate-qi: a missing value is left out of the aggregate (ignore) or, "
        "in mean and geometric, counted as 0 (zero, ARX's ignoreMissingData=false) "
        "(default: ignore).",
    ),
    attacker_columns: str | None = ATTACKER_COLUMNS,
    max_risk: float | None = MAX_RISK,
    fail_on_risk: bool | None = FAIL_ON_RISK,
    risk_threshold: list[float] | None = RISK_THRESHOLD,
    population: float | None = POPULATION,
    sampling_fraction: float | None = SAMPLING_FRACTION,
    weights: str | None = WEIGHTS,
    sensitive_hierarchy: list[str] | None = SENSITIVE_HIERARCHY,
    output: str | None = typer.Option(
        None,
        "--output",
        help="Release; its format follows the extension: .parquet, .xlsx, "
        "else CSV (default: none).",
    ),
    output_table: str | None = OUTPUT_TABLE,
    report: str | None = REPORT,
    html: str | None = HTML,
    plot: str | None = typer.Option(
        None, "--plot", help="PNG of the equivalence class sizes (default: none)."
    ),
    verify: bool | None = VERIFY,
    engine: str | None = ENGINE,
    scheduler: str | None = SCHEDULER,
    workers: int | None = DASK_WORKERS,
    memory_limit: str | None = MEMORY_LIMIT,
    quiet: bool = QUIET,
) -> None:
    """Generalize a table under privacy models (see --help for an example)."""
    from anonlab.runs.generalize import run_generalize
    from anonlab.runs.generalize_settings import (
        GeneralizeSettings,
        parse_aggregate_flags,
        parse_level_flags,
        parse_qi_flags,
        parse_static_loss_flags,
        parse_weight_flags,
        stale_outputs,
    )

    overrides: dict[str, Any] = {
        "input": input,
        **read_overrides(locals()),
        "qi": parse_qi_flags(qi, bare=recoding == "mondrian" or bool(aggregate_qi)) if qi else None,
        **role_overrides(locals()),
        "k": k,
        "suppression": suppression,
        "search": search,
        "metric": metric,
        "time_limit": time_limit,
        "step_limit": step_limit,
        "heuristic_threshold": heuristic_threshold,
        "criteria": criterion,
        "gs_factor": gs_factor,
        "aggregate": aggregate,
        "attribute_weights": parse_weight_flags(weight) if weight else None,
        "targets": target or None,
        "static_loss": parse_static_loss_flags(static_loss) if static_loss else None,
        "practical_monotonicity": practical_monotonicity,
        "min_level": parse_level_flags(min_level, "min_level") if min_level else None,
        "max_level": parse_level_flags(max_level, "max_level") if max_level else None,
        "alternatives": alternatives,
        "recoding": recoding,
        "relaxed": relaxed,
        "numeric": numeric or None,
        "local_gs_factor": local_gs_factor,
        "local_iterations": local_iterations,
        "local_adaption": local_adaption,
        "aggregate_qi": parse_aggregate_flags(aggregate_qi) if aggregate_qi else None,
        "aggregate_missing": aggregate_missing,
        "output": output,
        "output_table": output_table,
        "report": as_text(report),
        "html": as_text(html),
        "plot": as_text(plot),
        "verify": verify,
        **engine_overrides(locals()),
        **risk_overrides(locals()),
    }
    stale = [] if config is None else stale_outputs(config, overrides)
    if stale:
        raise fail(
            f"input '{input}' replaces the input of config '{config}', whose "
            f"{' and '.join(stale)} are named for that input: give "
            f"{' and '.join(flag_of(FLAGS, n) for n in stale)} for the new input"
        )
    settings = GeneralizeSettings.load(config, overwrite=overwrite, **overrides)
    if not any((settings.output, settings.report, settings.html, settings.plot)):
        raise fail("nothing to write: give --output, --report, --html and/or --plot")
    with risk_guard(FLAGS), progress_display(quiet) as progress:
        result = run_generalize(settings, progress=progress)
    if not quiet:
        _print_summary(result.report, result.written)
        _print_alternatives(result.report)


def _levels_text(levels: dict[str, int]) -> str:
    """Levels as the summaries print them: ``age=2, sex=0``."""
    return ", ".join(f"{c}={lv}" for c, lv in levels.items())


def _print_summary(report: dict[str, Any], written: list[Path]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="anonlab generalize", show_header=False)
    if report["command"] == "mondrian":
        _mondrian_rows(table, report)
    elif report["command"] == "local-recoding":
        _local_rows(table, report)
    else:
        _full_domain_rows(table, report)
    _release_rows(table, report, written)
    table.add_row("time", f"{report['runtime_seconds']:.2f} s")
    Console().print(table)


def _release_rows(table: Any, report: dict[str, Any], written: list[Path]) -> None:
    """The rows every summary ends with: the release's risk, whether it was verified, and
    the files written."""
    _risk_rows(table, report)
    table.add_row("verified", "yes" if report["verified"] else "no (--no-verify)")
    table.add_row("wrote", ", ".join(str(p) for p in written))


def _full_domain_rows(table: Any, report: dict[str, Any]) -> None:
    """The summary rows of a full-domain release: the transformation, the search, the
    suppressed records and classes, the privacy models and the loss."""
    table.add_row("transformation", _levels_text(report["transformation"]))
    bounded = _bounded(report)
    if bounded:
        table.add_row("level bounds", bounded)
    table.add_row(
        "search",
        f"{report['search']}: {report['nodes_checked']} of {report['lattice_size']} nodes checked",
    )
    heuristic = report.get("heuristic")
    if isinstance(heuristic, dict):
        table.add_row(
            "heuristic search",
            f"best node found, not proven optimal: stopped by {heuristic['stopped_by']}",
        )
    from anonlab.risk.figures import release_classes, release_suppressed

    table.add_row("suppressed records", str(release_suppressed(report)))
    table.add_row("equivalence classes", str(release_classes(report)))
    for entry in report.get("criteria") or []:
        params = ", ".join(f"{k}={v}" for k, v in entry["parameters"].items())
        table.add_row(entry["model"], f"{params}: {'holds' if entry['satisfied'] else 'FAILS'}")
    table.add_row(
        report["metric"],
        report.get("information_loss_arx", {}).get(report["metric"])
        or figure(report["optimum_loss"]),
    )


def _local_rows(table: Any, report: dict[str, Any]) -> None:
    """The summary rows of a local recoding (docs/generalization.md, "Local recoding"): the
    transformations that released records, how many each, and the records left."""
    table.add_row("recoding", f"local: {report['iterations']} searches after the first")
    for entry in report["releases"]:
        if entry["records"]:
            table.add_row(
                f"step {entry['step']}",
                f"{_levels_text(entry['transformation'])}: {entry['records']} records",
            )
    table.add_row("suppressed records", str(report["suppressed_records"]))
    if report.get("not_recoded_because"):
        table.add_row("not recoded locally", str(report["not_recoded_because"]))
    table.add_row("GCP", figure(report["loss"]["gcp"]))


def _mondrian_rows(table: Any, report: dict[str, Any]) -> None:
    """The summary rows of a Mondrian release (docs/mondrian.md, "Report")."""
    found, loss = report["mondrian"], report["loss"]
    kind = "relaxed" if found["relaxed"] else "strict"
    if found["relaxed"] and not found["relaxed_kept"]:
        kind += " (the strict partitioning lost less and was kept)"
    table.add_row("recoding", f"mondrian, {kind}: {found['cuts']} cuts")
    table.add_row(
        "partitions",
        f"{found['partitions']} ({found['classes']} classes), sizes "
        f"{found['smallest_class']} to {found['largest_class']}",
    )
    table.add_row("suppressed records", "0")
    for entry in report.get("criteria") or []:
        params = ", ".join(f"{k}={v}" for k, v in entry["parameters"].items())
        table.add_row(entry["model"], f"{params}: holds")
    table.add_row("GCP", f"{loss['gcp']:.4f}")
    table.add_row("discernibility", str(loss["discernibility"]))
    table.add_row("average class size", f"{loss['average_class_size']:.2f}")


def _bounded(report: dict[str, Any]) -> str:
    """The level bounds the run was given, ``age 0..2, sex 1..1`` ('' for none)."""
    params = report.get("parameters") or {}
    named = {*(params.get("min_level") or {}), *(params.get("max_level") or {})}
    return ", ".join(
        f"{c} {lo}..{hi}"
        for c, (lo, hi) in (report.get("level_bounds") or {}).items()
        if c in named
    )


def _print_alternatives(report: dict[str, Any]) -> None:
    """The report's list of best transformations as a short numbered table: the levels as
    one vector each, in the order the caption names the quasi-identifiers."""
    from rich.console import Console
    from rich.table import Table

    listed = report.get("alternatives") or []
    if not listed:
        return
    names = list(listed[0]["levels"])
    table = Table(
        title=f"{len(listed)} best transformations (anonlab apply --node N)",
        caption=f"levels: {', '.join(names)}; loss: {report['metric']}",
    )
    for header in ("node", "levels", "loss", "suppressed", "highest risk"):
        table.add_column(header, justify="left" if header == "levels" else "right")
    for entry in listed:
        vector = ",".join(str(entry["levels"][c]) for c in names)
        table.add_row(
            str(entry["node"]),
            f"({vector})",
            figure(entry["loss"], 5),  # near losses stay apart
            str(entry["suppressed_records"]),
            figure(entry["highest_prosecutor_risk"]),
        )
    Console().print(table)


def _risk_rows(table: Any, report: dict[str, Any]) -> None:
    """The release's headline risk figures and its unchanged columns, as summary rows."""
    risk = report.get("risk") or {}
    prosecutor = risk.get("prosecutor") or {}
    if prosecutor:
        table.add_row(
            "prosecutor risk",
            f"highest {figure(prosecutor['highest'])}, average "
            f"{figure(prosecutor['average'])} (attacker knows "
            f"{', '.join(risk['attacker_columns'])})",
        )
    sensitive_rows(table, risk)
    if report.get("insensitive_by_other"):
        table.add_row("released unchanged (--other)", ", ".join(report["insensitive_by_other"]))


@user_errors(flags=APPLY_FLAGS)
def apply_command(
    report_in: Path = typer.Argument(..., help="JSON report of an earlier generalize run."),
    input: str = typer.Argument(
        ..., help="Table with the same columns: CSV, Parquet, Excel or a SQLAlchemy URL."
    ),
    output: str | None = typer.Option(
        None,
        "--output",
        help="Release; its format follows the extension: .parquet, .xlsx, "
        "else CSV; a folder ending in / receives partitioned Parquet written by the engine "
        "(default: none).",
    ),
    output_table: str | None = OUTPUT_TABLE,
    delimiter: str | None = DELIMITER,
    storage_option: list[str] | None = STORAGE_OPTION,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    report: str | None = typer.Option(
        None, "--report", help="JSON report of this run (default: none)."
    ),
    html: str | None = typer.Option(
        None, "--html", help="Shareable HTML report of this run (default: none)."
    ),
    verify: bool | None = VERIFY,
    other: str | None = OTHER,
    attacker_columns: str | None = ATTACKER_COLUMNS,
    max_risk: float | None = MAX_RISK,
    fail_on_risk: bool | None = FAIL_ON_RISK,
    risk_threshold: list[float] | None = RISK_THRESHOLD,
    population: float | None = POPULATION,
    sampling_fraction: float | None = SAMPLING_FRACTION,
    weights: str | None = WEIGHTS,
    sensitive_hierarchy: list[str] | None = SENSITIVE_HIERARCHY,
    levels: list[str] | None = typer.Option(
        None,
        "--levels",
        help="Release these levels instead of the report's: "
        "COLUMN=LEVEL,... (the columns not named keep the report's levels) (default: the "
        "report's transformation).",
    ),
    node: int | None = typer.Option(
        None,
        "--node",
        help="Release transformation N of the report's alternatives list "
        "(generalize --alternatives) (default: the report's transformation).",
    ),
    engine: str | None = ENGINE,
    scheduler: str | None = SCHEDULER,
    workers: int | None = DASK_WORKERS,
    memory_limit: str | None = MEMORY_LIMIT,
    quiet: bool = QUIET,
) -> None:
    """Apply a found transformation to another table (see --help for an example)."""
    from anonlab.runs.apply import run_apply
    from anonlab.runs.generalize_settings import ApplySettings, parse_level_flags

    require_an_output(output, report, html)
    settings = ApplySettings.load(
        None,
        report_in=str(report_in),
        input=input,
        output=output,
        output_table=output_table,
        **read_overrides(locals()),
        report=as_text(report),
        html=as_text(html),
        verify=verify,
        other=other,
        node=node,
        levels=parse_level_flags(levels, "levels") if levels else None,
        **engine_overrides(locals()),
        **risk_overrides(locals()),
    )
    with risk_guard(FLAGS), progress_display(quiet) as progress:
        result = run_apply(settings, progress=progress)
    if not quiet:
        _print_applied(result.report, result.written)


def _print_applied(report: dict[str, Any], written: list[Path]) -> None:
    """The summary of an apply run, as generalize prints its own."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="anonlab apply", show_header=False)
    table.add_row("transformation", _levels_text(report["transformation"]))
    table.add_row("suppressed records", str(report["suppressed_records"]))
    for entry in report.get("criteria") or []:
        params = ", ".join(f"{k}={v}" for k, v in entry["parameters"].items())
        table.add_row(entry["model"], f"{params}: {'holds' if entry['satisfied'] else 'FAILS'}")
    _release_rows(table, report, written)
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``generalize`` and ``apply`` to ``app``."""
    app.command("generalize", help=GENERALIZE_HELP)(generalize_command)
    app.command("apply", help=APPLY_HELP)(apply_command)
