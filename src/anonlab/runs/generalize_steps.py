"""Steps the ``generalize`` and ``apply`` runs share: reading the input and hierarchies,
verifying a release with the independent checker (:mod:`anonlab.verify`), and, on an
engine, writing the release as Parquet parts and checking it.

Verification on an engine: a release of at most :data:`IN_MEMORY_ROWS` records is read
back (the staged folder, by the one reader) with the input, and checked by the
independent checker exactly as the in-memory path checks its release; the risk section
and the distinct values are measured on it. A larger release is checked by the engine's
frequency set *of the written release*: its classes and their sizes must be those the
search chose, every class but the suppressed records must have at least ``k`` records,
and no more records than the limit may be suppressed
(:func:`anonlab.lattice.pieces.release_problems`); its risk section is measured from the
engine's frequency set of the released columns the attacker knows and the sensitive ones
(with sampling weights, each class's sum of them counted in the same pass).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from anonlab.errors import AnonlabError, present
from anonlab.outputs import Outputs
from anonlab.progress import ProgressFn
from anonlab.runs.common import (
    check_engine_io,
    estimated_rows,
    file_of,
    is_folder_output,
    paths_convention,
    stored_path,
)
from anonlab.runs.generalize_settings import TableSettings

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from numpy.typing import NDArray

    from anonlab.dataset import Role, Roles
    from anonlab.engine.base import Engine, ReleasePlan
    from anonlab.hierarchy import Hierarchy
    from anonlab.runs.generalize_settings import ApplySettings, GeneralizeSettings
    from anonlab.staging import StagedFolder

    #: the settings of a run that may go through an engine
    EngineRun: TypeAlias = GeneralizeSettings | ApplySettings


def read_input(settings: TableSettings, *, categorical: bool = False) -> pd.DataFrame:
    """The run's table, every value as text, through the one reader.

    ``categorical``: text columns as categoricals (``strings="dictionary"``):
    the same texts, held once per distinct value with a code per row, so a
    million-row table of few distinct values takes a few bytes per cell and is
    grouped on its codes.
    """
    from anonlab.io import read_table

    if categorical:
        return read_table(settings.input, **settings.read_options(), strings="dictionary")
    return read_table(settings.input, **settings.read_options())


def load_hierarchies(paths: Mapping[str, str | Path]) -> dict[str, Hierarchy]:
    """Each quasi-identifier's hierarchy, loaded (and validated) from its file."""
    from anonlab.hierarchy import Hierarchy

    return {column: Hierarchy.from_csv(path) for column, path in paths.items()}


@dataclass(frozen=True)
class ModelCheck:
    """What the independent checker needs to judge a release's privacy model.

    ``criteria`` are the models as the settings spell them (file parameters
    usable from here); ``population`` the population table of delta-presence
    or k-map on a population table (``None`` otherwise).
    """

    criteria: list[dict[str, Any]]
    limit: int
    population: pd.DataFrame | None = None
    min_levels: Mapping[str, int] = field(default_factory=dict)
    max_levels: Mapping[str, int] = field(default_factory=dict)
    aggregate_qi: Mapping[str, str] = field(default_factory=dict)
    aggregate_missing: str = "ignore"


