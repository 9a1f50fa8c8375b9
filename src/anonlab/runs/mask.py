"""The masking run: ``anonlab mask`` (sdcMicro's masking methods, docs/masking.md).

:func:`run_mask` reads the table through the one reader (every value text), gives
every column a role (the masked ``columns`` are the quasi-identifiers; a column the
method reads besides them, e.g. PRAM's strata, not named elsewhere is released as
it is), applies the method chosen by name from :mod:`anonlab.masking.registry`
with its ``parameters``, stages the release, re-reads it and checks it with the
independent checker (:func:`anonlab.verify.masking.check_masking`: exactly, by
redrawing, when the run has a seed), measures it (the EM4ADOM measures that apply,
:func:`anonlab.metrics.evaluate`: numeric ones for a numeric method, nominal ones
for a categorical one) and its re-identification risk as written (the risk step
every release takes, :func:`anonlab.risk.release.release_risk_report`), then stages
report and HTML and renames all of them into place, or nothing.

PRAM's risk: the ``risk`` section reads the release as if its values were true; a
PRAM record's released key equals its true key only with the chance the matrix gives
(its diagonal), so the report adds ``risk_pram`` (:func:`pram_risk`), the
prosecutor risk that accounts for it (docs/masking.md, "Risk").

On an engine (``engine = "dask"`` or a folder ``output`` ending in ``/``;
:func:`uses_engine`) the row-wise methods (``topbot``, ``recode`` with its breaks
given, ``pram`` with a matrix given, additive ``noise``:
:data:`anonlab.masking.pieces.ENGINE_METHODS`) run piece by piece and write the
release as a folder of Parquet parts, the same release as in memory
(:func:`_mask_on_engine`); every other method is refused in one line saying why
(docs/masking.md, "Engines").

A TOML file holds the run's settings under their Python names and the method's
under ``[parameters]``; a path among the method's parameters (PRAM's ``matrix``)
is read relative to the TOML file, as the run's own paths are.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
from pydantic import Field, field_validator, model_validator

from anonlab.errors import AnonlabError
from anonlab.outputs import Outputs, output_target
from anonlab.paths import PathLike
from anonlab.progress import ProgressFn
from anonlab.risk.release import ReleaseRiskSettings, risk_last
from anonlab.runs.common import (
    EngineSettings,
    RoleSettings,
    RunResult,
    data_inputs,
    input_tables,
    is_folder_output,
    paths_convention,
    stage_release,
    stage_report,
    stored_paths,
)
from anonlab.settings import read_toml, split_names

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.masking.registry import MaskingMethod


#: the most records the EM4ADOM measures compare pair by pair (a random sample above)
MEASURE_RECORDS = 5_000


class MaskSettings(EngineSettings, RoleSettings, ReleaseRiskSettings):
    """Everything :func:`run_mask` needs (module text).

    ``method`` names a masking method (:func:`anonlab.masking.registry.method_names`),
    ``columns`` the columns it masks, ``parameters`` its parameters under sdcMicro's
    names (docs/masking.md), ``seed`` the seed of a method that draws random numbers
    (``None``: a fresh one, not written to the report). ``output``, ``report``,
    ``html`` are written when given; ``verify`` re-reads the release and checks it.
    """

    path_fields: ClassVar[tuple[str, ...]] = (
        "input",
        "sensitive_hierarchies",
        "output",
        "report",
        "html",
    )
    input: Any
    method: str
    columns: list[str]
    parameters: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = Field(default=None, ge=0)
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

    @field_validator("columns", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return split_names(value) if isinstance(value, str | list | tuple) else value

    @field_validator("method")
    @classmethod
    def _method(cls, value: str) -> str:
        from anonlab.masking.registry import method_names

        if value not in method_names():
            raise ValueError(f"'{value}' is not a masking method: give one of {method_names()}")
        return value

    @model_validator(mode="after")
    def _method_parameters(self) -> Self:
        """The columns named, and the method's parameters as its model reads them."""
        if not self.columns:
            raise AnonlabError("columns: name the columns to mask", parameter="columns")
        from anonlab.masking.registry import get_method, method_params

        # the method's parameters as its model reads them (refused here, before any work)
        self.parameters = method_params(get_method(self.method), self.parameters).model_dump()
        if uses_engine(self):
            from anonlab.masking.pieces import engine_refusal

            reason = engine_refusal(self.method, self.parameters, self.columns)
            if reason is not None:
                raise AnonlabError(reason, parameter="engine")
            if not is_folder_output(self.output) or self.output_table is not None:
                raise AnonlabError(
                    f"output: engine '{self.engine}' writes the release as a folder of "
                    "Parquet parts: give output as a folder path ending in '/'",
                    parameter="output",
                )
        return self

    @classmethod
    def load(
        cls, config: PathLike | None = None, /, *, overwrite: bool = False, **overrides: Any
    ) -> Self:
        """Settings from an optional TOML file with ``overrides`` on top; the method's path
        parameters in the file's ``[parameters]`` are read relative to the file, and
        parameters given as overrides are merged into the file's."""
        if config is None:
            return super().load(config, overwrite=overwrite, **overrides)
        table = read_toml(config).get("parameters") or {}
        given = dict(overrides.get("parameters") or {})
        if isinstance(table, Mapping) and given:
            overrides = {**overrides, "parameters": {**table, **given}}
        settings = super().load(config, overwrite=overwrite, **overrides)
        if isinstance(table, Mapping):
            base = Path(config).parent
            settings.parameters = {
                k: v if k in given or k not in table else _beside(k, v, base)
                for k, v in settings.parameters.items()
            }
        return settings


