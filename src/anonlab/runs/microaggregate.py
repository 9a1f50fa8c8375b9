"""The microaggregation family's runs: ``microaggregate``, ``evaluate`` and ``tradeoff``.

Each run reads its table(s), applies the method, verifies the release
(``microaggregate``), and writes its outputs through one
:class:`anonlab.outputs.Outputs`, so that it writes all of them or none. In
memory (the default: a file output) the tables are read whole through
:func:`anonlab.io.read_table`; on an engine (``engine = "dask"``, a folder
``output`` ending in ``/``, a Dask DataFrame ``input``, or ``evaluate``'s
``block_rows``) they are read piece by piece, and the row-level passes are
the family's (:mod:`anonlab.microaggregation.pieces`,
:mod:`anonlab.metrics.evaluate_pieces`); see "On an engine" below.

- :func:`run_microaggregate`: MDAV (docs/formulas.md §2): groups of k..2k-1 records
  share their numeric mean, nominal mode and ordinal lower median (``method`` onedims,
  pca, rmd, clustpca or influence, an ``aggr`` other than the mean, or ``strata``: sdcMicro's
  other methods on numeric columns, in memory, :mod:`anonlab.microaggregation.methods`); the
  release is staged, re-read from its temporary file and checked by the
  independent checker, its re-identification risk is measured on it (and
  judged: :mod:`anonlab.risk.release`), then report and HTML are staged,
  then all is renamed;
- :func:`run_evaluate`: the EM4ADOM measures of a masked table against its
  original (IL, DR, score; docs/formulas.md §2);
- :func:`run_tradeoff`: MDAV, EM4ADOM and the re-identification risk for
  each k, the lowest score, and the R-U map (DR against IL for each k, and
  the prosecutor risk against IL) as a PNG.

Every column has a role (:func:`masked_table`, the run's
:class:`~anonlab.table.MicrodataTable`, built once): the masked columns
(numeric, nominal, ordinal) are the quasi-identifiers; every other column is
``identifying`` (dropped from the release), ``sensitive`` or ``insensitive``
(released as it is), or ``other="insensitive"`` releases the rest as it is.
``evaluate`` takes the same roles (:func:`evaluated_table`): the measured
columns are the quasi-identifiers, and a column another role names is left
out of ``all-numeric`` and need not be in the masked table (an identifying
column the release dropped). It writes no release, so a column no role names
is only left unmeasured (its ``other`` defaults to ``"insensitive"``).

A TOML file holds the parameters under their Python names (``lambda`` for
the IL weights); relative paths in it are relative to its folder.

On an engine
------------

``microaggregate`` runs MDAV's scalable variant by regions on numeric
columns (:func:`anonlab.microaggregation.pieces.microaggregate_regions`):
the moments of the masked columns, a sample for the regions' planes, the
rows routed to their regions, and one task per region writing its part of
the release into the folder staged by :class:`~anonlab.outputs.Outputs`.
Exact MDAV (it compares every record with every other), nominal and ordinal
columns (their distances need the whole table's categories), a file output
and ``output_table`` are refused with one line, the same from the CLI and
from Python. A database table or query, or a workbook's sheet, which the
engines do not read, is read whole by the one reader, as in memory, and cut
into pieces by the engine (:func:`_engine_source`). Which columns are masked
and every column's role are decided as in memory (:func:`masked_table`) on
the first :data:`HEAD_ROWS` rows. A release of at most :data:`IN_MEMORY_ROWS` records
is read back whole, put in the input's order (each region returns its rows'
places, which must be every row once) and checked by the independent checker
as in memory, and its risk section measured on it; a larger one is checked
region by region in the regions' tasks (groups never cross a region) and its
risk section measured from the engine's frequency set of the written release
(:mod:`anonlab.risk.pieces`).

``method = "onedims"`` (individual ranking, any ``aggr``, ``strata``) runs piece by
piece instead (:func:`_run_onedims_on_engine`,
:mod:`anonlab.microaggregation.onedims`): the pieces' (stratum, value) counts per column,
the sorted columns and their groups' aggregates in this process, and every piece's part of
the release, one part per piece in the input's order: the in-memory release, value for
value. A release of at most :data:`IN_MEMORY_ROWS` records is read back whole, checked
and measured (ILh, risk) as in memory; a larger one is checked column by column and its
risk measured from the engine's frequency set. The other methods (pca, rmd, clustpca,
influence: they order a stratum's records on all columns at once) and MDAV with another
aggregate or strata refuse an engine in one line (:func:`_check_by_method`).

In memory, a table of more than ``region_rows`` records masked by the
scalable variant on numeric columns alone is cut into the same regions
(:func:`_release_by_regions`): the NumPy engine reads the input as a folder
output's run does, so the groups and figures are the folder release's, and
its rows are put back in the input's order before the release is written as
a file (or a database table) and checked as in memory. The engine does not
read a database or a workbook: such a table is given to it as read.

``evaluate`` reads both tables piece by piece
(:func:`anonlab.metrics.evaluate_pieces.evaluate_on_engine`): the measures
that are sums over records are exact (the in-memory figures up to rounding);
record linkage and interval disclosure run within blocks of ``block_rows``
records. The report is the in-memory one with ``measure_parameters.blocks``
saying which measures are which, and ``engine`` (its name, the block size and
the number of blocks). A database or Excel table is read whole, as in memory,
and cut into pieces by the engine.

``tradeoff`` runs in memory only (it has no engine settings).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from pydantic import Field, field_validator, model_validator

from anonlab.errors import AnonlabError
from anonlab.frames import is_dask_frame
from anonlab.metrics.tradeoff import DEFAULT_GAMMA, DEFAULT_TAU
from anonlab.metrics.utility import DEFAULT_LAMBDA
from anonlab.microaggregation.aggregates import Aggregate
from anonlab.microaggregation.methods import RANDOMIZED, Method
from anonlab.microaggregation.scalable import DEFAULT_BLOCK_SIZE, DEFAULT_REGION_ROWS
from anonlab.microaggregation.settings import parse_k_range, parse_weights
from anonlab.outputs import Outputs, output_target
from anonlab.progress import ProgressFn
from anonlab.risk.release import ReleaseRiskSettings, RiskSettings, risk_last
from anonlab.runs.common import (
    EngineSettings,
    ReadSettings,
    RoleSettings,
    RunResult,
    estimated_rows,
    file_of,
    input_tables,
    is_folder_output,
    open_run_engine,
    paths_convention,
    reads_urls,
    stage_plot,
    stage_release,
    stage_report,
    stored_path,
)
from anonlab.settings import Settings, split_names

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.dataset import Role
    from anonlab.microaggregation.pieces import RegionsResult
    from anonlab.table import MicrodataTable

Variant = Literal["exact", "scalable"]
#: on an engine, releases up to this many records are read back whole and checked as in memory
IN_MEMORY_ROWS = 2_000_000
#: on an engine, rows of the table's head that decide the columns' types and roles
HEAD_ROWS = 1_000


# ---------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------


class _Columns(ReadSettings):
    """Which columns are masked or measured, and by which type; the report files."""

    columns: str | list[str] | None = "all-numeric"
    nominal: list[str] = Field(default_factory=list)
    ordinal: list[str] = Field(default_factory=list)
    orders: dict[str, list[str]] = Field(default_factory=dict)
    report: str | None = None
    html: str | None = None

    @field_validator("nominal", "ordinal", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        """``"a,b"`` or ``["a", "b,c"]`` to a list of names."""
        return split_names(value) if isinstance(value, str | list | tuple) else value


class _Workers(Settings):
    """Threads of the numeric kernels (MDAV's BLAS, DLD's nearest neighbours)."""

    workers: int = 1

    @field_validator("workers")
    @classmethod
    def _workers(cls, value: int) -> int:
        if value != -1 and value < 1:
            raise ValueError("must be -1 (every CPU) or at least 1")
        return value


class _Measures(Settings):
    """The EM4ADOM weights and interval sizes (docs/formulas.md §2)."""

    lambda_: list[float] = Field(default_factory=lambda: list(DEFAULT_LAMBDA), alias="lambda")
    tau: list[float] = Field(default_factory=lambda: list(DEFAULT_TAU))
    gamma: list[float] = Field(default_factory=lambda: list(DEFAULT_GAMMA))
    p: str | float | list[float] | None = None

    @model_validator(mode="before")
    @classmethod
    def _python_name_wins(cls, values: Any) -> Any:
        """``lambda_`` (Python) given over a TOML ``lambda``: the Python value wins."""
        if isinstance(values, dict) and "lambda_" in values and "lambda" in values:
            values = {k: v for k, v in values.items() if k != "lambda"}
        return values

    @field_validator("lambda_", "tau", "gamma", mode="before")
    @classmethod
    def _weights(cls, value: Any) -> Any:
        """``"0.5,0,0.5"`` or a list of numbers; the sum is checked by the measures."""
        return parse_weights(value) if isinstance(value, str | list | tuple) else value

    def measure_arguments(self) -> dict[str, Any]:
        """Keyword arguments of :func:`anonlab.metrics.evaluate` (the threads apart)."""
        return {"lambdas": self.lambda_, "tau": self.tau, "gamma": self.gamma, "interval_p": self.p}


class _EngineWorkers(EngineSettings):
    """:class:`EngineSettings` whose ``workers`` keeps, off Dask, its in-process meaning: the
    numeric kernels' threads (MDAV's BLAS, DLD's nearest neighbours; default 1, -1 every
    CPU); with engine ``"dask"`` it counts the local cluster's worker processes."""

    workers: int | None = None

    @field_validator("workers")
    @classmethod
    def _workers(cls, value: int | None) -> int | None:
        if value is not None and value != -1 and value < 1:
            raise ValueError("must be -1 (every CPU) or at least 1")
        return value

    @model_validator(mode="after")
    def _dask_options(self) -> Self:
        """``scheduler`` is Dask's only; ``workers`` -1 is this process's only."""
        if self.engine != "dask" and self.scheduler is not None:
            raise AnonlabError(
                "scheduler applies to engine 'dask' only: set engine = 'dask' "
                "or leave scheduler out",
                parameter="scheduler",
            )
        if self.engine == "dask" and self.workers == -1:
            raise AnonlabError(
                "workers -1 (every CPU) applies in this process only: with "
                "engine 'dask' give a number of worker processes",
                parameter="workers",
            )
        return self

    def threads(self) -> int:
        """The kernels' threads in this process or on the NumPy engine (``workers``, 1 when
        not given); 1 on Dask, where ``workers`` counts processes."""
        return 1 if self.engine == "dask" else (self.workers or 1)


