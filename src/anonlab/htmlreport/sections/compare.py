"""The section of a ``compare`` report (docs/compare.md): one table and one R-U map.

The table has one row per method: its command, status, utility loss, linkage risk (mean,
share at risk, highest), the prosecutor risk its own risk section gave, its suppressed
records and CPU seconds; a failed method shows its error. The R-U map puts every method
that ran as one labelled point: utility loss across, linkage risk (the expected share of
records re-identified) up. Per-column losses follow in a second table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from anonlab.htmlreport import plots
from anonlab.htmlreport.blocks import (
    Block,
    Cell,
    Figure,
    KeyValues,
    Note,
    Section,
    Table,
    cell,
    num,
)
from anonlab.htmlreport.sections.context import Built, RenderContext

USED = {"attacker", "records", "threshold", "sample", "sampled", "methods", "comparison", "failed"}
X_LABEL = "utility loss (mean per-cell loss over the attacker columns)"
Y_LABEL = "linkage risk (expected share re-identified)"


def _points(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The methods that ran, as (loss, risk, name) points."""
    rows = report.get("comparison")
    if not isinstance(rows, list):
        return []
    found: dict[tuple[float, float], list[str]] = {}
    for r in rows:
        if (
            isinstance(r, Mapping)
            and isinstance(r.get("utility_loss"), int | float)
            and isinstance(r.get("linkage_mean"), int | float)
        ):
            at = (round(float(r["utility_loss"]), 4), round(float(r["linkage_mean"]), 4))
            found.setdefault(at, []).append(str(r["name"]))
    # methods at the same place (to 4 decimals) share one point, labelled with every name
    return [{"loss": x, "risk": y, "name": ", ".join(names)} for (x, y), names in found.items()]


def compare_figure(points: Sequence[Mapping[str, Any]]) -> Any:
    """The R-U map of a comparison: one labelled point per method (no line: the methods
    are no sequence)."""
    fig = plots.new_figure(7.2, 4.0)
    ax = fig.subplots()
    for i, p in enumerate(points):
        color = plots.PALETTE[i % len(plots.PALETTE)]
        ax.plot([p["loss"]], [p["risk"]], marker="o", linestyle="none", color=color, markersize=6)
        ax.annotate(
            str(p["name"]),
            (p["loss"], p["risk"]),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=7,
        )
    ax.set_xlabel(X_LABEL)
    ax.set_ylabel(Y_LABEL)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.margins(0.1)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.tick_params(labelsize=8)
    ax.xaxis.label.set_size(9)
    ax.yaxis.label.set_size(9)
    return fig


def compare_plot(report: Mapping[str, Any]) -> Any:
    """The report's R-U map (``--plot``), or None when no method ran."""
    points = _points(report)
    return compare_figure(points) if points else None


def compare_sections(ctx: RenderContext) -> Built:
    """The ``compare`` report's section."""
    report = ctx.report
    blocks: list[Block] = []
    overview: list[tuple[str, Cell]] = []
    attacker = report.get("attacker")
    if isinstance(attacker, list):
        overview.append(("attacker columns", cell(", ".join(map(str, attacker)))))
    for key, label in (("records", "records"), ("threshold", "at risk from probability")):
        if key in report:
            overview.append((label, cell(report[key], key)))
    if report.get("sampled"):
        overview.append(("linkage measured on", cell(f"a seeded sample of {report.get('sample')}")))
    if overview:
        blocks.append(KeyValues(overview, caption="Comparison"))
    methods = [m for m in report.get("methods") or [] if isinstance(m, Mapping)]
    if methods:
        blocks.append(_table(methods))
    points = _points(report)
    if points:
        blocks.append(
            Figure(
                plots.svg_data_uri(compare_figure(points)),
                "R-U map: linkage risk against utility loss, one point per method.",
                "R-U map of the compared methods",
            )
        )
    columns = _columns(methods)
    if columns is not None:
        blocks.append(columns)
    for m in methods:
        if m.get("status") != "ok":
            blocks.append(Note(f"{m.get('name')} failed: {m.get('error')}", warning=True))
    return Built([Section("Methods compared", "compare", blocks)] if blocks else [], set(USED))


def _table(methods: Sequence[Mapping[str, Any]]) -> Table:
    rows: list[list[Cell]] = []
    for i, m in enumerate(methods):
        ok = m.get("status") == "ok"
        linkage = m.get("linkage") if ok else {}
        own = m.get("own") or {}
        command = str(m.get("command")) + (f" ({m['recoding']})" if m.get("recoding") else "")
        at = f"methods.{i}"
        rows.append(
            [
                cell(m.get("name")),
                cell(command),
                cell(m.get("status")),
                num((m.get("utility_loss") or {}).get("overall"), f"{at}.utility_loss.overall"),
                num((linkage or {}).get("mean"), f"{at}.linkage.mean"),
                num((linkage or {}).get("at_risk"), f"{at}.linkage.at_risk"),
                num((linkage or {}).get("highest"), f"{at}.linkage.highest"),
                num(own.get("prosecutor_highest"), f"{at}.own.prosecutor_highest"),
                num(m.get("suppressed_records"), f"{at}.suppressed_records"),
                num(m.get("cpu_seconds"), f"{at}.cpu_seconds"),
            ]
        )
    return Table(
        [
            "method",
            "command",
            "status",
            "utility loss",
            "linkage risk",
            "share at risk",
            "highest",
            "own prosecutor highest",
            "suppressed records",
            "CPU s",
        ],
        rows,
        caption="One row per method, every release measured alike",
    )


def _columns(methods: Sequence[Mapping[str, Any]]) -> Table | None:
    ran = [m for m in methods if m.get("status") == "ok"]
    if not ran:
        return None
    names: list[str] = []
    for m in ran:
        for c in (m.get("utility_loss") or {}).get("per_column") or {}:
            if c not in names:
                names.append(str(c))
    rows = [
        [cell(m.get("name"))]
        + [num(((m.get("utility_loss") or {}).get("per_column") or {}).get(c)) for c in names]
        for m in ran
    ]
    return Table(["method", *names], rows, caption="Utility loss per attacker column")
