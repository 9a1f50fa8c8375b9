"""The ``generalize --recoding local`` run: ARX's local recoding (docs/generalization.md,
"Local recoding"), the release verified by the independent checker
(:mod:`anonlab.verify.local`), its risk, and every output written or none.

The generalize run hands its settings here when ``recoding`` is ``"local"``. The rows are read
in memory, or, with an engine (``engine = "dask"``, a folder output), counted and written by
it: the searches run on the engine's base frequency set, each search on the suppressed
records on the base restricted to the suppressed tuples, and one pass over the pieces writes
the release (:mod:`anonlab.lattice.local_pieces`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from anonlab.database import masked
from anonlab.errors import AnonlabError
from anonlab.progress import ProgressFn
from anonlab.runs.common import (
    RunResult,
    is_folder_output,
    open_run_engine,
    stage_release,
    stage_report,
)
from anonlab.runs.generalize_settings import GeneralizeSettings
from anonlab.runs.generalize_steps import (
    aggregated_release,
    check_aggregated,
    check_parameters,
    columns_by_other,
    criteria_files,
    generalize_header,
    generalize_outputs,
    load_hierarchies,
    read_input,
    refuse_aggregate_on_engine,
    release_loss,
    report_path,
    roles_report,
    stored_criteria,
    uses_engine,
)

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from anonlab.dataset import Dataset
    from anonlab.engine.table import Table
    from anonlab.hierarchy import Hierarchy
    from anonlab.lattice.local import LocalRecoding
    from anonlab.outputs import Outputs
    from anonlab.privacy import Criterion


def check_local_settings(settings: GeneralizeSettings) -> None:
    """Refuse, in one line, what a local-recoding run does not do: aggregated
    quasi-identifiers on an engine, level bounds, alternatives, the plot and HTML page, a
    heuristic search."""
    refuse_aggregate_on_engine(settings)
    for name in ("min_level", "max_level"):
        if getattr(settings, name):
            raise AnonlabError(
                f"{name} bounds the full-domain search's levels: local recoding searches "
                f"the whole lattice each time; leave {name} out",
                parameter=name,
            )
    if settings.alternatives:
        raise AnonlabError(
            "alternatives lists full-domain transformations: a local recoding has several; "
            "leave alternatives out",
            parameter="alternatives",
        )
    if settings.plot:
        raise AnonlabError(
            "plot draws the full-domain class sizes: a local-recoding report has no plot "
            "yet; leave plot out (the report lists the records of each search)",
            parameter="plot",
        )
    if settings.html:
        raise AnonlabError(
            "html: the HTML page has no local-recoding section yet; leave html out (the "
            "JSON report lists every search)",
            parameter="html",
        )
    if settings.search not in ("flash", "ola", "degree", "exhaustive"):
        raise AnonlabError(
            f"recoding local needs an optimal search (flash, ola, degree or exhaustive), "
            f"as ARX's: not {settings.search}",
            parameter="search",
        )


def run_local(settings: GeneralizeSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Recode a table locally under its privacy model, verify, measure and write it.

    Steps: check the settings and every output path; build the criteria; load the
    hierarchies and the table; give every column its role; recode
    (:func:`anonlab.lattice.local.local_recoding`: the full-domain optimum, then the searches
    on the records still suppressed); stage the release and check it with
    :func:`anonlab.verify.local.check_local_recoding` by re-reading it (``settings.verify``);
    measure its risk; stage the report; rename them all into place. Any error leaves no
    output behind.
    """
    from anonlab.dataset import Role
    from anonlab.generalize import model_dataset, resolve_criteria
    from anonlab.lattice.local import local_release
    from anonlab.privacy import max_suppressed
    from anonlab.risk.release import release_risk_report

    started = time.perf_counter()
    check_local_settings(settings)
    specs = settings.model_criteria()
    files = criteria_files(specs)
    outputs = generalize_outputs(settings, files, folder=is_folder_output(settings.output))
    check_parameters(settings)
    criteria = resolve_criteria(specs)
    for criterion in criteria:
        if criterion.needs_population:
            raise AnonlabError(
                f"{criterion.name} judges records outside those still suppressed, which ARX "
                "does not recode locally: choose recoding full-domain",
                parameter="recoding",
            )
    if uses_engine(settings):
        return run_local_on_engine(settings, criteria, outputs, progress, started)
    read_options = {"delimiter": settings.delimiter} if settings.delimiter else {}
    with outputs:
        hierarchies = load_hierarchies(settings.qi)
        frame = read_input(settings)
        dataset = model_dataset(
            frame,
            hierarchies,
            criteria,
            roles=settings.roles,
            source=masked(settings.input),
            read_options=read_options,
        )
        result = recode(dataset, criteria, settings, progress)
        labelled = local_release(dataset, result)
        original = dataset.frame
        dropped = dataset.columns_with(Role.IDENTIFYING)
        limit = max_suppressed(settings.suppression, dataset.n)
        qi = [q.name for q in dataset.qis]
        release = aggregated_release(labelled, original, qi, settings)

        def check(written: pd.DataFrame) -> None:
            if settings.aggregate_qi:  # the searches' labels, then each aggregate
                check_aggregated(original, written, labelled, qi, settings)
                written = labelled
            verify_local(original, written, specs, hierarchies, limit, dropped)

        as_written = stage_release(outputs, release, check if settings.verify else None)
        risk = release_risk_report(as_written, settings.sensitive, settings, qi=qi)
        recoded = labelled if settings.aggregate_qi else as_written  # loss before aggregates
        report = run_report(settings, hierarchies, dataset, result, original, recoded, risk)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=release, written=written)


