"""The perturbation family's runs: ``perturb``, its inverse, and the attack suite.

Each run reads its table(s) through the one reader
(:func:`anonlab.io.read_table`, every value as text; the chosen columns are
converted to doubles by the table model, :class:`anonlab.table.MicrodataTable`),
applies the method and writes every output through one
:class:`anonlab.outputs.Outputs`, so that it writes all of them or none:

- :func:`run_perturb`: z-scores and an orthogonal transform (OBT, RBT, a
  rotation or a geometric perturbation; docs/perturbation.md). The key and
  the release are staged, the release is re-read from its temporary file and
  checked with the staged key by the independent checker
  (:mod:`anonlab.verify.perturbation`), then the OBT library, the report and
  the HTML page are staged, then all is renamed into place;
- :func:`run_invert`: applies a saved key to a release and writes the
  restored table (checked the same way);
- :func:`run_attack`: the attack table of a release against its original.

On an engine (``engine = "dask"``, a folder ``output`` ending in ``/``, or a
Dask DataFrame ``input``; :func:`uses_engine`) ``perturb`` and its inverse
read the rows as the engine's pieces instead (the section "Over an engine's
pieces" below, the passes in :mod:`anonlab.perturbation.pieces`): every
method, the release (or restored table) written as partitioned Parquet, the
same key, report and page (docs/perturbation.md, "On Dask").

Every column has a role (:func:`perturbed_table`): the perturbed columns are
the quasi-identifiers; every other one is ``identifying`` (dropped from the
release), ``sensitive`` or ``insensitive`` (released as it is), or
``other="insensitive"`` releases the rest as it is (the report lists them).

Risk (docs/perturbation.md, "Risk"): the release's ``risk`` section is
measured on the release as written, every released column known to the
attacker; it finds nearly every record unique, since perturbed values are
continuous, and that is true, but perturbation protects by values that do not
match the originals, not by classes: the attack table says how far that
holds. The risk warnings (:class:`~anonlab.errors.ReleaseRiskWarning`) are
therefore judged on the columns released *unchanged* (the real linkage keys:
``risk_of_unchanged``), and a release from which an attack that needs no
sample recovers most records issues
:class:`anonlab.perturbation.RecoverableReleaseWarning` (a
``ReleaseRiskWarning``); ``fail_on_risk`` refuses a release with any of them.

The shareable report names no block's pairing and gives no block's figures
(they undo the release; :func:`anonlab.perturbation.evaluate.shareable`);
``internal`` writes the custodian's copy with them, marked secret and
owner-only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from pydantic import Field, field_validator

from anonlab.database import masked
from anonlab.encoding import ALL_NUMERIC
from anonlab.errors import AnonlabError, ReleaseRiskError
from anonlab.frames import is_dask_frame
from anonlab.outputs import Outputs
from anonlab.paths import PathLike
from anonlab.perturbation.evaluate import ATTACK_RECORDS
from anonlab.progress import ProgressFn
from anonlab.risk.release import ReleaseRiskSettings, risk_last
from anonlab.runs.common import (
    EngineSettings,
    ReadSettings,
    RoleSettings,
    RunResult,
    file_of,
    is_folder_output,
    paths_convention,
    reads_urls,
    stage_report,
    stored_path,
)
from anonlab.settings import Settings, outputs_taken_over, read_toml, resolve_paths, split_names
from anonlab.threads import blas_threads

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.dataset import Role
    from anonlab.engine.base import AffineRows, Engine
    from anonlab.engine.table import Table
    from anonlab.perturbation.key import PerturbationKey
    from anonlab.perturbation.library import MatrixLibrary
    from anonlab.perturbation.pieces import MappedTable, RowNoise
    from anonlab.table import MicrodataTable

Method = Literal["obt", "rbt", "rotation", "gdp"]
#: the files a perturb run writes for its own input (the OBT library is shared)
PERTURB_OUTPUTS = ("output", "key", "report", "html")
#: engine runs: releases up to this many records are read back whole and checked as in memory
IN_MEMORY_ROWS = 2_000_000


# ---------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------


def _table_source(value: Any) -> Any:
    """A path (as text), a SQLAlchemy URL, a pandas or a Dask DataFrame; anything else is
    refused."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if value is None or isinstance(value, str) or _is_frame(value):
        return value
    raise ValueError("give a file path, a SQLAlchemy URL or a pandas or Dask DataFrame")


def _is_frame(value: Any) -> bool:
    """Whether ``value`` is a pandas or a Dask DataFrame (neither is imported to tell)."""
    import sys

    pandas = sys.modules.get("pandas")  # no DataFrame exists before pandas is imported
    return (pandas is not None and isinstance(value, pandas.DataFrame)) or is_dask_frame(value)