class MicroaggregateSettings(_Columns, _EngineWorkers, RoleSettings, ReleaseRiskSettings):
    """Everything :func:`run_microaggregate` needs.

    ``verify`` re-reads the written release and checks it with the
    independent microaggregation checker before anything is renamed into place.
    The release's risk is measured and judged as
    :class:`~anonlab.risk.release.ReleaseRiskSettings` says. ``engine``,
    ``scheduler`` and ``memory_limit`` are :class:`EngineSettings`'s: on an
    engine (``"dask"``, a folder ``output`` ending in ``/`` or a Dask
    DataFrame ``input``) the scalable variant runs by regions of at most about
    ``region_rows`` records, and so it does in memory on a table of more records
    (module text, "On an engine").
    ``workers`` is MDAV's BLAS threads in this process (default 1; -1: every
    CPU), or with engine ``"dask"`` the local cluster's worker processes.
    ``method`` is sdcMicro's (``mdav``, ``onedims``, ``pca``, ``rmd``, ``clustpca``,
    ``influence``), ``aggr`` what a group releases (``mean``, ``median``, ``trim`` with
    ``trim`` the share cut off each end, ``onestep``), ``strata`` the columns within whose
    values the groups are formed (released as they are: insensitive unless given another
    role), ``seed`` rmd's (drawn when not given; the report keeps it). Any of these but the
    defaults runs in memory on numeric columns (docs/em4adom.md, "Other methods"); method
    ``onedims`` also on an engine, piece by piece (module text, "On an engine").
    """

    path_fields: ClassVar[tuple[str, ...]] = (
        "input",
        "sensitive_hierarchies",
        "output",
        "report",
        "html",
    )

    input: Any
    k: int = Field(default=3, ge=2)
    variant: Variant = "exact"
    block_size: int = Field(default=DEFAULT_BLOCK_SIZE, ge=2)
    region_rows: int = Field(default=DEFAULT_REGION_ROWS, ge=2)
    output: str | None = None
    output_table: str | None = None
    verify: bool = True
    method: Method = "mdav"
    aggr: Aggregate = "mean"
    trim: float = Field(default=0.0, ge=0.0, le=0.5)
    strata: list[str] = Field(default_factory=list)
    seed: int | None = Field(default=None, ge=0)

    @field_validator("strata", mode="before")
    @classmethod
    def _strata(cls, value: Any) -> Any:
        """``"a,b"`` or ``["a", "b,c"]`` to a list of names, each named once."""
        names = split_names(value) if isinstance(value, str | list | tuple) else value
        if isinstance(names, list):
            twice = [name for i, name in enumerate(names) if name in names[:i]]
            if twice:
                raise ValueError(f"column '{twice[0]}' is named twice: list each column once")
        return names

    @field_validator("input", mode="before")
    @classmethod
    def _source(cls, value: Any) -> Any:
        """A path (as text), a SQLAlchemy URL or a Dask DataFrame."""
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if isinstance(value, str) or is_dask_frame(value):
            return value
        raise ValueError("give a file path, a SQLAlchemy URL or a Dask DataFrame")


