"""The generalization family's settings: the ``generalize`` and ``apply`` models, their flag
parsers and the check for outputs a changed setting would leave stale."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from anonlab.errors import AnonlabError
from anonlab.paths import PathLike
from anonlab.risk.release import ReleaseRiskSettings
from anonlab.runs.common import (
    EngineSettings,
    ReadSettings,
    roles_of,
)
from anonlab.settings import outputs_taken_over, read_toml, resolve_paths, split_names

if TYPE_CHECKING:
    from anonlab.dataset import Roles

SearchName = Literal[
    "exhaustive", "ola", "degree", "flash", "lightning", "top-down", "genetic", "descent", "auto"
]
AggregateName = Literal["arithmetic_mean", "geometric_mean", "sum", "max", "rank"]
#: how a release recodes its quasi-identifiers: one level per column for every record
#: (full-domain generalization), Mondrian's multidimensional partitions (docs/mondrian.md) or
#: ARX's local recoding (full-domain searches repeated on the records still suppressed,
#: docs/generalization.md "Local recoding")
RecodingName = Literal["full-domain", "mondrian", "local"]
#: the settings a full-domain run leaves out of its report when at their defaults, so that
#: its report stays as it was before recoding was a choice
RECODING_FIELDS = (
    "recoding",
    "relaxed",
    "numeric",
    "local_gs_factor",
    "local_iterations",
    "local_adaption",
)
#: ARX's defaults of local recoding (its GUI's, ``ARXResult.optimizeIterative``'s arguments):
#: the generalization/suppression factor of each search, the most searches and the step the
#: factor is raised by when a search releases no record
LOCAL_GS_FACTOR = 0.05
LOCAL_ITERATIONS = 100
LOCAL_ADAPTION = 0.05

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
        raise AnonlabError(
            f"suppression {value!r} is not a fraction or a percentage: write 0.01 or 1%",
            parameter="suppression",
        ) from None
    fraction = number / 100.0 if percent else number
    if not math.isfinite(fraction) or not 0.0 <= fraction <= 1.0:
        raise AnonlabError(
            f"suppression must be a fraction from 0 to 1 or a percentage up to "
            f"100% (got {str(value).strip()}): write 0.01 or 1%",
            parameter="suppression",
        )
    if fraction == 1.0 and not percent and not isinstance(text, float):
        raise AnonlabError(
            f"suppression {str(value).strip()} is ambiguous (1% or 100%?): "
            "write 0.01 or 1% for one percent, or 100% to let every record be "
            "suppressed",
            parameter="suppression",
        )
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
    if isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    ):
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
            raise AnonlabError(
                "weights (a table) and attribute_weights are both given: "
                "give the attribute weights once",
                parameter="weights",
            )
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

    ``recoding`` chooses the transformation: ``"full-domain"`` (the default, the lattice
    search above) or ``"mondrian"`` (LeFevre, DeWitt and Ramakrishnan's multidimensional
    partitioning, docs/mondrian.md; ``relaxed`` for its relaxed cuts). With Mondrian a
    quasi-identifier may have no hierarchy (``qi = {age = ""}``, ``--qi age``) and is then
    cut and released as a numeric range; ``numeric`` names quasi-identifiers (with or
    without a hierarchy, in ``qi`` or not) to treat so. ``"local"`` is ARX's local recoding
    (docs/generalization.md, "Local recoding"): the full-domain optimum, then the search again
    on the records still suppressed, each search with the loss metric's generalization/
    suppression factor ``local_gs_factor`` (raised by ``local_adaption`` whenever a search
    releases no record), at most ``local_iterations`` searches.

    ``aggregate_qi`` (quasi-identifier -> ``mean``, ``geometric``, ``median``, ``mode`` or
    ``interval``; a TOML table ``aggregate_qi = {age = "mean"}``) releases that column, in
    every class of the release, as the aggregate of the class's original values instead of
    its label (ARX's microaggregation of a clustered quasi-identifier; docs/generalization.md,
    "Aggregated quasi-identifiers"), with any recoding, in memory; with full-domain
    generalization such a column may have no hierarchy file (``qi = {age = ""}``): it is then
    not generalized, and aggregated in the classes of the other quasi-identifiers (ARX's
    microaggregation without clustering). ``aggregate_missing`` ``"zero"`` counts a missing
    value as 0 in a mean (ARX's ``ignoreMissingData = false``).

    ``engine`` chooses where the passes over the rows run (docs/engine.md):
    ``"numpy"`` (the default) in this process, ``"dask"`` on a Dask cluster,
    joined at ``scheduler`` (``tcp://host:port``) or started locally with
    ``workers`` processes of ``memory_limit`` each (``"4GB"``). An
    ``output`` that is a folder (an existing one, or a path ending in ``/``)
    receives the release as partitioned Parquet written by the engine, the
    rows never held here; with ``engine = "dask"`` it must be one.
    """

    path_fields: ClassVar[tuple[str, ...]] = (
        "input",
        "qi",
        "sensitive_hierarchies",
        *GENERALIZE_OUTPUTS,
    )
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
    recoding: RecodingName = "full-domain"
    relaxed: bool = False
    numeric: list[str] = Field(default_factory=list)
    local_gs_factor: float = Field(default=LOCAL_GS_FACTOR, ge=0.0, le=1.0)
    local_iterations: int = Field(default=LOCAL_ITERATIONS, gt=0)
    local_adaption: float = Field(default=LOCAL_ADAPTION, ge=0.0, le=1.0)
    aggregate_qi: dict[str, str] = Field(default_factory=dict)
    aggregate_missing: Literal["ignore", "zero"] = "ignore"

    @classmethod
    def load(
        cls, config: PathLike | None = None, /, *, overwrite: bool = False, **overrides: Any
    ) -> GeneralizeSettings:
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
            values = weights_table(resolve_paths(read_toml(path), path.parent, cls.path_fields))
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
            raise AnonlabError(
                f"criteria must be a list of models (got {value!r}): e.g. "
                '[[criteria]] model = "k-anonymity" k = 5',
                parameter="criteria",
            )
        return normalize_criteria(value)

    @field_validator("metric")
    @classmethod
    def _metric_name(cls, value: str | None) -> str | None:
        from anonlab.lattice.metrics import METRICS

        if value is not None and value not in METRICS:
            raise AnonlabError(
                f"metric '{value}' is unknown: choose one of {', '.join(METRICS)}",
                parameter="metric",
            )
        return value

    @field_validator("targets", mode="before")
    @classmethod
    def _targets(cls, value: Any) -> Any:
        return [] if value is None else _role_names(value)

    @field_validator("gs_factor")
    @classmethod
    def _gs_factor(cls, value: float) -> float:
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ValueError(
                "must lie in [0, 1] (0.5 weighs generalization and suppression alike), e.g. 0.5"
            )
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

    @property
    def roles(self) -> Roles:
        """The four role settings as one :class:`~anonlab.dataset.Roles`."""
        return roles_of(self)

    def model_criteria(self) -> list[dict[str, Any]]:
        """The privacy model in full: ``criteria``, with ``k`` as a k-anonymity criterion
        (:func:`anonlab.privacy.spec.criteria_with_k`)."""
        from anonlab.privacy.spec import criteria_with_k

        return criteria_with_k(self.criteria, self.k)

    @field_validator("identifying", "sensitive", "insensitive", "numeric", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return _role_names(value)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The settings as a dict; a full-domain run's leaves out ``recoding``, ``relaxed``
        and ``numeric`` while they keep their defaults, as its reports had them before."""
        out: dict[str, Any] = handler(self)
        if self.recoding == "full-domain" and not self.relaxed and not self.numeric:
            for name in RECODING_FIELDS:
                out.pop(name, None)
        elif self.recoding != "local":
            for name in RECODING_FIELDS[3:]:
                out.pop(name, None)
        if not self.aggregate_qi and self.aggregate_missing == "ignore":
            out.pop("aggregate_qi", None)
            out.pop("aggregate_missing", None)
        return out

    @model_validator(mode="after")
    def _aggregate_names_qis(self) -> GeneralizeSettings:
        """``aggregate_qi`` names quasi-identifiers, each with a function of
        :data:`anonlab.generalize_aggregate.AGGREGATE_FUNCTIONS`."""
        from anonlab.generalize_aggregate import check_aggregate_qi

        check_aggregate_qi(self.aggregate_qi, self.qi, self.aggregate_missing)
        return self

    @model_validator(mode="after")
    def _recoding_inputs(self) -> GeneralizeSettings:
        """A quasi-identifier without a hierarchy file, ``numeric`` and ``relaxed`` belong to
        Mondrian (``recoding = "mondrian"``): full-domain generalization needs a hierarchy
        for every quasi-identifier. ``local_gs_factor``, ``local_iterations`` and
        ``local_adaption`` belong to local recoding (``recoding = "local"``)."""
        for name, default in (
            ("local_gs_factor", LOCAL_GS_FACTOR),
            ("local_iterations", LOCAL_ITERATIONS),
            ("local_adaption", LOCAL_ADAPTION),
        ):
            if self.recoding != "local" and getattr(self, name) != default:
                raise AnonlabError(
                    f"{name} is a setting of local recoding: choose recoding local, or leave "
                    f"{name} out",
                    parameter=name,
                )
        if self.recoding == "mondrian":
            return self
        bare = [c for c, p in self.qi.items() if not p]
        if self.recoding == "full-domain":  # aggregated without a hierarchy: not generalized
            bare = [c for c in bare if c not in self.aggregate_qi]
        if bare:
            raise AnonlabError(
                f"qi '{bare[0]}' has no hierarchy file: full-domain generalization needs one "
                "(e.g. age=hierarchy_age.csv), or choose recoding mondrian to cut it as a "
                "numeric range, or aggregate it in the other quasi-identifiers' classes "
                f"(aggregate_qi {bare[0]}=mean)",
                parameter="qi",
            )
        for name in ("numeric", "relaxed"):
            if getattr(self, name):
                raise AnonlabError(
                    f"{name} is a setting of Mondrian: choose recoding mondrian, or leave "
                    f"{name} out",
                    parameter=name,
                )
        return self

    @model_validator(mode="after")
    def _bounds_name_qis(self) -> GeneralizeSettings:
        """``min_level`` and ``max_level`` name quasi-identifiers, with levels of at least 0
        (a level above a hierarchy's height is refused once it is read)."""
        for name in ("min_level", "max_level"):
            for column, level in getattr(self, name).items():
                if column not in self.qi:
                    raise AnonlabError(
                        f"{name} names '{column}', which is not a "
                        f"quasi-identifier (qi: {', '.join(self.qi)})",
                        parameter=name,
                    )
                if level < 0:
                    raise AnonlabError(
                        f"{name} gives '{column}' the level {level}: give a level of at least 0",
                        parameter=name,
                    )
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

    path_fields: ClassVar[tuple[str, ...]] = (
        "report_in",
        "input",
        "sensitive_hierarchies",
        "output",
        "report",
        "html",
    )

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
            raise AnonlabError(
                "levels and node both choose the transformation: give one", parameter="levels"
            )
        return self


def parse_qi_flags(items: Iterable[str], *, bare: bool = False) -> dict[str, str]:
    """Quasi-identifiers from ``COLUMN=HIERARCHY_FILE`` texts (the ``--qi`` flags); with
    ``bare`` (Mondrian) a ``COLUMN`` alone is a quasi-identifier without a hierarchy (its
    file ``""``)."""
    out: dict[str, str] = {}
    for item in items:
        col, sep, path = item.partition("=")
        if bare and not sep and col.strip():
            col, sep, path = col.strip(), "=", ""
            if out.get(col):
                raise AnonlabError(
                    f"qi names column '{col}' twice ('{out[col]}' and no hierarchy): give it once",
                    parameter="qi",
                )
            out[col] = ""
            continue
        if not sep or not col or not path:
            raise AnonlabError(
                f"qi '{item}' is not COLUMN=FILE: e.g. age=hierarchy_age.csv", parameter="qi"
            )
        if col in out and out[col] != path:
            raise AnonlabError(
                f"qi names column '{col}' twice ('{out[col]}' and '{path}'): give one hierarchy "
                "per column",
                parameter="qi",
            )
        out[col] = path
    return out


T = TypeVar("T")


def _column_assignments(
    items: Iterable[str], parameter: str, parse: Callable[[str], T | None], form: str, unit: str
) -> dict[str, T]:
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
            raise AnonlabError(
                f"{parameter} names column '{col.strip()}' twice: give one {unit} per column",
                parameter=parameter,
            )
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
    return _column_assignments(
        parts,
        parameter,
        _level,
        "COLUMN=LEVEL with a whole level of at least 0: e.g. age=2",
        "level",
    )


def parse_aggregate_flags(items: Iterable[str]) -> dict[str, str]:
    """Aggregate functions from ``COLUMN=FUNCTION`` texts (the ``--aggregate-qi`` flags, also
    comma-separated: ``age=mean,hours=median``); the function names are checked by the
    settings."""
    parts = (part for text in items for part in text.split(","))
    return _column_assignments(
        parts,
        "aggregate_qi",
        lambda text: text.strip() or None,
        "COLUMN=FUNCTION (mean, geometric, median, mode or interval): e.g. age=mean",
        "function",
    )


def parse_weight_flags(items: Iterable[str]) -> dict[str, float]:
    """Attribute weights from ``COLUMN=NUMBER`` texts (the ``--weight`` flags)."""
    return _column_assignments(
        items, "attribute_weights", _finite, "COLUMN=NUMBER: e.g. age=2", "weight"
    )


def parse_static_loss_flags(items: Iterable[str]) -> dict[str, list[float]]:
    """Per-level losses of the ``static`` metric from ``COLUMN=V0,V1,...`` texts (the
    ``--static-loss`` flags; one number per level of the column's hierarchy, level 0 first)."""
    return _column_assignments(
        items,
        "static_loss",
        _finite_list,
        "COLUMN=NUMBER,NUMBER,...: e.g. sex=0,1 (one number per level, level 0 first)",
        "list",
    )


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
