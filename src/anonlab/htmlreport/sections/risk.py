"""The re-identification risk of a release, and the roles of its columns (any family).

A report with a ``risk`` section (``docs/risk.md``) gets a "Re-identification
risk" section: what the attacker is assumed to know, the headline figures
(prosecutor, journalist and marketer risk as ARX 3.9 defines them, sample and
population uniques, sdcMicro's individual risk), the class-size histogram,
the records-at-risk bars and the sensitive-attribute table. A ``tradeoff``
report's ``risk_by_k`` becomes a per-k table and an R-U map of the highest
prosecutor risk against the information loss. A report with ``roles`` gets
the role of every column and the columns released unchanged.

Only aggregates are shown: counts, shares and column names, never a record
or a value of one.
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
    format_percent,
    num,
    show,
)
from anonlab.htmlreport.sections.context import Built, RenderContext
from anonlab.risk.figures import JUDGED_RISK_KEY, judged_risk, single_value_records

RISK_KEYS = {"risk", "attacker_knowledge", "risk_warnings", "risk_by_k", JUDGED_RISK_KEY}
ROLE_KEYS = {"roles", "other", "released_unchanged", "insensitive_by_other"}
ROLE_MEANING = {
    "quasi": "quasi-identifying: protected by the method",
    "identifying": "identifying: dropped from the release",
    "sensitive": "sensitive: released as it is; its l and t are measured",
    "insensitive": "insensitive: released as it is, by choice",
}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return _number(value) and math.isfinite(float(value))


def _key(*parts: Any) -> str | None:
    """The dotted JSON path of a value, or ``None`` when a part holds a dot (not addressable)."""
    texts = [str(p) for p in parts]
    return None if any("." in t for t in texts) else ".".join(texts)


def _share(value: Any, *path: Any) -> Cell:
    """A share in [0, 1] shown as a percentage, its exact value tied to the JSON."""
    if not _number(value):
        return Cell(show(value))
    text = format_percent(float(value)) if math.isfinite(float(value)) else None
    return num(value, _key(*path), text=text)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def risk_warnings(report: Mapping[str, Any]) -> list[str]:
    """The report's risk warnings (text only), shown at the top of the summary."""
    found = report.get("risk_warnings")
    if not isinstance(found, list):
        return []
    return [" ".join(str(w).split()) for w in found if isinstance(w, str) and w.strip()]


def _knowledge_rows(report: Mapping[str, Any], risk: Mapping[str, Any]) -> list[tuple[str, Cell]]:
    rows: list[tuple[str, Cell]] = []
    columns = risk.get("attacker_columns")
    if isinstance(columns, list):
        rows.append(("the attacker knows", Cell(show([str(c) for c in columns]))))
    if isinstance(report.get("attacker_knowledge"), str):
        rows.append(("chosen as", Cell(report["attacker_knowledge"])))
    for key, label in (
        ("records", "records measured"),
        ("suppressed", "suppressed records (left out, as ARX counts them)"),
    ):
        if _number(risk.get(key)):
            rows.append((label, num(risk[key], _key("risk", key))))
    classes = _mapping(risk.get("classes"))
    for key, label in (
        ("count", "equivalence classes on those columns"),
        ("smallest", "smallest class"),
    ):
        if _number(classes.get(key)):
            rows.append((label, num(classes[key], _key("risk", "classes", key))))
    return rows