class EvaluateSettings(_Columns, _EngineWorkers, _Measures, RoleSettings):
    """Everything :func:`run_evaluate` needs (source settings apply to both tables).

    The roles are microaggregate's (:class:`~anonlab.runs.common.RoleSettings`):
    ``identifying``, ``sensitive`` and ``insensitive`` columns are not
    measured and are left out of ``columns="all-numeric"``, so the settings of
    a microaggregate run evaluate its release. ``other`` defaults to
    ``"insensitive"``: nothing is released, a column no role names is only
    not measured (``other=None`` refuses such a column, as a release would).

    ``engine``, ``scheduler`` and ``memory_limit`` are :class:`EngineSettings`'s:
    with engine ``"dask"``, or ``block_rows`` given, both tables are read piece
    by piece on the engine (module text, "On an engine"); record
    linkage and interval disclosure then run within blocks of ``block_rows``
    records (default :data:`anonlab.metrics.evaluate_pieces.DEFAULT_BLOCK_ROWS`).
    ``workers`` is DLD's threads in this process (default 1; -1: every CPU),
    or with engine ``"dask"`` the local cluster's worker processes.
    """

    path_fields: ClassVar[tuple[str, ...]] = ("original", "masked", "report", "html")
    input_fields: ClassVar[tuple[str, ...]] = ("original", "masked")

    original: str
    masked: str
    block_rows: int | None = Field(default=None, ge=2)
    other: Literal["insensitive"] | None = "insensitive"


class TradeoffSettings(_Columns, _Measures, _Workers, RoleSettings, RiskSettings):
    """Everything :func:`run_tradeoff` needs; ``k`` is ``"3-10"``, ``"3,5,10"``, 5 or a list.

    The risk of each k's masked table is measured as
    :class:`~anonlab.risk.release.RiskSettings` says (no warning: a
    trade-off releases nothing).
    """

    path_fields: ClassVar[tuple[str, ...]] = (
        "input",
        "sensitive_hierarchies",
        "report",
        "html",
        "plot",
    )

    input: str
    k: str | int | list[int] = "3-10"
    variant: Variant = "exact"
    block_size: int = Field(default=DEFAULT_BLOCK_SIZE, ge=2)
    plot: str | None = None


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


@reads_urls
def run_microaggregate(
    settings: MicroaggregateSettings, *, progress: ProgressFn | None = None
) -> RunResult:
    """Microaggregate ``settings.input`` by MDAV; write release, report and HTML, or nothing.

    Every column needs a role (:func:`masked_table`); identifying columns are
    dropped. The release is verified, then its risk measured as written
    (:func:`anonlab.risk.release.release_risk_report`: a
    :class:`~anonlab.errors.ReleaseRiskWarning` per risk, or with
    ``fail_on_risk`` a :class:`~anonlab.errors.ReleaseRiskError` and nothing
    written). Without any output path the release is only returned
    (:attr:`RunResult.release`), verified in memory.
    """
    from anonlab.dataset import Role, roles_report
    from anonlab.microaggregation import microaggregate
    from anonlab.risk.release import check_risk_columns, release_risk_report

    s = settings
    started = time.perf_counter()
    seed = s.seed
    if _by_method(s):
        if s.method == "onedims" and _microaggregate_on_engine(s):
            return _run_onedims_on_engine(s, progress=progress, started=started)
        _check_by_method(s)
        if s.method in RANDOMIZED and seed is None:
            seed = _drawn_seed()
    elif _microaggregate_on_engine(s) or _file_through_engine(s):
        return _run_microaggregate_on_engine(s, progress=progress, started=started)
    with Outputs(
        {"output": output_target(s.output, s.output_table), "report": s.report, "html": s.html},
        inputs=[s.input, *s.sensitive_hierarchies.values()],
        input_tables=input_tables(s.input, s.table),
    ) as outputs:
        table = masked_table(_read(s.input, s), s)
        dropped = table.columns_with(Role.IDENTIFYING)
        check_risk_columns([c for c in table.roles if c not in dropped], s.sensitive, s)
        regions: dict[str, Any] | None = None
        if _by_regions(s, table):
            release, summary, regions = _release_by_regions(s, table, dropped, progress)
        else:
            result = microaggregate(
                table,
                k=s.k,
                variant=s.variant,
                block_size=s.block_size,
                workers=s.threads(),
                progress=progress,
                method=s.method,
                aggr=s.aggr,
                trim=s.trim,
                strata=s.strata,
                seed=seed,
            )
            release, summary = result.masked.drop(columns=dropped), result.summary()
        report = _header("microaggregate", s, _inputs(s), outputs.path("report"))
        report.update(summary)
        released = stage_release(outputs, release)
        if s.verify:
            _verify(table.frame.drop(columns=dropped), released, report)
        report["verified"] = s.verify
        if regions is not None:
            report["engine"] = regions
        report.update(roles_report(table.roles, s.other, table.by_other))
        report.update(release_risk_report(released, s.sensitive, s))
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, release, written)


@reads_urls
def run_evaluate(settings: EvaluateSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """The EM4ADOM measures of ``settings.masked`` against ``settings.original``.

    ``progress`` hears of the evaluation's stages (information loss, record
    linkage, interval disclosure).
    """
    from anonlab.metrics import evaluate

    s = settings
    started = time.perf_counter()
    if _evaluate_on_engine(s):
        return _run_evaluate_on_engine(s, progress=progress, started=started)
    with Outputs({"report": s.report, "html": s.html}, inputs=[s.original, s.masked]) as outputs:
        table = evaluated_table(_read(s.original, s), s)
        masked = _read(s.masked, s)
        result = evaluate(
            table, masked, progress=progress, workers=s.threads(), **s.measure_arguments()
        )
        report = _header(
            "evaluate", s, {"original": s.original, "masked": s.masked}, outputs.path("report")
        )
        report.update(result.summary())
        report.update(evaluate_roles(table.roles, s.other, table.by_other))
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, None, written)


