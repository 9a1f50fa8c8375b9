"""The Hierarchies step's logic: a column's values, a hierarchy built or loaded, its preview, edits.

Everything here is the library's own: a builder's settings are validated by
the CLI's settings model (:data:`anonlab.runs.hierarchy.HIERARCHY_BUILDERS`)
and built by :func:`anonlab.runs.hierarchy.build_hierarchy` over
:func:`~anonlab.runs.hierarchy.column_values` of the table read by the one
reader, as ``anonlab hierarchy BUILDER`` does; a loaded file is read by
:meth:`anonlab.hierarchy.Hierarchy.from_csv`; every edited hierarchy is
validated again by :class:`~anonlab.hierarchy.Hierarchy` (levels nest, no
cycle, some level merges values). The preview shows the very
:class:`~anonlab.hierarchy.Hierarchy` object that :func:`save_draft` writes
(``Hierarchy.to_csv_text``, the CLI's text), so what the page shows is what a
run reads, byte for byte; the preview carries the SHA-256 of that text.

The edits act on one level ``l`` (1 up to the top):

* rename: group ``g`` of level ``l`` becomes ``g'`` on every row (a label
  already used at level ``l`` merges the two groups, if their parents agree);
* add: a value of the column that the hierarchy lacks joins a group ``g`` of
  level 1, with ``g``'s labels above it;
* move: member ``m`` of level ``l`` (a value at ``l = 1``, else a group of
  level ``l - 1``) goes to group ``g`` of level ``l``: every row with
  ``m`` at level ``l - 1`` takes ``g`` at level ``l`` and ``g``'s labels above
  it, so the levels keep nesting; a new ``g`` keeps the labels above that
  ``m`` had (a new group under the same parent).
"""

from __future__ import annotations

import hashlib
import re
import shlex
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy, parse_rows
from anonlab.hierarchy_view import repeated_levels, value_counts
from anonlab.runs.generalize_settings import TableSettings
from anonlab.runs.generalize_steps import read_input
from anonlab.runs.hierarchy import (
    HIERARCHY_BUILDERS,
    HierarchySettings,
    build_hierarchy,
    builder_warnings,
    column_values,
    natural_key,
)
from anonlab.settings import validate_settings
from anonlab.ui.workspace import LoadedTable, Workspace

#: how a hierarchy came to be: one of the library's builders, or a loaded ARX CSV file
KINDS: tuple[str, ...] = (*HIERARCHY_BUILDERS, "csv")
#: the kinds whose groups the page lets the user edit (labels that are names, not
#: computed ranges, dates or redacted codes)
EDITABLE: frozenset[str] = frozenset({"grouping", "taxonomy", "csv"})
#: value rows the preview lists (every level's summary always counts them all)
SHOWN_ROWS = 500
#: groups shown per level in the summary
SHOWN_GROUPS = 5


@dataclass(frozen=True)
class ColumnData:
    """A column's distinct values as text (first seen first, missing as ``''``) and
    the records holding each."""

    column: str
    values: list[str]
    counts: dict[str, int]

    @property
    def records(self) -> int:
        return sum(self.counts.values())

    @property
    def sorted_values(self) -> list[str]:
        """The values numbers first in numeric order, then text, the missing one last."""
        return [*natural_order(self.values), *([""] if "" in self.counts else [])]


def natural_order(values: Sequence[str]) -> list[str]:
    """The values (the missing one left out) numbers first in numeric order, then text: the
    order a grouping's ``order`` starts from."""
    return sorted((v for v in values if v != ""), key=natural_key)


def table_settings(table: LoadedTable) -> TableSettings:
    """How the table is read, as the settings model of a run takes it."""
    return validate_settings(TableSettings, dict(table.read))


def read_columns(table: LoadedTable, columns: Sequence[str]) -> dict[str, ColumnData]:
    """The values and counts of ``columns``, the table read once by the one reader (as a run
    reads it: every value as text; text columns held as dictionary codes, so a table of a
    gigabyte takes a few bytes a cell)."""
    frame = read_input(table_settings(table), categorical=True)
    out: dict[str, ColumnData] = {}
    for column in columns:
        if column not in frame.columns:
            column_values(frame.head(0), column)  # the CLI's refusal of a missing column
        col = frame[column]
        if isinstance(col.dtype, pd.CategoricalDtype):
            out[column] = _coded_column(column, col)
        else:  # a column the reader kept as numbers
            values = column_values(frame, column)
            out[column] = ColumnData(column, values, value_counts(frame, column))
    return out


