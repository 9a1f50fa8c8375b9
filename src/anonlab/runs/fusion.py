"""The fusion family's runs: ``fuse`` (every provider in one process) and ``party`` (one party).

Both read a fusion configuration (``fusion.toml``, see
:mod:`anonlab.fusion.config`), run the one fusion loop
(:mod:`anonlab.fusion.engine`) and write through one
:class:`anonlab.outputs.Outputs`, so a run writes all of its outputs or none:

1. every output path is checked before any data is read;
2. the fusion runs (``progress("fusion rounds", round, None)`` after each round);
3. the fused table is staged, re-read from the staged file and checked
   against every anonymity template <QID, k> by :func:`anonlab.fusion.check.check_templates`,
   which shares no code with the engine (``verify``, on by default);
4. the JSON report and the HTML page are staged; then all are renamed
   together.

A report stores paths relative to its own folder (or absolute without a
report file) and says so in its ``"paths"`` key (:mod:`anonlab.runs.common`).
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
from pydantic import field_validator

from anonlab.errors import AnonlabError
from anonlab.fusion.config import CONTINUOUS, FusionConfig, PartyConfig, load_config
from anonlab.fusion.party import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT
from anonlab.fusion.transport import TIMEOUT_RULE
from anonlab.io import PathLike
from anonlab.outputs import Outputs
from anonlab.progress import ProgressFn
from anonlab.runs.common import RunResult, paths_convention, stage_report, stored_path
from anonlab.settings import Settings

Templates = Sequence[tuple[Sequence[str], int]]
SCORES = ("sensitivity", "tds")
_PATHS = ("config", "output", "report", "html")


def _path_text(value: Any) -> Any:
    """A path given as ``os.PathLike`` becomes its text (settings hold paths as strings)."""
    return os.fspath(value) if isinstance(value, os.PathLike) else value


class FuseSettings(Settings):
    """Everything :func:`run_fuse` needs: the fusion config and what to write.

    ``score`` and ``keep_id``, when given, replace those of the config's
    ``[fusion]`` table.
    """

    path_fields: ClassVar[tuple[str, ...]] = _PATHS

    config: str
    output: str | None = None
    report: str | None = None
    html: str | None = None
    score: str | None = None
    keep_id: bool | None = None
    verify: bool = True

    _paths = field_validator(*_PATHS, mode="before")(_path_text)

    @field_validator("score")
    @classmethod
    def _known_score(cls, score: str | None) -> str | None:
        if score is not None and score not in SCORES:
            raise ValueError("must be 'sensitivity' or 'tds' (it replaces fusion.score of the "
                             "config)")
        return score


class PartySettings(Settings):
    """Everything :func:`run_party` needs: the config, this party's id, outputs and deadlines.

    ``timeout`` bounds every wait for another party during the run,
    ``connect_timeout`` the start-up (connecting, reading the data); both are
    seconds, finite and above 0.
    """

    path_fields: ClassVar[tuple[str, ...]] = _PATHS

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


def _reread(tmp: Path, target: Path) -> pd.DataFrame:
    """A staged release read back by the one reader, as the target file will be read.

    The reader tells Parquet by its first bytes; CSV and TSV are read with the
    delimiter they were written with. An Excel workbook must be named
    ``.xlsx`` to open, so it is read through a link of that name in a
    temporary folder of its own.
    """
    from anonlab.io import read_table
    from anonlab.sinks import output_format

    fmt = output_format(target)
    if fmt != "excel":
        return read_table(tmp, delimiter={"csv": ",", "tsv": "\t"}.get(fmt))
    with tempfile.TemporaryDirectory(prefix="anonlab-") as folder:
        alias = Path(folder) / f"release{target.suffix.lower()}"
        alias.symlink_to(tmp.resolve())
        return read_table(alias)


def _stage_release(outputs: Outputs, table: pd.DataFrame, templates: Templates | None) -> None:
    """Stage the fused table (``output``); with ``templates``, verify the staged file re-read.

    The table is written to the temporary file in the format the target's
    extension names, read back from there and checked before anything else
    is staged.
    """
    from anonlab.io import write_table

    target = outputs.path("output")
    if target is None:
        return

    def write(tmp: Path) -> None:
        write_table(table, tmp, format_of=target)
        if templates is not None:
            _verify(_reread(tmp, target), templates, len(table))

    outputs.stage("output", write)


def _check_release(outputs: Outputs, table: pd.DataFrame | None, templates: Templates,
                   verify: bool) -> bool:
    """Stage the release (verified when asked); verify in memory when no file is written.

    Returns whether a table was verified.
    """
    if table is None:
        return False
    _stage_release(outputs, table, templates if verify else None)
    if verify and "output" not in outputs:
        _verify(table, templates, len(table))
    return verify


def _header(command: str, params: dict[str, Any], inputs: Mapping[str, str | None]
            ) -> dict[str, Any]:
    """The report's common header; a database input is described by its URL (password
    hidden), a Parquet folder by its name, a file by name, size and SHA-256."""
    from anonlab.database import is_database_url, masked
    from anonlab.report import report_header

    files: dict[str, PathLike | None] = {
        k: v for k, v in inputs.items()
        if v is None or not (is_database_url(v) or Path(v).is_dir())}
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


def run_fuse(settings: FuseSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Fuse every provider's table in this process (plain maximum, not private) and write.

    Writes ``output`` (the fused table), ``report`` (JSON) and ``html`` as
    asked, all or none; raises :class:`AnonlabError` on a user error or a
    failed verification. The result holds the report and the fused table.
    """
    from anonlab.fusion.engine import fuse

    started = time.perf_counter()
    targets = _targets(settings)
    _nothing_to_write(settings, ("output", "report", "html"))
    config = load_config(settings.config,
                         overrides={"score": settings.score, "keep_id": settings.keep_id})
    inputs = fuse_inputs(settings.config, config)
    with Outputs(targets, inputs=inputs.values()) as outputs:
        result = fuse(config, progress=progress)
        verified = _check_release(outputs, result.table, _templates(config), settings.verify)
        report_path = outputs.path("report")
        params = {"config": stored_path(settings.config, report_path),
                  "score": config.fusion.score, "s_aggregate": config.fusion.s_aggregate,
                  "keep_id": config.fusion.keep_id, "class": config.class_column,
                  "templates": [{"qid": t.qid, "k": t.k} for t in config.templates],
                  "output": stored_path(settings.output, report_path),
                  "report": stored_path(settings.report, report_path),
                  "verify": settings.verify}
        report = _header("fuse", params, inputs)
        report.update(result.report())
        report["protocol"] = "in-process (plain maximum, not private)"
        report["verified"] = verified
        report["runtime_seconds"] = time.perf_counter() - started
        report["paths"] = paths_convention(report_path)
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=result.table, written=written)


