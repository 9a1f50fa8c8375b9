"""Sub-commands ``generalize``, ``apply`` and ``hierarchy`` (full-domain generalization)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import load_toml, merge_settings, user_errors
from anonlab.errors import AnonlabError

GENERALIZE_HELP = """Generalize a table to k-anonymity with an optimal lattice search.

Example:

  anonlab generalize data/adult/adult.csv --delimiter ';' --qi age=data/adult/hierarchy_age.csv
  --qi sex=data/adult/hierarchy_sex.csv --sensitive salary-class --k 5 --suppression 0.01
  --search flash --metric precision --output adult_k5.csv --report adult_k5.json

  anonlab generalize --config examples/adult.toml --k 10
"""

APPLY_HELP = """Apply the transformation of an earlier `generalize` report to another table.

The new table must have the same columns; k-anonymity with the same suppression
limit is re-checked on it. Example:

  anonlab apply adult_k5.json new.csv --output new_k5.csv
"""


def _progress_callback(quiet: bool) -> tuple[Any, Any]:
    if quiet:
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    progress = Progress(
        TextColumn("searching the lattice: nodes checked"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task("search", total=None)

    def update(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    return progress, update


def _write_release(release: Any, settings: Any, verify_with: Any) -> None:
    from anonlab.io import atomic_write, write_table

    out = Path(settings.output)
    if verify_with is None:
        write_table(release, out)
        return

    def writer(tmp: Path) -> None:
        # write beside the target, re-read and verify, and only then rename
        staged = tmp.with_name(tmp.name + out.suffix)
        try:
            write_table(release, staged)
            verify_with(staged)
            staged.replace(tmp)
        finally:
            staged.unlink(missing_ok=True)

    atomic_write(out, writer)


@user_errors
def generalize_command(
    input: Path | None = typer.Argument(None, help="Table to anonymize (CSV or Parquet)."),
    config: Path | None = typer.Option(None, "--config", help="TOML settings; flags override."),
    delimiter: str | None = typer.Option(None, "--delimiter", help="CSV delimiter (sniffed)."),
    qi: list[str] | None = typer.Option(
        None, "--qi", help="Quasi-identifier and its hierarchy: COLUMN=FILE (repeat)."
    ),
    identifying: list[str] | None = typer.Option(
        None, "--identifying", help="Identifying column(s), dropped from the release."
    ),
    sensitive: list[str] | None = typer.Option(None, "--sensitive", help="Sensitive column(s)."),
    k: int | None = typer.Option(None, "--k", help="Every class has at least k records."),
    suppression: float | None = typer.Option(
        None, "--suppression", help="Largest fraction of records that may be suppressed."
    ),
    search: str | None = typer.Option(
        None, "--search", help="exhaustive | ola | degree | flash (default flash)."
    ),
    metric: str | None = typer.Option(
        None, "--metric",
        help="precision | precision_with_suppression | discernibility | aecs | entropy.",
    ),
    output: Path | None = typer.Option(None, "--output", help="Release (CSV or .parquet)."),
    report: Path | None = typer.Option(None, "--report", help="JSON report."),
    html: Path | None = typer.Option(
        None, "--html", help="Shareable HTML report (see `anonlab report`)."
    ),
    plot: Path | None = typer.Option(
        None, "--plot", help="PNG of the equivalence class size distribution."
    ),
    verify: bool = typer.Option(
        False, "--verify", help="Re-check the written release with the independent checker."
    ),
    quiet: bool = typer.Option(False, "--quiet", help="No progress or summary output."),
) -> None:
    """Generalize a table to k-anonymity (see --help for an example)."""
    from anonlab.settings import generalize_settings, parse_qi_flags, resolve_paths, split_names

    started = time.perf_counter()
    base: dict[str, Any] = {}
    if config is not None:
        base = resolve_paths(load_toml(config), config.parent)
    flags = {
        "input": str(input) if input else None,
        "delimiter": delimiter,
        "qi": parse_qi_flags(qi) if qi else None,
        "identifying": split_names(identifying),
        "sensitive": split_names(sensitive),
        "k": k,
        "suppression": suppression,
        "search": search,
        "metric": metric,
        "output": str(output) if output else None,
        "report": str(report) if report else None,
        "verify": verify or None,
        "quiet": quiet or None,
    }
    settings = generalize_settings(merge_settings(base, flags))
    run_generalize(settings, started, html=html, plot=plot)


def run_generalize(
    settings: Any, started: float, html: Path | None = None, plot: Path | None = None
) -> dict[str, Any]:
    """Load, search, verify and write, as the settings say; returns the report."""
    from anonlab.checker import check_generalization, check_k_anonymity
    from anonlab.dataset import Dataset, Role
    from anonlab.generalize import anonymize
    from anonlab.hierarchy import Hierarchy
    from anonlab.io import check_outputs, read_table, write_json
    from anonlab.privacy import check_k, max_suppressed
    from anonlab.report import report_header

    if settings.output is None and settings.report is None and html is None and plot is None:
        raise AnonlabError("nothing to write: give --output, --report, --html and/or --plot")
    inputs = [settings.input, *settings.qi.values()]
    check_outputs({"--output": settings.output, "--report": settings.report, "--html": html,
                   "--plot": plot}, inputs)
    hierarchies = {c: Hierarchy.from_csv(p) for c, p in settings.qi.items()}
    frame = read_table(settings.input, delimiter=settings.delimiter)
    dataset = Dataset.from_frame(
        frame, hierarchies, identifying=settings.identifying, sensitive=settings.sensitive,
        insensitive=settings.insensitive, source=settings.input,
    )
    check_k(settings.k, dataset.n)
    max_suppressed(settings.suppression, dataset.n)
    progress, update = _progress_callback(settings.quiet)
    if progress is not None:
        with progress:
            result = anonymize(dataset, settings.k, settings.suppression, settings.search,
                               settings.metric, progress=update)
    else:
        result = anonymize(dataset, settings.k, settings.suppression, settings.search,
                           settings.metric)
    limit = max_suppressed(settings.suppression, dataset.n)
    dropped = dataset.columns_with(Role.IDENTIFYING)

    def verify(path: Path) -> None:
        written = read_table(path)
        problems = check_k_anonymity(written, settings.qi, settings.k, limit)
        problems += check_generalization(frame, written, hierarchies, result.transformation,
                                         dropped, max_suppressed=limit)
        if problems:
            raise AnonlabError(f"verification failed, nothing written: {problems[0]}")

    if settings.output is not None:
        _write_release(result.release, settings, verify if settings.verify else None)
    params = settings.model_dump(exclude={"quiet"})
    report = report_header(
        "generalize", params,
        {"data": settings.input, **{f"hierarchy:{c}": p for c, p in settings.qi.items()}},
    )
    report.update(result.summary())
    report["roles"] = {c: r.value for c, r in dataset.roles.items()}
    report["verified"] = bool(settings.verify and settings.output is not None)
    report["runtime_seconds"] = time.perf_counter() - started
    if settings.report is not None:
        write_json(report, settings.report)
    if html is not None:
        from anonlab.htmlreport import write_html

        write_html(report, html)
    if plot is not None:
        from anonlab.htmlreport.render import write_plot

        write_plot(report, plot)
    if not settings.quiet:
        _print_summary(report)
    return report


def _print_summary(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="anonlab generalize", show_header=False)
    table.add_row("transformation",
                  ", ".join(f"{c}={lv}" for c, lv in report["transformation"].items()))
    table.add_row("search", f"{report['search']}: {report['nodes_checked']} of "
                  f"{report['lattice_size']} nodes checked")
    table.add_row("suppressed records", str(report["suppressed_records"]))
    table.add_row("equivalence classes", str(report["equivalence_classes"]))
    table.add_row(report["metric"], f"{report['optimum_loss']:.6g}")
    table.add_row("time", f"{report['runtime_seconds']:.2f} s")
    Console().print(table)


@user_errors
def apply_command(
    report_in: Path = typer.Argument(..., help="JSON report of an earlier generalize run."),
    input: Path = typer.Argument(..., help="Table with the same schema (CSV or Parquet)."),
    output: Path = typer.Option(..., "--output", help="Release (CSV or .parquet)."),
    delimiter: str | None = typer.Option(None, "--delimiter", help="CSV delimiter (sniffed)."),
    report: Path | None = typer.Option(None, "--report", help="JSON report of this run."),
    quiet: bool = typer.Option(False, "--quiet", help="No summary output."),
) -> None:
    """Apply a found transformation to another table (see --help for an example)."""
    from anonlab.generalize import apply_transformation
    from anonlab.hierarchy import Hierarchy
    from anonlab.io import check_outputs, file_sha256, read_json, read_table, write_json
    from anonlab.io import write_table as write_release
    from anonlab.report import report_header

    started = time.perf_counter()
    old = read_json(report_in)
    try:
        params = old["parameters"]
        transformation = {str(c): int(v) for c, v in old["transformation"].items()}
        qi_paths: dict[str, str] = dict(params["qi"])
        k, suppression = int(params["k"]), float(params["suppression"])
    except (KeyError, TypeError, ValueError) as exc:
        raise AnonlabError(
            f"'{report_in}' is not a generalize report (missing {exc}): give the --report "
            "JSON of an 'anonlab generalize' run"
        ) from None
    hierarchies = {}
    found_paths = {col: _find_file(path, report_in.parent) for col, path in qi_paths.items()}
    check_outputs({"--output": output, "--report": report},
                  [input, report_in, *found_paths.values()])
    for col, found in found_paths.items():
        expected = (old.get("inputs", {}).get(f"hierarchy:{col}") or {}).get("sha256")
        if expected and file_sha256(found) != expected:
            raise AnonlabError(
                f"hierarchy '{found}' of '{col}' changed since the report was made: "
                "use the same hierarchy file"
            )
        hierarchies[col] = Hierarchy.from_csv(found)
    frame = read_table(input, delimiter=delimiter)
    release, suppressed = apply_transformation(
        frame, hierarchies, transformation, k, suppression,
        identifying=params.get("identifying", []), sensitive=params.get("sensitive", []),
    )
    write_release(release, output)
    if report is not None:
        out = report_header("apply", {"from_report": str(report_in), "k": k,
                                      "suppression": suppression},
                            {"data": input, "from_report": report_in})
        out.update({"transformation": transformation, "suppressed_records": suppressed,
                    "records": int(release.shape[0]),
                    "runtime_seconds": time.perf_counter() - started})
        write_json(out, report)
    if not quiet:
        print(f"applied {transformation}; {suppressed} records suppressed; wrote {output}")


def _find_file(path: str, fallback_dir: Path) -> Path:
    p = Path(path)
    if p.exists():
        return p
    q = fallback_dir / p
    if q.exists():
        return q
    raise AnonlabError(f"hierarchy file '{path}' not found: run from the folder the report "
                       "was made in, or next to the report")


hierarchy_app = typer.Typer(help="Build hierarchy files in the ARX CSV layout.",
                            no_args_is_help=True)


def _column_values(input: Path, column: str, delimiter: str | None) -> list[str]:
    from anonlab.io import read_table

    frame = read_table(input, delimiter=delimiter)
    if column not in frame.columns:
        raise AnonlabError(f"unknown column '{column}': the table has {', '.join(frame.columns)}")
    col = frame[column]
    return [str(v) for v in col.astype(str).where(col.notna(), "").unique()]


def _natural_key(value: str) -> tuple[int, float, str]:
    """Numbers first in numeric order, then other text in text order."""
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def _ints(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise AnonlabError(f"{what} '{text}' is not a comma-separated list of numbers") from None


@hierarchy_app.command("interval")
@user_errors
def hierarchy_interval(
    input: Path = typer.Argument(..., help="Table holding the column."),
    column: str = typer.Option(..., "--column", help="Numeric column."),
    widths: str = typer.Option(..., "--widths", help="Interval widths, e.g. 5,10,20."),
    output: Path = typer.Option(..., "--output", help="Hierarchy CSV to write."),
    delimiter: str | None = typer.Option(None, "--delimiter"),
) -> None:
    """Numeric intervals of growing width, then '*'.

    Example: anonlab hierarchy interval data/adult/adult.csv --delimiter ';'
    --column age --widths 5,10,20 --output hierarchy_age.csv
    """
    from anonlab.hierarchy import interval_hierarchy
    from anonlab.io import check_not_input

    check_not_input(output, [input])
    values = _column_values(input, column, delimiter)
    interval_hierarchy(values, _ints(widths, "--widths")).write(output)


@hierarchy_app.command("redaction")
@user_errors
def hierarchy_redaction(
    input: Path = typer.Argument(..., help="Table holding the column."),
    column: str = typer.Option(..., "--column", help="Code column (e.g. ZIP)."),
    output: Path = typer.Option(..., "--output", help="Hierarchy CSV to write."),
    delimiter: str | None = typer.Option(None, "--delimiter"),
) -> None:
    """Redact one character from the right per level (ZIP-like codes).

    Example: anonlab hierarchy redaction people.csv --column zip --output hierarchy_zip.csv
    """
    from anonlab.hierarchy import redaction_hierarchy
    from anonlab.io import check_not_input

    check_not_input(output, [input])
    redaction_hierarchy(_column_values(input, column, delimiter)).write(output)


@hierarchy_app.command("grouping")
@user_errors
def hierarchy_grouping(
    input: Path = typer.Argument(..., help="Table holding the column."),
    column: str = typer.Option(..., "--column", help="Ordinal or categorical column."),
    sizes: str = typer.Option(..., "--sizes", help="Group sizes per level, e.g. 2,4."),
    output: Path = typer.Option(..., "--output", help="Hierarchy CSV to write."),
    order: str | None = typer.Option(
        None, "--order",
        help="Comma-separated order of the values (default: numbers in numeric order, "
        "then text sorted).",
    ),
    delimiter: str | None = typer.Option(None, "--delimiter"),
) -> None:
    """Group consecutive values of an ordered domain.

    Example: anonlab hierarchy grouping survey.csv --column grade --order A,B,C,D
    --sizes 2,4 --output hierarchy_grade.csv
    """
    from anonlab.hierarchy import grouping_hierarchy
    from anonlab.io import check_not_input

    check_not_input(output, [input])
    values = _column_values(input, column, delimiter)
    if order is None:
        ordered = sorted(values, key=_natural_key)
    else:
        ordered = [x.strip() for x in order.split(",") if x.strip()]
        ordered += [""] if "" in values else []
        absent = sorted(set(values) - set(ordered) - {""})  # missing: a group of its own
        if absent:
            raise AnonlabError(f"value '{absent[0]}' of '{column}' is not in --order: list "
                               "every value")
    counts = [int(x) for x in _ints(sizes, "--sizes")]
    grouping_hierarchy(ordered, counts).write(output)


def register(app: typer.Typer) -> None:
    """Add ``generalize``, ``apply`` and ``hierarchy`` to ``app``."""
    app.command("generalize", help=GENERALIZE_HELP)(generalize_command)
    app.command("apply", help=APPLY_HELP)(apply_command)
    app.add_typer(hierarchy_app, name="hierarchy")