def _coded_column(column: str, col: pd.Series) -> ColumnData:
    """:class:`ColumnData` of a categorical column from its codes: the same values (missing
    as ``''``), first seen first, and counts as :func:`column_values` and
    :func:`value_counts` give for the column as text."""
    codes = col.cat.codes.to_numpy()
    texts = ["" if pd.isna(v) else str(v) for v in col.cat.categories]
    per_code = np.bincount(codes[codes >= 0], minlength=len(texts))
    counts: dict[str, int] = {}
    values: list[str] = []
    for code in pd.unique(codes):  # first seen first
        text = "" if code < 0 else texts[code]
        if text not in counts:
            values.append(text)
            counts[text] = 0
    for index, n in enumerate(per_code.tolist()):
        if n:
            counts[texts[index]] += n
    missing = int((codes < 0).sum())
    if missing:
        counts[""] += missing
    return ColumnData(column=column, values=values, counts=counts)


@dataclass
class Draft:
    """The hierarchy being made for one column: how it began, and each version since.

    ``history[0]`` is what the builder built (or the file held); each edit adds
    a version, undo drops the last. ``params`` are the builder's settings values
    as the form gave them (``{}`` for a file).
    """

    table_id: str
    column: str
    kind: str
    params: dict[str, Any]
    source: str
    history: list[Hierarchy]
    edits: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def hierarchy(self) -> Hierarchy:
        return self.history[-1]

    @property
    def editable(self) -> bool:
        return self.kind in EDITABLE


class HierarchyStore:
    """The session's column data (read once per table) and drafts, by (table, column)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[tuple[str, str], ColumnData] = {}
        self._drafts: dict[tuple[str, str], Draft] = {}

    def column(self, table: LoadedTable, column: str) -> ColumnData:
        """The column's values and counts; the first call for a table reads it once for the
        column and every other quasi-identifier the roles name."""
        key = (table.id, column)
        with self._lock:
            if key in self._data:
                return self._data[key]
        wanted = [column, *(c for c, r in table.roles.items() if r == "qi" and c != column)]
        known = {c.get("name") for c in table.columns if isinstance(c, dict)}
        wanted = [c for c in wanted if c == column or not known or c in known]
        read = read_columns(table, wanted)
        with self._lock:
            for name, data in read.items():
                self._data.setdefault((table.id, name), data)
            return self._data[key]

    def draft(self, table_id: str, column: str) -> Draft | None:
        with self._lock:
            return self._drafts.get((table_id, column))

    def put(self, draft: Draft) -> None:
        with self._lock:
            self._drafts[(draft.table_id, draft.column)] = draft

    def drop(self, table_id: str, column: str) -> None:
        with self._lock:
            self._drafts.pop((table_id, column), None)


# ---------------------------------------------------------------------------
# building and loading
# ---------------------------------------------------------------------------


def builder_settings(
    table: LoadedTable, column: str, kind: str, params: Mapping[str, Any], output: Path
) -> HierarchySettings:
    """The settings ``anonlab hierarchy KIND`` would have: the table's read settings, the
    column, the builder's ``params`` and ``output``, validated by the CLI's model."""
    try:
        model = HIERARCHY_BUILDERS[kind]
    except KeyError:
        raise AnonlabError(
            f"builder '{kind}' is not one of {', '.join(HIERARCHY_BUILDERS)}",
            parameter="builder",
        ) from None
    values = {**table.read, "column": column, "output": str(output), **params}
    return validate_settings(model, values)


def build(
    table: LoadedTable, data: ColumnData, kind: str, params: Mapping[str, Any], output: Path
) -> Draft:
    """The draft hierarchy a builder makes over the column's values (not stored)."""
    settings = builder_settings(table, data.column, kind, params, output)
    hierarchy = build_hierarchy(settings, data.values)
    return Draft(
        table_id=table.id,
        column=data.column,
        kind=kind,
        params=dict(params),
        source=f"{kind} builder",
        history=[hierarchy],
        warnings=builder_warnings(settings, data.values, hierarchy),
    )


def load_file(table: LoadedTable, column: str, path: Path, name: str, delimiter: str) -> Draft:
    """The draft of an existing hierarchy file in the ARX CSV layout (validated on load)."""
    hierarchy = Hierarchy.from_csv(path, delimiter=delimiter or ";")
    return Draft(
        table_id=table.id,
        column=column,
        kind="csv",
        params={},
        source=f"file {name}",
        history=[hierarchy],
    )


def cli_line(table: LoadedTable, draft: Draft, output: str) -> str | None:
    """The ``anonlab hierarchy`` command that builds the same file as an unedited builder
    draft; ``None`` for a file or an edited draft, or when a value cannot be a flag."""
    if draft.kind not in HIERARCHY_BUILDERS or draft.edits:
        return None
    read = table.read
    args = ["anonlab", "hierarchy", draft.kind, str(read["input"])]
    for name in ("delimiter", "sheet", "table", "query"):
        if read.get(name) is not None:
            args += [f"--{name}", str(read[name])]
    args += ["--column", draft.column]
    flags = _builder_flags(draft.kind, draft.params)
    if flags is None:
        return None
    args += flags
    args += ["--output", output]
    return shlex.join(args)