@reads_urls
def run_tradeoff(settings: TradeoffSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """MDAV, EM4ADOM and the risk for each k; report, HTML and the R-U map (PNG), or nothing.

    Every column needs a role, as in :func:`run_microaggregate`; each k's
    masked table, without its identifying columns, is measured with
    :func:`anonlab.risk.release.measure_release` (report key
    ``risk_by_k``; each point gets ``prosecutor_highest`` and
    ``prosecutor_average``).
    """
    from anonlab.dataset import Role, roles_report
    from anonlab.microaggregation.sweep import run_tradeoff as sweep
    from anonlab.risk.release import check_risk_columns, measure_release

    s = settings
    started = time.perf_counter()
    k_values = parse_k_range(s.k)  # a bad k is refused before anything is read
    with Outputs(
        {"report": s.report, "html": s.html, "plot": s.plot},
        inputs=[s.input, *s.sensitive_hierarchies.values()],
    ) as outputs:
        table = masked_table(_read(s.input, s), s)
        dropped = table.columns_with(Role.IDENTIFYING)
        check_risk_columns([c for c in table.roles if c not in dropped], s.sensitive, s)
        knowledge: list[str] = []

        def risk(masked: pd.DataFrame) -> dict[str, Any]:
            section, rule = measure_release(masked.drop(columns=dropped), s.sensitive, s)
            knowledge[:] = [rule]
            return section

        result = sweep(
            table,
            k_values,
            variant=s.variant,
            block_size=s.block_size,
            progress=progress,
            risk=risk,
            workers=s.workers,
            **s.measure_arguments(),
        )
        report = _header("tradeoff", s, _inputs(s), outputs.path("report"))
        report.update(result)
        report.update(roles_report(table.roles, s.other, table.by_other))
        report["attacker_knowledge"] = knowledge[0] if knowledge else None
        report["runtime_seconds"] = time.perf_counter() - started
        stage_plot(outputs, report)
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, None, written)


# ---------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------


def masked_table(
    frame: pd.DataFrame,
    settings: MicroaggregateSettings | TradeoffSettings,
    *,
    allow_constant: bool = False,
) -> MicrodataTable:
    """The table model of a run: every column's role, the masked columns encoded.

    The masked columns (numeric, nominal, ordinal) are the quasi-identifiers.
    ``columns="all-numeric"`` picks the numeric columns that no other
    parameter names (so a numeric identifier named ``identifying`` is not
    masked but dropped). Every other column needs a role
    (:func:`anonlab.dataset.assign_roles`).
    """
    from anonlab.table import ROLE_PARAMETERS, MicrodataTable

    s = settings
    roles = s.roles.keywords()
    strata = getattr(s, "strata", [])
    for name in strata:  # released as they are: insensitive unless given a role
        if name not in frame.columns:
            raise AnonlabError(
                f"strata column '{name}' is not in the table: it has "
                + ", ".join(str(c) for c in frame.columns),
                parameter="strata",
            )
        if name in roles["identifying"]:
            raise AnonlabError(
                f"strata column '{name}' is identifying, so dropped from the release: a "
                "stratum is released as it is",
                parameter="strata",
            )
        if name not in [*roles["sensitive"], *roles["insensitive"]]:
            roles["insensitive"] = [*roles["insensitive"], name]
    return MicrodataTable.from_frame(
        frame,
        s.columns,
        nominal=s.nominal,
        ordinal=s.ordinal,
        orders=s.orders,
        **roles,
        role_parameters=ROLE_PARAMETERS,
        allow_constant=allow_constant,
    )


def evaluated_table(frame: pd.DataFrame, settings: EvaluateSettings) -> MicrodataTable:
    """The original of an evaluation as a table model: the measured columns are its QIs.

    As :func:`masked_table`: ``columns="all-numeric"`` picks the numeric
    columns no other parameter names, so an identifying column (dropped by
    the release) is neither measured nor looked for in the masked table.
    """
    from anonlab.table import ROLE_PARAMETERS, MicrodataTable

    s = settings
    return MicrodataTable.from_frame(
        frame,
        s.columns,
        nominal=s.nominal,
        ordinal=s.ordinal,
        orders=s.orders,
        **s.roles.keywords(),
        role_parameters=ROLE_PARAMETERS,
        purpose="evaluate",
        what="original",
    )


def evaluate_roles(
    roles: Mapping[str, Any], other: str | None, by_other: Sequence[str]
) -> dict[str, Any]:
    """The report's role keys of an evaluation: ``roles``, ``other``, ``insensitive_by_other``
    (:func:`anonlab.dataset.roles_report` without ``released_unchanged``: nothing is released).
    """
    from anonlab.dataset import roles_report

    keys = roles_report(roles, other, by_other)
    del keys["released_unchanged"]
    return keys


def _inputs(settings: MicroaggregateSettings | TradeoffSettings) -> dict[str, str]:
    """The input files a report describes: the data and any sensitive attribute's hierarchy."""
    return {
        "data": settings.input,
        **{f"hierarchy:{c}": p for c, p in settings.sensitive_hierarchies.items()},
    }


def _read(source: str, settings: ReadSettings) -> pd.DataFrame:
    """A table through the one reader, with the source settings."""
    from anonlab.io import read_table

    return read_table(source, **settings.read_options())


def _header(
    command: str, settings: Settings, inputs: Mapping[str, str], report_path: Path | None
) -> dict[str, Any]:
    """The report's common fields; every path stored as ``paths`` says."""
    from anonlab.database import is_database_url
    from anonlab.report import report_header

    parameters = settings.model_dump(by_alias=True)
    for name in settings.path_fields:
        value = parameters.get(name)
        if isinstance(value, str):
            parameters[name] = stored_path(value, report_path)
        elif isinstance(value, dict):  # a table of name -> path (sensitive_hierarchies)
            parameters[name] = {k: stored_path(str(v), report_path) for k, v in value.items()}
    files = {key: (None if is_database_url(value) else value) for key, value in inputs.items()}
    report = report_header(command, risk_last(parameters), dict(files))
    report["paths"] = paths_convention(report_path)
    return report


