"""Generalization hierarchies in the ARX CSV layout, their validation and builders.

Layout: ``;``-separated, no header, one row per original value; column 0 is the
value itself (level 0), each following column the value's label at the next,
coarser level, the last usually ``*``. A hierarchy of height ``h`` has ``h + 1``
columns.

Validation on load (each error names the file, the line and the values):

* ragged rows (not every row has the same number of fields);
* a value listed twice at level 0;
* non-nested levels: two values share a group at level ``i`` but not at level
  ``i + 1`` (generalization would then not be a function of the coarser
  groups and the lattice would not be monotone);
* a hierarchy that only relabels: with two or more values and at least one
  level above them, no level merges two values (every level renames the one
  below one-to-one), so generalizing protects nothing. A hierarchy of height 0
  (values only) is accepted: its column can only be suppressed;
* a cycle: following "label at level ``i`` generalizes to label at level
  ``i + 1``" over all rows (labels compared as text, equal labels on
  consecutive levels skipped) comes back to where it started, e.g. ``a``
  generalizes to ``b`` on one line and ``b`` to ``a`` on another.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import pairwise
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.io import write_text
from anonlab.paths import PathLike

SUPPRESSED = "*"


@dataclass(frozen=True)
class Hierarchy:
    """A validated generalization hierarchy.

    ``rows[r][l]`` is the label of original value ``rows[r][0]`` at level ``l``.
    """

    rows: tuple[tuple[str, ...], ...]
    source: str = "<memory>"
    #: file line of each row (empty: rows are numbered from 1), for error messages
    lines: tuple[int, ...] = field(default=(), compare=False, repr=False)
    _index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        validate_rows(self.rows, self.source, self.lines)
        object.__setattr__(self, "_index", {row[0]: i for i, row in enumerate(self.rows)})

    @property
    def height(self) -> int:
        """Number of generalization steps above the original values."""
        return len(self.rows[0]) - 1

    @property
    def values(self) -> list[str]:
        """The original (level-0) values, in file order."""
        return [row[0] for row in self.rows]

    def __contains__(self, value: object) -> bool:
        return value in self._index

    def label(self, value: str, level: int) -> str:
        """The label of ``value`` at ``level``."""
        return self.rows[self._index[value]][level]

    def labels(self, values: Sequence[str], level: int) -> list[str]:
        """Labels of several values at one level."""
        return [self.rows[self._index[v]][level] for v in values]

    def missing(self, values: Iterable[str]) -> list[str]:
        """Values (in first-seen order) that the hierarchy does not list."""
        seen: dict[str, None] = {}
        for v in values:
            if v not in self._index:
                seen.setdefault(v, None)
        return list(seen)

    @classmethod
    def from_csv(cls, path: PathLike, delimiter: str = ";") -> Hierarchy:
        """Load a hierarchy file in the ARX CSV layout."""
        p = Path(path)
        if not p.exists():
            raise AnonlabError(f"hierarchy file '{p}' does not exist: check the path")
        try:
            text = p.read_text(encoding="utf-8-sig")  # a BOM is not part of the first value
        except UnicodeDecodeError as exc:
            raise AnonlabError(f"hierarchy file '{p}' is not UTF-8 text: re-save it") from exc
        lines: list[int] = []
        rows = parse_rows(text, str(p), delimiter, lines)
        return cls(rows, source=str(p), lines=tuple(lines))

    @classmethod
    def from_rows(cls, rows: Iterable[Sequence[object]], source: str = "<memory>") -> Hierarchy:
        """Build a hierarchy from rows of labels (level 0 first)."""
        return cls(tuple(tuple(str(x) for x in r) for r in rows), source=source)

    def to_csv_text(self, delimiter: str = ";") -> str:
        """The hierarchy in the ARX CSV layout."""
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
        writer.writerows(self.rows)
        return buf.getvalue()

    def write(self, path: PathLike, delimiter: str = ";") -> None:
        """Write the hierarchy atomically in the ARX CSV layout."""
        write_text(self.to_csv_text(delimiter), path)

    def level_maps(self, values: Sequence[str]) -> tuple[list[NDArray[np.int32]], list[list[str]]]:
        """Integer lookups for the given data dictionary.

        Returns ``(codes, labels)``: ``codes[l][v]`` is the group id at level
        ``l`` of data value ``values[v]`` and ``labels[l][g]`` that group's label.
        Group ids at each level are numbered in order of first appearance.
        Level 0 maps each value to itself.
        """
        codes: list[NDArray[np.int32]] = []
        labels: list[list[str]] = []
        for level in range(self.height + 1):
            names = self.labels(values, level)
            ids: dict[str, int] = {}
            arr = np.fromiter(
                (ids.setdefault(n, len(ids)) for n in names), dtype=np.int32, count=len(names)
            )
            codes.append(arr)
            labels.append(list(ids))
        return codes, labels


def parse_rows(
    text: str, source: str, delimiter: str = ";", lines: list[int] | None = None
) -> tuple[tuple[str, ...], ...]:
    """Parse ARX-layout text into rows, failing on empty input or ragged rows.

    Blank lines are skipped; if ``lines`` is given, the file line number of
    every row kept is appended to it.
    """
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    rows: list[tuple[str, ...]] = []
    width, first_line = -1, 1
    for lineno, raw in enumerate(reader, start=1):
        if not raw or all(not cell.strip() for cell in raw):
            continue
        row = tuple(cell.strip() for cell in raw)
        if width < 0:
            width, first_line = len(row), lineno
        elif len(row) != width:
            raise AnonlabError(
                f"hierarchy '{source}' line {lineno}: {len(row)} fields where line "
                f"{first_line} has "
                f"{width} (value '{row[0]}'): every row needs one label per level"
            )
        rows.append(row)
        if lines is not None:
            lines.append(lineno)
    if not rows:
        raise AnonlabError(f"hierarchy '{source}' is empty: give one row per original value")
    return tuple(rows)


def validate_rows(rows: Sequence[Sequence[str]], source: str, lines: Sequence[int] = ()) -> None:
    """Check rectangular shape, unique level-0 values and nesting of levels.

    ``lines`` gives the file line of each row for the messages (default: 1, 2, ...).
    """
    if not rows:
        raise AnonlabError(f"hierarchy '{source}' is empty: give one row per original value")
    numbers = list(lines) if len(lines) == len(rows) else list(range(1, len(rows) + 1))
    width = len(rows[0])
    seen: dict[str, int] = {}
    for lineno, row in zip(numbers, rows, strict=True):
        if len(row) != width:
            raise AnonlabError(
                f"hierarchy '{source}' line {lineno}: {len(row)} fields where line "
                f"{numbers[0]} has {width}: every row needs one label per level"
            )
        if row[0] in seen:
            raise AnonlabError(
                f"hierarchy '{source}' line {lineno}: value '{row[0]}' is listed again "
                f"(first on line {seen[row[0]]}): list each original value once"
            )
        seen[row[0]] = lineno
    for level in range(1, width - 1):
        parent: dict[str, tuple[str, int]] = {}
        for lineno, row in zip(numbers, rows, strict=True):
            group, up = row[level], row[level + 1]
            if group in parent and parent[group][0] != up:
                first_up, first_line = parent[group]
                raise AnonlabError(
                    f"hierarchy '{source}' is not nested: group '{group}' at level {level} "
                    f"goes to '{first_up}' (line {first_line}) and to '{up}' (line {lineno}) "
                    f"at level {level + 1}: give every group one parent"
                )
            parent.setdefault(group, (up, lineno))
    _check_merges(rows, source, numbers)
    _check_acyclic(rows, source, numbers)


def _check_merges(rows: Sequence[Sequence[str]], source: str, numbers: Sequence[int]) -> None:
    """Refuse a hierarchy whose levels never merge two values (it only relabels them).

    Levels nest (checked before), so level ``i + 1`` has at most as many
    labels as level ``i``; no level merges anything exactly when the top
    level still has one label per value.
    """
    width = len(rows[0])
    if width < 2 or len(rows) < 2 or len({row[-1] for row in rows}) < len(rows):
        return
    a, b = rows[0], rows[1]
    raise AnonlabError(
        f"hierarchy '{source}' only relabels values: no level merges two values (e.g. "
        f"'{a[0]}' on line {numbers[0]} and '{b[0]}' on line {numbers[1]} stay apart up to "
        f"level {width - 1}, as '{a[-1]}' and '{b[-1]}'): give a level where values share a "
        "label, e.g. a last level '*'"
    )


def _check_acyclic(rows: Sequence[Sequence[str]], source: str, numbers: Sequence[int]) -> None:
    """Refuse a cycle in the graph of generalization steps ``label -> label one level up``.

    Every row contributes the edges ``row[i] -> row[i + 1]`` (skipped when the
    two are equal: a value kept at the next level). A depth-first search that
    meets a label still on its path has found a cycle, which the message
    spells out edge by edge with the line of each.
    """
    edges: dict[str, dict[str, int]] = {}
    for lineno, row in zip(numbers, rows, strict=True):
        for low, high in pairwise(row):
            if low != high:
                edges.setdefault(low, {}).setdefault(high, lineno)
    cycle = _find_cycle(edges)
    if cycle is None:
        return
    steps = [f"'{a}' to '{b}' (line {edges[a][b]})" for a, b in pairwise(cycle)]
    steps[0] = steps[0].replace(" to ", " generalizes to ", 1)
    raise AnonlabError(
        f"hierarchy '{source}' has a cycle: {', '.join(steps)}: a label must never "
        "generalize back to a value below it; give each level labels of its own"
    )


def _find_cycle(edges: dict[str, dict[str, int]]) -> list[str] | None:
    """A cycle ``[v0, v1, ..., v0]`` of the directed graph ``edges``, or None (iterative DFS)."""
    done: set[str] = set()
    for start in edges:
        if start in done:
            continue
        path: list[str] = [start]
        on_path = {start: 0}
        stack = [iter(edges.get(start, {}))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                done.add(path[-1])
                del on_path[path.pop()]
            elif nxt in on_path:
                return [*path[on_path[nxt] :], nxt]
            elif nxt not in done:
                on_path[nxt] = len(path)
                path.append(nxt)
                stack.append(iter(edges.get(nxt, {})))
    return None


# ----------------------------------------------------------------------------- builders


def _format_number(x: float | Fraction) -> str:
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else str(float(x))
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def interval_hierarchy(
    values: Iterable[float | int | str], widths: Sequence[float], top: str = SUPPRESSED
) -> Hierarchy:
    """Numeric intervals: one level per width, then ``top``.

    Each width must be a multiple of the previous one so the levels nest.
    A value ``x`` goes at width ``w`` to ``[floor(x/w)*w, floor(x/w)*w + w)``,
    written ``lo-hi`` with ``hi = lo + w - 1`` for integer data and
    ``[lo, hi)`` otherwise. The arithmetic is exact on the decimal text of
    values and widths (``0.3`` is in ``[0.3, 0.4)``, not ``[0.2, 0.3)`` as
    binary floats would have it). A missing value (the empty string) keeps the
    label ``''`` at every level below ``top``: it forms a group of its own.
    """
    ws = [_exact(w) for w in widths]
    if any(w <= 0 for w in ws):
        raise AnonlabError("widths must be positive: e.g. 5,10,20", parameter="widths")
    for a, b in pairwise(ws):
        if b % a != 0:
            raise AnonlabError(
                f"interval width {_format_number(b)} is not a multiple of {_format_number(a)}: "
                "each width must be a multiple of the previous one so the levels nest"
            )
    texts = {str(v).strip() for v in values}
    raw = sorted(texts - {""}, key=_exact)
    nums = [_exact(v) for v in raw]
    integral = all(x.denominator == 1 for x in nums) and all(w.denominator == 1 for w in ws)
    rows = [["", *[""] * len(ws), top]] if "" in texts else []
    for text, x in zip(raw, nums, strict=True):
        row = [text]
        for w in ws:
            lo = math.floor(x / w) * w
            if integral:
                row.append(f"{_format_number(lo)}-{_format_number(lo + w - 1)}")
            else:
                row.append(f"[{_format_number(lo)}, {_format_number(lo + w)})")
        row.append(top)
        rows.append(row)
    if not rows:
        raise AnonlabError("no values to build an interval hierarchy from")
    return Hierarchy.from_rows(rows, source="<interval builder>")


def _exact(v: float | int | str) -> Fraction:
    """The exact rational value of a number's decimal text (floats via their shortest repr)."""
    try:
        return Fraction(str(v).strip())
    except (ValueError, ZeroDivisionError):
        raise AnonlabError(
            f"value '{v}' is not a number: interval hierarchies need a numeric column"
        ) from None