def _builder_flags(kind: str, params: Mapping[str, Any]) -> list[str] | None:
    """The builder's own flags for ``params`` (``None``: an order value holds a comma)."""
    args: list[str] = []
    if kind == "interval":
        args += ["--widths", str(params["widths"])]
    elif kind == "grouping":
        args += ["--sizes", str(params["sizes"])]
        order = params.get("order")
        if order:
            if any("," in v for v in order):
                return None
            args += ["--order", ",".join(order)]
    elif kind == "taxonomy":
        if params.get("mapping"):
            args += ["--mapping", str(params["mapping"])]
        for group in params.get("groups") or []:
            args += ["--group", group]
    elif kind == "date":
        if params.get("levels"):
            args += ["--levels", ",".join(params["levels"])]
        if params.get("date_format"):
            args += ["--format", str(params["date_format"])]
    return args


# ---------------------------------------------------------------------------
# edits (each validated by the library's Hierarchy)
# ---------------------------------------------------------------------------


def _level(hierarchy: Hierarchy, level: int) -> int:
    if not 1 <= level <= hierarchy.height:
        raise AnonlabError(
            f"level {level} is not one of the hierarchy's levels 1 to {hierarchy.height}: "
            "level 0 holds the values themselves",
            parameter="level",
        )
    return level


def _edited(rows: list[list[str]], column: str) -> Hierarchy:
    return Hierarchy.from_rows(rows, source=f"edited hierarchy of '{column}'")


def rename_group(hierarchy: Hierarchy, column: str, level: int, old: str, new: str) -> Hierarchy:
    """Group ``old`` of ``level`` labelled ``new`` on every row (see the module's notes)."""
    _level(hierarchy, level)
    new = new.strip()
    if not new:
        raise AnonlabError("the new label is empty: give the group a name", parameter="label")
    if old not in {row[level] for row in hierarchy.rows}:
        raise AnonlabError(
            f"level {level} has no group '{old}': choose one of its groups", parameter="group"
        )
    if new == old:
        raise AnonlabError(f"group '{old}' already has that label", parameter="label")
    rows = [
        [*row[:level], new if row[level] == old else row[level], *row[level + 1 :]]
        for row in hierarchy.rows
    ]
    return _edited(rows, column)


def move_member(
    hierarchy: Hierarchy, column: str, level: int, member: str, group: str
) -> Hierarchy:
    """Member ``member`` of ``level`` (a label of level ``level - 1``) into group ``group``
    of ``level`` (see the module's notes)."""
    _level(hierarchy, level)
    group = group.strip()
    if not group:
        raise AnonlabError("the target group is empty: name a group", parameter="group")
    moved = [row for row in hierarchy.rows if row[level - 1] == member]
    if not moved:
        what = "value" if level == 1 else f"group of level {level - 1}"
        raise AnonlabError(f"'{member}' is no {what}: choose one of them", parameter="member")
    if all(row[level] == group for row in moved):
        raise AnonlabError(f"'{member}' is already in group '{group}'", parameter="group")
    template = next(
        (row for row in hierarchy.rows if row[level] == group and row[level - 1] != member), None
    )
    rows: list[list[str]] = []
    for row in hierarchy.rows:
        if row[level - 1] != member:
            rows.append(list(row))
        elif template is not None:
            rows.append([*row[:level], *template[level:]])
        else:
            rows.append([*row[:level], group, *row[level + 1 :]])
    return _edited(rows, column)


def add_value(hierarchy: Hierarchy, column: str, value: str, group: str) -> Hierarchy:
    """A value of the column that the hierarchy lacks, added to group ``group`` of level 1
    (it takes that group's labels at every level), as the last row."""
    if value in hierarchy:
        raise AnonlabError(f"'{value}' is already in the hierarchy", parameter="member")
    if hierarchy.height < 1:
        raise AnonlabError("the hierarchy has no level above the values", parameter="level")
    template = next((row for row in hierarchy.rows if row[1] == group.strip()), None)
    if template is None:
        raise AnonlabError(
            f"level 1 has no group '{group.strip()}': a value the hierarchy lacks joins one "
            "of its groups",
            parameter="group",
        )
    return _edited([*map(list, hierarchy.rows), [value, *template[1:]]], column)


# ---------------------------------------------------------------------------
# the preview
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ValueRow:
    """One value of the hierarchy or of the column: its records and its label per level
    (empty when the hierarchy lacks the value)."""

    value: str
    count: int
    labels: tuple[str, ...]
    covered: bool


