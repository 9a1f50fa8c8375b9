"""The fusion family's runs: ``fuse`` (every provider in one process) and ``party`` (one party).

Both read a fusion configuration (``fusion.toml``, see
:mod:`anonlab.fusion.config`), give every column its role
(:func:`anonlab.fusion.roles.fusion_roles`: template columns are the
quasi-identifiers, every other column is named identifying, sensitive or
insensitive, or ``other = "insensitive"`` releases it; a column with no role
is refused), run the one fusion loop (:mod:`anonlab.fusion.engine`) and write
through one :class:`anonlab.outputs.Outputs`, so a run writes all of its
outputs or none:

1. the roles, the risk settings and every output path are checked before
   any data is read;
2. the fusion runs (``progress("fusion rounds", round, None)`` after each round);
3. the fused table is staged, re-read from the staged file and checked
   against every anonymity template <QID, k> by :func:`anonlab.verify.fusion.check_templates`,
   which shares no code with the engine (``verify``, on by default);
4. the re-identification risk of the table as written is measured and
   judged (:func:`anonlab.risk.release.release_risk_report`: a
   :class:`~anonlab.errors.ReleaseRiskWarning` per risk, or with
   ``fail_on_risk`` a :class:`~anonlab.errors.ReleaseRiskError` and nothing
   written); a ``party`` helper holds no table and measures nothing;
5. the JSON report and the HTML page are staged; then all are renamed
   together.

A report stores paths relative to its own folder (or absolute without a
report file) and says so in its ``"paths"`` key (:mod:`anonlab.runs.common`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import pandas as pd
from pydantic import Field, field_validator

from anonlab.errors import AnonlabError
from anonlab.fusion.config import CONTINUOUS, FusionConfig, PartyConfig, load_config
from anonlab.fusion.party import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT
from anonlab.fusion.roles import FusionRoles, fusion_roles
from anonlab.fusion.transport import TIMEOUT_RULE
from anonlab.outputs import Outputs
from anonlab.paths import PathLike
from anonlab.progress import ProgressFn
from anonlab.risk.release import ReleaseRiskSettings, risk_last
from anonlab.runs.common import (
    RunResult,
    paths_convention,
    stage_release,
    stage_report,
    stored_path,
)
from anonlab.settings import split_names

Templates = Sequence[tuple[Sequence[str], int]]
SCORES = ("sensitivity", "tds")
_PATHS = ("config", "output", "report", "html")


def _path_text(value: Any) -> Any:
    """A path given as ``os.PathLike`` becomes its text (settings hold paths as strings)."""
    return os.fspath(value) if isinstance(value, os.PathLike) else value


class FuseSettings(ReleaseRiskSettings):
    """Everything :func:`run_fuse` needs: the fusion config, what to write, roles and risk.

    ``score``, ``keep_id`` and ``other``, when given, replace those of the
    config's ``[fusion]`` table; ``identifying``, ``sensitive`` and
    ``insensitive`` add column names to its lists. The release's risk is
    measured and judged as :class:`~anonlab.risk.release.ReleaseRiskSettings` says.
    """

    path_fields: ClassVar[tuple[str, ...]] = (*_PATHS, "sensitive_hierarchies")

    config: str
    output: str | None = None
    report: str | None = None
    html: str | None = None
    score: str | None = None
    keep_id: bool | None = None
    identifying: list[str] = Field(default_factory=list)
    sensitive: list[str] = Field(default_factory=list)
    insensitive: list[str] = Field(default_factory=list)
    other: Literal["insensitive"] | None = None
    verify: bool = True

    _paths = field_validator(*_PATHS, mode="before")(_path_text)

    @field_validator("score")
    @classmethod
    def _known_score(cls, score: str | None) -> str | None:
        if score is not None and score not in SCORES:
            raise ValueError(
                "must be 'sensitivity' or 'tds' (it replaces fusion.score of the config)"
            )
        return score

    @field_validator("identifying", "sensitive", "insensitive", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        """``"a,b"`` or ``["a", "b,c"]`` to a list of names."""
        return split_names(value) if isinstance(value, str | list | tuple) else value


class PartySettings(ReleaseRiskSettings):
    """Everything :func:`run_party` needs: the config, this party's id, outputs and deadlines.

    ``timeout`` bounds every wait for another party during the run,
    ``connect_timeout`` the start-up (connecting, reading the data); both are
    seconds, finite and above 0. The roles are the config's alone (every
    party runs with the same ones); a provider measures and judges the fused
    table's risk as :class:`~anonlab.risk.release.ReleaseRiskSettings` says.
    """

    path_fields: ClassVar[tuple[str, ...]] = (*_PATHS, "sensitive_hierarchies")

    config: str
    party: str
    output: str | None = None
    report: str | None = None
    html: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    verify: bool = True

    _paths = field_validator(*_PATHS, mode="before")(_path_text)

    @field_validator("timeout", "connect_timeout")
    @classmethod
    def _finite_positive(cls, seconds: float) -> float:
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(TIMEOUT_RULE)
        return seconds


# -- shared steps ------------------------------------------------------------------------------


def _targets(settings: FuseSettings | PartySettings) -> dict[str, str | None]:
    return {"output": settings.output, "report": settings.report, "html": settings.html}


def _templates(config: FusionConfig) -> list[tuple[list[str], int]]:
    return [(list(t.qid), t.k) for t in config.templates]


def _verify(table: pd.DataFrame, templates: Templates, records: int) -> None:
    """The independent check of a fused table: ``records`` rows, every template <QID, k> holds.

    :func:`anonlab.verify.fusion.check_fusion` counts group sizes on the
    released strings alone, never with the engine's cut or group ids.
    """
    from anonlab.verify.fusion import check_fusion

    problems = check_fusion(table, templates, records=records)
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def _stage_checked(
    outputs: Outputs, table: pd.DataFrame | None, templates: Templates, verify: bool
) -> tuple[pd.DataFrame | None, bool]:
    """Stage the fused table (verified when asked); return it as written and whether it was
    verified.

    The staged file is read back by the one reader and checked before
    anything else is staged (:func:`anonlab.runs.common.stage_release`);
    without an ``output`` the table in memory is checked and returned.
    """
    if table is None:
        return None, False
    records = len(table)

    def check(written: pd.DataFrame) -> None:
        _verify(written, templates, records)

    return stage_release(outputs, table, check if verify else None), verify


def _roles(config: FusionConfig, settings: ReleaseRiskSettings) -> FusionRoles:
    """Every column's role; then risk settings naming columns the release lacks are refused."""
    from anonlab.risk.release import check_risk_columns

    roles = fusion_roles(config)
    check_risk_columns(roles.released, roles.sensitive, settings)
    return roles


