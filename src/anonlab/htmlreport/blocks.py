"""The building blocks a report section is made of (rendered by ``templates/blocks.html``).

A section is a title and a list of blocks: paragraphs, key/value lists,
tables and figures. Every number is a :class:`Cell` that keeps the exact JSON
value (written as ``data-value`` with its JSON path as ``data-key``) next to
the text shown, so a reader's tool or a test can compare the page with the
report.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal


def format_number(value: float | int) -> str:
    """Readable text for a number: thousands separators, 4 significant digits.

    Integers (and floats holding an integer of 1,000 or more) get separators;
    other floats 4 significant digits, in plain notation below 10^6.
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if abs(value) >= 1000:
        if value == int(value) or abs(value) >= 1e6:
            return f"{round(value):,}"
        return f"{value:,.1f}"
    if value == 0:
        return "0"
    if abs(value) < 1e-4:
        return f"{value:.3e}"
    return f"{value:.4g}"


def format_percent(fraction: float) -> str:
    """A fraction in [0, 1] as a percentage with up to 2 decimals."""
    if math.isnan(fraction):
        return "n/a"
    return f"{fraction * 100:.2f}".rstrip("0").rstrip(".") + " %"


@dataclass(frozen=True)
class Cell:
    """One shown value; ``key`` and ``value`` tie a number to its place in the JSON."""

    text: str
    key: str | None = None
    value: str | None = None
    numeric: bool = False
    style: str = ""

    @property
    def css(self) -> str:
        """The cell's CSS class: ``num`` for numbers, else its ``style``."""
        return "num" if self.numeric else self.style


def num(value: Any, key: str | None = None, text: str | None = None) -> Cell:
    """A number cell; ``key`` is the dotted JSON path of ``value`` in the report."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Cell(text if text is not None else show(value))
    exact = json.dumps(value, allow_nan=True)
    return Cell(text if text is not None else format_number(value), key, exact, numeric=True)


def txt(value: Any) -> Cell:
    """A text cell."""
    return Cell(show(value))


def show(value: Any) -> str:
    """Any JSON value as short text (lists joined by commas, None as a dash)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return format_number(value)
    if isinstance(value, list | tuple):
        return ", ".join(show(v) for v in value) if value else "—"
    if isinstance(value, dict):
        return ", ".join(f"{k}={show(v)}" for k, v in value.items()) if value else "—"
    return str(value)


def cell(value: Any, key: str | None = None) -> Cell:
    """A number cell for numbers, a text cell for anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return num(value, key)
    return txt(value)


@dataclass
class Paragraph:
    text: str
    kind: Literal["paragraph"] = "paragraph"


@dataclass
class Note:
    """A highlighted remark (e.g. why an example is not shown); ``warning`` shows it in red."""

    text: str
    warning: bool = False
    kind: Literal["note"] = "note"


@dataclass
class KeyValues:
    rows: list[tuple[str, Cell]]
    caption: str | None = None
    kind: Literal["keyvalues"] = "keyvalues"


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Cell]]
    caption: str | None = None
    kind: Literal["table"] = "table"


@dataclass
class Figure:
    """An inlined figure: ``src`` is a ``data:`` URI (SVG)."""

    src: str
    caption: str
    alt: str
    kind: Literal["figure"] = "figure"


Block = Paragraph | Note | KeyValues | Table | Figure


@dataclass
class Section:
    """A titled part of the report; ``template`` may name a family's own template."""

    title: str
    anchor: str
    blocks: list[Block] = field(default_factory=list)
    template: str = "section.html"
