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
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from anonlab.errors import AnonlabError, ReleaseRiskWarning
from anonlab.hierarchy import Hierarchy
from anonlab.risk.classes import (
    Array,
    Classes,
    check_columns,
    equivalence_classes,
    size_distribution,
)
from anonlab.risk.individual import global_risk, sampling_weights
from anonlab.risk.population import population_uniques
from anonlab.risk.reidentification import journalist_risk, marketer_risk, prosecutor_risk
from anonlab.risk.sensitive import sensitive_figures
from anonlab.risk.suda import suda2_summary

DEFAULT_THRESHOLDS = (0.2, 0.1, 0.05)
DEFAULT_MAX_RISK = 0.2

HierarchySource = Hierarchy | str | os.PathLike[str]


def _check_thresholds(thresholds: Sequence[float]) -> list[float]:
    """Thresholds as floats in ``(0, 1]``, duplicates dropped, order kept."""
    out: list[float] = []
    for t in thresholds:
        value = float(t)
        if not math.isfinite(value) or not 0.0 < value <= 1.0:
            raise AnonlabError(f"thresholds must lie in (0, 1] (got {t}): e.g. 0.09 for a 9 % "
                               "risk", parameter="thresholds")
        if value not in out:
            out.append(value)
    return out


def _check_roles(
    frame: pd.DataFrame, attacker_columns: Sequence[str], sensitive: Sequence[str],
    weights: str | None,
) -> None:
    """Attacker, sensitive and weights columns exist and do not overlap."""
    if not attacker_columns:
        raise AnonlabError("attacker_columns is empty: name the columns an attacker may know",
                           parameter="attacker_columns")
    check_columns(frame, attacker_columns, "attacker_columns")
    check_columns(frame, sensitive, "sensitive")
    both = [c for c in sensitive if c in attacker_columns]
    if both:
        raise AnonlabError(f"sensitive columns {', '.join(both)} are also attacker columns: a "
                           "column is either known to the attacker or sensitive",
                           parameter="sensitive")
    if weights is not None:
        check_columns(frame, [weights], "weights")
        if weights in attacker_columns or weights in sensitive:
            raise AnonlabError(f"weights column '{weights}' is also an attacker or sensitive "
                               "column: give the sampling weights their own column",
                               parameter="weights")


def _population(
    n_rows: int, records: int, weights: Array | None,
    population_size: float | None, sampling_fraction: float | None,
) -> tuple[float, str] | None:
    """The population size the models use and where it came from (``None``: no population).

    From ``sampling_fraction`` ``F`` it is ``round(rows / F)``, as ARX's
    ``ARXPopulationModel.create(sampleSize, F)``; without either it is the
    sum of the sampling weights, when there are weights.
    """
    if population_size is not None and sampling_fraction is not None:
        raise AnonlabError("population_size and sampling_fraction are both given: give one of "
                           "them", parameter="population_size")
    if population_size is not None:
        size = float(population_size)
        if not math.isfinite(size) or size < max(records, 1):
            raise AnonlabError(f"population_size must be at least the table's {records} records "
                               f"(got {population_size})", parameter="population_size")
        return size, "population_size"
    if sampling_fraction is not None:
        f = float(sampling_fraction)
        if not math.isfinite(f) or not 0.0 < f <= 1.0:
            raise AnonlabError(f"sampling_fraction must lie in (0, 1] (got {sampling_fraction}):"
                               " e.g. 0.01 for a 1 % sample", parameter="sampling_fraction")
        return float(round(n_rows / f)), "sampling_fraction"
    if weights is not None:
        return float(round(float(weights.sum()))), "weights"
    return None


def _load_hierarchies(
    hierarchies: Mapping[str, HierarchySource] | None, sensitive: Sequence[str]
) -> dict[str, Hierarchy]:
    """Hierarchies of sensitive attributes, read from files where paths are given."""
    out: dict[str, Hierarchy] = {}
    for column, source in (hierarchies or {}).items():
        if column not in sensitive:
            raise AnonlabError(f"hierarchies names '{column}', which is not a sensitive column: "
                               "hierarchies here serve t-closeness of sensitive attributes",
                               parameter="hierarchies")
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


def measure_risk(
    frame: pd.DataFrame,
    attacker_columns: Sequence[str],
    *,
    sensitive: Sequence[str] = (),
    weights: str | None = None,
    population_size: float | None = None,
    sampling_fraction: float | None = None,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    hierarchies: Mapping[str, HierarchySource] | None = None,
    suda_budget: int | None = None,
) -> dict[str, Any]:
    """Measure the re-identification risk of ``frame`` for an attacker knowing ``attacker_columns``.

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
    attacker = [str(c) for c in attacker_columns]
    sensitive_columns = [str(c) for c in sensitive]
    _check_roles(frame, attacker, sensitive_columns, weights)
    levels = _check_thresholds(thresholds)
    trees = _load_hierarchies(hierarchies, sensitive_columns)
    classes = equivalence_classes(frame, attacker, sensitive_columns)
    w = sampling_weights(frame, weights) if weights is not None else None
    population = _population(len(frame), classes.records, w, population_size, sampling_fraction)
    sizes = classes.sizes.astype(np.float64)
    if w is not None:
        population_sizes, basis = classes.class_sums(w), "weights"
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
        "individual_risk": global_risk(classes, w),
        "suda2": suda2_summary(classes, budget=suda_budget),
        "sensitive": {
            column: sensitive_figures(classes, column, trees.get(column))
            for column in sensitive_columns
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
        out.append(f"highest prosecutor re-identification risk is {highest:.4g}, above the "
                   f"maximum {max_risk:g}, for an attacker who knows {columns}")
    uniques = float(section.get("sample_uniques", 0.0)) * float(section.get("records", 0))
    if round(uniques) > 0:
        out.append(f"{round(uniques)} record(s) are unique on the attacker's columns ({columns})")
    for column, figures in (section.get("sensitive") or {}).items():
        if figures.get("distinct_l") is not None and float(figures["distinct_l"]) <= 1.0:
            classes = figures.get("single_value_classes")
            where = (f"{classes} class(es), {figures.get('single_value_records')} records,"
                     if classes else "a class")
            out.append(f"sensitive attribute '{column}': in {where} every record has the same "
                       "value (distinct l = 1), so the attacker learns it")
    return out


def warn_release_risk(
    section: Mapping[str, Any], max_risk: float = DEFAULT_MAX_RISK, stacklevel: int = 2
) -> list[str]:
    """Issue each of :func:`risk_warnings` as a :class:`~anonlab.errors.ReleaseRiskWarning`."""
    messages = risk_warnings(section, max_risk)
    for message in messages:
        warnings.warn(message, ReleaseRiskWarning, stacklevel=stacklevel + 1)
    return messages
