"""One measurement of a table's re-identification risk: the report's ``risk`` section.

:func:`measure_risk` groups the records that are not suppressed into
equivalence classes on the attacker's columns (once; see
:mod:`anonlab.risk.classes`) and computes from the classes every figure the
section holds: ARX's prosecutor, journalist and marketer risk
(:mod:`~anonlab.risk.reidentification`), sample and population uniques
(:mod:`~anonlab.risk.population`), sdcMicro's individual and global risk
(:mod:`~anonlab.risk.individual`) and SUDA2 (:mod:`~anonlab.risk.suda`), and
what each sensitive attribute gives away (:mod:`~anonlab.risk.sensitive`).
:func:`risk_warnings` reads the section back and says what should stop a
release.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from anonlab.dataset import Role
from anonlab.errors import AnonlabError, ReleaseRiskWarning
from anonlab.hierarchy import Hierarchy
from anonlab.risk.classes import (
    Array,
    Classes,
    check_columns,
    equivalence_classes,
    size_distribution,
    table_roles,
)
from anonlab.risk.individual import global_risk, sampling_weights
from anonlab.risk.population import population_uniques
from anonlab.risk.reidentification import journalist_risk, marketer_risk, prosecutor_risk
from anonlab.risk.sensitive import ClassValues, class_values, value_figures
from anonlab.risk.suda import suda2_summary
from anonlab.table import MicrodataTable

if TYPE_CHECKING:
    from anonlab.engine.base import Engine

DEFAULT_THRESHOLDS = (0.2, 0.1, 0.05)
DEFAULT_MAX_RISK = 0.2

HierarchySource = Hierarchy | str | os.PathLike[str]


def _check_thresholds(thresholds: Sequence[float]) -> list[float]:
    """Thresholds as floats in ``(0, 1]``, duplicates dropped, order kept."""
    out: list[float] = []
    for t in thresholds:
        value = float(t)
        if not math.isfinite(value) or not 0.0 < value <= 1.0:
            raise AnonlabError(
                f"thresholds must lie in (0, 1] (got {t}): e.g. 0.09 for a 9 % risk",
                parameter="thresholds",
            )
        if value not in out:
            out.append(value)
    return out


def _check_roles(
    frame: pd.DataFrame | Sequence[str],
    attacker_columns: Sequence[str],
    sensitive: Sequence[str],
    weights: str | None,
) -> None:
    """Attacker, sensitive and weights columns exist and do not overlap."""
    if not attacker_columns:
        raise AnonlabError(
            "attacker_columns is empty: name the columns an attacker may know",
            parameter="attacker_columns",
        )
    check_columns(frame, attacker_columns, "attacker_columns")
    check_columns(frame, sensitive, "sensitive")
    both = [c for c in sensitive if c in attacker_columns]
    if both:
        raise AnonlabError(
            f"sensitive columns {', '.join(both)} are also attacker columns: a "
            "column is either known to the attacker or sensitive",
            parameter="sensitive",
        )
    if weights is not None:
        check_columns(frame, [weights], "weights")
        if weights in attacker_columns or weights in sensitive:
            raise AnonlabError(
                f"weights column '{weights}' is also an attacker or sensitive "
                "column: give the sampling weights their own column",
                parameter="weights",
            )


def _population(
    n_rows: int,
    records: int,
    total_weight: float | None,
    population_size: float | None,
    sampling_fraction: float | None,
) -> tuple[float, str] | None:
    """The population size the models use and where it came from (``None``: no population).

    From ``sampling_fraction`` ``F`` it is ``round(rows / F)``, as ARX's
    ``ARXPopulationModel.create(sampleSize, F)``; without either it is the
    sum of the sampling weights (``total_weight``), when there are weights.
    """
    if population_size is not None and sampling_fraction is not None:
        raise AnonlabError(
            "population_size and sampling_fraction are both given: give one of them",
            parameter="population_size",
        )
    if population_size is not None:
        size = float(population_size)
        if not math.isfinite(size) or size < max(records, 1):
            raise AnonlabError(
                f"population_size must be at least the table's {records} records "
                f"(got {population_size})",
                parameter="population_size",
            )
        return size, "population_size"
    if sampling_fraction is not None:
        f = float(sampling_fraction)
        if not math.isfinite(f) or not 0.0 < f <= 1.0:
            raise AnonlabError(
                f"sampling_fraction must lie in (0, 1] (got {sampling_fraction}):"
                " e.g. 0.01 for a 1 % sample",
                parameter="sampling_fraction",
            )
        return float(round(n_rows / f)), "sampling_fraction"
    if total_weight is not None:
        return float(round(total_weight)), "weights"
    return None


def _load_hierarchies(
    hierarchies: Mapping[str, HierarchySource] | None, sensitive: Sequence[str]
) -> dict[str, Hierarchy]:
    """Hierarchies of sensitive attributes, read from files where paths are given."""
    out: dict[str, Hierarchy] = {}
    for column, source in (hierarchies or {}).items():
        if column not in sensitive:
            raise AnonlabError(
                f"hierarchies names '{column}', which is not a sensitive column: "
                "hierarchies here serve t-closeness of sensitive attributes",
                parameter="hierarchies",
            )
        out[column] = source if isinstance(source, Hierarchy) else Hierarchy.from_csv(source)
    return out


def _classes_section(classes: Classes) -> dict[str, Any]:
    """Class count, smallest class and the class-size distribution (``{size: classes}``)."""
    return {
        "count": classes.count,
        "smallest": int(classes.sizes.min()) if classes.count else 0,
        "sizes": {str(size): count for size, count in size_distribution(classes.sizes).items()},
    }


def _population_section(
    classes: Classes, population: tuple[float, str] | None
) -> dict[str, Any] | None:
    """Population uniques as shares of the population (ARX ``getFractionOfUniqueTuples``).

    ``None`` without a population, or when no record is left to measure.
    """
    if population is None or classes.records == 0:
        return None
    size, source = population
    counts = population_uniques(size_distribution(classes.sizes), size)
    section: dict[str, Any] = {}
    for name in ("pitman", "zayatz", "snb", "dankar"):
        value = counts[name]
        section[name] = None if value is None else float(value) / size
    section["dankar_model"] = counts["dankar_model"]
    section["sampling_fraction"] = classes.records / size
    section["population_size"] = size
    section["population_from"] = source
    return section


def measured_roles(
    data: pd.DataFrame | MicrodataTable,
    attacker_columns: Sequence[str] | None,
    sensitive: Sequence[str] | None,
) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The frame to measure, the attacker's columns and the sensitive ones.

    A :class:`~anonlab.table.MicrodataTable` gives the defaults: its
    quasi-identifiers and its sensitive columns; names given as well must
    have that role in it (:func:`anonlab.risk.classes.table_roles`). A
    DataFrame needs ``attacker_columns``; ``sensitive`` defaults to none.
    """
    if isinstance(data, MicrodataTable):
        return (
            data.frame,
            table_roles(data, attacker_columns, Role.QUASI, "attacker_columns"),
            table_roles(data, sensitive, Role.SENSITIVE, "sensitive"),
        )
    if attacker_columns is None:
        raise AnonlabError(
            "attacker_columns is not given: name the columns an attacker may "
            "know, or pass a MicrodataTable (its quasi-identifiers are the "
            "default)",
            parameter="attacker_columns",
        )
    return data, [str(c) for c in attacker_columns], [str(c) for c in sensitive or ()]


