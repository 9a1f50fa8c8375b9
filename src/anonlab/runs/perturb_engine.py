"""``perturb`` and its inverse through an engine: the rows stay in pieces, the release is a folder.

:func:`perturb_on_engine` is :func:`anonlab.runs.perturb.run_perturb` when the
settings ask for an engine (``engine = "dask"``, a folder ``output`` ending in
``/``, or a Dask DataFrame ``input``). Every method runs there: with the
column moments known, each record's release depends on that record, the
transform and (gdp) its global row only.

Two passes over the rows (:mod:`anonlab.perturbation.pieces`): the moments,
then the row-wise map written as partitioned Parquet into a folder staged by
:class:`anonlab.outputs.Outputs`, which renames it onto ``output`` with the
key, library, report and page, or removes it on any error. The transform is
drawn from the seed exactly as in memory
(:func:`anonlab.perturbation.transforms.perturb_array`): obt and rotation from
the seed alone; rbt's angles from the z-scores' covariance matrix, which its
first pass gathers with the moments
(:func:`anonlab.perturbation.pieces.covariance_pass`); gdp's rotation,
translation and noise seed from the seed, its noise drawn per block of global
rows (:func:`anonlab.perturbation.key.add_noise`), each piece starting at the
row its first pass counted (:func:`anonlab.perturbation.pieces.moments_pass`).
So the release equals the in-memory one to rounding of the moments (1e-12).

Verification and report: a release of at most :data:`IN_MEMORY_ROWS` records
is read back whole (the staged folder, by the one reader) with the input and
checked by the independent checker as in memory; its report, attacks and risk
section are the in-memory run's. A larger release is checked on a sample of
records (:func:`anonlab.perturbation.pieces.sample_findings`: every pair's
distance, and inverting with the key as written); the report's privacy
figures, attacks, clustering agreement and risk section are measured on that
sample (``sample_records``); a gdp release, whose noise moves the distances,
only by inverting it with the key and the noise of the sampled rows.

:func:`invert_on_engine` restores a partitioned release with its key the same
way (the fingerprint checked from the release's moments first; gdp's noise
removed piece by piece). A gdp key written before the noise was blocked (one
stream over all records, no ``noise.stream``) is restored in memory only.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import dataclass, field
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
    from numpy.typing import NDArray

    from anonlab.dataset import Role
    from anonlab.engine.base import Engine, Moments
    from anonlab.engine.table import Table
    from anonlab.perturbation.key import Block
    from anonlab.perturbation.library import MatrixLibrary
    from anonlab.perturbation.pieces import MappedTable, RowNoise
    from anonlab.runs.perturb import InvertSettings, PerturbSettings

#: releases up to this many records are read back whole and checked as in memory
IN_MEMORY_ROWS = 2_000_000


def check_engine_settings(settings: PerturbSettings | InvertSettings) -> None:
    """Refuse, before any work, what the engines do not do: a database, an Excel sheet, a
    query, or a release that is not a folder (every method runs; ``method`` is checked by
    :func:`anonlab.perturbation.transforms.check_method`)."""
    from anonlab.runs.perturb import is_folder_output

    engine = f"engine '{settings.engine}'"
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


def _roles(engine: Engine, table: Table, s: PerturbSettings, progress: ProgressFn | None
           ) -> tuple[list[str], dict[str, Role], list[str], list[str]]:
    """Perturbed columns (``all-numeric`` found by a pass over the pieces), every column's
    role, those insensitive by ``other``, the dropped."""
    from anonlab.dataset import Role, assign_roles, without_role
    from anonlab.engine.base import base_engine
    from anonlab.metrics.evaluate_pieces import all_numeric_names
    from anonlab.perturbation.table import check_names
    from anonlab.runs.perturb import ROLE_PARAMETERS, chosen_columns

    columns = list(table.column_names)
    others = [*s.identifying, *s.sensitive, *s.insensitive]
    names = chosen_columns(columns, s, lambda exclude: all_numeric_names(
        base_engine(engine), table, exclude, progress, "perturb: finding the numeric columns"))
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

    from anonlab.engine.base import AffineRows
    from anonlab.engine.table import open_table
    from anonlab.perturbation.key import PerturbationKey
    from anonlab.perturbation.library import fresh_seed
    from anonlab.perturbation.pieces import SAMPLE_ROWS, map_rows
    from anonlab.perturbation.transforms import _assemble
    from anonlab.risk.release import check_risk_columns
    from anonlab.runs.perturb import (
        _library,
        _perturb_report,
        _reread_key,
        _stage_key,
        finish_perturb,
        perturb_files,
    )

    check_engine_settings(s)
    targets, inputs = perturb_files(s)
    with Outputs(targets, inputs=inputs, folders=("output",)) as outputs, blas_threads(1), \
            closing(open_run_engine(s)) as engine:
        seed = s.seed if s.seed is not None else fresh_seed()
        table = open_table(s.input, delimiter=s.delimiter)
        names, roles, by_other, dropped = _roles(engine, table, s, progress)
        keep = [c for c in table.column_names if c not in dropped]
        check_risk_columns(keep, s.sensitive, s)
        library = _library(s, seed, outputs)
        plan = _transform(engine, table, names, s, seed, library, progress)
        moments = plan.moments
        rows = AffineRows(moments.mean, moments.std, _assemble(names, plan.blocks),
                          out_mean=plan.translation)
        mapped = map_rows(engine, table, names, keep, rows, outputs.stage_folder("output"),
                          sample_rows=max(SAMPLE_ROWS, s.attack_records), noise=plan.noise,
                          progress=progress)
        gdp = s.method == "gdp"
        key = PerturbationKey(
            method=s.method, columns=tuple(names), integer=mapped.integer, means=moments.mean,
            stds=moments.std, blocks=tuple(plan.blocks), translation=plan.translation,
            noise_scale=float(s.noise) if gdp else 0.0, noise_seed=plan.noise_seed,
            records=mapped.moments.count, release_means=mapped.moments.mean,
            release_stds=mapped.moments.std, identifying=tuple(dropped),
            noise_stream="blocked" if gdp else "single")
        key_file = _stage_key(outputs, key)
        key_json = _reread_key(key_file) if key_file else key.to_dict()
        folder = outputs.staged_folder("output")
        assert folder is not None
        z, released, as_written, scope = _released(engine, s, folder, mapped, names, dropped,
                                                    key_json, plan.first_rows, progress)
        report = _perturb_report(s, outputs, key, z, released, seed, progress)
        if scope < mapped.summary.rows:
            report["records"] = mapped.summary.rows
            report["sample_records"] = scope
        report["verified"] = s.verify
        report["engine"] = {"name": engine.name, "parts": mapped.summary.parts,
                            "checked_records": scope}
        written = finish_perturb(outputs, report, s, library, roles, by_other, as_written,
                                 names, started)
    return RunResult(report, None, written)


@dataclass(frozen=True)
class _Plan:
    """The column moments and the transform: blocks; gdp's translation, noise seed and
    noise; each piece's first global row (gdp only, else empty)."""

    moments: Moments
    blocks: list[Block]
    translation: NDArray[np.float64] | None = None
    noise_seed: int | None = None
    noise: RowNoise | None = None
    first_rows: dict[int, int] = field(default_factory=dict)