def _verify(original: pd.DataFrame, release: pd.DataFrame, report: Mapping[str, Any]) -> None:
    """Check the release with the independent microaggregation checker; refuse it if it fails.

    The checker (:func:`anonlab.verify.microaggregation.check_microaggregation`)
    shares no code with MDAV: it groups the release by the masked columns and
    checks that every group has at least k records and that its released
    values are the mean (numeric), a mode (nominal) or the lower median
    (ordinal, in the order given or the natural order) of its original values.
    """
    from anonlab.verify.microaggregation import check_microaggregation

    problems = check_microaggregation(
        original,
        release,
        int(report["k"]),
        numeric=report["columns"],
        nominal=report["nominal"],
        ordinal=report["ordinal"],
        orders=report["parameters"]["orders"],
        aggr=report.get("aggr", "mean"),
        trim=float(report.get("trim", 0.0)),
        per_column=bool(report.get("per_column", False)),
        strata=report.get("strata", []),
    )
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def _by_method(s: MicroaggregateSettings) -> bool:
    """Whether the run takes :mod:`anonlab.microaggregation.methods`: another method than
    MDAV, an aggregate other than the mean, or strata."""
    return s.method != "mdav" or s.aggr != "mean" or bool(s.strata)


def _check_by_method(s: MicroaggregateSettings) -> None:
    """Refuse, before any work, what the methods other than MDAV (and aggregates, strata) do
    not do: an engine, a folder output or a Dask DataFrame input, the scalable variant."""
    what = (
        f"method '{s.method}'"
        if s.method != "mdav"
        else (f"aggr '{s.aggr}'" if s.aggr != "mean" else "MDAV within strata")
    )
    if s.engine != "numpy" or is_folder_output(s.output) or not isinstance(s.input, str):
        from anonlab.microaggregation.onedims import WHOLE_STRATUM

        why = (
            f" ({WHOLE_STRATUM}; method 'onedims' runs on the engines)"
            if s.method not in ("mdav", "onedims")
            else ""
        )
        raise AnonlabError(
            f"{what} runs in memory only{why}: leave engine out and give a file input and a "
            "file output (not a folder)",
            parameter="engine" if s.engine != "numpy" else "output",
        )
    if s.variant != "exact":
        raise AnonlabError(
            f"variant '{s.variant}' is MDAV's: {what} runs on the whole table (leave variant out)",
            parameter="variant",
        )


def _drawn_seed() -> int:
    """A fresh seed for a randomized method run without one (the report records it)."""
    import numpy as np

    return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> 1)


# ---------------------------------------------------------------------------
# On an engine (module text)
# ---------------------------------------------------------------------------


def _by_regions(s: MicroaggregateSettings, table: MicrodataTable) -> bool:
    """Whether an in-memory run cuts its table into regions as the NumPy engine does: the
    scalable variant on numeric columns alone and more than ``region_rows`` records."""
    return s.variant == "scalable" and not table.categorical and table.n > s.region_rows


def _engine_reads(source: Any, s: ReadSettings) -> bool:
    """Whether the engine reads ``source`` itself: a Parquet or CSV file or folder, or a Dask
    DataFrame (not a database table or query, nor a workbook's sheet)."""
    from anonlab import urls
    from anonlab.database import is_database_url
    from anonlab.paths import is_url
    from anonlab.sources import file_format

    if not isinstance(source, str):
        return True
    if is_database_url(source) or any(
        getattr(s, name) is not None for name in ("sheet", "table", "query")
    ):
        return False
    if is_url(source):  # a missing URL: the engine's message
        return urls.kind(source) != "file" or file_format(source) != "excel"
    path = Path(source)
    return not path.is_file() or file_format(path) != "excel"  # a missing path: its message


def _engine_source(source: Any, s: ReadSettings) -> Any:
    """What the engine opens: ``source`` itself when it reads it (:func:`_engine_reads`), else
    the table read whole by the one reader, as in memory, for the engine to cut in pieces."""
    return source if _engine_reads(source, s) else _read(source, s)


def _release_by_regions(
    s: MicroaggregateSettings,
    table: MicrodataTable,
    dropped: list[str],
    progress: ProgressFn | None,
) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any]]:
    """The release of an in-memory run by regions (:func:`_by_regions`): the NumPy engine
    reads the input as a folder output's run does, so that it cuts the same regions and
    makes the same groups (a database or workbook table, which the engine does not read, is
    given to it as read); the parts, written into a scratch folder, are read back and put
    in the input's order. Returns the release, its summary keys and the report's
    ``engine`` section."""
    import tempfile

    from anonlab.engine.table import open_table
    from anonlab.io import read_table
    from anonlab.microaggregation.pieces import microaggregate_regions, table_moments
    from anonlab.staging import StagedFolder
    from anonlab.threads import blas_threads

    numeric = list(table.numeric_names)
    _check_block_size(s)
    with (
        tempfile.TemporaryDirectory(prefix="anonlab-regions-") as scratch,
        blas_threads(1),
        closing(open_run_engine(s)) as engine,
    ):
        pieces = open_table(
            s.input if _engine_reads(s.input, s) else table.frame, delimiter=s.delimiter
        )
        keep = [c for c in pieces.column_names if c not in dropped]
        moments = table_moments(engine, pieces, numeric, progress=progress)
        folder = StagedFolder(Path(scratch) / "release")
        result = microaggregate_regions(
            engine,
            pieces,
            numeric,
            keep,
            rows=moments.count,
            mean=moments.mean,
            std=moments.std,
            k=s.k,
            block_size=s.block_size,
            region_rows=s.region_rows,
            output=folder,
            workers=s.threads(),
            keep_order=True,
            progress=progress,
        )
        released: pd.DataFrame = read_table(
            folder.path, dtype=str, strings="arrow", doubles=numeric
        )
    release = _in_input_order(released, result)
    summary = result.report_keys(variant=s.variant, k=s.k, block_size=s.block_size, numeric=numeric)
    return release, summary, _regions_section(engine.name, s, result, "whole release")


def _regions_section(
    engine: str, s: MicroaggregateSettings, result: RegionsResult, checked: str
) -> dict[str, Any]:
    """The report's ``engine`` section of a run by regions: the engine, how the table was
    cut, and how the release was checked (``None`` without ``verify``)."""
    return {
        "name": engine,
        "regions": len(result.region_rows),
        "region_rows": s.region_rows,
        "rows_by_region": list(result.region_rows),
        "parts": result.summary.parts,
        "checked": checked if s.verify else None,
    }


def _check_block_size(s: MicroaggregateSettings) -> None:
    """A block of MDAV's scalable variant holds at least two groups of k."""
    if s.block_size < 2 * s.k:
        raise AnonlabError(
            f"block_size must be at least 2k = {2 * s.k}, got {s.block_size}",
            parameter="block_size",
        )