def measure_risk(
    frame: Any,
    attacker_columns: Sequence[str] | None = None,
    *,
    sensitive: Sequence[str] | None = None,
    weights: str | None = None,
    population_size: float | None = None,
    sampling_fraction: float | None = None,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    hierarchies: Mapping[str, HierarchySource] | None = None,
    suda_budget: int | None = None,
    engine: str | Engine | None = None,
) -> dict[str, Any]:
    """Measure the re-identification risk of ``frame`` for an attacker knowing ``attacker_columns``.

    ``frame`` is a DataFrame or a :class:`~anonlab.table.MicrodataTable`, or,
    measured by passes over its pieces, a Dask DataFrame, a path (a Parquet
    file, folder or glob, a CSV file) or an engine's
    :class:`~anonlab.engine.table.Table`. A
    table's roles give the defaults: ``attacker_columns`` are its
    quasi-identifiers and ``sensitive`` its sensitive columns; giving either
    as well is allowed when every name has that role in the table (some of
    them: an attacker who knows less), and a name the table gives another
    role is refused with an :class:`AnonlabError` naming the parameter. The
    figures are those of the table's frame with the same columns.

    ``engine`` says where the records are read: ``None`` or ``"numpy"`` in
    this process, a pandas table whole and anything else piece by piece;
    ``"dask"`` (a local cluster with Dask's defaults) or an opened
    :class:`~anonlab.engine.base.Engine` (:func:`anonlab.engine.open_engine`)
    by that engine's one pass, the base frequency set of the attacker's
    columns with per-class histograms of the sensitive ones
    (:mod:`anonlab.risk.pieces`). Every figure is the same double either
    way, except that with ``weights`` the engine sums them per class piece by
    piece, not record by record in one run: the weighted figures then agree to
    rounding (relative differences ``~1e-15``; the NumPy and Dask engines
    give the same bits from the same pieces).

    ``suda_budget`` bounds SUDA2's search (``"suda2": null`` past it; see
    :func:`anonlab.risk.suda.minimal_sample_uniques`); ``None`` is unbounded.

    ``sensitive`` columns get l-diversity and t-closeness figures
    (``t_hierarchical`` when ``hierarchies`` has the column's hierarchy, a
    :class:`~anonlab.hierarchy.Hierarchy` or the path of its CSV).
    ``weights`` names a column of sampling weights (sdcMicro's ``w``).
    ``population_size`` or ``sampling_fraction`` (or, failing both, the sum of
    the weights) makes the journalist risk population-based and adds the
    population-uniqueness models. A record whose attacker columns all hold
    ``*`` is suppressed: it is left out and only counted (``"suppressed"``).

    Returns the report's ``risk`` section; ``docs/risk.md`` defines each key.
    """
    if not _in_memory(frame, engine):
        return _measure_on_engine(
            frame,
            attacker_columns,
            sensitive=sensitive,
            weights=weights,
            population_size=population_size,
            sampling_fraction=sampling_fraction,
            thresholds=thresholds,
            hierarchies=hierarchies,
            suda_budget=suda_budget,
            engine=engine,
        )
    if not isinstance(frame, pd.DataFrame | MicrodataTable):
        from anonlab.io import read_table

        frame = read_table(frame)
    frame, attacker, sensitive_columns = measured_roles(frame, attacker_columns, sensitive)
    _check_roles(frame, attacker, sensitive_columns, weights)
    levels = _check_thresholds(thresholds)
    trees = _load_hierarchies(hierarchies, sensitive_columns)
    classes = equivalence_classes(frame, attacker, sensitive_columns)
    w = sampling_weights(frame, weights) if weights is not None else None
    population = _population(
        len(frame),
        classes.records,
        None if w is None else float(w.sum()),
        population_size,
        sampling_fraction,
    )
    pairs = {c: class_values(classes, c) if classes.count else None for c in sensitive_columns}
    return _section(
        classes,
        attacker,
        pairs,
        trees,
        levels,
        population,
        None if w is None else classes.class_sums(w),
        suda_budget,
    )