def verify_release(
    original: pd.DataFrame,
    release: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    levels: Mapping[str, int],
    dropped: Iterable[str],
    model: ModelCheck,
) -> None:
    """Check a release with the independent checker; the first problem is an error.

    Every released value the hierarchy label of the original at ``levels``,
    within the run's level bounds, then every privacy model (k-anonymity too) on the
    released classes
    (:mod:`anonlab.verify.generalization` and :mod:`anonlab.verify.criteria`,
    which share no code with the search). With ``model.aggregate_qi`` each aggregated
    column is first checked against its classes, rebuilt from the original and the levels
    (:mod:`anonlab.verify.aggregation`), and the rest is checked on the release so labelled.
    """
    from anonlab.verify import generalization as checker
    from anonlab.verify.criteria import check_criteria

    qis = list(levels)
    problems: list[str] = []
    if model.aggregate_qi:
        from anonlab.verify.aggregation import check_aggregates, relabel_full_domain

        labelled = relabel_full_domain(
            original, release, hierarchies, levels, list(model.aggregate_qi)
        )
        problems += check_aggregates(
            original, release, labelled, qis, model.aggregate_qi, model.aggregate_missing
        )
        release = labelled
    problems += checker.check_level_bounds(levels, model.min_levels, model.max_levels)
    problems += checker.check_generalization(
        original, release, hierarchies, levels, list(dropped), max_suppressed=model.limit
    )
    problems += check_criteria(
        original,
        release,
        model.criteria,
        qis,
        model.limit,
        expected_star=checker.expected_stars(original, hierarchies, levels),
        population=model.population,
        hierarchies=hierarchies,
        levels=levels,
    )
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def population_table(
    criteria: Iterable[Any], frame: pd.DataFrame, read_options: Mapping[str, Any]
) -> pd.DataFrame | None:
    """The population the checker compares with: the table itself with delta-presence,
    inclusion or a journalist profitability model, the k-map population table, or none."""
    import pandas as pd

    from anonlab.io import read_table

    for c in criteria:
        if c.name in ("delta-presence", "inclusion") or getattr(c, "defines_subset", False):
            return frame
    for c in criteria:
        population = getattr(c, "population", None) if c.name == "k-map" else None
        if isinstance(population, pd.DataFrame):
            return population
        if population is not None:
            return read_table(population, **read_options)
    return None


