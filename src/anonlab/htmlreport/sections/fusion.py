"""Sections of the fusion family: ``fuse`` (all parties in one process) and ``party``.

Top-down specialization over several providers (docs/formulas.md §3; Fung, Wang and Yu's
TDS with the paper's score GainRatio(v) x f(provider) x g(attribute) x
s(value)): how the fusion ran (providers, rounds, time, secure maximum or
not), each anonymity template <QID, k> with its smallest group, the fused
table's attributes (the report's ``columns``: holder and how each is
released) and their final cut, the specializations in order (with
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
    Note,
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
from anonlab.htmlreport.sections.keys import find_key

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
    ("party", "this party", None),
    ("role", "its role", None),
    ("providers", "providers", None),
    ("records", "records", None),
    ("score", "score", None),
    ("private", "secure maximum (private)", None),
    ("protocol", "protocol", None),
    ("rounds", "rounds of specialization", None),
    ("time_seconds", "fusion time", "s"),
    ("rounds_per_second", "rounds per second", None),
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
    return next(
        (
            str(k)
            for k, v in row.items()
            if any(w in str(k).lower() for w in SMALLEST_WORDS) and _is_count(v)
        ),
        None,
    )


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
        extra.extend(
            str(h) for h in row if str(h).lower() not in (*NAME_KEYS, "k") and str(h) not in extra
        )
    body = []
    for part, row in rows:
        lowered = {str(k).lower(): k for k in row}
        qid_key = next((lowered[n] for n in NAME_KEYS if n in lowered), None)
        small = _smallest_key(row)
        k = row.get(lowered.get("k", "k"))
        holds = "—"
        if small is not None and _is_count(k):
            holds = "yes" if row[small] >= k else "NO"
        body.append(
            [
                Cell(_name(row[qid_key]) if qid_key else part),
                cell(k, f"{key}.{part}.{lowered.get('k', 'k')}"),
                *[
                    cell(row.get(h), f"{key}.{part}.{h}")
                    if not isinstance(row.get(h), list)
                    else Cell(show(row.get(h)))
                    for h in extra
                ],
                Cell(holds),
            ]
        )
    headers = [
        "quasi-identifier (QID)",
        "k",
        *[h.replace("_", " ") for h in extra],
        "holds (smallest group ≥ k)",
    ]
    blocks: list[Block] = [
        Table(
            headers,
            body,
            caption="Anonymity templates <QID, k>: every "
            "combination of a QID's released values is shared by at least "
            "k records",
        )
    ]
    used = {key}
    dropped_key = find_key(report, "dropped_templates")
    if dropped_key is not None:
        used.add(dropped_key)
        dropped = report[dropped_key]
        if isinstance(dropped, list) and dropped:
            blocks.append(
                Paragraph(
                    "Dropped as covered by a larger QID with a larger k: "
                    + "; ".join(
                        _name(d.get("qid", d)) if isinstance(d, Mapping) else _name(d)
                        for d in dropped
                    )
                    + "."
                )
            )
        elif isinstance(dropped, list):
            blocks.append(
                Paragraph(
                    "No template was dropped (none is covered by a larger QID with a larger k)."
                )
            )
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
    return [
        Table(
            ["attribute", "values released", "the cut: values released"],
            rows,
            caption="The fused table's quasi-identifiers and their final cut",
        )
    ], {key or ""}


def _config(ctx: RenderContext) -> tuple[dict[str, Any] | None, str | None]:
    """The fusion config the report names (unchanged since the run), or why it is absent."""
    import tomllib

    from anonlab.io import file_sha256

    name = ctx.parameters.get("config")
    if not isinstance(name, str):
        return None, "the report names no config file"
    found = ctx.find_file(name)
    if found is None:
        return None, "the config file named in the report is not found here"
    desc = (ctx.report.get("inputs") or {}).get("config")
    expected = desc.get("sha256") if isinstance(desc, Mapping) else None
    if expected and file_sha256(found) != expected:
        return None, "the config file has changed since the run"
    try:
        return tomllib.loads(found.read_text(encoding="utf-8")), None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None, "the config file is unreadable"


def _released_as(values: Any) -> str:
    if values == ["*"]:
        return "fully generalized ('*')"
    if isinstance(values, list):
        return f"generalized to the final cut ({len(values):,} values)"
    return "generalized"


RELEASED_AS = {
    "as is": "as it is (in no anonymity template)",
    "dropped": "dropped (identifying: never left its provider)",
    "class": "as it is (the class attribute)",
    "id kept": "kept (record id)",
    "id dropped": "dropped (record id)",
}


def _report_columns(report: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The report's own ``columns`` list (name, held_by, released), when it holds one."""
    columns = report.get("columns")
    if not isinstance(columns, list) or not columns:
        return None
    if not all(
        isinstance(c, Mapping)
        and isinstance(c.get("name"), str)
        and isinstance(c.get("released"), str)
        for c in columns
    ):
        return None
    return columns


def _held_by(value: Any, providers: Any) -> str:
    parties = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    if (
        len(parties) > 1
        and isinstance(providers, list)
        and sorted(parties) == sorted(str(p) for p in providers)
    ):
        return "all providers"
    return ", ".join(parties) or "?"


