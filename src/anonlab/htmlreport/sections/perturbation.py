"""Sections of the perturbation family: ``perturb`` (OBT, RBT, rotation, GDP) and ``attack``.

The privacy measures per block (docs/formulas.md §4: distance privacy S = Var(X - AX) /
Var(X) and its data-independent form tr((E - A)^T (E - A)) / n, direction
privacy R = prod_i (1 - 1/v_i^2) with v_i the row sums of |a_ij|, P = R x S),
judged per block because over a whole block-diagonal matrix R collapses
towards 0; the attack table (median relative error ||x_hat - x|| / ||x|| and
the shares of records recovered within 10 % and 25 %, drawn as bars); the
clustering agreement (adjusted Rand index of each clusterer's labels before
and after). Warnings the command raised are shown first.

A shareable report has only ``privacy_summary`` (block count and sizes, the
smallest S and P): a block's pairing with its S undoes the release. The
custodian's secret report (``"secret": true``, from ``perturb --internal``)
also has ``blocks`` and ``overall``; they are shown on the internal page only,
under a line saying the page is secret.
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
    format_percent,
    num,
    show,
)
from anonlab.htmlreport.sections.context import Built, RenderContext
from anonlab.htmlreport.sections.generic import MAX_ROWS
from anonlab.htmlreport.sections.keys import find_key

BLOCK_KEYS = ("blocks", "per_block", "privacy")
ATTACK_KEYS = ("attacks", "attack_table", "attack")
CLUSTERING_KEYS = ("clustering", "clustering_agreement", "agreement", "ari")
CLUSTERERS = {
    "kmeans": "k-means",
    "k_means": "k-means",
    "dbscan": "DBSCAN",
    "ward": "Ward",
    "agglomerative": "agglomerative",
    "spectral": "spectral",
    "birch": "BIRCH",
    "optics": "OPTICS",
    "gmm": "Gaussian mixture",
}
MEASURES = {
    "S": "distance privacy Var(X − AX) / Var(X)",
    "S_trace": "S in its data-independent form tr((E − A)ᵀ(E − A)) / n",
    "R": "direction privacy Π (1 − 1/v_i²), v_i = Σ_j |a_ij|",
    "P": "privacy level R × S",
    "P_trace": "R × S_trace",
    "min_block_P": "smallest P of a block",
    "mean_block_P": "mean P of the blocks",
}
ATTACK_HEADERS = {
    "median_relative_error": "median relative error ‖x̂ − x‖ / ‖x‖",
    "within_10": "recovered within 10 %",
    "within_25": "recovered within 25 %",
    "exact": "recovered exactly",
    "columns_recovered": "columns recovered within 10 % (of every record)",
    "known": "known records (PCA, ICA: size of the attacker's sample)",
}
ATTACK_NAMES = {
    "naive": "naive (released values read as the originals)",
    "ties": "ties (tied values give the rotation away; release only)",
    "least_squares": "least squares on known records",
    "procrustes": "orthogonal Procrustes on known records",
    "method_aware": "method-aware (pairs/triples of OBT) on known records",
    "known_sample": "known sample (PCA) from the same distribution",
    "ica": "independent component analysis (FastICA)",
}
SAMPLE_ATTACKS = ("known_sample", "ica")
SUMMARY = {
    "blocks": "blocks",
    "block_sizes": "blocks by number of columns",
    "min_S": "smallest S of a block (distance privacy)",
    "min_P": "smallest P of a block (privacy level R × S)",
    "withheld": "withheld",
}
SECRET_NOTE = (
    "SECRET: this report lists each block's column pairing and its S, R and P; "
    "with the release they recover the perturbed columns. Keep it with the key "
    "and share only the report made without --internal."
)
HIDDEN_NOTE = (
    "This report is secret (made with --internal): each block's pairing and "
    "figures are not shown on a shareable page. Render it with --internal."
)
OVERVIEW = [
    ("method", "method"),
    ("records", "records"),
    ("blocks_count", "blocks"),
    ("attack_records", "records attacked (a random subset when the table is large)"),
]


def _number(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _as_float(x: Any) -> float:
    """A number as float; anything else (missing, text) as 0."""
    return float(x) if _number(x) else 0.0


def _rows(value: Any, name: str = "name") -> list[dict[str, Any]]:
    """A list of objects, or an object of objects as rows named by their key."""
    if isinstance(value, list):
        return [dict(v) for v in value if isinstance(v, Mapping)]
    if isinstance(value, Mapping) and value and all(isinstance(v, Mapping) for v in value.values()):
        return [{name: k, **v} for k, v in value.items()]
    return []


def _key_of(report: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    return next((k for n in names if (k := find_key(report, n)) is not None), None)


def privacy_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-block rows holding S, R or P."""
    key = _key_of(report, BLOCK_KEYS)
    rows = _rows(report[key], "block") if key else []
    return [r for r in rows if any(_number(r.get(m)) for m in ("S", "R", "P"))]


