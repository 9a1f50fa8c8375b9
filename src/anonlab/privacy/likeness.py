"""beta-likeness and delta-disclosure privacy of a sensitive attribute, as ARX 3.9 checks them.

Each compares, for every value ``v`` that occurs in a class, its share in the
class ``p_v = n_v / n`` (``n`` = the class's records) with its share in the
whole table ``q_v = N_v / N`` (computed once before the search, see
:mod:`anonlab.privacy.sensitive`). Values absent from a class are not checked,
as in ARX.

* **basic beta-likeness** (Cao and Karras, "Publishing microdata with a robust
  privacy guarantee", PVLDB 5(11), 2012; ARX ``BasicBLikeness``): the relative
  gain ``(p_v - q_v) / q_v <= beta``.
* **enhanced beta-likeness** (same paper; ARX ``EnhancedBLikeness``):
  ``(p_v - q_v) / q_v <= min(beta, -ln q_v)``.
* **delta-disclosure privacy** (Brickell and Shmatikov, "The cost of privacy:
  destruction of data-mining utility in anonymized data publishing", KDD
  2008; ARX ``DDisclosurePrivacy``): ``|log2(p_v / q_v)| < delta`` (strict),
  with ARX's base-2 logarithm ``ln(x) / ln(2)``.

ARX declares both beta-likeness models monotone with generalization, not with
suppression, and delta-disclosure monotone neither way (a value that is rare
in one class and absent from another becomes rarer when they merge).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.privacy.base import ClassStats, Criterion, SensitiveHistograms
from anonlab.privacy.sensitive import (
    SensitiveCriterion,
    check_number,
    global_frequencies,
    highest,
    per_class_any,
    per_class_max,
    released,
)
from anonlab.privacy.smallest import (
    MARGIN,
    caps_reach,
    coverage,
    first_passing_size,
    ranges_reach,
)

_LOG2 = math.log(2.0)
#: relative distance from delta-disclosure's bounds within which the logarithm is computed
_MARGIN = 1e-9


def shares(stats: ClassStats, h: SensitiveHistograms) -> tuple[NDArray[Any], NDArray[Any]]:
    """Per triple: the value's share in its class ``p`` and in the table ``q``."""
    q = global_frequencies(h)[h.values]
    size = np.maximum(np.asarray(stats.counts, dtype=np.float64), 1.0)
    p = np.asarray(h.counts, dtype=np.float64) / size[h.classes]
    return p, q


class LikenessModel(SensitiveCriterion):
    """What the beta-likeness models share: ``beta > 0`` and the relative gains."""

    monotone_with_generalization = True
    monotone_with_suppression = False

    def __init__(self, attribute: str, beta: float) -> None:
        super().__init__(attribute)
        self.beta = check_number(self.name, self.attribute, "beta", beta)
        if self.beta <= 0:
            raise self.error(f"beta must be larger than 0 (got {beta!r}): choose e.g. beta = 1.0")

    def parameters(self) -> dict[str, Any]:
        """``{"beta": beta}``."""
        return {"beta": self.beta}

    def gains(self, stats: ClassStats, h: SensitiveHistograms) -> tuple[NDArray[Any], NDArray[Any]]:
        """Per triple: the relative gain ``(p - q) / q`` and ``q``."""
        p, q = shares(stats, h)
        return (p - q) / q, q

    def largest_gain(self, stats: ClassStats) -> NDArray[Any]:
        """Per class: the largest relative gain of a value in it."""
        h = self.histograms(stats)
        gain, _ = self.gains(stats, h)
        return per_class_max(h, gain, stats.classes)

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """The largest relative gain of a value in a released class."""
        return {"beta": highest(self.largest_gain(stats), released(stats, outliers))}

    def gain_bounds(self, q: NDArray[Any]) -> NDArray[Any]:
        """Per value: the largest relative gain the model allows."""
        return np.full(q.shape[0], self.beta)

    def smallest_class(self, h: SensitiveHistograms) -> int:
        """The first size ``s`` whose caps ``floor(s q_v (1 + bound_v))`` add up to ``s``."""
        q = global_frequencies(h)
        caps = q * (1.0 + self.gain_bounds(q)) * (1.0 + MARGIN)
        return first_passing_size(lambda s: caps_reach(s, caps), lambda s: q.shape[0])

    def coverage(self, h: SensitiveHistograms) -> Criterion | None:
        """The caps ``q_v (1 + bound_v)`` of the values a class holds must add up to 1."""
        q = global_frequencies(h)
        caps = q * (1.0 + self.gain_bounds(q))
        return coverage(self.attribute, [None], [caps], float(caps.sum()) - 1.0)


