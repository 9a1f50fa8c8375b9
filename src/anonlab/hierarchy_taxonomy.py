"""Taxonomy hierarchies: nominal values grouped level by level, from a mapping.

A taxonomy is a list of levels. Level ``l`` (counted from 1) maps each of its
group labels to its members, which are the labels of level ``l - 1``; the
members of level 1 are the column's values (level 0). So every level is a
partition of the one below and the hierarchy is a tree by construction:
a value's label at level ``l`` is ``parent_l(... parent_1(value))``.

Rules, each refused in one line naming the values:

* every value of the column falls in exactly one group of level 1, and
  every group of level ``l - 1`` in exactly one group of level ``l``
  (missing and duplicated members are named);
* a member of level ``l >= 2`` must be a group of level ``l - 1``;
* the top level ``*`` is added automatically; a last level that is one group
  labelled ``*`` is taken as that top, ``*`` anywhere else is refused.

A missing value of the column (the empty string) need not be listed: as in
the other builders it keeps the label ``''`` up to the top.

Three equivalent file formats hold a taxonomy (see docs/hierarchies.md):
TOML (``[[levels]]`` tables of ``label = [members]``), JSON (``{"levels":
[{label: [members]}, ...]}`` or just the list) and CSV (header
``level,group,member``, one member per row).
"""

from __future__ import annotations

import csv
import io
import json
import math
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from anonlab.errors import AnonlabError
from anonlab.hierarchy import SUPPRESSED, Hierarchy
from anonlab.paths import PathLike

#: one level of a taxonomy: group label -> its members (labels of the level below)
Level = dict[str, list[str]]

CSV_HEADER = ("level", "group", "member")


def taxonomy_hierarchy(
    values: Iterable[object], levels: Sequence[Mapping[str, Sequence[str]]], top: str = SUPPRESSED
) -> Hierarchy:
    """The hierarchy of ``values`` under a taxonomy, ``top`` added as the last level.

    Rows follow the order of level 1's groups and members; values the
    taxonomy lists but ``values`` lack are kept (the hierarchy then also
    serves other tables with them).
    """
    texts = value_texts(values)
    clean = check_taxonomy(levels, top)
    parents = [_parents(level, number) for number, level in enumerate(clean, start=1)]
    _check_covered(parents[0], [v for v in texts if v != ""], 1, "the column's values")
    for number in range(2, len(clean) + 1):
        below = list(clean[number - 2])
        _check_members_known(clean[number - 1], below, number)
        _check_covered(parents[number - 1], below, number, f"the groups of level {number - 1}")
    rows = [_row(v, parents, top) for v in parents[0]]
    if "" in texts and "" not in parents[0]:
        below_top = len(parents) if _adds_top(clean, top) else len(parents) - 1
        rows.append(["", *[""] * below_top, top])
    return Hierarchy.from_rows(rows, source="<taxonomy builder>")


def value_texts(values: Iterable[object]) -> list[str]:
    """The distinct values as text, first seen first; a missing value (``None``, NaN) as
    ``''``, so a pandas column can be given as it is."""
    return list(dict.fromkeys("" if _missing(v) else str(v) for v in values))


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def check_taxonomy(
    levels: Sequence[Mapping[str, Sequence[str]]], top: str = SUPPRESSED
) -> list[Level]:
    """The taxonomy as clean lists (labels and members trimmed), refused when malformed."""
    if not levels:
        raise AnonlabError(
            "the taxonomy has no level: give at least one level of groups, "
            "e.g. --group 1:Married=Married-civ-spouse,Married-AF-spouse"
        )
    clean: list[Level] = []
    for number, level in enumerate(levels, start=1):
        if not level:
            raise AnonlabError(f"level {number} of the taxonomy has no group: give its groups")
        clean.append({str(k).strip(): [str(m).strip() for m in v] for k, v in level.items()})
        for label, members in clean[-1].items():
            _check_group(
                label, members, number, last=number == len(levels), top=top, alone=len(level) == 1
            )
    return clean


