"""The ``generalize --recoding mondrian`` run: Mondrian's partitions (docs/mondrian.md), the
release verified by the independent checker (:mod:`anonlab.verify.recoding`), its risk, and
every output written or none.

The generalize run hands its settings here when ``recoding`` is ``"mondrian"``. The rows
are read in memory, or, with an engine (``engine = "dask"``, a folder output), counted and
written by it, strict or relaxed cuts (:mod:`anonlab.mondrian.pieces`).
"""

from __future__ import annotations

import time
from contextlib import closing
from typing import TYPE_CHECKING, Any

from anonlab.database import masked
from anonlab.errors import AnonlabError
from anonlab.outputs import Outputs
from anonlab.progress import ProgressFn
from anonlab.runs.common import (
    RunResult,
    open_run_engine,
    stage_release,
    stage_report,
)
from anonlab.runs.generalize_settings import GeneralizeSettings
from anonlab.runs.generalize_steps import (
    aggregated_release,
    check_aggregated,
    columns_by_other,
    criteria_files,
    generalize_header,
    generalize_outputs,
    load_hierarchies,
    read_input,
    refuse_aggregate_on_engine,
    report_path,
    roles_report,
    stored_criteria,
    uses_engine,
)

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.dataset import Dataset
    from anonlab.engine.base import Engine
    from anonlab.hierarchy import Hierarchy
    from anonlab.mondrian.method import MondrianResult
    from anonlab.mondrian.pieces import MondrianPlan
    from anonlab.privacy import Criterion


def ordered_columns(settings: GeneralizeSettings) -> list[str]:
    """The quasi-identifiers cut in order: those without a hierarchy file and the numeric
    ones, in the order given."""
    bare = [c for c, p in settings.qi.items() if not p]
    return bare + [c for c in settings.numeric if c not in bare]


def check_mondrian_settings(settings: GeneralizeSettings) -> None:
    """Refuse, in one line, what a Mondrian run does not do: suppression, the full-domain
    search's own settings, aggregated quasi-identifiers on an engine."""
    refuse_aggregate_on_engine(settings)
    if settings.suppression > 0:
        raise AnonlabError(
            "recoding mondrian suppresses no record: leave suppression at 0 (the whole "
            "table must satisfy the model)",
            parameter="suppression",
        )
    for name in ("min_level", "max_level"):
        if getattr(settings, name):
            raise AnonlabError(
                f"{name} bounds the levels of full-domain generalization: Mondrian has no "
                f"levels; leave {name} out",
                parameter=name,
            )
    if settings.alternatives:
        raise AnonlabError(
            "alternatives lists full-domain transformations: Mondrian has none; leave "
            "alternatives out",
            parameter="alternatives",
        )
    if settings.plot:
        raise AnonlabError(
            "plot draws the full-domain class sizes: a Mondrian report has no plot yet; "
            "leave plot out (the report lists the class sizes)",
            parameter="plot",
        )