class BasicBetaLikeness(LikenessModel):
    """Basic beta-likeness (ARX ``BasicBLikeness``): every value's relative gain in a class
    is at most ``beta``."""

    name = "basic-beta-likeness"

    def violations(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """Classes with a value whose gain exceeds ``beta``."""
        gain, _ = self.gains(stats, h)
        return per_class_any(h, gain > self.beta, stats.classes)


class EnhancedBetaLikeness(LikenessModel):
    """Enhanced beta-likeness (ARX ``EnhancedBLikeness``): every value's relative gain in a
    class is at most ``min(beta, -ln q_v)``."""

    name = "enhanced-beta-likeness"

    def violations(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """Classes with a value whose gain exceeds ``min(beta, -ln q)``.

        The bound ``min(beta, -ln q_v)`` is computed once per value of the
        attribute and read per triple (the same doubles as computing it per
        triple, without a logarithm per triple).
        """
        gain, _ = self.gains(stats, h)
        bound = np.minimum(self.beta, -np.log(global_frequencies(h)))
        return per_class_any(h, gain > bound[h.values], stats.classes)

    def gain_bounds(self, q: NDArray[Any]) -> NDArray[Any]:
        """Per value: ``min(beta, -ln q_v)``."""
        with np.errstate(divide="ignore"):
            return np.asarray(np.minimum(self.beta, -np.log(q)))


class DeltaDisclosure(SensitiveCriterion):
    """delta-disclosure privacy (ARX ``DDisclosurePrivacy``): every value in a class has
    ``|log2(p_v / q_v)| < delta``. Not monotone (ARX)."""

    name = "delta-disclosure"
    monotone_with_generalization = False
    monotone_with_suppression = False

    def __init__(self, attribute: str, delta: float) -> None:
        super().__init__(attribute)
        self.delta = check_number(self.name, self.attribute, "delta", delta)
        if self.delta <= 0:
            raise self.error(
                f"delta must be larger than 0 (got {delta!r}): choose e.g. delta = 1.0"
            )

    def parameters(self) -> dict[str, Any]:
        """``{"delta": delta}``."""
        return {"delta": self.delta}

    def disclosure(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """Per triple: ``|log2(p / q)|``, as ARX computes it (``ln(p / q) / ln 2``)."""
        p, q = shares(stats, h)
        return np.asarray(np.abs(np.log(p / q) / _LOG2))

    def violations(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """Classes with a value at ``|log2(p / q)| >= delta``.

        The logarithm is monotone, so a ratio ``r = p / q`` clearly above
        ``2^delta`` or below ``2^-delta`` violates and one clearly between them
        does not; only ratios within a relative margin of ``1e-9`` of either
        bound (far wider than the few units in the last place by which the
        computed ``ln(r) / ln 2`` can stray) get ARX's expression itself.
        """
        p, q = shares(stats, h)
        ratio = p / q
        hi = 2.0**self.delta if self.delta < 1000 else math.inf  # 2.0 ** 1024 overflows
        lo = 2.0**-self.delta
        flags = (ratio >= hi * (1 + _MARGIN)) | (ratio <= lo * (1 - _MARGIN))
        near = np.flatnonzero(
            (np.abs(ratio - hi) <= hi * _MARGIN) | (np.abs(ratio - lo) <= lo * _MARGIN)
        )
        if near.size:
            flags[near] = np.abs(np.log(ratio[near]) / _LOG2) >= self.delta
        return per_class_any(h, flags, stats.classes)

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """The largest ``|log2(p / q)|`` of a value in a released class (the release satisfies
        every ``delta`` above it)."""
        h = self.histograms(stats)
        worst = per_class_max(h, self.disclosure(stats, h), stats.classes)
        return {"delta": highest(worst, released(stats, outliers))}

    def smallest_class(self, h: SensitiveHistograms) -> int:
        """The first size ``s`` at which counts strictly between ``s q_v 2^-delta`` and
        ``s q_v 2^delta`` (or 0) can add up to ``s``."""
        q = global_frequencies(h)
        factor = 2.0 ** min(self.delta, 1000.0)
        low = q / factor * (1.0 - MARGIN)
        high = q * factor * (1.0 + MARGIN)
        return first_passing_size(
            lambda s: ranges_reach(s, low, high), lambda s: q.shape[0] * (s + 1)
        )

    def coverage(self, h: SensitiveHistograms) -> Criterion | None:
        """The caps ``q_v 2^delta`` of the values a class holds must add up to more than 1."""
        caps = global_frequencies(h) * 2.0 ** min(self.delta, 1000.0)
        return coverage(self.attribute, [None], [caps], float(caps.sum()) - 1.0)
