"""The sensitive-attribute privacy models written out class by class, as a third opinion.

Plain Python over ``collections.Counter`` histograms, one function per
definition (ARX 3.9's, as docs/privacy_models.md states them), sharing no code
with the search's models (``anonlab.privacy``) or the release checker
(``anonlab.verify.criteria``). Each takes the table (one row per released
record), the quasi-identifier columns and the sensitive column; ``q`` is the
distribution of the sensitive values over the whole table. delta-presence,
which counts the population too, takes each record's generalized
quasi-identifiers instead (:func:`delta_presence_holds`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import pandas as pd


def histograms(frame: pd.DataFrame, qis: Sequence[str], sensitive: str) -> list[Counter[str]]:
    """One histogram of the sensitive values per equivalence class (rows equal on ``qis``)."""
    classes: dict[tuple[str, ...], Counter[str]] = {}
    for key, value in zip(
        frame[list(qis)].astype(str).itertuples(index=False, name=None),
        frame[sensitive].astype(str),
        strict=True,
    ):
        classes.setdefault(key, Counter())[value] += 1
    return list(classes.values())


def overall(frame: pd.DataFrame, sensitive: str) -> dict[str, float]:
    """q: each sensitive value's share of the whole table."""
    counts = Counter(frame[sensitive].astype(str))
    total = sum(counts.values())
    return {value: count / total for value, count in counts.items()}


def shares(histogram: Counter[str]) -> dict[str, float]:
    """p: each value's share of one class."""
    size = sum(histogram.values())
    return {value: count / size for value, count in histogram.items()}


def smallest_class(frame: pd.DataFrame, qis: Sequence[str], sensitive: str) -> int:
    """k: the size of the smallest class."""
    return min(sum(h.values()) for h in histograms(frame, qis, sensitive))


def distinct_l(frame: pd.DataFrame, qis: Sequence[str], sensitive: str) -> int:
    """Distinct l-diversity: the fewest distinct sensitive values in a class."""
    return min(len(h) for h in histograms(frame, qis, sensitive))


def entropy_l(frame: pd.DataFrame, qis: Sequence[str], sensitive: str) -> float:
    """Entropy l-diversity: min over classes of exp(H), H = -sum p ln p (= 2^H with log2)."""
    return min(
        math.exp(-sum(p * math.log(p) for p in shares(h).values()))
        for h in histograms(frame, qis, sensitive)
    )


def recursive_cl_holds(
    frame: pd.DataFrame,
    qis: Sequence[str],
    sensitive: str,
    c: float,
    l: int,  # noqa: E741 (the model's own name)
) -> bool:
    """Recursive (c,l)-diversity: r_1 < c (r_l + ... + r_m) in every class.

    r_1 >= r_2 >= ... are a class's counts in descending order; a class with
    fewer than l distinct values fails.
    """
    for h in histograms(frame, qis, sensitive):
        r = sorted(h.values(), reverse=True)
        if len(r) < l or not r[0] < c * sum(r[l - 1 :]):
            return False
    return True


def equal_t(frame: pd.DataFrame, qis: Sequence[str], sensitive: str) -> float:
    """Equal-distance t-closeness: max over classes of 1/2 sum_v |p_v - q_v|."""
    q = overall(frame, sensitive)
    return max(
        0.5 * sum(abs(shares(h).get(v, 0.0) - q[v]) for v in q)
        for h in histograms(frame, qis, sensitive)
    )


def ordered_t(frame: pd.DataFrame, qis: Sequence[str], sensitive: str) -> float:
    """Ordered-distance t-closeness over numeric values.

    EMD = 1/(m-1) sum_i |sum_{j<=i} (p_j - q_j)| over the m distinct values in
    numeric order; the largest over classes.
    """
    q = overall(frame, sensitive)
    order = sorted(q, key=float)
    worst = 0.0
    for h in histograms(frame, qis, sensitive):
        p = shares(h)
        running, emd = 0.0, 0.0
        for value in order:
            running += p.get(value, 0.0) - q[value]
            emd += abs(running)
        worst = max(worst, emd / (len(order) - 1))
    return worst


def basic_beta(frame: pd.DataFrame, qis: Sequence[str], sensitive: str) -> float:
    """Basic beta-likeness: max over classes and values with p > q of (p - q) / q."""
    q = overall(frame, sensitive)
    return max(
        (
            (p - q[v]) / q[v]
            for h in histograms(frame, qis, sensitive)
            for v, p in shares(h).items()
            if p > q[v]
        ),
        default=0.0,
    )


def enhanced_beta_holds(
    frame: pd.DataFrame, qis: Sequence[str], sensitive: str, beta: float
) -> bool:
    """Enhanced beta-likeness: (p - q) / q <= min(beta, -ln q) for every class and value."""
    q = overall(frame, sensitive)
    return all(
        (p - q[v]) / q[v] <= min(beta, -math.log(q[v])) + 1e-12
        for h in histograms(frame, qis, sensitive)
        for v, p in shares(h).items()
        if p > q[v]
    )


def delta_disclosure(frame: pd.DataFrame, qis: Sequence[str], sensitive: str) -> float:
    """Delta-disclosure privacy: max over classes and held values of |log2(p / q)|."""
    q = overall(frame, sensitive)
    return max(
        abs(math.log2(p / q[v]))
        for h in histograms(frame, qis, sensitive)
        for v, p in shares(h).items()
    )


def delta_presence_holds(
    population: Sequence[tuple[str, ...]],
    subset: Sequence[tuple[str, ...]],
    released: Sequence[tuple[str, ...]],
    dmin: float,
    dmax: float,
    judge_empty: bool,
) -> bool:
    """(dmin, dmax)-presence as ARX 3.9 judges one transformation, class by class.

    ``population``, ``subset`` and ``released`` give each record's generalized
    quasi-identifiers: every population record, every research-subset record
    (suppressed ones too) and the released subset records. A class of the
    population with released records needs ``dmin <= released / population <=
    dmax``; one whose subset records were all suppressed is not judged; one
    with no subset record has delta 0, judged only when ``judge_empty`` (no
    model of the combination has a minimal class size).
    """
    pcount, count, shown = Counter(population), Counter(subset), Counter(released)
    for cls, size in pcount.items():
        if count[cls] == 0:
            if judge_empty and not dmin <= 0.0 <= dmax:
                return False
        elif shown[cls] and not dmin - 1e-9 <= shown[cls] / size <= dmax + 1e-9:
            return False
    return True