def _in_memory(frame: Any, engine: object) -> bool:
    """Whether ``frame`` is measured whole in this process (module text of measure_risk)."""
    if engine is None or engine == "numpy":
        return isinstance(frame, pd.DataFrame | MicrodataTable | str | os.PathLike)
    if isinstance(engine, str) and engine != "dask":
        from anonlab.engine import ENGINES

        raise AnonlabError(
            f"engine '{engine}' is unknown: choose one of {', '.join(ENGINES)}", parameter="engine"
        )
    return False


def _measure_on_engine(
    frame: Any,
    attacker_columns: Sequence[str] | None,
    *,
    sensitive: Sequence[str] | None,
    weights: str | None,
    population_size: float | None,
    sampling_fraction: float | None,
    thresholds: Sequence[float],
    hierarchies: Mapping[str, HierarchySource] | None,
    suda_budget: int | None,
    engine: str | Engine | None,
) -> dict[str, Any]:
    """:func:`measure_risk` from an engine's frequency set (:mod:`anonlab.risk.pieces`)."""
    from anonlab.engine import open_engine, open_table
    from anonlab.risk.pieces import risk_frequencies

    if isinstance(frame, MicrodataTable):
        source, attacker, sensitive_columns = measured_roles(frame, attacker_columns, sensitive)
        table = open_table(source)
    else:
        table = open_table(frame)
        _, attacker, sensitive_columns = measured_roles(pd.DataFrame(), attacker_columns, sensitive)
    _check_roles(list(table.column_names), attacker, sensitive_columns, weights)
    levels = _check_thresholds(thresholds)
    trees = _load_hierarchies(hierarchies, sensitive_columns)
    with ExitStack() as stack:
        if engine is None or isinstance(engine, str):
            engine = open_engine(engine or "numpy")
            stack.callback(engine.close)
        found = risk_frequencies(engine, table, attacker, sensitive_columns, weights=weights)
    classes = found.classes
    population = _population(
        found.rows, classes.records, found.total_weight, population_size, sampling_fraction
    )
    pairs: dict[str, ClassValues | None] = {
        c: found.sensitive[c] if classes.count else None for c in sensitive_columns
    }
    return _section(
        classes, attacker, pairs, trees, levels, population, found.class_weights, suda_budget
    )