def attack_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The attack table's rows."""
    key = _key_of(report, ATTACK_KEYS)
    return _rows(report[key], "attack") if key else []


def attack_label(row: Mapping[str, Any]) -> str:
    """An attack's name with the number of known records it used, when given."""
    name = next((str(row[k]) for k in ("attack", "name", "method") if k in row), "attack")
    known = row.get("known")
    if not _number(known) or known <= 0:
        return name
    return f"{name}, sample of {known}" if name in SAMPLE_ATTACKS else f"{name}, {known} known"


def _share_columns(row: Mapping[str, Any]) -> list[str]:
    """Columns of an attack row that hold the share recovered within 10 % / 25 %."""
    return [str(k) for k in row if ("10" in str(k) or "25" in str(k)) and _number(row[k])]


def strongest_attack(report: Mapping[str, Any]) -> tuple[str, float, str] | None:
    """(attack, share recovered, 'within 10 %') of the attack recovering most records.

    The tightest tolerance (10 %) ranks first, 25 % breaks ties.
    """
    rows = attack_rows(report)
    if not rows:
        return None
    columns = _share_columns(rows[0])
    if not columns:
        return None
    tight = next((c for c in columns if "10" in c), columns[0])
    loose = next((c for c in columns if "25" in c), tight)
    scored = [(float(r[tight]), _as_float(r.get(loose)), r) for r in rows if _number(r.get(tight))]
    if not scored:
        return None
    best = max(scored, key=lambda t: (t[0], t[1]))
    if best[0] > 0 or tight == loose:
        return attack_label(best[2]), best[0], "within 10 %" if "10" in tight else "within 25 %"
    best = max(scored, key=lambda t: t[1])
    return attack_label(best[2]), best[1], "within 25 %"


def clustering_scores(report: Mapping[str, Any]) -> dict[str, float]:
    """Adjusted Rand index per clusterer (keys named for a clusterer, or for ARI)."""
    key = _key_of(report, CLUSTERING_KEYS)
    value = report.get(key) if key else None
    if _number(value):
        return {str(key): float(value)}
    out: dict[str, float] = {}
    if isinstance(value, Mapping):
        for k, v in value.items():
            name = str(k).lower()
            base = name.removesuffix("_ari")
            if _number(v) and (base in CLUSTERERS or "ari" in name or "rand" in name):
                out[CLUSTERERS.get(base, str(k))] = float(v)
            elif isinstance(v, Mapping):
                ari = next(
                    (
                        x
                        for n, x in v.items()
                        if "ari" in str(n).lower() or "rand" in str(n).lower()
                    ),
                    None,
                )
                if _number(ari):
                    out[CLUSTERERS.get(base, str(k))] = float(ari)
    return out


def overview_blocks(report: Mapping[str, Any]) -> tuple[list[Block], set[str]]:
    """The secret line (first), the command's warnings, method, records and columns."""
    blocks: list[Block] = []
    used: set[str] = {"secret"} if "secret" in report else set()
    if report.get("secret") is True:
        blocks.append(Note(SECRET_NOTE, warning=True))
    warnings = report.get("warnings")
    if isinstance(warnings, list) and all(isinstance(w, str) for w in warnings):
        used.add("warnings")
        blocks.extend(Note(f"Warning: {w}", warning=True) for w in warnings)
    rows: list[tuple[str, Cell]] = []
    for key, label in OVERVIEW:
        value = report.get(key)
        if _number(value) or isinstance(value, str):
            used.add(key)
            rows.append((label, cell(value, key)))
    columns = report.get("columns")
    if isinstance(columns, list) and all(isinstance(c, str) for c in columns):
        used.add("columns")
        rows.append((f"columns perturbed ({len(columns)})", Cell(", ".join(columns))))
    if rows:
        blocks.append(KeyValues(rows))
    return blocks, used


