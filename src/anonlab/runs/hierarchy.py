"""The hierarchy builders' runs: read a table's column, build a hierarchy, write it, show it.

Each builder has a settings model (a :class:`HierarchySettings`, registered
by name in :data:`HIERARCHY_BUILDERS`): ``interval``, ``redaction``,
``grouping``, ``taxonomy`` and ``date``. :func:`run_hierarchy` reads the
column, builds the hierarchy (:mod:`anonlab.hierarchy`,
:mod:`anonlab.hierarchy_taxonomy`, :mod:`anonlab.hierarchy_date`), writes it
in the ARX CSV layout and reports its view (:mod:`anonlab.hierarchy_view`):
groups per level, the largest groups with their record counts, and a warning
(:class:`HierarchyWarning`) for each level that looks accidental.
:func:`run_show` gives the same view of an existing hierarchy file. With
``report`` either also writes a JSON report of what it built or showed, all
or nothing with the hierarchy file (:func:`hierarchy_report`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import field_validator, model_validator

from anonlab.errors import AnonlabError, AnonlabWarning
from anonlab.hierarchy_view import HierarchyView, redaction_warnings, value_counts, view_hierarchy
from anonlab.outputs import Outputs
from anonlab.progress import ProgressFn
from anonlab.runs.common import (
    ReadSettings,
    RunResult,
    paths_convention,
    stage_report,
    stored_path,
)
from anonlab.runs.generalize_settings import TableSettings
from anonlab.runs.generalize_steps import read_input

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.hierarchy import Hierarchy


class HierarchyWarning(AnonlabWarning):
    """A hierarchy level that looks accidental (it repeats the one below, or redacts free
    text); the hierarchy was written all the same."""


class HierarchySettings(TableSettings):
    """A hierarchy builder's input column, the hierarchy file to write and, optionally, the
    JSON ``report`` of what was built."""

    path_fields: ClassVar[tuple[str, ...]] = ("input", "output", "report")
    builder: ClassVar[str] = ""

    column: str
    output: str
    report: str | None = None


class IntervalHierarchySettings(HierarchySettings):
    """Numeric intervals of growing ``widths`` (each a multiple of the one before), then '*'."""

    builder: ClassVar[str] = "interval"

    widths: list[float]

    @field_validator("widths", mode="before")
    @classmethod
    def _widths(cls, value: Any) -> Any:
        return _number_list(value, float, "5,10,20")


class RedactionHierarchySettings(HierarchySettings):
    """One more character redacted from the right per level (ZIP-like codes)."""

    builder: ClassVar[str] = "redaction"


class GroupingHierarchySettings(HierarchySettings):
    """Consecutive runs of ``sizes[l]`` values of an ordered domain, then '*'.

    ``order`` lists every value in order (a missing, empty value may be left
    out); without it the column must hold numbers, grouped in numeric order
    (text has no meaningful order of its own: nominal values need a taxonomy).
    """

    builder: ClassVar[str] = "grouping"

    sizes: list[int]
    order: list[str] | None = None

    @field_validator("sizes", mode="before")
    @classmethod
    def _sizes(cls, value: Any) -> Any:
        return _number_list(value, int, "2,4")

    @field_validator("order", mode="before")
    @classmethod
    def _order(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [x.strip() for x in value.split(",") if x.strip()]
        return value


class TaxonomyHierarchySettings(HierarchySettings):
    """Nominal values grouped level by level, then '*' (:mod:`anonlab.hierarchy_taxonomy`).

    The taxonomy comes from exactly one of ``mapping`` (a ``.toml``, ``.json``
    or ``.csv`` file) and ``groups``: one table ``{label: [members]}`` per
    level from 1 up, or ``LEVEL:LABEL=V1,V2`` texts as ``--group`` takes them.
    """

    path_fields: ClassVar[tuple[str, ...]] = ("input", "output", "report", "mapping")
    builder: ClassVar[str] = "taxonomy"

    mapping: str | None = None
    groups: list[dict[str, list[str]]] | None = None

    @field_validator("groups", mode="before")
    @classmethod
    def _group_texts(cls, value: Any) -> Any:
        from anonlab.hierarchy_taxonomy import parse_group_flags

        if isinstance(value, list | tuple) and value and all(isinstance(x, str) for x in value):
            return parse_group_flags(value)
        return value

    @model_validator(mode="after")
    def _one_source(self) -> TaxonomyHierarchySettings:
        if (self.mapping is None) == (self.groups is None):
            raise AnonlabError(
                "mapping or groups: give exactly one of them, a mapping file or "
                "the groups of each level",
                parameter="mapping",
            )
        return self


class DateHierarchySettings(HierarchySettings):
    """Dates and times to ``levels`` of day, month, quarter, year, decade, then '*'.

    ``levels`` defaults to month up to decade, with day first when a value has
    a time of day; ``date_format`` is a ``strftime`` pattern (default: each
    value parsed on its own by pandas).
    """

    builder: ClassVar[str] = "date"

    levels: list[str] | None = None
    date_format: str | None = None

    @field_validator("levels", mode="before")
    @classmethod
    def _levels(cls, value: Any) -> Any:
        from anonlab.hierarchy_date import check_levels

        if isinstance(value, str):
            value = value.split(",")
        return check_levels(value) if isinstance(value, list | tuple) else value


#: each hierarchy builder's settings, by the builder's name
HIERARCHY_BUILDERS: dict[str, type[HierarchySettings]] = {
    cls.builder: cls
    for cls in (
        IntervalHierarchySettings,
        RedactionHierarchySettings,
        GroupingHierarchySettings,
        TaxonomyHierarchySettings,
        DateHierarchySettings,
    )
}


class ShowHierarchySettings(ReadSettings):
    """An existing hierarchy file to show, with an optional ``data`` table and its ``column``
    (whose records are counted per group and whose uncovered values are listed), and the
    optional JSON ``report`` of the view."""

    path_fields: ClassVar[tuple[str, ...]] = ("hierarchy", "data", "report")

    hierarchy: str
    hierarchy_delimiter: str = ";"
    data: str | None = None
    column: str | None = None
    report: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _paths_as_text(cls, values: Any) -> Any:
        """Accept ``pathlib.Path`` (any ``os.PathLike``) for the hierarchy and data paths."""
        if not isinstance(values, dict):
            return values
        return {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in values.items()}

    @model_validator(mode="after")
    def _data_and_column(self) -> ShowHierarchySettings:
        if (self.data is None) != (self.column is None):
            raise AnonlabError(
                "column and data go together: give the data table and its column, or neither",
                parameter="column",
            )
        return self


def _number_list(value: Any, kind: type[float] | type[int], example: str) -> Any:
    """``"5,10"`` as a list of numbers; anything else is left to pydantic."""
    if not isinstance(value, str):
        return value
    try:
        return [kind(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"is not a comma-separated list of numbers, e.g. {example}") from None


# ---------------------------------------------------------------------------
# building
# ---------------------------------------------------------------------------


def column_values(frame: pd.DataFrame, column: str) -> list[str]:
    """The distinct values of one column as text (a missing value as ``''``), first seen first."""
    if column not in frame.columns:
        raise AnonlabError(
            f"column '{column}' is not in the table, which has "
            f"{', '.join(map(str, frame.columns))}",
            parameter="column",
        )
    col = frame[column]
    return [str(v) for v in col.astype(str).where(col.notna(), "").unique()]


def natural_key(value: str) -> tuple[int, float, str]:
    """Sort key: numbers first in numeric order, then other text in text order."""
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def grouping_order(values: list[str], order: list[str] | None, column: str) -> list[str]:
    """The ordered domain of a grouping hierarchy: ``order``, or the numbers in numeric order.

    A missing value (``''``) need not be listed; every other value must be.
    Without ``order`` a text value is refused: ranges over a text sort
    (``1. White..2. Black``) mean nothing for nominal values.
    """
    if order is None:
        text = [v for v in values if v != "" and natural_key(v)[0] == 1]
        if text:
            shown = ", ".join(f"'{v}'" for v in sorted(text)[:3])
            raise AnonlabError(
                f"order is needed: column '{column}' holds text ({shown}), whose sort order "
                "means nothing; for nominal values build 'hierarchy taxonomy', for ordered "
                "text list its order",
                parameter="order",
            )
        return sorted(values, key=natural_key)
    ordered = [*order, ""] if "" in values and "" not in order else list(order)
    absent = sorted(set(values) - set(ordered))
    if absent:
        raise AnonlabError(
            f"order does not list value '{absent[0]}' of '{column}': list every value",
            parameter="order",
        )
    return ordered


def build_hierarchy(settings: HierarchySettings, values: list[str]) -> Hierarchy:
    """The hierarchy the settings ask for, over the column's ``values``."""
    from anonlab.hierarchy import grouping_hierarchy, interval_hierarchy, redaction_hierarchy

    if isinstance(settings, IntervalHierarchySettings):
        return interval_hierarchy(values, settings.widths)
    if isinstance(settings, GroupingHierarchySettings):
        ordered = grouping_order(values, settings.order, settings.column)
        return grouping_hierarchy(ordered, settings.sizes)
    if isinstance(settings, RedactionHierarchySettings):
        return redaction_hierarchy(values)
    if isinstance(settings, TaxonomyHierarchySettings):
        return _taxonomy(settings, values)
    if isinstance(settings, DateHierarchySettings):
        from anonlab.hierarchy_date import date_hierarchy

        return date_hierarchy(values, settings.levels, settings.date_format)
    raise TypeError(f"no hierarchy builder for {type(settings).__name__}")


