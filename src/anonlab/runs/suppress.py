"""The cell-suppression run: ``anonlab suppress`` (sdcMicro's ``localSuppression``/``kAnon``).

:func:`run_suppress` reads the table through the one reader, gives every column a
role (the keys are the quasi-identifiers; strata columns not named elsewhere are
released as they are), blanks key cells with :func:`anonlab.suppression.suppress`,
stages the release, re-reads it and checks it with the independent checker
(:func:`anonlab.verify.suppression.check_suppression`), measures its
re-identification risk as written (the risk step every release takes,
:func:`anonlab.risk.release.release_risk_report`), then stages report and HTML and
renames all of them into place, or nothing.

The method runs on the table's frequency set of (stratum, key tuple) groups. On an engine
(``engine = "dask"``, or a folder ``output`` ending in ``/``) the engine counts that set
and one pass over its pieces writes the release as Parquet parts
(:mod:`anonlab.suppression.pieces`); the parts are read back and checked as a file
release is, and a file output is gathered from them. The release is the in-memory one, cell
for cell (docs/suppression.md, "Engines").

A TOML file holds the parameters under their Python names; ``importance`` is a table
of key = rank, ``combs`` a list of sizes or of ``[size, k]`` pairs, or text
``"5=10,4=20,3"``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator

from anonlab.errors import AnonlabError
from anonlab.outputs import Outputs, output_target
from anonlab.progress import ProgressFn
from anonlab.risk.release import ReleaseRiskSettings, risk_last
from anonlab.runs.common import (
    EngineSettings,
    RoleSettings,
    RunResult,
    check_engine_io,
    data_inputs,
    input_tables,
    is_folder_output,
    open_run_engine,
    paths_convention,
    stage_release,
    stage_report,
    stored_paths,
)
from anonlab.settings import Settings, split_names

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.dataset import Role
    from anonlab.engine.table import Table
    from anonlab.suppression import SuppressionResult

#: how the risk section reads a blank, beside the k-anonymity the method reached
RISK_BLANKS = (
    "the risk section groups records by their released key tuples, a blank a value of its "
    "own (records equal cell for cell); the k reached per combination counts a blank as "
    "matching every value, weighted by alpha (docs/suppression.md)"
)


def parse_combs(value: Any) -> list[tuple[int, int | None]]:
    """``"5=10,4=20,3"``, ``[5, 4]``, ``[[5, 10], [4, 20]]`` or ``["5=10", "4"]`` to
    ``(size, k)`` pairs, ``k`` ``None`` where the run's ``k`` applies."""
    items: list[Any]
    if isinstance(value, str):
        items = [part for part in value.split(",") if part.strip()]
    elif isinstance(value, list | tuple):
        items = []
        for item in value:
            items.extend(
                [p for p in item.split(",") if p.strip()] if isinstance(item, str) else [item]
            )
    else:
        raise ValueError("give sizes, SIZE=K items or [size, k] pairs")
    out: list[tuple[int, int | None]] = []
    for item in items:
        try:
            if isinstance(item, str):
                size, sep, kk = item.partition("=")
                out.append((int(size), int(kk) if sep else None))
            elif isinstance(item, list | tuple):
                size_value, kk_value = item
                out.append((int(size_value), int(kk_value)))
            else:
                out.append((int(item), None))
        except (TypeError, ValueError):
            raise ValueError(
                f"{item!r} is not SIZE or SIZE=K: e.g. combs = '5=10,4=20,3'"
            ) from None
    return out


def parse_importance(value: Any) -> dict[str, int]:
    """``"a=1,b=2"``, ``["a=1", "b=2"]`` or a table ``{a = 1, b = 2}`` to key -> rank."""
    if isinstance(value, Mapping):
        return {str(key): int(rank) for key, rank in value.items()}
    items = split_names(value)
    out: dict[str, int] = {}
    for item in items:
        key, sep, rank = item.partition("=")
        try:
            if not sep or not key.strip():
                raise ValueError
            out[key.strip()] = int(rank)
        except ValueError:
            raise ValueError(f"{item!r} is not KEY=RANK: e.g. importance = 'sex=1,age=2'") from None
    return out