def _measure_cell(value: Any, key: str) -> Cell:
    if isinstance(value, list):
        return Cell(show(value))
    return cell(value, key)


def summary_blocks(report: Mapping[str, Any]) -> tuple[list[Block], set[str]]:
    """The shareable figures over all blocks (``privacy_summary``)."""
    summary = report.get("privacy_summary")
    if not isinstance(summary, Mapping):
        return [], set()
    rows: list[tuple[str, Cell]] = []
    for k, v in summary.items():
        if v is None:
            continue
        value = (
            Cell(", ".join(f"{n}: {c}" for n, c in v.items()))
            if isinstance(v, Mapping)
            else _measure_cell(v, f"privacy_summary.{k}")
        )
        rows.append((SUMMARY.get(str(k), str(k)), value))
    caption = "Over all blocks, naming none (a block's pairing and S would undo the release)"
    return [KeyValues(rows, caption=caption)], {"privacy_summary"}


def privacy_blocks(
    report: Mapping[str, Any], internal: bool = True
) -> tuple[list[Block], set[str]]:
    """The figures over all blocks; S, R and P per block (table, bars of P) and overall.

    The per-block figures are shown when ``internal`` only; else a note says
    they are withheld (they are marked used either way, so that no generic
    section shows them).
    """
    blocks, used = summary_blocks(report)
    key = _key_of(report, BLOCK_KEYS)
    rows = _rows(report[key], "block") if key else []
    overall_key = find_key(report, "overall")
    if not internal and (rows or overall_key):
        used |= {k for k in (key, overall_key) if k}
        return [*blocks, Note(HIDDEN_NOTE, warning=True)], used
    if key and rows:
        used.add(key)
        headers: list[str] = []
        for r in rows:
            headers.extend(str(h) for h in r if str(h) not in headers)
        body = [
            [Cell(str(i + 1)), *[_measure_cell(r.get(h), f"{key}.{i}.{h}") for h in headers]]
            for i, r in enumerate(rows[:MAX_ROWS])
        ]
        blocks.append(
            Table(
                ["block", *headers],
                body,
                caption="Privacy of each block (pair or triple of columns)",
            )
        )
        ps = [float(r["P"]) if _number(r.get("P")) else 0.0 for r in rows]
        if any(_number(r.get("P")) for r in rows):
            labels = [f"block {i + 1}" for i in range(len(rows))]
            fig = plots.bar_figure(labels, ps, ylabel="P = R × S")
            least = (report.get("parameters") or {}).get("min_privacy")
            caption = "Privacy level P of each block (higher = harder to undo without the key)"
            if _number(least) and str(report.get("method", "")).lower() == "obt":
                plots.add_hline(fig, float(least), f"min privacy {least}")
                caption += f"; the line is the required minimum {least}"
            blocks.append(
                Figure(
                    plots.svg_data_uri(fig),
                    caption + ".",
                    "Bar chart of the privacy level per block",
                )
            )
    meanings = (
        [
            Paragraph(
                "; ".join(f"{m}: {t}" for m, t in MEASURES.items() if any(m in r for r in rows))
                + "."
            )
        ]
        if rows
        else []
    )
    blocks.extend(meanings)
    overall = report.get(overall_key) if overall_key else None
    if isinstance(overall, Mapping) and overall:
        used.add(str(overall_key))
        blocks.append(
            KeyValues(
                [
                    (
                        f"{k} ({MEASURES[k]})" if k in MEASURES else str(k),
                        _measure_cell(v, f"{overall_key}.{k}"),
                    )
                    for k, v in overall.items()
                ],
                caption="Over all columns (R and P of the whole matrix tend "
                "to 0 as blocks multiply: judge P per block)",
            )
        )
    return blocks, used


