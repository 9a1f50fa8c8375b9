"""The plain-language paragraph at the top of the report.

One short paragraph a non-specialist can read: how many records, what
guarantee the release gives, what it cost. Built from the report's keys only;
a command without its own sentence builder gets a generic one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from anonlab.htmlreport.blocks import format_number, format_percent
from anonlab.risk.figures import (
    judged_risk,
    release_classes,
    release_suppressed,
    single_value_records,
)

Summarizer = Callable[[Mapping[str, Any]], str]


def _names(names: list[str], limit: int = 8) -> str:
    if len(names) > limit:
        return ", ".join(names[:limit]) + f" and {len(names) - limit} more"
    if len(names) > 1:
        return ", ".join(names[:-1]) + " and " + names[-1]
    return names[0] if names else ""


def _data_name(report: Mapping[str, Any]) -> str | None:
    inputs = report.get("inputs") or {}
    for role in ("data", "original"):
        data = inputs.get(role) if isinstance(inputs, Mapping) else None
        if isinstance(data, Mapping) and data.get("name"):
            return str(data["name"])
    return None


def generalize_summary(report: Mapping[str, Any]) -> str:
    """E.g. '30,162 records; every combination of the 8 quasi-identifiers is shared ...'."""
    n = int(report["records"])
    k = report.get("k", (report.get("parameters") or {}).get("k"))
    transformation: Mapping[str, Any] = report["transformation"]
    qis = list(transformation)
    suppressed = release_suppressed(report) or 0
    source = _data_name(report)
    plural = "s" if len(qis) != 1 else ""
    parts = [
        f"{format_number(n)} records"
        + (f" of {source}" if source else "")
        + f" were released after generalizing their {len(qis)} quasi-identifier{plural}"
        + f" ({_names(qis)})"
    ]
    if k is not None:
        parts.append(
            f"every combination of the {len(qis)} quasi-identifiers is shared by at "
            f"least {format_number(int(k))} records, so by these attributes each released "
            f"record looks the same as at least {format_number(int(k) - 1)} others"
        )
    limit = report.get("suppression_limit")
    text = f"{format_number(suppressed)} records ({format_percent(suppressed / n if n else 0)})"
    text += " were suppressed (all their quasi-identifiers replaced by '*')"
    if isinstance(limit, int | float):
        text += f", within the allowed {format_percent(float(limit))}"
    parts.append(text)
    changed = [
        f"{c} by {lv} level{'s' if int(lv) != 1 else ''}"
        for c, lv in transformation.items()
        if int(lv) > 0
    ]
    kept = [c for c, lv in transformation.items() if int(lv) == 0]
    if changed:
        sentence = "the values were coarsened: " + _names(changed, 12)
        if kept:
            sentence += f"; {_names(kept)} kept as they are"
        parts.append(sentence)
    else:
        parts.append("no attribute had to be generalized")
    classes = release_classes(report)
    if classes is not None:
        parts.append(
            f"the release falls into {format_number(classes)} groups of identical "
            "quasi-identifiers (equivalence classes)"
        )
    losses = report.get("information_loss")
    metric = report.get("metric")
    if isinstance(losses, Mapping) and isinstance(losses.get("precision"), int | float):
        parts.append(
            f"on average {format_percent(float(losses['precision']))} of the way up "
            "each generalization hierarchy was climbed (precision loss "
            f"{format_number(float(losses['precision']))}; 0 is none, 1 is all)"
        )
    elif isinstance(report.get("optimum_loss"), int | float) and metric:
        parts.append(
            f"the information loss ({metric}) is {format_number(float(report['optimum_loss']))}"
        )
    return _sentences(parts)


def apply_summary(report: Mapping[str, Any]) -> str:
    n = int(report["records"])
    suppressed = release_suppressed(report) or 0
    levels = ", ".join(f"{c} at level {lv}" for c, lv in report["transformation"].items())
    source = _data_name(report)
    return _sentences(
        [
            f"A transformation found earlier ({levels}) was applied to {format_number(n)} records"
            + (f" of {source}" if source else ""),
            f"{format_number(suppressed)} records ({format_percent(suppressed / n if n else 0)}) "
            "were suppressed to keep k-anonymity on this table",
        ]
    )


def generic_summary(report: Mapping[str, Any]) -> str:
    """What ran on which file, with the record count when the report has one."""
    command = report.get("command", "?")
    source = _data_name(report)
    text = f"This report describes a run of 'anonlab {command}'"
    if source:
        text += f" on {source}"
    for key in ("records", "n_records", "n"):
        if isinstance(report.get(key), int):
            text += f" ({format_number(report[key])} records)"
            break
    return text + ". The sections below list its settings and every figure it measured."


def em4adom_summary(report: Mapping[str, Any]) -> str:
    """Loss and risk of a microaggregated or evaluated release, in words."""
    from anonlab.htmlreport.sections.microaggregation import find_measures

    measures, _, _ = find_measures(report)
    low = {str(k).lower(): v for k, v in measures.items()}
    parts = [generic_summary(report).split(". ")[0]]
    inputs = report.get("inputs")
    masked = inputs.get("masked") if isinstance(inputs, Mapping) else None
    if isinstance(masked, Mapping) and masked.get("name"):
        parts[0] += f", comparing the masked file {masked['name']} with it"
    columns = report.get("columns")
    k = report.get("k", (report.get("parameters") or {}).get("k"))
    if report.get("command") == "microaggregate" and isinstance(k, int):
        what = (
            f"its {len(columns)} masked columns"
            if isinstance(columns, list) and columns
            else "the masked columns"
        )
        categorical = any(
            isinstance(report.get(c), list) and report[c] for c in ("nominal", "ordinal")
        )
        parts.append(
            f"in every record, {what} were replaced by the values of a group of at "
            f"least {format_number(k)} similar records (the group's mean"
            + (", or its mode or median for categorical columns)" if categorical else ")")
        )
    if isinstance(low.get("il"), int | float):
        parts.append(f"information loss IL is {format_number(float(low['il']))} (0 = nothing lost)")
    elif isinstance(low.get("ilh"), int | float):
        parts.append(
            f"the squared distance of the masked values to the originals is "
            f"{format_percent(float(low['ilh']))} of the data's total spread "
            "(ILh = SSE/SST; 0 = nothing lost)"
        )
    if isinstance(low.get("zil"), int | float):
        text = f"for the categorical columns, the distance ZIL is {format_number(low['zil'])}"
        if isinstance(low.get("zil_percent"), int | float):
            text += f" ({format_number(float(low['zil_percent']))} % of their values)"
        if isinstance(low.get("ilr"), int | float):
            text += f" and their entropy changed by {format_number(float(low['ilr']))} % (ILR)"
        parts.append(text)
    if isinstance(low.get("dr"), int | float):
        parts.append(
            f"disclosure risk DR is {format_number(float(low['dr']))} "
            "(the weighted share of records an intruder could re-link or bound)"
        )
    if isinstance(low.get("score"), int | float):
        parts.append(f"their weighted trade-off score is {format_number(float(low['score']))}")
    return _sentences(parts)


def tradeoff_summary(report: Mapping[str, Any]) -> str:
    """Which k was tried and which was chosen."""
    from anonlab.htmlreport.sections.microaggregation import (
        RU_AXES,
        chosen_setting,
        find_points,
        ru_axes,
    )

    found = find_points(report)
    if found is None:
        return em4adom_summary(report)
    points = found[1]
    ks = [p.get("k") for p in points]
    loss, risk, loss_label, risk_label = ru_axes(points) or RU_AXES[0]
    parts = [
        generic_summary(report).split(". ")[0],
        f"{len(points)} settings of k were tried ({', '.join(show_k(k) for k in ks)}), "
        f"each microaggregated and scored for {loss_label.rsplit(' ', 1)[0]} ({loss}) "
        f"and {risk_label.rsplit(' ', 1)[0]} ({risk})",
    ]
    chosen = chosen_setting(report, points)
    if chosen is not None:
        parts.append(
            f"the chosen setting, k = {show_k(chosen)}, balances the two best (lowest score)"
        )
    return _sentences(parts)


def show_k(k: Any) -> str:
    return format_number(k) if isinstance(k, int | float) else str(k)


def _value(report: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` the report (or its parameters) holds, ignoring case."""
    params = report.get("parameters")
    for where in (report, params if isinstance(params, Mapping) else {}):
        lowered = {str(k).lower(): v for k, v in where.items()}
        for name in names:
            if lowered.get(name.lower()) is not None:
                return lowered[name.lower()]
    return None


