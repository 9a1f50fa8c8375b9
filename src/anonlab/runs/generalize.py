"""The ``generalize`` run: search the optimal generalization, build the release, verify it
with the independent checker, measure its risk, write everything or nothing.

Its settings are in :mod:`anonlab.runs.generalize_settings`, the steps it shares with
the ``apply`` run (:mod:`anonlab.runs.apply`) in :mod:`anonlab.runs.generalize_steps`; the
hierarchy builders' runs are in :mod:`anonlab.runs.hierarchy`.

The run reads its settings (a pydantic model, see :mod:`anonlab.settings`), checks every
output path before any work, reads the table through :func:`anonlab.io.read_table` (or,
with an engine, in pieces: the engine makes the base frequency set, the search runs
here, and the engine writes the release as Parquet parts), verifies the release by
re-reading what was staged, and writes release, JSON report, HTML page and plot together
through :class:`anonlab.outputs.Outputs`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import closing
from typing import TYPE_CHECKING, Any

from anonlab.database import masked
from anonlab.errors import present
from anonlab.memory import untune_for_pieces
from anonlab.outputs import Outputs
from anonlab.progress import ProgressFn
from anonlab.runs.common import (
    RunResult,
    open_run_engine,
    reads_urls,
    stage_plot,
    stage_release,
    stage_report,
)
from anonlab.runs.generalize_settings import GeneralizeSettings
from anonlab.runs.generalize_steps import (
    ModelCheck,
    ReleaseCheck,
    aggregated_release,
    check_engine_settings,
    check_parameters,
    columns_by_other,
    criteria_files,
    distinct_values,
    file_through_engine,
    generalize_header,
    generalize_outputs,
    load_hierarchies,
    population_table,
    qi_roles,
    read_input,
    refuse_aggregate_on_engine,
    release_loss,
    report_path,
    roles_report,
    searched_qi,
    stored_criteria,
    uses_engine,
    verify_release,
    write_and_check,
)

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.dataset import Dataset, Role
    from anonlab.generalize import GeneralizationResult
    from anonlab.privacy import Criterion


def search_dataset(
    dataset: Dataset,
    settings: GeneralizeSettings,
    criteria: Sequence[Criterion],
    progress: ProgressFn | None,
) -> tuple[GeneralizationResult, list[str]]:
    """The search the settings ask for on ``dataset`` (rows here or in an engine), and the
    identifying columns the release drops; the risk section's columns are checked first."""
    from anonlab.dataset import Role
    from anonlab.generalize import anonymize
    from anonlab.risk.release import check_risk_columns

    dropped = dataset.columns_with(Role.IDENTIFYING)
    check_risk_columns(
        [c for c in dataset.frame.columns if c not in dropped],
        settings.sensitive,
        settings,
        list(settings.qi),
    )
    result = anonymize(
        dataset,
        None,
        settings.suppression,
        settings.search,
        str(settings.metric),
        progress=progress,
        criteria=criteria,
        gs_factor=settings.gs_factor,
        aggregate=settings.aggregate,
        weights=settings.attribute_weights,
        targets=settings.targets,
        static_loss=settings.static_loss,
        practical_monotonicity=settings.practical_monotonicity,
        min_levels=settings.min_level,
        max_levels=settings.max_level,
        alternatives=settings.alternatives,
        time_limit=settings.time_limit,
        step_limit=settings.step_limit,
        heuristic_threshold=settings.heuristic_threshold,
        genetic=settings.genetic,
    )
    return result, dropped


@reads_urls
def run_generalize(
    settings: GeneralizeSettings, *, progress: ProgressFn | None = None
) -> RunResult:
    """Generalize a table under its privacy model with an optimal lattice search, and write it.

    Steps: check every output path; build the privacy model's criteria
    (:meth:`GeneralizeSettings.model_criteria`); load the hierarchies and the
    table; give every column its role (a column without one is refused, see
    :func:`anonlab.dataset.assign_roles`); with delta-presence or inclusion the
    table is the population and the research subset is what is released; search
    (``progress("searching the lattice", checked, lattice_size)``); stage the
    release and verify it (``settings.verify``) by re-reading it; measure the
    risk of the release as written
    (:func:`anonlab.risk.release.release_risk_report`: each risk issues a
    :class:`~anonlab.errors.ReleaseRiskWarning`, or with ``fail_on_risk`` a
    :class:`~anonlab.errors.ReleaseRiskError`); stage the JSON report, HTML
    page and plot; rename them all into place. Any error leaves no output
    behind. Returns the report, the release and the files written.
    """
    from anonlab.generalize import model_dataset, resolve_criteria
    from anonlab.privacy import max_suppressed
    from anonlab.risk.release import release_risk_report

    if settings.recoding == "mondrian":  # docs/mondrian.md
        from anonlab.runs.mondrian import run_mondrian

        return run_mondrian(settings, progress=progress)
    if settings.recoding == "local":  # docs/generalization.md, "Local recoding"
        from anonlab.runs.local import run_local

        return run_local(settings, progress=progress)
    started = time.perf_counter()
    specs = settings.model_criteria()
    files = criteria_files(specs)
    on_engine = uses_engine(settings)
    outputs = generalize_outputs(settings, files, folder=on_engine)
    check_parameters(settings)
    refuse_aggregate_on_engine(settings)
    criteria = resolve_criteria(specs)
    if on_engine:
        return run_on_engine(settings, criteria, outputs, progress=progress, started=started)
    if file_through_engine(settings, criteria):
        untune_for_pieces()
        return run_on_engine(settings, criteria, outputs, progress=progress, started=started)
    read_options = {"delimiter": settings.delimiter} if settings.delimiter else {}
    with outputs:
        searched, _, table_roles = searched_qi(settings)
        hierarchies = load_hierarchies(searched)
        frame = read_input(settings, categorical=True)
        return_free_memory()
        dataset = model_dataset(
            frame,
            hierarchies,
            criteria,
            roles=table_roles,
            source=masked(settings.input),
            read_options=read_options,
        )
        result, dropped = search_dataset(dataset, settings, criteria, progress)
        original, roles, records = dataset.frame, qi_roles(dataset.roles, settings), dataset.n
        del dataset  # the search's codes of the rows are not needed again: freed here
        return_free_memory()
        model = ModelCheck(
            specs,
            max_suppressed(settings.suppression, records),
            population_table(criteria, frame, read_options),
            settings.min_level,
            settings.max_level,
            settings.aggregate_qi,
            settings.aggregate_missing,
        )

        def check(release: pd.DataFrame) -> None:
            verify_release(original, release, hierarchies, result.transformation, dropped, model)

        labelled = present(result.release, "the release built in memory")
        release = aggregated_release(labelled, original, list(result.transformation), settings)
        as_written = stage_release(
            outputs, release, check if settings.verify else None, categorical=True
        )
        return_free_memory()
        verified = settings.verify
        risk = release_risk_report(as_written, settings.sensitive, settings, qi=list(settings.qi))
        by_other = columns_by_other(original.columns, settings)
        report = generalize_report(settings, result, roles, verified)
        report.update(roles_report(roles, settings.other, by_other))
        report["distinct_values"] = distinct_values(original, release, result.transformation)
        report["loss"] = release_loss(  # of the generalization, before any aggregate
            labelled if settings.aggregate_qi else as_written,
            original,
            hierarchies,
            list(result.transformation),
            result.transformation,
        )
        report.update(risk)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        stage_plot(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=release, written=written)


