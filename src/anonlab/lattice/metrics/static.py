"""ARX's static metric (``MetricMDStatic``): information loss the user states per level.

The user gives, for every quasi-identifier, one number per level of its
hierarchy (level 0 first), never decreasing from a level to the next; a
node's per-attribute values are the numbers at its levels, reduced by the
aggregate function (ARX's default: sum) with the attribute weights. It
ignores the data, so it is monotone with and without suppression, and its
value is its own bound. See docs/formulas.md §5.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.lattice.metrics.base import DEFAULT_GS_FACTOR, LossContext, NodeClasses
from anonlab.lattice.metrics.multidim import LevelTableMetric


class StaticLoss(LevelTableMetric):
    """ARX's static metric (``MetricMDStatic``, ``Metric.createStaticMetric``).

    ``static_loss`` maps each quasi-identifier to its loss at each level
    (``height + 1`` finite numbers, non-decreasing); default aggregate sum.
    """

    name = "static"
    default_aggregate = "sum"
    monotone_with_generalization = True
    monotone_with_suppression = True
    options: ClassVar[tuple[str, ...]] = ("static_loss",)

    def __init__(
        self,
        ctx: LossContext,
        *,
        gs_factor: float = DEFAULT_GS_FACTOR,
        aggregate: str | None = None,
        weights: Mapping[str, float] | None = None,
        static_loss: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        super().__init__(ctx, gs_factor=gs_factor, aggregate=aggregate, weights=weights)
        self.static_loss = check_static_loss(ctx, static_loss)

    def level_table(self, dim: int) -> NDArray[Any]:
        """The user's numbers for quasi-identifier ``dim``."""
        return np.array(self.static_loss[self.ctx.names[dim]], dtype=np.float64)

    def vector(self, node: NodeClasses) -> list[float]:
        """The numbers at the node's levels."""
        return self.bound_vector(node)


def check_static_loss(
    ctx: LossContext, static_loss: Mapping[str, Sequence[float]] | None
) -> dict[str, list[float]]:
    """The per-level losses, checked as ARX's ``initializeInternal`` does; errors name
    ``static_loss``.

    Every quasi-identifier needs ``height + 1`` finite numbers that never
    decrease; a column that is not a quasi-identifier is refused (ARX ignores
    it).
    """
    given = dict(static_loss or {})
    missing = [name for name in ctx.names if name not in given]
    if missing:
        raise AnonlabError(
            f"metric 'static' needs static_loss for every quasi-identifier; "
            f"missing: {', '.join(missing)} (give one number per level, level 0 "
            "first)",
            parameter="static_loss",
        )
    unknown = [str(name) for name in given if name not in ctx.names]
    if unknown:
        raise AnonlabError(
            f"static_loss names '{unknown[0]}', which is not a quasi-identifier "
            f"(quasi-identifiers: {', '.join(ctx.names)})",
            parameter="static_loss",
        )
    out: dict[str, list[float]] = {}
    for name, q in zip(ctx.names, ctx.qis, strict=True):
        raw = given[name]
        if isinstance(raw, str | bytes) or not isinstance(raw, Sequence):
            raise AnonlabError(
                f"static_loss of '{name}' must be a list of numbers, one per level (got {raw!r})",
                parameter="static_loss",
            )
        values = []
        for item in raw:
            if isinstance(item, bool):
                raise AnonlabError(
                    f"static_loss of '{name}' must hold numbers (got {item!r})",
                    parameter="static_loss",
                )
            try:
                number = float(item)
            except (TypeError, ValueError):
                raise AnonlabError(
                    f"static_loss of '{name}' must hold numbers (got {item!r})",
                    parameter="static_loss",
                ) from None
            if not math.isfinite(number):
                raise AnonlabError(
                    f"static_loss of '{name}' must hold finite numbers (got {number})",
                    parameter="static_loss",
                )
            values.append(number)
        if len(values) != q.height + 1:
            raise AnonlabError(
                f"static_loss of '{name}' has {len(values)} number(s), but its "
                f"hierarchy has {q.height + 1} levels: give one per level, "
                "level 0 first",
                parameter="static_loss",
            )
        for level in range(1, len(values)):
            if values[level] < values[level - 1]:
                raise AnonlabError(
                    f"static_loss of '{name}' decreases from level {level - 1} "
                    f"({values[level - 1]:g}) to level {level} "
                    f"({values[level]:g}): a higher level must lose at least as "
                    "much",
                    parameter="static_loss",
                )
        out[name] = values
    return out
