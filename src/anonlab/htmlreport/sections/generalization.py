"""Sections of the generalization family: ``generalize`` and ``apply`` reports.

Shows the chosen level per quasi-identifier with the number of distinct
values in the data and in the release (the report's ``distinct_values``,
counted on the tables, not on the hierarchy) and the generalized labels it
releases; the internal version adds original → generalized examples: values
of the data file the report names (found unchanged), generalized with the
hierarchy files it names (found unchanged); and the level bounds the search
kept to (``--min-level``/``--max-level``), when any were set. Then the
equivalence class sizes, the information loss figures, the lattice search and
the next-best transformations (``--alternatives``) with how to release one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    format_number,
    format_percent,
    num,
    show,
)
from anonlab.htmlreport.sections.context import Built, RenderContext

LOSS_MEANING = {
    "loss": "ARX's loss: per attribute the share of the domain each released value covers "
    "(a suppressed record weighted by the gs factor), aggregated over the attributes",
    "precision": "mean share of each value's hierarchy climbed (0 = original values, "
    "1 = all fully generalized); Sweeney 2002",
    "precision_with_suppression": "precision with each suppressed record counted as fully "
    "generalized (ARX's precision)",
    "height": "sum of the levels of the transformation (ARX's height)",
    "discernibility": "sum over all classes of the squared class size, suppressed or not "
    "(ARX's monotone discernibility); Bayardo and Agrawal 2005",
    "discernibility_with_suppression": "sum of squared class sizes, plus n for each "
    "suppressed record (ARX's discernibility)",
    "aecs": "average equivalence class size, n / classes (suppressed records as one class)",
    "entropy": "non-uniform entropy in bits lost by generalization (ARX's monotone variant); "
    "Gionis and Tassa 2009",
    "entropy_with_suppression": "non-uniform entropy with suppressed records fully "
    "generalized (ARX's non-monotone variant)",
    "normalized_entropy": "non-uniform entropy per attribute, normalized to [0, 1] (ARX)",
    "ambiguity": "average number of original combinations a released record may stand for "
    "(ARX's ambiguity)",
    "kl_divergence": "Kullback-Leibler divergence of the release from the original (ARX)",
    "entropy_information_loss": "entropy-based information loss: per record 0 (values kept) "
    "to 1 (fully generalized), suppressed records weighted by "
    "the gs factor, summed (ARX)",
    "classification": "share of target values a majority vote per class misses, suppressed "
    "records penalized (ARX's classification metric; needs targets)",
    "static": "the loss the user gave per attribute and level, aggregated (ARX's static "
    "metric; needs static_loss)",
    "publisher_payout": "money the release falls short of earning the publisher's benefit "
    "per record: information loss and expected fines of attacks that "
    "pay (ARX's publisher payout, prosecutor; the profitability "
    "models' cost-benefit figures)",
    "publisher_payout_journalist": "publisher payout with the attack's success taken from "
    "the population's class sizes (ARX's journalist variant)",
}
MAX_EXAMPLES = 4


def _spread(items: list[str], count: int) -> list[str]:
    """Up to ``count`` items evenly spread over the list (first and last included)."""
    if len(items) <= count:
        return items
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def _hierarchy(ctx: RenderContext, column: str) -> tuple[Any, str | None]:
    """The column's hierarchy from the file the report names, or a reason it is absent."""
    from anonlab.errors import AnonlabError
    from anonlab.hierarchy import Hierarchy
    from anonlab.io import file_sha256

    qi = ctx.parameters.get("qi")
    name = qi.get(column) if isinstance(qi, Mapping) else None
    if not isinstance(name, str):
        return None, "hierarchy file not named in the report"
    found = ctx.find_file(name)
    if found is None:
        return None, "hierarchy file not found here"
    desc = (ctx.report.get("inputs") or {}).get(f"hierarchy:{column}")
    expected = desc.get("sha256") if isinstance(desc, Mapping) else None
    if expected and file_sha256(found) != expected:
        return None, "hierarchy file changed since the run"
    try:
        return Hierarchy.from_csv(found), None
    except AnonlabError:
        return None, "hierarchy file unreadable"


