"""The generalization family's runs: ``generalize`` and ``apply``.

The hierarchy builders' runs are in :mod:`anonlab.runs.hierarchy`.

Each run reads its settings (a pydantic model, see :mod:`anonlab.settings`),
checks every output path before any work, reads the table through
:func:`anonlab.io.read_table`, applies the method, verifies the release with
the independent checker (:mod:`anonlab.verify`) by re-reading the staged
file, and writes release, JSON report, HTML page and plot together through
:class:`anonlab.outputs.Outputs`, so that it writes all of them or none.

Reports store input paths relative to the report's folder (absolute without
a report) and say so under ``"paths"``; :func:`run_apply` reads them back with
:func:`anonlab.runs.common.resolve_stored_path`, so it works from any folder.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic import Field, field_validator, model_validator

from anonlab.database import masked
from anonlab.errors import AnonlabError
from anonlab.io import PathLike
from anonlab.outputs import Outputs, output_target
from anonlab.progress import ProgressFn
from anonlab.risk.release import ReleaseRiskSettings, risk_last
from anonlab.runs.common import (
    EngineSettings,
    ReadSettings,
    RunResult,
    input_tables,
    paths_convention,
    resolve_stored_path,
    stage_plot,
    stage_release,
    stage_report,
    stored_path,
)
from anonlab.settings import outputs_taken_over, read_toml, resolve_paths, split_names

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from numpy.typing import NDArray

    from anonlab.dataset import Dataset, Role
    from anonlab.generalize import AppliedTransformation, GeneralizationResult
    from anonlab.hierarchy import Hierarchy
    from anonlab.privacy import Criterion

SearchName = Literal["exhaustive", "ola", "degree", "flash", "lightning", "top-down", "genetic",
                     "descent", "auto"]
AggregateName = Literal["arithmetic_mean", "geometric_mean", "sum", "max", "rank"]

#: ARX 3.9's generalization/suppression factor when none is given (``Metric``)
DEFAULT_GS_FACTOR = 0.5

#: the files a generalize run can write, by parameter name
GENERALIZE_OUTPUTS = ("output", "report", "html", "plot")
#: release formats read back without a delimiter (every other extension is CSV)


# ---------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------


class TableSettings(ReadSettings):
    """Where a run's table comes from: ``input``, a CSV, Parquet or Excel file or a
    SQLAlchemy URL, read as :class:`~anonlab.runs.common.ReadSettings` say."""

    input: str

    @model_validator(mode="before")
    @classmethod
    def _paths_as_text(cls, values: Any) -> Any:
        """Accept ``pathlib.Path`` (and any ``os.PathLike``) wherever a path goes."""
        if not isinstance(values, dict):
            return values
        out = dict(values)
        for key in cls.path_fields:
            out[key] = _as_text(out.get(key))
        return {k: v for k, v in out.items() if v is not None or k in values}


def _as_text(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        return {k: _as_text(v) for k, v in value.items()}
    return value


def parse_suppression(value: Any) -> float:
    """A suppression limit as a fraction of the records: ``0.01``, ``"0.01"``, ``"1%"``.

    Every limit from 0 to 1 is allowed; 1 (100 %) lets any class be
    suppressed, as in ARX, and the metric alone then weighs suppressing
    against generalizing. 100 % is written ``"100%"`` (or the float ``1.0``
    in TOML or Python). An integer 1, or the text ``"1"`` or ``"1.0"`` (as a
    command-line flag gives it), is refused as ambiguous: it may mean 1 %.
    Above 1 is refused with the two spellings that mean 1 %.
    """
    text = value.strip() if isinstance(value, str) else value
    percent = isinstance(text, str) and text.endswith("%")
    try:
        if isinstance(text, bool):
            raise ValueError(text)
        number = float(text[:-1].strip() if percent else text)
    except (TypeError, ValueError):
        raise AnonlabError(f"suppression {value!r} is not a fraction or a percentage: write "
                           "0.01 or 1%", parameter="suppression") from None
    fraction = number / 100.0 if percent else number
    if not math.isfinite(fraction) or not 0.0 <= fraction <= 1.0:
        raise AnonlabError(f"suppression must be a fraction from 0 to 1 or a percentage up to "
                           f"100% (got {str(value).strip()}): write 0.01 or 1%",
                           parameter="suppression")
    if fraction == 1.0 and not percent and not isinstance(text, float):
        raise AnonlabError(f"suppression {str(value).strip()} is ambiguous (1% or 100%?): "
                           "write 0.01 or 1% for one percent, or 100% to let every record be "
                           "suppressed", parameter="suppression")
    return fraction


def default_metric(suppression: float) -> str:
    """The metric used when none is given: one that counts suppressed records when any may be.

    With a suppression limit above 0, ``precision`` alone would score a
    release with many suppressed records as lossless, so the default is
    ``precision_with_suppression`` (ARX's precision); otherwise ``precision``.
    """
    return "precision_with_suppression" if suppression > 0 else "precision"


def _role_names(value: Any) -> Any:
    """``"a,b"`` or ``["a", "b,c"]`` give the column names one by one."""
    if isinstance(value, str) or (isinstance(value, list)
                                  and all(isinstance(v, str) for v in value)):
        return split_names(value)
    return value


def weights_table(values: Any) -> Any:
    """A ``weights`` table (``[weights]`` in TOML) holds attribute weights: it is read as
    ``attribute_weights``; a ``weights`` text stays the risk section's weights column (so a
    config's table and a ``weights`` column given as a flag both hold)."""
    if isinstance(values, dict) and isinstance(values.get("weights"), Mapping):
        out = dict(values)
        table = out.pop("weights")
        if out.get("attribute_weights"):
            raise AnonlabError("weights (a table) and attribute_weights are both given: "
                               "give the attribute weights once", parameter="weights")
        out["attribute_weights"] = table
        return out
    return values


class GeneralizeSettings(TableSettings, EngineSettings, ReleaseRiskSettings):
    """Everything a generalization needs (``anonlab generalize``).

    Every column has one role: ``qi`` maps each quasi-identifier to its
    hierarchy file; ``identifying`` columns are dropped, ``sensitive`` and
    ``insensitive`` ones released as they are; ``other="insensitive"``
    releases the columns named nowhere as they are (the report lists them),
    otherwise such a column is refused.

    The privacy model is every one of ``criteria`` (each a dict or a flag
    text, see :mod:`anonlab.privacy.spec` and docs/privacy_models.md; a
    model on a sensitive attribute needs that column in ``sensitive``);
    ``k`` is a shorthand for a k-anonymity criterion (not both; with neither,
    2-anonymity). Records of the classes that fail a model are suppressed, at
    most ``floor(suppression * n)`` of them (``suppression`` a fraction from 0
    to 1 or a percentage such as ``"1%"``; ``"100%"`` allows any number).

    ``search`` and ``metric`` choose the strategy and the information loss to
    minimise (default metric: ``precision_with_suppression`` when
    ``suppression`` > 0, else ``precision``); ``gs_factor`` (0 to 1, ARX's
    generalization/suppression factor), ``aggregate`` and
    ``attribute_weights`` (quasi-identifier -> weight, 1 each by default;
    a TOML ``[weights]`` table is read as it) tune the metrics that take them.
    ``aggregate`` ``None`` is each metric's own ARX default (geometric mean
    for ``loss``, arithmetic mean for ``precision``, sum for the entropies).
    ``targets`` (the columns a ``classification`` metric judges the release
    by, ARX's response variables) and ``static_loss`` (quasi-identifier ->
    one loss per level for the ``static`` metric; a TOML ``[static_loss]``
    table) are those two metrics' own parameters.
    ``practical_monotonicity`` treats every model as monotone (ARX's option:
    faster, the optimum may be missed). The heuristic searches (``lightning``,
    ``top-down``, ``genetic``, ``descent``; ``auto``: optimal up to ``heuristic_threshold``
    nodes) stop at ``time_limit`` seconds or ``step_limit`` node checks and
    are not proven optimal; a TOML ``[genetic]`` table tunes the genetic one.
    The release's risk is measured and
    judged as :class:`~anonlab.risk.release.ReleaseRiskSettings` says.

    Steering the optimum: ``min_level`` and ``max_level`` (quasi-identifier
    -> level; TOML tables ``[min_level]`` and ``[max_level]``) bound the
    levels the search may choose, as ARX's minimum and maximum
    generalization do; ``alternatives`` (N) lists the N best transformations
    that satisfy the model in the report, the optimum as number 1
    (:func:`anonlab.generalize.anonymize`).
    ``output`` (release), ``report`` (JSON), ``html`` and ``plot`` (PNG of
    class sizes) are written when given.

    ``engine`` chooses where the passes over the rows run (docs/engine.md):
    ``"numpy"`` (the default) in this process, ``"dask"`` on a Dask cluster,
    joined at ``scheduler`` (``tcp://host:port``) or started locally with
    ``workers`` processes of ``memory_limit`` each (``"4GB"``). An
    ``output`` that is a folder (an existing one, or a path ending in ``/``)
    receives the release as partitioned Parquet written by the engine, the
    rows never held here; with ``engine = "dask"`` it must be one.
    """

    path_fields: ClassVar[tuple[str, ...]] = ("input", "qi", "sensitive_hierarchies",
                                              *GENERALIZE_OUTPUTS)
    #: listing the next-best transformations changes neither the release nor its figures
    neutral_fields: ClassVar[tuple[str, ...]] = (*TableSettings.neutral_fields, "alternatives")

    qi: dict[str, str]
    identifying: list[str] = Field(default_factory=list)
    sensitive: list[str] = Field(default_factory=list)
    insensitive: list[str] = Field(default_factory=list)
    other: Literal["insensitive"] | None = None
    k: int | None = None
    criteria: list[dict[str, Any]] = Field(default_factory=list)
    suppression: float = 0.0
    search: SearchName = "flash"
    metric: str | None = None
    gs_factor: float = DEFAULT_GS_FACTOR
    aggregate: AggregateName | None = None
    attribute_weights: dict[str, float] = Field(default_factory=dict)
    targets: list[str] = Field(default_factory=list)
    static_loss: dict[str, list[float]] = Field(default_factory=dict)
    practical_monotonicity: bool = False
    time_limit: float | None = None
    step_limit: int | None = None
    heuristic_threshold: int | None = None
    genetic: dict[str, Any] | None = None
    min_level: dict[str, int] = Field(default_factory=dict)
    max_level: dict[str, int] = Field(default_factory=dict)
    alternatives: int = Field(default=0, ge=0)
    output: str | None = None
    output_table: str | None = None
    report: str | None = None
    html: str | None = None
    plot: str | None = None
    verify: bool = True

    @classmethod
    def load(cls, config: PathLike | None = None, /, *, overwrite: bool = False,
             **overrides: Any) -> GeneralizeSettings:
        """:meth:`Settings.load`, with the file parameters of ``criteria`` (``hierarchy``,
        ``subset``, ``population``) resolved against the TOML file's folder too."""
        from anonlab.privacy.spec import resolve_criteria_paths
        from anonlab.settings import (
            check_input_override,
            check_overwrite,
            merge_settings,
            validate_settings,
        )

        values: dict[str, Any] = {}
        if config is not None:
            path = Path(config)
            values = weights_table(resolve_paths(read_toml(path), path.parent,
                                                 cls.path_fields))
            if "criteria" in values:
                values["criteria"] = resolve_criteria_paths(values["criteria"], path.parent)
            check_input_override(values, overrides, cls.input_fields, cls.output_fields)
            check_overwrite(cls, path, values, overrides, overwrite=overwrite)
        return validate_settings(cls, merge_settings(values, overrides))

    @model_validator(mode="before")
    @classmethod
    def _weights_table(cls, values: Any) -> Any:
        return weights_table(values)

    @field_validator("qi")
    @classmethod
    def _some_qi(cls, value: dict[str, str]) -> dict[str, str]:
        if not value:
            raise ValueError("name at least one quasi-identifier column and its hierarchy file")
        return value

    @field_validator("suppression", mode="before")
    @classmethod
    def _suppression(cls, value: Any) -> float:
        return parse_suppression(value)

    @field_validator("criteria", mode="before")
    @classmethod
    def _criteria(cls, value: Any) -> Any:
        """Each model checked and spelled out (:func:`anonlab.privacy.spec.normalize_criteria`)."""
        from anonlab.privacy.spec import normalize_criteria

        if value is None:
            return []
        if isinstance(value, str | Mapping):
            value = [value]
        if not isinstance(value, list | tuple):
            raise AnonlabError(f"criteria must be a list of models (got {value!r}): e.g. "
                               '[[criteria]] model = "k-anonymity" k = 5', parameter="criteria")
        return normalize_criteria(value)

    @field_validator("metric")
    @classmethod
    def _metric_name(cls, value: str | None) -> str | None:
        from anonlab.lattice.metrics import METRICS

        if value is not None and value not in METRICS:
            raise AnonlabError(f"metric '{value}' is unknown: choose one of "
                               f"{', '.join(METRICS)}", parameter="metric")
        return value

    @field_validator("targets", mode="before")
    @classmethod
    def _targets(cls, value: Any) -> Any:
        return [] if value is None else _role_names(value)

    @field_validator("gs_factor")
    @classmethod
    def _gs_factor(cls, value: float) -> float:
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ValueError("must lie in [0, 1] (0.5 weighs generalization and suppression "
                             "alike), e.g. 0.5")
        return value

    @field_validator("attribute_weights")
    @classmethod
    def _weights(cls, value: dict[str, float]) -> dict[str, float]:
        bad = [c for c, w in value.items() if not math.isfinite(w) or w < 0]
        if bad:
            raise ValueError(f"the weight of '{bad[0]}' must be a number of at least 0, e.g. 2.0")
        return value

    @model_validator(mode="after")
    def _metric(self) -> GeneralizeSettings:
        """No metric given: the one :func:`default_metric` picks for the suppression limit;
        ``k`` and a k-anonymity criterion are not both given."""
        if self.metric is None:
            self.metric = default_metric(self.suppression)
        self.model_criteria()
        return self

    def model_criteria(self) -> list[dict[str, Any]]:
        """The privacy model in full: ``criteria``, with ``k`` as a k-anonymity criterion
        (:func:`anonlab.privacy.spec.criteria_with_k`)."""
        from anonlab.privacy.spec import criteria_with_k

        return criteria_with_k(self.criteria, self.k)

    @field_validator("identifying", "sensitive", "insensitive", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return _role_names(value)

    @model_validator(mode="after")
    def _bounds_name_qis(self) -> GeneralizeSettings:
        """``min_level`` and ``max_level`` name quasi-identifiers, with levels of at least 0
        (a level above a hierarchy's height is refused once it is read)."""
        for name in ("min_level", "max_level"):
            for column, level in getattr(self, name).items():
                if column not in self.qi:
                    raise AnonlabError(f"{name} names '{column}', which is not a "
                                       f"quasi-identifier (qi: {', '.join(self.qi)})",
                                       parameter=name)
                if level < 0:
                    raise AnonlabError(f"{name} gives '{column}' the level {level}: give a "
                                       "level of at least 0", parameter=name)
        return self


class ApplySettings(TableSettings, EngineSettings, ReleaseRiskSettings):
    """Apply the transformation of an earlier generalize report to another table.

    ``report_in`` is that report; the roles of the columns are the report's,
    so the table (``input``) must have the same columns: a column the report
    does not know is refused unless ``other="insensitive"`` (then released
    as it is, and listed). The release's risk is measured and judged as in
    :class:`GeneralizeSettings`. ``output``, ``report`` and ``html`` are
    written when given.

    ``levels`` (quasi-identifier -> level) releases another transformation
    than the report's optimum: the named levels replace the report's, the
    others stay; ``node`` (N) releases transformation N of the report's
    ``alternatives`` list (not both). Either must lie within the report's
    ``min_level`` and ``max_level``, and gets the same checks as the optimum.

    ``engine``, ``scheduler``, ``workers`` and ``memory_limit`` choose where
    the passes over the rows run, as for :class:`GeneralizeSettings`
    (docs/engine.md): on Dask, or with an ``output`` folder (a path ending in
    ``/``), the engine counts the table and writes the release as
    partitioned Parquet.
    """

    path_fields: ClassVar[tuple[str, ...]] = ("report_in", "input", "sensitive_hierarchies",
                                              "output", "report", "html")

    report_in: str
    other: Literal["insensitive"] | None = None
    levels: dict[str, int] | None = None
    node: int | None = Field(default=None, ge=1)
    output: str | None = None
    output_table: str | None = None
    report: str | None = None
    html: str | None = None
    verify: bool = True

    @model_validator(mode="after")
    def _one_choice(self) -> ApplySettings:
        """``levels`` and ``node`` choose the transformation two ways: give one."""
        if self.levels is not None and self.node is not None:
            raise AnonlabError("levels and node both choose the transformation: give one",
                               parameter="levels")
        return self


def parse_qi_flags(items: Iterable[str]) -> dict[str, str]:
    """Quasi-identifiers from ``COLUMN=HIERARCHY_FILE`` texts (the ``--qi`` flags)."""
    out: dict[str, str] = {}
    for item in items:
        col, sep, path = item.partition("=")
        if not sep or not col or not path:
            raise AnonlabError(
                f"qi '{item}' is not COLUMN=FILE: e.g. age=hierarchy_age.csv", parameter="qi")
        if col in out and out[col] != path:
            raise AnonlabError(
                f"qi names column '{col}' twice ('{out[col]}' and '{path}'): give one hierarchy "
                "per column", parameter="qi")
        out[col] = path
    return out


T = TypeVar("T")


def _column_assignments(items: Iterable[str], parameter: str, parse: Callable[[str], T | None],
                        form: str, unit: str) -> dict[str, T]:
    """``COLUMN=VALUE`` texts as a mapping: ``parse`` turns a value's text into the value
    (``None`` where it is not one); a malformed item or a column named twice is refused with
    one message naming ``parameter``, the expected ``form`` (with an example) and the
    ``unit`` a column takes once."""
    out: dict[str, T] = {}
    for item in items:
        col, sep, text = item.partition("=")
        value = parse(text) if sep else None
        if value is None or not col.strip():
            raise AnonlabError(f"{parameter} '{item}' is not {form}", parameter=parameter)
        if col.strip() in out:
            raise AnonlabError(f"{parameter} names column '{col.strip()}' twice: give one "
                               f"{unit} per column", parameter=parameter)
        out[col.strip()] = value
    return out


def _level(text: str) -> int | None:
    """A whole level of at least 0, or ``None``."""
    return int(text) if text.strip().isdigit() else None


def _finite(text: str) -> float | None:
    """A finite number, or ``None``."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _finite_list(text: str) -> list[float] | None:
    """Comma-separated finite numbers (at least one), or ``None``."""
    values = [_finite(part) for part in text.split(",")]
    return None if None in values else [v for v in values if v is not None]


def parse_level_flags(items: Iterable[str], parameter: str) -> dict[str, int]:
    """Levels from ``COLUMN=LEVEL`` texts (``--min-level``, ``--max-level``; ``--levels``
    takes them comma-separated too: ``age=1,sex=0``)."""
    parts = (part for text in items for part in text.split(","))
    return _column_assignments(parts, parameter, _level,
                               "COLUMN=LEVEL with a whole level of at least 0: e.g. age=2",
                               "level")


def parse_weight_flags(items: Iterable[str]) -> dict[str, float]:
    """Attribute weights from ``COLUMN=NUMBER`` texts (the ``--weight`` flags)."""
    return _column_assignments(items, "attribute_weights", _finite,
                               "COLUMN=NUMBER: e.g. age=2", "weight")


def parse_static_loss_flags(items: Iterable[str]) -> dict[str, list[float]]:
    """Per-level losses of the ``static`` metric from ``COLUMN=V0,V1,...`` texts (the
    ``--static-loss`` flags; one number per level of the column's hierarchy, level 0 first)."""
    return _column_assignments(items, "static_loss", _finite_list,
                               "COLUMN=NUMBER,NUMBER,...: e.g. sex=0,1 (one number per level, "
                               "level 0 first)", "list")


def stale_outputs(config: PathLike, overrides: Mapping[str, Any]) -> list[str]:
    """The outputs a config names for its own input that a new ``input`` would take over.

    Empty when ``overrides`` keeps the config's input (the same file, however
    spelled), or gives every output the config names (output, report, html,
    plot) a value of its own. :meth:`Settings.load` refuses such a new input;
    the command line asks first, to name its flags.
    """
    if overrides.get("input") is None:
        return []
    path = Path(config)
    values = resolve_paths(read_toml(path), path.parent, ("input",))
    return outputs_taken_over(values, overrides, ("input",), GENERALIZE_OUTPUTS)[1]


# ---------------------------------------------------------------------------
# Shared steps
# ---------------------------------------------------------------------------


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


def _verify(
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
    which share no code with the search).
    """
    from anonlab.verify import generalization as checker
    from anonlab.verify.criteria import check_criteria

    qis = list(levels)
    problems = checker.check_level_bounds(levels, model.min_levels, model.max_levels)
    problems += checker.check_generalization(original, release, hierarchies, levels,
                                              list(dropped), max_suppressed=model.limit)
    problems += check_criteria(original, release, model.criteria, qis, model.limit,
                               expected_star=checker.expected_stars(original, hierarchies,
                                                                    levels),
                               population=model.population, hierarchies=hierarchies,
                               levels=levels)
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def _population_table(criteria: Iterable[Any], frame: pd.DataFrame,
                      read_options: Mapping[str, Any]) -> pd.DataFrame | None:
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


def _criteria_files(specs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
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
        out["static_loss"] = {str(c): [float(v) for v in values]
                              for c, values in dict(params["static_loss"]).items()}
    return out


def _check_weights(settings: GeneralizeSettings) -> None:
    """Attribute weights name quasi-identifiers."""
    unknown = [c for c in settings.attribute_weights if c not in settings.qi]
    if unknown:
        raise AnonlabError(f"attribute_weights names '{unknown[0]}', which is not a "
                           f"quasi-identifier (qi: {', '.join(settings.qi)})",
                           parameter="attribute_weights")


def _file_or_none(source: str) -> str | None:
    """The source as an input file to describe, ``None`` for a database URL."""
    return None if "://" in source else source


def _store(value: str | None, report: Path | None) -> str | None:
    return stored_path(value, report)  # a URL's password masked there


def _report_path(report: str | None) -> Path | None:
    return None if report is None else Path(report)


# ---------------------------------------------------------------------------
# generalize
# ---------------------------------------------------------------------------


def search_dataset(dataset: Dataset, settings: GeneralizeSettings,
                   criteria: Sequence[Criterion], progress: ProgressFn | None
                   ) -> tuple[GeneralizationResult, list[str]]:
    """The search the settings ask for on ``dataset`` (rows here or in an engine), and the
    identifying columns the release drops; the risk section's columns are checked first."""
    from anonlab.dataset import Role
    from anonlab.generalize import anonymize
    from anonlab.risk.release import check_risk_columns

    dropped = dataset.columns_with(Role.IDENTIFYING)
    check_risk_columns([c for c in dataset.frame.columns if c not in dropped],
                       settings.sensitive, settings, list(settings.qi))
    result = anonymize(dataset, None, settings.suppression, settings.search,
                       str(settings.metric), progress=progress, criteria=criteria,
                       gs_factor=settings.gs_factor, aggregate=settings.aggregate,
                       weights=settings.attribute_weights, targets=settings.targets,
                       static_loss=settings.static_loss,
                       practical_monotonicity=settings.practical_monotonicity,
                       min_levels=settings.min_level, max_levels=settings.max_level,
                       alternatives=settings.alternatives, time_limit=settings.time_limit,
                       step_limit=settings.step_limit,
                       heuristic_threshold=settings.heuristic_threshold,
                       genetic=settings.genetic)
    return result, dropped


def run_generalize(
    settings: GeneralizeSettings, *, progress: ProgressFn | None = None
) -> RunResult:
    """Generalize a table under its privacy model with an optimal lattice search, and write it.

    Steps: check every output path; build the privacy model's criteria
    (:meth:`GeneralizeSettings.model_criteria`); load the hierarchies and the
    table; give every column its role (a column without one is refused, see
    :func:`anonlab.dataset.assign_roles`); with delta-presence or inclusion the
    table is the population and the research subset is what is released; search
    (``progress("searching the lattice", checked, lattice_size)``); stage the
    release and verify it (``settings.verify``) by re-reading it; measure the
    risk of the release as written
    (:func:`anonlab.risk.release.release_risk_report`: each risk issues a
    :class:`~anonlab.errors.ReleaseRiskWarning`, or with ``fail_on_risk`` a
    :class:`~anonlab.errors.ReleaseRiskError`); stage the JSON report, HTML
    page and plot; rename them all into place. Any error leaves no output
    behind. Returns the report, the release and the files written.
    """
    from anonlab.dataset import without_role
    from anonlab.generalize import model_dataset, resolve_criteria
    from anonlab.privacy import check_k, check_suppression, max_suppressed
    from anonlab.risk.release import release_risk_report

    started = time.perf_counter()
    specs = settings.model_criteria()
    files = _criteria_files(specs)
    targets = {name: getattr(settings, name) for name in GENERALIZE_OUTPUTS}
    targets["output"] = output_target(settings.output, settings.output_table)
    on_engine = uses_engine(settings)
    outputs = Outputs(targets,
                      inputs=[settings.input, *settings.qi.values(),
                              *settings.sensitive_hierarchies.values(), *files.values()],
                      input_tables=input_tables(settings.input, settings.table),
                      folders=("output",) if on_engine else ())
    if settings.k is not None:
        check_k(settings.k)
    check_suppression(settings.suppression)
    _check_weights(settings)
    criteria = resolve_criteria(specs)
    if on_engine:
        from anonlab.runs.generalize_engine import run_on_engine

        return run_on_engine(settings, criteria, outputs, progress=progress, started=started)
    read_options = {"delimiter": settings.delimiter} if settings.delimiter else {}
    with outputs:
        hierarchies = load_hierarchies(settings.qi)
        frame = read_input(settings, categorical=True)
        return_free_memory()
        dataset = model_dataset(
            frame, hierarchies, criteria, identifying=settings.identifying,
            sensitive=settings.sensitive, insensitive=settings.insensitive,
            other=settings.other, source=masked(settings.input), read_options=read_options,
        )
        result, dropped = search_dataset(dataset, settings, criteria, progress)
        original, roles, records = dataset.frame, dataset.roles, dataset.n
        del dataset  # the search's codes of the rows are not needed again: freed here
        return_free_memory()
        model = ModelCheck(specs, max_suppressed(settings.suppression, records),
                           _population_table(criteria, frame, read_options),
                           settings.min_level, settings.max_level)

        def check(release: pd.DataFrame) -> None:
            _verify(original, release, hierarchies, result.transformation, dropped, model)

        assert result.release is not None  # the numpy path builds it in memory
        as_written = stage_release(outputs, result.release,
                                   check if settings.verify else None, categorical=True)
        return_free_memory()
        verified = settings.verify
        risk = release_risk_report(as_written, settings.sensitive, settings,
                                   qi=list(settings.qi))
        by_other = without_role(original.columns, settings.qi, settings.identifying,
                                settings.sensitive, settings.insensitive)
        report = generalize_report(settings, result, roles, verified)
        report.update(roles_report(roles, settings.other, by_other))
        report["distinct_values"] = distinct_values(original, result.release,
                                                    result.transformation)
        report.update(risk)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        stage_plot(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=result.release, written=written)


def return_free_memory() -> None:
    """Give the memory freed by a finished step back to the system.

    The search's frequency sets and the reader's blocks are freed when a step
    ends, but the C allocator (glibc's heap) and Arrow's pool keep such memory
    for reuse, so the process would stay at the step's peak for the rest of the
    run (Adult x33: about 130 MiB after the search). ``malloc_trim`` returns
    glibc's free pages (where the C library has it); Arrow's pool returns its own.
    """
    import ctypes
    import ctypes.util

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


def is_folder_output(output: str | None) -> bool:
    """Whether a release output names a folder of Parquet parts: a path ending in ``/``, or
    an existing folder holding an earlier such release (Parquet parts and nothing else).
    Any other existing folder stays refused as an output, as before."""
    if output is None:
        return False
    if output.endswith(("/", os.sep)):
        return True
    if not Path(output).is_dir():  # the common case: no need to load the engine package
        return False
    from anonlab.staging import holds_release

    return holds_release(Path(output))


def uses_engine(settings: GeneralizeSettings | ApplySettings) -> bool:
    """Whether a generalize or apply run goes through an engine
    (:mod:`anonlab.runs.generalize_engine`): on Dask, or with a folder output."""
    return settings.engine != "numpy" or is_folder_output(settings.output)


def roles_report(
    roles: Mapping[str, Role], other: str | None, by_other: Iterable[str]
) -> dict[str, Any]:
    """The role keys of a report (:func:`anonlab.dataset.roles_report`)."""
    from anonlab.dataset import roles_report as keys

    return keys(roles, other, by_other)


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
        [(release[c] == SUPPRESSED).to_numpy(dtype=bool, na_value=False) for c in qis])
    kept = ~suppressed if not suppressed.all() else np.ones(len(release), dtype=bool)
    out: dict[str, dict[str, int]] = {}
    for column in qis:
        out[column] = {"original": len(pd.unique(as_text(original[column]))),
                       "released": _distinct_kept(release[column], kept)}
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


def _stored_criteria(entries: Iterable[Mapping[str, Any]], where: Path | None,
                     nested: bool) -> list[dict[str, Any]]:
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
        for key, param in (model.params.items() if model else ()):
            value = params.get(key)
            if param.path and isinstance(value, str):
                params[key] = _store(value, where)
        out.append(item)
    return out


def generalize_report(
    settings: GeneralizeSettings,
    result: GeneralizationResult,
    roles: Mapping[str, Role],
    verified: bool,
) -> dict[str, Any]:
    """The JSON report of a generalize run (see docs/generalization.md for each key)."""
    from anonlab.report import report_header

    where = _report_path(settings.report)
    params = settings.model_dump()
    for name in ("input", *GENERALIZE_OUTPUTS):
        params[name] = _store(params[name], where)
    params["qi"] = {c: _store(p, where) for c, p in settings.qi.items()}
    params["sensitive_hierarchies"] = {c: _store(p, where)
                                       for c, p in settings.sensitive_hierarchies.items()}
    params["criteria"] = _stored_criteria(settings.criteria, where, nested=False)
    inputs: dict[str, PathLike | None] = {
        "data": _file_or_none(settings.input),
        **{f"hierarchy:{c}": p for c, p in settings.qi.items()},
        **{f"hierarchy:{c}": p for c, p in settings.sensitive_hierarchies.items()},
        **_criteria_files(settings.model_criteria())}
    report = report_header("generalize", risk_last(params), inputs)
    report["paths"] = paths_convention(where)
    report.update(result.summary())
    report["criteria"] = _stored_criteria(result.criteria, where, nested=True)
    report["roles"] = {c: r.value for c, r in roles.items()}
    report["verified"] = verified
    return report


# ---------------------------------------------------------------------------
# apply
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FoundTransformation:
    """What ``apply`` takes from an earlier generalize report."""

    transformation: dict[str, int]
    hierarchies: dict[str, Path]  # quasi-identifier -> hierarchy file, usable from here
    sha256: dict[str, str | None]  # quasi-identifier -> the hierarchy's digest then
    k: int | None  # the k-anonymity criterion's k, None without one
    suppression: float
    identifying: list[str]
    sensitive: list[str]
    roles: dict[str, str] = field(default_factory=dict)  # column -> role, as the report gave
    #: the privacy model as settings dicts, file parameters usable from here
    criteria: list[dict[str, Any]] = field(default_factory=list)
    #: the metric and its options (they order the classes a risk threshold suppresses)
    metric: dict[str, Any] = field(default_factory=dict)
    #: the run's level bounds (quasi-identifier -> level; empty: none)
    min_levels: dict[str, int] = field(default_factory=dict)
    max_levels: dict[str, int] = field(default_factory=dict)
    #: the report's list of best transformations (``alternatives``), each with its levels
    alternatives: list[dict[str, Any]] = field(default_factory=list)


def _found_roles(old: Mapping[str, Any], params: Mapping[str, Any],
                 report_in: Path) -> dict[str, str]:
    """The role of every column the earlier report names.

    A report records ``roles``; one of an earlier version did not, and then
    the columns its parameters name (qi, identifying, sensitive,
    insensitive) are the ones it knows.
    """
    from anonlab.dataset import Role

    stored = old.get("roles")
    if isinstance(stored, Mapping):
        roles = {str(c): str(r) for c, r in stored.items()}
    else:
        roles = {str(c): Role.QUASI.value for c in dict(params["qi"])}
        for role in (Role.IDENTIFYING, Role.SENSITIVE, Role.INSENSITIVE):
            roles.update({str(c): role.value for c in params.get(role.value) or []})
    known = {r.value for r in Role}
    odd = [c for c, r in roles.items() if r not in known]
    if odd:
        raise AnonlabError(f"report '{report_in}' gives column '{odd[0]}' the unknown role "
                           f"'{roles[odd[0]]}': give a report written by anonlab generalize",
                           parameter="report_in")
    return roles


def _found_criteria(old: Mapping[str, Any], params: Mapping[str, Any], report_in: Path,
                    paths: Any) -> list[dict[str, Any]]:
    """The privacy model of an earlier report, as settings dicts with usable file paths.

    A report lists its ``criteria`` (each ``{"model", "parameters", ...}``);
    one of an earlier version had k-anonymity only, with ``k`` among its
    parameters.
    """
    from anonlab.privacy.spec import normalize_criterion, path_parameters

    entries = old.get("criteria")
    if not isinstance(entries, list):
        return [normalize_criterion({"model": "k-anonymity", "k": int(params["k"])})]
    specs = []
    for entry in entries:
        spec = normalize_criterion({"model": entry["model"], **dict(entry["parameters"])})
        for key, path in path_parameters(spec).items():
            found = resolve_stored_path(path, report_in, paths)
            if not found.exists():
                raise AnonlabError(f"file '{path}' of model '{spec['model']}', named in report "
                                   f"'{report_in}', is not at '{found}': put the files where "
                                   "the report says", parameter="report_in")
            spec[key] = str(found)
        specs.append(spec)
    return specs


def read_found_transformation(report_in: Path) -> FoundTransformation:
    """The transformation, hierarchies and privacy model of an earlier generalize report.

    Hierarchy paths (and the files the criteria name) are resolved as the
    report stored them (relative to its folder, or absolute), so the report
    works from any folder.
    """
    from anonlab.io import read_json

    old = read_json(report_in)
    try:
        params = old["parameters"]
        transformation = {str(c): int(v) for c, v in old["transformation"].items()}
        stored = {str(c): str(p) for c, p in dict(params["qi"]).items()}
        suppression = float(params["suppression"])
        inputs = old.get("inputs") or {}
        paths = old.get("paths")
        criteria = _found_criteria(old, params, report_in, paths)
        metric = {"metric": str(old.get("metric") or params.get("metric") or "precision"),
                  "gs_factor": float(params.get("gs_factor", DEFAULT_GS_FACTOR)),
                  "aggregate": params.get("aggregate"),
                  "weights": {str(c): float(w)
                              for c, w in dict(params.get("attribute_weights") or {}).items()},
                  "practical_monotonicity": bool(params.get("practical_monotonicity", False)),
                  **found_metric_parameters(params)}
        bounds = {name: {str(c): int(v) for c, v in dict(params.get(name) or {}).items()}
                  for name in ("min_level", "max_level")}
        alternatives = [{"node": int(a["node"]),
                         "levels": {str(c): int(v) for c, v in dict(a["levels"]).items()}}
                        for a in old.get("alternatives") or []]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AnonlabError(
            f"'{report_in}' is not a generalize report (missing {exc}): give the JSON report "
            "of a generalize run", parameter="report_in") from None
    hierarchies: dict[str, Path] = {}
    for column, path in stored.items():
        found = resolve_stored_path(path, report_in, paths)
        if not found.is_file():
            raise AnonlabError(
                f"hierarchy '{path}' of '{column}', named in report '{report_in}', is not at "
                f"'{found}': put the hierarchy files where the report says")
        hierarchies[column] = found
    digests = {c: (inputs.get(f"hierarchy:{c}") or {}).get("sha256") for c in stored}
    k_models = [int(c["k"]) for c in criteria if c["model"] == "k-anonymity"]
    return FoundTransformation(
        transformation=transformation, hierarchies=hierarchies, sha256=digests,
        k=k_models[0] if k_models else None,
        suppression=suppression, identifying=list(params.get("identifying") or []),
        sensitive=list(params.get("sensitive") or []),
        roles=_found_roles(old, params, report_in), criteria=criteria, metric=metric,
        min_levels=bounds["min_level"], max_levels=bounds["max_level"],
        alternatives=alternatives,
    )


def choose_transformation(settings: ApplySettings, found: FoundTransformation
                          ) -> FoundTransformation:
    """The transformation an apply run releases: the report's, or the one ``levels`` or
    ``node`` chooses (:class:`ApplySettings`), checked against the report's quasi-identifiers
    and level bounds."""
    import dataclasses

    from anonlab.generalize import check_within_bounds

    chosen = dict(found.transformation)
    if settings.node is not None:
        listed = {a["node"]: a["levels"] for a in found.alternatives}
        if settings.node not in listed:
            numbers = (f"it lists 1 to {max(listed)}" if listed else
                       "it lists none: run generalize with alternatives")
            raise AnonlabError(f"node {settings.node} is not in the alternatives of report "
                               f"'{settings.report_in}' ({numbers})", parameter="node")
        chosen = dict(listed[settings.node])
    for column, level in (settings.levels or {}).items():
        if column not in chosen:
            raise AnonlabError(f"levels names '{column}', which is not a quasi-identifier of "
                               f"report '{settings.report_in}' (quasi-identifiers: "
                               f"{', '.join(chosen)})", parameter="levels")
        chosen[column] = level
    check_within_bounds(chosen, found.min_levels, found.max_levels)
    return dataclasses.replace(found, transformation=chosen)



def apply_roles(
    columns: Iterable[str], found: FoundTransformation, other: str | None, report_in: Path
) -> tuple[dict[str, Role], list[str]]:
    """The role of each column of the new table: the earlier report's (apply's one rule).

    The table must hold every column the report gives a role to; a column
    the report does not know is refused (:class:`~anonlab.dataset.RoleError`)
    unless ``other="insensitive"`` releases it as it is. Returns the roles in
    table order and the columns that are insensitive because of ``other``.
    """
    from anonlab.dataset import Role, RoleError

    table = [str(c) for c in columns]
    lacking = [c for c in found.roles if c not in table]
    if lacking:
        raise AnonlabError(
            f"input lacks column{'s' if len(lacking) > 1 else ''} {', '.join(lacking)}, "
            f"which report '{report_in}' gives a role: apply takes a table with the columns "
            "of the generalized one", parameter="input")
    new = [c for c in table if c not in found.roles]
    if new and other is None:
        raise RoleError(new, (), source=f"report '{report_in}'")
    roles = {c: Role(found.roles[c]) if c in found.roles else Role.INSENSITIVE for c in table}
    return roles, new


def load_unchanged(found: FoundTransformation) -> dict[str, Hierarchy]:
    """The report's hierarchies, refused when a file changed since the report was made."""
    from anonlab.io import file_sha256

    for column, path in found.hierarchies.items():
        expected = found.sha256.get(column)
        if expected and file_sha256(path) != expected:
            raise AnonlabError(f"hierarchy '{path}' of '{column}' changed since the report was "
                               "made: use the same hierarchy file")
    return load_hierarchies(found.hierarchies)


def run_apply(settings: ApplySettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Apply the transformation of an earlier generalize report to another table.

    The columns keep the roles the report gave them (:func:`apply_roles`).
    Every privacy model of the report, with its suppression limit, is
    re-checked on the new table (refused when it does not hold: more records
    would need suppressing, or a population class fails delta-presence); the
    release is verified like a generalize release, its risk measured and
    judged as in :func:`run_generalize`, and release, report and HTML page
    are written together. On an engine (:func:`uses_engine`) the table is
    counted and the release written there
    (:func:`anonlab.runs.generalize_engine.apply_on_engine`); ``progress`` is
    then called as the engine's passes go (``progress(step, done, total)``).
    """
    from anonlab.dataset import Role
    from anonlab.generalize import apply_levels, resolve_criteria
    from anonlab.privacy import max_suppressed
    from anonlab.risk.release import check_risk_columns, release_risk_report

    started = time.perf_counter()
    report_in = Path(settings.report_in)
    found = choose_transformation(settings, read_found_transformation(report_in))
    on_engine = uses_engine(settings)
    outputs = Outputs({"output": output_target(settings.output, settings.output_table),
                       "report": settings.report, "html": settings.html},
                      inputs=[settings.input, report_in, *found.hierarchies.values(),
                              *settings.sensitive_hierarchies.values(),
                              *_criteria_files(found.criteria).values()],
                      input_tables=input_tables(settings.input, settings.table),
                      folders=("output",) if on_engine else ())
    if on_engine:
        from anonlab.runs.generalize_engine import apply_on_engine

        return apply_on_engine(settings, found, outputs, progress=progress, started=started)
    read_options = {"delimiter": settings.delimiter} if settings.delimiter else {}
    with outputs:
        hierarchies = load_unchanged(found)
        frame = read_input(settings)
        roles, by_other = apply_roles(frame.columns, found, settings.other, report_in)
        named = {role: [c for c, r in roles.items() if r == role] for role in Role}
        check_risk_columns([c for c, r in roles.items() if r != Role.IDENTIFYING],
                           named[Role.SENSITIVE], settings, named[Role.QUASI])
        criteria = resolve_criteria(found.criteria)
        options = dict(found.metric)
        applied = apply_levels(
            frame, hierarchies, found.transformation, criteria, found.suppression,
            identifying=named[Role.IDENTIFYING], sensitive=named[Role.SENSITIVE],
            insensitive=named[Role.INSENSITIVE], metric=str(options.pop("metric")),
            read_options=read_options, min_levels=found.min_levels,
            max_levels=found.max_levels, **options,
        )
        release, original = applied.release, applied.dataset.frame
        assert release is not None  # no engine: built in memory
        model = ModelCheck(found.criteria, max_suppressed(found.suppression, len(original)),
                           _population_table(criteria, frame, read_options),
                           found.min_levels, found.max_levels)

        def check(written: pd.DataFrame) -> None:
            _verify(original, written, hierarchies, found.transformation,
                    named[Role.IDENTIFYING], model)

        as_written = stage_release(outputs, release, check if settings.verify else None,
                                   categorical=True)
        risk = release_risk_report(as_written, named[Role.SENSITIVE], settings,
                                   qi=named[Role.QUASI])
        report = finish_apply_report(
            settings, found, applied, roles, by_other,
            distinct_values(original, release, found.transformation), risk,
            int(release.shape[0]), started)
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=release, written=written)


def finish_apply_report(
    settings: ApplySettings,
    found: FoundTransformation,
    applied: AppliedTransformation,
    roles: Mapping[str, Role],
    by_other: Iterable[str],
    distinct: Mapping[str, Mapping[str, int]],
    risk: Mapping[str, Any],
    records: int,
    started: float,
) -> dict[str, Any]:
    """The whole report of an apply run, in memory or on an engine: :func:`apply_report`,
    the criteria as they hold on the new table, the roles, the distinct values per
    quasi-identifier, the risk keys and the run time since ``started``."""
    report = apply_report(settings, found, applied.suppressed_records, records,
                          settings.verify)
    report["criteria"] = _stored_criteria(applied.criteria, _report_path(settings.report),
                                          nested=True)
    report.update(roles_report(roles, settings.other, by_other))
    report["distinct_values"] = {c: dict(v) for c, v in distinct.items()}
    report.update(risk)
    report["runtime_seconds"] = time.perf_counter() - started
    return report


def apply_report(
    settings: ApplySettings,
    found: FoundTransformation,
    suppressed: int,
    records: int,
    verified: bool,
) -> dict[str, Any]:
    """The JSON report of an apply run."""
    from anonlab.report import report_header

    where = _report_path(settings.report)
    params: dict[str, Any] = {"from_report": _store(settings.report_in, where)}
    dumped = settings.model_dump(exclude={"report_in"})
    for name in ("input", "output", "report", "html"):
        dumped[name] = _store(dumped[name], where)
    dumped["sensitive_hierarchies"] = {c: _store(p, where)
                                       for c, p in settings.sensitive_hierarchies.items()}
    params.update(dumped)
    params.update({"k": found.k, "suppression": found.suppression,
                   "qi": {c: _store(str(p), where) for c, p in found.hierarchies.items()},
                   "identifying": found.identifying, "sensitive": found.sensitive,
                   "criteria": _stored_criteria(found.criteria, where, nested=False),
                   **{k: v for k, v in found.metric.items() if k != "weights"},
                   "attribute_weights": found.metric.get("weights", {}),
                   "min_level": found.min_levels, "max_level": found.max_levels})
    inputs: dict[str, PathLike | None] = {
        "data": _file_or_none(settings.input), "from_report": settings.report_in,
        **{f"hierarchy:{c}": p for c, p in found.hierarchies.items()},
        **{f"hierarchy:{c}": p for c, p in settings.sensitive_hierarchies.items()},
        **_criteria_files(found.criteria)}
    report = report_header("apply", risk_last(params), inputs)
    report["paths"] = paths_convention(where)
    report.update({"transformation": found.transformation, "k": found.k,
                   "suppression_limit": found.suppression, "suppressed_records": suppressed,
                   "records": records, "verified": verified})
    return report
