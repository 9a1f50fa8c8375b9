"""``generalize`` and ``apply`` through an engine: the rows stay in pieces, only the frequency
set is here.

:func:`run_on_engine` is :func:`anonlab.runs.generalize.run_generalize`, and
:func:`apply_on_engine` is :func:`anonlab.runs.generalize.run_apply`, when
the settings ask for an engine (``engine = "dask"``, or a folder
``output``). The engine (:mod:`anonlab.engine`) makes the two passes over
the rows: the base frequency set (quasi-identifier tuples, counts, sensitive
histograms), from which the same lattice search runs in this process
(:mod:`anonlab.lattice.pieces`; ``apply`` re-checks the report's privacy
model at its transformation on it with the code of the in-memory
:func:`anonlab.generalize.apply_levels`), and the release, written by the
engine as partitioned Parquet into a staged folder that
:class:`anonlab.outputs.Outputs` renames onto ``output`` with the report,
HTML page and plot, or removes on any error.

Verification: a release of at most :data:`IN_MEMORY_ROWS` records is read
back (the staged folder, by the one reader) with the input, and checked by
the independent checker exactly as the in-memory path checks its release;
the risk section and the distinct values are measured on it. A larger
release is checked by the engine's frequency set *of the written release*:
its classes and their sizes must be those the search chose, every class but
the suppressed records must have at least ``k`` records, and no more records
than the limit may be suppressed (:func:`anonlab.lattice.pieces.release_problems`);
its risk section is measured from the engine's frequency set of the released
columns the attacker knows and the sensitive ones (with sampling weights,
each class's sum of them counted in the same pass). Both commands share these
steps (:func:`write_and_check`, given a :class:`ReleaseCheck`).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from anonlab.database import is_database_url, masked
from anonlab.errors import AnonlabError
from anonlab.outputs import Outputs
from anonlab.progress import ProgressFn
from anonlab.runs.common import RunResult, open_run_engine, stage_plot, stage_report

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.engine.base import Engine, ReleasePlan
    from anonlab.hierarchy import Hierarchy
    from anonlab.privacy import Criterion
    from anonlab.runs.generalize import ApplySettings, FoundTransformation, GeneralizeSettings
    from anonlab.staging import StagedFolder

    #: the settings of a run that may go through an engine
    EngineRun: TypeAlias = GeneralizeSettings | ApplySettings

#: releases up to this many records are read back whole and checked as in memory
IN_MEMORY_ROWS = 2_000_000


def check_engine_settings(settings: EngineRun) -> None:
    """Refuse, before any work, what the engines do not read or write: a database, an Excel
    sheet, a query; on Dask, a release that is not a folder."""
    from anonlab.runs.generalize import is_folder_output

    engine = f"engine '{settings.engine}'"
    if is_database_url(settings.input):
        raise AnonlabError(f"input '{masked(settings.input)}' is a database: {engine} reads "
                           "Parquet files, folders and globs and CSV files; export the table "
                           "to Parquet, or use engine 'numpy' with a file output",
                           parameter="input")
    for name in ("sheet", "table", "query"):
        if getattr(settings, name, None) is not None:
            raise AnonlabError(f"{name} applies to Excel and database inputs, which {engine} "
                               "does not read: leave it out", parameter=name)
    if settings.output_table is not None or (settings.output is not None
                                             and is_database_url(settings.output)):
        raise AnonlabError(f"{engine} writes the release as a folder of Parquet parts, not a "
                           "database table: give a folder as output", parameter="output")
    if settings.output is not None and not is_folder_output(settings.output):
        raise AnonlabError(f"output '{settings.output}' is a file, but {engine} writes the "
                           "release as a folder of Parquet parts: end output with '/' "
                           f"(e.g. '{Path(settings.output).with_suffix('')}/')",
                           parameter="output")


def run_on_engine(settings: GeneralizeSettings, criteria: Sequence[Criterion],
                  outputs: Outputs, *, progress: ProgressFn | None = None,
                  started: float | None = None) -> RunResult:
    """Generalize on the settings' engine and write everything or nothing (module text)."""
    from anonlab.dataset import without_role
    from anonlab.engine.table import open_table
    from anonlab.lattice.pieces import check_engine_model, engine_dataset
    from anonlab.privacy import max_suppressed
    from anonlab.runs.generalize import (
        generalize_report,
        load_hierarchies,
        roles_report,
        search_dataset,
    )

    started = time.perf_counter() if started is None else started
    check_engine_settings(settings)
    check_engine_model(criteria)
    with outputs:
        hierarchies = load_hierarchies(settings.qi)
        table = open_table(settings.input, delimiter=settings.delimiter)
        with closing(open_run_engine(settings)) as engine:
            dataset = engine_dataset(
                engine, table, hierarchies, identifying=settings.identifying,
                sensitive=settings.sensitive, insensitive=settings.insensitive,
                other=settings.other, source=masked(settings.input), progress=progress)
            result, dropped = search_dataset(dataset, settings, criteria, progress)
            assert result.plan is not None
            expected = ReleaseCheck(
                plan=result.plan, transformation=result.transformation, records=result.records,
                k=result.k, limit=max_suppressed(settings.suppression, result.records),
                criteria=settings.model_criteria(), dropped=dropped,
                sensitive=settings.sensitive, min_levels=settings.min_level,
                max_levels=settings.max_level)
            checked = write_and_check(engine, table, settings, outputs, expected, dataset.base,
                                      hierarchies, progress)
        by_other = without_role(dataset.frame.columns, settings.qi, settings.identifying,
                                settings.sensitive, settings.insensitive)
        report = generalize_report(settings, result, dataset.roles, settings.verify)
        report.update(roles_report(dataset.roles, settings.other, by_other))
        report["distinct_values"] = {
            q.name: {"original": len(q.values), "released": checked.distinct[q.name]}
            for q in dataset.qis}
        report.update(checked.risk)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        stage_plot(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=checked.release, written=written)


