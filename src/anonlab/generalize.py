"""Full-domain generalization under ARX's privacy models, with an optimal lattice search.

``anonymize`` searches the lattice of a :class:`~anonlab.dataset.Dataset` for
the node of least information loss at which every privacy criterion holds
within the suppression limit (k-anonymity, l-diversity, t-closeness,
beta-likeness, delta-disclosure, delta-presence, k-map and the risk
thresholds: :mod:`anonlab.privacy`, docs/privacy_models.md), and builds the
release. :class:`Generalizer` wraps it with fit/transform so a found
transformation can be applied to another table of the same schema
(re-checking every criterion there).

Steering the optimum (docs/generalization.md): ``min_levels`` and
``max_levels`` bound each quasi-identifier's level, as ARX's minimum and
maximum generalization do; the search runs on the lattice within the bounds
(:class:`~anonlab.lattice.lattice.Lattice`) and its optimum is the optimum
there. ``alternatives`` lists the next-best acceptable transformations
(:mod:`anonlab.lattice.alternatives`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.dataset import NO_ROLES, Dataset, Role, Roles
from anonlab.errors import AnonlabError, present
from anonlab.hierarchy import SUPPRESSED, Hierarchy
from anonlab.lattice.alternatives import best_nodes, node_facts
from anonlab.lattice.freqset import (
    CACHE_ENTRIES,
    FrequencyCache,
    FrequencyEngine,
    FrequencySet,
    group_tuples,
)
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.metrics import METRICS, LossContext, Metric, metric_by_name
from anonlab.lattice.plan import SearchPlan, plan_search
from anonlab.lattice.search import ANONYMOUS, SearchContext, SearchResult, sensitive_attributes
from anonlab.paths import PathLike
from anonlab.privacy import Criterion, KAnonymity, check_k, max_suppressed
from anonlab.privacy.profitability import model_costs
from anonlab.privacy.spec import (
    SINGLE_INSTANCE,
    bind_criteria,
    build_criterion,
    criteria_errors,
    criteria_with_k,
    describe,
)
from anonlab.progress import ProgressFn

if TYPE_CHECKING:
    from anonlab.engine.base import Engine, ReleasePlan
    from anonlab.lattice.local_pieces import LocalPlan

#: largest lattice searched: the strategies keep a few arrays with one entry per node
MAX_LATTICE_SIZE = 20_000_000
#: ARX 3.9's generalization/suppression factor when none is given (``Metric``)
DEFAULT_GS_FACTOR = 0.5

#: a criterion as the API takes it: an object, a settings dict or a flag text
CriterionLike = Criterion | Mapping[str, Any] | str
#: a table as the API takes it: a pandas DataFrame, or a ``dask.dataframe.DataFrame``
FrameLike = Any


@dataclass
class GeneralizationResult:
    """A release and the facts a reader needs to trust it.

    ``criteria`` holds one report entry per privacy criterion (see
    :func:`criteria_report`); ``information_loss`` every metric's value at the
    optimum as one number, ``information_loss_per_attribute`` the
    per-quasi-identifier values of the metrics where ARX reports a vector,
    ``information_loss_arx`` each value as ARX prints it. ``k`` is the
    k-anonymity criterion's ``k`` (``None`` without one).

    For a rowless dataset (rows in an engine) ``release`` is ``None`` and
    ``plan`` holds what the engine applies to every row to write it
    (:class:`anonlab.engine.base.ReleasePlan`); ``records`` counts the
    release's records either way.
    """

    release: pd.DataFrame | None
    transformation: dict[str, int]
    k: int | None
    suppression_limit: float
    suppressed_records: int
    equivalence_classes: int
    information_loss: dict[str, float | None]
    search: SearchResult
    lattice_size: int
    metric: str
    class_sizes: dict[int, int] = field(default_factory=dict)
    lattice_levels: list[dict[str, int]] = field(default_factory=list)
    criteria: list[dict[str, Any]] = field(default_factory=list)
    information_loss_per_attribute: dict[str, dict[str, float]] = field(default_factory=dict)
    information_loss_arx: dict[str, str] = field(default_factory=dict)
    metric_options: dict[str, Any] = field(default_factory=dict)
    plan: ReleasePlan | None = None
    records: int = 0
    level_bounds: dict[str, list[int]] = field(default_factory=dict)
    alternatives: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The method's report fields (see docs/generalization.md for each one)."""
        return {
            "search": self.search.strategy,
            "search_optimal": "heuristic" not in self.search.extra,
            "heuristic": self.search.extra.get("heuristic"),
            "metric": self.metric,
            **self.metric_options,
            "k": self.k,
            "suppression_limit": self.suppression_limit,
            "criteria": self.criteria,
            "lattice_size": self.lattice_size,
            "level_bounds": self.level_bounds,
            "nodes_checked": self.search.nodes_checked,
            "k_minimal_nodes": len(self.search.k_minimal),
            "transformation": self.transformation,
            "optimum_loss": _json_loss(self.search.loss),
            "suppressed_records": self.suppressed_records,
            "records": self.records,
            "equivalence_classes": self.equivalence_classes,
            "class_sizes": {str(size): count for size, count in sorted(self.class_sizes.items())},
            "information_loss": self.information_loss,
            "information_loss_per_attribute": self.information_loss_per_attribute,
            "information_loss_arx": self.information_loss_arx,
            "lattice_levels": self.lattice_levels,
            "search_seconds": self.search.runtime_seconds,
            "search_cpu_seconds": self.search.cpu_seconds,
            "alternatives": self.alternatives,
        }


def _json_loss(value: Any) -> Any:
    """A loss for JSON: a float, or a list for ARX's rank aggregate; ``None`` if not finite."""
    if isinstance(value, tuple | list):
        return [_json_loss(v) for v in value]
    number = float(value)
    return number if math.isfinite(number) else None


# ---------------------------------------------------------------------------
# The privacy model
# ---------------------------------------------------------------------------


def resolve_criteria(
    criteria: Iterable[CriterionLike] | None, k: int | None = None
) -> list[Criterion]:
    """The criteria objects of a privacy model, with ``k`` as a k-anonymity shorthand.

    ``criteria`` may mix :class:`~anonlab.privacy.Criterion` objects, dicts as
    the settings spell a model and flag texts
    (:mod:`anonlab.privacy.spec`). ``k`` and a k-anonymity criterion are not
    both accepted (ARX takes one k-anonymity model); with neither, and no
    other criterion, the model is 2-anonymity.
    """
    given = list(criteria or [])
    objects = [c for c in given if isinstance(c, Criterion)]
    specs = [c for c in given if not isinstance(c, Criterion)]
    built = [build_criterion(s) for s in criteria_with_k(specs, None)] if specs else []
    model = objects + built
    k_models = [c for c in model if isinstance(c, KAnonymity)]
    if k is not None and k_models:
        raise AnonlabError(
            f"k = {k} and a k-anonymity criterion with k = {k_models[0].k} are "
            "both given: give k or the criterion, not both",
            parameter="k",
        )
    names = [c.name for c in model]
    for single in SINGLE_INSTANCE:
        if names.count(single) > 1:
            raise AnonlabError(
                f"criteria: model '{single}' is given twice: give it once", parameter="criteria"
            )
    if k is not None:
        model.insert(0, KAnonymity(k))
    elif not model:
        model.append(KAnonymity(2))
    return model