def _risk(
    written: pd.DataFrame | None,
    roles: FusionRoles,
    settings: ReleaseRiskSettings,
) -> dict[str, Any]:
    """The report's risk keys of the fused table as written (none without a table).

    :func:`anonlab.risk.release.release_risk_report` measures it (the class
    and the other sensitive columns as sensitive attributes), issues a
    :class:`~anonlab.errors.ReleaseRiskWarning` per risk, attributed to the
    caller of the run, and with ``fail_on_risk`` raises
    :class:`~anonlab.errors.ReleaseRiskError` instead.
    """
    from anonlab.risk.release import release_risk_report

    if written is None:
        return {}
    return release_risk_report(written, roles.sensitive, settings)


def _risk_parameters(settings: ReleaseRiskSettings, report_path: Path | None) -> dict[str, Any]:
    """The risk settings as report parameters (hierarchy paths stored as ``paths`` says)."""
    values = {name: getattr(settings, name) for name in ReleaseRiskSettings.model_fields}
    values["sensitive_hierarchies"] = {
        column: stored_path(path, report_path)
        for column, path in settings.sensitive_hierarchies.items()
    }
    return values


def _role_parameters(config: FusionConfig) -> dict[str, Any]:
    """The ``[fusion]`` role lists and ``other`` (the report's ``roles`` holds every column's)."""
    return {**config.fusion.named(), "other": config.fusion.other}