def _number_list(value: Any, kind: type[int] | type[float]) -> Any:
    """``"2,5,10"`` (or one number) as a list of numbers; anything else is left to pydantic."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [value]
    if not isinstance(value, str):
        return value
    try:
        return [kind(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise ValueError(
            f"'{value}' is not a comma-separated list of "
            f"{'whole numbers' if kind is int else 'numbers'}"
        ) from None


class _Chosen(ReadSettings):
    """Which numeric ``columns`` (all when ``None``) and how many ``known`` records to try."""

    columns: list[str] | None = None
    known: list[int] = Field(default_factory=lambda: [2, 5, 10])

    @field_validator("columns", mode="before")
    @classmethod
    def _columns(cls, value: Any) -> Any:
        """``"a,b"`` or ``["a", "b,c"]`` name the columns one by one; none named is all."""
        if isinstance(value, str | list | tuple):
            return split_names(value) or None
        return value

    @field_validator("known", mode="before")
    @classmethod
    def _known(cls, value: Any) -> Any:
        """``"2,5,10"``, one count or a list of counts."""
        return _number_list(value, int)


class PerturbSettings(_Chosen, EngineSettings, RoleSettings, ReleaseRiskSettings):
    """Everything :func:`run_perturb` needs.

    ``input`` is a file path, a SQLAlchemy URL or a DataFrame; ``columns``
    the numeric columns to transform (when ``None``: every column no role
    names; ``"all-numeric"``: the numeric ones among those,
    :func:`chosen_columns`); the other columns need roles
    (:class:`~anonlab.runs.common.RoleSettings`);
    ``method``, with ``min_privacy`` (obt), ``rho`` (rbt: one or two numbers)
    and ``noise`` (gdp). ``seed`` regenerates the transform, so it is as secret as the key
    (``None``: a fresh seed from the operating system). ``library`` is an OBT
    matrix library file, reused when it exists, else built and written there.
    ``output`` (release), ``key`` (secret, owner-only), ``report`` (JSON) and
    ``html`` are written when given (a release without ``key`` can never be
    inverted: :func:`warn_without_key`); the report's attacks try ``known``
    records on at most ``attack_records`` records, its clusterers find
    ``clusters`` clusters. ``verify`` re-reads the release and checks it
    with the independent checker before anything is written. ``internal``
    makes the report and page the custodian's secret copy: with each block's
    pairing and figures, ``"secret": true``, owner-only files. The risk
    settings are :class:`~anonlab.risk.release.ReleaseRiskSettings`'s. ``engine``,
    ``scheduler``, ``workers`` and ``memory_limit`` are :class:`EngineSettings`'s
    (every method; the release a folder: :func:`uses_engine`).
    """

    path_fields: ClassVar[tuple[str, ...]] = (
        "input",
        "library",
        "sensitive_hierarchies",
        *PERTURB_OUTPUTS,
    )

    input: Any
    method: Method = "obt"
    min_privacy: float = 0.5
    rho: list[float] = Field(default_factory=lambda: [0.5, 0.5])
    noise: float = 0.1
    seed: int | None = None
    library: str | None = None
    output: str | None = None
    key: str | None = None
    report: str | None = None
    html: str | None = None
    clusters: int = Field(default=3, ge=1)
    attack_records: int = Field(default=ATTACK_RECORDS, ge=2)
    verify: bool = True
    internal: bool = False

    @field_validator("input", mode="before")
    @classmethod
    def _source(cls, value: Any) -> Any:
        return _table_source(value)

    @field_validator("rho", mode="before")
    @classmethod
    def _rho(cls, value: Any) -> Any:
        """``r`` or ``r1,r2``: one number stands for both columns of a pair."""
        value = _number_list(value, float)
        if isinstance(value, list | tuple) and len(value) == 1:
            return [value[0], value[0]]
        return value

    @classmethod
    def load(
        cls, config: PathLike | None = None, /, *, overwrite: bool = False, **overrides: Any
    ) -> Self:
        """Settings from an optional TOML file with ``overrides`` on top.

        A new ``input`` with a config that names outputs for its own input is
        refused (see :func:`check_input_override`), as is any other changed
        parameter while an output is the config's, unless ``overwrite``
        (:func:`anonlab.settings.check_overwrite`).
        """
        if config is not None:
            check_input_override(config, overrides)
        return super().load(config, overwrite=overwrite, **overrides)


class InvertSettings(EngineSettings):
    """Everything :func:`run_invert` needs: a release (``input``), its ``key``, the ``output``.

    ``verify`` re-reads the restored table and checks, with the independent
    checker, that the key takes it to the release. The engine settings are
    :class:`EngineSettings`'s (a partitioned release restored to a folder).
    """

    path_fields: ClassVar[tuple[str, ...]] = ("input", "key", "output")

    input: Any
    key: str
    output: str
    verify: bool = True

    @field_validator("input", mode="before")
    @classmethod
    def _source(cls, value: Any) -> Any:
        return _table_source(value)


class AttackSettings(_Chosen, RoleSettings):
    """Everything :func:`run_attack` needs.

    ``original`` and its perturbed ``released`` table hold the same records in
    the same order; ``columns`` are the perturbed ones (when ``None``: every
    column of the original no role names); the original's other columns need
    roles, as for :func:`run_perturb`. The known-record attacks try each count in ``known``; the
    PCA and ICA attacks use ``sample`` (default: a random half of the
    original); ``max_records`` limits the attack to a seeded random subset.
    """

    path_fields: ClassVar[tuple[str, ...]] = ("original", "released", "sample", "report", "html")

    original: Any
    released: Any
    sample: Any = None
    seed: int = 0
    max_records: int | None = Field(default=None, ge=2)
    report: str | None = None
    html: str | None = None

    @field_validator("original", "released", "sample", mode="before")
    @classmethod
    def _sources(cls, value: Any) -> Any:
        return _table_source(value)


def check_input_override(
    config: PathLike, overrides: Mapping[str, Any], spell: Callable[[str], str] = str
) -> None:
    """Refuse a new input whose results would be written over the config's own outputs.

    A config's release, key, report and page belong to the config's input; a
    run on another table must name its own (``spell`` shows a parameter as
    the caller knows it, e.g. as a flag).
    """
    new = overrides.get("input")
    if new is None or _is_frame(new):
        return
    path = Path(config)
    values = resolve_paths(read_toml(path), path.parent, ("input",))
    names = outputs_taken_over(values, overrides, ("input",), PERTURB_OUTPUTS)[1]
    if names:
        raise AnonlabError(
            f"the input '{new}' replaces the one config '{config}' names, whose "
            f"{' and '.join(names)} would then be written for another table: give "
            f"{' and '.join(spell(n) for n in names)} for the new input"
        )


# ---------------------------------------------------------------------------
# Checks before any work
# ---------------------------------------------------------------------------


def _check_reading(s: ReadSettings) -> None:
    if s.delimiter is not None and len(s.delimiter) != 1:
        raise AnonlabError(
            f"delimiter '{s.delimiter}' must be one character (for a tab, "
            "give a real tab, e.g. $'\\t' in bash)",
            parameter="delimiter",
        )


def _check_known(known: Sequence[int]) -> None:
    if not known or min(known) < 1:
        raise AnonlabError(
            f"known {list(known)} must list positive record counts, e.g. [2, 5, 10]",
            parameter="known",
        )


def check_known_records(
    known: Sequence[int], records: int, attack_records: int, limit: str = "attack_records"
) -> None:
    """Refuse a ``known`` count that is not below the records the attacks run on.

    The attacks run on ``min(records, attack_records)`` records (``limit`` names
    the parameter that caps them); an attacker who knows that many records
    or more has nothing left to recover, so such a count would be dropped
    without a word.
    """
    scope = min(records, attack_records)
    too_many = [m for m in known if m >= scope]
    if too_many:
        cap = "the whole table" if records <= attack_records else f"{limit} is {attack_records:,}"
        raise AnonlabError(
            f"known {_counts(too_many)} is not below the {scope:,} records the "
            f"attacks run on ({cap}): give known counts below {scope:,}",
            parameter="known",
        )


def _counts(values: Sequence[int]) -> str:
    """``5`` or ``[5, 10]``: one count alone, several as a list."""
    return str(values[0]) if len(values) == 1 else str(list(values))


def _check_perturb(s: PerturbSettings) -> None:
    """Refuse settings pydantic's types let through (before anything is read)."""
    from anonlab.perturbation.library import check_min_privacy, check_seed
    from anonlab.perturbation.transforms import check_method

    _check_reading(s)
    check_seed(s.seed)
    check_method(s.method, s.noise, s.rho)
    if s.method == "obt":
        check_min_privacy(s.min_privacy)
    _check_known(s.known)
    if s.library is not None and s.method != "obt":
        raise AnonlabError(
            f"library applies to method obt only, not {s.method}: drop it", parameter="library"
        )
    if s.internal and s.report is None and s.html is None:
        raise AnonlabError(
            "internal makes the report and page the secret copy: give report "
            "and/or html, or drop internal",
            parameter="internal",
        )
    for name in ("library", "key"):
        value = getattr(s, name)
        if value is not None and Path(value).is_dir():
            raise AnonlabError(
                f"{name} '{value}' is a folder: give a file name inside it", parameter=name
            )


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


