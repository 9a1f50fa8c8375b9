"""The ``risk`` run: measure any table (another tool's release too) and write its JSON report.

:func:`run_risk` reads the table (a file, a database, a DataFrame or a
:class:`~anonlab.table.MicrodataTable`, whose roles give the defaults of
``qi`` and ``sensitive``), gives every column a role (the quasi-identifiers
are the attacker's knowledge, as sdcMicro's ``keyVars`` and ARX's
quasi-identifiers are; a column given no role is refused), measures it with
:func:`~anonlab.risk.measure.measure_risk`, issues a
:class:`~anonlab.errors.ReleaseRiskWarning` for each of
:func:`~anonlab.risk.measure.risk_warnings`, and writes the report through
:class:`~anonlab.outputs.Outputs` (nothing is written when anything fails).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anonlab.dataset import OTHER_ROLES, Role, RoleError
from anonlab.errors import AnonlabError
from anonlab.outputs import Outputs
from anonlab.paths import PathLike, is_url
from anonlab.risk.classes import table_roles
from anonlab.risk.measure import (
    DEFAULT_MAX_RISK,
    DEFAULT_THRESHOLDS,
    measure_risk,
    warn_release_risk,
)
from anonlab.risk.release import KNOWLEDGE_GIVEN, KNOWLEDGE_QI
from anonlab.runs.common import RunResult, paths_convention, stage_report, stored_path
from anonlab.table import MicrodataTable
from anonlab.urls import using_storage_options

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.engine.base import Engine
    from anonlab.engine.table import Table

KNOWLEDGE_DEFAULT = KNOWLEDGE_QI  # the rule of every run that names quasi-identifiers
#: the parameters that give a column of the measured table its role, for the refusal
ROLE_PARAMETERS = ("qi", "sensitive", "insensitive", "weights", "attacker_columns")


class UnroledColumnsError(RoleError):
    """Columns of a measured table given no role: one line naming them and the role options.

    As :class:`~anonlab.dataset.RoleError`, but nothing is released here:
    ``other='insensitive'`` keeps them out of the attacker's knowledge.
    """

    def _text(self, givers: list[str], escape: str) -> str:
        plural = len(self.columns) != 1
        listed = ", ".join(givers[:-1]) + " or " + givers[-1]
        return (
            f"column{'s' if plural else ''} {', '.join(self.columns)} "
            f"{'are' if plural else 'is'} given no role: name {'each' if plural else 'it'} "
            f"in {listed}, or pass {escape} (known to no attacker, not measured)"
        )


def _check_insensitive(
    columns: Sequence[str], insensitive: Sequence[str], named: Sequence[str], other: str | None
) -> None:
    """Insensitive columns exist and have no other role; ``other`` is a known role."""
    if other is not None and other not in OTHER_ROLES:
        raise AnonlabError(
            f"other must be 'insensitive' or not given (got {other!r}): it "
            "makes the columns given no role insensitive",
            parameter="other",
        )
    missing = [c for c in insensitive if c not in columns]
    if missing:
        raise AnonlabError(
            f"insensitive names columns the table does not have: "
            f"{', '.join(missing)} (its columns are: {', '.join(columns)})",
            parameter="insensitive",
        )
    both = [c for c in insensitive if c in named]
    if both:
        raise AnonlabError(
            f"insensitive names {', '.join(both)}, given another role too: give "
            "each column one role",
            parameter="insensitive",
        )


def unroled_columns(columns: Sequence[str], *named: Sequence[str] | str | None) -> list[str]:
    """The columns (in table order) that none of the ``named`` role lists (or names) name."""
    given: set[str] = set()
    for names in named:
        given.update([names] if isinstance(names, str) else names or ())
    return [c for c in columns if c not in given]


def _insensitive(
    table: object,
    columns: Sequence[str],
    insensitive: Sequence[str] | None,
    *named: Sequence[str] | str | None,
) -> list[str]:
    """The insensitive columns: as given; for a table model by default every column the
    other roles leave (its identifying and insensitive ones, and quasi-identifiers this
    attacker does not know), since a table model gives every column a role."""
    if insensitive is None and isinstance(table, MicrodataTable):
        return unroled_columns(columns, *named)
    return [str(c) for c in insensitive or ()]


def _check_every_role(
    columns: Sequence[str], other: str | None, *named: Sequence[str] | str | None
) -> list[str]:
    """The columns given no role, made insensitive by ``other='insensitive'``; without it
    they are refused with one :class:`~anonlab.dataset.RoleError` naming them all."""
    missing = unroled_columns(columns, *named)
    if missing and other is None:
        raise UnroledColumnsError(missing, ROLE_PARAMETERS)
    return missing


def _check_qi(columns: Sequence[str], qi: Sequence[str], sensitive: Sequence[str]) -> None:
    """Quasi-identifiers exist, are named once, and are not sensitive."""
    if not qi:
        raise AnonlabError(
            "qi is empty: name the quasi-identifiers, e.g. qi=['age', 'sex']", parameter="qi"
        )
    missing = [c for c in qi if c not in columns]
    if missing:
        raise AnonlabError(
            f"qi names columns the table does not have: {', '.join(missing)} "
            f"(its columns are: {', '.join(columns)})",
            parameter="qi",
        )
    both = [c for c in qi if c in sensitive]
    if both:
        raise AnonlabError(
            f"qi and sensitive both name {', '.join(both)}: give each column one role",
            parameter="qi",
        )


def _read(
    table: PathLike | pd.DataFrame | MicrodataTable,
    delimiter: str | None,
    read: Mapping[str, str | None] | None = None,
) -> pd.DataFrame:
    """The table as text, by the one reader (a table model's frame as a DataFrame is read);
    ``read`` holds the reader's ``sheet``, ``table`` and ``query`` (those given)."""
    from anonlab.io import read_table

    source = table.frame if isinstance(table, MicrodataTable) else table
    options: dict[str, Any] = {k: v for k, v in (read or {}).items() if v is not None}
    return read_table(source, delimiter=delimiter, **options)


def _roles(
    table: PathLike | pd.DataFrame | MicrodataTable,
    qi: Sequence[str] | None,
    sensitive: Sequence[str] | None,
) -> tuple[list[str], list[str]]:
    """The quasi-identifiers and the sensitive columns: as given, or a table model's."""
    if isinstance(table, MicrodataTable):
        return (
            table_roles(table, qi, Role.QUASI, "qi"),
            table_roles(table, sensitive, Role.SENSITIVE, "sensitive"),
        )
    if qi is None:
        raise AnonlabError(
            "qi is not given: name the quasi-identifiers, e.g. qi=['age', "
            "'sex'], or pass a MicrodataTable (its quasi-identifiers are the "
            "default)",
            parameter="qi",
        )
    return [str(c) for c in qi], [str(c) for c in sensitive or ()]


def _check_engine(
    table: object,
    engine: str,
    scheduler: str | None,
    workers: int | None,
    memory_limit: int | str | None,
) -> bool:
    """Whether the table is measured by an engine's passes; refuses the Dask settings with
    engine 'numpy' (which reads the table whole, in this process)."""
    from anonlab.engine import ENGINES

    if engine not in ENGINES:
        raise AnonlabError(
            f"engine '{engine}' is unknown: choose one of {', '.join(ENGINES)}", parameter="engine"
        )
    if engine == "numpy":
        for name, value in (
            ("scheduler", scheduler),
            ("workers", workers),
            ("memory_limit", memory_limit),
        ):
            if value is not None:
                raise AnonlabError(
                    f"{name} applies to engine 'dask' only: leave it out or set engine = 'dask'",
                    parameter=name,
                )
    if isinstance(table, MicrodataTable) and engine != "numpy":
        raise AnonlabError(
            f"a MicrodataTable is in memory: measure it with engine 'numpy', not '{engine}'",
            parameter="engine",
        )
    return engine != "numpy" or type(table).__module__.startswith("dask.")


def _open(table: object, delimiter: str | None, read: Mapping[str, str | None]) -> Table:
    """The table in pieces, for an engine (:func:`anonlab.engine.open_table`); a database
    table or query, or an Excel sheet, is read by the one reader first."""
    from anonlab.database import is_database_url
    from anonlab.engine import open_table

    if is_database_url(table) or any(v is not None for v in read.values()):
        source: Any = table
        return open_table(_read(source, delimiter, read))
    return open_table(table, delimiter=delimiter)


def _open_engine(
    engine: str, scheduler: str | None, workers: int | None, memory_limit: int | str | None
) -> Engine:
    """The engine named ``engine`` with the run's settings, opened."""
    from anonlab.engine import open_engine

    return open_engine(engine, scheduler=scheduler, workers=workers, memory_limit=memory_limit)


def run_risk(
    table: PathLike | pd.DataFrame | MicrodataTable,
    qi: Sequence[str] | None = None,
    *,
    attacker_columns: Sequence[str] | None = None,
    sensitive: Sequence[str] | None = None,
    insensitive: Sequence[str] | None = None,
    other: str | None = None,
    weights: str | None = None,
    population_size: float | None = None,
    sampling_fraction: float | None = None,
    thresholds: Sequence[float] = (),
    hierarchies: Mapping[str, PathLike] | None = None,
    max_risk: float = DEFAULT_MAX_RISK,
    delimiter: str | None = None,
    sheet: str | None = None,
    table_name: str | None = None,
    query: str | None = None,
    report: PathLike | None = None,
    engine: str = "numpy",
    scheduler: str | None = None,
    workers: int | None = None,
    memory_limit: int | str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> RunResult:
    """Measure the re-identification risk of ``table`` and write the JSON ``report`` if asked.

    ``table`` is a path or URL (read with ``delimiter``; an Excel workbook's
    ``sheet``; a SQLAlchemy URL's table ``table_name`` or SQL ``query``, read
    on a read-only connection as :func:`~anonlab.io.read_table` reads them), a
    DataFrame or a :class:`~anonlab.table.MicrodataTable`; a DataFrame or a table model's
    frame is read as text, as a file is, and the report names no input file.
    A table model's roles give the defaults: ``qi`` its quasi-identifiers,
    ``sensitive`` its sensitive columns; names given as well must have that
    role in it (some of them may be given), a name it gives another role is
    refused with an :class:`AnonlabError` naming the parameter. The report
    equals that of the table's frame with the same ``qi`` and ``sensitive``.
    ``thresholds`` are added to the default 0.2, 0.1 and 0.05.

    The attacker knows the quasi-identifiers ``qi`` and nothing else (the
    keys of sdcMicro's ``keyVars``, ARX's quasi-identifiers), unless
    ``attacker_columns`` names other columns; the report says which. Every
    column of a file or DataFrame needs a role: ``qi``, ``sensitive``,
    ``insensitive`` (neither known to the attacker nor measured), ``weights``
    or ``attacker_columns``; a column given none is refused with one
    :class:`~anonlab.dataset.RoleError` naming them all, unless
    ``other="insensitive"`` makes them insensitive (the report's
    ``roles.other``). A table model gives every column its role. Returns the
    report; a :class:`~anonlab.errors.ReleaseRiskWarning` is issued for each
    warning.

    ``engine = "dask"`` measures a table too large for memory (a Parquet
    file, folder or glob, a CSV file, or a Dask DataFrame) on a Dask cluster:
    the one at ``scheduler``, or a local one of ``workers`` processes of
    ``memory_limit`` each. Only the frequency set of the attacker's columns
    (with per-class counts of the sensitive values) comes back to this
    process, and the ``risk`` section equals the in-memory one
    (:func:`~anonlab.risk.measure.measure_risk`; with ``weights``, summed per
    class in the same pass, to rounding). A Dask DataFrame with
    ``engine = "numpy"`` is read piece by piece in this process, the same way.

    ``table`` and ``report`` may be URLs (``s3://``, ``gs://``, ``memory://``...; see
    :mod:`anonlab.urls`), opened with fsspec's ``storage_options``, which the report
    never holds; a report written to a URL records its paths as given (absolute).
    """
    from anonlab.report import report_header

    started = time.perf_counter()
    target: PathLike | None = report if report is None or is_url(report) else Path(report)
    report_path = target if isinstance(target, Path) else None  # a URL's paths: absolute
    trees = {str(c): Path(p) for c, p in (hierarchies or {}).items()}
    on_engine = _check_engine(table, engine, scheduler, workers, memory_limit)
    read = {"sheet": sheet, "table": table_name, "query": query}
    path = table if isinstance(table, str | os.PathLike) else None
    qi, sensitive = _roles(table, qi, sensitive)
    with (
        using_storage_options(storage_options),
        Outputs(
            {"report": target},
            inputs=[
                p for p in (path, *trees.values()) if p is None or is_url(p) or Path(p).exists()
            ],
        ) as outputs,
    ):
        data: Table | pd.DataFrame
        if on_engine:
            data = _open(table, delimiter, read)
            columns = [str(c) for c in data.column_names]
        else:
            data = _read(table, delimiter, read)
            columns = [str(c) for c in data.columns]
        _check_qi(columns, qi, sensitive)
        named = _insensitive(table, columns, insensitive, qi, sensitive, weights, attacker_columns)
        _check_insensitive(columns, named, [*qi, *sensitive], other)
        by_other = _check_every_role(
            columns, other, qi, sensitive, named, weights, attacker_columns
        )
        given = bool(attacker_columns)
        attacker = list(attacker_columns or ()) if given else list(qi)
        levels = [*DEFAULT_THRESHOLDS, *thresholds]
        with ExitStack() as stack:
            runner: Engine | None = None
            if on_engine:
                runner = _open_engine(engine, scheduler, workers, memory_limit)
                stack.callback(runner.close)
            section = measure_risk(
                data,
                attacker,
                sensitive=sensitive,
                weights=weights,
                population_size=population_size,
                sampling_fraction=sampling_fraction,
                thresholds=levels,
                hierarchies=trees,
                engine=runner,
            )
        messages = warn_release_risk(section, max_risk)
        params: dict[str, Any] = {
            "table": stored_path(path, report_path),
            "qi": list(qi),
            "attacker_columns": attacker if given else None,
            "sensitive": list(sensitive),
            "insensitive": named,
            "other": other,
            "weights": weights,
            "population_size": population_size,
            "sampling_fraction": sampling_fraction,
            "thresholds": [float(t) for t in thresholds],
            "hierarchies": {c: stored_path(p, report_path) for c, p in trees.items()},
            "max_risk": max_risk,
            "delimiter": delimiter,
            "sheet": sheet,
            "table_name": table_name,
            "query": query,
            "report": stored_path(target, report_path),
            "engine": engine,
            "scheduler": scheduler,
            "workers": workers,
            "memory_limit": memory_limit,
        }
        described = path if path is not None and (is_url(path) or Path(path).exists()) else None
        inputs: dict[str, PathLike | None] = {
            "data": described,
            **{f"hierarchy:{c}": p for c, p in trees.items()},
        }
        result = report_header("risk", params, inputs)
        result["paths"] = paths_convention(report_path)
        result["roles"] = {
            "quasi_identifying": list(qi),
            "sensitive": list(sensitive),
            "insensitive": named,
            "weights": weights,
            "other": by_other,
        }
        result["attacker_knowledge"] = KNOWLEDGE_GIVEN if given else KNOWLEDGE_DEFAULT
        result["risk"] = section
        result["warnings"] = messages
        result["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, result)
        written = outputs.commit()
    return RunResult(report=result, written=written)