def _hierarchies(settings: ReleaseRiskSettings) -> dict[str, str]:
    """The sensitive attributes' hierarchy files, as report inputs."""
    return {f"hierarchy:{c}": p for c, p in settings.sensitive_hierarchies.items()}


def _header(
    command: str, params: dict[str, Any], inputs: Mapping[str, str | None]
) -> dict[str, Any]:
    """The report's common header; a database input is described by its URL (password
    hidden), a Parquet folder by its name, a file by name, size and SHA-256."""
    from anonlab.database import is_database_url, masked
    from anonlab.report import report_header

    files: dict[str, PathLike | None] = {
        k: v for k, v in inputs.items() if v is None or not (is_database_url(v) or Path(v).is_dir())
    }
    header = report_header(command, params, files)
    described = {}
    for name, value in inputs.items():
        if name in files:
            described[name] = header["inputs"][name]
        elif value is not None and is_database_url(value):
            described[name] = {"url": masked(value)}
        elif value is not None:
            described[name] = {"name": Path(value).name, "folder": True}
    header["inputs"] = described
    return header


def _nothing_to_write(settings: FuseSettings | PartySettings, names: Sequence[str]) -> None:
    """Refuse a run that was asked to write none of the outputs ``names``."""
    if all(getattr(settings, name) is None for name in names):
        raise AnonlabError(f"nothing to write: give {', '.join(names[:-1])} and/or {names[-1]}")


# -- fuse ----------------------------------------------------------------------------------------


def fuse_inputs(config_path: str, config: FusionConfig) -> dict[str, str | None]:
    """Every file a ``fuse`` run reads, by report name: config, providers, taxonomy files."""
    inputs: dict[str, str | None] = {"config": config_path}
    inputs.update({f"provider:{p.id}": p.file for p in config.providers})
    inputs.update({f"taxonomy:{a}": f for a, f in config.taxonomies.items() if f != CONTINUOUS})
    return inputs


def load_fuse_config(settings: FuseSettings) -> FusionConfig:
    """The config of a ``fuse`` run, with the settings' score, keep_id, other and role names."""
    return load_config(
        settings.config,
        overrides={"score": settings.score, "keep_id": settings.keep_id, "other": settings.other},
        roles={
            "identifying": settings.identifying,
            "sensitive": settings.sensitive,
            "insensitive": settings.insensitive,
        },
    )


def _fuse_parameters(
    settings: FuseSettings, config: FusionConfig, report_path: Path | None
) -> dict[str, Any]:
    """The report's ``parameters`` of a ``fuse`` run (the risk settings last)."""
    return risk_last(
        {
            "config": stored_path(settings.config, report_path),
            "score": config.fusion.score,
            "s_aggregate": config.fusion.s_aggregate,
            "keep_id": config.fusion.keep_id,
            "class": config.class_column,
            "templates": [{"qid": t.qid, "k": t.k} for t in config.templates],
            **_role_parameters(config),
            "output": stored_path(settings.output, report_path),
            "report": stored_path(settings.report, report_path),
            "verify": settings.verify,
            **_risk_parameters(settings, report_path),
        }
    )