@dataclass(frozen=True)
class ReleaseCheck:
    """What an engine's release is written by and checked against.

    ``plan`` is what the engine applies to every row; ``transformation`` the
    levels by quasi-identifier; ``records`` the input's records; ``k`` the
    k-anonymity model's k (``None`` without one); ``limit`` the most records
    that may be suppressed, ``floor(suppression * records)``; ``criteria``
    the privacy model as settings dicts (for the independent checker);
    ``dropped`` the identifying columns; ``sensitive`` the sensitive columns
    the risk section measures; ``min_levels`` and ``max_levels`` the run's
    level bounds, which the released levels must respect.
    """

    plan: ReleasePlan
    transformation: Mapping[str, int]
    records: int
    k: int | None
    limit: int
    criteria: list[dict[str, Any]]
    dropped: list[str]
    sensitive: list[str]
    min_levels: Mapping[str, int] = field(default_factory=dict)
    max_levels: Mapping[str, int] = field(default_factory=dict)


class Checked:
    """What the written release gave: the risk keys, the distinct released values, and the
    release read back when it is small."""

    def __init__(self, risk: dict[str, Any], distinct: dict[str, int],
                 release: pd.DataFrame | None) -> None:
        self.risk = risk
        self.distinct = distinct
        self.release = release


def write_and_check(engine: Engine, table: Any, settings: EngineRun, outputs: Outputs,
                    expected: ReleaseCheck, base: Any, hierarchies: Mapping[str, Hierarchy],
                    progress: ProgressFn | None) -> Checked:
    """Write the release by ``expected.plan`` into its staged folder (a scratch folder
    without ``output``), verify it and measure its risk (module text)."""
    from anonlab.lattice.pieces import released_classes, released_distinct
    from anonlab.staging import StagedFolder

    plan = expected.plan
    scratch: tempfile.TemporaryDirectory[str] | None = None
    if outputs.is_folder("output"):
        staged: StagedFolder = outputs.stage_folder("output")
    else:
        scratch = tempfile.TemporaryDirectory(prefix="anonlab-release-")
        staged = StagedFolder(Path(scratch.name) / "release")
    try:
        engine.write_release(table, plan, staged, progress=progress)
        classes = released_classes(base, plan)
        distinct = released_distinct(classes, plan.columns)
        if expected.records <= IN_MEMORY_ROWS:
            release = _check_in_memory(staged.path, settings, expected, hierarchies)
            return Checked(_risk(release, settings, expected), distinct, release)
        if settings.verify:
            _check_by_frequencies(engine, staged.path, expected, classes)
        return Checked(_risk_of_folder(engine, staged.path, settings, expected), distinct,
                       None)
    finally:
        if scratch is not None:
            staged.discard()
            scratch.cleanup()


def _risk(release: pd.DataFrame, settings: EngineRun, expected: ReleaseCheck
          ) -> dict[str, Any]:
    from anonlab.risk.release import release_risk_report

    return release_risk_report(release, expected.sensitive, settings,
                               qi=list(expected.transformation))


