"""``perturb`` and its inverse through an engine: the rows stay in pieces, the release is a folder.

:func:`perturb_on_engine` is :func:`anonlab.runs.perturb.run_perturb` when the
settings ask for an engine (``engine = "dask"``, a folder ``output`` ending in
``/``, or a Dask DataFrame ``input``). Only the methods whose matrix is drawn
from the seed alone run there (obt and rotation,
:data:`anonlab.perturbation.transforms.ROW_WISE`): with the column moments
known, each record's release depends on that record only. rbt draws its angles
from the data's covariances and gdp adds a noise stream drawn record after
record over the whole table; both stay in memory.

Two passes over the rows (:mod:`anonlab.engine.perturb_pass`): the moments
(:meth:`Engine.moments`), then the row-wise map written as partitioned
Parquet into a folder staged by :class:`anonlab.outputs.Outputs`, which
renames it onto ``output`` with the key, library, report and page, or removes
it on any error. The transform is drawn from the seed exactly as in memory
(:func:`anonlab.perturbation.transforms.data_free_blocks`), so the release
equals the in-memory one to rounding of the moments (1e-12).

Verification and report: a release of at most :data:`IN_MEMORY_ROWS` records
is read back whole (the staged folder, by the one reader) with the input and
checked by the independent checker as in memory; its report, attacks and risk
section are the in-memory run's. A larger release is checked on a sample of
records (:func:`anonlab.engine.perturb_pass.sample_findings`: every pair's
distance, and inverting with the key as written); the report's privacy
figures, attacks, clustering agreement and risk section are measured on that
sample (``sample_records``).

:func:`invert_on_engine` restores a partitioned release with its key the same
way (the fingerprint checked from the release's moments first).
"""

from __future__ import annotations

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

    from anonlab.dataset import Role
    from anonlab.engine.base import Engine
    from anonlab.engine.perturb_pass import MappedTable
    from anonlab.engine.table import Table
    from anonlab.runs.perturb import InvertSettings, PerturbSettings

#: releases up to this many records are read back whole and checked as in memory
IN_MEMORY_ROWS = 2_000_000


def check_engine_settings(settings: PerturbSettings | InvertSettings, method: str | None
                          ) -> None:
    """Refuse, before any work, what the engines do not do: another method than a row-wise
    one, a database, an Excel sheet, a query, or a release that is not a folder."""
    from anonlab.perturbation.transforms import ROW_WISE
    from anonlab.runs.perturb import is_folder_output

    engine = f"engine '{settings.engine}'"
    if method is not None and method not in ROW_WISE:
        raise AnonlabError(f"method '{method}' runs in memory only: its transform depends on "
                           "the whole table (rbt: the columns' covariances; gdp: a noise stream "
                           f"drawn record after record); use {' or '.join(ROW_WISE)}, or "
                           "engine 'numpy' with a file output", parameter="method")
    if isinstance(settings.input, str) and is_database_url(settings.input):
        raise AnonlabError(f"input: {engine} reads Parquet and CSV files, folders and "
                           "DataFrames, not a database: export the table to Parquet",
                           parameter="input")
    for name in ("sheet", "table", "query"):
        if getattr(settings, name) is not None:
            raise AnonlabError(f"{name} applies to Excel and database inputs, which {engine} "
                               f"does not read: leave {name} out", parameter=name)
    if not is_folder_output(settings.output):
        raise AnonlabError(f"output: {engine} writes the release as a folder of Parquet parts: "
                           "give output as a folder path ending in '/'", parameter="output")


def _roles(table: Table, s: PerturbSettings
           ) -> tuple[list[str], dict[str, Role], list[str], list[str]]:
    """Perturbed columns, every column's role, those insensitive by ``other``, the dropped."""
    from anonlab.dataset import Role, assign_roles, without_role
    from anonlab.perturbation.table import check_names
    from anonlab.runs.perturb import ROLE_PARAMETERS

    columns = list(table.column_names)
    others = [*s.identifying, *s.sensitive, *s.insensitive]
    names = list(s.columns) if s.columns is not None else [c for c in columns if c not in others]
    check_names(names, columns)
    roles = assign_roles(columns, qi=names, identifying=s.identifying, sensitive=s.sensitive,
                         insensitive=s.insensitive, other=s.other,
                         role_parameters=ROLE_PARAMETERS)
    by_other = without_role(columns, names, others)
    dropped = [c for c, r in roles.items() if r == Role.IDENTIFYING]
    return names, roles, by_other, dropped


