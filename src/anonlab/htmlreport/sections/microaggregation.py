"""Sections of the microaggregation family: ``microaggregate``, ``evaluate``, ``tradeoff``.

The EM4ADOM measures (Domingo-Ferrer's quality model as summarized in the
project's docs/formulas.md §2) are shown as one table by their report names (ILh, IL1,
IL2, IL3, ILs, IL, ZIL, ILR, DLD, ID, DR, score), wherever the report keeps
them (top level or inside an object such as ``measures``); a ``tradeoff``
report's per-k rows become a table and the R-U map, with the chosen k (the
report's own choice, else the lowest score) circled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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
    show,
)
from anonlab.htmlreport.sections.context import Built, RenderContext
from anonlab.htmlreport.sections.keys import find_key

MEASURES = {
    "ILh": "SSE/SST: squared distance of masked to original, standardized (0 = no loss)",
    "IL1": "mean absolute difference of the values, each over √2 times its standard deviation",
    "IL2": "mean relative change of the means and of the variances",
    "IL3": "mean relative change of the covariances and of the correlations",
    "ILs": "statistics-based loss: weighted IL1, IL2, IL3",
    "IL": "information loss: (ILh + ILs) / 2",
    "ZIL": "categorical loss: distance of masked to original records (nominal: changed "
    "or not; ordinal: share of the domain between the two values)",
    "ZIL_percent": "ZIL as a share of all categorical values of the table, in %",
    "ILR": "categorical loss: relative change of the entropy, in %",
    "DLD": "distance-based record linkage: share of masked records whose original is the "
    "nearest or second-nearest original record",
    "DLD_expected": "DLD with tied candidates sharing the link (expected share re-linked)",
    "ID": "interval disclosure: share of records whose every original value lies in the "
    "rank interval around its masked value",
    "DR": "disclosure risk: weighted DLD and ID",
    "score": "trade-off: weighted IL and DR (lower is better)",
}
CONTAINERS = ("measures", "em4adom", "quality", "evaluation", "metrics", "result", "results")
POINT_KEYS = ("points", "tradeoff", "rows", "table", "results", "runs", "curve", "by_k")
CHOSEN_KEYS = ("best_k", "chosen_k", "k_best", "best", "chosen", "recommended_k")


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def find_measures(report: Mapping[str, Any]) -> tuple[dict[str, Any], str, set[str]]:
    """The EM4ADOM measures the report holds: (name -> value, JSON path prefix, keys used)."""
    for container in CONTAINERS:
        key = find_key(report, container)
        inner = report.get(key) if key else None
        if isinstance(inner, Mapping) and any(find_key(inner, m) for m in MEASURES):
            return dict(inner), f"{key}.", {str(key)}
    found = {}
    for m in MEASURES:
        key = find_key(report, m)
        if key is not None and (_is_number(report[key]) or report[key] is None):
            found[key] = report[key]
    return found, "", set(found)


def measure_table(measures: Mapping[str, Any], prefix: str) -> Table:
    """One row per measure: name, value, meaning (other numbers follow the named ones)."""
    rows: list[list[Cell]] = []
    ordered = [k for m in MEASURES for k in measures if str(k).lower() == m.lower()]
    ordered += [k for k in measures if k not in ordered and not isinstance(measures[k], Mapping)]
    for name in ordered:
        meaning = next((v for m, v in MEASURES.items() if m.lower() == str(name).lower()), "")
        rows.append([Cell(str(name)), cell(measures[name], f"{prefix}{name}"), Cell(meaning)])
    return Table(["measure", "value", "meaning"], rows, caption="EM4ADOM measures")


def breakdown_tables(measures: Mapping[str, Any], prefix: str) -> list[Block]:
    """A table per measure given in parts (e.g. ``ID_by_p``: interval disclosure per p %)."""
    blocks: list[Block] = []
    for name, value in measures.items():
        if not isinstance(value, Mapping) or not value:
            continue
        label, _, by = str(name).partition("_by_")
        headers = [by or "part", label if by else str(name)]
        if by == "p":
            headers[0] = "p (% of records in the rank interval)"
        rows = [[Cell(str(k)), cell(v, f"{prefix}{name}.{k}")] for k, v in value.items()]
        blocks.append(
            Table(headers, rows, caption=f"{name}" + (f": {label} for each {by}" if by else ""))
        )
    return blocks


def find_points(report: Mapping[str, Any]) -> tuple[str, list[Mapping[str, Any]]] | None:
    """A trade-off's per-setting rows: a list of objects that each hold k and IL or DR."""
    candidates = [k for k in POINT_KEYS if find_key(report, k)] + list(report)
    for name in candidates:
        key = find_key(report, name) or name
        value = report.get(key)
        if (
            isinstance(value, list)
            and value
            and all(isinstance(v, Mapping) for v in value)
            and all(find_key(v, "k") for v in value)
            and all(
                find_key(v, "IL")
                or find_key(v, "DR")
                or (find_key(v, "ZIL") and find_key(v, "DLD"))
                for v in value
            )
        ):
            return key, list(value)
    return None


