"""Scores of candidate specializations (docs/formulas.md §3; Fung, Wang, Yu, TKDE 2007).

For a value ``v`` specialized into children ``c`` (``R_x``: records with value
``x``, ``I(R)``: class entropy of ``R`` in bits):

* ``InfoGain(v) = I(R_v) - sum_c |R_c|/|R_v| I(R_c)``;
* ``SplitInfo(v) = -sum_c |R_c|/|R_v| log2(|R_c|/|R_v|)``;
* ``GainRatio(v) = InfoGain(v) / SplitInfo(v)`` (0 when a single child is non-empty);
* ``AnonyLoss(v) = mean_j (A(QID_j) - A_v(QID_j))`` over the templates whose QID
  holds ``v``'s attribute, ``A`` the smallest group before, ``A_v`` after;
* plain TDS: ``Score(v) = InfoGain(v) / (AnonyLoss(v) + 1)``;
* the paper's: ``newScore(v) = GainRatio(v) * f(provider) * g(att) * s(v)`` with
  ``g(att_i) = (1 - gain_i / sum_j gain_j) / (n - 1)``. The paper writes
  ``g = 1 - gain_i / sum gain``, which sums to ``n - 1`` over ``n`` attributes,
  not to 1 as it states; its reported values match the version divided by
  ``n - 1``, which is used here. ``gain_i`` is the information gain of the
  attribute's raw values (a continuous attribute: of its best binary split).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

TIE = 1e-12
"""Gains closer than this are ties (sums of logarithms differ in the last bits)."""


def entropy(counts: NDArray[Any]) -> NDArray[Any]:
    """Class entropy in bits of each row of a (groups x classes) count matrix."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(total > 0, counts / total, 0.0)
        terms = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    out: NDArray[Any] = -terms.sum(axis=-1)
    return out


def info_gain(child_counts: NDArray[Any]) -> float:
    """InfoGain of a split given the (children x classes) count matrix."""
    child_counts = np.asarray(child_counts, dtype=np.float64)
    sizes = child_counts.sum(axis=1)
    total = sizes.sum()
    if total <= 0:
        return 0.0
    parent = float(entropy(child_counts.sum(axis=0)))
    after = float((sizes / total * entropy(child_counts)).sum())
    return max(parent - after, 0.0)


def split_info(sizes: NDArray[Any]) -> float:
    """SplitInfo of a split given the child sizes (zero sizes ignored)."""
    return float(entropy(np.asarray(sizes, dtype=np.float64)[None, :])[0])


def gain_ratio(child_counts: NDArray[Any]) -> float:
    """GainRatio = InfoGain / SplitInfo (0 when the split leaves one non-empty child)."""
    si = split_info(np.asarray(child_counts).sum(axis=1))
    if si <= 1e-15:
        return 0.0
    return min(info_gain(child_counts) / si, 1.0)


def best_threshold(
    values: NDArray[Any], classes: NDArray[Any], n_classes: int
) -> tuple[float, float] | None:
    """The information-gain-best binary split of numeric ``values`` (C4.5 style).

    Candidate thresholds lie midway between consecutive distinct values;
    records ``< t`` go left. Returns ``(threshold, gain)``, or ``None`` when
    the values are all equal. Ties (gains within :data:`TIE`) go to the
    smallest threshold.
    """
    distinct, inverse = np.unique(values, return_inverse=True)
    counts = np.zeros((distinct.size, n_classes), dtype=np.int64)
    np.add.at(counts, (inverse.reshape(-1), classes), 1)
    return best_split(distinct, counts)


def best_split(distinct: NDArray[Any], counts: NDArray[Any]) -> tuple[float, float] | None:
    """:func:`best_threshold` from class counts per distinct value (rows sorted by value).

    Rows of zero count are ignored, so ``distinct`` may be an attribute's whole
    sorted domain and ``counts`` those of one interval's records.
    """
    present = counts.sum(axis=1) > 0
    x, counts = distinct[present], counts[present]
    if x.size < 2:
        return None
    left = np.cumsum(counts, axis=0)[:-1]  # class counts of x[:i+1]
    total = counts.sum(axis=0)
    right = total - left
    n_left = left.sum(axis=1).astype(np.float64)
    n = float(total.sum())
    after = (n_left / n) * entropy(left) + ((n - n_left) / n) * entropy(right)
    gains = float(entropy(total)) - after
    # thresholds whose gains tie up to rounding: the smallest wins
    best = int(np.flatnonzero(gains >= gains.max() - TIE)[0])
    return (float(x[best]) + float(x[best + 1])) / 2.0, max(float(gains[best]), 0.0)


def attribute_gain(codes: NDArray[Any], classes: NDArray[Any], n_classes: int) -> float:
    """gain(Att) = info(Class) - info_Att(Class) over the attribute's raw codes."""
    _, inverse = np.unique(codes, return_inverse=True)
    counts = np.zeros((int(inverse.max()) + 1 if inverse.size else 0, n_classes), np.int64)
    np.add.at(counts, (inverse, classes), 1)
    return info_gain(counts)


def g_factors(gains: Mapping[str, float]) -> dict[str, float]:
    """g(att_i) = (1 - gain_i / sum_j gain_j) / (n - 1), summing to 1 over the n attributes.

    One attribute gets 1; when every gain is 0 each gets 1/n.
    """
    n = len(gains)
    if n == 0:
        return {}
    if n == 1:
        return dict.fromkeys(gains, 1.0)
    total = math.fsum(gains.values())
    if total <= 0:
        return dict.fromkeys(gains, 1.0 / n)
    return {a: (1.0 - g / total) / (n - 1) for a, g in gains.items()}


def tds_score(gain: float, anony_loss: float) -> float:
    """Plain TDS: InfoGain / (AnonyLoss + 1)."""
    return gain / (anony_loss + 1.0)


def sensitivity_score(ratio: float, factor: float, g: float, s: float) -> float:
    """The paper's newScore = GainRatio x f(provider) x g(attribute) x s(value)."""
    return ratio * factor * g * s


def score_bound(
    score: str, s_aggregate: str, n_records: int, n_classes: int, max_leaves: int
) -> float:
    """An upper bound of the raw score every party derives alike (for normalizing).

    TDS: InfoGain <= log2(#classes). Sensitivity: GainRatio <= 1, f <= 1,
    g <= 1 and s(v) <= 5 x (#leaves under v) <= 5 x max(#records, #taxonomy leaves)
    for the sum, 5 for the mean.
    """
    if score == "tds":
        return max(math.log2(max(n_classes, 2)), 1.0)
    if s_aggregate == "mean":
        return 5.0
    return 5.0 * max(n_records, max_leaves, 1)
