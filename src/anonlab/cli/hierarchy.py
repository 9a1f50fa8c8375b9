"""Sub-command ``hierarchy``: build hierarchy files in the ARX CSV layout, and show them.

Builders ``interval``, ``redaction``, ``grouping``, ``taxonomy`` and ``date``
map their flags to the library's settings (:mod:`anonlab.runs.hierarchy`),
run them and print what was written: one line, then the hierarchy level by
level as a small table (groups per level, the largest groups with their
records). ``show`` prints the same view of an existing file. Each
:class:`~anonlab.runs.hierarchy.HierarchyWarning` becomes one
``Warning: ...`` line on standard error, with ``--quiet`` too. ``--report``
writes the same as JSON (column, files, levels with their groups, warnings,
uncovered values), together with the hierarchy file or not at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import (
    DELIMITER,
    QUERY,
    SHEET,
    TABLE,
    as_text,
    fail,
    read_overrides,
    user_errors,
)
from anonlab.cli.release_risk import warning_lines

#: how the library's parameters are spelled on these commands
FLAGS = {
    "input": "the INPUT argument",
    "groups": "--group",
    "date_format": "--format",
    "hierarchy": "the FILE argument",
}

hierarchy_app = typer.Typer(
    help="Build hierarchy files in the ARX CSV layout, or show one.", no_args_is_help=True
)

COLUMN_INPUT = typer.Argument(
    ..., help="Table holding the column: CSV, Parquet, Excel or a SQLAlchemy URL."
)
HIERARCHY_OUTPUT = typer.Option(..., "--output", help="Hierarchy CSV to write.")
HIERARCHY_QUIET = typer.Option(
    False, "--quiet", help="Do not print what was written (warnings are still printed)."
)
HIERARCHY_REPORT = typer.Option(
    None,
    "--report",
    help="JSON report of what was built: files, levels with their groups "
    "and the largest, warnings (default: none).",
)
SHOW_REPORT = typer.Option(
    None,
    "--report",
    help="JSON report of the view: levels with their groups and the "
    "largest, warnings, values of --column not covered (default: none).",
)
SHOW_QUIET = typer.Option(
    False, "--quiet", help="Do not print the view (warnings are still printed)."
)


def _build(kind: str, flags: dict[str, Any], **own: Any) -> None:
    """Run one hierarchy builder, say what it wrote and show it.

    ``flags`` is the builder command's parameters (its ``locals()``): the flags every
    builder takes (input, ``--column``, ``--output``, reading, ``--quiet``, ``--report``);
    ``own`` the builder's own settings.
    """
    from anonlab.paths import shown_path
    from anonlab.runs.hierarchy import HIERARCHY_BUILDERS, run_hierarchy

    settings = HIERARCHY_BUILDERS[kind].load(
        None,
        input=flags["input"],
        column=flags["column"],
        output=str(flags["output"]),
        **read_overrides(flags),
        report=as_text(flags["report"]),
        **own,
    )
    with warning_lines(FLAGS):
        result = run_hierarchy(settings)
        if not flags["quiet"]:
            out = result.report
            print(
                f"wrote {shown_path(settings.output)}: {kind} hierarchy of '{out['column']}', "
                f"{out['values']} values, {out['levels']} levels (0 = the values, "
                f"{out['levels'] - 1} = the top)"
            )
            _print_view(out["view"])


def _print_view(view: dict[str, Any]) -> None:
    """The hierarchy level by level: groups, and the largest groups with their counts."""
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=True, header_style="bold")
    table.add_column("level", justify="right")
    table.add_column("groups", justify="right")
    table.add_column(f"largest groups ({view['counted']})")
    for level in view["levels"]:
        largest = ", ".join(
            f"{g['group'] or '(missing)'}: {g['count']:,}" for g in level["largest"]
        )
        table.add_row(str(level["level"]), f"{level['groups']:,}", largest)
    Console().print(table)


@hierarchy_app.command("interval")
@user_errors(flags=FLAGS)
def hierarchy_interval(
    input: str = COLUMN_INPUT,
    column: str = typer.Option(..., "--column", help="Numeric column."),
    widths: str = typer.Option(
        ..., "--widths", help="Interval widths, e.g. 5,10,20 (each a multiple of the one before)."
    ),
    output: Path = HIERARCHY_OUTPUT,
    delimiter: str | None = DELIMITER,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    quiet: bool = HIERARCHY_QUIET,
    report: Path | None = HIERARCHY_REPORT,
) -> None:
    """Numeric intervals of growing width, then '*'.

    Example: anonlab hierarchy interval data/adult/adult.csv --delimiter ';'
    --column age --widths 5,10,20 --output out/hierarchy_age.csv
    """
    _build("interval", locals(), widths=widths)


@hierarchy_app.command("redaction")
@user_errors(flags=FLAGS)
def hierarchy_redaction(
    input: str = COLUMN_INPUT,
    column: str = typer.Option(..., "--column", help="Code column (e.g. ZIP)."),
    output: Path = HIERARCHY_OUTPUT,
    delimiter: str | None = DELIMITER,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    quiet: bool = HIERARCHY_QUIET,
    report: Path | None = HIERARCHY_REPORT,
) -> None:
    """Redact one character from the right per level (ZIP-like codes).

    Warns when the values look like free text (lengths far apart, or more than
    11 levels). Example: anonlab hierarchy redaction examples/census/wage.csv
    --column zip --output out/hierarchy_zip.csv
    """
    _build("redaction", locals())


@hierarchy_app.command("grouping")
@user_errors(flags=FLAGS)
def hierarchy_grouping(
    input: str = COLUMN_INPUT,
    column: str = typer.Option(..., "--column", help="Numeric or ordinal column."),
    sizes: str = typer.Option(
        ..., "--sizes", help="Group sizes per level, e.g. 2,4 (each a multiple of the one before)."
    ),
    output: Path = HIERARCHY_OUTPUT,
    order: str | None = typer.Option(
        None,
        "--order",
        help="Comma-separated order of the values; needed for text (default: numbers in "
        "numeric order; nominal text: use 'hierarchy taxonomy').",
    ),
    delimiter: str | None = DELIMITER,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    quiet: bool = HIERARCHY_QUIET,
    report: Path | None = HIERARCHY_REPORT,
) -> None:
    """Group consecutive values of an ordered domain.

    Example: anonlab hierarchy grouping examples/census/wage.csv --column
    education --order '1. < HS Grad,2. HS Grad,3. Some College,4. College
    Grad,5. Advanced Degree' --sizes 1,5 --output out/hierarchy_education.csv
    """
    _build("grouping", locals(), sizes=sizes, order=order)


@hierarchy_app.command("taxonomy")
@user_errors(flags=FLAGS)
def hierarchy_taxonomy(
    input: str = COLUMN_INPUT,
    column: str = typer.Option(..., "--column", help="Nominal column."),
    output: Path = HIERARCHY_OUTPUT,
    mapping: Path | None = typer.Option(
        None,
        "--mapping",
        help="Groups of every level in a .toml, .json or .csv file (see "
        "docs/hierarchies.md) (default: none; then give --group).",
    ),
    group: list[str] | None = typer.Option(
        None,
        "--group",
        help="A group of one level: LEVEL:LABEL=V1,V2,... Level 1 groups the "
        "values, level 2 the groups of level 1, ... (repeat; default: none).",
    ),
    delimiter: str | None = DELIMITER,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    quiet: bool = HIERARCHY_QUIET,
    report: Path | None = HIERARCHY_REPORT,
) -> None:
    """Group nominal values level by level, then '*'.

    Every value of the column must be in exactly one group of level 1, every
    group of a level in exactly one group of the next. Example:

    anonlab hierarchy taxonomy examples/census/wage.csv --column race
    --group '1:White=1. White' --group '1:Other=2. Black,3. Asian,4. Other'
    --output out/hierarchy_race.csv
    """
    if (mapping is None) == (not group):
        raise fail(
            "give the taxonomy as --mapping FILE or as --group LEVEL:LABEL=V1,V2,... "
            "(repeated), not both"
        )
    _build("taxonomy", locals(), mapping=as_text(mapping), groups=group or None)


@hierarchy_app.command("date")
@user_errors(flags=FLAGS)
def hierarchy_date(
    input: str = COLUMN_INPUT,
    column: str = typer.Option(..., "--column", help="Date or date-and-time column."),
    output: Path = HIERARCHY_OUTPUT,
    levels: str | None = typer.Option(
        None,
        "--levels",
        help="Some of day,month,quarter,year,decade, finest first (default: "
        "month,quarter,year,decade; day first when a value has a time of day).",
    ),
    date_format: str | None = typer.Option(
        None,
        "--format",
        help="strftime pattern of the values, e.g. %d/%m/%Y (default: each "
        "value parsed on its own, ISO 8601 and the like; 01/02/2003 is read month first).",
    ),
    delimiter: str | None = DELIMITER,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    quiet: bool = HIERARCHY_QUIET,
    report: Path | None = HIERARCHY_REPORT,
) -> None:
    """Dates to day, month, quarter, year and decade, then '*'.

    Example: anonlab hierarchy date examples/census/wage.csv --column interviewed
    --levels month,year,decade --output out/hierarchy_interviewed.csv
    """
    _build("date", locals(), levels=levels, date_format=date_format)


@hierarchy_app.command("show")
@user_errors(flags=FLAGS)
def hierarchy_show(
    file: Path = typer.Argument(..., help="Hierarchy CSV in the ARX layout."),
    data: str | None = typer.Option(
        None,
        "--data",
        help="Table whose --column is counted per group and checked for "
        "values the hierarchy lacks (default: none; groups count values).",
    ),
    column: str | None = typer.Option(None, "--column", help="Column of --data."),
    hierarchy_delimiter: str = typer.Option(
        ";", "--hierarchy-delimiter", help="Delimiter of the hierarchy file."
    ),
    delimiter: str | None = DELIMITER,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    quiet: bool = SHOW_QUIET,
    report: Path | None = SHOW_REPORT,
) -> None:
    """Show an existing hierarchy level by level, and the data values it does not cover.

    Example: anonlab hierarchy show data/adult/hierarchy_race.csv --data
    data/adult/adult.csv --delimiter ';' --column race
    """
    from anonlab.paths import shown_path
    from anonlab.runs.hierarchy import ShowHierarchySettings, run_show

    settings = ShowHierarchySettings.load(
        None,
        hierarchy=str(file),
        hierarchy_delimiter=hierarchy_delimiter,
        data=data,
        column=column,
        **read_overrides(locals()),
        report=as_text(report),
    )
    with warning_lines(FLAGS):
        out = run_show(settings).report
        if quiet:
            return
        print(
            f"{shown_path(file)}: {out['values']} values, {out['levels']} levels (0 = the "
            f"values, {out['levels'] - 1} = the top)"
        )
        _print_view(out["view"])
        if out["column"] is not None:
            print(_uncovered_line(out["column"], out["view"]["uncovered"]))


def _uncovered_line(column: str, uncovered: list[str]) -> str:
    """Which values of the data column the hierarchy lacks (``generalize`` would refuse them)."""
    if not uncovered:
        return f"every value of '{column}' is in the hierarchy"
    shown = ", ".join(f"'{v}'" for v in uncovered[:10])
    more = f" and {len(uncovered) - 10} more" if len(uncovered) > 10 else ""
    return (
        f"{len(uncovered)} values of '{column}' are not in the hierarchy (generalize would "
        f"refuse them): {shown}{more}"
    )


def register(app: typer.Typer) -> None:
    """Add ``hierarchy`` to ``app``."""
    app.add_typer(hierarchy_app, name="hierarchy")