def _check_group(
    label: str, members: list[str], number: int, *, last: bool, top: str, alone: bool
) -> None:
    """One group: a label, at least one member, and ``top`` only as the single last group."""
    if not label:
        raise AnonlabError(f"a group of level {number} has no label: name every group")
    if not members:
        raise AnonlabError(f"group '{label}' of level {number} has no member: list its members")
    if label == top and not (last and alone):
        raise AnonlabError(
            f"group '{top}' at level {number}: '{top}' is the top level, added "
            "automatically; give the group another label"
        )


def _parents(level: Mapping[str, Sequence[str]], number: int) -> dict[str, str]:
    """``member -> label`` of one level; a member in two groups (or twice) is refused."""
    parent: dict[str, str] = {}
    for label, members in level.items():
        for member in members:
            if member in parent:
                raise AnonlabError(
                    f"'{member}' is in group '{parent[member]}' and in group '{label}' of "
                    f"level {number}: put each value in exactly one group of a level"
                )
            parent[member] = label
    return parent


def _check_covered(parent: Mapping[str, str], below: Sequence[str], number: int, what: str) -> None:
    """Refuse a level that leaves some of ``below`` in no group."""
    missing = [v for v in below if v not in parent]
    if missing:
        raise AnonlabError(
            f"level {number} of the taxonomy puts {len(missing)} of {what} in no group: "
            f"{_some(missing)}: put each in exactly one group of level {number}"
        )


def _check_members_known(
    level: Mapping[str, Sequence[str]], below: Sequence[str], number: int
) -> None:
    """Refuse a member of level ``number >= 2`` that is no group of the level below."""
    known = set(below)
    for label, members in level.items():
        unknown = [m for m in members if m not in known]
        if unknown:
            raise AnonlabError(
                f"group '{label}' of level {number} lists {_some(unknown)}, which is no group "
                f"of level {number - 1} ({_some(below)}): a level groups the groups of the "
                "level below"
            )


def _row(value: str, parents: Sequence[Mapping[str, str]], top: str) -> list[str]:
    """``value`` and its label at every level, ``top`` last (not twice)."""
    row = [value]
    for parent in parents:
        row.append(parent[row[-1]])
    return row if row[-1] == top else [*row, top]


def _adds_top(levels: Sequence[Level], top: str) -> bool:
    """Whether the builder adds ``top`` (the last level is not already it)."""
    return list(levels[-1]) != [top]


def _some(items: Sequence[str], limit: int = 5) -> str:
    """Up to ``limit`` items quoted, with how many more."""
    shown = ", ".join(f"'{v}'" for v in items[:limit])
    return shown if len(items) <= limit else f"{shown} and {len(items) - limit} more"


# ----------------------------------------------------------------------------- inputs


def parse_group_flags(items: Iterable[str]) -> list[Level]:
    """Taxonomy levels from ``LEVEL:LABEL=V1,V2,...`` items (``--group``), e.g.
    ``1:Married=Married-civ-spouse,Married-AF-spouse``.

    The level is the text before the first ``:``, the label the text up to the
    first ``=``, the members comma-separated after it (a value holding a comma
    needs a mapping file). Levels must run 1, 2, ... without a gap; a label
    given twice on one level is refused.
    """
    by_level: dict[int, Level] = {}
    for item in items:
        number, label, members = _split_group(item)
        level = by_level.setdefault(number, {})
        if label in level:
            raise AnonlabError(
                f"groups: group '{label}' of level {number} is given twice: "
                "give each group once, with all its members",
                parameter="groups",
            )
        level[label] = members
    gaps = [n for n in range(1, max(by_level, default=0) + 1) if n not in by_level]
    if gaps:
        raise AnonlabError(
            f"groups: no group of level {gaps[0]}: number the levels 1, 2, ... "
            f"(got {', '.join(map(str, sorted(by_level)))})",
            parameter="groups",
        )
    return [by_level[n] for n in sorted(by_level)]


