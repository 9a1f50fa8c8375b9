"""The quality models by name, and their construction from settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from anonlab.errors import AnonlabError
from anonlab.lattice.metrics.base import DEFAULT_GS_FACTOR, LossContext, Metric
from anonlab.lattice.metrics.classification import Classification
from anonlab.lattice.metrics.entropy_loss import EntropyInformationLoss
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
from anonlab.lattice.metrics.static import StaticLoss

#: every metric by its name in settings and reports
METRICS: dict[str, type[Metric]] = {
    m.name: m
    for m in (
        LossMetric,
        Precision,
        PrecisionWithSuppression,
        Height,
        Discernibility,
        DiscernibilityWithSuppression,
        AverageClassSize,
        NonUniformEntropy,
        NonUniformEntropyWithSuppression,
        NormalizedEntropy,
        Ambiguity,
        KLDivergence,
        EntropyInformationLoss,
        Classification,
        StaticLoss,
    )
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
    targets: Sequence[str] | None = None,
    static_loss: Mapping[str, Sequence[float]] | None = None,
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
    then ARX's NaN or infinity). ``targets`` (the target columns) apply to
    ``classification`` only and ``static_loss`` (quasi-identifier -> loss per
    level) to ``static`` only; each of those two needs its own.
    """
    cls = METRICS.get(name)
    if cls is None:
        raise AnonlabError(
            f"metric '{name}' is unknown: choose one of {', '.join(METRICS)}", parameter="metric"
        )
    reason = None if allow_undefined else cls.undefined_reason(ctx)
    if reason is not None:
        raise AnonlabError(reason, parameter="metric")
    extra = metric_options(cls, targets=targets, static_loss=static_loss)
    return cls(ctx, gs_factor=gs_factor, aggregate=aggregate, weights=weights, **extra)


def metric_options(cls: type[Metric], **given: object) -> dict[str, object]:
    """The metric's own parameters (``Metric.options``: ``targets`` of ``classification``,
    ``static_loss`` of ``static``) among ``given``; one given to a metric that does not take it
    is an error naming it (an empty one counts as not given)."""
    for key, value in given.items():
        if value and key not in cls.options:
            takers = [name for name, c in METRICS.items() if key in c.options]
            raise AnonlabError(
                f"{key} applies to the metric {', '.join(takers)}, not to "
                f"'{cls.name}': leave it out or choose that metric",
                parameter=key,
            )
    return {key: given.get(key) for key in cls.options}