def _count(value: Any) -> int | None:
    """A count given as a number or as the length of a list or object."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, list | dict):
        return len(value)
    return None


def _rows(value: Any) -> list[Mapping[str, Any]]:
    """A list of objects, or an object of objects as rows named by their key."""
    if isinstance(value, list):
        return [v for v in value if isinstance(v, Mapping)]
    if isinstance(value, Mapping) and value and all(isinstance(v, Mapping) for v in value.values()):
        return [{"name": k, **v} for k, v in value.items()]
    return []


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _cut_sentence(cut: Mapping[str, Any]) -> str:
    """How each attribute of a fused table is released, in words."""
    full = [str(a) for a, v in cut.items() if v == ["*"]]
    kept = [
        f"{a} {'is released ' if i == 0 else ''}as {format_number(len(v))} "
        + ("intervals" if all(str(x)[:1] in "[(" for x in v) else "values")
        for i, (a, v) in enumerate(
            (a, v) for a, v in cut.items() if isinstance(v, list) and v != ["*"]
        )
    ]
    parts = []
    if kept:
        parts.append(_names(kept, 10))
    if full:
        parts.append(
            _names(full, 10) + (" are" if len(full) > 1 else " is") + " fully generalized ('*')"
        )
    return "in the fused table, " + "; ".join(parts) if parts else ""


def fusion_summary(report: Mapping[str, Any]) -> str:
    """Who fused how many records in how many rounds, and what each template guarantees."""
    from anonlab.htmlreport.sections.fusion import smallest_groups

    providers = _value(report, "providers", "parties")
    n = _count(providers)
    records = report.get("records")
    names = f" ({_names([str(p) for p in providers])})" if isinstance(providers, list) else ""
    size = f" of {format_number(records)} records" if isinstance(records, int) else ""
    private = report.get("private")
    if report.get("command") == "party":
        who = f"this is the report of party {report.get('party', '?')}"
        if report.get("role"):
            who += f" ({report['role']})"
        parts = [
            who + f" in a fusion of the tables of {format_number(n) if n else 'several'} "
            f"providers{names} into one anonymized table{size}"
        ]
    else:
        parts = [
            f"the tables of {format_number(n) if n else 'several'} providers{names} were "
            f"fused into one anonymized table{size}"
        ]
    if private is True:
        parts.append(
            "each round's winner was found by a secure maximum, so no party saw another's scores"
        )
    elif private is False:
        parts.append(
            "all parties ran in one process with a plain maximum (for trying settings; not private)"
        )
    n_rounds = _count(report.get("rounds"))
    if n_rounds is not None:
        parts.append(
            f"starting from fully generalized values, {format_number(n_rounds)} "
            f"round{'s' if n_rounds != 1 else ''} of specialization were made"
        )
    groups = smallest_groups(report)
    if groups:
        held = all(g[2] is None or g[1] >= g[2] for g in groups)
        parts.append(
            f"{'every' if held else 'not every'} anonymity template holds: "
            + "; ".join(
                f"the smallest group over {name} has {format_number(smallest)} records"
                + (f" (k = {format_number(k)})" if k is not None else "")
                for name, smallest, k in groups[:4]
            )
            + (f" and {len(groups) - 4} more" if len(groups) > 4 else "")
        )
    cut = report.get("cut")
    if isinstance(cut, Mapping) and cut:
        parts.append(_cut_sentence(cut))
    return _sentences(parts)


def _weakest_block(report: Mapping[str, Any]) -> tuple[float, int] | None:
    """The smallest P over the blocks and their number: from the per-block figures of an
    internal report, else from the shareable report's ``privacy_summary``."""
    from anonlab.htmlreport.sections.perturbation import privacy_rows

    ps = [float(r["P"]) for r in privacy_rows(report) if _number(r.get("P"))]
    if ps:
        return min(ps), len(ps)
    summary = report.get("privacy_summary")
    if (
        isinstance(summary, Mapping)
        and _number(summary.get("min_P"))
        and _number(summary.get("blocks"))
    ):
        return float(summary["min_P"]), int(summary["blocks"])
    return None


