"""Prosecutor, journalist and marketer re-identification risk as ARX 3.9 defines them.

Source: ARX 3.9.2, ``org.deidentifier.arx.risk.RiskModelSampleSummary``
(methods ``getProsecutorRisk``, ``getJournalistRisk``, ``getMarketerRisk``);
the attacker models are those of El Emam and Dankar, "Protecting privacy using
k-anonymity", JAMIA 15(5), 2008.

For equivalence classes ``c`` with ``f_c`` records in the sample (the table)
and ``F_c`` records in the population, ``n = sum f_c`` records and ``C``
classes:

* prosecutor: a record's risk is ``1 / f_c``; highest ``1 / min f_c``,
  average ``C / n``; records at risk above ``t``: share of records with
  ``1 / f_c > t`` (strictly greater, as ARX compares);
* journalist: a record's risk is ``1 / F_c``; highest ``1 / min F_c``,
  average ``max(C / sum F_c, sum(f_c / F_c) / n)``; records at risk: share of
  records with ``1 / F_c > t``;
* marketer: expected share of records re-identified, ``sum(f_c / F_c) / n``.

Without population figures ``F_c = f_c``, as in ARX when no population
table (research subset) is given: the journalist risk then equals the
prosecutor risk and the marketer risk is ``C / n``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from anonlab.risk.classes import Array


def threshold_key(threshold: float) -> str:
    """The report key of a risk threshold: ``0.2`` -> ``"0.2"``."""
    return f"{float(threshold):g}"


def records_at_risk(
    sample_sizes: Array, population_sizes: Array, thresholds: Sequence[float]
) -> dict[str, float]:
    """Share of records whose class risk ``1 / F_c`` exceeds each threshold (ARX ``rA``)."""
    n = float(sample_sizes.sum())
    risk = 1.0 / population_sizes
    out: dict[str, float] = {}
    for t in thresholds:
        hit = float(sample_sizes[risk > float(t)].sum())
        out[threshold_key(t)] = hit / n if n else 0.0
    return out


def prosecutor_risk(sizes: Array, thresholds: Sequence[float]) -> dict[str, object]:
    """ARX's prosecutor risk: highest ``1/min f_c``, average ``C/n``, records at risk."""
    if sizes.size == 0:
        return {
            "highest": 0.0,
            "average": 0.0,
            "records_at_risk": {threshold_key(t): 0.0 for t in thresholds},
        }
    sizes_f = sizes.astype(np.float64)
    return {
        "highest": 1.0 / float(sizes_f.min()),
        "average": float(sizes.size) / float(sizes_f.sum()),
        "records_at_risk": records_at_risk(sizes_f, sizes_f, thresholds),
    }


def journalist_risk(
    sample_sizes: Array, population_sizes: Array, thresholds: Sequence[float]
) -> dict[str, object]:
    """ARX's journalist risk from sample sizes ``f_c`` and population sizes ``F_c``.

    Average: ``max(C / sum F_c, sum(f_c / F_c) / n)`` (ARX ``rC = max(rC1, rC2)``).
    """
    if sample_sizes.size == 0:
        return {
            "highest": 0.0,
            "average": 0.0,
            "records_at_risk": {threshold_key(t): 0.0 for t in thresholds},
        }
    f = sample_sizes.astype(np.float64)
    big_f = population_sizes.astype(np.float64)
    n = float(f.sum())
    average = max(float(f.size) / float(big_f.sum()), float((f / big_f).sum()) / n)
    return {
        "highest": 1.0 / float(big_f.min()),
        "average": average,
        "records_at_risk": records_at_risk(f, big_f, thresholds),
    }


def marketer_risk(sample_sizes: Array, population_sizes: Array) -> float:
    """ARX's marketer risk: ``sum(f_c / F_c) / n``, the expected share of records re-identified."""
    if sample_sizes.size == 0:
        return 0.0
    f = sample_sizes.astype(np.float64)
    return float((f / population_sizes.astype(np.float64)).sum()) / float(f.sum())