def _transform(engine: Engine, table: Table, names: list[str], s: PerturbSettings, seed: int,
               library: MatrixLibrary | None, progress: ProgressFn | None) -> _Plan:
    """The column moments (one pass) and the transform, drawn from the seed as in memory
    (:func:`anonlab.perturbation.transforms.perturb_array`): rbt from the z-scores'
    covariance matrix (:func:`anonlab.perturbation.pieces.covariance_pass` gives both in
    the same pass); gdp's translation and noise seed after its rotation, its noise
    placed by each piece's first row (:func:`anonlab.perturbation.pieces.moments_pass`)."""
    from anonlab.perturbation.pieces import RowNoise, covariance_pass, moments_pass
    from anonlab.perturbation.transforms import data_free_blocks, rbt_blocks

    rng = np.random.default_rng(seed)
    if s.method == "rbt":
        moments, cov = covariance_pass(engine, table, names, progress=progress)
        return _Plan(moments, rbt_blocks(names, cov, rng, (s.rho[0], s.rho[1])))
    moments, first_rows = moments_pass(engine, table, names, progress=progress)
    moments.check_z_scores()
    blocks = data_free_blocks(s.method, names, rng, seed=seed, min_privacy=s.min_privacy,
                              library=library)
    if s.method != "gdp":
        return _Plan(moments, blocks)
    translation = rng.uniform(-1.0, 1.0, len(names))
    noise_seed = int(rng.integers(2**62))
    noise = RowNoise(noise_seed, float(s.noise), 1.0, first_rows) if s.noise > 0 else None
    return _Plan(moments, blocks, translation, noise_seed, noise, first_rows)