def _data_values(ctx: RenderContext) -> tuple[Any, str | None]:
    """The data file the report names, read once (internal version only), or why it is absent."""
    if "data" in ctx.cache:
        cached: tuple[Any, str | None] = ctx.cache["data"]
        return cached
    from anonlab.errors import AnonlabError
    from anonlab.io import file_sha256, read_table

    params = ctx.parameters
    name = params.get("input")
    found = ctx.find_file(name) if isinstance(name, str) and "://" not in name else None
    desc = (ctx.report.get("inputs") or {}).get("data")
    expected = desc.get("sha256") if isinstance(desc, Mapping) else None
    result: tuple[Any, str | None]
    if found is None:
        result = None, "data file not found here"
    elif not expected or file_sha256(found) != expected:
        result = None, "data file changed since the run"
    else:
        options = {
            key: params[key] for key in ("delimiter", "sheet") if isinstance(params.get(key), str)
        }
        try:
            result = read_table(found, **options), None
        except (AnonlabError, OSError, ValueError):
            result = None, "data file unreadable"
    ctx.cache["data"] = result
    return result


def _examples(
    ctx: RenderContext, column: str, hierarchy: Any, level: int
) -> tuple[str, str | None]:
    """Original → generalized for a few values of the data (internal version)."""
    frame, reason = _data_values(ctx)
    if frame is None or column not in frame.columns:
        return "—", reason or "column not in the data file"
    values = frame[column]
    present = set(values.astype(str).where(values.notna(), ""))
    ordered = [v for v in hierarchy.values if v in present]
    picks = _spread(ordered, MAX_EXAMPLES)
    return "; ".join(f"{v} → {hierarchy.label(v, level)}" for v in picks), None


def _distinct_cells(ctx: RenderContext, column: str) -> list[Cell]:
    """Distinct values of the data and of the release, as the report counted them."""
    counts = ctx.report.get("distinct_values")
    found = counts.get(column) if isinstance(counts, Mapping) else None
    cells = []
    for key in ("original", "released"):
        value = found.get(key) if isinstance(found, Mapping) else None
        ok = isinstance(value, int) and not isinstance(value, bool)
        cells.append(
            num(value, f"distinct_values.{column}.{key}" if "." not in column else None)
            if ok
            else Cell("—")
        )
    return cells


def transformation_block(ctx: RenderContext) -> list[Block]:
    """The chosen level per attribute with the generalized values it releases."""
    transformation: Mapping[str, Any] = ctx.report["transformation"]
    headers = [
        "attribute",
        "level",
        "of",
        "distinct values in the data",
        "released",
        "released values, e.g.",
    ]
    if ctx.internal:
        headers.append("original → generalized (internal)")
    rows: list[list[Cell]] = []
    reasons: set[str] = set()
    for column, level in transformation.items():
        level = int(level)
        hierarchy, reason = _hierarchy(ctx, column)
        if hierarchy is not None and level > hierarchy.height:
            hierarchy, reason = None, "level above the top of the hierarchy file"
        if reason:
            reasons.add(reason)
        row = [Cell(str(column)), num(level, f"transformation.{column}")]
        if hierarchy is None:
            row += [Cell("—"), *_distinct_cells(ctx, str(column)), Cell("—")]
            if ctx.internal:
                row.append(Cell("—"))
            rows.append(row)
            continue
        labels = list(dict.fromkeys(hierarchy.labels(hierarchy.values, level)))
        row += [num(hierarchy.height), *_distinct_cells(ctx, str(column))]
        if level == 0:
            row.append(Cell("kept as they are"))
        else:
            row.append(Cell(", ".join(_spread(labels, MAX_EXAMPLES))))
        if ctx.internal:
            text, why = _examples(ctx, str(column), hierarchy, level)
            if why:
                reasons.add(why)
            row.append(Cell(text))
        rows.append(row)
    blocks: list[Block] = [
        Table(
            headers,
            rows,
            caption="Chosen generalization per attribute "
            "(level 0 = original values; the top level is '*'); distinct "
            "values are counted in the data and in the release, not in "
            "the hierarchy",
        )
    ]
    if reasons:
        blocks.append(
            Note(
                "Hierarchy details not shown for some attributes: "
                + "; ".join(sorted(reasons))
                + "."
            )
        )
    return blocks


