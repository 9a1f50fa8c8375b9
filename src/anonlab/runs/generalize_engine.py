"""``generalize`` through an engine: the rows stay in pieces, only the frequency set is here.

:func:`run_on_engine` is :func:`anonlab.runs.generalize.run_generalize` when
the settings ask for an engine (``engine = "dask"``, or a folder
``output``). The engine (:mod:`anonlab.engine`) makes the two passes over
the rows: the base frequency set (quasi-identifier tuples, counts, sensitive
histograms), from which the same lattice search runs in this process
(:mod:`anonlab.engine.search_input`), and the release, written by the
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
than the limit may be suppressed (:func:`anonlab.engine.search_input.release_problems`);
its risk section is measured from the engine's frequency set of the released
columns the attacker knows and the sensitive ones (with sampling weights:
those columns read here, dictionary-encoded).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anonlab.database import is_database_url, masked
from anonlab.errors import AnonlabError
from anonlab.outputs import Outputs
from anonlab.progress import ProgressFn
from anonlab.runs.common import RunResult, stage_plot, stage_report

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.engine.base import Engine, ReleasePlan
    from anonlab.engine.output import StagedFolder
    from anonlab.generalize import GeneralizationResult
    from anonlab.hierarchy import Hierarchy
    from anonlab.privacy import Criterion
    from anonlab.runs.generalize import GeneralizeSettings

#: releases up to this many records are read back whole and checked as in memory
IN_MEMORY_ROWS = 2_000_000


def check_engine_settings(settings: GeneralizeSettings) -> None:
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


def open_run_engine(settings: GeneralizeSettings) -> Engine:
    """The engine the settings name, opened (close it)."""
    from anonlab.engine import open_engine

    return open_engine(settings.engine, scheduler=settings.scheduler,
                       workers=settings.workers if settings.engine == "dask" else None,
                       memory_limit=settings.memory_limit)


def run_on_engine(settings: GeneralizeSettings, criteria: Sequence[Criterion],
                  outputs: Outputs, *, progress: ProgressFn | None = None,
                  started: float | None = None) -> RunResult:
    """Generalize on the settings' engine and write everything or nothing (module text)."""
    from anonlab.dataset import without_role
    from anonlab.engine.search_input import check_engine_model, engine_dataset
    from anonlab.engine.table import open_table
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
            checked = _write_and_check(engine, table, settings, outputs, result, dataset.base,
                                       hierarchies, dropped, progress)
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


class _Checked:
    """What the written release gave: the risk keys, the distinct released values, and the
    release read back when it is small."""

    def __init__(self, risk: dict[str, Any], distinct: dict[str, int],
                 release: pd.DataFrame | None) -> None:
        self.risk = risk
        self.distinct = distinct
        self.release = release


def _write_and_check(engine: Engine, table: Any, settings: GeneralizeSettings,
                     outputs: Outputs, result: GeneralizationResult, base: Any,
                     hierarchies: dict[str, Hierarchy], dropped: list[str],
                     progress: ProgressFn | None) -> _Checked:
    """Write the release into its staged folder (a scratch folder without ``output``),
    verify it and measure its risk (module text)."""
    from anonlab.engine.output import StagedFolder
    from anonlab.engine.search_input import released_classes, released_distinct

    plan = result.plan
    assert plan is not None
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
        if result.records <= IN_MEMORY_ROWS:
            release = _check_in_memory(staged.path, settings, result, hierarchies, dropped)
            return _Checked(_risk(release, settings), distinct, release)
        if settings.verify:
            _check_by_frequencies(engine, staged.path, plan, classes, result, settings)
        return _Checked(_risk_of_folder(engine, staged.path, settings, dropped), distinct, None)
    finally:
        if scratch is not None:
            staged.discard()
            scratch.cleanup()


def _risk(release: pd.DataFrame, settings: GeneralizeSettings) -> dict[str, Any]:
    from anonlab.risk.release import release_risk_report

    return release_risk_report(release, settings.sensitive, settings, stacklevel=4)


def _check_in_memory(folder: Path, settings: GeneralizeSettings, result: GeneralizationResult,
                     hierarchies: dict[str, Hierarchy], dropped: list[str]) -> pd.DataFrame:
    """The release read back; with ``verify``, checked against the input read whole."""
    from anonlab.io import read_table
    from anonlab.privacy import max_suppressed
    from anonlab.runs.generalize import ModelCheck, _verify, read_input

    release = read_table(folder)
    if settings.verify:
        original = read_input(settings)
        model = ModelCheck(settings.model_criteria(),
                           max_suppressed(settings.suppression, result.records))
        _verify(original, release, hierarchies, result.transformation, dropped, model)
    return release


def _check_by_frequencies(engine: Engine, folder: Path, plan: ReleasePlan,
                          expected: dict[tuple[str, ...], int], result: GeneralizationResult,
                          settings: GeneralizeSettings) -> None:
    """Check a large release by the engine's frequency set of what was written."""
    from anonlab.engine.search_input import release_problems
    from anonlab.privacy import max_suppressed

    written = engine.frequency_set(folder, list(plan.columns))
    problems = []
    if written.rows != result.records:
        problems.append(f"the release has {written.rows} records, the input {result.records}")
    problems += release_problems(expected, written, result.k,
                                 max_suppressed(settings.suppression, result.records))
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def _risk_of_folder(engine: Engine, folder: Path, settings: GeneralizeSettings,
                    dropped: list[str]) -> dict[str, Any]:
    """The risk keys of a written release too large to read back: from the engine's frequency
    set of the attacker's and the sensitive columns (the same figures as in memory,
    :mod:`anonlab.engine.risk_pass`); with sampling weights, which are summed record by
    record, from those columns read here."""
    from anonlab.engine.table import open_table
    from anonlab.risk.release import release_risk_report

    if settings.weights:
        return _risk(_risk_columns(folder, settings, dropped), settings)
    names = [c for c in open_table(folder).column_names if c not in dropped]
    return release_risk_report(folder, settings.sensitive, settings, stacklevel=4,
                               engine=engine, columns=names)


def _risk_columns(folder: Path, settings: GeneralizeSettings, dropped: list[str]
                  ) -> pd.DataFrame:
    """The released columns the risk section reads (attacker's, sensitive, weights), as
    dictionary-encoded (categorical) columns."""
    import pyarrow.parquet as pq

    from anonlab.engine.table import open_table
    from anonlab.risk.release import attacker_columns

    names = [c for c in open_table(folder).column_names if c not in dropped]
    attacker, _ = attacker_columns(names, settings.sensitive, settings)
    wanted = list(dict.fromkeys([*attacker, *settings.sensitive,
                                 *([settings.weights] if settings.weights else [])]))
    frame: pd.DataFrame = pq.read_table(folder, columns=wanted, read_dictionary=wanted
                                        ).to_pandas()
    return frame