def run_mondrian(settings: GeneralizeSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Partition a table by Mondrian under its privacy model, verify, measure and write it.

    Steps: check the settings and every output path; build the criteria (a model Mondrian
    cannot judge per partition is refused); load the hierarchies and the table (a
    quasi-identifier without a hierarchy file gets a flat one, only to encode it); give
    every column its role; partition (:func:`anonlab.mondrian.method.mondrian`); stage the
    release and check it with :func:`anonlab.verify.recoding.check_recoding` by re-reading
    it (``settings.verify``); measure its risk as a full-domain release's; stage the report
    and page; rename them all into place. Any error leaves no output behind.
    """
    from anonlab.generalize import model_dataset, resolve_criteria
    from anonlab.mondrian.method import flat_hierarchies, mondrian, refuse_unjudgeable
    from anonlab.privacy import check_k
    from anonlab.risk.release import release_risk_report

    started = time.perf_counter()
    check_mondrian_settings(settings)
    specs = settings.model_criteria()
    files = criteria_files(specs)
    outputs = generalize_outputs(settings, files, folder=uses_engine(settings))
    if settings.k is not None:
        check_k(settings.k)
    criteria = resolve_criteria(specs)
    refuse_unjudgeable(criteria)
    ordered = ordered_columns(settings)
    if uses_engine(settings):
        return run_mondrian_on_engine(settings, criteria, outputs, progress, started)
    with outputs:
        hierarchies = load_hierarchies({c: p for c, p in settings.qi.items() if p})
        frame = read_input(settings, categorical=True)
        bare = [c for c in ordered if c not in hierarchies]
        every = flat_hierarchies(frame, hierarchies, bare)
        dataset = model_dataset(
            frame,
            every,
            criteria,
            roles=settings.roles,
            source=masked(settings.input),
        )
        dropped, qi = released_columns(dataset, settings)
        if progress is not None:
            progress("partitioning", 0, 1)
        result = mondrian(dataset, criteria, ordered=ordered, relaxed=settings.relaxed)
        if progress is not None:
            progress("partitioning", 1, 1)
        original = dataset.frame
        cut_along = {c: h for c, h in hierarchies.items() if c not in ordered}
        labelled = result.release
        release = aggregated_release(labelled, original, qi, settings)

        def check(written: pd.DataFrame) -> None:
            if settings.aggregate_qi:  # the partitions' labels, then each aggregate
                check_aggregated(original, written, labelled, qi, settings)
                written = labelled
            verify_recoding(original, written, specs, cut_along, ordered, dropped)

        as_written = stage_release(
            outputs, release, check if settings.verify else None, categorical=True
        )
        risk = release_risk_report(as_written, settings.sensitive, settings, qi=qi)
        distinct = {
            c: {
                "original": int(original[c].nunique(dropna=False)),
                "released": int(release[c].nunique(dropna=False)),
            }
            for c in qi
        }
        report = full_report(settings, result, hierarchies, dataset, distinct, risk)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=release, written=written)


def released_columns(dataset: Dataset, settings: GeneralizeSettings) -> tuple[list[str], list[str]]:
    """The identifying (dropped) columns and the quasi-identifiers of ``dataset``, once the
    risk section's columns are checked among the released ones."""
    from anonlab.dataset import Role
    from anonlab.risk.release import check_risk_columns

    dropped = dataset.columns_with(Role.IDENTIFYING)
    qi = [q.name for q in dataset.qis]
    released = [c for c in dataset.frame.columns if c not in dropped]
    check_risk_columns(released, settings.sensitive, settings, qi)
    return dropped, qi


def full_report(
    settings: GeneralizeSettings,
    result: MondrianResult,
    hierarchies: dict[str, Hierarchy],
    dataset: Dataset,
    distinct: dict[str, dict[str, int]],
    risk: dict[str, Any],
) -> dict[str, Any]:
    """The report of a Mondrian run but its runtime (docs/mondrian.md, "Report")."""
    roles = dataset.roles
    by_other = columns_by_other(dataset.frame.columns, settings)
    report = mondrian_report(settings, result.summary(), hierarchies)
    report["roles"] = {c: r.value for c, r in roles.items()}
    report["verified"] = settings.verify
    report.update(roles_report(roles, settings.other, by_other))
    report["distinct_values"] = distinct
    report.update(risk)
    return report


def run_mondrian_on_engine(
    settings: GeneralizeSettings,
    criteria: list[Criterion],
    outputs: Outputs,
    progress: ProgressFn | None,
    started: float,
) -> RunResult:
    """Mondrian on the settings' engine (docs/mondrian.md, "Engines"): the engine counts
    the base frequency set (and, for quasi-identifiers without a hierarchy, their values
    first), the cuts run here, one pass over the pieces writes the release as Parquet parts
    (:func:`anonlab.mondrian.pieces.write_piece`); the parts are read back and checked by
    the independent checker against the input, and a file output is gathered from them."""
    from anonlab.engine.table import open_table
    from anonlab.hierarchy import Hierarchy
    from anonlab.lattice.pieces import check_engine_model, engine_dataset
    from anonlab.mondrian.pieces import engine_mondrian
    from anonlab.risk.release import release_risk_report
    from anonlab.runs.generalize_steps import check_engine_settings

    check_engine_settings(settings, file_output=not outputs.is_folder("output"))
    check_engine_model(criteria)
    ordered = ordered_columns(settings)
    with outputs:
        hierarchies = load_hierarchies({c: p for c, p in settings.qi.items() if p})
        table = open_table(settings.input, delimiter=settings.delimiter)
        with closing(open_run_engine(settings)) as engine:
            every: dict[str, Hierarchy] = dict(hierarchies)
            bare = [c for c in ordered if c not in hierarchies]
            if bare:
                encoding = engine.encode(table, bare, progress=progress)
                for name, values in zip(encoding.columns, encoding.dictionaries, strict=True):
                    every[name] = Hierarchy.from_rows(
                        [(v, "*") for v in values], source=f"<{name}: no hierarchy>"
                    )
            dataset = engine_dataset(
                engine,
                table,
                every,
                roles=settings.roles,
                source=masked(settings.input),
                progress=progress,
            )
            dropped, qi = released_columns(dataset, settings)
            result, plan = engine_mondrian(
                dataset,
                criteria,
                ordered=ordered,
                relaxed=settings.relaxed,
                engine=engine,
                table=table,
            )
            release = write_release(
                engine, table, plan, outputs, settings, hierarchies, dropped, progress
            )
        result.release = release
        risk = release_risk_report(release, settings.sensitive, settings, qi=qi)
        distinct = {
            q.name: {
                "original": len(q.values),
                "released": int(release[q.name].nunique(dropna=False)),
            }
            for q in dataset.qis
        }
        report = full_report(settings, result, hierarchies, dataset, distinct, risk)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=release, written=written)