class SuppressSettings(EngineSettings, RoleSettings, ReleaseRiskSettings):
    """Everything :func:`run_suppress` needs (module text).

    ``qi`` are the key variables (sdcMicro's ``keyVars``); ``k`` the smallest
    frequency; ``importance`` a rank per key (1 = blanked last; default sdcMicro's:
    fewer distinct values, more important); ``combs`` combination sizes, each with its
    own k or ``k``; ``strata`` columns within each of whose values the keys are made
    k-anonymous; ``alpha`` how much a record with blanks counts towards another's
    frequency (1, sdcMicro's default: a blank matches every value).
    """

    path_fields: ClassVar[tuple[str, ...]] = (
        "input",
        "sensitive_hierarchies",
        "output",
        "report",
        "html",
    )

    input: Any
    qi: list[str]
    k: int = Field(default=2, ge=1)
    importance: dict[str, int] | None = None
    combs: list[tuple[int, int | None]] | None = None
    strata: list[str] = Field(default_factory=list)
    alpha: float = Field(default=1.0, ge=0.0, le=1.0)
    output: str | None = None
    output_table: str | None = None
    report: str | None = None
    html: str | None = None
    verify: bool = True

    @field_validator("input", mode="before")
    @classmethod
    def _source(cls, value: Any) -> Any:
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if isinstance(value, str):
            return value
        raise ValueError("give a file path or a SQLAlchemy URL")

    @field_validator("qi", "strata", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return split_names(value) if isinstance(value, str | list | tuple) else value

    @field_validator("combs", mode="before")
    @classmethod
    def _combs(cls, value: Any) -> Any:
        return None if value is None else parse_combs(value)

    @field_validator("importance", mode="before")
    @classmethod
    def _importance(cls, value: Any) -> Any:
        return None if value is None else parse_importance(value)

    def pairs(self) -> list[tuple[int, int]] | None:
        """``combs`` with every k given (``k`` where an item has none)."""
        if self.combs is None:
            return None
        return [(size, self.k if kk is None else kk) for size, kk in self.combs]


def uses_engine(settings: SuppressSettings) -> bool:
    """Whether the run goes through an engine: on Dask, or with a folder output."""
    return settings.engine != "numpy" or is_folder_output(settings.output)


def run_suppress(settings: SuppressSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Suppress key cells of ``settings.input``; write release, report and HTML, or nothing.

    Without any output path the release is only returned (:attr:`RunResult.release`),
    verified in memory. ``progress`` hears of the read and of the method. On an engine
    (:func:`uses_engine`) the engine counts the groups and writes the release
    (:func:`_suppress_on_engine`); the report is the same.
    """
    from anonlab.dataset import roles_report
    from anonlab.io import read_table
    from anonlab.metrics.certainty import classes_loss, frame_classes
    from anonlab.risk.release import check_risk_columns, release_risk_report
    from anonlab.suppression import suppress

    s = settings
    started = time.perf_counter()
    on_engine = uses_engine(s)
    if on_engine:
        check_engine_io(s, file_output=True)
    with Outputs(
        {"output": output_target(s.output, s.output_table), "report": s.report, "html": s.html},
        inputs=[s.input, *s.sensitive_hierarchies.values()],
        input_tables=input_tables(s.input, s.table),
        folders=("output",) if is_folder_output(s.output) else (),
    ) as outputs:
        if progress is not None:
            progress("read", 0, None)
        if on_engine:
            from anonlab.engine.table import open_table

            table = open_table(s.input, delimiter=s.delimiter)
            columns = [str(c) for c in table.column_names]
        else:
            frame = read_table(s.input, **s.read_options())
            columns = [str(c) for c in frame.columns]
        roles, dropped, named, insensitive = _roles(s, columns)
        check_risk_columns([c for c in roles if c not in dropped], s.sensitive, s, s.qi)
        if progress is not None:
            progress("suppress", 0, None)
        if on_engine:
            result, values, released = _suppress_on_engine(s, table, outputs, dropped, progress)
        else:
            result = suppress(
                frame,
                s.qi,
                s.k,
                importance=s.importance,
                combs=s.pairs(),
                strata=s.strata,
                alpha=s.alpha,
            )
            release = result.release.drop(columns=dropped)
            values = {
                q: [str(v) for v in frame[q].astype("string").fillna("").unique()] for q in s.qi
            }

            def check(written: pd.DataFrame) -> None:
                if s.verify:
                    _verify(frame, written, s, result.suppressed, dropped)

            released = stage_release(outputs, release, check)
        report = _header(s, outputs.path("report"))
        report.update(result.summary())
        report["verified"] = s.verify
        by_other = [c for c in roles if c not in named and c not in insensitive]
        report.update(roles_report(roles, s.other, by_other))
        report.update(release_risk_report(released, s.sensitive, s, qi=s.qi))
        report["risk_blanks"] = RISK_BLANKS
        report["loss"] = classes_loss(frame_classes(released, s.qi), s.qi, values, {})
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, released if on_engine else release, written)


def _roles(
    s: SuppressSettings, columns: list[str]
) -> tuple[dict[str, Role], list[str], set[str], list[str]]:
    """Every column's role (the keys the quasi-identifiers, strata named nowhere else
    insensitive), the dropped columns, the columns named and the insensitive ones; a stratum
    that would be dropped is refused."""
    from anonlab.dataset import Role, Roles

    named = {*s.qi, *s.identifying, *s.sensitive, *s.insensitive}
    insensitive = [*s.insensitive, *(c for c in s.strata if c not in named)]
    given = Roles.of(s.identifying, s.sensitive, insensitive, s.other)
    roles = given.assign(columns, s.qi)
    dropped = [c for c, r in roles.items() if r == Role.IDENTIFYING]
    lost = [c for c in s.strata if c in dropped]
    if lost:
        raise AnonlabError(
            f"stratum {', '.join(lost)} is identifying, so not released: a stratum "
            "column must be released",
            parameter="strata",
        )
    return dict(roles), dropped, named, insensitive


def _suppress_on_engine(
    s: SuppressSettings,
    table: Table,
    outputs: Outputs,
    dropped: list[str],
    progress: ProgressFn | None,
) -> tuple[SuppressionResult, dict[str, list[str]], pd.DataFrame]:
    """The method on the engine's frequency set, the release written by one pass over the
    pieces into the staged folder (a scratch folder for a file output, gathered from the
    parts), read back and checked against the input by the independent checker; returns the
    method's result, each key's original values and the release as written."""
    from contextlib import closing

    from anonlab.io import read_table
    from anonlab.runs.generalize_steps import release_parts
    from anonlab.suppression.pieces import engine_suppression, write_parts

    with release_parts(outputs) as folder:
        with closing(open_run_engine(s)) as engine:
            result, plan = engine_suppression(
                engine,
                table,
                s.qi,
                s.k,
                importance=s.importance,
                combs=s.pairs(),
                strata=s.strata,
                alpha=s.alpha,
                drop=dropped,
                progress=progress,
            )
            write_parts(engine, table, plan, folder, result, progress)
        released = read_table(folder)
        if s.verify:
            original = read_table(s.input, **s.read_options())
            _verify(original, released, s, result.suppressed, dropped)
    start = len(plan.columns) - len(plan.keys)
    values = {q: list(plan.dictionaries[start + j]) for j, q in enumerate(plan.keys)}
    return result, values, released


def _verify(
    original: pd.DataFrame,
    release: pd.DataFrame,
    s: SuppressSettings,
    suppressed: Mapping[str, int],
    dropped: list[str],
) -> None:
    """Check the release with the independent checker; refuse it (nothing written) if it
    fails."""
    from anonlab.verify.suppression import check_suppression

    problems = check_suppression(
        original,
        release,
        s.qi,
        s.k,
        combs=s.pairs(),
        strata=s.strata,
        alpha=s.alpha,
        suppressed=suppressed,
        dropped=dropped,
    )
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def _header(settings: Settings, report_path: Path | None) -> dict[str, Any]:
    """The report's common fields; every path stored as ``paths`` says."""
    from anonlab.report import report_header

    parameters = stored_paths(settings.model_dump(by_alias=True), settings.path_fields, report_path)
    report = report_header("suppress", risk_last(parameters), data_inputs(settings))
    report["paths"] = paths_convention(report_path)
    return report