def chosen_setting(report: Mapping[str, Any], points: list[Mapping[str, Any]]) -> Any:
    """The k the report chose, else the k of the lowest score."""
    for name in CHOSEN_KEYS:
        key = find_key(report, name)
        if key is not None:
            value = report[key]
            if isinstance(value, Mapping) and find_key(value, "k"):
                return value[find_key(value, "k")]
            if _is_number(value):
                return value
    scored = [
        (float(p[s]), p)
        for p in points
        if (s := find_key(p, "score")) is not None and _is_number(p[s])
    ]
    if scored:
        best = min(scored, key=lambda pair: pair[0])[1]
        return best.get(find_key(best, "k") or "k")
    return None


# the R-U map's axes: loss and risk keys with their labels; ZIL against DLD is
# the map for categorical data (no numeric column: no IL, no DR)
RU_AXES = (
    ("IL", "DR", "information loss IL", "disclosure risk DR"),
    ("ZIL", "DLD", "categorical loss ZIL", "record linkage DLD"),
)


def _plottable(p: Mapping[str, Any], key: str | None) -> bool:
    return key is not None and _is_number(p.get(key)) and math.isfinite(float(p[key]))


def ru_axes(points: list[Mapping[str, Any]]) -> tuple[str, str, str, str] | None:
    """The first pair of RU_AXES that some trade-off row holds as finite numbers."""
    for axes in RU_AXES:
        if any(
            _plottable(p, find_key(p, axes[0])) and _plottable(p, find_key(p, axes[1]))
            for p in points
        ):
            return axes
    return None


def ru_map(points: list[Mapping[str, Any]], chosen: Any) -> Any:
    """The R-U map figure of trade-off rows (risk against loss: DR/IL, else DLD/ZIL)."""
    axes = ru_axes(points)
    if axes is None:
        return None
    loss, risk, loss_label, risk_label = axes
    rows = [
        {
            loss: float(p[find_key(p, loss) or loss]),
            risk: float(p[find_key(p, risk) or risk]),
            "k": p[find_key(p, "k") or "k"],
        }
        for p in points
        if _plottable(p, find_key(p, loss)) and _plottable(p, find_key(p, risk))
    ]
    return plots.ru_map_figure(
        rows, loss, risk, "k", chosen, x_label=loss_label, y_label=risk_label
    )


def _panel_rows(points: list[Mapping[str, Any]], x_key: str, y_key: str) -> list[dict[str, Any]]:
    """The rows with finite ``x_key`` and ``y_key`` (found whatever their case), and their k."""
    rows = []
    for p in points:
        x, y = find_key(p, x_key), find_key(p, y_key)
        if x is not None and y is not None and _plottable(p, x) and _plottable(p, y):
            rows.append({x_key: float(p[x]), y_key: float(p[y]), "k": p[find_key(p, "k") or "k"]})
    return rows


def tradeoff_plot(report: Mapping[str, Any]) -> Any:
    """The R-U map of a tradeoff report (None without per-k rows).

    When the rows hold the highest prosecutor risk (``prosecutor_highest``),
    a second panel maps it against the same loss.
    """
    found = find_points(report)
    if found is None:
        return None
    points, chosen = found[1], chosen_setting(report, found[1])
    axes = ru_axes(points)
    if axes is None:
        return None
    loss, risk, loss_label, risk_label = axes
    panels = []
    for y_key, y_label in ((risk, risk_label), ("prosecutor_highest", "highest prosecutor risk")):
        rows = _panel_rows(points, loss, y_key)
        if rows:
            panels.append(
                {
                    "points": rows,
                    "x_key": loss,
                    "y_key": y_key,
                    "label_key": "k",
                    "chosen": chosen,
                    "x_label": loss_label,
                    "y_label": y_label,
                }
            )
    if len(panels) == 1 and panels[0]["y_key"] == risk:
        return ru_map(points, chosen)
    return plots.ru_maps_figure(panels) if panels else None


def overview(report: Mapping[str, Any], keys: list[tuple[str, str]]) -> KeyValues | None:
    rows = [
        (label, cell(report[key], key))
        for key, label in keys
        if key in report and (_is_number(report[key]) or isinstance(report[key], str))
    ]
    return KeyValues(rows) if rows else None


OVERVIEW_KEYS = [
    ("k", "k (smallest group size)"),
    ("records", "records"),
    ("groups", "groups"),
    ("method", "method"),
    ("variant", "variant"),
    ("block_size", "largest block"),
]
COLUMN_KEYS = [
    ("columns", "numeric columns"),
    ("nominal", "nominal columns"),
    ("ordinal", "ordinal columns"),
]
PARAMETER_KEYS = ("measure_parameters", "measure_settings")