def _section(
    classes: Classes,
    attacker: list[str],
    pairs: Mapping[str, ClassValues | None],
    trees: Mapping[str, Hierarchy],
    levels: list[float],
    population: tuple[float, str] | None,
    class_weights: Array | None,
    suda_budget: int | None,
) -> dict[str, Any]:
    """The ``risk`` section from the classes, each sensitive attribute's (class, value) pairs
    and each class's sum of sampling weights (``Fk``; ``None`` without weights)."""
    sizes = classes.sizes.astype(np.float64)
    if class_weights is not None:
        population_sizes, basis = class_weights, "weights"
    elif population is not None:
        population_sizes, basis = sizes * (population[0] / max(classes.records, 1)), population[1]
    else:
        population_sizes, basis = sizes, "sample"
    journalist = journalist_risk(sizes, population_sizes, levels)
    journalist["population"] = basis
    records = classes.records
    uniques = int((classes.sizes == 1).sum())
    return {
        "attacker_columns": attacker,
        "records": records,
        "suppressed": classes.suppressed,
        "classes": _classes_section(classes),
        "prosecutor": prosecutor_risk(classes.sizes, levels),
        "journalist": journalist,
        "marketer": {"average": marketer_risk(sizes, population_sizes)},
        "sample_uniques": uniques / records if records else 0.0,
        "population_uniques": _population_section(classes, population),
        "individual_risk": global_risk(classes, None, class_weights),
        "suda2": suda2_summary(classes, budget=suda_budget),
        "sensitive": {
            column: value_figures(cv, column, trees.get(column)) for column, cv in pairs.items()
        },
    }


def risk_warnings(section: Mapping[str, Any], max_risk: float = DEFAULT_MAX_RISK) -> list[str]:
    """What in a ``risk`` section should stop a release, one sentence each (empty: nothing).

    * the highest prosecutor risk is above ``max_risk``;
    * a record is unique on the attacker's columns;
    * a sensitive attribute has a class with a single value (distinct l = 1).
    """
    if not 0.0 < float(max_risk) <= 1.0:
        raise AnonlabError(f"max_risk must lie in (0, 1] (got {max_risk})", parameter="max_risk")
    out: list[str] = []
    columns = ", ".join(section.get("attacker_columns", []))
    highest = float(section.get("prosecutor", {}).get("highest", 0.0))
    if highest > max_risk:
        out.append(
            f"highest prosecutor re-identification risk is {highest:.4g}, above the "
            f"maximum {max_risk:g}, for an attacker who knows {columns}"
        )
    uniques = float(section.get("sample_uniques", 0.0)) * float(section.get("records", 0))
    if round(uniques) > 0:
        out.append(f"{round(uniques)} record(s) are unique on the attacker's columns ({columns})")
    for column, figures in (section.get("sensitive") or {}).items():
        if figures.get("distinct_l") is not None and float(figures["distinct_l"]) <= 1.0:
            classes = figures.get("single_value_classes")
            where = (
                f"{classes} class(es), {figures.get('single_value_records')} records,"
                if classes
                else "a class"
            )
            out.append(
                f"sensitive attribute '{column}': in {where} every record has the same "
                "value (distinct l = 1), so the attacker learns it"
            )
    return out


def warn_release_risk(section: Mapping[str, Any], max_risk: float = DEFAULT_MAX_RISK) -> list[str]:
    """Issue each of :func:`risk_warnings` as a :class:`~anonlab.errors.ReleaseRiskWarning`,
    at the caller's line (the first outside anonlab: :func:`anonlab.userwarn.warn_user`)."""
    from anonlab.userwarn import warn_user

    messages = risk_warnings(section, max_risk)
    for message in messages:
        warn_user(message, ReleaseRiskWarning)
    return messages