def redaction_hierarchy(
    values: Iterable[str], top: str = SUPPRESSED, pad: str = SUPPRESSED
) -> Hierarchy:
    """Redact characters from the right, one per level (ZIP-like codes).

    All values are right-aligned to the longest length first (left-padded with
    ``0`` if they are digits); level ``l`` replaces the last ``l`` characters by
    ``pad``; the last level is ``top``. A missing value (the empty string)
    keeps the label ``''`` at every level below ``top``.
    """
    texts = {str(v) for v in values}
    raw = sorted(texts - {""})
    if not raw:
        raise AnonlabError("no values to build a redaction hierarchy from")
    width = max(len(v) for v in raw)
    rows = [[""] * width + [top]] if "" in texts else []
    for v in raw:
        full = v.rjust(width, "0") if v.isdigit() else v.ljust(width, " ")
        row = [v]
        for level in range(1, width):
            row.append(full[: width - level] + pad * level)
        row.append(top)
        rows.append(row)
    return Hierarchy.from_rows(rows, source="<redaction builder>")


def grouping_hierarchy(
    ordered_values: Sequence[str], sizes: Sequence[int], top: str = SUPPRESSED
) -> Hierarchy:
    """Ordered grouping: consecutive runs of ``sizes[l]`` values form a level-``l+1`` group.

    Each size must be a multiple of the previous one so the levels nest. A group
    is labelled ``first..last`` (or the value itself if alone). A missing value
    (the empty string) is not part of the order: it keeps the label ``''`` at
    every level below ``top``.
    """
    vals = [str(v) for v in ordered_values]
    missing = "" in vals
    vals = [v for v in vals if v != ""] if missing else vals
    if len(set(vals)) != len(vals):
        raise AnonlabError("ordered grouping needs distinct values: remove duplicates")
    if any(s < 1 for s in sizes):
        raise AnonlabError("sizes must be at least 1: e.g. 2,4", parameter="sizes")
    for a, b in pairwise(sizes):
        if b % a != 0:
            raise AnonlabError(
                f"group size {b} is not a multiple of {a}: each size must be a multiple of "
                "the previous one so the levels nest"
            )
    rows = [["", *[""] * len(sizes), top]] if missing else []
    for i, v in enumerate(vals):
        row = [v]
        for size in sizes:
            start = (i // size) * size
            members = vals[start : start + size]
            row.append(members[0] if len(members) == 1 else f"{members[0]}..{members[-1]}")
        row.append(top)
        rows.append(row)
    return Hierarchy.from_rows(rows, source="<grouping builder>")