def run_local_on_engine(
    settings: GeneralizeSettings,
    criteria: list[Criterion],
    outputs: Outputs,
    progress: ProgressFn | None,
    started: float,
) -> RunResult:
    """Local recoding on the settings' engine (module text): the engine counts the base
    frequency set, the searches run on it, one pass over the pieces writes the release as
    Parquet parts (:func:`anonlab.lattice.local_pieces.write_parts`); the parts are read back
    and checked by the independent checker against the input, and a file output is gathered
    from them. The report is the in-memory run's."""
    from anonlab.dataset import Role
    from anonlab.engine.table import open_table
    from anonlab.io import read_table
    from anonlab.lattice.pieces import check_engine_model
    from anonlab.privacy import max_suppressed
    from anonlab.risk.release import release_risk_report
    from anonlab.runs.generalize_steps import check_engine_settings, release_parts

    check_engine_settings(settings, file_output=not outputs.is_folder("output"))
    check_engine_model(criteria)
    specs = settings.model_criteria()
    with outputs:
        hierarchies = load_hierarchies(settings.qi)
        table = open_table(settings.input, delimiter=settings.delimiter)
        with release_parts(outputs) as folder:
            dataset, result = _recode_on_engine(
                settings, criteria, table, hierarchies, folder, progress
            )
            dropped = dataset.columns_with(Role.IDENTIFYING)
            release = read_table(folder)
            original = read_input(settings)
            if settings.verify:
                limit = max_suppressed(settings.suppression, dataset.n)
                verify_local(original, release, specs, hierarchies, limit, dropped)
        qi = [q.name for q in dataset.qis]
        risk = release_risk_report(release, settings.sensitive, settings, qi=qi)
        report = run_report(settings, hierarchies, dataset, result, original, release, risk)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=release, written=written)


def run_report(
    settings: GeneralizeSettings,
    hierarchies: dict[str, Hierarchy],
    dataset: Dataset,
    result: LocalRecoding,
    original: pd.DataFrame,
    recoded: pd.DataFrame,
    risk: dict[str, Any],
) -> dict[str, Any]:
    """The report of a local-recoding run, in memory or on an engine alike: the settings,
    the searches' summary, roles, the loss of ``recoded`` (the release before any aggregate)
    and the risk section (the caller adds the run time)."""
    qi = [q.name for q in dataset.qis]
    by_other = columns_by_other(original.columns, settings)
    report = local_report(settings, hierarchies)
    report.update(result.summary(qi))
    report.update(
        records=dataset.n,
        metric=settings.metric,
        suppression_limit=settings.suppression,
        roles={c: r.value for c, r in dataset.roles.items()},
        verified=settings.verify,
        loss=release_loss(recoded, original, hierarchies, qi),
    )
    report.update(roles_report(dataset.roles, settings.other, by_other))
    report.update(risk)
    return report


def recode(
    dataset: Dataset,
    criteria: list[Criterion],
    settings: GeneralizeSettings,
    progress: ProgressFn | None,
) -> LocalRecoding:
    """ARX's local recoding of ``dataset`` with the settings' parameters (in memory or on an
    engine's frequency set alike), reported as one progress step."""
    from anonlab.lattice.local import local_recoding

    result = local_recoding(
        dataset,
        criteria,
        settings.suppression,
        str(settings.metric),
        gs_factor=settings.gs_factor,
        aggregate=settings.aggregate,
        weights=settings.attribute_weights or None,
        search=settings.search,
        local_gs_factor=settings.local_gs_factor,
        iterations=settings.local_iterations,
        adaption=settings.local_adaption,
    )
    if progress is not None:
        progress("recoding locally", 1, 1)  # one step: the searches report nothing
    return result


def verify_local(
    original: pd.DataFrame,
    release: pd.DataFrame,
    specs: list[dict[str, Any]],
    hierarchies: dict[str, Hierarchy],
    limit: int,
    dropped: list[str],
) -> None:
    """Check a local-recoding release with the independent checker; the first problem is an
    error."""
    from anonlab.verify.local import check_local_recoding

    problems = check_local_recoding(original, release, specs, hierarchies, limit, dropped)
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def _recode_on_engine(
    settings: GeneralizeSettings,
    criteria: list[Criterion],
    table: Table,
    hierarchies: dict[str, Hierarchy],
    folder: Path,
    progress: ProgressFn | None,
) -> tuple[Dataset, LocalRecoding]:
    """The engine's base frequency set as a rowless dataset, the local recoding on it, and
    its release written by one pass over the pieces into ``folder``."""
    from contextlib import closing

    from anonlab.dataset import Role
    from anonlab.lattice.local_pieces import local_plan, write_parts
    from anonlab.lattice.pieces import engine_dataset

    with closing(open_run_engine(settings)) as engine:
        dataset = engine_dataset(
            engine,
            table,
            hierarchies,
            roles=settings.roles,
            source=masked(settings.input),
            progress=progress,
        )
        result = recode(dataset, criteria, settings, progress)
        plan = local_plan(dataset, result, tuple(dataset.columns_with(Role.IDENTIFYING)))
        write_parts(engine, table, plan, folder, dataset.n, progress)
    return dataset, result


def local_report(settings: GeneralizeSettings, hierarchies: dict[str, Hierarchy]) -> dict[str, Any]:
    """The JSON report's header and settings (docs/generalization.md, "Local recoding")."""
    where = report_path(settings.report)
    report = generalize_header("local-recoding", settings)
    report["hierarchy_heights"] = {c: h.height for c, h in hierarchies.items()}
    # the models as a full-domain report lists them, so that `anonlab verify` re-checks each
    entries = [
        {"model": spec["model"], "parameters": {k: v for k, v in spec.items() if k != "model"}}
        for spec in settings.model_criteria()
    ]
    report["criteria"] = stored_criteria(entries, where, nested=True)
    return report