def columns_block(report: Mapping[str, Any]) -> tuple[KeyValues | None, set[str]]:
    """The masked columns by type (lists of names), and the keys shown."""
    rows: list[tuple[str, Cell]] = []
    used: set[str] = set()
    for key, label in COLUMN_KEYS:
        value = report.get(key)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            used.add(key)
            if value:
                rows.append((f"{label} ({len(value)})", Cell(", ".join(value))))
    return (KeyValues(rows, caption="Columns masked") if rows else None), used


def group_size_block(report: Mapping[str, Any]) -> Table | None:
    """Groups by size (MDAV makes groups of k to 2k - 1 records)."""
    sizes = report.get("group_sizes")
    counts = sizes.get("count_by_size") if isinstance(sizes, Mapping) else None
    if not isinstance(counts, Mapping) or not counts:
        return None
    rows = []
    for size, count in counts.items():
        records = int(size) * count if str(size).isdigit() and _is_number(count) else None
        rows.append(
            [
                num(int(size)) if str(size).isdigit() else Cell(str(size)),
                cell(count, f"group_sizes.count_by_size.{size}"),
                num(records) if records is not None else Cell("—"),
            ]
        )
    return Table(["group size", "groups", "records"], rows, caption="Groups by size")


def parameter_block(report: Mapping[str, Any]) -> tuple[list[Block], set[str]]:
    """How the measures were computed (weights, p, standardization, distance, ties)."""
    for key in PARAMETER_KEYS:
        value = report.get(key)
        if isinstance(value, Mapping) and value:
            rows = [
                (str(k), cell(v, f"{key}.{k}") if not isinstance(v, list | dict) else Cell(show(v)))
                for k, v in value.items()
            ]
            return [KeyValues(rows, caption="How the measures were computed")], {key}
    return [], set()


def microaggregation_sections(ctx: RenderContext) -> Built:
    """Sections of a ``microaggregate`` or ``evaluate`` report."""
    report = ctx.report
    blocks: list[Block] = []
    first = overview(report, OVERVIEW_KEYS)
    if first is not None:
        blocks.append(first)
    # scalars are shown above; a null (e.g. no block size for the exact variant) says nothing
    used = {
        k
        for k, _ in OVERVIEW_KEYS
        if k in report
        and (report[k] is None or _is_number(report[k]) or isinstance(report[k], str))
    }
    columns, shown = columns_block(report)
    used |= shown
    if columns is not None:
        blocks.append(columns)
    groups = group_size_block(report)
    if groups is not None:
        blocks.append(groups)
        used.add("group_sizes")
    measures, prefix, found = find_measures(report)
    used |= found
    if measures:
        blocks.append(measure_table(measures, prefix))
        blocks.extend(breakdown_tables(measures, prefix))
    params, shown = parameter_block(report)
    blocks.extend(params)
    used |= shown
    notes = report.get("notes")
    if isinstance(notes, list) and all(isinstance(n, str) for n in notes):
        blocks.extend(Note(n) for n in notes)
        used.add("notes")
    title = (
        "Quality of the masked data (EM4ADOM)" if ctx.command == "evaluate" else "Microaggregation"
    )
    return Built([Section(title, "microaggregation", blocks)] if blocks else [], used)


def tradeoff_sections(ctx: RenderContext) -> Built:
    """Sections of a ``tradeoff`` report: the per-k table and the R-U map."""
    report = ctx.report
    found = find_points(report)
    if found is None:
        return microaggregation_sections(ctx)
    key, points = found
    chosen = chosen_setting(report, points)
    headers: list[str] = []
    for p in points:
        headers.extend(str(h) for h in p if str(h) not in headers)
    k_key = find_key(points[0], "k") or "k"
    rows = [
        [cell(p.get(h), f"{key}.{i}.{h}") for h in headers]
        + [Cell("◀ chosen" if p.get(k_key) == chosen else "")]
        for i, p in enumerate(points)
    ]
    blocks: list[Block] = []
    if chosen is not None:
        blocks.append(
            KeyValues([("chosen k", num(chosen) if _is_number(chosen) else Cell(str(chosen)))])
        )
    fig = ru_map(points, chosen)
    if fig is not None:
        _, _, loss_label, risk_label = ru_axes(points) or RU_AXES[0]
        blocks.append(
            Figure(
                plots.svg_data_uri(fig),
                f"R-U map: {risk_label} against {loss_label} for each k; the "
                "circled point is the chosen k.",
                "R-U map of the trade-off runs",
            )
        )
    blocks.append(Table([*headers, ""], rows, caption="Trade-off per k"))
    used = {key, *(k for k in CHOSEN_KEYS if k in report)}
    if report.get("k_values") == [p.get(k_key) for p in points]:
        used.add("k_values")  # the table's first column says the same
    sections = [Section("Risk-utility trade-off", "tradeoff", blocks)]
    rest = microaggregation_sections(
        RenderContext(
            {k: v for k, v in report.items() if k not in used}, ctx.internal, ctx.base_dirs
        )
    )
    return Built(sections + rest.sections, used | rest.used)
