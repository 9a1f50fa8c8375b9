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
    places = _label_places(points)
    for i, p in enumerate(points):
        color = plots.PALETTE[i % len(plots.PALETTE)]
        ax.plot([p["loss"]], [p["risk"]], marker="o", linestyle="none", color=color, markersize=6)
        (dx, dy), align = places[i]
        ax.annotate(
            str(p["name"]),
            (p["loss"], p["risk"]),
            xytext=(dx, dy),
            textcoords="offset points",
            fontsize=7,
            ha=align,
        )
    ax.set_xlabel(X_LABEL)
    ax.set_ylabel(Y_LABEL)
    ax.margins(0.1)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.tick_params(labelsize=8)
    ax.xaxis.label.set_size(9)
    ax.yaxis.label.set_size(9)
    return fig


#: where a point's label goes (offset in points, alignment): the first a near point has
#: not taken, so the labels of neighbouring methods do not print over each other
PLACES = (((4, 4), "left"), ((4, -10), "left"), ((-4, 4), "right"), ((-4, -10), "right"))
#: two points are neighbours within this share of each axis's extent
NEAR = 0.08


def _label_places(points: Sequence[Mapping[str, Any]]) -> list[tuple[tuple[int, int], str]]:
    """Each point's label place (:data:`PLACES`), chosen apart from its neighbours'."""
    xs = [float(p["loss"]) for p in points]
    ys = [float(p["risk"]) for p in points]
    width = (max(xs) - min(xs)) or 1.0 if xs else 1.0
    height = (max(ys) - min(ys)) or 1.0 if ys else 1.0
    chosen: list[int] = []
    for i in range(len(points)):
        taken = {
            chosen[j]
            for j in range(i)
            if abs(xs[i] - xs[j]) <= NEAR * width and abs(ys[i] - ys[j]) <= NEAR * height
        }
        chosen.append(next((k for k in range(len(PLACES)) if k not in taken), i % len(PLACES)))
    return [PLACES[k] for k in chosen]


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
    found = report.get("methods")
    methods = [m for m in (found if isinstance(found, list) else []) if isinstance(m, Mapping)]
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


def _dig(value: Any, *keys: str) -> Any:
    """``value[k1][k2]...``, or None where a level is missing or no object (a report edited
    by hand renders all the same)."""
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _table(methods: Sequence[Mapping[str, Any]]) -> Table:
    rows: list[list[Cell]] = []
    for i, m in enumerate(methods):
        ok = m.get("status") == "ok"
        linkage = m.get("linkage") if ok else {}
        own = m.get("own")
        command = str(m.get("command")) + (f" ({m['recoding']})" if m.get("recoding") else "")
        at = f"methods.{i}"
        rows.append(
            [
                cell(m.get("name")),
                cell(command),
                cell(m.get("status")),
                num(_dig(m, "utility_loss", "overall"), f"{at}.utility_loss.overall"),
                num(_dig(linkage, "mean"), f"{at}.linkage.mean"),
                num(_dig(linkage, "at_risk"), f"{at}.linkage.at_risk"),
                num(_dig(linkage, "highest"), f"{at}.linkage.highest"),
                num(_dig(own, "prosecutor_highest"), f"{at}.own.prosecutor_highest"),
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
        per = _dig(m, "utility_loss", "per_column")
        for c in per if isinstance(per, Mapping) else ():
            if str(c) not in names:
                names.append(str(c))
    rows = [
        [cell(m.get("name"))] + [num(_dig(m, "utility_loss", "per_column", c)) for c in names]
        for m in ran
    ]
    return Table(["method", *names], rows, caption="Utility loss per attacker column")
