"""The microaggregation family's runs: ``microaggregate``, ``evaluate`` and ``tradeoff``.

Each run reads its table(s) through :func:`anonlab.io.read_table`, applies
the method, verifies the release (``microaggregate``), and writes its
outputs through one :class:`anonlab.outputs.Outputs`, so that it writes all
of them or none:

- :func:`run_microaggregate`: MDAV (docs/formulas.md §2): groups of k..2k-1 records
  share their numeric mean, nominal mode and ordinal lower median; the
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
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from pydantic import Field, field_validator, model_validator

from anonlab.errors import AnonlabError
from anonlab.metrics.tradeoff import DEFAULT_GAMMA, DEFAULT_TAU
from anonlab.metrics.utility import DEFAULT_LAMBDA
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
    input_tables,
    paths_convention,
    stage_plot,
    stage_release,
    stage_report,
    stored_path,
)
from anonlab.settings import Settings, split_names

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.table import MicrodataTable

Variant = Literal["exact", "scalable"]


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
        return {"lambdas": self.lambda_, "tau": self.tau, "gamma": self.gamma,
                "interval_p": self.p}


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
            raise AnonlabError("scheduler applies to engine 'dask' only: set engine = 'dask' "
                               "or leave scheduler out", parameter="scheduler")
        if self.engine == "dask" and self.workers == -1:
            raise AnonlabError("workers -1 (every CPU) applies in this process only: with "
                               "engine 'dask' give a number of worker processes",
                               parameter="workers")
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
    ``region_rows`` records (:mod:`anonlab.runs.microaggregate_engine`).
    ``workers`` is MDAV's BLAS threads in this process (default 1; -1: every
    CPU), or with engine ``"dask"`` the local cluster's worker processes.
    """

    path_fields: ClassVar[tuple[str, ...]] = ("input", "sensitive_hierarchies", "output",
                                              "report", "html")

    input: Any
    k: int = Field(default=3, ge=2)
    variant: Variant = "exact"
    block_size: int = Field(default=DEFAULT_BLOCK_SIZE, ge=2)
    region_rows: int = Field(default=DEFAULT_REGION_ROWS, ge=2)
    output: str | None = None
    output_table: str | None = None
    verify: bool = True

    @field_validator("input", mode="before")
    @classmethod
    def _source(cls, value: Any) -> Any:
        """A path (as text), a SQLAlchemy URL or a Dask DataFrame."""
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if isinstance(value, str):
            return value
        from anonlab.runs.perturb import is_dask_frame

        if is_dask_frame(value):
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
    by piece on the engine (:mod:`anonlab.runs.evaluate_engine`); record
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

    path_fields: ClassVar[tuple[str, ...]] = ("input", "sensitive_hierarchies", "report",
                                              "html", "plot")

    input: str
    k: str | int | list[int] = "3-10"
    variant: Variant = "exact"
    block_size: int = Field(default=DEFAULT_BLOCK_SIZE, ge=2)
    plot: str | None = None


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


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
    from anonlab.runs.microaggregate_engine import microaggregate_on_engine, uses_engine

    s = settings
    started = time.perf_counter()
    if uses_engine(s):
        return microaggregate_on_engine(s, progress=progress, started=started)
    with Outputs({"output": output_target(s.output, s.output_table), "report": s.report,
                  "html": s.html},
                 inputs=[s.input, *s.sensitive_hierarchies.values()],
                 input_tables=input_tables(s.input, s.table)) as outputs:
        table = masked_table(_read(s.input, s), s)
        dropped = table.columns_with(Role.IDENTIFYING)
        check_risk_columns([c for c in table.roles if c not in dropped], s.sensitive, s)
        result = microaggregate(table, k=s.k, variant=s.variant, block_size=s.block_size,
                                workers=s.threads(), progress=progress)
        release = result.masked.drop(columns=dropped)
        report = _header("microaggregate", s, _inputs(s), outputs.path("report"))
        report.update(result.summary())
        released = stage_release(outputs, release)
        if s.verify:
            _verify(table.frame.drop(columns=dropped), released, report)
        report["verified"] = s.verify
        report.update(roles_report(table.roles, s.other, table.by_other))
        report.update(release_risk_report(released, s.sensitive, s))
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, release, written)