def return_free_memory() -> None:
    """Give the memory freed by a finished step back to the system.

    The search's frequency sets and the reader's blocks are freed when a step
    ends, but the C allocator (glibc's heap) and Arrow's pool keep such memory
    for reuse, so the process would stay at the step's peak for the rest of the
    run (Adult x33: about 130 MiB after the search). ``malloc_trim`` returns
    glibc's free pages (where the C library has it); Arrow's pool returns its own.
    """
    import ctypes
    import ctypes.util

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


def generalize_report(
    settings: GeneralizeSettings,
    result: GeneralizationResult,
    roles: Mapping[str, Role],
    verified: bool,
) -> dict[str, Any]:
    """The JSON report of a generalize run (see docs/generalization.md for each key)."""
    where = report_path(settings.report)
    report = generalize_header("generalize", settings)
    report.update(result.summary())
    report["criteria"] = stored_criteria(result.criteria, where, nested=True)
    report["roles"] = {c: r.value for c, r in roles.items()}
    report["verified"] = verified
    return report


def run_on_engine(
    settings: GeneralizeSettings,
    criteria: Sequence[Criterion],
    outputs: Outputs,
    *,
    progress: ProgressFn | None = None,
    started: float | None = None,
) -> RunResult:
    """Generalize on the settings' engine and write everything or nothing (module text)."""
    from anonlab.engine.table import open_table
    from anonlab.lattice.pieces import check_engine_model, engine_dataset
    from anonlab.metrics.certainty import classes_loss
    from anonlab.privacy import max_suppressed

    started = time.perf_counter() if started is None else started
    check_engine_settings(settings, file_output=not outputs.is_folder("output"))
    check_engine_model(criteria)
    with outputs:
        searched, _, table_roles = searched_qi(settings)
        hierarchies = load_hierarchies(searched)
        table = open_table(settings.input, delimiter=settings.delimiter)
        with closing(open_run_engine(settings)) as engine:
            dataset = engine_dataset(
                engine,
                table,
                hierarchies,
                roles=table_roles,
                source=masked(settings.input),
                progress=progress,
            )
            result, dropped = search_dataset(dataset, settings, criteria, progress)
            expected = ReleaseCheck(
                plan=present(result.plan, "the release plan counted on the engine"),
                transformation=result.transformation,
                records=result.records,
                k=result.k,
                limit=max_suppressed(settings.suppression, result.records),
                criteria=settings.model_criteria(),
                dropped=dropped,
                sensitive=settings.sensitive,
                min_levels=settings.min_level,
                max_levels=settings.max_level,
                aggregate_qi=settings.aggregate_qi,
                aggregate_missing=settings.aggregate_missing,
            )
            checked = write_and_check(
                engine, table, settings, outputs, expected, dataset.base, hierarchies, progress
            )
        by_other = columns_by_other(dataset.frame.columns, settings)
        roles = qi_roles(dataset.roles, settings)
        report = generalize_report(settings, result, roles, settings.verify)
        report.update(roles_report(roles, settings.other, by_other))
        report["distinct_values"] = {
            q.name: {"original": len(q.values), "released": checked.distinct[q.name]}
            for q in dataset.qis
        }
        if settings.aggregate_qi and checked.release is not None:  # as in memory
            report["distinct_values"] = distinct_values(
                read_input(settings), checked.release, result.transformation
            )
        report["loss"] = classes_loss(
            checked.classes,
            list(expected.plan.columns),
            {q.name: [str(v) for v in q.values] for q in dataset.qis},
            hierarchies,
            result.transformation,
        )
        report.update(checked.risk)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        stage_plot(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=checked.release, written=written)