def _taxonomy(settings: TaxonomyHierarchySettings, values: list[str]) -> Hierarchy:
    from anonlab.hierarchy_taxonomy import read_taxonomy, taxonomy_hierarchy

    levels = read_taxonomy(settings.mapping) if settings.mapping else settings.groups or []
    try:
        return taxonomy_hierarchy(values, levels)
    except AnonlabError as exc:
        raise AnonlabError(f"column '{settings.column}': {exc}") from None


def builder_warnings(
    settings: HierarchySettings, values: list[str], hierarchy: Hierarchy
) -> list[str]:
    """The builder's own warnings (beyond repeated levels): redaction of free text."""
    if isinstance(settings, RedactionHierarchySettings):
        return redaction_warnings(values, hierarchy, settings.column)
    return []


def hierarchy_report(
    command: str,
    settings: HierarchySettings | ShowHierarchySettings,
    inputs: dict[str, str | None],
    hierarchy: Hierarchy,
    view: HierarchyView,
) -> dict[str, Any]:
    """The report of a hierarchy run: the common header, then ``column``, ``values`` (rows of
    the hierarchy), ``levels`` (level 0 up to the top) and ``view`` (:meth:`HierarchyView.to_dict`:
    groups per level with the largest and their counts, ``uncovered`` data values and the
    ``warnings`` printed). Paths are stored as every report stores them (relative to the
    report's folder; absolute without a report file)."""
    from anonlab.report import report_header

    where = Path(settings.report) if settings.report is not None else None
    params = settings.model_dump()
    for name in settings.path_fields:
        params[name] = stored_path(params.get(name), where)
    files: dict[str, str | os.PathLike[str] | None] = {
        name: None if path is None or "://" in path else path for name, path in inputs.items()
    }
    report = report_header(command, params, files)
    report["paths"] = paths_convention(where)
    report.update(
        {
            "column": settings.column,
            "values": len(hierarchy.values),
            "levels": hierarchy.height + 1,
            "view": view.to_dict(),
        }
    )
    return report


