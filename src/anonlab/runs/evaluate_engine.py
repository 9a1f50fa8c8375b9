"""``evaluate`` through an engine: both tables read piece by piece, never held whole.

:func:`evaluate_on_engine` is :func:`anonlab.runs.microaggregate.run_evaluate`
when the settings ask for an engine (:func:`uses_engine`: ``engine = "dask"``,
or ``block_rows`` given). The passes are
:mod:`anonlab.metrics.evaluate_pieces`'s: the moments and value counts of each
table, then the aligned blocks of both. The measures that are sums over
records are exact (the in-memory figures up to rounding); record linkage and
interval disclosure run within blocks of ``block_rows`` records. The report
is the in-memory one with ``measure_parameters.blocks`` saying which measures
are which, and ``engine`` (its name, the block size and the number of blocks).

Roles as in memory (:func:`anonlab.runs.microaggregate.evaluated_table`): the
names the role settings give are checked against the original's columns
before any pass, the columns they name are left out of ``all-numeric``, and
every column's role is settled once the measured columns are known.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import closing
from typing import TYPE_CHECKING

from anonlab.database import is_database_url
from anonlab.errors import AnonlabError
from anonlab.outputs import Outputs
from anonlab.progress import ProgressFn
from anonlab.runs.common import RunResult, open_run_engine, stage_report
from anonlab.threads import blas_threads

if TYPE_CHECKING:
    from anonlab.dataset import Role
    from anonlab.runs.microaggregate import EvaluateSettings


def uses_engine(settings: EvaluateSettings) -> bool:
    """Whether ``evaluate`` runs on an engine: on Dask, or with ``block_rows`` given."""
    return settings.engine != "numpy" or settings.block_rows is not None


def check_engine_settings(settings: EvaluateSettings) -> None:
    """Refuse, before any work, the sources the engines do not read: a database, an Excel
    sheet, a query."""
    engine = f"engine '{settings.engine}'"
    for name in ("original", "masked"):
        if is_database_url(getattr(settings, name)):
            raise AnonlabError(f"{name}: {engine} reads Parquet and CSV files and folders, not "
                               "a database: export the table to Parquet", parameter=name)
    for name in ("sheet", "table", "query"):
        if getattr(settings, name) is not None:
            raise AnonlabError(f"{name} applies to Excel and database inputs, which {engine} "
                               f"does not read: leave {name} out", parameter=name)


def _roles(columns: Sequence[str], s: EvaluateSettings, measured: Sequence[str],
           other: str | None) -> dict[str, Role]:
    """Every column's role: ``measured`` are the quasi-identifiers, the role settings give the
    rest (:func:`anonlab.dataset.assign_roles`; ``other`` as in the settings)."""
    from anonlab.dataset import assign_roles
    from anonlab.table import ROLE_PARAMETERS

    return assign_roles(columns, qi=measured, identifying=s.identifying, sensitive=s.sensitive,
                        insensitive=s.insensitive, other=other, role_parameters=ROLE_PARAMETERS)


def evaluate_on_engine(s: EvaluateSettings, *, progress: ProgressFn | None,
                       started: float) -> RunResult:
    """:func:`anonlab.runs.microaggregate.run_evaluate` on an engine (module text)."""
    from anonlab.dataset import without_role
    from anonlab.engine.table import open_table
    from anonlab.metrics import evaluate_pieces
    from anonlab.runs.microaggregate import _header, evaluate_roles

    check_engine_settings(s)
    block_rows = s.block_rows if s.block_rows is not None else evaluate_pieces.DEFAULT_BLOCK_ROWS
    others = [*s.identifying, *s.sensitive, *s.insensitive]
    with Outputs({"report": s.report, "html": s.html},
                 inputs=[s.original, s.masked]) as outputs, blas_threads(1), \
            closing(open_run_engine(s)) as engine:
        columns = open_table(s.original, delimiter=s.delimiter).column_names
        _roles(columns, s, [], "insensitive")  # the names alone, before any pass
        result = evaluate_pieces.evaluate_on_engine(
            s.original, s.masked, s.columns, engine=engine, nominal=s.nominal,
            ordinal=s.ordinal, orders=s.orders, lambdas=s.lambda_, tau=s.tau, gamma=s.gamma,
            interval_p=s.p, block_rows=block_rows, workers=s.threads(), delimiter=s.delimiter,
            progress=progress, exclude=others)
        measured = [*result.columns, *result.nominal, *result.ordinal]
        roles = _roles(columns, s, measured, s.other)
        report = _header("evaluate", s, {"original": s.original, "masked": s.masked},
                         outputs.path("report"))
        report.update(result.summary())
        report.update(evaluate_roles(roles, s.other, without_role(columns, measured, others)))
        report["engine"] = {"name": engine.name, "block_rows": block_rows,
                            "blocks": result.parameters["blocks"]["count"]}
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, None, written)
