"""Quality models (information-loss metrics) of the generalization search, as ARX 3.9 defines them.

Each metric gives a node's ``value`` (lower is better; ARX's
``getHighestScore()`` at that node), a ``lower_bound`` that holds for the node
*and every generalization of it* (the search prunes with it when the metric
is not monotone), optional data-free ``level_bounds`` for the whole lattice,
and ARX's monotonicity declaration. Multi-dimensional metrics (``loss``,
``precision``, ``precision_with_suppression``, ``height``, ``entropy``,
``entropy_with_suppression``, ``normalized_entropy``) also report one value per
quasi-identifier and take an aggregate function and attribute weights.
"""

from anonlab.lattice.metrics.base import (
    LossContext,
    LossValue,
    Metric,
    NodeClasses,
    java_str,
    loss_text,
)
from anonlab.lattice.metrics.classification import Classification
from anonlab.lattice.metrics.entropy_loss import EntropyInformationLoss
from anonlab.lattice.metrics.multidim import (
    AGGREGATES,
    Height,
    LossMetric,
    MultiDimensionalMetric,
    NonUniformEntropy,
    NonUniformEntropyWithSuppression,
    NormalizedEntropy,
    Precision,
    PrecisionWithSuppression,
    aggregate,
)
from anonlab.lattice.metrics.registry import METRICS, metric_by_name
from anonlab.lattice.metrics.single import (
    Ambiguity,
    AverageClassSize,
    Discernibility,
    DiscernibilityWithSuppression,
    KLDivergence,
)
from anonlab.lattice.metrics.static import StaticLoss

__all__ = [
    "AGGREGATES",
    "METRICS",
    "Ambiguity",
    "AverageClassSize",
    "Classification",
    "Discernibility",
    "DiscernibilityWithSuppression",
    "EntropyInformationLoss",
    "Height",
    "KLDivergence",
    "LossContext",
    "LossMetric",
    "LossValue",
    "Metric",
    "MultiDimensionalMetric",
    "NodeClasses",
    "NonUniformEntropy",
    "NonUniformEntropyWithSuppression",
    "NormalizedEntropy",
    "Precision",
    "PrecisionWithSuppression",
    "StaticLoss",
    "aggregate",
    "java_str",
    "loss_text",
    "metric_by_name",
]