def _builder_inputs(settings: HierarchySettings) -> dict[str, str | None]:
    """The files a builder reads: the table and, for a taxonomy, its mapping file."""
    files: dict[str, str | None] = {"data": settings.input}
    if isinstance(settings, TaxonomyHierarchySettings) and settings.mapping is not None:
        files["mapping"] = settings.mapping
    return files


def run_hierarchy(settings: HierarchySettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Build a hierarchy file in the ARX CSV layout from a table's column.

    The report (:func:`hierarchy_report`) says what was written: ``builder``,
    ``output`` (as stored), ``values``, ``levels`` and the ``view``, records
    counted per group; with ``settings.report`` it is also written as JSON,
    together with the hierarchy file or not at all. Each of the view's
    warnings is issued as a :class:`HierarchyWarning` once the files are
    written. ``progress`` is accepted for a uniform signature and not called.
    """
    inputs = _builder_inputs(settings)
    outputs = Outputs(
        {"output": settings.output, "report": settings.report}, inputs=inputs.values()
    )
    with outputs:
        frame = read_input(settings)
        values = column_values(frame, settings.column)
        hierarchy = build_hierarchy(settings, values)
        view = view_hierarchy(
            hierarchy,
            value_counts(frame, settings.column),
            builder_warnings(settings, values, hierarchy),
        )
        text = hierarchy.to_csv_text()
        outputs.stage("output", lambda tmp: tmp.write_text(text, encoding="utf-8"))
        report = hierarchy_report(
            f"hierarchy {settings.builder}", settings, inputs, hierarchy, view
        )
        report.update({"builder": settings.builder, "output": report["parameters"]["output"]})
        stage_report(outputs, report)
        written = outputs.commit()
    _warn(view)
    return RunResult(report=report, written=written)


def run_show(settings: ShowHierarchySettings, *, progress: ProgressFn | None = None) -> RunResult:
    """The view of an existing hierarchy file (records counted when a data column is given).

    The report (:func:`hierarchy_report`) holds ``hierarchy`` (as stored),
    ``values``, ``levels`` and ``view`` (whose ``uncovered`` lists the data
    values the hierarchy lacks); it is written as JSON only with
    ``settings.report``, nothing else is written.
    """
    from anonlab.hierarchy import Hierarchy
    from anonlab.io import read_table

    inputs = {"hierarchy": settings.hierarchy, "data": settings.data}
    with Outputs({"report": settings.report}, inputs=inputs.values()) as outputs:
        hierarchy = Hierarchy.from_csv(settings.hierarchy, delimiter=settings.hierarchy_delimiter)
        counts = None
        if settings.data is not None and settings.column is not None:
            frame = read_table(settings.data, **settings.read_options())
            column_values(frame, settings.column)  # refuses a column the table lacks
            counts = value_counts(frame, settings.column)
        view = view_hierarchy(hierarchy, counts)
        report = hierarchy_report("hierarchy show", settings, inputs, hierarchy, view)
        report["hierarchy"] = report["parameters"]["hierarchy"]
        stage_report(outputs, report)
        written = outputs.commit()
    _warn(view)
    return RunResult(report=report, written=written)


def _warn(view: HierarchyView) -> None:
    """Issue each of the view's warnings at the caller's line (the first outside anonlab)."""
    from anonlab.userwarn import warn_user

    for message in view.warnings:
        warn_user(message, HierarchyWarning)
