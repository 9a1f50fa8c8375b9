"""Sections of the fusion family: ``fuse`` (all parties in one process) and ``party``.

Top-down specialization over several providers (NOTES §3; Fung, Wang and Yu's
TDS with the paper's score GainRatio(v) x f(provider) x g(attribute) x
s(value)): how the fusion ran (providers, rounds, time, secure maximum or
not), each anonymity template <QID, k> with its smallest group, the fused
table's attributes and their final cut, the specializations in order (with
a chart of who specialized which attribute) and the bytes each party sent.
Keys of other names fall to the generic section.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from anonlab.htmlreport import plots
from anonlab.htmlreport.blocks import (
    Block,
    Cell,
    Figure,
    KeyValues,
    Paragraph,
    Section,
    Table,
    cell,
    format_number,
    num,
    show,
)
from anonlab.htmlreport.sections.context import Built, RenderContext
from anonlab.htmlreport.sections.generic import MAX_ROWS
from anonlab.htmlreport.sections.layout import find_key

TEMPLATE_KEYS = ("templates", "template_groups", "smallest_groups")
NAME_KEYS = ("qid", "name", "template", "attributes", "columns")
SMALLEST_WORDS = ("smallest", "min")
SCORES = {
    "sensitivity": "the paper's GainRatio x f(provider) x g(attribute) x s(value)",
    "tds": "plain TDS: information gain / (anonymity loss + 1)",
}
MAX_CUT_VALUES = 60

# (report key, label, how to show a number)
OVERVIEW = [
    ("party", "this party", None), ("role", "its role", None),
    ("providers", "providers", None), ("records", "records", None),
    ("score", "score", None), ("private", "secure maximum (private)", None),
    ("protocol", "protocol", None), ("rounds", "rounds of specialization", None),
    ("time_seconds", "fusion time", "s"), ("rounds_per_second", "rounds per second", None),
    ("connect_seconds", "time to connect", "s"),
    ("total_seconds", "total time (connecting, rounds, writing)", "s"),
    ("secure_max_calls", "secure max calls", None),
    ("secure_max_ms_per_call", "secure max per call", "ms"),
    ("verified", "templates re-checked on the written table", None),
]


def _is_count(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _name(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _template_rows(report: Mapping[str, Any]) -> tuple[str, list[tuple[str, Mapping[str, Any]]]]:
    """The key holding the templates and its rows as (path part, row)."""
    for name in TEMPLATE_KEYS:
        key = find_key(report, name)
        if key is None:
            continue
        value = report[key]
        if isinstance(value, list):
            return key, [(str(i), v) for i, v in enumerate(value) if isinstance(v, Mapping)]
        if isinstance(value, Mapping):
            return key, [(str(k), v) for k, v in value.items() if isinstance(v, Mapping)]
    return "", []


def _smallest_key(row: Mapping[str, Any]) -> str | None:
    return next((str(k) for k, v in row.items()
                 if any(w in str(k).lower() for w in SMALLEST_WORDS) and _is_count(v)), None)


def smallest_groups(report: Mapping[str, Any]) -> list[tuple[str, float, float | None]]:
    """Each anonymity template's (QID, smallest group, k), from the rows the report holds."""
    out: list[tuple[str, float, float | None]] = []
    _, rows = _template_rows(report)
    for label, row in rows:
        small = _smallest_key(row)
        if small is None:
            continue
        lowered = {str(k).lower(): v for k, v in row.items()}
        qid = next((lowered[n] for n in NAME_KEYS if n in lowered), label)
        k = lowered.get("k")
        out.append((_name(qid) or "?", float(row[small]), float(k) if _is_count(k) else None))
    return out


def overview_block(report: Mapping[str, Any]) -> tuple[KeyValues | None, set[str]]:
    rows: list[tuple[str, Cell]] = []
    used: set[str] = set()
    for key, label, unit in OVERVIEW:
        if key not in report:
            continue
        value = report[key]
        used.add(key)
        if value is None:
            continue
        if key == "score" and isinstance(value, str):
            text = f"{value} ({SCORES[value]})" if value in SCORES else value
            rows.append((label, Cell(text)))
        elif unit is not None and _is_count(value):
            rows.append((label, num(value, key, text=f"{format_number(value)} {unit}")))
        elif isinstance(value, list):
            rows.append((label, Cell(show(value))))
        else:
            rows.append((label, cell(value, key)))
    return (KeyValues(rows) if rows else None), used


