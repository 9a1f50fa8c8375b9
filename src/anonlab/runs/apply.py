"""The ``apply`` run: the transformation of an earlier ``generalize`` report applied to
another table, its privacy model checked again, in memory or through an engine.

Reports store input paths relative to the report's folder (absolute without a report)
and say so under ``"paths"``; :func:`run_apply` reads them back with
:func:`anonlab.runs.common.resolve_stored_path`, so it works from any folder.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anonlab.errors import AnonlabError, present
from anonlab.outputs import Outputs, output_target
from anonlab.paths import PathLike
from anonlab.progress import ProgressFn
from anonlab.risk.release import risk_last
from anonlab.runs.common import (
    RunResult,
    file_of,
    input_tables,
    open_run_engine,
    paths_convention,
    reads_urls,
    resolve_stored_path,
    stage_release,
    stage_report,
    stored_path,
)
from anonlab.runs.generalize_settings import DEFAULT_GS_FACTOR, ApplySettings
from anonlab.runs.generalize_steps import (
    ModelCheck,
    ReleaseCheck,
    check_engine_settings,
    criteria_files,
    distinct_values,
    found_metric_parameters,
    load_hierarchies,
    population_table,
    read_input,
    report_path,
    roles_report,
    stored_criteria,
    uses_engine,
    verify_release,
    write_and_check,
)

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.dataset import Role
    from anonlab.generalize import AppliedTransformation
    from anonlab.hierarchy import Hierarchy


@dataclass(frozen=True)
class FoundTransformation:
    """What ``apply`` takes from an earlier generalize report."""

    transformation: dict[str, int]
    hierarchies: dict[str, Path]  # quasi-identifier -> hierarchy file, usable from here
    sha256: dict[str, str | None]  # quasi-identifier -> the hierarchy's digest then
    k: int | None  # the k-anonymity criterion's k, None without one
    suppression: float
    identifying: list[str]
    sensitive: list[str]
    roles: dict[str, str] = field(default_factory=dict)  # column -> role, as the report gave
    #: the privacy model as settings dicts, file parameters usable from here
    criteria: list[dict[str, Any]] = field(default_factory=list)
    #: the metric and its options (they order the classes a risk threshold suppresses)
    metric: dict[str, Any] = field(default_factory=dict)
    #: the run's level bounds (quasi-identifier -> level; empty: none)
    min_levels: dict[str, int] = field(default_factory=dict)
    max_levels: dict[str, int] = field(default_factory=dict)
    #: the report's list of best transformations (``alternatives``), each with its levels
    alternatives: list[dict[str, Any]] = field(default_factory=list)
    #: the report's ``aggregate_qi`` (column -> function) and its missing-value rule
    aggregate_qi: dict[str, str] = field(default_factory=dict)
    aggregate_missing: str = "ignore"
    #: quasi-identifiers the report gave no hierarchy (aggregated in the others' classes)
    unclustered: list[str] = field(default_factory=list)


def _found_roles(
    old: Mapping[str, Any], params: Mapping[str, Any], report_in: Path
) -> dict[str, str]:
    """The role of every column the earlier report names.

    A report records ``roles``; one of an earlier version did not, and then
    the columns its parameters name (qi, identifying, sensitive,
    insensitive) are the ones it knows.
    """
    from anonlab.dataset import Role

    stored = old.get("roles")
    if isinstance(stored, Mapping):
        roles = {str(c): str(r) for c, r in stored.items()}
    else:
        roles = {str(c): Role.QUASI.value for c in dict(params["qi"])}
        for role in (Role.IDENTIFYING, Role.SENSITIVE, Role.INSENSITIVE):
            roles.update({str(c): role.value for c in params.get(role.value) or []})
    known = {r.value for r in Role}
    odd = [c for c, r in roles.items() if r not in known]
    if odd:
        raise AnonlabError(
            f"report '{report_in}' gives column '{odd[0]}' the unknown role "
            f"'{roles[odd[0]]}': give a report written by anonlab generalize",
            parameter="report_in",
        )
    return roles


def _found_criteria(
    old: Mapping[str, Any], params: Mapping[str, Any], report_in: Path, paths: Any
) -> list[dict[str, Any]]:
    """The privacy model of an earlier report, as settings dicts with usable file paths.

    A report lists its ``criteria`` (each ``{"model", "parameters", ...}``);
    one of an earlier version had k-anonymity only, with ``k`` among its
    parameters.
    """
    from anonlab.privacy.spec import normalize_criterion, path_parameters

    entries = old.get("criteria")
    if not isinstance(entries, list):
        return [normalize_criterion({"model": "k-anonymity", "k": int(params["k"])})]
    specs = []
    for entry in entries:
        spec = normalize_criterion({"model": entry["model"], **dict(entry["parameters"])})
        for key, path in path_parameters(spec).items():
            found = resolve_stored_path(path, report_in, paths)
            if not found.exists():
                raise AnonlabError(
                    f"file '{path}' of model '{spec['model']}', named in report "
                    f"'{report_in}', is not at '{found}': put the files where "
                    "the report says",
                    parameter="report_in",
                )
            spec[key] = str(found)
        specs.append(spec)
    return specs


def read_found_transformation(report_in: Path) -> FoundTransformation:
    """The transformation, hierarchies and privacy model of an earlier generalize report.

    Hierarchy paths (and the files the criteria name) are resolved as the
    report stored them (relative to its folder, or absolute), so the report
    works from any folder.
    """
    from anonlab.io import read_json

    old = read_json(report_in)
    try:
        params = old["parameters"]
        transformation = {str(c): int(v) for c, v in old["transformation"].items()}
        stored = {str(c): str(p) for c, p in dict(params["qi"]).items()}
        suppression = float(params["suppression"])
        inputs = old.get("inputs") or {}
        paths = old.get("paths")
        criteria = _found_criteria(old, params, report_in, paths)
        metric = {
            "metric": str(old.get("metric") or params.get("metric") or "precision"),
            "gs_factor": float(params.get("gs_factor", DEFAULT_GS_FACTOR)),
            "aggregate": params.get("aggregate"),
            "weights": {
                str(c): float(w) for c, w in dict(params.get("attribute_weights") or {}).items()
            },
            "practical_monotonicity": bool(params.get("practical_monotonicity", False)),
            **found_metric_parameters(params),
        }
        bounds = {
            name: {str(c): int(v) for c, v in dict(params.get(name) or {}).items()}
            for name in ("min_level", "max_level")
        }
        alternatives = [
            {
                "node": int(a["node"]),
                "levels": {str(c): int(v) for c, v in dict(a["levels"]).items()},
            }
            for a in old.get("alternatives") or []
        ]
        aggregate_qi = {str(c): str(f) for c, f in dict(params.get("aggregate_qi") or {}).items()}
        aggregate_missing = str(params.get("aggregate_missing") or "ignore")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AnonlabError(
            f"'{report_in}' is not a generalize report (missing {exc}): give the JSON report "
            "of a generalize run",
            parameter="report_in",
        ) from None
    unclustered = [c for c, p in stored.items() if not p]
    if aggregate_qi:
        from anonlab.generalize_aggregate import check_aggregate_qi

        check_aggregate_qi(aggregate_qi, stored, aggregate_missing)
    stored = {c: p for c, p in stored.items() if p}
    hierarchies: dict[str, Path] = {}
    for column, path in stored.items():
        found = resolve_stored_path(path, report_in, paths)
        if not found.is_file():
            raise AnonlabError(
                f"hierarchy '{path}' of '{column}', named in report '{report_in}', is not at "
                f"'{found}': put the hierarchy files where the report says"
            )
        hierarchies[column] = found
    digests = {c: (inputs.get(f"hierarchy:{c}") or {}).get("sha256") for c in stored}
    k_models = [int(c["k"]) for c in criteria if c["model"] == "k-anonymity"]
    return FoundTransformation(
        transformation=transformation,
        hierarchies=hierarchies,
        sha256=digests,
        k=k_models[0] if k_models else None,
        suppression=suppression,
        identifying=list(params.get("identifying") or []),
        sensitive=list(params.get("sensitive") or []),
        roles=_found_roles(old, params, report_in),
        criteria=criteria,
        metric=metric,
        min_levels=bounds["min_level"],
        max_levels=bounds["max_level"],
        alternatives=alternatives,
        aggregate_qi=aggregate_qi,
        aggregate_missing=aggregate_missing,
        unclustered=unclustered,
    )


def choose_transformation(
    settings: ApplySettings, found: FoundTransformation
) -> FoundTransformation:
    """The transformation an apply run releases: the report's, or the one ``levels`` or
    ``node`` chooses (:class:`ApplySettings`), checked against the report's quasi-identifiers
    and level bounds."""
    import dataclasses

    from anonlab.generalize import check_within_bounds

    chosen = dict(found.transformation)
    if settings.node is not None:
        listed = {a["node"]: a["levels"] for a in found.alternatives}
        if settings.node not in listed:
            numbers = (
                f"it lists 1 to {max(listed)}"
                if listed
                else "it lists none: run generalize with alternatives"
            )
            raise AnonlabError(
                f"node {settings.node} is not in the alternatives of report "
                f"'{settings.report_in}' ({numbers})",
                parameter="node",
            )
        chosen = dict(listed[settings.node])
    for column, level in (settings.levels or {}).items():
        if column not in chosen:
            raise AnonlabError(
                f"levels names '{column}', which is not a quasi-identifier of "
                f"report '{settings.report_in}' (quasi-identifiers: "
                f"{', '.join(chosen)})",
                parameter="levels",
            )
        chosen[column] = level
    check_within_bounds(chosen, found.min_levels, found.max_levels)
    return dataclasses.replace(found, transformation=chosen)


def apply_roles(
    columns: Iterable[str], found: FoundTransformation, other: str | None, report_in: Path
) -> tuple[dict[str, Role], list[str]]:
    """The role of each column of the new table: the earlier report's (apply's one rule).

    The table must hold every column the report gives a role to; a column
    the report does not know is refused (:class:`~anonlab.dataset.RoleError`)
    unless ``other="insensitive"`` releases it as it is. Returns the roles in
    table order and the columns that are insensitive because of ``other``.
    """
    from anonlab.dataset import Role, RoleError

    table = [str(c) for c in columns]
    lacking = [c for c in found.roles if c not in table]
    if lacking:
        raise AnonlabError(
            f"input lacks column{'s' if len(lacking) > 1 else ''} {', '.join(lacking)}, "
            f"which report '{report_in}' gives a role: apply takes a table with the columns "
            "of the generalized one",
            parameter="input",
        )
    new = [c for c in table if c not in found.roles]
    if new and other is None:
        raise RoleError(new, (), source=f"report '{report_in}'")
    roles = {c: Role(found.roles[c]) if c in found.roles else Role.INSENSITIVE for c in table}
    return roles, new


def columns_by_role(roles: Mapping[str, Role], settings: ApplySettings) -> dict[Role, list[str]]:
    """Each role's columns, in table order, once the risk section's columns are checked
    among the released ones (:func:`anonlab.risk.release.check_risk_columns`)."""
    from anonlab.dataset import Role
    from anonlab.risk.release import check_risk_columns

    named = {role: [c for c, r in roles.items() if r == role] for role in Role}
    check_risk_columns(
        [c for c, r in roles.items() if r != Role.IDENTIFYING],
        named[Role.SENSITIVE],
        settings,
        named[Role.QUASI],
    )
    return named


def load_unchanged(found: FoundTransformation) -> dict[str, Hierarchy]:
    """The report's hierarchies, refused when a file changed since the report was made."""
    from anonlab.io import file_sha256

    for column, path in found.hierarchies.items():
        expected = found.sha256.get(column)
        if expected and file_sha256(path) != expected:
            raise AnonlabError(
                f"hierarchy '{path}' of '{column}' changed since the report was "
                "made: use the same hierarchy file"
            )
    return load_hierarchies(found.hierarchies)


