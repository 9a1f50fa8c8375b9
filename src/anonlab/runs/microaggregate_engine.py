"""``microaggregate`` through an engine: MDAV's scalable variant by regions, the release a folder.

:func:`microaggregate_on_engine` is :func:`anonlab.runs.microaggregate.run_microaggregate`
when the settings ask for an engine (``engine = "dask"``, a folder ``output``
ending in ``/``, or a Dask DataFrame ``input``). Only the scalable variant
runs there, on numeric columns: exact MDAV compares every record with every
other (O(n^2)) and the nominal and ordinal distances need the whole table's
categories; both are refused with one line.

The passes (:mod:`anonlab.microaggregation.pieces`): the moments of the masked
columns, a sample for the regions' planes (more than ``region_rows`` rows
only), the rows routed to their regions, and one task per region writing its
part of the release into the folder staged by :class:`anonlab.outputs.Outputs`,
which renames it onto ``output`` with the report and the page, or removes it
on any error.

Which columns are masked (``columns = "all-numeric"``) and every column's
role are decided as in memory (:func:`anonlab.runs.microaggregate.masked_table`)
on the first rows of the table.

Verification: a release of at most :data:`IN_MEMORY_ROWS` records is read
back whole with the input, put in the input's order (each region returns its
rows' places, which must be every row once) and checked by the independent
checker as in memory; its risk section is measured on it. A larger release is
checked region by region in the regions' tasks (groups never cross a region:
each region's part, read back, against the region's original rows), and its
risk section is measured from the engine's frequency set of the written
release (:mod:`anonlab.risk.pieces`).
"""

from __future__ import annotations

import os
import time
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from anonlab.database import is_database_url
from anonlab.errors import AnonlabError
from anonlab.outputs import Outputs
from anonlab.progress import ProgressFn
from anonlab.runs.common import RunResult, open_run_engine
from anonlab.threads import blas_threads

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.engine.table import Table
    from anonlab.microaggregation.pieces import RegionsResult
    from anonlab.runs.microaggregate import MicroaggregateSettings
    from anonlab.table import MicrodataTable

#: releases up to this many records are read back whole and checked as in memory
IN_MEMORY_ROWS = 2_000_000
#: rows of the table's head that decide the columns' roles
HEAD_ROWS = 1_000


def uses_engine(settings: MicroaggregateSettings) -> bool:
    """Whether the run goes through an engine: on Dask, with a folder ``output``, or with a
    Dask DataFrame as ``input`` (the settings take a path or a Dask DataFrame). The usual
    in-memory run, a file output, is told without importing the engines."""
    output = settings.output
    if settings.engine != "numpy" or not isinstance(settings.input, str):
        return True
    if not output:
        return False
    if not output.endswith(("/", os.sep)) and not Path(output).is_dir():
        return False
    from anonlab.runs.perturb import is_folder_output

    return is_folder_output(output)


def check_engine_settings(s: MicroaggregateSettings) -> None:
    """Refuse, before any work, what the engine path does not do."""
    from anonlab.runs.perturb import is_folder_output

    engine = f"engine '{s.engine}'"
    if s.variant != "scalable":
        raise AnonlabError(f"variant '{s.variant}' runs in memory only (exact MDAV compares "
                           f"every record with every other): use variant 'scalable' on "
                           f"{engine}, or a file output in memory", parameter="variant")
    for name in ("nominal", "ordinal"):
        if getattr(s, name):
            raise AnonlabError(f"{name} columns are masked in memory only: {engine} masks "
                               f"numeric columns; leave {name} out or use a file output",
                               parameter=name)
    if isinstance(s.input, str) and is_database_url(s.input):
        raise AnonlabError(f"input: {engine} reads Parquet and CSV files, folders and "
                           "DataFrames, not a database: export the table to Parquet",
                           parameter="input")
    for name in ("sheet", "table", "query", "output_table"):
        if getattr(s, name) is not None:
            raise AnonlabError(f"{name} applies to Excel and database tables, which {engine} "
                               f"does not read or write: leave {name} out", parameter=name)
    if s.region_rows < 2 * s.k:
        raise AnonlabError(f"region_rows must be at least 2k = {2 * s.k} (got {s.region_rows})",
                           parameter="region_rows")
    if not is_folder_output(s.output):
        raise AnonlabError(f"output: {engine} writes the release as a folder of Parquet parts: "
                           "give output as a folder path ending in '/'", parameter="output")


def head_table(table: Table, s: MicroaggregateSettings) -> MicrodataTable:
    """The table model of the first :data:`HEAD_ROWS` rows: the masked columns and every
    column's role, decided as in memory (constant columns are judged on all rows later)."""
    from anonlab.table import ROLE_PARAMETERS, MicrodataTable
    from anonlab.tabletext import to_frame

    if table.dask_frame is not None:
        frame: pd.DataFrame = table.dask_frame.head(HEAD_ROWS, npartitions=-1)
    elif table.pieces:
        first = next(iter(table.pieces[0].batches(list(table.column_names), HEAD_ROWS)), None)
        frame = to_frame(first) if first is not None else _empty(table)
    else:
        frame = _empty(table)
    return MicrodataTable.from_frame(
        frame, s.columns, identifying=s.identifying, sensitive=s.sensitive,
        insensitive=s.insensitive, other=s.other, role_parameters=ROLE_PARAMETERS,
        allow_constant=True)


def _empty(table: Table) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(columns=list(table.column_names))