def _figure_rows(risk: Mapping[str, Any]) -> list[tuple[str, Cell]]:
    """The headline figures: prosecutor, journalist, marketer, uniques, individual risk."""
    rows: list[tuple[str, Cell]] = []
    for model in ("prosecutor", "journalist"):
        figures = _mapping(risk.get(model))
        basis = figures.get("population")
        label = model + (f" ({basis})" if isinstance(basis, str) and model == "journalist" else "")
        for key in ("highest", "average"):
            if _number(figures.get(key)):
                rows.append((f"{label} risk, {key}", _share(figures[key], "risk", model, key)))
    marketer = _mapping(risk.get("marketer"))
    if _number(marketer.get("average")):
        rows.append(
            (
                "marketer risk (expected share re-identified)",
                _share(marketer["average"], "risk", "marketer", "average"),
            )
        )
    if _number(risk.get("sample_uniques")):
        rows.append(
            (
                "sample uniques (records alone in their class)",
                _share(risk["sample_uniques"], "risk", "sample_uniques"),
            )
        )
    population = _mapping(risk.get("population_uniques"))
    for key in ("pitman", "zayatz", "snb", "dankar"):
        if _number(population.get(key)):
            rows.append(
                (
                    f"population uniques ({key})",
                    _share(population[key], "risk", "population_uniques", key),
                )
            )
    individual = _mapping(risk.get("individual_risk"))
    if _number(individual.get("expected_reidentifications")):
        rows.append(
            (
                "expected re-identifications (sdcMicro)",
                num(
                    individual["expected_reidentifications"],
                    _key("risk", "individual_risk", "expected_reidentifications"),
                ),
            )
        )
    suda = _mapping(risk.get("suda2"))
    if _number(suda.get("records_with_msu")):
        rows.append(
            (
                "records with a minimal sample unique (SUDA2)",
                num(suda["records_with_msu"], _key("risk", "suda2", "records_with_msu")),
            )
        )
    return rows


def _class_sizes(risk: Mapping[str, Any]) -> dict[int, int]:
    """The class-size distribution, when every entry is a whole size and count."""
    raw = _mapping(_mapping(risk.get("classes")).get("sizes"))
    out: dict[int, int] = {}
    for size, count in raw.items():
        if not str(size).isdigit() or int(size) < 1 or not _number(count) or count < 0:
            return {}
        if not float(count).is_integer():
            return {}
        out[int(size)] = int(count)
    return out if any(out.values()) else {}


def _class_figure(report: Mapping[str, Any], risk: Mapping[str, Any]) -> list[Block]:
    sizes = _class_sizes(risk)
    if not sizes:
        return []
    k = report.get("k")
    fig = plots.class_size_figure(
        sizes, k if isinstance(k, int) and not isinstance(k, bool) else None
    )
    return [
        Figure(
            plots.svg_data_uri(fig),
            "Classes on the attacker's columns by size: how many classes (left) and "
            "records (right) have each size. A record's prosecutor risk is 1 / its "
            "class size.",
            "Histogram of class sizes on the attacker's columns",
        )
    ]


def _at_risk(risk: Mapping[str, Any]) -> tuple[list[str], dict[str, list[float]]]:
    """Thresholds and, per model, the share of records above each (finite shares only)."""
    thresholds: list[str] = []
    series: dict[str, list[float]] = {}
    for model in ("prosecutor", "journalist"):
        shares = _mapping(_mapping(risk.get(model)).get("records_at_risk"))
        if shares and all(_finite(v) for v in shares.values()):
            if not thresholds:
                thresholds = [str(t) for t in shares]
            if [str(t) for t in shares] == thresholds:
                series[model] = [float(v) for v in shares.values()]
    return thresholds, series


def _at_risk_blocks(risk: Mapping[str, Any]) -> list[Block]:
    thresholds, series = _at_risk(risk)
    if not series:
        return []
    rows = [
        [
            Cell(t),
            *[
                _share(
                    _mapping(_mapping(risk.get(m)).get("records_at_risk")).get(t),
                    "risk",
                    m,
                    "records_at_risk",
                    t,
                )
                for m in series
            ],
        ]
        for t in thresholds
    ]
    fig = plots.grouped_bar_figure([f"risk > {t}" for t in thresholds], series, "share of records")
    return [
        Figure(
            plots.svg_data_uri(fig),
            "Records at risk: the share of records whose re-identification risk is "
            "above each threshold.",
            "Bar chart of records at risk per threshold",
        ),
        Table(
            ["threshold", *[f"{m} records at risk" for m in series]],
            rows,
            caption="Records above each risk threshold",
        ),
    ]


def _sensitive_block(risk: Mapping[str, Any]) -> list[Block]:
    attributes = _mapping(risk.get("sensitive"))
    columns = [
        ("distinct_l", "distinct l"),
        ("entropy_l", "entropy l"),
        ("t_equal", "t (equal distance)"),
        ("t_hierarchical", "t (hierarchical)"),
        ("single_value_classes", "classes of one value"),
        ("single_value_records", "records in them"),
    ]
    rows: list[list[Cell]] = []
    for name, figures in attributes.items():
        values = _mapping(figures)
        rows.append(
            [
                Cell(str(name)),
                *[
                    num(values.get(key), _key("risk", "sensitive", name, key))
                    if _number(values.get(key))
                    else Cell(show(values.get(key)))
                    for key, _ in columns
                ],
            ]
        )
    if not rows:
        return []
    return [
        Table(
            ["attribute", *[label for _, label in columns]],
            rows,
            caption="What the release gives about each sensitive attribute (smallest l "
            "and largest t over the classes; no privacy model enforced them)",
        )
    ]