def _beside(name: str, value: Any, base: Path) -> Any:
    """A path parameter (``matrix``) of a TOML file, relative to the file's folder."""
    if name != "matrix":
        return value
    if isinstance(value, str) and not Path(value).is_absolute():
        return str(base / value)
    if isinstance(value, Mapping):
        return {k: _beside(name, v, base) for k, v in value.items()}
    return value


def run_mask(settings: MaskSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Mask ``settings.columns`` of ``settings.input``; write release, report and HTML, or
    nothing.

    Without any output path the release is only returned (:attr:`RunResult.release`),
    verified in memory. ``progress`` hears of the read and of the method.
    """
    from anonlab.dataset import roles_report
    from anonlab.io import read_table
    from anonlab.masking import mask
    from anonlab.masking.registry import get_method, method_params
    from anonlab.risk.release import check_risk_columns, release_risk_report

    s = settings
    started = time.perf_counter()
    method = get_method(s.method)
    params = method_params(method, s.parameters)  # refused before anything is read
    seed = s.seed
    if method.randomized and seed is None:
        seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> 1)
    if uses_engine(s):
        return _mask_on_engine(s, method, params, seed, progress, started)
    with Outputs(
        {"output": output_target(s.output, s.output_table), "report": s.report, "html": s.html},
        inputs=[s.input, *s.sensitive_hierarchies.values(), *_parameter_files(params)],
        input_tables=input_tables(s.input, s.table),
    ) as outputs:
        if progress is not None:
            progress("read", 0, None)
        frame = read_table(s.input, **s.read_options())
        roles, dropped, extra, named = _roles(s, [str(c) for c in frame.columns], params)
        check_risk_columns([c for c in roles if c not in dropped], s.sensitive, s, s.columns)
        if progress is not None:
            progress(f"mask: {method.name}", 0, None)
        result = mask(frame, method.name, s.columns, seed=seed, **params.model_dump())
        release = result.release.drop(columns=dropped)
        report = _header(s, outputs.path("report"), method, seed)
        report.update(result.summary())

        def check(written: pd.DataFrame) -> None:
            if s.verify:  # exactly, by drawing again from the seed the report does not hold
                redraw = {**report, "seed": seed if method.randomized else None}
                _verify(frame.drop(columns=dropped), written, s.columns, redraw)

        released = stage_release(outputs, release, check)
        report["verified"] = s.verify
        by_other = [c for c in roles if c not in named and c not in extra]
        report.update(roles_report(roles, s.other, by_other))
        report["measures"] = measures(frame, released, s.columns, method)
        report.update(release_risk_report(released, s.sensitive, s, qi=s.columns))
        if method.name == "pram":
            report["risk_pram"] = pram_risk(released, s.columns, report, s)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, release, written)


def uses_engine(settings: MaskSettings) -> bool:
    """Whether the run goes over an engine's pieces (:func:`_mask_on_engine`): on Dask, or
    with a folder ``output``."""
    return settings.engine != "numpy" or is_folder_output(settings.output)


def _roles(
    s: MaskSettings, columns: Sequence[str], params: Any
) -> tuple[dict[str, Any], list[str], list[str], set[str]]:
    """Every column's role, the dropped (identifying) ones, the columns the method reads
    besides the masked ones (released as they are) and every column named."""
    from anonlab.dataset import Role, Roles

    named = {*s.columns, *s.identifying, *s.sensitive, *s.insensitive}
    extra = [c for c in params.read_columns() if c not in named]
    given = Roles.of(s.identifying, s.sensitive, [*s.insensitive, *extra], s.other)
    roles = given.assign(
        [str(c) for c in columns],
        s.columns,
        ("columns", "identifying", "sensitive", "insensitive"),
    )
    dropped = [c for c, r in roles.items() if r == Role.IDENTIFYING]
    lost = [c for c in params.read_columns() if c in dropped]
    if lost:
        raise AnonlabError(
            f"{', '.join(lost)} is identifying, so not released: a column the method "
            "reads (a stratum) must be released",
            parameter="identifying",
        )
    return dict(roles), dropped, extra, named


# ---------------------------------------------------------------------------
# Over an engine's pieces
# ---------------------------------------------------------------------------
#
# The input is read as the engine's pieces (a Parquet or CSV file or folder; a database
# table, a query or an Excel sheet is read whole by the one reader first and cut into
# pieces). :func:`anonlab.masking.pieces.mask_pieces` masks every piece and writes one
# Parquet part per piece into the folder :class:`Outputs` stages; the independent checker
# runs on every piece and its part (:func:`anonlab.verify.masking.check_masking_pieces`);
# the risk section is measured on the written folder through the engine's frequency set;
# the EM4ADOM measures read the masked columns alone (of the input and of the release),
# then sample records as in memory, so every figure of the report is the in-memory run's.


def _read_first(s: MaskSettings) -> bool:
    """Whether the one reader reads the input whole before it is cut into pieces (a
    database, an Excel workbook, or ``sheet``, ``table`` or ``query`` given)."""
    from anonlab.database import is_database_url
    from anonlab.sources import file_format

    source = str(s.input)
    if is_database_url(source) or any(
        getattr(s, name) is not None for name in ("sheet", "table", "query")
    ):
        return True
    path = Path(source)
    return "://" not in source and path.is_file() and file_format(path) == "excel"


def _engine_table(s: MaskSettings) -> Any:
    """The input as an engine's pieces (:func:`_read_first`)."""
    from dataclasses import replace

    from anonlab.engine.table import open_table
    from anonlab.io import read_table

    if not _read_first(s):
        return open_table(s.input, delimiter=s.delimiter)
    frame = read_table(s.input, **s.read_options())
    return replace(open_table(frame), source=f"'{s.input}'")


def _columns_of(table: Any, names: Sequence[str], batch_rows: int) -> pd.DataFrame:
    """``names`` of every piece of ``table``, read whole as text (the one reader's rule)."""
    import pandas as pd

    from anonlab.masking.pieces import text_frame

    frames = [
        text_frame(batch) for piece in table.pieces for batch in piece.batches(names, batch_rows)
    ]
    if not frames:
        return pd.DataFrame({name: pd.Series([], dtype=object) for name in names})
    return pd.concat(frames, ignore_index=True)


def _first_rows(engine: Any, table: Any) -> list[int]:
    """Each piece's first record's position in the table (a pass counting records)."""
    from anonlab.masking.pieces import extent_piece

    names = list(table.column_names[:1])
    extents = engine.map_pieces(table, extent_piece, names, [], engine.batch_rows)
    starts = np.cumsum([0, *(rows for rows, _ in extents)])[:-1]
    return [int(r) for r in starts]


def _mask_on_engine(
    s: MaskSettings,
    method: MaskingMethod,
    params: Any,
    seed: int | None,
    progress: ProgressFn | None,
    started: float,
) -> RunResult:
    """:func:`run_mask` over an engine's pieces (section text)."""
    from contextlib import closing

    from anonlab.dataset import roles_report
    from anonlab.engine.base import base_engine
    from anonlab.engine.table import open_table
    from anonlab.io import read_table
    from anonlab.masking.pieces import mask_pieces
    from anonlab.risk.release import check_risk_columns, release_risk_report
    from anonlab.runs.common import open_run_engine
    from anonlab.verify.masking import check_masking_pieces

    with (
        Outputs(
            {"output": s.output, "report": s.report, "html": s.html},
            inputs=[s.input, *s.sensitive_hierarchies.values(), *_parameter_files(params)],
            input_tables=input_tables(s.input, s.table),
            folders=("output",),
        ) as outputs,
        closing(open_run_engine(s)) as engine,
    ):
        if progress is not None:
            progress("read", 0, None)
        table = _engine_table(s)
        roles, dropped, extra, named = _roles(s, table.column_names, params)
        keep = [c for c in table.column_names if c not in dropped]
        check_risk_columns(keep, s.sensitive, s, s.columns)
        for path in _parameter_files(params):  # read here: a bad file is one line, not a piece's
            read_table(path)
        staged = outputs.stage_folder("output")
        base = base_engine(engine)
        masked = mask_pieces(
            base,
            table,
            method.name,
            s.columns,
            params.model_dump(),
            keep,
            str(staged.path),
            seed=seed if method.randomized else None,
            progress=progress,
        )
        if not masked.rows:  # the one reader's line, as in memory (not the empty release's)
            raise table.no_rows_error()
        report = _header(s, outputs.path("report"), method, None)
        report.update(
            {
                "method": method.name,
                "masked_columns": list(s.columns),
                "records": masked.rows,
                "masking": masked.section,
            }
        )
        if s.verify:  # exactly, by drawing again from the seed the report does not hold
            redraw = {**report, "seed": seed if method.randomized else None}
            first_rows = masked.first_rows or _first_rows(base, table)
            problems = check_masking_pieces(
                base, table, staged.path, s.columns, keep, redraw, first_rows, progress=progress
            )
            if problems:
                raise AnonlabError(f"verification failed, nothing written: {problems[0]}")
        report["verified"] = s.verify
        by_other = [c for c in roles if c not in named and c not in extra]
        report.update(roles_report(roles, s.other, by_other))
        original = _columns_of(table, s.columns, base.batch_rows)
        released = _columns_of(open_table(staged.path), s.columns, base.batch_rows)
        report["measures"] = measures(original, released, s.columns, method)
        report.update(
            release_risk_report(
                staged.path, s.sensitive, s, engine=engine, columns=keep, qi=s.columns
            )
        )
        if method.name == "pram":
            keys = list(dict.fromkeys([*(s.attacker_columns or s.columns), *params.strata]))
            as_written = _columns_of(open_table(staged.path), keys, base.batch_rows)
            report["risk_pram"] = pram_risk(as_written, s.columns, report, s)
        report["engine"] = {"name": engine.name, "parts": masked.parts}
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, None, written)