def class_size_blocks(ctx: RenderContext) -> list[Block]:
    """The distribution of equivalence class sizes: figure and key figures."""
    raw = ctx.report.get("class_sizes")
    if not isinstance(raw, Mapping) or not raw:
        return [Paragraph("The report holds no class size distribution.")]
    sizes = {int(s): int(c) for s, c in raw.items()}
    classes = sum(sizes.values())
    in_classes = sum(s * c for s, c in sizes.items())
    k = ctx.report.get("k")
    ordered = sorted(sizes)
    rows: list[tuple[str, Cell]] = [
        ("equivalence classes", num(classes)),
        ("records in released classes", num(in_classes)),
        ("smallest class", num(ordered[0])),
        ("largest class", num(ordered[-1])),
        ("mean class size", num(in_classes / classes)),
    ]
    if isinstance(k, int):
        rows.append((f"classes of exactly k = {k} records", num(sizes.get(k, 0))))
        rows.append(
            (
                f"records in classes smaller than 2k = {2 * k}",
                num(sum(s * c for s, c in sizes.items() if s < 2 * k)),
            )
        )
    fig = plots.class_size_figure(sizes, k if isinstance(k, int) else None)
    return [
        KeyValues(rows),
        Figure(
            plots.svg_data_uri(fig),
            "Equivalence classes by size: how many classes (left) and how many records "
            "(right) have each size; the dashed line is k.",
            "Histogram of equivalence class sizes",
        ),
    ]


def loss_block(ctx: RenderContext) -> list[Block]:
    """Every information loss figure, the optimized one marked; per-attribute values after."""
    losses = ctx.report.get("information_loss")
    if not isinstance(losses, Mapping) or not losses:
        return []
    chosen = ctx.report.get("metric")
    rows = [
        [
            Cell(str(name) + (" (optimized)" if name == chosen else "")),
            num(value, f"information_loss.{name}")
            if isinstance(value, int | float)
            else Cell(show(value)),
            Cell(LOSS_MEANING.get(str(name), "")),
        ]
        for name, value in losses.items()
    ]
    blocks: list[Block] = [
        Table(
            ["measure", "value", "meaning (lower is better)"],
            rows,
            caption="Information loss of the release",
        )
    ]
    vectors = ctx.report.get("information_loss_per_attribute")
    if isinstance(vectors, Mapping) and vectors:
        columns = list(
            dict.fromkeys(c for v in vectors.values() if isinstance(v, Mapping) for c in v)
        )
        per_rows = [
            [
                Cell(str(name)),
                *(
                    num(values.get(c), f"information_loss_per_attribute.{name}.{c}")
                    if "." not in str(c)
                    else num(values.get(c))
                    for c in columns
                ),
            ]
            for name, values in vectors.items()
            if isinstance(values, Mapping)
        ]
        blocks.append(
            Table(
                ["measure", *map(str, columns)],
                per_rows,
                caption="Information loss per quasi-identifier, where the "
                "measure has one value per attribute",
            )
        )
    return blocks