def _check_in_memory(folder: Path, settings: EngineRun, expected: ReleaseCheck,
                     hierarchies: Mapping[str, Hierarchy]) -> pd.DataFrame:
    """The release read back; with ``verify``, checked against the input read whole."""
    from anonlab.io import read_table
    from anonlab.runs.generalize import ModelCheck, _verify, read_input

    release = read_table(folder)
    if settings.verify:
        original = read_input(settings)
        _verify(original, release, hierarchies, expected.transformation, expected.dropped,
                ModelCheck(expected.criteria, expected.limit,
                           min_levels=expected.min_levels, max_levels=expected.max_levels))
    return release


def _check_by_frequencies(engine: Engine, folder: Path, expected: ReleaseCheck,
                          classes: Mapping[tuple[str, ...], int]) -> None:
    """Check a large release by the engine's frequency set of what was written: its
    classes those of ``classes``, every class but the suppressed one of at least ``k``
    records, at most ``limit`` records suppressed, the levels within the run's bounds."""
    from anonlab.lattice.pieces import release_problems
    from anonlab.verify.generalization import check_level_bounds

    written = engine.frequency_set(folder, list(expected.plan.columns))
    problems = check_level_bounds(expected.transformation, expected.min_levels,
                                  expected.max_levels)
    if written.rows != expected.records:
        problems.append(f"the release has {written.rows} records, the input "
                        f"{expected.records}")
    problems += release_problems(classes, written, expected.k, expected.limit)
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def _risk_of_folder(engine: Engine, folder: Path, settings: EngineRun,
                    expected: ReleaseCheck) -> dict[str, Any]:
    """The risk keys of a written release too large to read back: from the engine's frequency
    set of the attacker's and the sensitive columns, with each class's sum of the sampling
    weights when there are some (the same figures as in memory, the weighted ones to
    rounding: :mod:`anonlab.risk.pieces`)."""
    from anonlab.engine.table import open_table
    from anonlab.risk.release import release_risk_report

    names = [c for c in open_table(folder).column_names if c not in expected.dropped]
    return release_risk_report(folder, expected.sensitive, settings,
                               engine=engine, columns=names, qi=list(expected.transformation))


# ---------------------------------------------------------------------------
# apply
# ---------------------------------------------------------------------------


def apply_on_engine(settings: ApplySettings, found: FoundTransformation, outputs: Outputs, *,
                    progress: ProgressFn | None = None, started: float | None = None
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
    from anonlab.dataset import Role
    from anonlab.engine.table import open_table
    from anonlab.generalize import apply_levels, resolve_criteria
    from anonlab.lattice.pieces import check_engine_model
    from anonlab.privacy import max_suppressed
    from anonlab.risk.release import check_risk_columns
    from anonlab.runs.generalize import apply_roles, finish_apply_report, load_unchanged

    started = time.perf_counter() if started is None else started
    check_engine_settings(settings)
    criteria = resolve_criteria(found.criteria)
    check_engine_model(criteria)
    report_in = Path(settings.report_in)
    with outputs:
        hierarchies = load_unchanged(found)
        table = open_table(settings.input, delimiter=settings.delimiter)
        roles, by_other = apply_roles(table.column_names, found, settings.other, report_in)
        named = {role: [c for c, r in roles.items() if r == role] for role in Role}
        check_risk_columns([c for c, r in roles.items() if r != Role.IDENTIFYING],
                           named[Role.SENSITIVE], settings, named[Role.QUASI])
        options = dict(found.metric)
        with closing(open_run_engine(settings)) as engine:
            applied = apply_levels(
                table, hierarchies, found.transformation, criteria, found.suppression,
                identifying=named[Role.IDENTIFYING], sensitive=named[Role.SENSITIVE],
                insensitive=named[Role.INSENSITIVE], metric=str(options.pop("metric")),
                engine=engine, progress=progress, min_levels=found.min_levels,
                max_levels=found.max_levels, **options)
            assert applied.plan is not None  # counted on the engine: a plan, no rows
            records = applied.dataset.n
            expected = ReleaseCheck(
                plan=applied.plan, transformation=found.transformation, records=records,
                k=found.k, limit=max_suppressed(found.suppression, records),
                criteria=found.criteria, dropped=named[Role.IDENTIFYING],
                sensitive=named[Role.SENSITIVE], min_levels=found.min_levels,
                max_levels=found.max_levels)
            checked = write_and_check(engine, table, settings, outputs, expected,
                                      applied.dataset.base, hierarchies, progress)
        distinct = {q.name: {"original": len(q.values), "released": checked.distinct[q.name]}
                    for q in applied.dataset.qis}
        report = finish_apply_report(settings, found, applied, roles, by_other, distinct,
                                     checked.risk, records, started)
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=checked.release, written=written)