# -- party ---------------------------------------------------------------------------------------


def _check_party_outputs(settings: PartySettings, me: PartyConfig) -> None:
    """A helper writes no table; every party writes something."""
    if me.role == "helper":
        if settings.output is not None:
            raise AnonlabError(
                f"output is not for party '{me.id}': it is a helper, holds no data and writes "
                "no table; leave output out (give report)", parameter="output")
        _nothing_to_write(settings, ("report", "html"))
    else:
        _nothing_to_write(settings, ("output", "report", "html"))


def party_inputs(config: FusionConfig, me: PartyConfig) -> list[str]:
    """Files a party reads (its own data, the config, taxonomies, TLS files): never outputs."""
    candidates = [me.file, config.source, *config.taxonomies.values(), *config.tls.values()]
    return [p for p in candidates if isinstance(p, str) and p != CONTINUOUS]


def run_party(settings: PartySettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Run one party of a networked fusion and write its outputs, all or none.

    A provider writes the fused table (``output``), every party its report;
    nothing is written unless every party finished (the DONE exchange) and,
    with ``verify``, the staged table passed the template check.
    """
    from anonlab.fusion.party import check_party_setup
    from anonlab.fusion.party import run_party as run_party_process

    config = load_config(settings.config)
    me = config.party(settings.party)
    _check_party_outputs(settings, me)
    with Outputs(_targets(settings), inputs=party_inputs(config, me)) as outputs:
        check_party_setup(config, settings.party)
        outcome = run_party_process(config, settings.party, timeout=settings.timeout,
                                    connect_timeout=settings.connect_timeout, progress=progress)
        table = outcome.result.table if outcome.result is not None else None
        verified = _check_release(outputs, table, _templates(config), settings.verify)
        report_path = outputs.path("report")
        params = {"config": stored_path(config.source, report_path), "party": settings.party,
                  "timeout": settings.timeout, "connect_timeout": settings.connect_timeout,
                  "output": stored_path(settings.output, report_path),
                  "verify": settings.verify}
        report = _header("party", params, {"data": me.file, "config": config.source})
        report.update(outcome.report())
        report["verified"] = verified
        report["paths"] = paths_convention(report_path)
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=table, written=written)