def _microaggregate_on_engine(settings: MicroaggregateSettings) -> bool:
    """Whether ``microaggregate`` goes through an engine: on Dask, with a folder ``output``,
    or with a Dask DataFrame as ``input`` (the settings take a path or a Dask DataFrame)."""
    return (
        settings.engine != "numpy"
        or not isinstance(settings.input, str)
        or is_folder_output(settings.output)
    )


def _file_through_engine(s: MicroaggregateSettings) -> bool:
    """Whether a run with a file output (or none) reads its input in pieces on the NumPy
    engine, as a folder output's run does: the scalable variant on numeric columns of a CSV
    or Parquet input of more than ``region_rows`` and at most :data:`IN_MEMORY_ROWS` records
    (:func:`anonlab.runs.common.estimated_rows`), the output a CSV or Parquet file. The
    columns' roles are then decided on the head, the release read back, put in the input's
    order and written as the file (the in-memory run's regions gave the same release after
    reading and modelling every row first)."""
    from anonlab.sinks import output_format

    if s.engine != "numpy" or s.variant != "scalable" or s.nominal or s.ordinal:
        return False
    if s.output_table is not None or not _engine_reads(s.input, s):
        return False
    if s.output is not None and output_format(s.output) not in ("csv", "tsv", "parquet"):
        return False
    rows = estimated_rows(s.input, s.delimiter)
    return s.region_rows < rows <= IN_MEMORY_ROWS


def _check_microaggregate_engine(s: MicroaggregateSettings, *, file_output: bool = False) -> None:
    """Refuse, before any work, what ``microaggregate`` does not do on an engine."""
    engine = f"engine '{s.engine}'"
    if s.variant != "scalable":
        raise AnonlabError(
            f"variant '{s.variant}' runs in memory only (exact MDAV compares "
            f"every record with every other): use variant 'scalable' on "
            f"{engine}, or a file output in memory",
            parameter="variant",
        )
    for name in ("nominal", "ordinal"):
        if getattr(s, name):
            raise AnonlabError(
                f"{name} columns are masked in memory only: {engine} masks "
                f"numeric columns; leave {name} out or use a file output",
                parameter=name,
            )
    _refuse_output_table(s)
    if s.region_rows < 2 * s.k:
        raise AnonlabError(
            f"region_rows must be at least 2k = {2 * s.k} (got {s.region_rows})",
            parameter="region_rows",
        )
    if not file_output and not is_folder_output(s.output):
        raise AnonlabError(
            f"output: {engine} writes the release as a folder of Parquet parts: "
            "give output as a folder path ending in '/'",
            parameter="output",
        )


def _head_table(frame: pd.DataFrame, s: MicroaggregateSettings) -> MicrodataTable:
    """The table model of the input's head: the masked (numeric) columns and every column's
    role, decided as in memory (constant columns are judged on all rows later)."""
    from anonlab.table import ROLE_PARAMETERS, MicrodataTable

    return MicrodataTable.from_frame(
        frame,
        s.columns,
        **s.roles.keywords(),
        role_parameters=ROLE_PARAMETERS,
        allow_constant=True,
    )


def _run_microaggregate_on_engine(
    s: MicroaggregateSettings, *, progress: ProgressFn | None, started: float
) -> RunResult:
    """:func:`run_microaggregate` on an engine (module text, "On an engine")."""
    from anonlab.dataset import Role, roles_report
    from anonlab.engine.table import open_table
    from anonlab.microaggregation.pieces import (
        head_frame,
        microaggregate_regions,
        table_moments,
    )
    from anonlab.parameters import check_k
    from anonlab.risk.release import check_risk_columns, release_risk_report
    from anonlab.staging import StagedFolder
    from anonlab.threads import blas_threads

    file_output = not _microaggregate_on_engine(s)
    _check_microaggregate_engine(s, file_output=file_output)
    source = file_of(s.input)
    with (
        Outputs(
            {"output": s.output, "report": s.report, "html": s.html},
            inputs=[source, *s.sensitive_hierarchies.values()],
            folders=() if file_output else ("output",),
        ) as outputs,
        tempfile.TemporaryDirectory(prefix="anonlab-regions-") as scratch,
        blas_threads(1),
        closing(open_run_engine(s)) as engine,
    ):
        table = open_table(_engine_source(s.input, s), delimiter=s.delimiter)
        head = _head_table(head_frame(table, HEAD_ROWS), s)
        numeric = list(head.numeric_names)
        dropped = head.columns_with(Role.IDENTIFYING)
        keep = [c for c in table.column_names if c not in dropped]
        check_risk_columns(keep, s.sensitive, s)
        moments = table_moments(engine, table, numeric, progress=progress)
        check_k(s.k, moments.count)
        _check_block_size(s)
        small = moments.count <= IN_MEMORY_ROWS
        staged = (
            StagedFolder(Path(scratch) / "release")
            if file_output
            else outputs.stage_folder("output")
        )
        result = microaggregate_regions(
            engine,
            table,
            numeric,
            keep,
            rows=moments.count,
            mean=moments.mean,
            std=moments.std,
            k=s.k,
            block_size=s.block_size,
            region_rows=s.region_rows,
            output=staged,
            workers=s.threads(),
            keep_order=small and (s.verify or file_output),
            check_regions=not small and s.verify,
            progress=progress,
        )
        folder = staged.path
        report = _engine_header(s, outputs.path("report"))
        report.update(
            result.report_keys(variant=s.variant, k=s.k, block_size=s.block_size, numeric=numeric)
        )
        released = _read_back(s, folder, result, numeric, dropped, report) if small else None
        if result.problems:
            raise AnonlabError(f"verification failed, nothing written: {result.problems[0]}")
        report["verified"] = s.verify
        report["engine"] = _regions_section(
            engine.name, s, result, "whole release" if small else "region by region"
        )
        report.update(roles_report(head.roles, s.other, head.by_other))
        if released is not None:
            report.update(release_risk_report(released, s.sensitive, s))
        else:
            report.update(release_risk_report(folder, s.sensitive, s, engine=engine, columns=keep))
        if file_output and released is not None:
            released = stage_release(outputs, _in_input_order(released, result))
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, released if file_output else None, written)


def _engine_header(s: MicroaggregateSettings, report_path: Path | None) -> dict[str, Any]:
    """The report's header of a run on an engine: its settings and the files it read (a Dask
    DataFrame input recorded by what it is, not by its value)."""
    inputs = (
        _inputs(s)
        if isinstance(s.input, str)
        else {f"hierarchy:{c}": p for c, p in s.sensitive_hierarchies.items()}
    )
    report = _header("microaggregate", s, inputs, report_path)
    if is_dask_frame(s.input):
        report["parameters"]["input"] = "a Dask DataFrame"
    return report