def run_evaluate(
    settings: EvaluateSettings, *, progress: ProgressFn | None = None
) -> RunResult:
    """The EM4ADOM measures of ``settings.masked`` against ``settings.original``.

    ``progress`` hears of the evaluation's stages (information loss, record
    linkage, interval disclosure).
    """
    from anonlab.metrics import evaluate
    from anonlab.runs.evaluate_engine import evaluate_on_engine, uses_engine

    s = settings
    started = time.perf_counter()
    if uses_engine(s):
        return evaluate_on_engine(s, progress=progress, started=started)
    with Outputs({"report": s.report, "html": s.html},
                 inputs=[s.original, s.masked]) as outputs:
        table = evaluated_table(_read(s.original, s), s)
        masked = _read(s.masked, s)
        result = evaluate(table, masked, progress=progress, workers=s.threads(),
                          **s.measure_arguments())
        report = _header("evaluate", s, {"original": s.original, "masked": s.masked},
                         outputs.path("report"))
        report.update(result.summary())
        report.update(evaluate_roles(table.roles, s.other, table.by_other))
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, None, written)


def run_tradeoff(
    settings: TradeoffSettings, *, progress: ProgressFn | None = None
) -> RunResult:
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
    with Outputs({"report": s.report, "html": s.html, "plot": s.plot},
                 inputs=[s.input, *s.sensitive_hierarchies.values()]) as outputs:
        table = masked_table(_read(s.input, s), s)
        dropped = table.columns_with(Role.IDENTIFYING)
        check_risk_columns([c for c in table.roles if c not in dropped], s.sensitive, s)
        knowledge: list[str] = []

        def risk(masked: pd.DataFrame) -> dict[str, Any]:
            section, rule = measure_release(masked.drop(columns=dropped), s.sensitive, s)
            knowledge[:] = [rule]
            return section

        result = sweep(table, k_values, variant=s.variant, block_size=s.block_size,
                       progress=progress, risk=risk, workers=s.workers,
                       **s.measure_arguments())
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
    frame: pd.DataFrame, settings: MicroaggregateSettings | TradeoffSettings
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
    return MicrodataTable.from_frame(
        frame, s.columns, nominal=s.nominal, ordinal=s.ordinal, orders=s.orders,
        identifying=s.identifying, sensitive=s.sensitive, insensitive=s.insensitive,
        other=s.other, role_parameters=ROLE_PARAMETERS)


def evaluated_table(frame: pd.DataFrame, settings: EvaluateSettings) -> MicrodataTable:
    """The original of an evaluation as a table model: the measured columns are its QIs.

    As :func:`masked_table`: ``columns="all-numeric"`` picks the numeric
    columns no other parameter names, so an identifying column (dropped by
    the release) is neither measured nor looked for in the masked table.
    """
    from anonlab.table import ROLE_PARAMETERS, MicrodataTable

    s = settings
    return MicrodataTable.from_frame(
        frame, s.columns, nominal=s.nominal, ordinal=s.ordinal, orders=s.orders,
        identifying=s.identifying, sensitive=s.sensitive, insensitive=s.insensitive,
        other=s.other, role_parameters=ROLE_PARAMETERS, purpose="evaluate", what="original")


def evaluate_roles(roles: Mapping[str, Any], other: str | None,
                   by_other: Sequence[str]) -> dict[str, Any]:
    """The report's role keys of an evaluation: ``roles``, ``other``, ``insensitive_by_other``
    (:func:`anonlab.dataset.roles_report` without ``released_unchanged``: nothing is released).
    """
    from anonlab.dataset import roles_report

    keys = roles_report(roles, other, by_other)
    del keys["released_unchanged"]
    return keys


def _inputs(settings: MicroaggregateSettings | TradeoffSettings) -> dict[str, str]:
    """The input files a report describes: the data and any sensitive attribute's hierarchy."""
    return {"data": settings.input,
            **{f"hierarchy:{c}": p for c, p in settings.sensitive_hierarchies.items()}}


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
        original, release, int(report["k"]), numeric=report["columns"],
        nominal=report["nominal"], ordinal=report["ordinal"],
        orders=report["parameters"]["orders"],
    )
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