def perturbation_summary(report: Mapping[str, Any]) -> str:
    """The method, its privacy measures, the strongest attack and the clustering kept."""
    from anonlab.htmlreport.sections.perturbation import clustering_scores, strongest_attack

    parts = [generic_summary(report).split(". ")[0]]
    inputs = report.get("inputs")
    released = inputs.get("released") if isinstance(inputs, Mapping) else None
    if isinstance(released, Mapping) and released.get("name"):
        parts[0] += f", attacking its perturbed release {released['name']}"
    method = _value(report, "method")
    columns = _count(_value(report, "columns"))
    if isinstance(method, str) and report.get("command") == "perturb":
        what = f"{format_number(columns)} numeric columns were" if columns else "the columns were"
        parts.append(f"{what} standardized and transformed by '{method}'")
    weakest = _weakest_block(report)
    if weakest is not None:
        low, count = weakest
        parts.append(
            f"the privacy level P = R x S (direction times distance privacy) is "
            f"{format_number(low)} in the weakest of {count} "
            f"block{'s' if count != 1 else ''}"
        )
    attack = strongest_attack(report)
    if attack is not None:
        name, share, column = attack
        parts.append(
            f"the strongest attack tried ({name}"
            + (" records" if name.endswith(" known") else "")
            + f") recovers {format_percent(share)} of the records to {column} of "
            "their values"
        )
    scores = clustering_scores(report)
    if scores:
        low = min(scores.values())
        parts.append(
            "clustering the released data gives "
            + (
                "the same clusters as the original (adjusted Rand index 1)"
                if low >= 1.0 - 1e-12
                else f"clusters agreeing with the original's with an adjusted Rand index of "
                f"at least {format_number(low)} (1 = identical)"
            )
        )
    return _sentences(parts)