def _source_frame(source: Any, s: PerturbSettings | InvertSettings) -> pd.DataFrame:
    """The input read whole through the one reader (a Dask DataFrame computed first)."""
    from anonlab.runs.perturb import _read, is_dask_frame

    return _read(source.compute() if is_dask_frame(source) else source, s)


def _read_folder(folder: Path, columns: list[str]) -> pd.DataFrame:
    """A staged folder read back whole, as any reader of the output would read it."""
    from anonlab.io import read_table

    return read_table(folder, dtype=str, strings="arrow", doubles=columns)


def perturb_on_engine(s: PerturbSettings, *, progress: ProgressFn | None,
                      started: float) -> RunResult:
    """:func:`anonlab.runs.perturb.run_perturb` on an engine (module text)."""

    from anonlab.dataset import roles_report
    from anonlab.engine.base import AffineRows
    from anonlab.engine.perturb_pass import SAMPLE_ROWS, map_rows
    from anonlab.engine.table import open_table
    from anonlab.perturbation.key import PerturbationKey
    from anonlab.perturbation.library import fresh_seed
    from anonlab.perturbation.transforms import _assemble, data_free_blocks
    from anonlab.risk.release import check_risk_columns
    from anonlab.runs.perturb import (
        PERTURB_OUTPUTS,
        _file_of,
        _library,
        _perturb_report,
        _reread_key,
        _stage_json,
        _stage_key,
        _stage_report,
        release_risk,
    )

    check_engine_settings(s, s.method)
    library_exists = s.library is not None and Path(s.library).exists()
    targets = {name: getattr(s, name) for name in PERTURB_OUTPUTS}
    targets["library"] = None if library_exists else s.library
    inputs = [_file_of(s.input), s.library if library_exists else None,
              *s.sensitive_hierarchies.values()]
    with Outputs(targets, inputs=inputs, folders=("output",)) as outputs, blas_threads(1), \
            closing(open_run_engine(s)) as engine:
        seed = s.seed if s.seed is not None else fresh_seed()
        table = open_table(s.input, delimiter=s.delimiter)
        names, roles, by_other, dropped = _roles(table, s)
        keep = [c for c in table.column_names if c not in dropped]
        check_risk_columns(keep, s.sensitive, s)
        moments = engine.moments(table, names, progress=progress)
        moments.check_z_scores()
        library = _library(s, seed, library_exists)
        blocks = data_free_blocks(s.method, names, np.random.default_rng(seed), seed=seed,
                                  min_privacy=s.min_privacy, library=library)
        rows = AffineRows(moments.mean, moments.std, _assemble(names, blocks))
        mapped = map_rows(engine, table, names, keep, rows, outputs.stage_folder("output"),
                          sample_rows=max(SAMPLE_ROWS, s.attack_records), progress=progress)
        key = PerturbationKey(
            method=s.method, columns=tuple(names), integer=mapped.integer, means=moments.mean,
            stds=moments.std, blocks=tuple(blocks), translation=None, noise_scale=0.0,
            noise_seed=None, records=mapped.moments.count, release_means=mapped.moments.mean,
            release_stds=mapped.moments.std, identifying=tuple(dropped))
        key_file = _stage_key(outputs, key)
        key_json = _reread_key(key_file) if key_file else key.to_dict()
        folder = outputs.staged_folder("output")
        assert folder is not None
        z, released, as_written, scope = _released(engine, s, folder, mapped, names, dropped,
                                                    key_json, progress)
        report = _perturb_report(s, outputs, key, z, released, seed, progress)
        if scope < mapped.summary.rows:
            report["records"] = mapped.summary.rows
            report["sample_records"] = scope
        report["verified"] = s.verify
        report["engine"] = {"name": engine.name, "parts": mapped.summary.parts,
                            "checked_records": scope}
        if library is not None and "library" in outputs:
            _stage_json(outputs, "library", library.to_dict())
        report.update(roles_report(roles, s.other, by_other))
        report.update(release_risk(as_written, names, s, report["warnings"]))
        report["runtime_seconds"] = time.perf_counter() - started
        _stage_report(outputs, report, s.internal)
        written = outputs.commit()
    return RunResult(report, None, written)


