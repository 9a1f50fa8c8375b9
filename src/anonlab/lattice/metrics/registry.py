"""The quality models by name, and their construction from settings."""

from __future__ import annotations

from collections.abc import Mapping

from anonlab.errors import AnonlabError
from anonlab.lattice.metrics.base import DEFAULT_GS_FACTOR, LossContext, Metric
from anonlab.lattice.metrics.multidim import (
    Height,
    LossMetric,
    NonUniformEntropy,
    NonUniformEntropyWithSuppression,
    NormalizedEntropy,
    Precision,
    PrecisionWithSuppression,
)
from anonlab.lattice.metrics.payout import PublisherPayout, PublisherPayoutJournalist
from anonlab.lattice.metrics.single import (
    Ambiguity,
    AverageClassSize,
    Discernibility,
    DiscernibilityWithSuppression,
    KLDivergence,
)

#: every metric by its name in settings and reports
METRICS: dict[str, type[Metric]] = {
    m.name: m
    for m in (LossMetric, Precision, PrecisionWithSuppression, Height, Discernibility,
              DiscernibilityWithSuppression, AverageClassSize, NonUniformEntropy,
              NonUniformEntropyWithSuppression, NormalizedEntropy, Ambiguity, KLDivergence)
}
#: ARX's publisher-payout metrics (they read the profitability models' cost-benefit figures)
METRICS.update({m.name: m for m in (PublisherPayout, PublisherPayoutJournalist)})


def metric_by_name(
    name: str,
    ctx: LossContext,
    *,
    gs_factor: float = DEFAULT_GS_FACTOR,
    aggregate: str | None = None,
    weights: Mapping[str, float] | None = None,
    allow_undefined: bool = False,
) -> Metric:
    """Instantiate a metric by its name.

    ``gs_factor`` (ARX's generalization/suppression factor, in [0, 1]) applies
    to the metrics that take one and must stay 0.5 for the others;
    ``aggregate`` (``None``: the metric's ARX default) and ``weights``
    (quasi-identifier -> weight >= 0, default 1) to the multi-dimensional
    metrics only. Errors name the parameter at fault. A metric ARX does not
    define on this data (:meth:`Metric.undefined_reason`, e.g.
    ``normalized_entropy`` with a single-valued quasi-identifier) is an error
    naming ``metric``, unless ``allow_undefined`` (for reports: its values are
    then ARX's NaN or infinity).
    """
    cls = METRICS.get(name)
    if cls is None:
        raise AnonlabError(f"metric '{name}' is unknown: choose one of {', '.join(METRICS)}",
                           parameter="metric")
    reason = None if allow_undefined else cls.undefined_reason(ctx)
    if reason is not None:
        raise AnonlabError(reason, parameter="metric")
    return cls(ctx, gs_factor=gs_factor, aggregate=aggregate, weights=weights)