def _refuse_output_table(s: MicroaggregateSettings) -> None:
    """An engine writes no database table: refuse ``output_table``."""
    if s.output_table is not None:
        raise AnonlabError(
            f"output_table applies to a database output, which engine '{s.engine}' does "
            "not write (it writes a folder of Parquet parts): leave output_table out",
            parameter="output_table",
        )


def _check_onedims_engine(s: MicroaggregateSettings) -> None:
    """Refuse, before any work, what ``onedims`` does not do on an engine (or in memory)."""
    engine = f"engine '{s.engine}'"
    if s.variant != "exact":
        raise AnonlabError(
            f"variant '{s.variant}' is MDAV's: method 'onedims' runs on the whole table "
            "(leave variant out)",
            parameter="variant",
        )
    if s.nominal or s.ordinal:
        raise AnonlabError(
            "nominal and ordinal columns are microaggregated by MDAV with group means only: "
            "leave them out, or use method 'mdav' without aggr and strata",
            parameter="nominal" if s.nominal else "ordinal",
        )
    if s.seed is not None:
        raise AnonlabError(
            "seed applies to method 'rmd' only: method 'onedims' draws no random numbers",
            parameter="seed",
        )
    _refuse_output_table(s)
    if not is_folder_output(s.output):
        raise AnonlabError(
            f"output: {engine} writes the release as a folder of Parquet parts: "
            "give output as a folder path ending in '/'",
            parameter="output",
        )


def _run_onedims_on_engine(
    s: MicroaggregateSettings, *, progress: ProgressFn | None, started: float
) -> RunResult:
    """``onedims`` (individual ranking) on an engine, piece by piece
    (:mod:`anonlab.microaggregation.onedims`; module text, "On an engine"). The columns and
    roles are decided on the head as in memory (:func:`masked_table`: the strata released
    as they are); a release of at most :data:`IN_MEMORY_ROWS` records is read back whole
    and checked by the independent checker as in memory, a larger one column by column."""
    from anonlab.dataset import Role, roles_report
    from anonlab.engine.table import open_table
    from anonlab.microaggregation.onedims import onedims_pieces
    from anonlab.microaggregation.pieces import head_frame
    from anonlab.risk.release import check_risk_columns, release_risk_report

    _check_onedims_engine(s)
    source = file_of(s.input)
    with (
        Outputs(
            {"output": s.output, "report": s.report, "html": s.html},
            inputs=[source, *s.sensitive_hierarchies.values()],
            folders=("output",),
        ) as outputs,
        closing(open_run_engine(s)) as engine,
    ):
        table = open_table(_engine_source(s.input, s), delimiter=s.delimiter)
        first = head_frame(table, HEAD_ROWS)
        if first.empty:  # the one reader's line, as in memory
            raise table.no_rows_error()
        head = masked_table(first, s, allow_constant=True)
        numeric = list(head.numeric_names)
        if not numeric:
            raise AnonlabError("no numeric column to microaggregate", parameter="columns")
        masked_strata = [c for c in s.strata if c in numeric]
        if masked_strata:
            raise AnonlabError(
                f"strata column '{masked_strata[0]}' is also a masked column: a stratum is "
                "released as it is",
                parameter="strata",
            )
        dropped = head.columns_with(Role.IDENTIFYING)
        keep = [c for c in table.column_names if c not in dropped]
        check_risk_columns(keep, s.sensitive, s)
        staged = outputs.stage_folder("output")
        result = onedims_pieces(
            engine,
            table,
            numeric,
            s.strata,
            keep,
            k=s.k,
            aggr=s.aggr,
            trim=s.trim,
            output=staged,
            progress=progress,
        )
        report = _engine_header(s, outputs.path("report"))
        report.update(
            result.report_keys(k=s.k, aggr=s.aggr, trim=s.trim, strata=s.strata, numeric=numeric)
        )
        small = result.plan.rows <= IN_MEMORY_ROWS
        released = _onedims_checked(s, staged.path, numeric, dropped, report, whole=small)
        report["verified"] = s.verify
        report["engine"] = {
            "name": engine.name,
            "pieces": len(result.piece_rows),
            "parts": result.summary.parts,
            "checked": ("whole release" if small else "column by column") if s.verify else None,
        }
        report.update(roles_report(head.roles, s.other, head.by_other))
        if released is not None:
            report.update(release_risk_report(released, s.sensitive, s))
        else:
            report.update(
                release_risk_report(staged.path, s.sensitive, s, engine=engine, columns=keep)
            )
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, None, written)


def _onedims_checked(
    s: MicroaggregateSettings,
    folder: Path,
    numeric: list[str],
    dropped: list[str],
    report: dict[str, Any],
    *,
    whole: bool,
) -> pd.DataFrame | None:
    """The release of ``onedims`` on an engine read back whole (``whole``: as text, as the
    in-memory run re-reads its release, so -0.0 stays apart from 0.0 for the risk) and
    checked against the input read whole, its ILh computed as in memory; else checked
    column by column (with ``verify``). Returns the release read back, or ``None``."""
    from anonlab.io import read_table

    if not whole:
        if s.verify:
            _verify_by_column(s, folder, numeric, dropped, report)
        return None
    released: pd.DataFrame = read_table(folder, dtype=str, strings="arrow")
    if is_dask_frame(s.input):
        original = s.input.compute()
    else:  # its numbers as Arrow's correctly rounded doubles, as the in-memory run parses them
        original = read_table(s.input, **s.read_options(), strings="arrow", doubles=numeric)
    original = original.drop(columns=[c for c in original.columns if str(c) in dropped])
    original = original.reset_index(drop=True)
    if s.verify:
        _verify(original, released, report)
    report["measures"] = {"ILh": _il_h(original, folder, numeric)}
    return released


def _il_h(original: pd.DataFrame, folder: Path, numeric: list[str]) -> float:
    """ILh of a release read back whole, computed as the in-memory run computes it (the
    original's numbers as the table model parses them, the release's doubles as written)."""
    from anonlab.encoding import numeric_matrix
    from anonlab.io import read_table
    from anonlab.metrics.utility import il_h_of

    written = read_table(folder, dtype=str, strings="arrow", doubles=numeric)
    released = written[numeric].to_numpy(dtype=float)
    return il_h_of(numeric_matrix(original, numeric, "table"), released, numeric)