def _parameter_files(params: Any) -> list[str]:
    """The files among a method's parameters (read, so never written over)."""
    files: list[str] = []
    for name in type(params).path_parameters:
        value = getattr(params, name)
        if isinstance(value, str):
            files.append(value)
        elif isinstance(value, Mapping):
            files.extend(str(v) for v in value.values())
    return files


def _verify(
    original: pd.DataFrame, release: pd.DataFrame, columns: Sequence[str], report: Mapping[str, Any]
) -> None:
    """Check the release with the independent checker; refuse it (nothing written) if it
    fails."""
    from anonlab.verify.masking import check_masking

    problems = check_masking(original, release, columns, report)
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def measures(
    original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str], method: MaskingMethod
) -> dict[str, Any]:
    """The EM4ADOM measures that apply to the masked columns (docs/em4adom.md): IL1, ILh,
    IL2/IL3, record linkage and interval disclosure of a numeric method's columns (its
    released values numbers); ZIL, ILR and DLD of a categorical method's, read as
    nominal. Record linkage compares every pair of records, so a table of more than
    :data:`MEASURE_RECORDS` records is measured on that many, drawn at random
    (``default_rng(0)``, the same records of the original and of the release; the
    section's ``sample_records`` says so)."""
    from anonlab.metrics import evaluate

    names = list(columns)
    left = original[names].reset_index(drop=True)
    right = released[names].reset_index(drop=True)
    sampled = len(left) > MEASURE_RECORDS
    if sampled:
        rows = np.sort(np.random.default_rng(0).choice(len(left), MEASURE_RECORDS, replace=False))
        left, right = (
            left.iloc[rows].reset_index(drop=True),
            right.iloc[rows].reset_index(drop=True),
        )
    if method.kind == "numeric":
        result = evaluate(left, right, columns=names)
    else:
        result = evaluate(left, right, columns=[], nominal=names)
    section = result.summary()
    if sampled:
        section["sample_records"] = MEASURE_RECORDS
        section["notes"] = [
            *section.get("notes", []),
            f"measured on {MEASURE_RECORDS:,} of {len(original):,} records drawn at random "
            "(record linkage compares every pair)",
        ]
    return section