def model_dataset(
    frame: FrameLike,
    hierarchies: Mapping[str, Hierarchy | PathLike],
    criteria: Sequence[Criterion],
    *,
    roles: Roles = NO_ROLES,
    source: str | None = None,
    read_options: Mapping[str, Any] | None = None,
    engine: Engine | None = None,
    progress: ProgressFn | None = None,
) -> Dataset:
    """The dataset a privacy model needs from a table, its other columns given ``roles``.

    Plainly the table; with delta-presence or inclusion the table is the
    population and the research subset (the criterion's ``subset``) is what
    is released;
    with k-map on a population table its records are counted too
    (:func:`anonlab.privacy.presence.population_dataset`). With an
    ``engine`` (needed for a Dask DataFrame) the dataset is rowless: the
    engine counts its base frequency set
    (:func:`anonlab.lattice.pieces.engine_dataset`, which calls
    ``progress`` as it goes).
    """
    if engine is not None:
        from anonlab.lattice.pieces import check_engine_model, engine_dataset

        check_engine_model(criteria)
        return engine_dataset(
            engine, frame, hierarchies, roles=roles, source=source, progress=progress
        )
    if any(c.needs_population for c in criteria):
        from anonlab.privacy.presence import population_dataset

        with criteria_errors():
            return population_dataset(
                frame,
                hierarchies,
                list(criteria),
                roles=roles,
                source=source,
                read_options=read_options,
            )
    return Dataset.from_frame(frame, hierarchies, **roles.keywords(), source=source)


def criteria_report(
    criteria: Sequence[Criterion], classes: Any, report_paths: Any = None
) -> list[dict[str, Any]]:
    """One report entry per criterion at a node: ``{"model", "parameters", "satisfied",
    "achieved"}``.

    ``parameters`` are the model's settings but its name (``attribute``
    included), so ``{"model": ..., **parameters}`` rebuilds it; ``satisfied``
    says whether the released classes meet it (for delta-presence also its
    classes of population records only, where ARX judges them:
    :func:`~anonlab.privacy.presence.whole_node_conditions_judged`);
    ``achieved`` gives the values the release reaches (the smallest l, the
    largest t, ...). ``classes`` is
    the node's :class:`~anonlab.lattice.classes.NodeClasses`.
    ``report_paths`` may rewrite file parameters (a function of a path).
    """
    from anonlab.privacy.presence import whole_node_conditions_judged

    stats = classes.stats
    outliers = classes.outliers
    # delta-presence's classes without subset records count only where ARX judges them
    judged = whole_node_conditions_judged(criteria)
    entries = []
    for criterion in criteria:
        spec = describe(criterion)
        model = spec.pop("model")
        if report_paths is not None:
            from anonlab.privacy.spec import path_parameters

            for key, path in path_parameters({"model": model, **spec}).items():
                spec[key] = report_paths(path)
        entries.append(
            {
                "model": model,
                "parameters": spec,
                "satisfied": bool(
                    criterion.holds(stats, outliers)
                    and (not judged or criterion.acceptable(stats, outliers))
                ),
                "achieved": _plain(criterion.achieved(stats, outliers)),
            }
        )
    return entries


