"""The section of a ``suppress`` report (cell suppression, docs/suppression.md).

An overview (records, cells blanked, records touched, k, alpha, rounds), one row per
key (its importance rank, the cells blanked, the cells blank in the input), and one
row per protected combination of keys with the k it needed and the smallest
frequency it reached.
"""

from __future__ import annotations

from typing import Any

from anonlab.htmlreport.blocks import Block, Cell, KeyValues, Note, Section, Table, cell, num
from anonlab.htmlreport.sections.context import Built, RenderContext

OVERVIEW = (
    ("records", "records"),
    ("cells_suppressed", "key cells blanked"),
    ("records_touched", "records with a blanked cell"),
    ("k", "k"),
    ("alpha", "alpha (weight of a record with blanks)"),
    ("rounds", "rounds over the combinations"),
    ("method", "method"),
)
#: combinations listed at most (every combination of the sizes given can be many)
MAX_COMBINATIONS = 200


def suppression_sections(ctx: RenderContext) -> Built:
    """The ``suppress`` report's section."""
    report = ctx.report
    blocks: list[Block] = []
    used: set[str] = set()
    rows: list[tuple[str, Cell]] = []
    for key, label in OVERVIEW:
        if key in report:
            rows.append((label, cell(report[key], key)))
            used.add(key)
    strata = report.get("strata")
    if isinstance(strata, list):
        rows.append(("strata", cell(", ".join(map(str, strata)) or "none", "strata")))
        used.add("strata")
    if rows:
        blocks.append(KeyValues(rows, caption="Local suppression"))
    per_key = report.get("suppressed_per_key")
    if isinstance(per_key, dict):
        before = report.get("blank_before_per_key") or {}
        ranks = report.get("importance") or {}
        table_rows: list[list[Cell]] = [
            [
                cell(key),
                cell(ranks.get(key), "importance"),
                num(n, "suppressed_per_key"),
                num(before.get(key, 0), "blank_before_per_key"),
            ]
            for key, n in per_key.items()
        ]
        blocks.append(
            Table(
                ["key", "importance (1 = blanked last)", "cells blanked", "blank in the input"],
                table_rows,
                caption="Blanked cells per key",
            )
        )
        used |= {"suppressed_per_key", "blank_before_per_key", "importance", "keys"}
    combinations = report.get("combinations")
    if isinstance(combinations, list):
        blocks.append(_combinations(combinations))
        used.add("combinations")
    if isinstance(report.get("combs"), list) or report.get("combs") is None:
        used.add("combs")
    note = report.get("risk_blanks")
    if isinstance(note, str):
        blocks.append(Note(note))
        used.add("risk_blanks")
    return Built([Section("Cell suppression", "suppression", blocks)] if blocks else [], used)


def _combinations(combinations: list[Any]) -> Table:
    rows: list[list[Cell]] = []
    for item in combinations[:MAX_COMBINATIONS]:
        if not isinstance(item, dict):
            continue
        rows.append(
            [
                cell(", ".join(map(str, item.get("keys") or []))),
                num(item.get("k"), "k"),
                num(item.get("smallest_frequency"), "smallest_frequency"),
            ]
        )
    more = len(combinations) - MAX_COMBINATIONS
    caption = "k reached per combination of keys (smallest frequency of a record)"
    if more > 0:
        caption += f"; {more} more in the JSON report"
    return Table(["keys", "k", "smallest frequency"], rows, caption=caption)