def verify_recoding(
    original: pd.DataFrame,
    release: pd.DataFrame,
    specs: list[dict[str, Any]],
    hierarchies: dict[str, Hierarchy],
    ordered: list[str],
    dropped: list[str],
) -> None:
    """Check a Mondrian release with the independent checker; the first problem is an error."""
    from anonlab.verify.recoding import check_recoding

    problems = check_recoding(original, release, specs, hierarchies, ordered, dropped)
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def mondrian_report(
    settings: GeneralizeSettings, summary: dict[str, Any], hierarchies: dict[str, Hierarchy]
) -> dict[str, Any]:
    """The JSON report's header, settings and Mondrian figures (docs/mondrian.md, "Report")."""
    where = report_path(settings.report)
    report = generalize_header("mondrian", settings)
    report.update(summary)
    report["criteria"] = stored_criteria(summary["criteria"], where, nested=True)
    return report


def write_release(
    engine: Engine,
    table: Any,
    plan: MondrianPlan,
    outputs: Outputs,
    settings: GeneralizeSettings,
    hierarchies: dict[str, Hierarchy],
    dropped: list[str],
    progress: ProgressFn | None,
) -> pd.DataFrame:
    """Write the release by ``plan`` over the engine's pieces into its staged folder (a
    scratch folder for a file output), read it back, check it with the independent checker
    (``settings.verify``) and stage a file output gathered from the parts."""
    from anonlab.io import read_table
    from anonlab.mondrian.pieces import write_parts
    from anonlab.runs.generalize_steps import release_parts

    ordered = ordered_columns(settings)
    with release_parts(outputs) as folder:
        write_parts(engine, table, plan, folder, progress)
        release = read_table(folder, strings="dictionary")
        if settings.verify:
            original = read_input(settings)
            cut_along = {c: h for c, h in hierarchies.items() if c not in ordered}
            verify_recoding(
                original, release, settings.model_criteria(), cut_along, ordered, dropped
            )
    return release