def _summary(s: MicroaggregateSettings, numeric: list[str], result: RegionsResult
             ) -> dict[str, Any]:
    """The report keys of :meth:`MicroaggregationResult.summary`, from the regions' figures."""
    counts = result.size_counts
    sizes = np.flatnonzero(counts)
    return {
        "method": "MDAV",
        "variant": s.variant,
        "k": s.k,
        "records": result.summary.rows,
        "columns": numeric,
        "nominal": [],
        "ordinal": [],
        "groups": int(counts.sum()),
        "group_sizes": {"min": int(sizes.min()), "max": int(sizes.max()),
                        "count_by_size": {str(int(c)): int(counts[c]) for c in sizes}},
        "measures": {"ILh": result.sse / result.sst},
        "block_size": s.block_size,
    }


def _parameters(report: dict[str, Any], s: MicroaggregateSettings) -> None:
    """A Dask DataFrame input recorded by what it is, not by its value."""
    from anonlab.runs.perturb import is_dask_frame

    if is_dask_frame(s.input):
        report["parameters"]["input"] = "a Dask DataFrame"


def microaggregate_on_engine(s: MicroaggregateSettings, *, progress: ProgressFn | None,
                             started: float) -> RunResult:
    """:func:`anonlab.runs.microaggregate.run_microaggregate` on an engine (module text)."""
    from anonlab.dataset import Role, roles_report
    from anonlab.engine.table import open_table
    from anonlab.microaggregation.columns import check_k
    from anonlab.microaggregation.pieces import microaggregate_regions
    from anonlab.risk.release import check_risk_columns, release_risk_report
    from anonlab.runs.microaggregate import _header
    from anonlab.runs.perturb import _file_of

    check_engine_settings(s)
    source = _file_of(s.input)
    with Outputs({"output": s.output, "report": s.report, "html": s.html},
                 inputs=[source, *s.sensitive_hierarchies.values()],
                 folders=("output",)) as outputs, blas_threads(1), \
            closing(open_run_engine(s)) as engine:
        table = open_table(s.input, delimiter=s.delimiter)
        head = head_table(table, s)
        numeric = list(head.numeric_names)
        dropped = head.columns_with(Role.IDENTIFYING)
        keep = [c for c in table.column_names if c not in dropped]
        check_risk_columns(keep, s.sensitive, s)
        moments = engine.moments(table, numeric, progress=progress)
        moments.check_z_scores()
        check_k(s.k, moments.count)
        if s.block_size < 2 * s.k:
            raise AnonlabError(f"block_size must be at least 2k = {2 * s.k}, got {s.block_size}",
                               parameter="block_size")
        small = moments.count <= IN_MEMORY_ROWS
        result = microaggregate_regions(
            engine, table, numeric, keep, rows=moments.count, mean=moments.mean,
            std=moments.std, k=s.k, block_size=s.block_size, region_rows=s.region_rows,
            output=outputs.stage_folder("output"), workers=s.threads(),
            keep_order=small and s.verify, check_regions=not small and s.verify,
            progress=progress)
        folder = outputs.staged_folder("output")
        assert folder is not None
        inputs = {**({"data": source} if source is not None else {}),
                  **{f"hierarchy:{c}": p for c, p in s.sensitive_hierarchies.items()}}
        report = _header("microaggregate", s, inputs, outputs.path("report"))
        _parameters(report, s)
        report.update(_summary(s, numeric, result))
        released = _verified(s, folder, result, numeric, dropped) if small else None
        if result.problems:
            raise AnonlabError(f"verification failed, nothing written: {result.problems[0]}")
        report["verified"] = s.verify
        report["engine"] = {"name": engine.name, "regions": len(result.region_rows),
                            "region_rows": s.region_rows,
                            "rows_by_region": list(result.region_rows),
                            "parts": result.summary.parts,
                            "checked": ("whole release" if small else "region by region")
                            if s.verify else None}
        report.update(roles_report(head.roles, s.other, head.by_other))
        if released is not None:
            report.update(release_risk_report(released, s.sensitive, s))
        else:
            report.update(release_risk_report(folder, s.sensitive, s, engine=engine,
                                              columns=keep))
        report["runtime_seconds"] = time.perf_counter() - started
        _stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, None, written)


def _stage_report(outputs: Outputs, report: dict[str, Any]) -> None:
    from anonlab.runs.common import stage_report

    stage_report(outputs, report)


def _verified(s: MicroaggregateSettings, folder: Path, result: RegionsResult,
              numeric: list[str], dropped: list[str]) -> pd.DataFrame:
    """The release as written, read back whole; with ``verify``, checked against the input
    in the input's order by the independent checker (refused, nothing written, when a check
    fails)."""
    from anonlab.io import read_table
    from anonlab.runs.microaggregate import _read
    from anonlab.runs.perturb import is_dask_frame
    from anonlab.verify.microaggregation import check_microaggregation

    released: pd.DataFrame = read_table(folder, dtype=str, strings="arrow", doubles=numeric)
    if not s.verify:
        return released
    places = result.table_rows()
    n = sum(result.piece_rows)
    if places.size != n or np.any(np.bincount(places, minlength=n) != 1):
        raise AnonlabError("verification failed, nothing written: the release does not hold "
                           "every record of the input once")
    original = s.input.compute() if is_dask_frame(s.input) else _read(s.input, s)
    original = original.drop(columns=[c for c in original.columns if str(c) in dropped])
    original = original.iloc[places].reset_index(drop=True)
    problems = check_microaggregation(original, released, s.k, numeric=numeric)
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")
    return released