def _plain(value: Any) -> Any:
    """NumPy scalars and containers as plain JSON values (non-finite floats as ``None``)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ---------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------


def make_metric(
    name: str,
    ctx: LossContext,
    *,
    gs_factor: float = DEFAULT_GS_FACTOR,
    aggregate: str | None = None,
    weights: Mapping[str, float] | None = None,
    strict: bool = True,
    targets: Sequence[str] | None = None,
    static_loss: Mapping[str, Sequence[float]] | None = None,
) -> Metric:
    """A metric by name with the options it takes (``gs_factor``, ``aggregate``, ``weights``;
    ``targets`` of ``classification``, ``static_loss`` of ``static``).

    With ``strict`` (the metric the search optimizes), an option the metric
    does not take is an error naming the option
    (:func:`anonlab.lattice.metrics.metric_by_name`); without (every other
    metric of the report), each metric gets the options it takes. ``aggregate``
    ``None`` is each metric's own ARX default.
    """
    if strict:
        return metric_by_name(
            name,
            ctx,
            gs_factor=gs_factor,
            aggregate=aggregate,
            weights=weights,
            targets=targets,
            static_loss=static_loss,
        )
    cls = METRICS[name]
    return metric_by_name(
        name,
        ctx,
        gs_factor=gs_factor if cls.takes_gs_factor else DEFAULT_GS_FACTOR,
        aggregate=aggregate if cls.multi_dimensional else None,
        weights=weights if cls.multi_dimensional else None,
        allow_undefined=True,
        targets=targets if "targets" in cls.options else None,
        static_loss=static_loss if "static_loss" in cls.options else None,
    )


def information_loss(
    ctx: LossContext,
    classes: Any,
    *,
    gs_factor: float,
    aggregate: str | None,
    weights: Mapping[str, float] | None,
    targets: Sequence[str] | None = None,
    static_loss: Mapping[str, Sequence[float]] | None = None,
) -> tuple[dict[str, float | None], dict[str, dict[str, float]], dict[str, str]]:
    """Every metric at a node: one number each, per-attribute values where ARX has a vector,
    and each value as ARX prints it.

    A metric that needs parameters of its own (``classification`` its
    ``targets``, ``static`` its ``static_loss``) is computed when they are
    given, else its number is ``None`` (and it has no text).

    The number is the metric's value; for ARX's "rank" aggregate (a vector
    compared item by item) it is ARX's scalar for it, the geometric mean of
    the per-attribute values.
    """
    scalars: dict[str, float | None] = {}
    vectors: dict[str, dict[str, float]] = {}
    texts: dict[str, str] = {}
    own = {"targets": targets, "static_loss": static_loss}
    for name in METRICS:
        if any(not own.get(option) for option in METRICS[name].options):
            scalars[name] = None
            continue
        metric = make_metric(
            name,
            ctx,
            gs_factor=gs_factor,
            aggregate=aggregate,
            weights=weights,
            strict=False,
            targets=targets,
            static_loss=static_loss,
        )
        report = metric.report(classes)
        value = report.get("scalar", report["value"])
        number = float(value) if isinstance(value, int | float) else math.nan
        scalars[name] = number if math.isfinite(number) else None
        texts[name] = str(report["arx"])
        if report.get("per_attribute"):
            vectors[name] = {str(k): float(v) for k, v in report["per_attribute"].items()}
    return scalars, vectors, texts


def metric_parameters(metric: Metric) -> dict[str, Any]:
    """The metric's own parameters for the report, as it checked them (``targets`` in table
    order, ``static_loss`` per quasi-identifier); none for the other metrics."""
    return {option: getattr(metric, option) for option in metric.options}


def _check_weights(weights: Mapping[str, float] | None, dataset: Dataset) -> None:
    """Attribute weights name quasi-identifiers and are numbers of at least 0."""
    names = [q.name for q in dataset.qis]
    for column, weight in (weights or {}).items():
        if column not in names:
            raise AnonlabError(
                f"weights names '{column}', which is not a quasi-identifier "
                f"(quasi-identifiers: {', '.join(names)})",
                parameter="weights",
            )
        if not math.isfinite(float(weight)) or float(weight) < 0:
            raise AnonlabError(
                f"weights gives '{column}' the weight {weight}: give a number of at least 0",
                parameter="weights",
            )


# ---------------------------------------------------------------------------
# Bounds on the levels
# ---------------------------------------------------------------------------


def _bound_levels(
    dataset: Dataset, given: Mapping[str, int] | None, parameter: str, default: Sequence[int]
) -> list[int]:
    """One bound per quasi-identifier: the given ones (each a level of its hierarchy,
    ``0 <= L <= height``), ``default`` for the others."""
    names = [q.name for q in dataset.qis]
    out = list(default)
    for column, value in (given or {}).items():
        if column not in names:
            raise AnonlabError(
                f"{parameter} names '{column}', which is not a "
                f"quasi-identifier (quasi-identifiers: {', '.join(names)})",
                parameter=parameter,
            )
        q = dataset.qis[names.index(column)]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | np.integer)
            or not 0 <= int(value) <= q.height
        ):
            raise AnonlabError(
                f"{parameter} gives '{column}' the level {value}, outside its "
                f"hierarchy: give a level from 0 to {q.height}",
                parameter=parameter,
            )
        out[names.index(column)] = int(value)
    return out


def level_bounds(
    dataset: Dataset, min_levels: Mapping[str, int] | None, max_levels: Mapping[str, int] | None
) -> tuple[list[int], list[int]]:
    """The lowest and highest level of each quasi-identifier the search may choose.

    ARX's ``setMinimumGeneralization`` and ``setMaximumGeneralization``: a
    quasi-identifier not named is bounded by 0 and its hierarchy's height;
    each named level must be one of its hierarchy (``0 <= L <= height``) and
    the lower bound at most the upper one.
    """
    heights = [q.height for q in dataset.qis]
    lows = _bound_levels(dataset, min_levels, "min_level", [0] * len(heights))
    highs = _bound_levels(dataset, max_levels, "max_level", heights)
    for q, low, high in zip(dataset.qis, lows, highs, strict=True):
        if low > high:
            raise AnonlabError(
                f"min_level gives '{q.name}' the level {low}, above its "
                f"max_level {high}: give a minimum at most the maximum",
                parameter="min_level",
            )
    return lows, highs


def check_within_bounds(
    transformation: Mapping[str, int],
    min_levels: Mapping[str, int] | None,
    max_levels: Mapping[str, int] | None,
) -> None:
    """Refuse a transformation with a level below its ``min_levels`` or above its
    ``max_levels`` entry (a chosen transformation must respect the run's bounds)."""
    for column, level in transformation.items():
        low = (min_levels or {}).get(column, 0)
        high = (max_levels or {}).get(column)
        if level < low or (high is not None and level > high):
            bound = f"below its min_level {low}" if level < low else f"above its max_level {high}"
            raise AnonlabError(
                f"levels gives '{column}' the level {level}, {bound}: choose a "
                "transformation within the bounds the search had",
                parameter="levels",
            )


# ---------------------------------------------------------------------------
# The search
# ---------------------------------------------------------------------------


@dataclass
class _Setup:
    """What a search or the check of one node needs."""

    lattice: Lattice
    engine: FrequencyEngine
    loss: LossContext
    context: SearchContext
    limit: int


def _setup(
    dataset: Dataset,
    criteria: Sequence[Criterion],
    suppression: float,
    metric: str,
    *,
    gs_factor: float,
    aggregate: str | None,
    weights: Mapping[str, float] | None,
    practical_monotonicity: bool,
    cache_size: int,
    progress: ProgressFn | None,
    bounds: tuple[Sequence[int], Sequence[int]] | None = None,
    plan: SearchPlan | None = None,
    targets: Sequence[str] | None = None,
    static_loss: Mapping[str, Sequence[float]] | None = None,
) -> _Setup:
    """Bind the criteria to the data and build the lattice (within ``bounds``, the lowest
    and highest levels: :func:`level_bounds`), engine, metric and search context (sparse,
    for a lattice of any size, when ``plan`` runs a heuristic search on it)."""
    for c in criteria:
        if isinstance(c, KAnonymity):
            check_k(c.k, dataset.n)
    bind_criteria(criteria, dataset)
    limit = max_suppressed(suppression, dataset.n)
    _check_weights(weights, dataset)
    lows, highs = (
        bounds if bounds is not None else ([0] * len(dataset.qis), [q.height for q in dataset.qis])
    )
    lattice = Lattice(highs, lows)
    sparse = plan is not None and plan.heuristic(lattice.size)
    if lattice.size > MAX_LATTICE_SIZE and not sparse:
        heights = ", ".join(f"{q.name} {q.height}" for q in dataset.qis)
        raise AnonlabError(
            f"the lattice has {lattice.size:,} nodes (hierarchy heights: {heights}), more than "
            f"the {MAX_LATTICE_SIZE:,} an optimal search keeps in memory: use a heuristic "
            "search (descent, lightning, top-down or genetic), fewer quasi-identifiers or "
            "shorter hierarchies",
            parameter="search",
        )
    if dataset.rowless:
        from anonlab.lattice.pieces import BaseLossContext, check_engine_model, search_engine

        check_engine_model(criteria)
        engine = search_engine(dataset, sensitive_attributes(criteria))
        ctx_loss: LossContext = BaseLossContext(dataset, engine.base_tuples, engine.bottom.counts)
    else:
        engine = FrequencyEngine(dataset, sensitive=sensitive_attributes(criteria))
        ctx_loss = LossContext(
            dataset,
            engine.base_tuples,
            engine.bottom.counts,
            engine.row_index if dataset.population is None else None,
        )
    with criteria_errors():
        ctx_loss.cost_benefit = model_costs(criteria)
    chosen = make_metric(
        metric,
        ctx_loss,
        gs_factor=gs_factor,
        aggregate=aggregate,
        weights=weights,
        targets=targets,
        static_loss=static_loss,
    )
    engine.keep_base_index = chosen.needs_base_index and limit > 0
    engine.keep_population_order = chosen.needs_population_order
    ctx = SearchContext(
        lattice,
        engine,
        list(criteria),
        limit,
        chosen,
        cache_size,
        progress,
        practical_monotonicity=practical_monotonicity,
        sparse=sparse,
    )
    return _Setup(lattice, engine, ctx_loss, ctx, limit)


def _node(setup: _Setup, levels: Sequence[int]) -> tuple[FrequencySet, Any, bool]:
    """A node's frequency set (with the bottom's index), its classes under the model, and
    whether the model holds there."""
    setup.engine.keep_base_index = True
    fs = setup.engine.roll_up(setup.engine.bottom, list(levels))
    verdict = setup.context.evaluate(fs)
    return fs, verdict.classes, bool(verdict.acceptable)


def _suppressed_rows(setup: _Setup, fs: FrequencySet, outliers: NDArray[Any]) -> NDArray[Any]:
    """Each row of the table to release: whether its class is suppressed."""
    base_index = present(fs.base_index, "the bottom frequency set's base index")
    return np.asarray(outliers[base_index][setup.engine.row_index], dtype=bool)


def anonymize(
    dataset: Dataset,
    k: int | None = None,
    suppression: float = 0.0,
    search: str = "flash",
    metric: str = "precision",
    progress: ProgressFn | None = None,
    cache_size: int = CACHE_ENTRIES,
    *,
    criteria: Iterable[CriterionLike] | None = None,
    gs_factor: float = DEFAULT_GS_FACTOR,
    aggregate: str | None = None,
    weights: Mapping[str, float] | None = None,
    practical_monotonicity: bool = False,
    min_levels: Mapping[str, int] | None = None,
    max_levels: Mapping[str, int] | None = None,
    alternatives: int = 0,
    time_limit: float | None = None,
    step_limit: int | None = None,
    heuristic_threshold: int | None = None,
    genetic: Mapping[str, Any] | None = None,
    targets: Sequence[str] | None = None,
    static_loss: Mapping[str, Sequence[float]] | None = None,
) -> GeneralizationResult:
    """Find the optimal full-domain generalization and build the release.

    The privacy model is every one of ``criteria`` (objects, settings dicts
    or flag texts, :func:`resolve_criteria`), ``k`` a shorthand for
    k-anonymity; records of classes that fail a class-based criterion (and
    those a risk threshold suppresses) are suppressed, at most
    ``floor(suppression * n)``. Every strategy returns the global optimum of
    ``metric`` (with ``gs_factor``, ``aggregate`` and attribute ``weights``
    where it takes them; ``classification`` needs the ``targets`` columns,
    ``static`` its ``static_loss`` per quasi-identifier and level) among the
    nodes where the model holds; with
    ``practical_monotonicity`` every criterion is treated as monotone (ARX's
    option: fewer checks, no guarantee). ``dataset`` must carry what the
    criteria need (a population for delta-presence and k-map on a population
    table: :func:`model_dataset`). ``progress`` is called as
    ``progress("searching the lattice", nodes_checked, lattice_size)``.

    ``min_levels`` and ``max_levels`` (quasi-identifier -> level) restrict
    the lattice to the nodes within them (:func:`level_bounds`); the
    optimum is then the optimum among those nodes. ``alternatives`` (N > 0)
    lists the N best acceptable nodes within the bounds, the optimum first
    (:func:`alternatives_report`).

    Heuristic searches (``search`` ``lightning``, ``top-down`` or ``genetic``; ``auto``:
    optimal up to ``heuristic_threshold`` nodes, Lightning above) run on lattices of any size
    and return the best node they found within ``time_limit`` seconds and ``step_limit``
    node checks, *not proven optimal*; ``genetic`` tunes the genetic search
    (:class:`anonlab.lattice.genetic.GeneticSettings`; :mod:`anonlab.lattice.plan`).
    """
    model = resolve_criteria(criteria, k)
    search_plan = plan_search(
        search,
        time_limit=time_limit,
        step_limit=step_limit,
        heuristic_threshold=heuristic_threshold,
        genetic=genetic,
    )
    if metric not in METRICS:
        raise AnonlabError(
            f"metric '{metric}' is unknown: choose one of {', '.join(METRICS)}", parameter="metric"
        )
    if alternatives < 0:
        raise AnonlabError(
            f"alternatives must be 0 or more (got {alternatives})", parameter="alternatives"
        )
    bounds = level_bounds(dataset, min_levels, max_levels)
    setup = _setup(
        dataset,
        model,
        suppression,
        metric,
        gs_factor=gs_factor,
        aggregate=aggregate,
        weights=weights,
        practical_monotonicity=practical_monotonicity,
        cache_size=cache_size,
        progress=progress,
        bounds=bounds,
        plan=search_plan,
        targets=targets,
        static_loss=static_loss,
    )
    if alternatives and setup.context.sparse:
        raise AnonlabError(
            "alternatives need an optimal search (a heuristic search does not "
            "know the next-best nodes): leave alternatives at 0 or choose an "
            "optimal search",
            parameter="alternatives",
        )
    result = search_plan.run(setup.context)
    listed = alternatives_report(setup, dataset, result, alternatives)
    final_fs, final, _ = _node(setup, result.levels)
    setup.context.cache = FrequencyCache(setup.engine, 1)  # the search's sets: not needed again
    scalars, vectors, texts = information_loss(
        setup.loss,
        final,
        gs_factor=gs_factor,
        aggregate=aggregate,
        weights=weights,
        targets=targets,
        static_loss=static_loss,
    )
    release, plan = _release_or_plan(setup, dataset, result.levels, final_fs, final.outliers)
    kept = final_fs.counts[~final.outliers & (final_fs.counts > 0)]
    sizes, freq = np.unique(kept, return_counts=True)
    k_models = [c.k for c in model if isinstance(c, KAnonymity)]
    return GeneralizationResult(
        release=release,
        transformation={q.name: lv for q, lv in zip(dataset.qis, result.levels, strict=True)},
        k=k_models[0] if k_models else None,
        suppression_limit=suppression,
        suppressed_records=final.suppressed,
        equivalence_classes=int(kept.shape[0]),
        information_loss=scalars,
        search=result,
        lattice_size=setup.lattice.size,
        metric=metric,
        class_sizes={int(s): int(c) for s, c in zip(sizes, freq, strict=True)},
        lattice_levels=lattice_summary(setup.lattice, result),
        criteria=criteria_report(model, final),
        information_loss_per_attribute=vectors,
        information_loss_arx=texts,
        metric_options={
            "gs_factor": gs_factor,
            "aggregate": getattr(setup.context.metric, "aggregate", aggregate),
            "attribute_weights": dict(weights or {}),
            "practical_monotonicity": practical_monotonicity,
            **metric_parameters(setup.context.metric),
        },
        plan=plan,
        records=dataset.n,
        level_bounds={q.name: [lo, hi] for q, lo, hi in zip(dataset.qis, *bounds, strict=True)},
        alternatives=listed,
    )


def alternatives_report(
    setup: _Setup, dataset: Dataset, result: SearchResult, n: int
) -> list[dict[str, Any]]:
    """The ``n`` best transformations that satisfy the model, numbered from 1 (the optimum):
    levels, loss, suppressed records and highest prosecutor risk of each
    (:mod:`anonlab.lattice.alternatives`)."""
    if n == 0:
        return []
    names = [q.name for q in dataset.qis]
    entries = []
    for number, node in enumerate(best_nodes(setup.context, result, n), start=1):
        facts = node_facts(setup.context, node)
        entries.append(
            {
                "node": number,
                "levels": dict(zip(names, facts.levels, strict=True)),
                "loss": _json_loss(facts.loss),
                "suppressed_records": facts.suppressed_records,
                "highest_prosecutor_risk": facts.highest_prosecutor_risk,
            }
        )
    return entries


def _release_or_plan(
    setup: _Setup, dataset: Dataset, levels: Sequence[int], fs: FrequencySet, outliers: NDArray[Any]
) -> tuple[pd.DataFrame | None, ReleasePlan | None]:
    """The release built here, or for a rowless dataset the plan the engine writes it by."""
    if dataset.rowless:
        from anonlab.lattice.pieces import release_plan

        return None, release_plan(dataset, levels, fs, outliers)
    release, _ = build_release(dataset, levels, 0, _suppressed_rows(setup, fs, outliers))
    return release, None


def lattice_summary(lattice: Lattice, result: SearchResult) -> list[dict[str, int]]:
    """Per lattice level: nodes, nodes checked, nodes known anonymous, k-minimal nodes.

    After a heuristic search (no whole-lattice arrays), "anonymous" counts the checked nodes
    found acceptable and "k_minimal" is 0: it does not know them."""
    visited = result.extra.get("visited")
    if isinstance(visited, dict):
        best = lattice.level_of(result.optimum)
        return [
            {
                "level": level,
                "nodes": count,
                "checked": visited.get(level, (0, 0))[0],
                "anonymous": visited.get(level, (0, 0))[1],
                "k_minimal": 0,
                "optimum": int(level == best),
            }
            for level, count in enumerate(lattice.level_counts(), start=lattice.min_level)
        ]
    minimal = np.zeros(lattice.size, dtype=bool)
    minimal[result.k_minimal] = True
    rows = []
    for level in range(lattice.min_level, lattice.max_level + 1):
        at = lattice.level_sums == level
        rows.append(
            {
                "level": level,
                "nodes": int(at.sum()),
                "checked": int((result.checked & at).sum()),
                "anonymous": int(((result.tags == ANONYMOUS) & at).sum()),
                "k_minimal": int((minimal & at).sum()),
                "optimum": int(lattice.level_of(result.optimum) == level),
            }
        )
    return rows


def build_release(
    dataset: Dataset, levels: Iterable[int], k: int, suppressed: NDArray[Any] | None = None
) -> tuple[pd.DataFrame, NDArray[Any]]:
    """Apply a generalization vector to every row and suppress classes smaller than k.

    Returns the release (identifying columns dropped, row order kept, suppressed
    rows '*' in every quasi-identifier) and the boolean mask of suppressed rows.
    ``suppressed`` may pass that mask when the caller knows it already (the
    search's frequency set of the node); otherwise the rows are grouped here.
    """
    levels = list(levels)
    if suppressed is None:
        matrix = np.column_stack(
            [q.level_codes[lv][q.codes] for q, lv in zip(dataset.qis, levels, strict=True)]
        )
        cards = [q.cardinality(lv) for q, lv in zip(dataset.qis, levels, strict=True)]
        inverse, _ = group_tuples(matrix.astype(np.int64), cards)
        del matrix
        counts = np.bincount(inverse)
        suppressed = counts[inverse] < k
    release = dataset.frame.copy(deep=False)
    for q, lv in zip(dataset.qis, levels, strict=True):  # one column's codes at a time
        release[q.name] = _labelled(
            np.asarray(q.level_codes[lv]).astype(np.int32)[q.codes],
            list(q.level_labels[lv]),
            suppressed,
        )
    dropped = dataset.columns_with(Role.IDENTIFYING)
    return release.drop(columns=dropped), suppressed


def _labelled(codes: NDArray[Any], labels: list[str], suppressed: NDArray[Any]) -> pd.Categorical:
    """Group codes as a categorical of labels, '*' where the row is suppressed."""
    if SUPPRESSED in labels:
        star = labels.index(SUPPRESSED)
    else:
        star = len(labels)
        labels = [*labels, SUPPRESSED]
    out = codes.astype(np.int32, copy=True)
    out[suppressed] = star
    return cast(pd.Categorical, pd.Categorical.from_codes(out, categories=pd.Index(labels)))


class Generalizer:
    """Full-domain generalization under ARX's privacy models, scikit-learn style.

    >>> from anonlab.privacy.diversity import DistinctLDiversity  # doctest: +SKIP
    >>> g = Generalizer(criteria=[DistinctLDiversity("occupation", 3)], k=5,
    ...                 suppression=0.01, metric="loss", gs_factor=0.5)  # doctest: +SKIP
    >>> release = g.fit_transform(frame, {"age": "hierarchy_age.csv", ...},
    ...                           sensitive=["occupation"])  # doctest: +SKIP
    >>> other = g.transform(new_frame)  # same levels; every criterion re-checked  # doctest: +SKIP

    ``k`` alone (``Generalizer(k=5)``) is k-anonymity; with neither ``k`` nor
    ``criteria``, 2-anonymity. ``criteria`` may hold criterion objects, dicts
    as the settings spell a model, or flag texts. ``weights`` are attribute
    weights of the metric (quasi-identifier -> weight); ``targets`` the target
    columns of ``metric="classification"`` and ``static_loss`` the per-level
    losses of ``metric="static"``. ``min_levels`` and
    ``max_levels`` (quasi-identifier -> level) bound the levels the search may
    choose, as ARX's minimum and maximum generalization do
    (:func:`level_bounds`).

    A ``dask.dataframe.DataFrame`` is taken wherever a pandas one is: the
    rows stay on the cluster, ``engine`` (an open
    :class:`~anonlab.engine.base.Engine`; by default a Dask engine on the
    client in use, else on a local cluster started for the call) counts the
    base frequency set, the search runs here on it, and the release is a
    lazy Dask DataFrame (same rows, same labels as the pandas release).

    ``aggregate_qi`` (quasi-identifier -> ``"mean"``, ``"geometric"``, ``"median"``,
    ``"mode"`` or ``"interval"``) releases that column, in every class, as the aggregate of
    the class's original values instead of its label, with any ``recoding``, on a pandas
    DataFrame (:func:`anonlab.generalize_aggregate.aggregate_classes`; ``aggregate_missing``
    ``"zero"`` counts a missing value as 0 in a mean).
    """

    def __init__(
        self,
        k: int | None = None,
        suppression: float = 0.0,
        search: str = "flash",
        metric: str = "precision",
        *,
        criteria: Iterable[CriterionLike] | None = None,
        gs_factor: float = DEFAULT_GS_FACTOR,
        aggregate: str | None = None,
        weights: Mapping[str, float] | None = None,
        practical_monotonicity: bool = False,
        engine: Engine | None = None,
        min_levels: Mapping[str, int] | None = None,
        max_levels: Mapping[str, int] | None = None,
        targets: Sequence[str] | None = None,
        static_loss: Mapping[str, Sequence[float]] | None = None,
        recoding: str = "full-domain",
        relaxed: bool = False,
        numeric: Sequence[str] | None = None,
        local_gs_factor: float = 0.05,
        local_iterations: int = 100,
        local_adaption: float = 0.05,
        aggregate_qi: Mapping[str, str] | None = None,
        aggregate_missing: str = "ignore",
    ) -> None:
        if recoding not in ("full-domain", "mondrian", "local"):
            raise AnonlabError(
                f"recoding '{recoding}' is unknown: choose full-domain, mondrian or local",
                parameter="recoding",
            )
        self.aggregate_qi = dict(aggregate_qi or {})
        self.aggregate_missing = aggregate_missing
        self.local_gs_factor = local_gs_factor
        self.local_iterations = local_iterations
        self.local_adaption = local_adaption
        self.recoding = recoding
        self.relaxed = relaxed
        self.numeric = list(numeric or [])
        self.engine = engine
        self.min_levels = dict(min_levels or {})
        self.max_levels = dict(max_levels or {})
        self.k = k
        self.suppression = suppression
        self.search = search
        self.metric = metric
        self.criteria = list(criteria or [])
        self.gs_factor = gs_factor
        self.aggregate = aggregate
        self.weights = dict(weights or {})
        self.targets = list(targets or [])
        self.static_loss = {str(c): list(v) for c, v in (static_loss or {}).items()}
        self.practical_monotonicity = practical_monotonicity

    def fit(
        self,
        frame: FrameLike,
        hierarchies: Mapping[str, Hierarchy | PathLike | None],
        *,
        identifying: Iterable[str] = (),
        sensitive: Iterable[str] = (),
        insensitive: Iterable[str] = (),
        other: str | None = None,
    ) -> Generalizer:
        """Search the optimal transformation for ``frame``.

        Every column needs a role (a hierarchy, ``identifying``, ``sensitive``
        or ``insensitive``), or ``other="insensitive"`` releases the rest as
        they are (:func:`anonlab.dataset.assign_roles`). A criterion on a
        sensitive attribute needs that column in ``sensitive``.

        With ``recoding="mondrian"`` (docs/mondrian.md) a quasi-identifier may map to
        ``None`` (no hierarchy: cut and released as a range, as the ``numeric`` ones are),
        and :meth:`transform` is refused: Mondrian's partitions belong to their table.
        """
        roles = Roles.of(identifying, sensitive, insensitive, other)
        self.hierarchies_given_ = list(hierarchies)
        if self.aggregate_qi:
            from anonlab.frames import is_dask_frame
            from anonlab.generalize_aggregate import check_aggregate_qi

            check_aggregate_qi(self.aggregate_qi, hierarchies, self.aggregate_missing)
            if self.engine is not None or is_dask_frame(frame):
                raise AnonlabError(
                    "aggregate_qi runs on a pandas DataFrame in memory: the engines do not "
                    "write the classes' aggregates yet",
                    parameter="aggregate_qi",
                )
        if self.recoding == "mondrian":
            return self._fit_mondrian(frame, hierarchies, roles)
        if self.recoding == "local":
            return self._fit_local(frame, hierarchies, roles)
        bare = [c for c, h in hierarchies.items() if h is None or h == ""]
        missing = [c for c in bare if c not in self.aggregate_qi]
        if missing:
            raise AnonlabError(
                f"quasi-identifier '{missing[0]}' has no hierarchy: full-domain generalization "
                "needs one, or choose recoding='mondrian' to cut it as a range, or aggregate "
                f"it in the other quasi-identifiers' classes (aggregate_qi={{'{missing[0]}': "
                "'mean'})",
                parameter="hierarchies",
            )
        if bare:  # not generalized, aggregated in the others' classes: released until then
            roles = Roles.of(
                roles.identifying, roles.sensitive, [*roles.insensitive, *bare], roles.other
            )
            self.hierarchies_given_ = [c for c in hierarchies if c not in bare]
        hiers = {
            c: h if isinstance(h, Hierarchy) else Hierarchy.from_csv(cast(PathLike, h))
            for c, h in hierarchies.items()
            if c not in bare
        }
        self.roles_ = roles
        self.hierarchies_ = hiers
        self.criteria_ = resolve_criteria(self.criteria, self.k)
        with _frame_engine(frame, self.engine) as engine:
            dataset = model_dataset(
                frame,
                hiers,
                self.criteria_,
                roles=roles,
                engine=engine,
            )
        self.result_ = anonymize(
            dataset,
            None,
            self.suppression,
            self.search,
            self.metric,
            criteria=self.criteria_,
            min_levels=self.min_levels,
            max_levels=self.max_levels,
            **self._metric_options(),
        )
        self.transformation_ = dict(self.result_.transformation)
        return self

    def _fit_mondrian(
        self,
        frame: FrameLike,
        hierarchies: Mapping[str, Hierarchy | PathLike | None],
        roles: Roles,
    ) -> Generalizer:
        """Mondrian's partitions of ``frame`` (:func:`anonlab.mondrian.method.mondrian`)."""
        from anonlab.frames import is_dask_frame
        from anonlab.mondrian.method import flat_hierarchies, mondrian, refuse_unjudgeable

        if self.engine is not None or is_dask_frame(frame):
            raise AnonlabError(
                "recoding mondrian runs on a pandas DataFrame in memory: the engines do not "
                "map Mondrian's partitions yet",
                parameter="engine",
            )
        if self.suppression:
            raise AnonlabError(
                "recoding mondrian suppresses no record: leave suppression at 0",
                parameter="suppression",
            )
        self.criteria_ = resolve_criteria(self.criteria, self.k)
        refuse_unjudgeable(self.criteria_)
        given = {
            c: None
            if h is None or h == ""
            else h
            if isinstance(h, Hierarchy)
            else Hierarchy.from_csv(h)
            for c, h in hierarchies.items()
        }
        ordered = [c for c, h in given.items() if h is None]
        ordered += [c for c in self.numeric if c not in ordered]
        known = {c: h for c, h in given.items() if h is not None}
        table = frame.reset_index(drop=True)
        every = flat_hierarchies(table, known, [c for c in ordered if c not in known])
        dataset = model_dataset(table, every, self.criteria_, roles=roles)
        self.mondrian_ = mondrian(dataset, self.criteria_, ordered=ordered, relaxed=self.relaxed)
        return self

    def _fit_local(
        self,
        frame: FrameLike,
        hierarchies: Mapping[str, Hierarchy | PathLike | None],
        roles: Roles,
    ) -> Generalizer:
        """ARX's local recoding of ``frame`` (:func:`anonlab.lattice.local.local_recoding`;
        docs/generalization.md, "Local recoding"): ``local_`` holds every search and
        ``local_release_`` the release. A Dask DataFrame (or an ``engine``) is counted on
        the engine as for full-domain generalization: the searches run here on its base
        frequency set and ``local_plan_`` says how to write the release
        (:mod:`anonlab.lattice.local_pieces`; ``local_release_`` is then ``None``)."""
        from anonlab.lattice.local import local_recoding, local_release
        from anonlab.lattice.local_pieces import local_plan

        missing = [c for c, h in hierarchies.items() if h is None or h == ""]
        if missing:
            raise AnonlabError(
                f"quasi-identifier '{missing[0]}' has no hierarchy: local recoding needs one",
                parameter="hierarchies",
            )
        hiers = {
            c: h if isinstance(h, Hierarchy) else Hierarchy.from_csv(cast(PathLike, h))
            for c, h in hierarchies.items()
        }
        self.hierarchies_ = hiers
        self.criteria_ = resolve_criteria(self.criteria, self.k)
        with _frame_engine(frame, self.engine) as engine:
            dataset = model_dataset(
                frame if engine is not None else frame.reset_index(drop=True),
                hiers,
                self.criteria_,
                roles=roles,
                engine=engine,
            )
        self.local_ = local_recoding(
            dataset,
            self.criteria_,
            self.suppression,
            self.metric,
            gs_factor=self.gs_factor,
            aggregate=self.aggregate,
            weights=self.weights or None,
            search=self.search,
            local_gs_factor=self.local_gs_factor,
            iterations=self.local_iterations,
            adaption=self.local_adaption,
        )
        self.local_plan_: LocalPlan | None = None
        self.local_release_: pd.DataFrame | None = None
        if dataset.rowless:
            drop = tuple(dataset.columns_with(Role.IDENTIFYING))
            self.local_plan_ = local_plan(dataset, self.local_, drop)
        else:
            self.local_release_ = local_release(dataset, self.local_)
        return self

    def _metric_options(self) -> dict[str, Any]:
        return {
            "gs_factor": self.gs_factor,
            "aggregate": self.aggregate,
            "weights": self.weights,
            "practical_monotonicity": self.practical_monotonicity,
            "targets": self.targets,
            "static_loss": self.static_loss,
        }

    def fit_transform(
        self,
        frame: FrameLike,
        hierarchies: Mapping[str, Hierarchy | PathLike | None],
        *,
        identifying: Iterable[str] = (),
        sensitive: Iterable[str] = (),
        insensitive: Iterable[str] = (),
        other: str | None = None,
    ) -> FrameLike:
        """Fit and return the release (with ``frame``'s index; with delta-presence, the
        research subset's rows, indexed as in ``frame``; a lazy Dask DataFrame for a Dask
        one)."""
        self.fit(
            frame,
            hierarchies,
            identifying=identifying,
            sensitive=sensitive,
            insensitive=insensitive,
            other=other,
        )
        if self.recoding == "mondrian":
            return self._aggregated(self.mondrian_.release, frame).set_axis(frame.index, axis=0)
        if self.recoding == "local":
            if self.local_release_ is None:  # counted on an engine: the plan applied
                from anonlab.frames import is_dask_frame
                from anonlab.lattice import local_pieces

                plan = present(self.local_plan_, "the local recoding's release plan")
                if is_dask_frame(frame):
                    return local_pieces.lazy_release(frame, plan)
                return local_pieces.release_partition(frame, plan)
            return self._aggregated(self.local_release_, frame).set_axis(frame.index, axis=0)
        if self.result_.release is not None:
            return _release_of(frame, self._aggregated(self.result_.release, frame), None)
        return _release_of(frame, self.result_.release, self.result_.plan)

    def _aggregated(self, release: pd.DataFrame, frame: FrameLike) -> pd.DataFrame:
        """``release`` with the ``aggregate_qi`` columns replaced by their classes' aggregates
        of ``frame``'s values (its records in the release's order), or as it is."""
        if not self.aggregate_qi:
            return release
        from anonlab.generalize_aggregate import aggregate_classes

        qis = [c for c in self.hierarchies_given_ if c in release.columns]
        original = frame.reset_index(drop=True)
        if len(original) != len(release):  # a research subset was released
            raise AnonlabError(
                "aggregate_qi with a model that releases a research subset is not supported "
                "from Python yet: use the generalize run",
                parameter="aggregate_qi",
            )
        return aggregate_classes(
            release, original, qis, self.aggregate_qi, missing=self.aggregate_missing
        )

    def transform(self, frame: FrameLike) -> FrameLike:
        """Apply the fitted transformation to another table with the same schema.

        Every criterion is re-checked on it (:func:`apply_levels`). The release
        keeps ``frame``'s index.
        """
        if self.recoding in ("mondrian", "local"):
            raise AnonlabError(
                f"a {self.recoding} recoding belongs to the table it was fitted on: call "
                "fit_transform() on the other table"
            )
        if not hasattr(self, "transformation_"):
            raise AnonlabError("the Generalizer is not fitted: call fit() first")
        with _frame_engine(frame, self.engine) as engine:
            applied = apply_levels(
                frame,
                self.hierarchies_,
                self.transformation_,
                self.criteria_,
                self.suppression,
                roles=self.roles_,
                metric=self.metric,
                engine=engine,
                **self._metric_options(),
            )
        if applied.release is not None and self.aggregate_qi:
            return _release_of(frame, self._aggregated(applied.release, frame), None)
        return _release_of(frame, applied.release, applied.plan)


def _release_of(frame: Any, release: pd.DataFrame | None, plan: ReleasePlan | None) -> Any:
    """The release for the caller: ``frame``'s index on a pandas release (all rows, in order,
    unless a research subset was released), or a Dask DataFrame's lazy release."""
    if release is None:  # counted on an engine: the plan applied to the caller's table
        from anonlab.frames import is_dask_frame
        from anonlab.lattice.pieces import lazy_release, release_partition

        counted = present(plan, "the release plan")
        return (
            lazy_release(frame, counted)
            if is_dask_frame(frame)
            else release_partition(frame, counted)
        )
    index = frame.index if len(release) == len(frame) else pd.RangeIndex(len(release))
    return release.set_axis(index, axis=0)


class _NoEngine:
    """The context of a pandas frame: no engine."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _OwnedEngine:
    """An engine opened for one call and closed after it."""

    def __init__(self, engine: Engine, owned: bool) -> None:
        self.engine = engine
        self.owned = owned

    def __enter__(self) -> Engine:
        return self.engine

    def __exit__(self, *exc: object) -> None:
        if self.owned:
            self.engine.close()


def _frame_engine(frame: Any, engine: Engine | None) -> _NoEngine | _OwnedEngine:
    """The engine a table is counted on: none for a pandas frame (unless one is given);
    for a Dask DataFrame the given one, else a Dask engine on the client in use, else on a
    local cluster started for the call."""
    from anonlab.frames import is_dask_frame

    if engine is not None:
        return _OwnedEngine(engine, owned=False)
    if not is_dask_frame(frame):
        return _NoEngine()
    from anonlab.engine import open_engine

    try:
        import distributed

        current: Any = distributed.default_client
        address: str | None = str(current().scheduler.address)
    except (ImportError, ValueError):
        address = None
    return _OwnedEngine(open_engine("dask", scheduler=address), owned=True)


@dataclass
class AppliedTransformation:
    """A known transformation applied to a table: the release and what the model gives."""

    release: pd.DataFrame | None
    suppressed_records: int
    criteria: list[dict[str, Any]]
    dataset: Dataset
    plan: ReleasePlan | None = None


def apply_levels(
    frame: FrameLike,
    hierarchies: Mapping[str, Hierarchy | PathLike],
    transformation: Mapping[str, int],
    criteria: Iterable[CriterionLike] | None,
    suppression: float,
    *,
    k: int | None = None,
    roles: Roles = NO_ROLES,
    metric: str = "precision",
    gs_factor: float = DEFAULT_GS_FACTOR,
    aggregate: str | None = None,
    weights: Mapping[str, float] | None = None,
    practical_monotonicity: bool = False,
    read_options: Mapping[str, Any] | None = None,
    engine: Engine | None = None,
    progress: ProgressFn | None = None,
    min_levels: Mapping[str, int] | None = None,
    max_levels: Mapping[str, int] | None = None,
    targets: Sequence[str] | None = None,
    static_loss: Mapping[str, Sequence[float]] | None = None,
) -> AppliedTransformation:
    """Apply known levels to a table and re-check every criterion with the suppression limit.

    The classes are judged as in the search (the same outliers, the same
    order in which a risk threshold suppresses classes, which depends on the
    metric and its options); the table is refused if the model does not hold
    at these levels (too many records to suppress, or a population class
    that fails delta-presence). With an ``engine`` the table's rows stay
    there (the engine's base frequency set is checked, ``progress`` called
    as it is counted): ``release`` is ``None`` and ``plan`` says how to
    write it. A level below its ``min_levels`` or above its ``max_levels``
    entry is refused (:func:`check_within_bounds`).
    """
    missing = [c for c in transformation if c not in hierarchies]
    if missing:
        raise AnonlabError(f"no hierarchy for quasi-identifier '{missing[0]}': give one")
    check_within_bounds(transformation, min_levels, max_levels)
    model = resolve_criteria(criteria, k)
    dataset = model_dataset(
        frame,
        {c: hierarchies[c] for c in transformation},
        model,
        roles=roles,
        read_options=read_options,
        engine=engine,
        progress=progress,
    )
    levels = []
    for q in dataset.qis:
        lv = int(transformation[q.name])
        if not 0 <= lv <= q.height:
            raise AnonlabError(
                f"level {lv} of '{q.name}' is outside its hierarchy (height {q.height}): "
                "use the hierarchy the transformation was found with"
            )
        levels.append(lv)
    setup = _setup(
        dataset,
        model,
        suppression,
        metric,
        gs_factor=gs_factor,
        aggregate=aggregate,
        weights=weights,
        practical_monotonicity=practical_monotonicity,
        cache_size=2,
        progress=None,
        targets=targets,
        static_loss=static_loss,
    )
    fs, classes, acceptable = _node(setup, levels)
    if not acceptable:
        raise AnonlabError(_refusal(model, classes, setup.limit))
    release, plan = _release_or_plan(setup, dataset, levels, fs, classes.outliers)
    return AppliedTransformation(
        release, int(classes.suppressed), criteria_report(model, classes), dataset, plan
    )


def _refusal(model: Sequence[Criterion], classes: Any, limit: int) -> str:
    """Why a table fails the model at the given levels."""
    names = ", ".join(describe(c)["model"] for c in model)
    if classes.suppressed > limit:
        if len(model) == 1 and isinstance(model[0], KAnonymity):
            return (
                f"the table is not {model[0].k}-anonymous at this transformation: "
                f"{classes.suppressed} records would be suppressed but the limit allows "
                f"{limit}: generalize this table to find its own transformation"
            )
        return (
            f"the privacy model ({names}) does not hold at this transformation: "
            f"{classes.suppressed} records would be suppressed but the limit allows {limit}: "
            "generalize this table to find its own transformation"
        )
    return (
        f"the privacy model ({names}) does not hold at this transformation (a class that "
        "cannot be suppressed fails it): generalize this table to find its own "
        "transformation"
    )


def apply_transformation(
    frame: FrameLike,
    hierarchies: Mapping[str, Hierarchy | PathLike],
    transformation: Mapping[str, int],
    k: int | None,
    suppression: float,
    *,
    identifying: Iterable[str] = (),
    sensitive: Iterable[str] = (),
    insensitive: Iterable[str] = (),
    other: str | None = None,
    criteria: Iterable[CriterionLike] | None = None,
    metric: str = "precision",
    gs_factor: float = DEFAULT_GS_FACTOR,
    aggregate: str | None = None,
    weights: Mapping[str, float] | None = None,
    engine: Engine | None = None,
) -> tuple[FrameLike, int]:
    """Apply known levels to a table and re-check the privacy model with the suppression limit.

    The model is ``criteria`` with ``k`` as a k-anonymity shorthand (as in
    :func:`anonymize`). Every column needs a role, as in
    :meth:`Generalizer.fit`. Returns the release and the number of suppressed
    records; fails if the model does not hold at these levels
    (:func:`apply_levels`). A ``dask.dataframe.DataFrame`` is taken as in
    :class:`Generalizer`: ``engine`` (by default a Dask engine on the client
    in use, else on a local cluster started for the call) counts it, and the
    release is a lazy Dask DataFrame; a pandas frame with an ``engine`` is
    counted there and released as a pandas frame.
    """
    with _frame_engine(frame, engine) as on:
        applied = apply_levels(
            frame,
            hierarchies,
            transformation,
            criteria,
            suppression,
            k=k,
            roles=Roles.of(identifying, sensitive, insensitive, other),
            metric=metric,
            gs_factor=gs_factor,
            aggregate=aggregate,
            weights=weights,
            engine=on,
        )
    if applied.release is not None:
        return applied.release, applied.suppressed_records
    return _release_of(frame, None, applied.plan), applied.suppressed_records