def criteria_files(specs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The files the criteria name, keyed for the report's ``inputs``."""
    from anonlab.privacy.spec import path_parameters

    files: dict[str, str] = {}
    for spec in specs:
        on = f":{spec['attribute']}" if spec.get("attribute") else ""
        for key, path in path_parameters(spec).items():
            files[f"criteria:{spec['model']}{on}:{key}"] = path
    return files


def found_metric_parameters(params: Mapping[str, Any]) -> dict[str, Any]:
    """A report's ``targets`` and ``static_loss`` (the classification and static metrics'
    parameters), where given, for applying its transformation again."""
    out: dict[str, Any] = {}
    if params.get("targets"):
        out["targets"] = [str(t) for t in params["targets"]]
    if params.get("static_loss"):
        out["static_loss"] = {
            str(c): [float(v) for v in values] for c, values in dict(params["static_loss"]).items()
        }
    return out


def generalize_outputs(
    settings: GeneralizeSettings, files: Mapping[str, Any], *, folder: bool
) -> Outputs:
    """The outputs of a generalization run (release, report, HTML page, plot), each path
    checked against its inputs (the table, the hierarchies, the criteria's ``files``);
    ``folder``: the release is a folder of Parquet parts."""
    from anonlab.outputs import output_target
    from anonlab.runs.common import input_tables
    from anonlab.runs.generalize_settings import GENERALIZE_OUTPUTS

    targets = {name: getattr(settings, name) for name in GENERALIZE_OUTPUTS}
    targets["output"] = output_target(settings.output, settings.output_table)
    return Outputs(
        targets,
        inputs=[
            settings.input,
            *[p for p in settings.qi.values() if p],
            *settings.sensitive_hierarchies.values(),
            *files.values(),
        ],
        input_tables=input_tables(settings.input, settings.table),
        folders=("output",) if folder else (),
    )


def searched_qi(settings: GeneralizeSettings) -> tuple[dict[str, str], list[str], Roles]:
    """The quasi-identifiers the search generalizes (those with a hierarchy file), those it
    leaves out (aggregated in the others' classes, ARX's microaggregation without
    clustering: ``qi = {age = ""}`` with ``aggregate_qi``), and the roles of the table model,
    which releases the latter as they are until they are aggregated."""
    from anonlab.dataset import Roles

    free = [c for c, p in settings.qi.items() if not p]
    if not free:
        return dict(settings.qi), [], settings.roles
    roles = Roles.of(
        settings.identifying, settings.sensitive, [*settings.insensitive, *free], settings.other
    )
    return {c: p for c, p in settings.qi.items() if p}, free, roles


def qi_roles(roles: Mapping[str, Role], settings: GeneralizeSettings) -> dict[str, Role]:
    """The columns' roles for the report: a quasi-identifier the search left out
    (:func:`searched_qi`) is one, though the table model released it as it is."""
    from anonlab.dataset import Role

    free = {c for c, p in settings.qi.items() if not p}
    return {c: Role.QUASI if c in free else r for c, r in roles.items()}


def refuse_aggregate_on_engine(settings: GeneralizeSettings) -> None:
    """``aggregate_qi`` on an engine: full-domain generalization writes it there
    (:func:`anonlab.generalize_aggregate.aggregates_on_engine`); Mondrian and local
    recoding aggregate in memory, so with an engine run they are refused in one line."""
    if settings.aggregate_qi and uses_engine(settings) and settings.recoding != "full-domain":
        raise AnonlabError(
            f"aggregate_qi with recoding '{settings.recoding}' replaces a quasi-identifier by "
            "its classes' aggregates in memory: the engines do not write them yet; use "
            "engine numpy with a file output, or recoding full-domain",
            parameter="aggregate_qi",
        )


def aggregated_release(
    release: pd.DataFrame, original: pd.DataFrame, qis: Sequence[str], settings: GeneralizeSettings
) -> pd.DataFrame:
    """``release`` with the settings' ``aggregate_qi`` columns replaced by their classes'
    aggregates (:func:`anonlab.generalize_aggregate.aggregate_classes`), or as it is."""
    if not settings.aggregate_qi:
        return release
    from anonlab.generalize_aggregate import aggregate_classes

    return aggregate_classes(
        release, original, qis, settings.aggregate_qi, missing=settings.aggregate_missing
    )


def check_aggregated(
    original: pd.DataFrame,
    written: pd.DataFrame,
    labelled: pd.DataFrame,
    qis: Sequence[str],
    settings: GeneralizeSettings,
) -> None:
    """Check a release whose ``aggregate_qi`` columns were aggregated against the release
    ``labelled`` it was made from (Mondrian, local recoding: no level rebuilds the labels),
    with the independent checker (:mod:`anonlab.verify.aggregation`): the other columns the
    same, each aggregated cell its class's aggregate. The first problem is an error."""
    from anonlab.verify.aggregation import check_aggregates, same_other_columns

    aggregated = list(settings.aggregate_qi)
    problems = same_other_columns(written, labelled, aggregated) or check_aggregates(
        original, written, labelled, qis, settings.aggregate_qi, settings.aggregate_missing
    )
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def check_parameters(settings: GeneralizeSettings) -> None:
    """k, the suppression limit and the attribute weights, before any work."""
    from anonlab.privacy import check_k, check_suppression

    if settings.k is not None:
        check_k(settings.k)
    check_suppression(settings.suppression)
    check_weights(settings)


def check_weights(settings: GeneralizeSettings) -> None:
    """Attribute weights name quasi-identifiers."""
    unknown = [c for c in settings.attribute_weights if c not in settings.qi]
    if unknown:
        raise AnonlabError(
            f"attribute_weights names '{unknown[0]}', which is not a "
            f"quasi-identifier (qi: {', '.join(settings.qi)})",
            parameter="attribute_weights",
        )


def report_path(report: str | None) -> Path | None:
    return None if report is None else Path(report)


#: releases up to this many records are read back whole and checked as in memory
IN_MEMORY_ROWS = 2_000_000


def check_engine_settings(settings: EngineRun, *, file_output: bool = False) -> None:
    """Refuse, before any work, what the engines do not read or write
    (:func:`anonlab.runs.common.check_engine_io`: a database, an Excel sheet, a query); a
    release that is not a folder, unless ``file_output`` (a large table on the NumPy engine:
    :func:`file_through_engine`)."""
    check_engine_io(settings)
    if file_output:
        return
    if settings.output is not None and not is_folder_output(settings.output):
        raise AnonlabError(
            f"output '{settings.output}' is a file, but engine '{settings.engine}' writes the "
            "release as a folder of Parquet parts: end output with '/' "
            f"(e.g. '{Path(settings.output).with_suffix('')}/')",
            parameter="output",
        )


@dataclass(frozen=True)
class ReleaseCheck:
    """What an engine's release is written by and checked against.

    ``plan`` is what the engine applies to every row; ``transformation`` the
    levels by quasi-identifier; ``records`` the input's records; ``k`` the
    k-anonymity model's k (``None`` without one); ``limit`` the most records
    that may be suppressed, ``floor(suppression * records)``; ``criteria``
    the privacy model as settings dicts (for the independent checker);
    ``dropped`` the identifying columns; ``sensitive`` the sensitive columns
    the risk section measures; ``min_levels`` and ``max_levels`` the run's
    level bounds, which the released levels must respect; ``aggregate_qi`` and
    ``aggregate_missing`` the columns replaced by their classes' aggregates
    (:func:`anonlab.generalize_aggregate.aggregates_on_engine`; such a release is always
    read back and checked whole).
    """

    plan: ReleasePlan
    transformation: Mapping[str, int]
    records: int
    k: int | None
    limit: int
    criteria: list[dict[str, Any]]
    dropped: list[str]
    sensitive: list[str]
    min_levels: Mapping[str, int] = field(default_factory=dict)
    max_levels: Mapping[str, int] = field(default_factory=dict)
    aggregate_qi: Mapping[str, str] = field(default_factory=dict)
    aggregate_missing: str = "ignore"


class Checked:
    """What the written release gave: the risk keys, the distinct released values, and the
    release read back when it is small."""

    def __init__(
        self,
        risk: dict[str, Any],
        distinct: dict[str, int],
        release: pd.DataFrame | None,
        classes: Mapping[tuple[str, ...], int],
    ) -> None:
        self.risk = risk
        self.distinct = distinct
        self.release = release
        self.classes = classes


def write_and_check(
    engine: Engine,
    table: Any,
    settings: EngineRun,
    outputs: Outputs,
    expected: ReleaseCheck,
    base: Any,
    hierarchies: Mapping[str, Hierarchy],
    progress: ProgressFn | None,
) -> Checked:
    """Write the release by ``expected.plan``, verify it and measure its risk (module text):
    a folder output into its staged folder; a Parquet file output on the NumPy engine
    straight into its staged file (:meth:`NumpyEngine.write_release_file`); any other file
    output (or none) into a scratch folder, the file then staged from the checked parts
    (:func:`gather_parts`)."""
    from anonlab.engine.numpy_backend import NumpyEngine
    from anonlab.lattice.pieces import released_classes, released_distinct
    from anonlab.sinks import output_format
    from anonlab.staging import StagedFolder

    plan = expected.plan
    target = outputs.target("output")
    scratch: tempfile.TemporaryDirectory[str] | None = None
    staged: StagedFolder | None = None
    if outputs.is_folder("output"):
        staged = outputs.stage_folder("output")
        written = staged.path
    elif (
        isinstance(engine, NumpyEngine)
        and not expected.aggregate_qi
        and isinstance(target, Path)
        and output_format(target) == "parquet"
    ):
        outputs.stage("output", lambda tmp: engine.write_release_file(table, plan, tmp))
        written = present(outputs.staged("output"), "the staged release file")
    else:
        scratch = tempfile.TemporaryDirectory(prefix="anonlab-release-")
        staged = StagedFolder(Path(scratch.name) / "release")
        written = staged.path
    try:
        if staged is not None and expected.aggregate_qi:
            from anonlab.generalize_aggregate import aggregates_on_engine, write_parts

            aggregates = aggregates_on_engine(
                engine, table, plan, expected.aggregate_qi, expected.aggregate_missing, progress
            )
            write_parts(engine, table, plan, aggregates, str(staged.path), progress)
        elif staged is not None:
            engine.write_release(table, plan, staged, progress=progress)
        classes = released_classes(base, plan)
        distinct = released_distinct(classes, plan.columns)
        if expected.records <= IN_MEMORY_ROWS or expected.aggregate_qi:
            release = _check_in_memory(written, settings, expected, hierarchies)
            checked = Checked(_risk(release, settings, expected), distinct, release, classes)
        else:
            if settings.verify:
                _check_by_frequencies(engine, written, expected, classes)
            risk = _risk_of_folder(engine, written, settings, expected)
            checked = Checked(risk, distinct, None, classes)
        if scratch is not None and target is not None:
            outputs.stage("output", lambda tmp: gather_parts(written, tmp, target))
        return checked
    finally:
        if scratch is not None and staged is not None:
            staged.discard()
            scratch.cleanup()


def _risk(release: pd.DataFrame, settings: EngineRun, expected: ReleaseCheck) -> dict[str, Any]:
    from anonlab.risk.release import release_risk_report

    return release_risk_report(
        release, expected.sensitive, settings, qi=list(expected.transformation)
    )


def _check_in_memory(
    folder: Path, settings: EngineRun, expected: ReleaseCheck, hierarchies: Mapping[str, Hierarchy]
) -> pd.DataFrame:
    """The release read back; with ``verify``, checked against the input read whole."""
    from anonlab.io import read_table

    release = read_table(folder)
    if settings.verify:
        original = read_input(settings)
        verify_release(
            original,
            release,
            hierarchies,
            expected.transformation,
            expected.dropped,
            ModelCheck(
                expected.criteria,
                expected.limit,
                min_levels=expected.min_levels,
                max_levels=expected.max_levels,
                aggregate_qi=expected.aggregate_qi,
                aggregate_missing=expected.aggregate_missing,
            ),
        )
    return release


def _check_by_frequencies(
    engine: Engine, folder: Path, expected: ReleaseCheck, classes: Mapping[tuple[str, ...], int]
) -> None:
    """Check a large release by the engine's frequency set of what was written: its
    classes those of ``classes``, every class but the suppressed one of at least ``k``
    records, at most ``limit`` records suppressed, the levels within the run's bounds."""
    from anonlab.lattice.pieces import release_problems
    from anonlab.verify.generalization import check_level_bounds

    written = engine.frequency_set(folder, list(expected.plan.columns))
    problems = check_level_bounds(expected.transformation, expected.min_levels, expected.max_levels)
    if written.rows != expected.records:
        problems.append(f"the release has {written.rows} records, the input {expected.records}")
    problems += release_problems(classes, written, expected.k, expected.limit)
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def _risk_of_folder(
    engine: Engine, folder: Path, settings: EngineRun, expected: ReleaseCheck
) -> dict[str, Any]:
    """The risk keys of a written release too large to read back: from the engine's frequency
    set of the attacker's and the sensitive columns, with each class's sum of the sampling
    weights when there are some (the same figures as in memory, the weighted ones to
    rounding: :mod:`anonlab.risk.pieces`)."""
    from anonlab.engine.table import open_table
    from anonlab.risk.release import release_risk_report

    names = [c for c in open_table(folder).column_names if c not in expected.dropped]
    return release_risk_report(
        folder,
        expected.sensitive,
        settings,
        engine=engine,
        columns=names,
        qi=list(expected.transformation),
    )


# ---------------------------------------------------------------------------
# apply
# ---------------------------------------------------------------------------


def uses_engine(settings: GeneralizeSettings | ApplySettings) -> bool:
    """Whether a generalize or apply run goes through an engine
    (the engine branch of each run): on Dask, or with a folder output."""
    return settings.engine != "numpy" or is_folder_output(settings.output)


def roles_report(
    roles: Mapping[str, Role], other: str | None, by_other: Iterable[str]
) -> dict[str, Any]:
    """The role keys of a report (:func:`anonlab.dataset.roles_report`)."""
    from anonlab.dataset import roles_report as keys

    return keys(roles, other, by_other)


def release_loss(
    release: pd.DataFrame,
    original: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    qis: Sequence[str],
    levels: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The report's ``loss`` section of a release held whole (:mod:`anonlab.metrics.certainty`):
    each quasi-identifier's domain is its values in ``original``; ``levels`` the one level
    of each (full-domain), else a cell is costed by its label, whatever its level (local
    recoding)."""
    from anonlab.dataset import as_text
    from anonlab.metrics.certainty import classes_loss, frame_classes

    domains = {q: [str(v) for v in as_text(original[q]).unique()] for q in qis}
    return classes_loss(frame_classes(release, qis), qis, domains, hierarchies, levels)


def distinct_values(
    original: pd.DataFrame, release: pd.DataFrame, transformation: Mapping[str, int]
) -> dict[str, dict[str, int]]:
    """Per quasi-identifier: its distinct values in the data and in the release.

    Counted on the tables, not on the hierarchy (which may list values the
    data does not hold: Adult's age has 72 values, its hierarchy 100 rows).
    A missing value counts as one value, as the hierarchy's empty row does.
    The release is counted over its records that are not suppressed (some
    quasi-identifier not ``'*'``), so the suppression marker is no value.
    """
    import numpy as np
    import pandas as pd

    from anonlab.dataset import as_text
    from anonlab.hierarchy import SUPPRESSED

    qis = list(transformation)
    suppressed = np.logical_and.reduce(
        [(release[c] == SUPPRESSED).to_numpy(dtype=bool, na_value=False) for c in qis]
    )
    kept = ~suppressed if not suppressed.all() else np.ones(len(release), dtype=bool)
    out: dict[str, dict[str, int]] = {}
    for column in qis:
        out[column] = {
            "original": len(pd.unique(as_text(original[column]))),
            "released": _distinct_kept(release[column], kept),
        }
    return out


def _distinct_kept(column: pd.Series, kept: NDArray[np.bool_]) -> int:
    """Distinct values of ``column`` on the ``kept`` rows (a missing value counts as one).

    A categorical column (the release built here) is counted on its codes, and any
    other column by :func:`pandas.unique` on the column itself: an Arrow-backed text
    column is never turned into a million Python strings.
    """
    import numpy as np
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()[kept]
        return int(np.count_nonzero(np.bincount(codes.astype(np.int64) + 1)))
    return len(pd.unique(column[kept]))


def stored_criteria(
    entries: Iterable[Mapping[str, Any]], where: Path | None, nested: bool
) -> list[dict[str, Any]]:
    """Criteria with their file parameters stored as the report stores paths.

    ``nested``: report entries (``{"model", "parameters", ...}``); otherwise
    settings dicts (``{"model", parameters...}``).
    """
    from anonlab.privacy.spec import MODELS

    out = []
    for entry in entries:
        item = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in entry.items()}
        params = item["parameters"] if nested else item
        model = MODELS.get(str(item.get("model")))
        for key, param in model.params.items() if model else ():
            value = params.get(key)
            if param.path and isinstance(value, str):
                params[key] = stored_path(value, where)
        out.append(item)
    return out


def columns_by_other(columns: Iterable[str], settings: GeneralizeSettings) -> list[str]:
    """The ``columns`` (in table order) that no role of ``settings`` names, which take
    ``settings.other``'s role (``numeric`` is Mondrian's, empty for the other recodings)."""
    from anonlab.dataset import without_role

    return without_role(
        columns,
        settings.qi,
        settings.identifying,
        settings.sensitive,
        settings.insensitive,
        settings.numeric,
    )


def generalize_header(command: str, settings: GeneralizeSettings) -> dict[str, Any]:
    """The header of a ``generalize`` run's report, full-domain, local or Mondrian alike: the
    settings with every path stored as ``paths`` says (a quasi-identifier without a
    hierarchy file as ``""``), the files read, and ``paths``."""
    from anonlab.report import report_header
    from anonlab.risk.release import risk_last
    from anonlab.runs.generalize_settings import GENERALIZE_OUTPUTS

    where = report_path(settings.report)
    params = settings.model_dump()
    for name in ("input", *GENERALIZE_OUTPUTS):
        params[name] = stored_path(params[name], where)
    params["qi"] = {c: stored_path(p, where) if p else "" for c, p in settings.qi.items()}
    params["sensitive_hierarchies"] = {
        c: stored_path(p, where) for c, p in settings.sensitive_hierarchies.items()
    }
    params["criteria"] = stored_criteria(settings.criteria, where, nested=False)
    inputs: dict[str, Any] = {
        "data": file_of(settings.input),
        **{f"hierarchy:{c}": p for c, p in settings.qi.items() if p},
        **{f"hierarchy:{c}": p for c, p in settings.sensitive_hierarchies.items()},
        **criteria_files(settings.model_criteria()),
    }
    report = report_header(command, risk_last(params), inputs)
    report["paths"] = paths_convention(where)
    return report


# ---------------------------------------------------------------------------
# A large table with a file output: the NumPy engine's pieces, gathered into the file
# ---------------------------------------------------------------------------

#: input records above which a run with a file output goes over the NumPy engine's pieces
#: (measured on 10M rows: docs/benchmarks.md, round 5; at 1M rows reading the table whole
#: costs about half the CPU and a third of the memory of the engine run)
ENGINE_FILE_ROWS = IN_MEMORY_ROWS


def file_through_engine(settings: EngineRun, criteria: Iterable[Any]) -> bool:
    """Whether a run with a file output (or none) on the NumPy engine reads its input in pieces.

    So it does when the input is a CSV or Parquet file, folder or glob of more than
    :data:`ENGINE_FILE_ROWS` records (:func:`estimated_rows`), the output (if any) a CSV or
    Parquet file, and the privacy model one the engines count (no population table): the
    release is then written as Parquet parts, checked as an engine run checks it, and
    gathered into the one file (:func:`gather_parts`). Any other run (one with
    ``aggregate_qi`` too) reads its table whole.
    """
    from anonlab.sinks import output_format

    if settings.engine != "numpy" or is_folder_output(settings.output):
        return False
    if getattr(settings, "aggregate_qi", None):  # the classes' aggregates are made in memory
        return False
    if any(getattr(c, "needs_population", False) for c in criteria):
        return False
    if getattr(settings, "sheet", None) is not None or settings.output_table is not None:
        return False
    if settings.output is not None and output_format(settings.output) not in (
        "csv",
        "tsv",
        "parquet",
    ):
        return False
    return estimated_rows(settings.input, settings.delimiter) > ENGINE_FILE_ROWS


@contextmanager
def release_parts(outputs: Outputs) -> Iterator[Path]:
    """The folder an engine writes the release's Parquet parts into: the staged folder of a
    folder ``output``; for a file output (or none) a scratch folder, from whose parts the
    file is staged (:func:`gather_parts`) when the body ends without an error, and which is
    removed either way."""
    from anonlab.staging import StagedFolder

    if outputs.is_folder("output"):
        yield outputs.stage_folder("output").path
        return
    with tempfile.TemporaryDirectory(prefix="anonlab-release-") as scratch:
        staged = StagedFolder(Path(scratch) / "release")
        try:
            yield staged.path
            target = outputs.target("output")
            if target is not None:
                outputs.stage("output", lambda tmp: gather_parts(staged.path, tmp, target))
        finally:
            staged.discard()


def gather_parts(folder: Path, tmp: Path, target: Any) -> None:
    """Write the Parquet parts of ``folder``, in order, as one file ``tmp`` in the format of
    ``target`` (CSV, TSV or Parquet), a row group at a time (:func:`_row_groups`): the CSV
    in the one dialect (:func:`anonlab.sinks.write_csv_rows`), the Parquet with the first
    part's schema."""
    import pyarrow.parquet as pq

    from anonlab.sinks import header_line, output_format, write_csv_rows
    from anonlab.sources import parquet_parts

    fmt = output_format(target)
    parts = parquet_parts(folder)
    schema = pq.read_schema(parts[0])
    if fmt == "parquet":
        with pq.ParquetWriter(tmp, schema) as writer:
            for group in _row_groups(parts, schema):
                writer.write_table(group)
        return
    delimiter = "\t" if fmt == "tsv" else ","
    with tmp.open("wb") as fh:
        fh.write(header_line(schema.names, delimiter))
        for group in _row_groups(parts, schema):
            if group.num_rows:
                write_csv_rows(group, fh, delimiter)


def _row_groups(parts: Iterable[Path], schema: Any) -> Iterator[Any]:
    """The row groups of ``parts`` in order, each cast to ``schema`` where its types differ
    (``ParquetFile.read_row_group``: on a 10M-row release a quarter of ``read_table``'s CPU)."""
    import pyarrow.parquet as pq

    for part in parts:
        handle = pq.ParquetFile(part)
        for i in range(handle.num_row_groups):
            group = handle.read_row_group(i)
            yield group if group.schema.equals(schema) else group.cast(schema)