def pram_risk(
    released: pd.DataFrame,
    columns: Sequence[str],
    report: Mapping[str, Any],
    settings: ReleaseRiskSettings,
) -> dict[str, Any]:
    """The prosecutor risk of a PRAM release that accounts for the randomization.

    An attacker who knows a record's true key looks for released records with that
    key; the record is among them only if PRAM left each of its PRAMed values as
    they were, which happens with the chance ``prod_c P_c[x_c, x_c]`` (the diagonal
    of the matrix that was used, in the record's stratum), and then it is one of the
    ``f`` released records with that key. The record's risk is that chance over
    ``f``; its expected value over the randomization given the released class is what
    Shlomo and Skinner (2010, "Assessing the protection provided by misclassification-
    based disclosure limitation methods for survey microdata", Annals of Applied
    Statistics 4(3)) measure for misclassification. Here the chance is taken at the
    released value ``y`` (``P[y, y]``, the largest it can be for the class, as the
    publisher who published the matrix can compute it), so the figures bound the
    risk of the records that kept their values. Key columns that PRAM did not mask
    (given as ``attacker_columns``) count as kept.
    """
    section = report["masking"]
    strata = list(section.get("strata", []))
    keys = list(settings.attacker_columns or columns)
    n = len(released)
    frame = released[keys].astype(str)
    sizes = frame.groupby(keys, sort=False, dropna=False)[keys[0]].transform("size").to_numpy()
    keep = np.ones(n, dtype=np.float64)
    if strata:
        stratum_keys = released[strata].astype(str).apply(tuple, axis=1)
    for name in columns:
        if name not in keys:
            continue
        entry = section["columns"][name]
        index = {level: i for i, level in enumerate(entry["levels"])}
        codes = released[name].astype(str).map(index).to_numpy(dtype=np.float64, na_value=-1)
        diagonals = np.asarray([np.diag(np.asarray(m["matrix"])) for m in entry["matrices"]])
        place = {
            tuple(str(m["stratum"][c]) for c in strata): i for i, m in enumerate(entry["matrices"])
        }
        which = (
            stratum_keys.map(place).to_numpy(dtype=np.int64)
            if strata
            else np.zeros(n, dtype=np.int64)
        )
        present = codes >= 0
        keep[present] *= diagonals[which[present], codes[present].astype(np.int64)]
    risk = keep / sizes
    return {
        "rule": "chance the record kept its PRAMed values (the matrix diagonal at its "
        "released value) over its released class size (Shlomo and Skinner 2010)",
        "attacker_columns": keys,
        "prosecutor_highest": float(risk.max()) if n else 0.0,
        "prosecutor_average": float(risk.mean()) if n else 0.0,
        "records_above_max_risk": int((risk > settings.max_risk).sum()),
        "max_risk": settings.max_risk,
    }


def _header(
    settings: MaskSettings, report_path: Path | None, method: MaskingMethod, seed: int | None
) -> dict[str, Any]:
    """The report's common fields; every path stored as ``paths`` says. The seed is never
    written (with it and the release, the noise of a randomized method can be drawn again
    and taken off): ``seed_given`` says whether one was, and ``anonlab verify --seed``
    redraws the release exactly for the custodian who keeps it."""
    from anonlab.report import report_header

    parameters = settings.model_dump(by_alias=True)
    parameters["seed"] = None
    parameters = stored_paths(parameters, settings.path_fields, report_path)
    parameters["parameters"] = stored_paths(
        parameters.get("parameters") or {}, method.params.path_parameters, report_path
    )
    report = report_header("mask", risk_last(parameters), data_inputs(settings))
    report["paths"] = paths_convention(report_path)
    report["sdcmicro"] = method.sdcmicro
    report["randomized"] = method.randomized
    report["seed"] = None
    report["seed_given"] = method.randomized and settings.seed is not None
    return report
