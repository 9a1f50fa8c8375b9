"""A section for any report keys no family builder shows, and the record-level guard.

Reports are not meant to hold records, but a key that looks record-level
(its name says sample, example, rows, unique combination, outlier, or
suppressed rows, and it holds a list or object) is never shown in the
external version; the internal version shows it under a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anonlab.htmlreport.blocks import Block, Cell, KeyValues, Note, Section, Table, cell, show
from anonlab.htmlreport.sections.context import RenderContext

HEADER_KEYS = ("command", "anonlab_version", "created", "python", "inputs", "parameters")

RECORD_LEVEL_WORDS = (
    "sample",
    "example",
    "rows",
    "unique",
    "outlier",
    "records_list",
    "suppressed_records_list",
    "preview",
    "raw",
)
SECRET_WORDS = ("secret", "password", "token", "private_key", "passphrase", "api_key")
MAX_ROWS = 60


def is_record_level(key: str, value: Any) -> bool:
    """Whether a report key looks like it holds records or values of individuals."""
    lowered = key.lower()
    return isinstance(value, list | dict) and any(w in lowered for w in RECORD_LEVEL_WORDS)


def is_secret(key: str) -> bool:
    """Whether a parameter name looks like a key or password (never shown)."""
    lowered = key.lower()
    return any(w in lowered for w in SECRET_WORDS)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def value_blocks(key: str, value: Any, path: str, depth: int = 0) -> list[Block]:
    """Blocks showing one JSON value of any shape (tables for lists of objects)."""
    if _scalar(value):
        return [KeyValues([(key, cell(value, path))])]
    if isinstance(value, list) and all(_scalar(v) for v in value):
        shown = value[:MAX_ROWS]
        more = f" (first {MAX_ROWS} of {len(value)})" if len(value) > MAX_ROWS else ""
        return [KeyValues([(key + more, Cell(show(shown)))])]
    if isinstance(value, Mapping) and all(_scalar(v) for v in value.values()):
        return [
            KeyValues([(str(k), cell(v, f"{path}.{k}")) for k, v in value.items()], caption=key)
        ]
    rows: list[tuple[str, Mapping[str, Any]]] = []
    if isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
        rows = [(str(i), v) for i, v in enumerate(value)]
        index_name = "#"
    elif isinstance(value, Mapping) and all(isinstance(v, Mapping) for v in value.values()):
        rows = [(str(k), v) for k, v in value.items()]
        index_name = ""
    if rows and all(all(_scalar(x) for x in r.values()) for _, r in rows):
        headers: list[str] = []
        for _, r in rows:
            headers.extend(h for h in r if h not in headers)
        body = [
            [Cell(name), *[cell(r.get(h), f"{path}.{name}.{h}") for h in headers]]
            for name, r in rows[:MAX_ROWS]
        ]
        caption = key if len(rows) <= MAX_ROWS else f"{key} (first {MAX_ROWS} of {len(rows)})"
        return [Table([index_name, *headers], body, caption=caption)]
    if depth >= 2:
        return [KeyValues([(key, Cell(show(value)[:500]))])]
    blocks: list[Block] = []
    items = value.items() if isinstance(value, Mapping) else enumerate(value)
    for k, v in list(items)[:MAX_ROWS]:
        blocks.extend(value_blocks(f"{key} › {k}", v, f"{path}.{k}", depth + 1))
    return blocks


def _merge_scalars(blocks: list[Block]) -> list[Block]:
    """Join consecutive one-row key/value lists without caption into one list."""
    out: list[Block] = []
    for b in blocks:
        if (
            isinstance(b, KeyValues)
            and b.caption is None
            and out
            and isinstance(out[-1], KeyValues)
            and out[-1].caption is None
        ):
            out[-1].rows.extend(b.rows)
        else:
            out.append(b)
    return out


def generic_section(ctx: RenderContext, used: set[str], title: str) -> Section | None:
    """The keys of ``ctx.report`` not in ``used``, shown as they are (None if none left)."""
    blocks: list[Block] = []
    hidden: list[str] = []
    for key, value in ctx.report.items():
        if key in used:
            continue
        if is_secret(key):
            continue
        if is_record_level(key, value):
            if not ctx.internal:
                hidden.append(key)
                continue
            blocks.append(Note(f"Internal only: '{key}' holds record-level values."))
        blocks.extend(value_blocks(key, value, key))
    if hidden:
        blocks.append(
            Note(
                "Not shown in this shareable version (record-level): "
                + ", ".join(hidden)
                + ". Use --internal for the custodian's copy."
            )
        )
    if not blocks:
        return None
    return Section(title, "further", _merge_scalars(blocks))