def _verify_by_column(
    s: MicroaggregateSettings,
    folder: Path,
    numeric: list[str],
    dropped: list[str],
    report: Mapping[str, Any],
) -> None:
    """The independent checker on a release too large to read back whole: each masked column
    with the strata, read piece by piece (its groups are formed in that column alone); then
    the release's columns (the input's but the identifying ones, in order) and each column
    not masked, equal to the input's text, one column at a time."""
    import pandas as pd

    from anonlab.verify.tables import shape_findings, unchanged_findings

    source = _engine_source(s.input, s)
    for name in numeric:
        names = [name, *s.strata]
        _verify(
            _columns_read(source, names, s),
            _columns_read(folder, names, s),
            {**report, "columns": [name]},
        )
    kept = [c for c in _column_names(source, s) if c not in dropped]
    problems = shape_findings(
        pd.DataFrame(columns=kept), pd.DataFrame(columns=_column_names(folder, s))
    )
    for name in (c for c in kept if c not in numeric and c not in s.strata):
        if problems:
            break
        problems = unchanged_findings(
            _columns_read(source, [name], s), _columns_read(folder, [name], s), []
        )
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def _column_names(source: Any, s: ReadSettings) -> list[str]:
    """The columns of a table the engine reads (:func:`_engine_source`), in order."""
    from anonlab.engine.table import open_table

    if is_dask_frame(source):
        return [str(c) for c in source.columns]
    return [str(c) for c in open_table(source, delimiter=s.delimiter).column_names]


def _columns_read(source: Any, names: list[str], s: ReadSettings) -> pd.DataFrame:
    """``names`` of a table the engine reads (:func:`_engine_source`), piece by piece, as
    text (each value the text the one reader gives), in the table's order."""
    import pandas as pd
    import pyarrow as pa

    from anonlab.engine.kernels import text_column
    from anonlab.engine.table import open_table

    if is_dask_frame(source):
        return pd.DataFrame(source[names].compute()).reset_index(drop=True).astype(str)
    table = open_table(source, delimiter=s.delimiter)
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for piece in table.pieces:
        for batch in piece.batches(names, 1 << 16):
            for name in names:
                columns[name].append(text_column(batch.column(name)).cast(pa.string()))
    return pd.DataFrame(
        {
            name: pd.Series(pa.chunked_array(parts, pa.string()), dtype=pd.ArrowDtype(pa.string()))
            for name, parts in columns.items()
        }
    )


def _in_input_order(released: pd.DataFrame, result: RegionsResult) -> pd.DataFrame:
    """The regions' release with its rows in the input's order (each region returned its
    rows' places: :meth:`RegionsResult.table_rows`)."""
    import numpy as np

    if not result.holds_every_row_once():
        raise AnonlabError(
            "verification failed, nothing written: the release does not hold "
            "every record of the input once"
        )
    return released.iloc[np.argsort(result.table_rows())].reset_index(drop=True)


def _read_back(
    s: MicroaggregateSettings,
    folder: Path,
    result: RegionsResult,
    numeric: list[str],
    dropped: list[str],
    report: Mapping[str, Any],
) -> pd.DataFrame:
    """The release as written, read back whole; with ``verify``, checked against the input
    in the input's order by the independent checker (:func:`_verify`: refused, nothing
    written, when a check fails)."""
    from anonlab.io import read_table

    released: pd.DataFrame = read_table(folder, dtype=str, strings="arrow", doubles=numeric)
    if not s.verify:
        return released
    if not result.holds_every_row_once():
        raise AnonlabError(
            "verification failed, nothing written: the release does not hold "
            "every record of the input once"
        )
    original = s.input.compute() if is_dask_frame(s.input) else _read(s.input, s)
    original = original.drop(columns=[c for c in original.columns if str(c) in dropped])
    _verify(original.iloc[result.table_rows()].reset_index(drop=True), released, report)
    return released


def _evaluate_on_engine(settings: EvaluateSettings) -> bool:
    """Whether ``evaluate`` runs on an engine: on Dask, or with ``block_rows`` given."""
    return settings.engine != "numpy" or settings.block_rows is not None


def _evaluated_roles(
    columns: Sequence[str], s: EvaluateSettings, measured: Sequence[str], other: str | None
) -> dict[str, Role]:
    """Every column's role on an engine: ``measured`` are the quasi-identifiers, the role
    settings give the rest (:func:`anonlab.dataset.assign_roles`; ``other`` as given)."""
    from anonlab.dataset import Roles
    from anonlab.table import ROLE_PARAMETERS

    roles = Roles.of(s.identifying, s.sensitive, s.insensitive, other)
    return roles.assign(columns, measured, ROLE_PARAMETERS)


def _run_evaluate_on_engine(
    s: EvaluateSettings, *, progress: ProgressFn | None, started: float
) -> RunResult:
    """:func:`run_evaluate` on an engine (module text, "On an engine"): the names the role
    settings give are checked against the original's columns before any pass, the columns
    they name are left out of ``all-numeric``, and every column's role is settled once the
    measured columns are known."""
    from anonlab.dataset import without_role
    from anonlab.engine.table import open_table
    from anonlab.metrics import evaluate_pieces
    from anonlab.threads import blas_threads

    block_rows = s.block_rows if s.block_rows is not None else evaluate_pieces.DEFAULT_BLOCK_ROWS
    others = [*s.identifying, *s.sensitive, *s.insensitive]
    with (
        Outputs({"report": s.report, "html": s.html}, inputs=[s.original, s.masked]) as outputs,
        blas_threads(1),
        closing(open_run_engine(s)) as engine,
    ):
        original, masked = _engine_source(s.original, s), _engine_source(s.masked, s)
        columns = open_table(original, delimiter=s.delimiter).column_names
        _evaluated_roles(columns, s, [], "insensitive")  # the names alone, before any pass
        result = evaluate_pieces.evaluate_on_engine(
            original,
            masked,
            s.columns,
            engine=engine,
            nominal=s.nominal,
            ordinal=s.ordinal,
            orders=s.orders,
            lambdas=s.lambda_,
            tau=s.tau,
            gamma=s.gamma,
            interval_p=s.p,
            block_rows=block_rows,
            workers=s.threads(),
            delimiter=s.delimiter,
            progress=progress,
            exclude=others,
        )
        measured = [*result.columns, *result.nominal, *result.ordinal]
        roles = _evaluated_roles(columns, s, measured, s.other)
        report = _header(
            "evaluate", s, {"original": s.original, "masked": s.masked}, outputs.path("report")
        )
        report.update(result.summary())
        report.update(evaluate_roles(roles, s.other, without_role(columns, measured, others)))
        report["engine"] = {
            "name": engine.name,
            "block_rows": block_rows,
            "blocks": result.parameters["blocks"]["count"],
        }
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, None, written)