def criteria_block(ctx: RenderContext) -> list[Block]:
    """The privacy models, their parameters, whether each holds and what the release reaches."""
    entries = ctx.report.get("criteria")
    if not isinstance(entries, list) or not entries:
        return []
    rows = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        params = dict(entry.get("parameters") or {})
        attribute = params.pop("attribute", None)
        satisfied = entry.get("satisfied")
        rows.append(
            [
                Cell(str(entry.get("model", "?"))),
                Cell(show(attribute)),
                Cell(show(params)),
                Cell("yes" if satisfied is True else "NO" if satisfied is False else "—"),
                Cell(show(entry.get("achieved"))),
            ]
        )
    blocks: list[Block] = [
        Table(
            ["model", "attribute", "parameters", "holds", "the release reaches"],
            rows,
            caption="Privacy models, all of which the release must meet "
            "(docs/privacy_models.md defines each)",
        )
    ]
    if any(isinstance(e, Mapping) and e.get("satisfied") is False for e in entries):
        blocks.append(
            Note("A model that does not hold means the release must not be published as it is.")
        )
    return blocks


def _levels_text(value: Any) -> str:
    """The static metric's losses, one list per quasi-identifier: ``age: 0 / 0.5 / 1; ...``."""
    if not isinstance(value, Mapping):
        return show(value)
    return "; ".join(
        f"{c}: {' / '.join(map(show, v)) if isinstance(v, list) else show(v)}"
        for c, v in value.items()
    )


def lattice_blocks(ctx: RenderContext) -> list[Block]:
    """The lattice search: key figures, the per-level table and its picture."""
    r = ctx.report
    kv: list[tuple[str, Cell]] = []
    for key, label in (
        ("search", "search strategy"),
        ("metric", "optimized metric"),
        ("aggregate", "aggregate function (empty: the metric's default)"),
        ("attribute_weights", "attribute weights (default 1 each)"),
        ("targets", "target columns (classification metric)"),
        ("static_loss", "loss per level (static metric)"),
        ("practical_monotonicity", "practical monotonicity"),
    ):
        if key in r:
            kv.append((label, Cell(_levels_text(r[key]) if key == "static_loss" else show(r[key]))))
    if isinstance(r.get("gs_factor"), int | float):
        kv.append(("generalization/suppression factor", num(r["gs_factor"], "gs_factor")))
    for key, label in (
        ("lattice_size", "nodes in the lattice"),
        ("nodes_checked", "nodes checked on the data"),
        ("k_minimal_nodes", "k-minimal nodes"),
        ("optimum_loss", "loss of the optimum"),
    ):
        if isinstance(r.get(key), int | float):
            kv.append((label, num(r[key], key)))
    if isinstance(r.get("search_seconds"), int | float):
        kv.append(
            (
                "search time",
                num(r["search_seconds"], "search_seconds", text=f"{r['search_seconds']:.2f} s"),
            )
        )
    heuristic = r.get("heuristic")
    if isinstance(heuristic, Mapping):
        seconds, steps = heuristic.get("time_limit_seconds"), heuristic.get("step_limit")
        kv += [
            ("search kind", Cell("heuristic: the best node found, not proven optimal")),
            (
                "time limit",
                num(
                    seconds,
                    "heuristic.time_limit_seconds",
                    text="none" if seconds is None else f"{seconds:g} s",
                ),
            ),
            (
                "step limit (node checks)",
                num(steps, "heuristic.step_limit", text="none" if steps is None else None),
            ),
            ("stopped by", Cell(str(heuristic.get("stopped_by")))),
        ]
    blocks: list[Block] = [KeyValues(kv)] if kv else []
    levels = r.get("lattice_levels")
    if isinstance(levels, list) and levels and all(isinstance(x, Mapping) for x in levels):
        keys = ["level", "nodes", "checked", "anonymous", "k_minimal", "optimum"]
        rows = []
        for i, row in enumerate(levels):
            cells = []
            for key in keys:
                value = row.get(key)
                if key == "optimum":
                    cells.append(Cell("★" if value else ""))
                else:
                    cells.append(
                        num(value, f"lattice_levels.{i}.{key}") if value is not None else Cell("—")
                    )
            rows.append(cells)
        blocks.append(
            Figure(
                plots.svg_data_uri(plots.lattice_figure(levels)),
                "The lattice search by level: all nodes, nodes checked on the "
                "data, nodes known to be k-anonymous (checked or implied), "
                "k-minimal nodes; the star marks the optimum's level.",
                "Bar chart of lattice nodes per level",
            )
        )
        blocks.append(
            Table(
                ["level", "nodes", "checked", "anonymous", "k-minimal", "optimum"],
                rows,
                caption="Lattice nodes per level",
            )
        )
    return blocks


