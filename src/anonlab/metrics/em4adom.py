"""Every EM4ADOM measure of an original/masked pair in memory (docs/formulas.md §2).

Works on any pair with the same records in the same order, so other tools'
outputs can be scored. Numeric columns give ILh, IL1, IL2, IL3, ILs, IL and
ID; nominal/ordinal columns give ZIL and ILR; DLD uses all of them. The report
keys are documented in docs/em4adom.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.encoding import extreme_magnitude, scale_exponent
from anonlab.errors import AnonlabError
from anonlab.metrics import risk, utility
from anonlab.metrics.tradeoff import disclosure_risk, score
from anonlab.progress import ProgressFn
from anonlab.table import MicrodataTable

DEFAULT_INTERVAL_P: tuple[float, ...] = tuple(float(p) for p in range(1, 11))
STAGE_LOSS = "evaluate: information loss"


@dataclass
class Evaluation:
    """The measures of one original/masked pair and the parameters they used."""

    measures: dict[str, Any]
    parameters: dict[str, Any]
    records: int
    columns: list[str]
    nominal: list[str]
    ordinal: list[str]
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Report keys: records, columns, measures, measure_parameters, notes."""
        return {
            "records": self.records,
            "columns": self.columns,
            "nominal": self.nominal,
            "ordinal": self.ordinal,
            "measures": self.measures,
            "measure_parameters": self.parameters,
            "notes": self.notes,
        }


class MissingColumnError(AnonlabError):
    """A column the evaluation measures is in the original but not in the masked table.

    Typically a column the release dropped (an identifying one) that
    ``all-numeric`` picked in the original: the message names both fixes, the
    role ``identifying`` that leaves it out and ``columns`` that names the
    measured ones, each as the caller spells it (:meth:`for_flags`).
    """

    def __init__(self, column: str) -> None:
        self.column = column
        super().__init__(self._text(f"identifying=['{column}']", "columns"))

    def _text(self, leave_out: str, columns: str) -> str:
        return (
            f"column '{self.column}' of the original is missing from the masked table: "
            f"if the release dropped it, leave it out with {leave_out}, or name the "
            f"measured columns with {columns}"
        )

    def for_flags(self, flags: dict[str, str] | None = None) -> str:
        """The message with both fixes spelled as flags (``--identifying``, ``--columns``)."""
        spell = flags or {}
        return self._text(
            f"{spell.get('identifying', '--identifying')} {self.column}",
            spell.get("columns", "--columns"),
        )


def check_pair(original: pd.DataFrame, masked: pd.DataFrame, names: Sequence[str]) -> None:
    """Same number of records, and every evaluated column in both tables."""
    if original.shape[0] != masked.shape[0]:
        raise AnonlabError(
            f"the original has {original.shape[0]} rows but the masked table has "
            f"{masked.shape[0]}: give a masked table with the same records in the same order"
        )
    have = [str(c) for c in masked.columns]
    for name in names:
        if name not in have:
            raise MissingColumnError(name)