@reads_urls
def run_apply(settings: ApplySettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Apply the transformation of an earlier generalize report to another table.

    The columns keep the roles the report gave them (:func:`apply_roles`).
    Every privacy model of the report, with its suppression limit, is
    re-checked on the new table (refused when it does not hold: more records
    would need suppressing, or a population class fails delta-presence); the
    release is verified like a generalize release, its risk measured and
    judged as in :func:`run_generalize`, and release, report and HTML page
    are written together. On an engine (:func:`uses_engine`) the table is
    counted and the release written there
    (:func:`apply_on_engine`); ``progress`` is
    then called as the engine's passes go (``progress(step, done, total)``).
    """
    from anonlab.dataset import Role, Roles
    from anonlab.generalize import apply_levels, resolve_criteria
    from anonlab.privacy import max_suppressed
    from anonlab.risk.release import release_risk_report

    started = time.perf_counter()
    report_in = Path(settings.report_in)
    found = choose_transformation(settings, read_found_transformation(report_in))
    on_engine = uses_engine(settings)
    outputs = Outputs(
        {
            "output": output_target(settings.output, settings.output_table),
            "report": settings.report,
            "html": settings.html,
        },
        inputs=[
            settings.input,
            report_in,
            *found.hierarchies.values(),
            *settings.sensitive_hierarchies.values(),
            *criteria_files(found.criteria).values(),
        ],
        input_tables=input_tables(settings.input, settings.table),
        folders=("output",) if on_engine else (),
    )
    if on_engine:
        return apply_on_engine(settings, found, outputs, progress=progress, started=started)
    read_options = {"delimiter": settings.delimiter} if settings.delimiter else {}
    with outputs:
        hierarchies = load_unchanged(found)
        frame = read_input(settings)
        roles, by_other = apply_roles(frame.columns, found, settings.other, report_in)
        named = columns_by_role(roles, settings)
        criteria = resolve_criteria(found.criteria)
        options = dict(found.metric)
        applied = apply_levels(
            frame,
            hierarchies,
            found.transformation,
            criteria,
            found.suppression,
            roles=Roles.of(
                identifying=named[Role.IDENTIFYING],
                sensitive=named[Role.SENSITIVE],
                insensitive=[*named[Role.INSENSITIVE], *found.unclustered],
            ),
            metric=str(options.pop("metric")),
            read_options=read_options,
            min_levels=found.min_levels,
            max_levels=found.max_levels,
            **options,
        )
        labelled = present(applied.release, "the release built in memory")
        original = applied.dataset.frame
        release = aggregated_release(labelled, original, found)
        model = ModelCheck(
            found.criteria,
            max_suppressed(found.suppression, len(original)),
            population_table(criteria, frame, read_options),
            found.min_levels,
            found.max_levels,
            found.aggregate_qi,
            found.aggregate_missing,
        )

        def check(written: pd.DataFrame) -> None:
            verify_release(
                original, written, hierarchies, found.transformation, named[Role.IDENTIFYING], model
            )

        as_written = stage_release(
            outputs, release, check if settings.verify else None, categorical=True
        )
        risk = release_risk_report(
            as_written, named[Role.SENSITIVE], settings, qi=named[Role.QUASI]
        )
        report = finish_apply_report(
            settings,
            found,
            applied,
            roles,
            by_other,
            distinct_values(original, release, found.transformation),
            risk,
            int(release.shape[0]),
            started,
        )
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=release, written=written)


def aggregated_release(
    labelled: pd.DataFrame, original: pd.DataFrame, found: FoundTransformation
) -> pd.DataFrame:
    """``labelled`` with the report's ``aggregate_qi`` columns replaced by their classes'
    aggregates, as the generalize run made them
    (:func:`anonlab.generalize_aggregate.aggregate_classes`: the same functions and
    missing-value rule, the classes those of the chosen transformation's labels), or as it is.
    """
    if not found.aggregate_qi:
        return labelled
    from anonlab.generalize_aggregate import aggregate_classes

    return aggregate_classes(
        labelled,
        original,
        list(found.transformation),
        found.aggregate_qi,
        missing=found.aggregate_missing,
    )


def finish_apply_report(
    settings: ApplySettings,
    found: FoundTransformation,
    applied: AppliedTransformation,
    roles: Mapping[str, Role],
    by_other: Iterable[str],
    distinct: Mapping[str, Mapping[str, int]],
    risk: Mapping[str, Any],
    records: int,
    started: float,
) -> dict[str, Any]:
    """The whole report of an apply run, in memory or on an engine: :func:`apply_report`,
    the criteria as they hold on the new table, the roles, the distinct values per
    quasi-identifier, the risk keys and the run time since ``started``."""
    report = apply_report(settings, found, applied.suppressed_records, records, settings.verify)
    report["criteria"] = stored_criteria(
        applied.criteria, report_path(settings.report), nested=True
    )
    report.update(roles_report(roles, settings.other, by_other))
    report["distinct_values"] = {c: dict(v) for c, v in distinct.items()}
    report.update(risk)
    report["runtime_seconds"] = time.perf_counter() - started
    return report


def apply_report(
    settings: ApplySettings,
    found: FoundTransformation,
    suppressed: int,
    records: int,
    verified: bool,
) -> dict[str, Any]:
    """The JSON report of an apply run."""
    from anonlab.report import report_header

    where = report_path(settings.report)
    params: dict[str, Any] = {"from_report": stored_path(settings.report_in, where)}
    dumped = settings.model_dump(exclude={"report_in"})
    for name in ("input", "output", "report", "html"):
        dumped[name] = stored_path(dumped[name], where)
    dumped["sensitive_hierarchies"] = {
        c: stored_path(p, where) for c, p in settings.sensitive_hierarchies.items()
    }
    params.update(dumped)
    params.update(
        {
            "k": found.k,
            "suppression": found.suppression,
            "qi": {
                **{c: stored_path(str(p), where) for c, p in found.hierarchies.items()},
                **{c: "" for c in found.unclustered},
            },
            "identifying": found.identifying,
            "sensitive": found.sensitive,
            "criteria": stored_criteria(found.criteria, where, nested=False),
            **{k: v for k, v in found.metric.items() if k != "weights"},
            "attribute_weights": found.metric.get("weights", {}),
            "min_level": found.min_levels,
            "max_level": found.max_levels,
        }
    )
    if found.aggregate_qi:
        params["aggregate_qi"] = dict(found.aggregate_qi)
        params["aggregate_missing"] = found.aggregate_missing
    inputs: dict[str, PathLike | None] = {
        "data": file_of(settings.input),
        "from_report": settings.report_in,
        **{f"hierarchy:{c}": p for c, p in found.hierarchies.items()},
        **{f"hierarchy:{c}": p for c, p in settings.sensitive_hierarchies.items()},
        **criteria_files(found.criteria),
    }
    report = report_header("apply", risk_last(params), inputs)
    report["paths"] = paths_convention(where)
    report.update(
        {
            "transformation": found.transformation,
            "k": found.k,
            "suppression_limit": found.suppression,
            "suppressed_records": suppressed,
            "records": records,
            "verified": verified,
        }
    )
    return report


def apply_on_engine(
    settings: ApplySettings,
    found: FoundTransformation,
    outputs: Outputs,
    *,
    progress: ProgressFn | None = None,
    started: float | None = None,
) -> RunResult:
    """Apply an earlier report's transformation on the settings' engine; write everything
    or nothing.

    The engine counts the new table's base frequency set (with the histograms
    of its sensitive columns); :func:`anonlab.generalize.apply_levels` re-checks
    every privacy model of the report with its suppression limit at the
    report's transformation on it (the in-memory check, on a frequency engine
    built from that base) and gives the suppressed classes; the engine writes
    the release, which is verified and measured as :func:`write_and_check`
    says. A model the engines do not count (a population table) is refused
    before any work.
    """
    from anonlab.dataset import Role, Roles
    from anonlab.engine.table import open_table
    from anonlab.generalize import apply_levels, resolve_criteria
    from anonlab.lattice.pieces import check_engine_model
    from anonlab.privacy import max_suppressed

    started = time.perf_counter() if started is None else started
    if found.aggregate_qi:
        raise AnonlabError(
            f"report '{settings.report_in}' aggregates {', '.join(found.aggregate_qi)} "
            "(aggregate_qi), which runs in memory: the engines do not write aggregates yet; "
            "use engine numpy with a file output",
            parameter="engine",
        )
    check_engine_settings(settings)
    criteria = resolve_criteria(found.criteria)
    check_engine_model(criteria)
    report_in = Path(settings.report_in)
    with outputs:
        hierarchies = load_unchanged(found)
        table = open_table(settings.input, delimiter=settings.delimiter)
        roles, by_other = apply_roles(table.column_names, found, settings.other, report_in)
        named = columns_by_role(roles, settings)
        options = dict(found.metric)
        with closing(open_run_engine(settings)) as engine:
            applied = apply_levels(
                table,
                hierarchies,
                found.transformation,
                criteria,
                found.suppression,
                roles=Roles.of(
                    identifying=named[Role.IDENTIFYING],
                    sensitive=named[Role.SENSITIVE],
                    insensitive=named[Role.INSENSITIVE],
                ),
                metric=str(options.pop("metric")),
                engine=engine,
                progress=progress,
                min_levels=found.min_levels,
                max_levels=found.max_levels,
                **options,
            )
            records = applied.dataset.n
            expected = ReleaseCheck(
                plan=present(applied.plan, "the release plan counted on the engine"),
                transformation=found.transformation,
                records=records,
                k=found.k,
                limit=max_suppressed(found.suppression, records),
                criteria=found.criteria,
                dropped=named[Role.IDENTIFYING],
                sensitive=named[Role.SENSITIVE],
                min_levels=found.min_levels,
                max_levels=found.max_levels,
            )
            checked = write_and_check(
                engine,
                table,
                settings,
                outputs,
                expected,
                applied.dataset.base,
                hierarchies,
                progress,
            )
        distinct = {
            q.name: {"original": len(q.values), "released": checked.distinct[q.name]}
            for q in applied.dataset.qis
        }
        report = finish_apply_report(
            settings, found, applied, roles, by_other, distinct, checked.risk, records, started
        )
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=checked.release, written=written)