def run_fuse(settings: FuseSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Fuse every provider's table in this process (plain maximum, not private) and write.

    Every column needs a role (:func:`anonlab.fusion.roles.fusion_roles`);
    identifying columns never reach the fused table. Writes ``output`` (the
    fused table), ``report`` (JSON) and ``html`` as asked, all or none,
    after the table as written was verified and its risk measured (a
    :class:`~anonlab.errors.ReleaseRiskWarning` per risk; with
    ``fail_on_risk`` a :class:`~anonlab.errors.ReleaseRiskError` and nothing
    written). Raises :class:`AnonlabError` on a user error or a failed
    verification. The result holds the report and the fused table.
    """
    from anonlab.fusion.engine import fuse

    started = time.perf_counter()
    _nothing_to_write(settings, ("output", "report", "html"))
    config = load_fuse_config(settings)
    roles = _roles(config, settings)
    inputs = {**fuse_inputs(settings.config, config), **_hierarchies(settings)}
    with Outputs(_targets(settings), inputs=inputs.values()) as outputs:
        result = fuse(config, progress=progress)
        written, verified = _stage_checked(
            outputs, result.table, _templates(config), settings.verify
        )
        report_path = outputs.path("report")
        report = _header("fuse", _fuse_parameters(settings, config, report_path), inputs)
        report.update(result.report())
        report["protocol"] = "in-process (plain maximum, not private)"
        report["verified"] = verified
        report.update(roles.report())
        report.update(_risk(written, roles, settings))
        report["runtime_seconds"] = time.perf_counter() - started
        report["paths"] = paths_convention(report_path)
        stage_report(outputs, report)
        files = outputs.commit()
    return RunResult(report=report, release=result.table, written=files)


# -- party ---------------------------------------------------------------------------------------


def _check_party_outputs(settings: PartySettings, me: PartyConfig) -> None:
    """A helper writes no table; every party writes something."""
    if me.role == "helper":
        if settings.output is not None:
            raise AnonlabError(
                f"output is not for party '{me.id}': it is a helper, holds no data and writes "
                "no table; leave output out (give report)",
                parameter="output",
            )
        _nothing_to_write(settings, ("report", "html"))
    else:
        _nothing_to_write(settings, ("output", "report", "html"))


def party_inputs(
    config: FusionConfig, me: PartyConfig, settings: ReleaseRiskSettings | None = None
) -> list[str]:
    """Files a party reads (its own data, the config, taxonomies, TLS files and the sensitive
    attributes' hierarchies): never outputs."""
    hierarchies = [] if settings is None else list(settings.sensitive_hierarchies.values())
    candidates = [
        me.file,
        config.source,
        *config.taxonomies.values(),
        *config.tls.values(),
        *hierarchies,
    ]
    return [p for p in candidates if isinstance(p, str) and p != CONTINUOUS]


def _party_parameters(
    settings: PartySettings, config: FusionConfig, report_path: Path | None
) -> dict[str, Any]:
    """The report's ``parameters`` of a ``party`` run (the risk settings last)."""
    return risk_last(
        {
            "config": stored_path(config.source, report_path),
            "party": settings.party,
            "timeout": settings.timeout,
            "connect_timeout": settings.connect_timeout,
            **_role_parameters(config),
            "output": stored_path(settings.output, report_path),
            "verify": settings.verify,
            **_risk_parameters(settings, report_path),
        }
    )


def run_party(settings: PartySettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Run one party of a networked fusion and write its outputs, all or none.

    Every column needs a role in the config (checked before connecting). A
    provider writes the fused table (``output``), every party its report;
    nothing is written unless every party finished (the DONE exchange) and,
    with ``verify``, the staged table passed the template check. A provider
    measures the table's risk as written and judges it as :func:`run_fuse`
    does (with ``fail_on_risk`` this party writes nothing).
    """
    from anonlab.fusion.party import check_party_setup
    from anonlab.fusion.party import run_party as run_party_process

    config = load_config(settings.config)
    me = config.party(settings.party)
    _check_party_outputs(settings, me)
    roles = _roles(config, settings)
    inputs = {"data": me.file, "config": config.source, **_hierarchies(settings)}
    with Outputs(_targets(settings), inputs=party_inputs(config, me, settings)) as outputs:
        check_party_setup(config, settings.party)
        outcome = run_party_process(
            config,
            settings.party,
            timeout=settings.timeout,
            connect_timeout=settings.connect_timeout,
            progress=progress,
        )
        table = outcome.result.table if outcome.result is not None else None
        written, verified = _stage_checked(outputs, table, _templates(config), settings.verify)
        report_path = outputs.path("report")
        report = _header("party", _party_parameters(settings, config, report_path), inputs)
        report.update(outcome.report())
        report["verified"] = verified
        report.update(roles.report())
        report.update(_risk(written, roles, settings))
        report["paths"] = paths_convention(report_path)
        stage_report(outputs, report)
        files = outputs.commit()
    return RunResult(report=report, release=table, written=files)
