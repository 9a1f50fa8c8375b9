"""What a hierarchy looks like: groups per level, the largest groups, and doubtful levels.

:func:`view_hierarchy` summarizes a hierarchy level by level: the number of
groups ``|{label(v, l) : v}|`` and the largest groups by count, where a
group's count is ``sum of c(v)`` over its values ``v``, with ``c(v)`` the
records holding ``v`` when a data column is given, else 1 (values). With a
data column it also lists the data values the hierarchy does not cover.

It warns about levels that look accidental:

* a level that repeats the one below: levels nest, so level ``l`` repeats
  level ``l - 1`` exactly when both have the same number of groups; such a
  level generalizes nothing (e.g. ``grouping --sizes 1,5``, or ``date``
  ``--levels day`` over plain dates);
* (:func:`redaction_warnings`) a redaction over values of very different
  lengths (the longest at least twice the shortest) or with more than
  :data:`MANY_REDACTION_LEVELS` levels: free text rather than codes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anonlab.hierarchy import Hierarchy

if TYPE_CHECKING:
    import pandas as pd

#: groups shown per level
SHOWN_GROUPS = 3
#: more redaction levels than this (above the values) look like free text, not codes
MANY_REDACTION_LEVELS = 10


@dataclass(frozen=True)
class LevelView:
    """One level: its number of groups and its largest groups with their counts."""

    level: int
    groups: int
    largest: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class HierarchyView:
    """A hierarchy level by level; ``counted`` is ``"records"`` (data given) or ``"values"``."""

    levels: tuple[LevelView, ...]
    counted: str
    uncovered: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The view as JSON-ready data (for a run's report)."""
        return {
            "counted": self.counted,
            "levels": [
                {
                    "level": lv.level,
                    "groups": lv.groups,
                    "largest": [{"group": g, "count": c} for g, c in lv.largest],
                }
                for lv in self.levels
            ],
            "uncovered": list(self.uncovered),
            "warnings": list(self.warnings),
        }


def view_hierarchy(
    hierarchy: Hierarchy,
    counts: Mapping[str, int] | None = None,
    extra_warnings: Iterable[str] = (),
    shown: int = SHOWN_GROUPS,
) -> HierarchyView:
    """The view of ``hierarchy``; ``counts`` maps each data value to its number of records."""
    weight = dict.fromkeys(hierarchy.values, 1) if counts is None else counts
    levels = tuple(
        _level_view(hierarchy, level, weight, shown) for level in range(hierarchy.height + 1)
    )
    uncovered = tuple(hierarchy.missing(counts)) if counts is not None else ()
    return HierarchyView(
        levels=levels,
        counted="values" if counts is None else "records",
        uncovered=uncovered,
        warnings=(*extra_warnings, *repeated_levels(hierarchy)),
    )


def _level_view(
    hierarchy: Hierarchy, level: int, weight: Mapping[str, int], shown: int
) -> LevelView:
    """Groups of one level, counted by ``weight`` (values not in ``weight`` count 0)."""
    totals: dict[str, int] = {}
    for row in hierarchy.rows:
        totals[row[level]] = totals.get(row[level], 0) + weight.get(row[0], 0)
    largest = sorted(totals.items(), key=lambda item: -item[1])[:shown]
    return LevelView(level=level, groups=len(totals), largest=tuple(largest))


def group_counts(hierarchy: Hierarchy) -> list[int]:
    """The number of groups (distinct labels) at each level, level 0 first."""
    return [len({row[level] for row in hierarchy.rows}) for level in range(hierarchy.height + 1)]


def repeated_levels(hierarchy: Hierarchy) -> list[str]:
    """One warning per run of levels with as many groups as the level below (they merge
    nothing), e.g. ``levels 1 to 16 repeat level 0``."""
    counts = group_counts(hierarchy)
    if len(hierarchy.rows) < 2:
        return []
    repeats = [lv for lv in range(1, len(counts)) if counts[lv] == counts[lv - 1]]
    runs: list[list[int]] = []
    for level in repeats:
        if runs and runs[-1][-1] == level - 1:
            runs[-1].append(level)
        else:
            runs.append([level])
    return [_repeat_message(run[0], run[-1], counts[run[0]]) for run in runs]


def _repeat_message(first: int, last: int, groups: int) -> str:
    which = f"level {first} repeats" if first == last else f"levels {first} to {last} repeat"
    return (
        f"{which} level {first - 1} ({groups} group{'' if groups == 1 else 's'} each): "
        "it generalizes nothing; leave it out (e.g. a group size of 1, or a width below "
        "the spacing of the values)"
    )


def redaction_warnings(values: Sequence[str], hierarchy: Hierarchy, column: str) -> list[str]:
    """Warnings when a redaction hierarchy looks built over free text rather than codes."""
    lengths = [len(v) for v in values if v != ""]
    if not lengths:
        return []
    out: list[str] = []
    shortest, longest = min(lengths), max(lengths)
    if longest >= 2 * shortest and longest > 2:
        out.append(
            f"values of '{column}' have {shortest} to {longest} characters: redaction "
            "pads them to one length, so a level cuts different parts of different "
            "values; for nominal values use 'hierarchy taxonomy'"
        )
    if hierarchy.height - 1 > MANY_REDACTION_LEVELS:
        out.append(
            f"redaction of '{column}' made {hierarchy.height + 1} levels: is it a code "
            "column? for free text or nominal values use 'hierarchy taxonomy'"
        )
    return out


def value_counts(frame: pd.DataFrame, column: str) -> dict[str, int]:
    """Records per value of ``column`` as text (a missing value as ``''``)."""
    col = frame[column]
    texts = col.astype(str).where(col.notna(), "")
    return {str(k): int(v) for k, v in texts.value_counts(sort=False).items()}