def columns_rows(
    report: Mapping[str, Any], columns: list[Mapping[str, Any]], cut: Mapping[str, Any]
) -> list[list[Cell]]:
    """One row per column of the report's ``columns`` key: name, holder, how it is released."""
    rows = []
    for column in columns:
        name, released = str(column["name"]), str(column["released"])
        if released == "generalized":
            how = _released_as(cut[name]) if name in cut else "generalized to the final cut"
        else:
            how = RELEASED_AS.get(released, released)
        rows.append(
            [Cell(name), Cell(_held_by(column.get("held_by"), report.get("providers"))), Cell(how)]
        )
    return rows


def attribute_block(ctx: RenderContext) -> list[Block]:
    """Every attribute of the fused table: the provider holding it and how it is released.

    Read from the report's own ``columns`` key (``fuse`` and ``party``
    reports name each column, its holder and how it is released); for older
    reports without it, from the fusion config the report names (used only
    when its hash equals the one in the report): each provider's columns,
    the class attribute and the record id.
    """
    cut = ctx.report.get("cut")
    cut = cut if isinstance(cut, Mapping) else {}
    if not cut:  # a helper's report: it never sees the table
        return []
    headers = ["attribute", "held by", "released as"]
    own = _report_columns(ctx.report)
    if own is not None:
        return [
            Table(
                headers, columns_rows(ctx.report, own, cut), caption="The fused table's attributes"
            )
        ]
    config, reason = _config(ctx)
    if config is None:
        return [Note(f"The providers' columns are not listed: {reason}.")]
    raw = config.get("fusion")
    fusion: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    rows: list[list[Cell]] = []
    for party in config.get("parties") or []:
        if not isinstance(party, Mapping) or not isinstance(party.get("columns"), list):
            continue
        for column in party["columns"]:
            how = _released_as(cut[column]) if column in cut else RELEASED_AS["as is"]
            rows.append([Cell(str(column)), Cell(str(party.get("id", "?"))), Cell(how)])
    target = fusion.get("class")
    if isinstance(target, str):
        rows.append([Cell(target), Cell("all providers"), Cell(RELEASED_AS["class"])])
    ident = fusion.get("id")
    keep = ctx.parameters.get("keep_id", fusion.get("keep_id"))
    if isinstance(ident, str):
        rows.append(
            [
                Cell(ident),
                Cell("all providers"),
                Cell(RELEASED_AS["id kept" if keep is True else "id dropped"]),
            ]
        )
    if not rows:
        return []
    return [
        Table(
            headers,
            rows,
            caption="The fused table's attributes (from the config file the report names)",
        )
    ]


def specialization_figure(steps: list[Mapping[str, Any]]) -> Any:
    """Specializations per attribute, stacked by the party that made them (None if empty)."""
    attributes = list(dict.fromkeys(str(s.get("attribute")) for s in steps))
    parties = list(dict.fromkeys(str(s.get("party")) for s in steps))
    if not attributes:
        return None
    counts = {
        p: [
            sum(1 for s in steps if str(s.get("party")) == p and str(s.get("attribute")) == a)
            for a in attributes
        ]
        for p in parties
    }
    return plots.stacked_bar_figure(
        attributes, counts, xlabel="specializations", legend_title="party"
    )


def specialization_blocks(report: Mapping[str, Any]) -> tuple[list[Block], set[str]]:
    """The specializations in order (the winners only, for a helper's report)."""
    key = find_key(report, "specializations")
    steps = report.get(key) if key else None
    if isinstance(steps, list) and steps and all(isinstance(s, Mapping) for s in steps):
        headers: list[str] = []
        for s in steps:
            headers.extend(str(h) for h in s if str(h) not in headers)
        rows = [
            [
                cell(s.get(h), f"{key}.{i}.{h}")
                if not isinstance(s.get(h), list)
                else Cell(show(s.get(h)))
                for h in headers
            ]
            for i, s in enumerate(steps[: MAX_ROWS * 5])
        ]
        caption = "Specializations in order: the winning candidate of each round"
        if len(steps) > MAX_ROWS * 5:
            caption += f" (first {MAX_ROWS * 5} of {len(steps)})"
        blocks: list[Block] = []
        fig = specialization_figure(list(steps))
        if fig is not None:
            blocks.append(
                Figure(
                    plots.svg_data_uri(fig),
                    "Specializations per attribute, by the party that owns the "
                    "attribute and won the round.",
                    "Bar chart of specializations per attribute and party",
                )
            )
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
        return [
            Table(
                ["party", "rounds won"],
                [[Cell(p), num(c)] for p, c in counts.items()],
                caption="Winner of each round (all a helper learns)",
            )
        ], {"winners"}
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


def _with_attributes(
    ctx: RenderContext, cut: tuple[list[Block], set[str]]
) -> tuple[list[Block], set[str]]:
    blocks, used = cut
    if _report_columns(ctx.report) is not None:
        used = used | {"columns"}
    return attribute_block(ctx) + blocks, used


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
        (
            "The fused table: attributes and cut",
            "cut",
            lambda r: _with_attributes(ctx, cut_block(r)),
        ),
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