def _released(engine: Engine, s: PerturbSettings, folder: Path, mapped: MappedTable,
              names: list[str], dropped: list[str], key_json: dict[str, Any],
              progress: ProgressFn | None) -> tuple[Any, Any, pd.DataFrame, int]:
    """Standardized and released values, the release as written, and how many records they
    hold: all, read back and checked whole, up to :data:`IN_MEMORY_ROWS`; else the sample,
    checked pair by pair (refused, nothing written, when a check fails)."""
    from anonlab.engine.perturb_pass import sample_findings, written_sample
    from anonlab.perturbation.table import numeric_columns
    from anonlab.runs.perturb import _verify

    mean, std = np.asarray(key_json["means"]), np.asarray(key_json["stds"])
    if mapped.summary.rows <= IN_MEMORY_ROWS:
        frame = _source_frame(s.input, s)
        original = frame.drop(columns=[c for c in frame.columns if str(c) in dropped])
        as_written = _read_folder(folder, names)
        if s.verify:
            _verify(original, as_written, names, s.method, key_json)
        z = numeric_columns(original, names, allow_constant=True).values
        z -= mean
        z /= std
        y = numeric_columns(as_written, names, allow_constant=True).values
        return z, y, as_written, mapped.summary.rows
    sample = written_sample(engine, folder, mapped, progress=progress)
    y = numeric_columns(sample, names, allow_constant=True).values
    if s.verify:
        problems = sample_findings(mapped.sample, y, std, key_json, names)
        if problems:
            raise AnonlabError(f"verification failed, nothing written: {problems[0]}")
    z = (mapped.sample - mean) / std
    return z, y, sample, int(y.shape[0])


def invert_on_engine(s: InvertSettings, *, progress: ProgressFn | None,
                     started: float) -> RunResult:
    """:func:`anonlab.runs.perturb.run_invert` on an engine: a partitioned release restored
    into a folder (module text)."""
    from anonlab.engine.base import AffineRows
    from anonlab.engine.perturb_pass import SAMPLE_ROWS, map_rows, sample_findings, written_sample
    from anonlab.engine.table import open_table
    from anonlab.perturbation.key import PerturbationKey
    from anonlab.perturbation.table import numeric_columns
    from anonlab.runs.perturb import _file_of, _label, _reread_key, _verify

    check_engine_settings(s, None)
    with Outputs({"output": s.output}, inputs=[_file_of(s.input), s.key],
                 folders=("output",)) as outputs, blas_threads(1), \
            closing(open_run_engine(s)) as engine:
        key = PerturbationKey.load(s.key)
        if key.noise_seed is not None and key.noise_scale > 0:
            raise AnonlabError("key: a gdp release with noise is restored in memory only (its "
                               "noise is one stream over all records): use engine 'numpy' with "
                               "a file output", parameter="key")
        table = open_table(s.input, delimiter=s.delimiter)
        where = _label(s.input)
        key.check_columns(list(table.column_names), where)
        columns = list(key.columns)
        fingerprint = engine.moments(table, columns, progress=progress)
        key.check_fingerprint(fingerprint.count, fingerprint.mean, fingerprint.std, where)
        d = len(columns)
        shift = key.translation if key.translation is not None else np.zeros(d)
        rows = AffineRows(shift, np.ones(d), key.full_matrix().T, out_mean=key.means,
                          out_std=key.stds)
        mapped = map_rows(engine, table, columns, list(table.column_names), rows,
                          outputs.stage_folder("output"), integer_out=key.integer,
                          sample_rows=SAMPLE_ROWS, progress=progress)
        folder = outputs.staged_folder("output")
        assert folder is not None
        key_json = _reread_key([Path(s.key)])
        checked = 0
        if s.verify and mapped.summary.rows <= IN_MEMORY_ROWS:
            _verify(_read_folder(folder, columns), _source_frame(s.input, s), columns,
                    key.method, key_json)
            checked = mapped.summary.rows
        elif s.verify:
            restored = numeric_columns(written_sample(engine, folder, mapped,
                                                      progress=progress),
                                       columns, allow_constant=True).values
            problems = sample_findings(restored, mapped.sample, key.stds, key_json, columns)
            if problems:
                raise AnonlabError(f"verification failed, nothing written: {problems[0]}")
            checked = int(restored.shape[0])
        written = outputs.commit()
    report = {"command": "invert", "columns": columns, "records": mapped.summary.rows,
              "not_restored": list(key.identifying), "verified": bool(s.verify),
              "engine": {"name": engine.name, "parts": mapped.summary.parts,
                         "checked_records": checked},
              "runtime_seconds": time.perf_counter() - started}
    return RunResult(report, None, written)
