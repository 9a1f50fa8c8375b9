"""An independent check of ARX 3.9's four profitability models on a release's classes.

Written from ARX's definitions (``criteria.Profitability*``,
``risk.RiskModelCostBenefit``, ``MetricSDNMEntropyBasedInformationLoss``),
apart from :mod:`anonlab.privacy.profitability`: it reads the released
classes' labels, the hierarchies and the transformation, and judges each
released class.

* no-attack models: an attack on a record of a class of ``s`` records (the
  population's class for the journalist) gains ``gain / s`` and costs
  ``cost``; it must not pay, ``gain / s < cost``: ``s`` at least the smallest
  whole number above ``gain / cost`` (1 without gain, no size when an attack
  costs nothing).
* attack models: the class's entropy-based information loss is ``1 +
  log10(product of its labels' domain shares) / log10(product of the
  hierarchies' sizes)`` (a label's domain share: the hierarchy rows under it
  over all rows; clipped to ``[0, 1]``, 0 when there is no information). With
  success probability ``p = 1 / size`` (journalist: the population class's
  size) the publisher's payout per record is ``benefit (1 - IL)``, less
  ``loss * p`` when ``gain * p > cost``; it must be positive.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.hierarchy import Hierarchy

#: the models this module checks
PROFITABILITY = (
    "profitability-prosecutor",
    "profitability-prosecutor-no-attack",
    "profitability-journalist",
    "profitability-journalist-no-attack",
)
#: ARX's cost-benefit defaults (``ARXCostBenefitConfiguration``)
DEFAULTS = {
    "publisher_benefit": 1200.0,
    "publisher_loss": 300.0,
    "adversary_gain": 300.0,
    "adversary_cost": 4.0,
}
#: slack in favour of the release on the payout's sign (rounding of another summation order)
TOL = 1e-9


def figures(spec: Mapping[str, Any]) -> dict[str, float]:
    """The model's cost-benefit figures, ARX's defaults where the report gives none."""
    return {
        key: float(spec[key]) if spec.get(key) is not None else value
        for key, value in DEFAULTS.items()
    }


def smallest_safe_size(gain: float, cost: float) -> float:
    """The fewest records a class needs so that ``gain / size < cost`` (an attack loses
    money): ``floor(gain / cost) + 1``; 1 when nothing is gained; infinite when attacking
    costs nothing."""
    if gain == 0.0:
        return 1.0
    if cost == 0.0:
        return math.inf
    return float(math.floor(gain / cost) + 1)


def _share_of(hierarchy: Hierarchy, level: int) -> dict[str, float]:
    """Each label of ``level``: the hierarchy's rows under it over all its rows."""
    rows = hierarchy.rows
    counted = Counter(row[level] for row in rows)
    return {label: count / len(rows) for label, count in counted.items()}


def information_loss(
    labels: Mapping[str, Sequence[str]],
    hierarchies: Mapping[str, Hierarchy],
    levels: Mapping[str, int],
) -> NDArray[Any]:
    """Each class's entropy-based information loss from its labels (column -> one label per
    class), the hierarchies and the transformation's levels."""
    columns = list(labels)
    n = len(labels[columns[0]]) if columns else 0
    top = 1.0
    for col in columns:
        top *= float(len(hierarchies[col].rows))
    if not top > 0.0 or not math.isfinite(top) or top == 1.0:
        return np.zeros(n)
    product = np.ones(n)
    for col in columns:
        share = _share_of(hierarchies[col], int(levels[col]))
        product = product * np.array([share.get(str(v), math.nan) for v in labels[col]])
    loss = np.log10(product) / math.log10(top) + 1.0
    return np.asarray(np.clip(loss, 0.0, 1.0))


def failing_classes(
    spec: Mapping[str, Any],
    sizes: NDArray[Any],
    population: NDArray[Any] | None,
    labels: Mapping[str, Sequence[str]] | None,
    hierarchies: Mapping[str, Hierarchy] | None,
    levels: Mapping[str, int] | None,
) -> tuple[NDArray[Any] | None, str, str]:
    """The released classes a profitability model fails (``None`` and a finding when what
    it needs is missing), the reason, and a finding of the whole model."""
    model = str(spec["model"])
    money = figures(spec)
    journalist = model.startswith("profitability-journalist")
    if journalist and population is None:
        return None, "", "the research subset's population is not available to the checker"
    sizes = np.asarray(sizes, dtype=np.float64)
    judged = (
        np.where(np.asarray(population) > 0, population, sizes).astype(np.float64)
        if journalist and population is not None
        else sizes
    )
    if model.endswith("no-attack"):
        need = smallest_safe_size(money["adversary_gain"], money["adversary_cost"])
        where = "in the population " if journalist else ""
        return (
            np.asarray(judged < need),
            f"fewer than the {need:g} records {where}from which an attack does not pay",
            "",
        )
    if labels is None or hierarchies is None or levels is None:
        return None, "", "the hierarchies and transformation are not available to the checker"
    loss = information_loss(labels, hierarchies, levels)
    success = 1.0 / judged
    attacked = money["adversary_gain"] * success - money["adversary_cost"] > 0.0
    payout = money["publisher_benefit"] * (1.0 - loss) - np.where(
        attacked, money["publisher_loss"] * success, 0.0
    )
    slack = TOL * max(money["publisher_benefit"], money["publisher_loss"], 1.0)
    return (
        np.asarray(~(payout > -slack)),
        "a publisher payout per record that is not positive (publishing it does not pay)",
        "",
    )