def template_blocks(report: Mapping[str, Any]) -> tuple[list[Block], set[str]]:
    """Each template <QID, k>: its smallest group, its number of groups, whether it holds."""
    key, rows = _template_rows(report)
    if not rows:
        return [], set()
    extra: list[str] = []
    for _, row in rows:
        extra.extend(str(h) for h in row if str(h).lower() not in (*NAME_KEYS, "k")
                     and str(h) not in extra)
    body = []
    for part, row in rows:
        lowered = {str(k).lower(): k for k in row}
        qid_key = next((lowered[n] for n in NAME_KEYS if n in lowered), None)
        small = _smallest_key(row)
        k = row.get(lowered.get("k", "k"))
        holds = "—"
        if small is not None and _is_count(k):
            holds = "yes" if row[small] >= k else "NO"
        body.append([Cell(_name(row[qid_key]) if qid_key else part),
                     cell(k, f"{key}.{part}.{lowered.get('k', 'k')}"),
                     *[cell(row.get(h), f"{key}.{part}.{h}") if not isinstance(row.get(h), list)
                       else Cell(show(row.get(h))) for h in extra],
                     Cell(holds)])
    headers = ["quasi-identifier (QID)", "k", *[h.replace("_", " ") for h in extra],
               "holds (smallest group ≥ k)"]
    blocks: list[Block] = [Table(headers, body, caption="Anonymity templates <QID, k>: every "
                                 "combination of a QID's released values is shared by at least "
                                 "k records")]
    used = {key}
    dropped_key = find_key(report, "dropped_templates")
    if dropped_key is not None:
        used.add(dropped_key)
        dropped = report[dropped_key]
        if isinstance(dropped, list) and dropped:
            blocks.append(Paragraph("Dropped as covered by a larger QID with a larger k: "
                                    + "; ".join(_name(d.get("qid", d)) if isinstance(d, Mapping)
                                                else _name(d) for d in dropped) + "."))
        elif isinstance(dropped, list):
            blocks.append(Paragraph("No template was dropped (none is covered by a larger "
                                    "QID with a larger k)."))
    return blocks, used


def cut_block(report: Mapping[str, Any]) -> tuple[list[Block], set[str]]:
    """The fused table's attributes and the values each one is released at."""
    key = find_key(report, "cut") or find_key(report, "final_cut")
    cut = report.get(key) if key else None
    if not isinstance(cut, Mapping) or not cut:
        return [], set()
    rows = []
    for attribute, values in cut.items():
        if isinstance(values, list):
            shown = values[:MAX_CUT_VALUES]
            text = ", ".join(str(v) for v in shown)
            if len(values) > MAX_CUT_VALUES:
                text += f" … and {len(values) - MAX_CUT_VALUES} more"
            state = "fully generalized" if values == ["*"] else ""
            rows.append([Cell(str(attribute)), num(len(values)), Cell(state or text)])
        else:
            rows.append([Cell(str(attribute)), Cell("—"), Cell(show(values))])
    return [Table(["attribute", "values released", "the cut: values released"], rows,
                  caption="The fused table's quasi-identifiers and their final cut")], {key or ""}


def specialization_figure(steps: list[Mapping[str, Any]]) -> Any:
    """Specializations per attribute, stacked by the party that made them (None if empty)."""
    attributes = list(dict.fromkeys(str(s.get("attribute")) for s in steps))
    parties = list(dict.fromkeys(str(s.get("party")) for s in steps))
    if not attributes:
        return None
    counts = {p: [sum(1 for s in steps if str(s.get("party")) == p
                      and str(s.get("attribute")) == a) for a in attributes] for p in parties}
    return plots.stacked_bar_figure(attributes, counts, xlabel="specializations",
                                    legend_title="party")


