"""``evaluate``: every EM4ADOM measure of an original/masked pair (NOTES §2).

Works on any pair with the same records in the same order, so other tools'
outputs can be scored. Numeric columns give ILh, IL1, IL2, IL3, ILs, IL and
ID; nominal/ordinal columns give ZIL and ILR; DLD uses all of them. The report
keys are documented in docs/em4adom.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.metrics import risk, utility
from anonlab.metrics.tradeoff import DEFAULT_GAMMA, DEFAULT_TAU, disclosure_risk, score
from anonlab.microaggregation.columns import (
    check_present,
    numeric_matrix,
    select_columns,
    standardize,
)
from anonlab.microaggregation.mixed import encode_all, encode_like
from anonlab.settings import split_names

DEFAULT_INTERVAL_P: tuple[float, ...] = tuple(float(p) for p in range(1, 11))


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
            raise AnonlabError(
                f"column '{name}' of the original is missing from the masked table: both "
                "tables need the same evaluated columns"
            )


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
                f"--p '{spec}' is not a percentage, a list (1,5,10) or a range (1-10)"
            ) from None
    else:
        values = [float(v) for v in spec]
    if not values or any(not (0 < v <= 100) for v in values):
        raise AnonlabError(f"--p values must be percentages in (0, 100], got '{spec}'")
    return tuple(values)


def evaluate(
    original: pd.DataFrame,
    masked: pd.DataFrame,
    columns: str | Sequence[str] | None = "all-numeric",
    *,
    nominal: str | Sequence[str] | None = None,
    ordinal: str | Sequence[str] | None = None,
    orders: Mapping[str, Sequence[str]] | None = None,
    lambdas: Sequence[float] = utility.DEFAULT_LAMBDA,
    tau: Sequence[float] = DEFAULT_TAU,
    gamma: Sequence[float] = DEFAULT_GAMMA,
    interval_p: str | Sequence[float] | float | None = None,
    workers: int = 1,
) -> Evaluation:
    """All EM4ADOM measures of ``masked`` against ``original`` (NOTES §2).

    ``columns`` are the numeric attributes (``all-numeric`` leaves out the
    ``nominal``/``ordinal`` ones; ``None`` or ``[]`` with categorical columns
    given means none); ``orders`` gives an ordinal column's values in order.
    """
    lam = utility.weights(lambdas, "lambda", 3)
    tau_w = utility.weights(tau, "tau", 2)
    gam = utility.weights(gamma, "gamma", 2)
    p_values = parse_p_values(interval_p)
    if isinstance(workers, bool) or not isinstance(workers, int) or not (
            workers == -1 or workers >= 1):
        raise AnonlabError(f"--workers must be -1 (every CPU) or at least 1, got {workers}")
    if original.shape[0] == 0:
        raise AnonlabError("the original has no records: give at least one record")
    nom, ordl = split_names(nominal), split_names(ordinal)
    check_present(original, [*nom, *ordl], "original")
    if columns is None and (nom or ordl):
        num: list[str] = []
    else:
        num = select_columns(original, columns, exclude=[*nom, *ordl])
    overlap = sorted(set(num) & set(nom + ordl))
    if overlap:
        raise AnonlabError(f"column '{overlap[0]}' is named both numeric and categorical: "
                           "give each column one type")
    if not num and not nom and not ordl:
        raise AnonlabError("no column to evaluate: give --columns, --nominal or --ordinal")
    check_pair(original, masked, [*num, *nom, *ordl])
    n = original.shape[0]
    measures: dict[str, Any] = {}
    notes: list[str] = []
    only_original = [str(c) for c in original.columns if c not in set(masked.columns)]
    only_masked = [str(c) for c in masked.columns if c not in set(original.columns)]
    if only_original or only_masked:
        notes.append("the tables' other columns differ (not evaluated): "
                     f"only in the original {only_original}, only in the masked {only_masked}")
    z = zm = np.zeros((n, 0))
    x = xm = np.zeros((n, 0))
    if num:
        x = numeric_matrix(original, num, "original")
        xm = numeric_matrix(masked, num, "masked table")
        z, mean, std = standardize(x, num, "original")
        zm = (xm - mean) / std
        stats = utility.il_2_3(x, xm)
        il1 = utility.il_1(x, xm)
        ils = utility.il_s(lam, il1, stats.il2, stats.il3)
        ilh = utility.il_h(z, zm)
        measures.update({"ILh": ilh, "IL1": il1, "IL2": stats.il2, "IL3": stats.il3,
                         "ILs": ils, "IL": (ilh + ils) / 2})
        if stats.excluded_terms:
            notes.append(f"{stats.excluded_terms} relative term(s) of IL2/IL3 had an original "
                         "mean or covariance of 0 (up to rounding) and were left out of "
                         "their average")
    cats = encode_all(original, nom, ordl, orders, "original")
    cats_m = [encode_like(c, masked) for c in cats]
    if cats:
        z_il = utility.zil(cats, cats_m)
        measures.update({"ZIL": z_il, "ZIL_percent": 100.0 * z_il / (n * len(cats)),
                         "ILR": utility.ilr(cats, cats_m)})
    if cats:
        link = risk.linkage_mixed(z, cats, zm, cats_m)
    else:
        link = risk.linkage_numeric(z, zm, workers=workers)
    measures["DLD"] = link.dld
    measures["DLD_expected"] = link.dld_expected
    if num:
        id_mean, id_each = risk.interval_disclosure_mean(x, xm, p_values)
        measures["ID"] = id_mean
        measures["ID_by_p"] = id_each
        measures["DR"] = disclosure_risk(link.dld, id_mean, tau_w)
        measures["score"] = score(measures["IL"], measures["DR"], gam)
    else:
        notes.append("no numeric column: ILh..IL, ID, DR and score need numeric attributes")
    parameters = {
        "lambda": list(lam),
        "tau": list(tau_w),
        "gamma": list(gam),
        "interval_p": list(p_values),
        "standardization": "z = (x - mean) / S_j, S_j the population standard deviation "
                           "(ddof=0) of the original; IL1 divides by the sample standard "
                           "deviation (ddof=1), as sdcMicro's IL1s",
        "distance": "Euclidean on standardized numeric values"
                    + (" + 0/1 nominal + ordinal o_j, squared terms summed" if cats else ""),
        "ties": "DLD: originals at one distance form a set (DS1, DS2); DLD_expected shares "
                "ties among two candidates",
    }
    return Evaluation(measures, parameters, n, num, nom, ordl, notes)
