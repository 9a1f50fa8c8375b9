"""sdcMicro's frequency counts and individual re-identification risk.

Sources: sdcMicro 5.8.1, ``R/freqCalc.r`` (``freqCalc``), ``R/indivRisk.R``
(``indivRisk``, method ``"approx"``, the default) and ``R/measure_risk.R``
(``measure_riskWORK``).

* ``fk``: the number of sample records sharing a record's key (its class
  size); ``Fk``: the sum of their sampling weights, an estimate of the number
  of population units with that key (without weights every weight is 1).
* Individual risk (Benedetti and Franconi, "Statistical and technological
  solutions for controlled data dissemination", NTTS 1998; Franconi and
  Polettini, "Individual risk estimation in mu-Argus: a review", PSD 2004):
  with ``p = fk / Fk``, the negative binomial approximation of
  ``E[1/F | f]`` is

  - ``fk = 1``: ``r = p / (1 - p) * log(1 / p)``;
  - ``fk = 2``: ``r = p / (1 - p) - (p / (1 - p))^2 * log(1 / p)``;
  - ``fk > 2``: ``r = p / (fk - (1 - p))``;
  - ``fk = Fk`` (the class is its whole population): ``r = 1 / fk``.

  Without sampling weights sdcMicro's ``measure_risk`` takes ``r = 1 / fk``.
* Global risk: the expected number of re-identifications ``ER = sum r`` over
  the records, and ``ER / n``.

sdcMicro treats a missing key value as matching every value; here every value
(``*`` and empty cells included) is a value of its own, and suppressed records
(all key values ``*``) are left out, as everywhere in the risk module.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.risk.classes import Array, Classes


def sampling_weights(frame: pd.DataFrame, column: str) -> Array:
    """The sampling weights in ``column`` as floats; each must be a finite number above 0."""
    from anonlab.textnumbers import parse_numbers

    values = parse_numbers(frame[column]).to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise AnonlabError(
            f"weights column '{column}' holds {frame[column].iloc[row]!r} in data row {row + 1}: "
            "every sampling weight must be a number above 0",
            parameter="weights",
        )
    return values


def frequencies(
    classes: Classes, weights: Array | None, class_weights: Array | None = None
) -> tuple[Array, Array]:
    """Per-class ``(fk, Fk)``: class sizes and their sums of sampling weights (freqCalc).

    ``weights`` are per record; ``class_weights``, when given, are the
    per-class sums already made (an engine's frequency set) and used instead.
    """
    fk = classes.sizes.astype(np.float64)
    if class_weights is not None:
        return fk, np.asarray(class_weights, dtype=np.float64)
    if weights is None:
        return fk, fk.copy()
    return fk, classes.class_sums(weights)


def record_frequencies(classes: Classes, weights: Array | None) -> tuple[Array, Array]:
    """Per-record ``(fk, Fk)`` as freqCalc returns them; NaN for suppressed records."""
    fk, big_fk = frequencies(classes, weights)
    row_fk = np.full(classes.row_class.shape[0], np.nan)
    row_big = np.full(classes.row_class.shape[0], np.nan)
    kept = classes.kept
    row_fk[kept] = fk[classes.row_class[kept]]
    row_big[kept] = big_fk[classes.row_class[kept]]
    return row_fk, row_big


def individual_risk(fk: Array, big_fk: Array, weighted: bool) -> Array:
    """sdcMicro's individual risk of a class's records (``indivRisk``, ``method = "approx"``)."""
    if not weighted:
        return 1.0 / fk
    p = fk / big_fk
    risk = np.zeros_like(p)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = p / (1.0 - p)
        one = fk == 1
        risk[one] = ratio[one] * np.log(1.0 / p[one])
        two = fk == 2
        risk[two] = ratio[two] - ratio[two] ** 2 * np.log(1.0 / p[two])
        more = fk > 2
        risk[more] = p[more] / (fk[more] - (1.0 - p[more]))
    whole = fk == big_fk
    risk[whole] = 1.0 / fk[whole]
    return risk


def global_risk(
    classes: Classes, weights: Array | None, class_weights: Array | None = None
) -> dict[str, float | int | bool]:
    """sdcMicro's ``measure_risk`` summary: global risk, expected re-identifications, highest risk.

    Also ``fk_1`` and ``fk_2``: the records whose key is shared by no other
    record, or by one other (freqCalc's ``n1`` and ``n2``). ``class_weights``
    (per-class sums of the weights) may stand for ``weights`` (see
    :func:`frequencies`).
    """
    fk, big_fk = frequencies(classes, weights, class_weights)
    weighted = weights is not None or class_weights is not None
    if fk.size == 0:
        return {
            "global_risk": 0.0,
            "expected_reidentifications": 0.0,
            "highest": 0.0,
            "weighted": weighted,
            "fk_1": 0,
            "fk_2": 0,
        }
    risk = individual_risk(fk, big_fk, weighted)
    expected = float((risk * fk).sum())
    return {
        "global_risk": expected / float(fk.sum()),
        "expected_reidentifications": expected,
        "highest": float(risk.max()),
        "weighted": weighted,
        "fk_1": int(fk[fk == 1].sum()),
        "fk_2": int(fk[fk == 2].sum()),
    }