def _warning_blocks(report: Mapping[str, Any]) -> list[Block]:
    messages = risk_warnings(report)
    limit = (
        report.get("parameters", {}).get("max_risk")
        if isinstance(report.get("parameters"), Mapping)
        else None
    )
    if messages:
        return [
            Note(
                f"{len(messages)} risk warning{'s' if len(messages) > 1 else ''}: see "
                "the top of the summary.",
                warning=True,
            )
        ]
    if "risk_warnings" in report:
        bound = f" {limit:g}" if _finite(limit) else ""
        return [
            Note(
                f"No risk warning: the highest prosecutor risk is within the maximum"
                f"{bound}, no record is unique on the attacker's columns and no class "
                "has a single value of a sensitive attribute."
            )
        ]
    return []


def _judged_rows(key: str, section: Mapping[str, Any]) -> list[tuple[str, Cell]]:
    """The figures of the judged section: its attacker, highest risk, uniques, l = 1 records."""
    rows: list[tuple[str, Cell]] = []
    columns = section.get("attacker_columns")
    if isinstance(columns, list):
        rows.append(("the attacker knows", Cell(show([str(c) for c in columns]))))
    highest = _mapping(section.get("prosecutor")).get("highest")
    if _number(highest):
        rows.append(("prosecutor risk, highest", _share(highest, key, "prosecutor", "highest")))
    if _number(section.get("sample_uniques")):
        rows.append(("sample uniques", _share(section["sample_uniques"], key, "sample_uniques")))
    for name in _mapping(section.get("sensitive")):
        records = single_value_records(section, str(name))
        if records is not None:
            rows.append(
                (
                    f"records in classes of one {name} value (distinct l = 1)",
                    num(records, _key(key, "sensitive", name, "single_value_records")),
                )
            )
    return rows


def _judged_blocks(report: Mapping[str, Any]) -> list[Block]:
    """What the warnings judge when it is not the ``risk`` section (a perturbation's
    columns released unchanged; :func:`anonlab.risk.figures.judged_risk`)."""
    if JUDGED_RISK_KEY not in report:
        return []
    judged = judged_risk(report)
    if judged is None:
        return [
            Note(
                "No column the attacker knows is released unchanged: the warnings judge "
                "nothing. The figures below assume the attacker knows the perturbed "
                "values too, which match no original record."
            )
        ]
    return [
        KeyValues(
            _judged_rows(*judged),
            caption="What the warnings judge: the attacker's "
            "columns released unchanged (the figures below assume the perturbed "
            "values known too)",
        )
    ]


def release_risk_section(report: Mapping[str, Any]) -> Section | None:
    """The section of a ``risk`` report key (None without one)."""
    risk = report.get("risk")
    if not isinstance(risk, Mapping):
        return None
    blocks: list[Block] = [*_warning_blocks(report), *_judged_blocks(report)]
    known = _knowledge_rows(report, risk)
    if known:
        blocks.append(KeyValues(known, caption="Who the attacker is"))
    figures = _figure_rows(risk)
    if figures:
        blocks.append(
            KeyValues(
                figures,
                caption="Re-identification risk (ARX 3.9, sdcMicro 5.8 definitions; docs/risk.md)",
            )
        )
    blocks += _class_figure(report, risk)
    blocks += _at_risk_blocks(risk)
    blocks += _sensitive_block(risk)
    return Section("Re-identification risk", "risk", blocks)