@dataclass(frozen=True)
class GroupView:
    """A group of one level: its label, its members (labels one level down), its records."""

    label: str
    members: tuple[str, ...]
    records: int


@dataclass(frozen=True)
class LevelSummary:
    """One level: its number of groups and its groups, largest (by records) first."""

    level: int
    groups: tuple[GroupView, ...]

    @property
    def count(self) -> int:
        return len(self.groups)


@dataclass(frozen=True)
class Preview:
    """What the page shows of a hierarchy over a column: every level on the real values."""

    column: str
    height: int
    rows: tuple[ValueRow, ...]
    total_rows: int
    levels: tuple[LevelSummary, ...]
    uncovered: tuple[tuple[str, int], ...]
    uncovered_records: int
    records: int
    warnings: tuple[str, ...]
    csv_text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.csv_text.encode("utf-8")).hexdigest()


def as_read(hierarchy: Hierarchy, column: str) -> Hierarchy:
    """The hierarchy as a run reads its saved file: its ARX CSV text parsed and validated
    again (cells are read without the spaces around them, so a value ``'x '`` of the
    column is not the file's ``'x'``)."""
    lines: list[int] = []
    source = f"the saved hierarchy of '{column}'"
    rows = parse_rows(hierarchy.to_csv_text(), source, ";", lines)
    return Hierarchy(rows, source=source, lines=tuple(lines))


def preview(hierarchy: Hierarchy, data: ColumnData, warnings: Sequence[str] = ()) -> Preview:
    """The hierarchy level by level on the column's values (records counted per group) and
    the column's values the hierarchy lacks (a run would refuse them).

    What is shown is :func:`as_read` of the hierarchy, the hierarchy a run gets from
    the saved file, and ``csv_text`` is that file's text.
    """
    read = as_read(hierarchy, data.column)
    counts = data.counts
    height = read.height
    rows = [
        ValueRow(value=row[0], count=counts.get(row[0], 0), labels=row[1:], covered=True)
        for row in read.rows
    ]
    missing = read.missing(data.values)
    rows += [ValueRow(value=v, count=counts[v], labels=(), covered=False) for v in missing]
    levels = tuple(_level_summary(read, level, counts) for level in range(1, height + 1))
    notes = list(warnings)
    if read.rows != hierarchy.rows:
        spaced = [v for row in hierarchy.rows for v in row if v != v.strip()]
        notes.append(
            f"a file's cells are read without the spaces around them, so the saved file "
            f"holds {', '.join(repr(v.strip()) for v in spaced[:3])} where the column has "
            f"{', '.join(repr(v) for v in spaced[:3])}"
        )
    return Preview(
        column=data.column,
        height=height,
        rows=tuple(rows[:SHOWN_ROWS]),
        total_rows=len(rows),
        levels=levels,
        uncovered=tuple((v, counts[v]) for v in missing),
        uncovered_records=sum(counts[v] for v in missing),
        records=data.records,
        warnings=(*notes, *repeated_levels(read)),
        csv_text=hierarchy.to_csv_text(),
    )


def _level_summary(hierarchy: Hierarchy, level: int, counts: Mapping[str, int]) -> LevelSummary:
    members: dict[str, dict[str, None]] = {}
    records: dict[str, int] = {}
    for row in hierarchy.rows:
        label = row[level]
        members.setdefault(label, {})[row[level - 1]] = None
        records[label] = records.get(label, 0) + counts.get(row[0], 0)
    groups = sorted(
        (GroupView(label=g, members=tuple(m), records=records[g]) for g, m in members.items()),
        key=lambda g: -g.records,
    )
    return LevelSummary(level=level, groups=tuple(groups))


# ---------------------------------------------------------------------------
# saving
# ---------------------------------------------------------------------------


def hierarchy_path(workspace: Workspace, table: LoadedTable, column: str) -> Path:
    """Where the column's hierarchy is saved: ``hierarchies/<table>/hierarchy_<column>.csv``
    (the name made safe, with a digest of the column's name so two names never meet)."""
    folder = workspace.folder("hierarchies") / table.id
    folder.mkdir(mode=0o700, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", column).strip("._") or "column"
    digest = hashlib.sha1(column.encode("utf-8")).hexdigest()[:8]
    return folder / f"hierarchy_{safe[:60]}_{digest}.csv"


def save_draft(workspace: Workspace, table: LoadedTable, draft: Draft) -> Path:
    """Write the draft's hierarchy as ARX CSV (atomically, the CLI's text) and attach it to
    the table's column, so a run's settings name it."""
    as_read(draft.hierarchy, draft.column)  # a file the runs could not read is not written
    path = hierarchy_path(workspace, table, draft.column)
    draft.hierarchy.write(path)
    table.hierarchies[draft.column] = str(path)
    return path