SUMMARIES: dict[str, Summarizer] = {
    "generalize": generalize_summary,
    "apply": apply_summary,
    "microaggregate": em4adom_summary,
    "evaluate": em4adom_summary,
    "tradeoff": tradeoff_summary,
    "fuse": fusion_summary,
    "party": fusion_summary,
    "perturb": perturbation_summary,
    "attack": perturbation_summary,
}


def _sentences(parts: list[str]) -> str:
    """Join clauses into sentences, each capitalized and ended by a full stop."""
    return " ".join(p[:1].upper() + p[1:] + "." for p in parts if p)


def risk_summary(report: Mapping[str, Any]) -> str:
    """The release's re-identification risk in words ('' when the report has none).

    Prosecutor risk as ARX defines it: a record's risk is 1 / its class size
    on the attacker's columns. The figures are those of the section the
    report's warnings judge (:func:`anonlab.risk.figures.judged_risk`), so
    the page says what the command line warned of.
    """
    judged = judged_risk(report)
    if judged is None:
        return ""
    risk = judged[1]
    prosecutor = risk.get("prosecutor")
    columns = risk.get("attacker_columns")
    if not isinstance(prosecutor, Mapping) or not isinstance(columns, list):
        return ""
    highest, average = prosecutor.get("highest"), prosecutor.get("average")
    if not isinstance(highest, int | float) or not isinstance(average, int | float):
        return ""
    parts = [
        f"an attacker who knows {_names([str(c) for c in columns])} picks out a record "
        f"with a probability of at most {format_percent(float(highest))}, "
        f"{format_percent(float(average))} on average (prosecutor risk)"
    ]
    sensitive = risk.get("sensitive")
    for name in sensitive if isinstance(sensitive, Mapping) else []:
        records = single_value_records(risk, str(name))
        if records is not None and records > 0:
            parts.append(
                f"{format_number(records)} records lie in classes that all share "
                f"one value of the sensitive attribute {name}, which the attacker "
                "therefore learns"
            )
    return _sentences(parts)


def plain_summary(report: Mapping[str, Any]) -> str:
    """The plain-language paragraph for any report, with its risk sentence when it has one."""
    summarize = SUMMARIES.get(str(report.get("command")), generic_summary)
    try:
        text = summarize(report)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        text = generic_summary(report)
    try:
        risk = risk_summary(report)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        risk = ""
    return f"{text} {risk}" if risk else text