def _per_k_rows(by_k: Mapping[str, Any]) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    for k, section in by_k.items():
        risk = _mapping(section)
        classes = _mapping(risk.get("classes"))
        prosecutor = _mapping(risk.get("prosecutor"))
        cells = [Cell(str(k))]
        for value, path, share in (
            (classes.get("count"), ("risk_by_k", k, "classes", "count"), False),
            (classes.get("smallest"), ("risk_by_k", k, "classes", "smallest"), False),
            (prosecutor.get("highest"), ("risk_by_k", k, "prosecutor", "highest"), True),
            (prosecutor.get("average"), ("risk_by_k", k, "prosecutor", "average"), True),
            (risk.get("sample_uniques"), ("risk_by_k", k, "sample_uniques"), True),
        ):
            if not _number(value):
                cells.append(Cell(show(value)))
            else:
                cells.append(_share(value, *path) if share else num(value, _key(*path)))
        rows.append(cells)
    return rows


def _risk_ru_map(report: Mapping[str, Any]) -> list[Block]:
    """Highest prosecutor risk against the information loss (IL, else ZIL), one point per k."""
    points = report.get("points")
    if not isinstance(points, list):
        return []
    rows = [p for p in points if isinstance(p, Mapping)]
    for loss, label in (("IL", "information loss IL"), ("ZIL", "categorical loss ZIL")):
        usable: list[dict[str, Any]] = [
            {
                "k": p.get("k"),
                loss: float(p[loss]),
                "prosecutor_highest": float(p["prosecutor_highest"]),
            }
            for p in rows
            if _finite(p.get(loss)) and _finite(p.get("prosecutor_highest"))
        ]
        if usable:
            best = report.get("best_k")
            fig = plots.ru_map_figure(
                usable,
                loss,
                "prosecutor_highest",
                "k",
                best if _number(best) else None,
                x_label=label,
                y_label="highest prosecutor risk",
            )
            return [
                Figure(
                    plots.svg_data_uri(fig),
                    f"R-U map with the re-identification risk: the highest prosecutor "
                    f"risk (1 / smallest class) against {label} for each k.",
                    "R-U map of prosecutor risk against information loss",
                )
            ]
    return []


def tradeoff_risk_section(report: Mapping[str, Any]) -> Section | None:
    """The per-k risk of a ``tradeoff`` report (None without ``risk_by_k``)."""
    by_k = report.get("risk_by_k")
    if not isinstance(by_k, Mapping) or not by_k:
        return None
    blocks: list[Block] = []
    first = _mapping(next(iter(by_k.values())))
    known = _knowledge_rows(report, {"attacker_columns": first.get("attacker_columns")})
    if known:
        blocks.append(KeyValues(known, caption="Who the attacker is"))
    blocks += _risk_ru_map(report)
    blocks.append(
        Table(
            [
                "k",
                "classes",
                "smallest class",
                "prosecutor highest",
                "prosecutor average",
                "sample uniques",
            ],
            _per_k_rows(by_k),
            caption="Re-identification risk of each k's masked table",
        )
    )
    return Section("Re-identification risk per k", "risk", blocks)


def roles_section(report: Mapping[str, Any]) -> Section | None:
    """The role of every column, and the columns released unchanged (None without roles)."""
    roles = report.get("roles")
    if not isinstance(roles, Mapping) or not roles:
        return None
    rows = [[Cell(str(c)), Cell(ROLE_MEANING.get(str(r), show(r)))] for c, r in roles.items()]
    blocks: list[Block] = []
    by_other = report.get("insensitive_by_other")
    if isinstance(by_other, list) and by_other:
        blocks.append(
            Note(
                f"Released unchanged because other = 'insensitive' was given (no "
                f"role was named for them): {show([str(c) for c in by_other])}.",
                warning=True,
            )
        )
    unchanged = report.get("released_unchanged")
    if isinstance(unchanged, list):
        blocks.append(
            KeyValues(
                [
                    (
                        "columns released with their original values",
                        Cell(show([str(c) for c in unchanged])),
                    )
                ]
            )
        )
    blocks.append(Table(["column", "role"], rows, caption="Role of every input column"))
    return Section("Columns and their roles", "roles", blocks)


def risk_sections(ctx: RenderContext) -> Built:
    """The roles and risk sections of any report that holds them."""
    report = ctx.report
    roles = roles_section(report)
    risks = [
        s for s in (release_risk_section(report), tradeoff_risk_section(report)) if s is not None
    ]
    used: set[str] = set()
    if roles is not None:
        used |= {k for k in ROLE_KEYS if k in report}
    if risks:
        used |= {k for k in RISK_KEYS if k in report}
    return Built([s for s in (roles, *risks) if s is not None], used)