def specialization_blocks(report: Mapping[str, Any]) -> tuple[list[Block], set[str]]:
    """The specializations in order (the winners only, for a helper's report)."""
    key = find_key(report, "specializations")
    steps = report.get(key) if key else None
    if isinstance(steps, list) and steps and all(isinstance(s, Mapping) for s in steps):
        headers: list[str] = []
        for s in steps:
            headers.extend(str(h) for h in s if str(h) not in headers)
        rows = [[cell(s.get(h), f"{key}.{i}.{h}") if not isinstance(s.get(h), list)
                 else Cell(show(s.get(h))) for h in headers]
                for i, s in enumerate(steps[:MAX_ROWS * 5])]
        caption = "Specializations in order: the winning candidate of each round"
        if len(steps) > MAX_ROWS * 5:
            caption += f" (first {MAX_ROWS * 5} of {len(steps)})"
        blocks: list[Block] = []
        fig = specialization_figure(list(steps))
        if fig is not None:
            blocks.append(Figure(plots.svg_data_uri(fig),
                                 "Specializations per attribute, by the party that owns the "
                                 "attribute and won the round.",
                                 "Bar chart of specializations per attribute and party"))
        blocks.append(Table(headers, rows, caption=caption))
        used = {key or ""}
        if "winners" in report:
            used.add("winners")  # the same as each step's party
        return blocks, used
    winners = report.get("winners")
    if isinstance(winners, list) and winners:
        counts: dict[str, int] = {}
        for w in winners:
            counts[str(w)] = counts.get(str(w), 0) + 1
        return [Table(["party", "rounds won"], [[Cell(p), num(c)] for p, c in counts.items()],
                      caption="Winner of each round (all a helper learns)")], {"winners"}
    return [], set()


def communication_block(report: Mapping[str, Any]) -> tuple[list[Block], set[str]]:
    """Bytes sent per party (split by channel and secure computation when given)."""
    totals = report.get("bytes_sent")
    detail = report.get("bytes_sent_detail")
    if not isinstance(totals, Mapping) or not totals:
        return [], set()
    parts: list[str] = []
    if isinstance(detail, Mapping):
        for d in detail.values():
            if isinstance(d, Mapping):
                parts.extend(str(k) for k in d if str(k) != "total" and str(k) not in parts)
    rows = []
    for party, total in totals.items():
        row = [Cell(str(party)), cell(total, f"bytes_sent.{party}")]
        d = detail.get(party) if isinstance(detail, Mapping) else None
        for p in parts:
            v = d.get(p) if isinstance(d, Mapping) else None
            row.append(cell(v, f"bytes_sent_detail.{party}.{p}"))
        rows.append(row)
    headers = ["party", "bytes sent", *[f"of which {p}" for p in parts]]
    used = {"bytes_sent"} | ({"bytes_sent_detail"} if parts else set())
    return [Table(headers, rows, caption="Bytes sent per party")], used


def fusion_sections(ctx: RenderContext) -> Built:
    """Sections of a ``fuse`` or ``party`` report."""
    report = ctx.report
    used: set[str] = set()
    sections: list[Section] = []
    first, shown = overview_block(report)
    used |= shown
    if first is not None:
        sections.append(Section("Fusion", "fusion", [first]))
    for title, anchor, build in (
        ("Anonymity templates", "templates", template_blocks),
        ("The fused table: attributes and cut", "cut", cut_block),
        ("Specializations in order", "specializations", specialization_blocks),
        ("Communication", "communication", communication_block),
    ):
        blocks, shown = build(report)
        used |= shown
        if blocks:
            sections.append(Section(title, anchor, blocks))
    return Built(sections, used)


def fusion_plot(report: Mapping[str, Any]) -> Any:
    """The specializations chart of a fuse or party report (None without specializations)."""
    key = find_key(report, "specializations")
    steps = report.get(key) if key else None
    if isinstance(steps, list) and steps and all(isinstance(s, Mapping) for s in steps):
        return specialization_figure(list(steps))
    return None