def _released(engine: Engine, s: PerturbSettings, folder: Path, mapped: MappedTable,
              names: list[str], dropped: list[str], key_json: dict[str, Any],
              first_rows: dict[int, int], progress: ProgressFn | None
              ) -> tuple[Any, Any, pd.DataFrame, int]:
    """Standardized and released values, the release as written, and how many records they
    hold: all, read back and checked whole, up to :data:`IN_MEMORY_ROWS`; else the sample,
    checked pair by pair (refused, nothing written, when a check fails)."""
    from anonlab.perturbation.pieces import sample_findings, sample_rows, written_sample
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
        rows = sample_rows(mapped, first_rows) if first_rows else None
        problems = sample_findings(mapped.sample, y, std, key_json, names, rows)
        if problems:
            raise AnonlabError(f"verification failed, nothing written: {problems[0]}")
    z = (mapped.sample - mean) / std
    return z, y, sample, int(y.shape[0])


def invert_on_engine(s: InvertSettings, *, progress: ProgressFn | None,
                     started: float) -> RunResult:
    """:func:`anonlab.runs.perturb.run_invert` on an engine: a partitioned release restored
    into a folder (module text)."""
    from anonlab.engine.base import AffineRows
    from anonlab.engine.table import open_table
    from anonlab.perturbation.key import PerturbationKey
    from anonlab.perturbation.pieces import (
        SAMPLE_ROWS,
        RowNoise,
        map_rows,
        moments_pass,
        sample_findings,
        sample_rows,
        written_sample,
    )
    from anonlab.perturbation.table import numeric_columns
    from anonlab.runs.perturb import _file_of, _label, _reread_key, _verify

    check_engine_settings(s)
    with Outputs({"output": s.output}, inputs=[_file_of(s.input), s.key],
                 folders=("output",)) as outputs, blas_threads(1), \
            closing(open_run_engine(s)) as engine:
        key = PerturbationKey.load(s.key)
        noisy = key.noise_seed is not None and key.noise_scale > 0
        if noisy and key.noise_stream != "blocked":
            raise AnonlabError("key: this gdp key's noise is one stream over all records (a key "
                               "written before the noise was drawn per block of rows), which "
                               "is restored in memory only: use engine 'numpy' with a file "
                               "output", parameter="key")
        table = open_table(s.input, delimiter=s.delimiter)
        where = _label(s.input)
        key.check_columns(list(table.column_names), where)
        columns = list(key.columns)
        fingerprint, first_rows = moments_pass(engine, table, columns, progress=progress)
        key.check_fingerprint(fingerprint.count, fingerprint.mean, fingerprint.std, where)
        noise = (RowNoise(key.noise_seed, key.noise_scale, -1.0, first_rows)
                 if noisy and key.noise_seed is not None else None)
        d = len(columns)
        shift = key.translation if key.translation is not None else np.zeros(d)
        rows = AffineRows(shift, np.ones(d), key.full_matrix().T, out_mean=key.means,
                          out_std=key.stds)
        mapped = map_rows(engine, table, columns, list(table.column_names), rows,
                          outputs.stage_folder("output"), integer_out=key.integer,
                          sample_rows=SAMPLE_ROWS, noise=noise, progress=progress)
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
            problems = sample_findings(restored, mapped.sample, key.stds, key_json, columns,
                                       sample_rows(mapped, first_rows))
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