@reads_urls
def run_perturb(settings: PerturbSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Perturb ``settings.input``; write release, key, library, report and HTML, or nothing.

    Every column needs a role (:func:`perturbed_table`); identifying columns
    are dropped. ``progress`` hears ``("perturbing blocks", done, total)`` and
    ``("attacks", done, total)``. The report holds the privacy figures,
    attacks and clustering agreement when a report or page is written, or
    when no file is (a run for its returned report and release); else only
    the quick recoverability check runs. Then the risk of the release as
    written (:func:`release_risk`). Issues
    :class:`~anonlab.perturbation.RecoverableReleaseWarning` when a few
    known records recover the release and a
    :class:`~anonlab.errors.ReleaseRiskWarning` per risk of the columns
    released unchanged; with ``fail_on_risk`` either refuses the release
    (:class:`~anonlab.errors.ReleaseRiskError`, nothing written).

    The run uses one BLAS thread: its products are small or thin (``d x d``
    times ``d x N``), and OpenBLAS's idle threads spin between them, which
    cost more CPU than the whole read of a million records (the doubles are
    the same with any number of threads).
    """
    from dataclasses import replace

    from anonlab.perturbation.library import fresh_seed
    from anonlab.perturbation.transforms import perturb_array
    from anonlab.risk.release import check_risk_columns

    s = settings
    started = time.perf_counter()
    _check_perturb(s)
    if uses_engine(s):
        return _perturb_on_engine(s, progress, started)
    targets, inputs = perturb_files(s)
    with Outputs(targets, inputs=inputs) as outputs, blas_threads(1):
        seed = s.seed if s.seed is not None else fresh_seed()
        table = perturbed_table(_read(s.input, s), s)
        check_known_records(s.known, len(table.frame), s.attack_records)
        roles, by_other, data = table.roles, table.by_other, table.numeric
        frame, dropped = _without_identifying(table.frame, roles)
        del table  # the frame with its identifying columns is not needed again
        check_risk_columns([str(c) for c in frame.columns], s.sensitive, s)
        library = _library(s, seed, outputs)
        z, released, key = perturb_array(
            data,
            s.method,
            seed=seed,
            min_privacy=s.min_privacy,
            rho=(s.rho[0], s.rho[1]),
            noise=s.noise,
            library=library,
            overwrite=True,
            progress=progress,
        )
        key = replace(key, identifying=tuple(dropped))
        report = _perturb_report(s, outputs, key, z, released, seed, progress)
        names = data.names
        del data, z  # the standardized values are not needed again: free them before verifying
        release = _release(frame, names, [released[:, j] for j in range(len(names))])
        release_file = _stage_table(outputs, release)
        key_file = _stage_key(outputs, key)
        as_written = (
            reread_table(release_file[0], outputs.path("output"), names)
            if release_file
            else release
        )
        report["verified"] = s.verify  # the release as staged, else the one in memory
        if report["verified"]:  # with the key as staged; the one in memory when none is written
            _verify(
                frame,
                as_written,
                names,
                s.method,
                _reread_key(key_file) if key_file else key.to_dict(),
            )
        written = finish_perturb(
            outputs, report, s, library, roles, by_other, as_written, names, started
        )
    return RunResult(report, release, written)


def perturb_files(s: PerturbSettings) -> tuple[dict[str, str | None], list[str | None]]:
    """The outputs of a perturb run by name and its input files (a library that exists is an
    input, else an output)."""
    library_exists = s.library is not None and Path(s.library).exists()
    targets = {name: getattr(s, name) for name in PERTURB_OUTPUTS}
    targets["library"] = None if library_exists else s.library
    inputs = [
        file_of(s.input),
        s.library if library_exists else None,
        *s.sensitive_hierarchies.values(),
    ]
    return targets, inputs


def finish_perturb(
    outputs: Outputs,
    report: dict[str, Any],
    s: PerturbSettings,
    library: MatrixLibrary | None,
    roles: Mapping[str, Any],
    by_other: Any,
    as_written: pd.DataFrame,
    names: Sequence[str],
    started: float,
) -> list[Path]:
    """The last steps of a perturb run, in memory or on an engine: stage a new library,
    add the roles and the release's risk to the report, stage it and commit every output."""
    from anonlab.dataset import roles_report

    if library is not None and "library" in outputs:
        _stage_json(outputs, "library", library.to_dict())
    report.update(roles_report(roles, s.other, by_other))
    report.update(release_risk(as_written, names, s, report["warnings"]))
    report["runtime_seconds"] = time.perf_counter() - started
    _stage_report(outputs, report, s.internal)
    return outputs.commit()


@reads_urls
def run_invert(settings: InvertSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Restore the original table from a release and its key; write it (or nothing).

    The roles are the key's: its columns are restored, every other column of
    the release passes through; the columns the perturbation dropped as
    identifying are in no release and cannot come back (report key
    ``not_restored``). Integer columns are rounded back to integers; a key
    that does not match the release (columns, record count, fingerprint) is
    refused. Runs on one
    BLAS thread, as :func:`run_perturb` does.
    """
    from anonlab.perturbation.key import PerturbationKey
    from anonlab.perturbation.table import numeric_columns
    from anonlab.perturbation.transforms import restore_columns

    s = settings
    started = time.perf_counter()
    _check_reading(s)
    if Path(s.key).is_dir():
        raise AnonlabError(
            f"key '{s.key}' is a folder: give a file name inside it", parameter="key"
        )
    if uses_engine(s):
        return _invert_on_engine(s, progress, started)
    with (
        Outputs({"output": s.output}, inputs=[file_of(s.input), s.key]) as outputs,
        blas_threads(1),
    ):
        key = PerturbationKey.load(s.key)
        frame = _read(s.input, s)
        where = _label(s.input)
        key.check_columns([str(c) for c in frame.columns], where)
        data = numeric_columns(frame, list(key.columns), allow_constant=True)
        restored = _release(frame, list(key.columns), restore_columns(data.values, key, where))
        # identifying columns were dropped from the release: no key can bring them back
        restored_file = _stage_table(outputs, restored)
        verified = bool(s.verify and restored_file)
        if verified:
            _verify(
                reread_table(restored_file[0], outputs.path("output"), key.columns),
                frame,
                list(key.columns),
                key.method,
                _reread_key([Path(s.key)]),
            )
        written = outputs.commit()
    report = {
        "command": "invert",
        "columns": list(key.columns),
        "records": len(frame),
        "not_restored": list(key.identifying),
        "verified": verified,
        "runtime_seconds": time.perf_counter() - started,
    }
    return RunResult(report, restored, written)


@reads_urls
def run_attack(settings: AttackSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """The attack table of ``settings.released`` against ``settings.original``; report and HTML.

    Every column of the original needs a role, as for :func:`run_perturb`
    (the report's role keys). Both tables are standardized with the
    original's means and deviations.
    ``progress`` hears ``("attacks", done, total)``. Issues
    :class:`~anonlab.perturbation.RecoverableReleaseWarning` when an attack
    that needs no sample recovers most records.
    """
    from anonlab.perturbation.attacks import attack_table, warn_if_recoverable
    from anonlab.perturbation.evaluate import attack_subset
    from anonlab.perturbation.library import check_seed

    s = settings
    started = time.perf_counter()
    _check_reading(s)
    check_seed(s.seed)
    _check_known(s.known)
    inputs = [file_of(s.original), file_of(s.released), file_of(s.sample)]
    with Outputs({"report": s.report, "html": s.html}, inputs=inputs) as outputs:
        names, z, released, sample, roles = _attack_data(s)
        check_known_records(
            s.known, int(z.shape[0]), s.max_records or int(z.shape[0]), limit="max_records"
        )
        rows = attack_subset(z.shape[0], s.max_records or z.shape[0], s.seed)
        table = attack_table(
            z[rows],
            released[rows],
            s.known,
            seed=s.seed,
            sample=sample,
            centre=released.mean(axis=0),
            progress=progress,
        )
        message = warn_if_recoverable(table)
        report = _header(
            "attack",
            s,
            {"original": s.original, "released": s.released, "sample": s.sample},
            outputs.path("report"),
        )
        report.update(
            {
                "columns": names,
                "records": int(z.shape[0]),
                "attack_records": int(rows.size),
                "attacks": table,
                "warnings": [message] if message else [],
            }
        )
        report.update(roles)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report, None, written)


# ---------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------


def uses_engine(settings: PerturbSettings | InvertSettings) -> bool:
    """Whether the run goes over an engine's pieces (:func:`_perturb_on_engine`): on Dask,
    with a folder ``output``, or with a Dask DataFrame as ``input``."""
    return (
        settings.engine != "numpy"
        or is_folder_output(settings.output)
        or is_dask_frame(settings.input)
    )


#: how the perturbation family names the parameters that give roles
ROLE_PARAMETERS = ("columns", "identifying", "sensitive", "insensitive")


def perturbed_table(
    frame: pd.DataFrame, settings: PerturbSettings | AttackSettings
) -> MicrodataTable:
    """The table model of a run: every column's role, the perturbed columns as numbers.

    The perturbed columns (:func:`chosen_columns`) are the quasi-identifiers,
    read by the ``"exact"`` number rule (:mod:`anonlab.textnumbers`). Every
    other column needs a role (:func:`anonlab.dataset.assign_roles`): one
    :class:`~anonlab.dataset.RoleError` names all that have none.
    """
    from anonlab.encoding import select_columns
    from anonlab.perturbation.table import check_names
    from anonlab.table import MicrodataTable

    s = settings
    table = [str(c) for c in frame.columns]
    names = chosen_columns(
        table, s, lambda exclude: select_columns(frame, ALL_NUMERIC, exclude=exclude)
    )
    check_names(names, table)
    return MicrodataTable.from_frame(
        frame,
        names,
        **s.roles.keywords(),
        role_parameters=ROLE_PARAMETERS,
        numbers="exact",
    )


def chosen_columns(
    table: Sequence[str],
    settings: PerturbSettings | AttackSettings,
    all_numeric: Callable[[list[str]], list[str]],
) -> list[str]:
    """The perturbed columns: ``columns`` as named; ``None``: every column no other role
    names; ``"all-numeric"``: the numeric ones among those.

    ``all-numeric`` means what it means for every command
    (:func:`anonlab.encoding.select_columns`: every column whose present values
    all parse as numbers, the columns other parameters name left out);
    ``all_numeric(exclude)`` finds them in memory or on an engine. Mixed with
    names it is refused.
    """
    others = [*settings.identifying, *settings.sensitive, *settings.insensitive]
    if settings.columns is None:
        return [c for c in table if c not in others]
    if ALL_NUMERIC not in settings.columns:
        return list(settings.columns)
    if settings.columns != [ALL_NUMERIC]:
        raise AnonlabError(
            "columns 'all-numeric' cannot be mixed with column names: give "
            "all-numeric alone or names only",
            parameter="columns",
        )
    return all_numeric(others)


def _without_identifying(
    frame: pd.DataFrame, roles: Mapping[str, Role]
) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` without its identifying columns (no copy when there are none), and their names."""
    from anonlab.dataset import Role
    from anonlab.perturbation.table import frame_labels

    dropped = [c for c, r in roles.items() if r == Role.IDENTIFYING]
    if not dropped:
        return frame, []
    labels = frame_labels(frame)
    return frame.drop(columns=[labels[c] for c in dropped]), dropped


def release_risk(
    release: pd.DataFrame,
    perturbed: Sequence[str],
    settings: PerturbSettings,
    recoverable: Sequence[str] = (),
) -> dict[str, Any]:
    """The report keys ``risk``, ``attacker_knowledge``, ``risk_of_unchanged``, ``risk_warnings``.

    ``risk`` is measured on ``release`` (as written) for the attacker
    :class:`~anonlab.risk.release.RiskSettings` describes: with the perturbed
    columns among the attacker's, nearly every record is unique, which is
    true and is what a perturbation is (its values match no original). The
    warnings are judged on ``risk_of_unchanged``, the same measurement on
    the attacker's columns that are released unchanged (``None`` when there
    are none): uniqueness there is a real linkage key. ``recoverable`` are the
    recoverability warnings already issued; with ``fail_on_risk`` any warning
    refuses the release (:class:`~anonlab.errors.ReleaseRiskError`).
    """
    from anonlab.risk.measure import warn_release_risk
    from anonlab.risk.release import measure_release

    s = settings
    section, knowledge = measure_release(release, s.sensitive, s)
    unchanged = [c for c in section["attacker_columns"] if c not in set(perturbed)]
    judged = None
    messages: list[str] = []
    if unchanged:
        judged, _ = measure_release(
            release, s.sensitive, s.model_copy(update={"attacker_columns": unchanged})
        )
        messages = warn_release_risk(judged, s.max_risk)
    refused = [*recoverable, *messages]
    if refused and s.fail_on_risk:
        count = f"{len(refused)} risk warnings, the first" if len(refused) > 1 else "a risk warning"
        raise ReleaseRiskError(
            f"fail_on_risk is set and the release drew {count}: {refused[0]}; nothing was "
            "written: drop or protect the columns released unchanged, or use a method the "
            "attacks do not undo (docs/perturbation.md)",
            parameter="fail_on_risk",
        )
    return {
        "risk": section,
        "attacker_knowledge": knowledge,
        "risk_of_unchanged": judged,
        "risk_warnings": messages,
    }


def _stage_report(outputs: Outputs, report: dict[str, Any], internal: bool) -> None:
    """Stage report and page; the ``internal`` (secret) ones owner-only, the page marked so."""
    if not internal:
        stage_report(outputs, report)
        return
    if "report" in outputs:
        _stage_json(outputs, "report", report, private=True)
    if "html" in outputs:
        from anonlab.htmlreport import render_html

        target = outputs.path("report")
        dirs = [] if target is None else [target.resolve().parent]
        page = render_html(report, internal=True, base_dirs=[*dirs, Path.cwd()])
        outputs.stage("html", lambda tmp: tmp.write_text(page, encoding="utf-8"), private=True)


def _read(source: Any, settings: ReadSettings) -> pd.DataFrame:
    """A table through the one reader, every value as its text.

    Text columns stay Arrow arrays (``strings="arrow"``): the numeric ones are
    cast to doubles by Arrow and the others written back as they are, so no
    Python ``str`` is made per value.
    """
    from anonlab.io import read_table

    return read_table(source, dtype=str, strings="arrow", **settings.read_options())


def _label(source: Any) -> str:
    """How a message names a source."""
    return masked(source) if isinstance(source, str) else "the DataFrame"


def _library(s: PerturbSettings, seed: int, outputs: Outputs) -> MatrixLibrary | None:
    """The OBT library: loaded from ``s.library`` when it existed before the run (an input,
    :func:`perturb_files`), else built from the seed (and written as an output)."""
    from anonlab.perturbation.library import MatrixLibrary, library_seed

    if s.method != "obt":
        return None
    if s.library is not None and "library" not in outputs:
        return MatrixLibrary.load(s.library)
    return MatrixLibrary.build(s.min_privacy, library_seed(seed))


def _release(frame: pd.DataFrame, names: Sequence[str], columns: Sequence[Any]) -> pd.DataFrame:
    """A new table: ``frame``'s columns, the named ones replaced (``frame`` is kept).

    The new table holds ``columns`` without a copy.
    """
    from anonlab.perturbation.table import replaced_columns

    return replaced_columns(frame, names, columns)


def _perturb_report(
    s: PerturbSettings,
    outputs: Outputs,
    key: PerturbationKey,
    z: Any,
    released: Any,
    seed: int,
    progress: ProgressFn | None,
) -> dict[str, Any]:
    """The report: header, then the full evaluation or only the recoverability check.

    The evaluation's per-block figures (``blocks``, ``overall``) undo the
    release with it: only the ``internal`` report (``"secret": true``) holds
    them; the shareable one has their :func:`privacy_summary` instead.
    """
    from anonlab.perturbation.evaluate import (
        perturbation_summary,
        privacy_summary,
        recoverability_check,
        shareable,
    )

    check_known_records(s.known, int(z.shape[0]), s.attack_records)  # engine runs: a sample
    # the seed regenerates the transform (pairing, matrices, noise): key material
    report = _header(
        "perturb", s, {"data": s.input}, outputs.path("report"), exclude={"key", "seed"}
    )
    report["parameters"]["key_written"] = s.key is not None
    report["parameters"]["seed_given"] = s.seed is not None
    report["key_warning"] = warn_without_key(s)
    full = (
        "report" in outputs
        or "html" in outputs
        or not any(name in outputs for name in ("output", "key", "library"))
    )
    if s.internal:
        report["secret"] = True
    if full:
        summary = perturbation_summary(
            key,
            z,
            released,
            known=s.known,
            seed=seed % 2**32,
            n_clusters=s.clusters,
            attack_records=s.attack_records,
            progress=progress,
        )
        if s.internal:
            summary["privacy_summary"] = privacy_summary(summary["blocks"])
        report.update(summary if s.internal else shareable(summary))
    else:
        message = recoverability_check(
            z,
            released,
            known=s.known,
            seed=seed % 2**32,
            attack_records=s.attack_records,
            ties=key.noise_scale == 0,
            progress=progress,
        )
        report.update(
            {
                "method": key.method,
                "columns": list(key.columns),
                "records": int(z.shape[0]),
                "blocks_count": len(key.blocks),
                "warnings": [message] if message else [],
            }
        )
    return report


def warn_without_key(s: PerturbSettings) -> str | None:
    """Warn that the release can never be inverted when it is handed out without a key.

    A release is handed out when ``output`` is written, or when no file is
    (the run returns it: :attr:`RunResult.release`). Issues
    :class:`~anonlab.perturbation.IrreversibleReleaseWarning` at the caller's
    line and returns its text for the report (``None``: a key is written, or
    only a report or page is).
    """
    from anonlab.perturbation.key import NO_KEY_MESSAGE, IrreversibleReleaseWarning
    from anonlab.userwarn import warn_user

    returned = s.output is None and s.report is None and s.html is None
    if s.key is not None or (s.output is None and not returned):
        return None
    warn_user(IrreversibleReleaseWarning(NO_KEY_MESSAGE, parameter="key"))
    return NO_KEY_MESSAGE


def _header(
    command: str,
    s: Settings,
    inputs: Mapping[str, Any],
    report_path: Path | None,
    exclude: set[str] | None = None,
) -> dict[str, Any]:
    """The report's common fields; every path stored as ``paths`` says, no DataFrame."""
    from anonlab.report import report_header

    parameters = s.model_dump(exclude=exclude)
    for name in s.path_fields:
        value = parameters.get(name)
        if _is_frame(value):
            parameters[name] = None
        elif isinstance(value, str):
            parameters[name] = stored_path(value, report_path)
        elif isinstance(value, dict):  # a table of name -> path (sensitive_hierarchies)
            parameters[name] = {k: stored_path(str(v), report_path) for k, v in value.items()}
    files = {name: file_of(value) for name, value in inputs.items()}
    report = report_header(command, risk_last(parameters), dict(files))
    report["paths"] = paths_convention(report_path)
    return report


def _stage_json(outputs: Outputs, name: str, data: Any, *, private: bool = False) -> None:
    from anonlab.io import to_json_text

    text = to_json_text(data)
    outputs.stage(name, lambda tmp: tmp.write_text(text, encoding="utf-8"), private=private)


def _stage_key(outputs: Outputs, key: PerturbationKey) -> list[Path]:
    """Stage the key (owner-only); the list receives its temporary file to re-read."""
    staged: list[Path] = []

    def write(tmp: Path) -> None:
        from anonlab.io import to_json_text

        tmp.write_text(to_json_text(key.to_dict()), encoding="utf-8")
        staged.append(tmp)

    outputs.stage("key", write, private=True)
    return staged


def _stage_table(outputs: Outputs, table: pd.DataFrame) -> list[Path]:
    """Stage ``table`` as ``output`` in the format of the target's extension.

    Returns the staged temporary file (to be re-read), or nothing when no
    ``output`` was asked for.
    """
    from anonlab.io import write_table

    target = outputs.path("output")
    staged: list[Path] = []

    def write(tmp: Path) -> None:
        write_table(table, tmp, format_of=target)
        staged.append(tmp)

    outputs.stage("output", write)
    return staged


def reread_table(path: Path, target: Path | None, columns: Sequence[str]) -> pd.DataFrame:
    """A staged table read back through the one reader, as any reader of the target would.

    The reader knows a staged Parquet or Excel file by its first bytes; a CSV
    release is in the one dialect, split where the writer split it for
    ``target`` (tabs for ``.tsv``, else commas). The transformed ``columns``
    come back as the doubles their text parses to, the others as text; if a
    transformed value is not a number, the table is read again all as text,
    for the checker to name that value.
    """
    from anonlab.io import read_table

    where: dict[str, Any] = {"delimiter": ","} if target is None else {"format_of": target}
    try:
        return read_table(path, dtype=str, strings="arrow", doubles=list(columns), **where)
    except AnonlabError:
        return read_table(path, dtype=str, strings="arrow", **where)


def _reread_key(key_file: list[Path]) -> dict[str, Any]:
    """The staged (or given) key file, read back as plain JSON."""
    from anonlab.io import read_json

    data = read_json(key_file[-1])
    if not isinstance(data, dict):
        raise AnonlabError(
            f"key '{key_file[-1]}' is not a perturbation key: give the key "
            "file that anonlab perturb wrote",
            parameter="key",
        )
    return data


def _verify(
    original: pd.DataFrame,
    release: pd.DataFrame,
    columns: Sequence[str],
    method: str,
    key: dict[str, Any] | None,
) -> None:
    """Check a release with the independent perturbation checker; refuse it if it fails.

    The checker shares no code with the method: the released distances must
    equal the original's (after z-scores, to 1e-9 relative) for orthogonal
    methods, and inverting the release with the key must give the original.
    """
    from anonlab.verify.perturbation import check_perturbation

    problems = check_perturbation(original, release, columns, method=method, key=key)
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def _attack_data(s: AttackSettings) -> tuple[list[str], Any, Any, Any, dict[str, Any]]:
    """Column names, the original's z-scores, the release and the sample, standardized alike.

    The last item is the report's role keys (:func:`anonlab.dataset.roles_report`).
    """
    from anonlab.dataset import roles_report
    from anonlab.perturbation.table import numeric_columns

    table = perturbed_table(_read(s.original, s), s)
    roles, by_other, orig = table.roles, table.by_other, table.numeric
    rel_frame = _read(s.released, s)
    missing = [c for c in orig.names if c not in {str(n) for n in rel_frame.columns}]
    if missing:
        raise AnonlabError(
            f"the release '{_label(s.released)}' has no column '{missing[0]}': "
            "give the release of this table (or choose columns)"
        )
    rel = numeric_columns(rel_frame, orig.names, allow_constant=True)
    if rel.values.shape[0] != orig.values.shape[0]:
        raise AnonlabError(
            f"the original has {orig.values.shape[0]} records but the release "
            f"{rel.values.shape[0]}: give the release of this table, records "
            "in the same order"
        )
    means, stds = orig.values.mean(axis=0), orig.values.std(axis=0)
    z = (orig.values - means) / stds
    sample = None
    if s.sample is not None:
        smp = numeric_columns(_read(s.sample, s), orig.names, allow_constant=True)
        sample = (smp.values - means) / stds
    return orig.names, z, rel.values, sample, roles_report(roles, s.other, by_other)


# ---------------------------------------------------------------------------
# Over an engine's pieces: the release (or restored table) is a folder
# ---------------------------------------------------------------------------
#
# :func:`run_perturb` and :func:`run_invert` come here when the settings ask for
# an engine (:func:`uses_engine`). Every method runs: with the column moments
# known, each record's release depends on that record, the transform and (gdp)
# its global row only. Two passes over the rows (:mod:`anonlab.perturbation.pieces`):
# the moments with the transform drawn from the seed exactly as in memory
# (:func:`anonlab.perturbation.pieces.plan_transform`), then the row-wise map
# written as partitioned Parquet into a folder staged by :class:`Outputs`, which
# renames it onto ``output`` with the key, library, report and page, or removes
# it on any error. So the release equals the in-memory one to rounding of the
# moments (1e-12).
#
# Verification and report: a release of at most :data:`IN_MEMORY_ROWS` records
# is read back whole (the staged folder, by the one reader) with the input and
# checked by the independent checker as in memory; its report, attacks and risk
# section are the in-memory run's. A larger release is checked on a sample of
# records (:func:`anonlab.perturbation.pieces.check_sample`: every pair's
# distance, and inverting with the key as written); the report's privacy
# figures, attacks, clustering agreement and risk section are measured on that
# sample (``sample_records``); a gdp release, whose noise moves the distances,
# only by inverting it with the key and the noise of the sampled rows. The
# inverse restores a partitioned release the same way (the fingerprint checked
# from the release's moments first; gdp's noise removed piece by piece); a gdp
# key written before the noise was blocked is restored in memory only.


def _check_engine_settings(settings: PerturbSettings | InvertSettings) -> None:
    """Refuse, before any work, what the engines do not do: a release that is not a folder
    (every method and every input runs; ``method`` is checked by
    :func:`anonlab.perturbation.transforms.check_method`)."""
    if not is_folder_output(settings.output):
        raise AnonlabError(
            f"output: engine '{settings.engine}' writes the release as a folder "
            "of Parquet parts: give output as a folder path ending in '/'",
            parameter="output",
        )


def _read_first(settings: PerturbSettings | InvertSettings) -> bool:
    """Whether the engine's pieces are cut from the table the one reader reads whole: a
    database table or query, an Excel sheet (the engines stream Parquet and CSV only), or
    any input with ``sheet``, ``table`` or ``query`` (refused by the reader as in memory)."""
    from anonlab import urls
    from anonlab.database import is_database_url
    from anonlab.paths import is_url
    from anonlab.sources import file_format

    source = settings.input
    if not isinstance(source, str):
        return False
    if is_database_url(source) or any(
        getattr(settings, name) is not None for name in ("sheet", "table", "query")
    ):
        return True
    if is_url(source):
        return urls.kind(source) == "file" and file_format(source) == "excel"
    path = Path(source)
    return path.is_file() and file_format(path) == "excel"


@dataclass(frozen=True)
class _EngineInput:
    """The input as the engine's pieces, and the whole table when the one reader read it
    first (:func:`_read_first`; ``None``: the pieces stream from the input)."""

    table: Table
    frame: pd.DataFrame | None


def _engine_input(s: PerturbSettings | InvertSettings) -> _EngineInput:
    """The input's pieces: streamed from a Parquet or CSV file, folder or DataFrame, else
    cut from the table the one reader read whole (named as messages name the input)."""
    from dataclasses import replace

    from anonlab.engine.table import open_table

    if not _read_first(s):
        return _EngineInput(open_table(s.input, delimiter=s.delimiter), None)
    frame = _read(s.input, s)
    return _EngineInput(replace(open_table(frame), source=f"'{_label(s.input)}'"), frame)


def _engine_roles(
    engine: Engine, table: Table, s: PerturbSettings, progress: ProgressFn | None
) -> tuple[list[str], dict[str, Role], list[str], list[str]]:
    """Perturbed columns (``all-numeric`` found by a pass over the pieces), every column's
    role, those insensitive by ``other``, the dropped."""
    from anonlab.dataset import Role, without_role
    from anonlab.engine.base import base_engine
    from anonlab.metrics.evaluate_pieces import all_numeric_names
    from anonlab.perturbation.table import check_names

    columns = list(table.column_names)
    others = [*s.identifying, *s.sensitive, *s.insensitive]
    names = chosen_columns(
        columns,
        s,
        lambda exclude: all_numeric_names(
            base_engine(engine), table, exclude, progress, "perturb: finding the numeric columns"
        ),
    )
    check_names(names, columns)
    roles = s.roles.assign(columns, names, ROLE_PARAMETERS)
    by_other = without_role(columns, names, others)
    dropped = [c for c, r in roles.items() if r == Role.IDENTIFYING]
    return names, roles, by_other, dropped


def _source_frame(source: _EngineInput, s: PerturbSettings | InvertSettings) -> pd.DataFrame:
    """The input read whole through the one reader (a Dask DataFrame computed first; the
    table the reader read first as it is)."""
    if source.frame is not None:
        return source.frame
    return _read(s.input.compute() if is_dask_frame(s.input) else s.input, s)


def _read_folder(folder: Path, columns: list[str]) -> pd.DataFrame:
    """A staged folder read back whole, as any reader of the output would read it."""
    from anonlab.io import read_table

    return read_table(folder, dtype=str, strings="arrow", doubles=columns)


def _staged_folder(outputs: Outputs) -> Path:
    """The staged folder of ``output`` (staged by :meth:`Outputs.stage_folder` before)."""
    folder = outputs.staged_folder("output")
    if folder is None:
        raise RuntimeError("output: no folder was staged for the release")
    return folder


def _perturb_on_engine(
    s: PerturbSettings, progress: ProgressFn | None, started: float
) -> RunResult:
    """:func:`run_perturb` over an engine's pieces (section text)."""
    from contextlib import closing

    from anonlab.engine.base import AffineRows
    from anonlab.perturbation.key import PerturbationKey
    from anonlab.perturbation.library import fresh_seed
    from anonlab.perturbation.pieces import SAMPLE_ROWS, map_rows, plan_transform
    from anonlab.perturbation.transforms import assemble
    from anonlab.risk.release import check_risk_columns
    from anonlab.runs.common import open_run_engine

    _check_engine_settings(s)
    targets, inputs = perturb_files(s)
    with (
        Outputs(targets, inputs=inputs, folders=("output",)) as outputs,
        blas_threads(1),
        closing(open_run_engine(s)) as engine,
    ):
        seed = s.seed if s.seed is not None else fresh_seed()
        source = _engine_input(s)
        table = source.table
        names, roles, by_other, dropped = _engine_roles(engine, table, s, progress)
        keep = [c for c in table.column_names if c not in dropped]
        check_risk_columns(keep, s.sensitive, s)
        library = _library(s, seed, outputs)
        plan = plan_transform(
            engine,
            table,
            names,
            s.method,
            seed,
            min_privacy=s.min_privacy,
            rho=(s.rho[0], s.rho[1]),
            noise=s.noise,
            library=library,
            progress=progress,
        )
        moments = plan.moments
        rows = AffineRows(
            moments.mean, moments.std, assemble(names, plan.blocks), out_mean=plan.translation
        )
        mapped = map_rows(
            engine,
            table,
            names,
            keep,
            rows,
            outputs.stage_folder("output"),
            sample_rows=max(SAMPLE_ROWS, s.attack_records),
            noise=plan.noise,
            progress=progress,
        )
        gdp = s.method == "gdp"
        release_means, release_stds = mapped.fingerprint()
        key = PerturbationKey(
            method=s.method,
            columns=tuple(names),
            integer=mapped.integer,
            means=moments.mean,
            stds=moments.std,
            blocks=tuple(plan.blocks),
            translation=plan.translation,
            noise_scale=float(s.noise) if gdp else 0.0,
            noise_seed=plan.noise_seed,
            records=mapped.moments.count,
            release_means=release_means,
            release_stds=release_stds,
            identifying=tuple(dropped),
            noise_stream="blocked" if gdp else "single",
        )
        key_file = _stage_key(outputs, key)
        key_json = _reread_key(key_file) if key_file else key.to_dict()
        z, released, as_written, scope = _released(
            engine,
            s,
            source,
            _staged_folder(outputs),
            mapped,
            names,
            dropped,
            key_json,
            plan.first_rows,
            progress,
        )
        report = _perturb_report(s, outputs, key, z, released, seed, progress)
        if scope < mapped.summary.rows:
            report["records"] = mapped.summary.rows
            report["sample_records"] = scope
        report["verified"] = s.verify
        report["engine"] = {
            "name": engine.name,
            "parts": mapped.summary.parts,
            "checked_records": scope,
        }
        written = finish_perturb(
            outputs, report, s, library, roles, by_other, as_written, names, started
        )
    return RunResult(report, None, written)


def _released(
    engine: Engine,
    s: PerturbSettings,
    source: _EngineInput,
    folder: Path,
    mapped: MappedTable,
    names: list[str],
    dropped: list[str],
    key_json: dict[str, Any],
    first_rows: dict[int, int],
    progress: ProgressFn | None,
) -> tuple[Any, Any, pd.DataFrame, int]:
    """Standardized and released values, the release as written, and how many records they
    hold: all, read back and checked whole, up to :data:`IN_MEMORY_ROWS`; else the sample,
    checked pair by pair (refused, nothing written, when a check fails)."""
    import numpy as np

    from anonlab.perturbation.pieces import check_sample, written_sample
    from anonlab.perturbation.table import numeric_columns

    mean, std = np.asarray(key_json["means"]), np.asarray(key_json["stds"])
    if mapped.summary.rows <= IN_MEMORY_ROWS:
        frame = _source_frame(source, s)
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
        check_sample(mapped, y, std, key_json, names, first_rows)
    z = (mapped.sample - mean) / std
    return z, y, sample, int(y.shape[0])


def _invert_on_engine(s: InvertSettings, progress: ProgressFn | None, started: float) -> RunResult:
    """:func:`run_invert` over an engine's pieces: a partitioned release restored into a
    folder (section text)."""
    from contextlib import closing

    from anonlab.perturbation.pieces import SAMPLE_ROWS, map_rows
    from anonlab.runs.common import open_run_engine

    _check_engine_settings(s)
    with (
        Outputs(
            {"output": s.output}, inputs=[file_of(s.input), s.key], folders=("output",)
        ) as outputs,
        blas_threads(1),
        closing(open_run_engine(s)) as engine,
    ):
        inverse = _inverse_map(engine, s, progress)
        table = inverse.source.table
        mapped = map_rows(
            engine,
            table,
            inverse.columns,
            list(table.column_names),
            inverse.rows,
            outputs.stage_folder("output"),
            integer_out=inverse.key.integer,
            sample_rows=SAMPLE_ROWS,
            noise=inverse.noise,
            progress=progress,
        )
        checked = (
            _check_restored(engine, s, _staged_folder(outputs), mapped, inverse, progress)
            if s.verify
            else 0
        )
        written = outputs.commit()
    report = {
        "command": "invert",
        "columns": inverse.columns,
        "records": mapped.summary.rows,
        "not_restored": list(inverse.key.identifying),
        "verified": bool(s.verify),
        "engine": {"name": engine.name, "parts": mapped.summary.parts, "checked_records": checked},
        "runtime_seconds": time.perf_counter() - started,
    }
    return RunResult(report, None, written)


@dataclass(frozen=True)
class _Inverse:
    """What the inverse maps: the key, the release's table and the key's columns in it, the
    row map ``x = mean + std * (A^T (y - t))``, gdp's noise removed before it, and each
    piece's first global row."""

    key: PerturbationKey
    source: _EngineInput
    columns: list[str]
    rows: AffineRows
    noise: RowNoise | None
    first_rows: dict[int, int]


def _inverse_map(engine: Engine, s: InvertSettings, progress: ProgressFn | None) -> _Inverse:
    """The key (refused when its gdp noise is one stream), checked against the release's
    columns and fingerprint (one pass over the pieces), and the map that undoes it."""
    import numpy as np

    from anonlab.engine.base import AffineRows
    from anonlab.perturbation.key import PerturbationKey
    from anonlab.perturbation.pieces import RowNoise, moments_pass

    key = PerturbationKey.load(s.key)
    noisy = key.noise_seed is not None and key.noise_scale > 0
    if noisy and key.noise_stream != "blocked":
        raise AnonlabError(
            "key: this gdp key's noise is one stream over all records (a key "
            "written before the noise was drawn per block of rows), which "
            "is restored in memory only: use engine 'numpy' with a file "
            "output",
            parameter="key",
        )
    source = _engine_input(s)
    table = source.table
    where = _label(s.input)
    key.check_columns(list(table.column_names), where)
    columns = list(key.columns)
    fingerprint, first_rows = moments_pass(engine, table, columns, progress=progress)
    key.check_fingerprint(fingerprint.count, fingerprint.mean, fingerprint.std, where)
    noise = (
        RowNoise(key.noise_seed, key.noise_scale, -1.0, first_rows)
        if noisy and key.noise_seed is not None
        else None
    )
    d = len(columns)
    shift = key.translation if key.translation is not None else np.zeros(d)
    rows = AffineRows(shift, np.ones(d), key.full_matrix().T, out_mean=key.means, out_std=key.stds)
    return _Inverse(key, source, columns, rows, noise, first_rows)


def _check_restored(
    engine: Engine,
    s: InvertSettings,
    folder: Path,
    mapped: MappedTable,
    inverse: _Inverse,
    progress: ProgressFn | None,
) -> int:
    """Check the restored table as written with the key as written: whole, by the independent
    checker, up to :data:`IN_MEMORY_ROWS` records, else on the sample; the records checked."""
    from anonlab.perturbation.pieces import check_sample, written_sample
    from anonlab.perturbation.table import numeric_columns

    key_json = _reread_key([Path(s.key)])
    if mapped.summary.rows <= IN_MEMORY_ROWS:
        _verify(
            _read_folder(folder, inverse.columns),
            _source_frame(inverse.source, s),
            inverse.columns,
            inverse.key.method,
            key_json,
        )
        return mapped.summary.rows
    restored = numeric_columns(
        written_sample(engine, folder, mapped, progress=progress),
        inverse.columns,
        allow_constant=True,
    ).values
    check_sample(
        mapped,
        restored,
        inverse.key.stds,
        key_json,
        inverse.columns,
        inverse.first_rows,
        restored=True,
    )
    return int(restored.shape[0])