def overview_block(ctx: RenderContext) -> KeyValues:
    r = ctx.report
    rows: list[tuple[str, Cell]] = []
    if isinstance(r.get("k"), int):
        rows.append(("k (smallest class size)", num(r["k"], "k")))
    limit = r.get("suppression_limit", ctx.parameters.get("suppression"))
    if isinstance(limit, int | float):
        rows.append(
            (
                "suppression limit",
                num(limit, "suppression_limit", text=format_percent(float(limit))),
            )
        )
    rows.append(("records", num(r["records"], "records")))
    supp = r["suppressed_records"]
    share = supp / r["records"] if r["records"] else 0.0
    rows.append(
        (
            "suppressed records",
            num(
                supp, "suppressed_records", text=f"{format_number(supp)} ({format_percent(share)})"
            ),
        )
    )
    if isinstance(r.get("equivalence_classes"), int):
        rows.append(("equivalence classes", num(r["equivalence_classes"], "equivalence_classes")))
    if "verified" in r:
        rows.append(
            (
                "release re-checked by the independent checker",
                Cell("yes" if r["verified"] else "no"),
            )
        )
    return KeyValues(rows)


def _bound_cell(ctx: RenderContext, column: str, side: int) -> Cell:
    """One QI's lowest (side 0) or highest (side 1) allowed level, from the report."""
    bounds = ctx.report.get("level_bounds")
    pair = bounds.get(column) if isinstance(bounds, Mapping) else None
    if isinstance(pair, list) and len(pair) == 2:
        return num(pair[side], f"level_bounds.{column}.{side}" if "." not in column else None)
    name = ("min_level", "max_level")[side]
    given = ctx.parameters.get(name)
    value = given.get(column) if isinstance(given, Mapping) else None
    if isinstance(value, int):
        return num(value, f"parameters.{name}.{column}" if "." not in column else None)
    return Cell("0" if side == 0 else "top of the hierarchy")


def bounded_columns(ctx: RenderContext) -> list[str]:
    """The quasi-identifiers a ``--min-level`` or ``--max-level`` bound, in report order."""
    named: set[str] = set()
    for name in ("min_level", "max_level"):
        given = ctx.parameters.get(name)
        if isinstance(given, Mapping):
            named |= {str(c) for c in given}
    order = [str(c) for c in ctx.report.get("transformation") or {}]
    return [c for c in order if c in named] + sorted(named - set(order))


def bounds_block(ctx: RenderContext) -> list[Block]:
    """The level bounds the search kept to, for the bounded QIs (nothing when none was set)."""
    columns = bounded_columns(ctx)
    if not columns:
        return []
    rows = [[Cell(c), _bound_cell(ctx, c, 0), _bound_cell(ctx, c, 1)] for c in columns]
    return [
        Table(
            ["attribute", "lowest allowed level", "highest allowed level"],
            rows,
            caption="Level bounds (--min-level, --max-level): the search chose the "
            "best transformation within them; the other quasi-identifiers could take "
            "any level of their hierarchy",
        )
    ]


def _alternative_row(entry: Mapping[str, Any], index: int) -> list[Cell]:
    """One listed transformation: number, levels, loss, suppressed records, highest risk."""
    key = f"alternatives.{index}"
    levels = entry.get("levels")
    return [
        num(entry.get("node"), f"{key}.node"),
        Cell(show(dict(levels)) if isinstance(levels, Mapping) else "—"),
        num(entry.get("loss"), f"{key}.loss"),
        num(entry.get("suppressed_records"), f"{key}.suppressed_records"),
        num(entry.get("highest_prosecutor_risk"), f"{key}.highest_prosecutor_risk"),
    ]