def _split_group(item: str) -> tuple[int, str, list[str]]:
    """``"1:A=x,y"`` as ``(1, "A", ["x", "y"])``; anything else refused with an example."""
    head, colon, rest = item.partition(":")
    label, equals, tail = rest.partition("=")
    members = [m.strip() for m in tail.split(",") if m.strip()]
    if not (colon and equals and head.strip().isdigit() and label.strip() and members):
        raise AnonlabError(
            f"groups: each is LEVEL:LABEL=V1,V2,... (got '{item}'), e.g. "
            "1:Married=Married-civ-spouse,Married-AF-spouse",
            parameter="groups",
        )
    number = int(head)
    if number < 1:
        raise AnonlabError(
            f"groups: level {number} in '{item}' must be 1 or more (level 0 is the values)",
            parameter="groups",
        )
    return number, label.strip(), members


def read_taxonomy(path: PathLike) -> list[Level]:
    """A taxonomy from a ``.toml``, ``.json`` or ``.csv`` mapping file (by extension)."""
    p = Path(path)
    if not p.is_file():
        raise AnonlabError(
            f"mapping file '{p}' does not exist: check the path", parameter="mapping"
        )
    readers = {".toml": _from_toml, ".json": _from_json, ".csv": _from_csv}
    reader = readers.get(p.suffix.lower())
    if reader is None:
        raise AnonlabError(
            f"mapping '{p}' is not .toml, .json or .csv: name the format by the extension",
            parameter="mapping",
        )
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise AnonlabError(
            f"mapping '{p}' is not UTF-8 text: re-save it", parameter="mapping"
        ) from None
    return reader(text, str(p))


def _from_toml(text: str, source: str) -> list[Level]:
    try:
        data: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AnonlabError(f"mapping '{source}' is not valid TOML: {exc}") from None
    return _levels(data, source)


def _from_json(text: str, source: str) -> list[Level]:
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnonlabError(f"mapping '{source}' is not valid JSON: {exc}") from None
    return _levels(data, source)


def _levels(data: Any, source: str) -> list[Level]:
    """``{"levels": [{label: [members]}, ...]}`` (or the bare list) as checked levels."""
    levels = data.get("levels") if isinstance(data, dict) and set(data) == {"levels"} else data
    if not isinstance(levels, list) or not all(_is_level(x) for x in levels):
        raise AnonlabError(
            f"mapping '{source}' is not a list of levels, each a table of "
            "LABEL = [VALUE, ...]: see docs/hierarchies.md"
        )
    return [{str(k): [str(m) for m in v] for k, v in level.items()} for level in levels]


def _is_level(level: Any) -> bool:
    return isinstance(level, dict) and all(
        isinstance(v, list) and all(isinstance(m, str | int | float) for m in v)
        for v in level.values()
    )


def _from_csv(text: str, source: str) -> list[Level]:
    """Rows ``level,group,member`` after that header; levels numbered 1, 2, ..."""
    rows = [r for r in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in r)]
    if not rows or tuple(c.strip().lower() for c in rows[0]) != CSV_HEADER:
        raise AnonlabError(
            f"mapping '{source}' needs the header line "
            f"{','.join(CSV_HEADER)}: see docs/hierarchies.md"
        )
    levels: dict[int, Level] = {}
    for lineno, row in enumerate(rows[1:], start=2):
        if len(row) != 3 or not row[0].strip().isdigit() or int(row[0]) < 1:
            raise AnonlabError(
                f"mapping '{source}' row {lineno} is not LEVEL,GROUP,MEMBER "
                f"with a level of 1 or more (got {','.join(row)})"
            )
        level = levels.setdefault(int(row[0]), {})
        level.setdefault(row[1].strip(), []).append(row[2].strip())
    gaps = [n for n in range(1, max(levels, default=0) + 1) if n not in levels]
    if gaps or not levels:
        raise AnonlabError(
            f"mapping '{source}' has no level {gaps[0] if gaps else 1}: number the levels 1, 2, ..."
        )
    return [levels[n] for n in sorted(levels)]