def parse_p_values(spec: str | Sequence[float] | float | None) -> tuple[float, ...]:
    """Interval sizes p (percent): ``"1-10"``, ``"5"``, ``"1,5,10"`` or numbers."""
    if spec is None:
        return DEFAULT_INTERVAL_P
    if isinstance(spec, int | float):
        values: list[float] = [float(spec)]
    elif isinstance(spec, str):
        text = spec.strip()
        try:
            if "-" in text.strip("-") and "," not in text:
                a, b = text.split("-", 1)
                values = [float(v) for v in range(int(a), int(b) + 1)]
            else:
                values = [float(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise AnonlabError(
                f"interval_p '{spec}' is not a percentage, a list (1,5,10) or a range (1-10)",
                parameter="interval_p",
            ) from None
    else:
        values = [float(v) for v in spec]
    if not values or any(not (0 < v <= 100) for v in values):
        raise AnonlabError(
            f"interval_p values must be percentages in (0, 100], got '{spec}'",
            parameter="interval_p",
        )
    return tuple(values)


@dataclass(frozen=True)
class Weights:
    """The checked weights lambda, tau, gamma and the interval sizes p of ID."""

    lam: tuple[float, ...]
    tau: tuple[float, ...]
    gamma: tuple[float, ...]
    p_values: tuple[float, ...]


def measure_pair(
    table: MicrodataTable,
    masked: MicrodataTable,
    weights: Weights,
    workers: int,
    progress: ProgressFn,
) -> Evaluation:
    """The measures of a checked pair (:func:`anonlab.metrics.evaluation.evaluate`)."""
    num = table.numeric_names
    n = table.n
    measures: dict[str, Any] = {}
    notes = _column_notes(table.frame, masked.frame)
    progress(STAGE_LOSS, 0, 1)
    z = zm = x = xm = np.zeros((n, 0))
    if num:
        x, xm = table.numeric.values, masked.numeric.values
        z, mean, std = table.standardized
        zm = (xm - mean) / std
        x, xm = _exactly_scaled(x, xm, mean, std)
        notes += _numeric_loss(x, xm, z, zm, weights.lam, measures)
    cats, cats_m = list(table.categorical), list(masked.categorical)
    if cats:
        z_il = utility.zil(cats, cats_m)
        measures.update(
            {
                "ZIL": z_il,
                "ZIL_percent": 100.0 * z_il / (n * len(cats)),
                "ILR": utility.ilr(cats, cats_m),
            }
        )
    progress(STAGE_LOSS, 1, 1)
    progress(risk.LINK_STEP, 0, n)
    if cats:
        link = risk.linkage_mixed(z, cats, zm, cats_m)
    else:
        link = risk.linkage_numeric(z, zm, workers=workers, progress=progress)
    progress(risk.LINK_STEP, n, n)
    measures["DLD"] = link.dld
    measures["DLD_expected"] = link.dld_expected
    if num:
        _disclosure(x, xm, weights, measures, progress)
    else:
        notes.append("no numeric column: ILh..IL, ID, DR and score need numeric attributes")
    return Evaluation(
        measures,
        report_parameters(weights, bool(cats)),
        n,
        num,
        table.nominal,
        table.ordinal,
        notes,
    )


def _exactly_scaled(
    x: NDArray[Any], xm: NDArray[Any], mean: NDArray[Any], std: NDArray[Any]
) -> tuple[NDArray[Any], NDArray[Any]]:
    """``x`` and ``xm`` with each column of extreme magnitude (numbers near 1e300, whose
    squares overflow, or near 1e-300, whose squares underflow) divided in both by the
    power of two at or above the original column's largest magnitude.

    Exact (a power of two only moves the exponents), and every measure taken on ``x``
    and ``xm`` (IL1 relative to S_j, IL2 and IL3 relative to the original's moments, ID's
    intervals in ranks or SDs) is the same on a column multiplied by a constant, so the
    measures are the unscaled table's without an infinite or a zero moment. Other
    columns are left as they are, to the bit.
    """
    extreme = np.array(
        [extreme_magnitude(float(m), float(s)) for m, s in zip(mean, std, strict=True)]
    )
    if not extreme.any():
        return x, xm
    exponents = np.zeros(x.shape[1], dtype=np.int64)
    for j in np.flatnonzero(extreme):
        exponents[j] = scale_exponent(float(np.max(np.abs(x[:, j]))))
    return np.ldexp(x, -exponents), np.ldexp(xm, -exponents)


def _column_notes(original: pd.DataFrame, masked: pd.DataFrame) -> list[str]:
    """A note when the two tables have different other columns."""
    only_original = [str(c) for c in original.columns if c not in set(masked.columns)]
    only_masked = [str(c) for c in masked.columns if c not in set(original.columns)]
    if only_original or only_masked:
        return [
            "the tables' other columns differ (not evaluated): "
            f"only in the original {only_original}, only in the masked {only_masked}"
        ]
    return []


def _numeric_loss(
    x: NDArray[Any],
    xm: NDArray[Any],
    z: NDArray[Any],
    zm: NDArray[Any],
    lam: tuple[float, ...],
    measures: dict[str, Any],
) -> list[str]:
    """ILh, IL1, IL2, IL3, ILs and IL into ``measures``; returns notes."""
    stats = utility.il_2_3(x, xm)
    il1 = utility.il_1(x, xm)
    ils = utility.il_s(lam, il1, stats.il2, stats.il3)
    ilh = utility.il_h(z, zm)
    measures.update(
        {
            "ILh": ilh,
            "IL1": il1,
            "IL2": stats.il2,
            "IL3": stats.il3,
            "ILs": ils,
            "IL": (ilh + ils) / 2,
        }
    )
    if stats.excluded_terms:
        return [
            f"{stats.excluded_terms} relative term(s) of IL2/IL3 had an original "
            "mean or covariance of 0 (up to rounding) and were left out of "
            "their average"
        ]
    return []


def _disclosure(
    x: NDArray[Any],
    xm: NDArray[Any],
    weights: Weights,
    measures: dict[str, Any],
    progress: ProgressFn,
) -> None:
    """ID for each p, its mean, DR and the score into ``measures``."""
    progress(risk.ID_STEP, 0, x.shape[1])
    values = risk.interval_disclosures(x, xm, weights.p_values, progress)
    each = {f"{p:g}": v for p, v in zip(weights.p_values, values, strict=True)}
    id_mean = float(np.mean(list(each.values())))
    measures["ID"] = id_mean
    measures["ID_by_p"] = each
    measures["DR"] = disclosure_risk(measures["DLD"], id_mean, weights.tau)
    measures["score"] = score(measures["IL"], measures["DR"], weights.gamma)


def report_parameters(weights: Weights, categorical: bool) -> dict[str, Any]:
    """The report's ``measure_parameters``."""
    return {
        "lambda": list(weights.lam),
        "tau": list(weights.tau),
        "gamma": list(weights.gamma),
        "interval_p": list(weights.p_values),
        "standardization": "z = (x - mean) / S_j, S_j the population standard deviation "
        "(ddof=0) of the original; IL1 divides by the sample standard "
        "deviation (ddof=1), as sdcMicro's IL1s",
        "distance": "Euclidean on standardized numeric values"
        + (" + 0/1 nominal + ordinal o_j, squared terms summed" if categorical else ""),
        "ties": "DLD: originals at one distance form a set (DS1, DS2); DLD_expected shares "
        "ties among two candidates",
    }