def alternatives_blocks(ctx: RenderContext) -> list[Block]:
    """The N best transformations of the run (``--alternatives``) and how to release one."""
    entries = ctx.report.get("alternatives")
    if not isinstance(entries, list) or not entries:
        return []
    rows = [_alternative_row(e, i) for i, e in enumerate(entries) if isinstance(e, Mapping)]
    metric = ctx.report.get("metric")
    loss = f"loss ({metric})" if isinstance(metric, str) else "loss"
    return [
        Table(
            ["node", "levels", loss, "suppressed records", "highest prosecutor risk"],
            rows,
            caption=f"The {len(rows)} best transformations that satisfy every privacy "
            "model within the level bounds, ordered by loss (node 1 is the optimum, "
            "released by this run); the risk is the largest 1/|class| over the released "
            "classes",
        ),
        Paragraph(
            "To release node N instead, run anonlab apply REPORT TABLE --node N "
            "--output RELEASE with this run's JSON report and its table: the release "
            "gets every check the optimum got."
        ),
    ]


def generalize_sections(ctx: RenderContext) -> Built:
    """Sections of a ``generalize`` report."""
    sections = [
        Section(
            "Generalization",
            "generalization",
            [overview_block(ctx), *transformation_block(ctx), *bounds_block(ctx)],
        ),
    ]
    models = criteria_block(ctx)
    if models:
        sections.append(Section("Privacy models", "criteria", models))
    sections.append(Section("Equivalence classes", "classes", class_size_blocks(ctx)))
    loss = loss_block(ctx)
    if loss:
        sections.append(Section("Information loss", "loss", loss))
    lattice = lattice_blocks(ctx)
    if lattice:
        sections.append(Section("Lattice search", "lattice", lattice))
    alternatives = alternatives_blocks(ctx)
    if alternatives:
        sections.append(Section("Next-best transformations", "alternatives", alternatives))
    used = {
        "k",
        "records",
        "suppressed_records",
        "suppression_limit",
        "equivalence_classes",
        "verified",
        "transformation",
        "class_sizes",
        "information_loss",
        "search",
        "metric",
        "lattice_size",
        "nodes_checked",
        "k_minimal_nodes",
        "optimum_loss",
        "search_seconds",
        "lattice_levels",
        "roles",
        "runtime_seconds",
        "seed",
        "distinct_values",
        "criteria",
        "information_loss_per_attribute",
        "information_loss_arx",
        "gs_factor",
        "aggregate",
        "attribute_weights",
        "practical_monotonicity",
        "level_bounds",
        "alternatives",
        "targets",
        "static_loss",
    }
    return Built(sections, used)


def apply_sections(ctx: RenderContext) -> Built:
    """Sections of an ``apply`` report (a found transformation applied to a new table)."""
    blocks: list[Block] = [overview_block(ctx), *transformation_block(ctx), *bounds_block(ctx)]
    sections = [Section("Transformation applied", "generalization", blocks)]
    models = criteria_block(ctx)
    if models:
        sections.append(Section("Privacy models", "criteria", models))
    return Built(
        sections,
        {
            "transformation",
            "records",
            "suppressed_records",
            "k",
            "verified",
            "runtime_seconds",
            "suppression_limit",
            "distinct_values",
            "criteria",
        },
    )


def class_size_plot(report: Mapping[str, Any]) -> Any:
    """The class size figure of a generalize report (None without class sizes)."""
    raw = report.get("class_sizes")
    if not isinstance(raw, Mapping) or not raw:
        return None
    k = report.get("k")
    return plots.class_size_figure(
        {int(s): int(c) for s, c in raw.items()}, k if isinstance(k, int) else None
    )