def attack_figure(value: Any) -> Any:
    """Bars of the share of records recovered per attack (None if the rows lack it)."""
    rows = _rows(value, "attack")
    if not rows:
        return None
    columns = _share_columns(rows[0])
    if not columns:
        return None
    labels = [attack_label(r) for r in rows]
    series = {
        ("within " + ("10 %" if "10" in c else "25 %")): [_as_float(r.get(c)) * 100 for r in rows]
        for c in columns
    }
    return plots.grouped_bar_figure(labels, series, ylabel="% of records recovered")


def attack_blocks(report: Mapping[str, Any]) -> tuple[list[Block], set[str]]:
    """The attack table (shares as percentages) and its bar chart."""
    key = _key_of(report, ATTACK_KEYS)
    rows = _rows(report[key], "attack") if key else []
    if not key or not rows:
        return [], set()
    headers: list[str] = []
    for r in rows:
        headers.extend(str(h) for h in r if str(h) not in headers)
    shares = set(_share_columns(rows[0])) | {"exact"}
    body = []
    for i, r in enumerate(rows[:MAX_ROWS]):
        line = []
        for h in headers:
            v = r.get(h)
            if h in shares and _number(v):
                line.append(num(v, f"{key}.{i}.{h}", text=format_percent(float(v))))
            elif h == "attack" and isinstance(v, str):
                line.append(Cell(ATTACK_NAMES.get(v, v)))
            else:
                line.append(_measure_cell(v, f"{key}.{i}.{h}"))
        body.append(line)
    blocks: list[Block] = [
        Table(
            [ATTACK_HEADERS.get(h, h) for h in headers],
            body,
            caption="What an attacker recovers: a record counts as "
            "recovered when its estimate is within the stated "
            "relative error of the original",
        )
    ]
    fig = attack_figure(rows)
    if fig is not None:
        blocks.append(
            Figure(
                plots.svg_data_uri(fig),
                "Share of the records each attack recovers within 10 % and 25 % "
                "(higher = weaker protection).",
                "Bar chart of records recovered per attack",
            )
        )
    return blocks, {key}


def clustering_blocks(report: Mapping[str, Any]) -> tuple[list[Block], set[str]]:
    """Adjusted Rand index per clusterer, with the clustering settings."""
    key = _key_of(report, CLUSTERING_KEYS)
    value = report.get(key) if key else None
    scores = clustering_scores(report)
    if key is None or not scores:
        return [], set()
    rows: list[tuple[str, Cell]] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            base = str(k).lower().removesuffix("_ari")
            label = (
                f"adjusted Rand index, {CLUSTERERS[base]}"
                if base in CLUSTERERS
                else str(k).replace("_", " ")
            )
            rows.append((label, _measure_cell(v, f"{key}.{k}")))
    else:
        rows.append(("adjusted Rand index", cell(value, key)))
    same = all(s >= 1.0 - 1e-12 for s in scores.values())
    text = (
        "Every clusterer finds the same clusters on the released data as on the original "
        "(adjusted Rand index 1)."
        if same
        else "Adjusted Rand index of each clusterer's labels on the released data against its "
        "labels on the original (1 = the same clusters, 0 = chance agreement)."
    )
    return [Paragraph(text), KeyValues(rows, caption="Clustering agreement")], {key}


def perturbation_sections(ctx: RenderContext) -> Built:
    """Sections of a ``perturb`` or ``attack`` report."""
    report = ctx.report
    used: set[str] = set()
    sections: list[Section] = []
    title = "Perturbation" if ctx.command != "attack" else "Attacked release"

    def privacy(report: Mapping[str, Any]) -> tuple[list[Block], set[str]]:
        return privacy_blocks(report, ctx.internal)

    for name, anchor, build in (
        (title, "perturbation", overview_blocks),
        ("Privacy of the blocks (S, R, P)", "privacy", privacy),
        ("Attacks: what an attacker could recover", "attacks", attack_blocks),
        ("Clustering agreement", "clustering", clustering_blocks),
    ):
        blocks, shown = build(report)
        used |= shown
        if blocks:
            sections.append(Section(name, anchor, blocks))
    return Built(sections, used)


def attack_plot(report: Mapping[str, Any]) -> Any:
    """The attack bar chart of a perturb or attack report (None without an attack table)."""
    rows = attack_rows(report)
    return attack_figure(rows) if rows else None
