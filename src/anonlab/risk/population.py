"""Population uniqueness: how many records of the population are unique, estimated from a sample.

The four models ARX 3.9 offers, with ARX's numerical details, estimated from
the sample's class-size distribution (``c_i`` classes of size ``i``, ``u``
classes, ``n`` records) and the population size ``N`` (sampling fraction
``f = n / N``). Sources: ARX 3.9.2, ``org.deidentifier.arx.risk``:
``ModelPitman``, ``ModelZayatz``, ``ModelSNB``, ``RiskModelPopulationUniqueness``
and ``Gamma``; its solver ``de.linearbits.newtonraphson.NewtonRaphson2D``
(0.0.1) configured by ``ARXSolverConfiguration``.

* **Pitman** (Hoshino, "On a limiting quasi-multinomial distribution",
  2001; Pitman's sampling formula): the maximum-likelihood ``(theta, alpha)``
  solve

  ``sum_{i=1}^{u-1} 1/(theta + i alpha) = sum_{i=1}^{n-1} 1/(theta + i)`` and
  ``sum_{i=1}^{u-1} i/(theta + i alpha) = sum_{j>=2} c_j sum_{k=1}^{j-1} 1/(k - alpha)``;

  population uniques ``Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha``.
  ARX starts Newton-Raphson at its moment estimate (see :func:`pitman_start`),
  iterates with closed forms in digamma and trigamma (its own series, kept
  here with their behaviour, see :func:`arx_trigamma`; the terms of all class
  sizes are formed at once by :func:`arx_gamma_pair_array`, bit for bit the
  scalar functions' values, and added in ARX's order), accepts the root when
  the plain sums above vanish to ``1e-6``, and otherwise solves again with the
  plain sums and their exact derivatives.
* **Zayatz** ("Estimation of the percent of unique population elements on a
  microdata file using the sample", US Census Bureau SRD report 91/08, 1991):
  ``uniques = c_1 * P / f`` with
  ``P = (c_1/u) h(1; N, 1, n) / sum_j (c_j/u) h(1; N, j, n)`` and
  ``h(x; N, K, n)`` the hypergeometric probability of ``x`` successes in
  ``n`` draws from ``N`` items, ``K`` of them successes.
* **SNB**, the slide negative binomial (Chen and Keller-McNulty, "Estimation
  of identification disclosure risk in microdata", JOS 14(1), 1998): the
  number of non-empty population classes ``K`` is estimated first, then
  ``(alpha, beta)`` solve the equations for ``c_1`` and ``c_2``; uniques
  ``K * beta^alpha``.
* **Dankar** (Dankar, El Emam, Neisa and Roffey, "Estimating the
  re-identification risk of clinical data sets", BMC Med Inform Decis Mak
  12:66, 2012): Pitman when ``f <= 0.1`` (Zayatz if Pitman fails); otherwise
  the smaller of Zayatz and SNB (Zayatz if SNB fails).

ARX counts an estimate that is NaN or exactly 0 as failed (reported as 0 by
its getters); here a failed model is ``None``. With no sample uniques every
model gives 0. The solver runs without ARX's wall-clock limits (100 ms a try,
1 s in all), so a result never depends on the machine's speed; the iteration
limits are ARX's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.risk import strictmath
from anonlab.risk.classes import Array

Vector = tuple[float, float]
Matrix = tuple[float, float, float, float]  # (d f1/dx, d f1/dy, d f2/dx, d f2/dy)

#: ARXSolverConfiguration defaults
ACCURACY = 1e-6
ITERATIONS_PER_TRY = 1000


def _start_values() -> list[Vector]:
    """ARX's 16 prepared start values: 0, 0.33, 0.66, 0.99 (summed as ARX sums them) squared."""
    steps: list[float] = []
    d = 0.0
    while d < 1.0:
        steps.append(d)
        d += 0.33
    return [(a, b) for a in steps for b in steps]


START_VALUES = _start_values()


# ---------------------------------------------------------------------------
# Gamma functions


_DIGAMMA_1 = -0.57721566490153286060651209008240243104215933593992
_TRIGAMMA_1 = math.pi * math.pi / 6.0
_TETRAGAMMA_1 = -2.0 * 1.202056903159594285399738161511449990764986292
_S = (1.0 / 12.0, 1.0 / 120.0, 1.0 / 252.0, 1.0 / 240.0, 1.0 / 132.0)
_B = (1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0)


def arx_digamma(x: float) -> float:
    """Digamma as ARX's ``Gamma.digamma`` computes it (reflection, recurrence to 12, series)."""
    if math.isinf(x) or math.isnan(x):
        return math.nan
    if x == 0.0:
        return -math.inf
    if x < 0.0:
        t = strictmath.tan(-math.pi * x)
        return arx_digamma(1.0 - x) + (math.pi / t if t != 0.0 else math.copysign(math.inf, t))
    if x <= 1e-6:
        return (_DIGAMMA_1 - 1.0 / x) + _TRIGAMMA_1 * x
    result = 0.0
    while x < 12.0:
        result -= 1.0 / x
        x += 1.0
    r = 1.0 / x
    result += strictmath.log(x) - 0.5 * r
    r *= r
    s3, s4, s5, s6, s7 = _S
    return result - r * (s3 - r * (s4 - r * (s5 - r * (s6 - r * s7))))


def arx_trigamma(x: float) -> float:
    """Trigamma as ARX's ``Gamma.trigamma`` computes it, including its behaviour below 12.

    ARX raises the argument to at least 8 by the recurrence but adds the
    asymptotic tail only when the raised argument is at least 12, so for
    arguments below 12 its value lacks that tail (it is 0 between 8 and 12).
    The value only enters the Jacobian of the first Pitman solve, never the
    equations, so it changes the path of the iteration, not the root.
    """
    if math.isinf(x) or math.isnan(x):
        return math.nan
    if x == 0.0:
        return -math.inf
    if x < 0.0:
        s = strictmath.sin(-math.pi * x)
        r = math.pi / s if s != 0.0 else math.inf
        return -arx_trigamma(1.0 - x) + r * r
    if x <= 1e-4:
        return _div(1.0, x * x) + _TRIGAMMA_1 + _TETRAGAMMA_1 * x  # Java: x*x = 0 gives inf
    result = 0.0
    while x < 8.0:
        result += 1.0 / (x * x)
        x += 1.0
    if x >= 12.0:
        r = 1.0 / (x * x)
        b2, b4, b6, b8, b10 = _B
        result += 0.5 * r + (1.0 + r * (b2 + r * (b4 + r * (b6 + r * (b8 + r * b10))))) / x
    return result


# The same functions for arrays: every element takes the scalar function's IEEE
# operations in its order (NumPy's + - * / round correctly and never fuse), so
# each result is bit for bit the scalar one.

FloatArray = NDArray[np.float64]
ArrayFunction = Callable[[FloatArray], FloatArray]
PairFunction = Callable[[FloatArray], tuple[FloatArray, FloatArray]]


def _raised(x: FloatArray, limit: float, rows: int) -> tuple[FloatArray, Array]:
    """The loop ``while x < limit: x += 1.0`` for every element of ``x`` at once.

    Returns ``raised[j]``, the elements after ``j`` steps (a running sum of
    ``x, 1, 1, ...``, so each step rounds as the loop's ``x += 1.0``), and
    the mask ``raised < limit`` of the steps the loop takes (a prefix of each
    column, as ``raised`` never decreases). ``rows`` must exceed the most
    steps an element needs.
    """
    steps = np.ones((rows, x.size))
    steps[0] = x
    raised: FloatArray = np.add.accumulate(steps, axis=0)
    return raised, raised < limit


def _head(x: FloatArray) -> tuple[Array, FloatArray, Array]:
    """The elements below 12 (``index``), raised by the loop to 12 (see :func:`_raised`).

    Every ``x > 1e-6`` is at least 12 after 12 steps, so 13 rows hold every step.
    """
    index = (x < 12.0).nonzero()[0]
    raised, taken = _raised(x[index], 12.0, 13)
    return index, raised, taken


def _digamma_loop(raised: FloatArray, taken: Array) -> FloatArray:
    """``result -= 1/x`` per step taken, from ``result = 0.0``, for elements below 12.

    The first step is always taken, so the running sum starts with its term
    (``0.0 - 1/x`` is ``-1/x``); ``result - 1/x`` is ``result + (-1/x)``, and
    a step not taken adds ``-0.0``, which leaves every double as it is.
    """
    total: FloatArray = np.add.accumulate(np.divide(-1.0, raised) * taken, axis=0)[-1]
    return total


def _trigamma_loop(raised: FloatArray) -> FloatArray:
    """``result += 1/x^2`` per step while ``x < 8``, from ``result = 0.0`` (rows up to 8).

    Every ``x > 1e-4`` reaches 8 within 8 steps, so rows 0..8 hold every
    step. Terms are positive, so the running sum starts with the first
    (``0.0 + t`` is ``t``) and a step not taken adds ``+0.0``, which leaves
    a sum that is ``+0.0`` or positive as it is.
    """
    rows = raised[:9]
    total: FloatArray = np.add.accumulate(1.0 / (rows * rows) * (rows < 8.0), axis=0)[-1]
    return total


# 0-d arrays: NumPy combines them with arrays faster than Python floats, same arithmetic
_ONE, _HALF = np.array(1.0), np.array(0.5)
_S_0D = tuple(np.array(v) for v in _S)
_B_0D = tuple(np.array(v) for v in _B)


def _digamma_series(result: FloatArray, x: FloatArray) -> FloatArray:
    """The end of :func:`arx_digamma` for ``x >= 12``:
    ``result + (log x - 1/(2x)) - r (1/12 - r (1/120 - ...))`` with ``r = 1/x^2``."""
    r = _ONE / x
    result = result + (strictmath.log_array(x) - _HALF * r)
    r = r * r
    s3, s4, s5, s6, s7 = _S_0D
    out: FloatArray = result - r * (s3 - r * (s4 - r * (s5 - r * (s6 - r * s7))))
    return out


def _trigamma_tail(result: FloatArray, x: FloatArray) -> FloatArray:
    """The end of :func:`arx_trigamma`: ``result + 1/(2x^2) + (1 + sum_k B_2k / x^2k) / x``
    where ``x >= 12`` (ARX adds it only there), ``result`` elsewhere (formed for every
    element, kept where ``x >= 12``)."""
    r = _ONE / (x * x)
    b2, b4, b6, b8, b10 = _B_0D
    tail = _HALF * r + (_ONE + r * (b2 + r * (b4 + r * (b6 + r * (b8 + r * b10))))) / x
    np.add(result, tail, out=result, where=x >= 12.0)
    return result


def _digamma_regular(x: FloatArray) -> FloatArray:
    """:func:`arx_digamma` for finite ``x > 1e-6``: ``-sum 1/(x+j)`` while below 12, then
    ``log x - 1/(2x) - sum_k B_2k / (2k x^2k)`` (the series' five terms)."""
    return _gamma_pair_regular(x, trigamma=False)[0]


def _trigamma_regular(x: FloatArray) -> FloatArray:
    """:func:`arx_trigamma` for finite ``x > 1e-4``: ``sum 1/(x+j)^2`` while below 8, and the
    tail ``1/(2x^2) + (1 + sum_k B_2k / x^2k) / x`` only where ``x`` is at least 12."""
    return _gamma_pair_regular(x, digamma=False)[1]


def _gamma_pair_regular(
    x: FloatArray, digamma: bool = True, trigamma: bool = True
) -> tuple[FloatArray, FloatArray]:
    """Digamma (if ``digamma``, for finite ``x > 1e-6``) and trigamma (if
    ``trigamma``, for finite ``x > 1e-4``): the loop to 8 is the start of the loop to 12."""
    dig = np.zeros(x.size)
    tri = np.zeros(x.size)
    final = x.copy()
    index, raised, taken = _head(x)
    if index.size:
        if digamma:
            dig[index] = _digamma_loop(raised, taken)
            final[index] = raised[taken.sum(axis=0), np.arange(index.size)]
        if trigamma:
            tri[index] = _trigamma_loop(raised)
    return (
        _digamma_series(dig, final) if digamma else dig,
        _trigamma_tail(tri, x) if trigamma else tri,
    )


def _gamma_array(
    x: FloatArray,
    small: float,
    regular: ArrayFunction,
    tiny: ArrayFunction,
    scalar: Callable[[float], float],
) -> FloatArray:
    """Apply the scalar function's cases element-wise: NaN for inf and NaN, ``-inf`` at 0,
    the scalar function itself for negative ``x`` (reflection, rare), ``tiny`` on
    ``(0, small]`` and ``regular`` above."""
    values = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        plain = (values > small) & (values < math.inf)
        if plain.all():
            return regular(values)
        out = np.where(values == 0.0, -math.inf, math.nan)
        out[plain] = regular(values[plain])
        low = (values > 0.0) & (values <= small)
        out[low] = tiny(values[low])
    for index in np.flatnonzero((values < 0.0) & (values > -math.inf)):
        out[index] = scalar(float(values[index]))
    return out


def _digamma_tiny(x: FloatArray) -> FloatArray:
    """:func:`arx_digamma` on ``(0, 1e-6]``: ``psi(1) - 1/x + psi'(1) x``."""
    out: FloatArray = (_DIGAMMA_1 - 1.0 / x) + _TRIGAMMA_1 * x
    return out


def _trigamma_tiny(x: FloatArray) -> FloatArray:
    """:func:`arx_trigamma` on ``(0, 1e-4]``: ``1/x^2 + psi'(1) + psi''(1) x``."""
    out: FloatArray = 1.0 / (x * x) + _TRIGAMMA_1 + _TETRAGAMMA_1 * x
    return out


def arx_digamma_array(x: NDArray[Any]) -> FloatArray:
    """:func:`arx_digamma` of every element, each bit for bit the scalar result."""
    return _gamma_array(x, 1e-6, _digamma_regular, _digamma_tiny, arx_digamma)


def arx_trigamma_array(x: NDArray[Any]) -> FloatArray:
    """:func:`arx_trigamma` of every element, each bit for bit the scalar result."""
    return _gamma_array(x, 1e-4, _trigamma_regular, _trigamma_tiny, arx_trigamma)


def arx_gamma_pair_array(x: NDArray[Any]) -> tuple[FloatArray, FloatArray]:
    """``(arx_digamma_array(x), arx_trigamma_array(x))``, sharing their work where every
    element is regular for both (finite and above ``1e-4``)."""
    values = np.asarray(x, dtype=np.float64)
    if values.size and values.min() > 1e-4 and values.max() < 1e150:  # no overflow, no NaN
        return _gamma_pair_regular(values)
    return arx_digamma_array(values), arx_trigamma_array(values)


# ---------------------------------------------------------------------------
# Newton-Raphson as ARX runs it


def _div(a: float, b: float) -> float:
    """IEEE division as Java does it: by zero gives a signed infinity or NaN, not an error."""
    if b != 0.0:
        return a / b
    if a == 0.0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def newton_raphson(
    evaluate: Callable[[Vector], tuple[Vector, Matrix]],
    start: Vector,
    constraint: Callable[[Vector], bool] | None = None,
    *,
    iterations_per_try: int = ITERATIONS_PER_TRY,
) -> Vector:
    """Solve ``F(x) = 0`` in two unknowns as ``NewtonRaphson2D.solve`` does with ARX's settings.

    The first try starts at ``start``; each later try at the next of ARX's 16
    prepared start values. A try ends after ``iterations_per_try`` steps (ARX's
    default 1000), on a NaN, or when the step leaves ``constraint``; the
    search stops as soon as the last start value has made one step, or after
    ``17 * iterations_per_try`` evaluations (``NewtonRaphson2D.configure``
    sets the total so with prepared start values). Converged when both
    equations are within ``1e-6`` of zero; otherwise ``(nan, nan)``.
    """
    total_limit = (len(START_VALUES) + 1) * iterations_per_try
    total = 0
    offset = 0
    first = True
    while total <= total_limit:
        if first:
            x, y = start
            first = False
        else:
            x, y = START_VALUES[offset]
            offset += 1
        iterations = 0
        while True:
            total += 1
            (f1, f2), (j11, j12, j21, j22) = evaluate((x, y))
            if abs(f1) <= ACCURACY and abs(f2) <= ACCURACY:
                return (x, y)
            scalar = _div(1.0, j11 * j22 - j12 * j21)
            i11, i12, i21, i22 = j22 * scalar, -j12 * scalar, -j21 * scalar, j11 * scalar
            dx = i11 * f1 + i12 * f2  # Python floats: IEEE arithmetic, no exceptions
            dy = i21 * f1 + i22 * f2
            x, y = x - dx, y - dy
            if offset == len(START_VALUES):
                return (math.nan, math.nan)
            if constraint is not None and not constraint((x, y)):
                break
            if math.isnan(x) or math.isnan(y) or iterations >= iterations_per_try:
                break
            iterations += 1
    return (math.nan, math.nan)


# ---------------------------------------------------------------------------
# The models


@dataclass(frozen=True)
class FrequencyTable:
    """A sample's class-size distribution: ``counts[i]`` classes of size ``sizes[i]``."""

    sizes: Array
    counts: Array

    @classmethod
    def from_mapping(cls, distribution: Mapping[int, int]) -> FrequencyTable:
        """From ``{size: classes}``."""
        items = sorted((int(s), int(c)) for s, c in distribution.items() if int(c) > 0)
        return cls(
            np.array([s for s, _ in items], dtype=np.int64),
            np.array([c for _, c in items], dtype=np.int64),
        )

    @property
    def classes(self) -> int:
        """``u``: number of classes."""
        return int(self.counts.sum())

    @property
    def records(self) -> int:
        """``n``: number of records."""
        return int((self.sizes * self.counts).sum())

    def of_size(self, size: int) -> int:
        """``c_size``: number of classes of that size."""
        hit = self.counts[self.sizes == size]
        return int(hit[0]) if hit.size else 0


def pitman_start(table: FrequencyTable) -> Vector:
    """ARX's start for the Pitman solve (moment estimates from ``c_1``, ``c_2``, ``u``, ``n``).

    ``c = c_1 (c_1 - 1) / c_2`` (``c_2`` taken as 1 when 0),
    ``theta = (n u c - c_1 (n - 1)(2u + c)) / (2 c_1 u + c_1 c - n c)``,
    ``alpha = (theta (c_1 - n) + (n - 1) c_1) / (n u)``.
    """
    c1 = float(table.of_size(1))
    c2 = float(table.of_size(2)) or 1.0
    u = float(table.classes)
    n = float(table.records)
    c = c1 * (c1 - 1.0) / c2
    t = _div(n * u * c - c1 * (n - 1.0) * (2.0 * u + c), (2.0 * c1 * u + c1 * c) - n * c)
    a = _div(t * (c1 - n) + (n - 1.0) * c1, n * u)
    return (t, a)


def _pitman_equations(
    table: FrequencyTable,
    digamma: Callable[[float], float],
    trigamma: Callable[[float], float],
    pair: PairFunction | None = None,
) -> Callable[[Vector], tuple[Vector, Matrix]]:
    """The Pitman likelihood equations and their Jacobian in closed form (ARX ``ModelPitman``).

    ARX's loop over the class sizes ``j >= 2``,
    ``d4 += c_j (psi'(1 - a) - psi'(j - a))`` and
    ``o4 += c_j (psi(j - a) - psi(1 - a))``, runs term by term with the
    scalar ``digamma`` and ``trigamma``, or, given ``pair`` (both functions
    for an array, ``x -> (digamma(x), trigamma(x))``, e.g.
    :func:`arx_gamma_pair_array`), forms all terms at once and adds them in
    the loop's order: the same doubles, faster.
    """
    u = float(table.classes)
    n = float(table.records)
    big = [(int(s), float(c)) for s, c in zip(table.sizes, table.counts, strict=True) if s != 1]
    sizes = np.array([float(s) for s, _ in big], dtype=np.float64)
    weights = np.array([c for _, c in big], dtype=np.float64)

    def size_sums(a: float, v6: float, v7: float) -> tuple[float, float]:
        """``(d4, o4)``: the loop over the class sizes, term by term or with ``pair``."""
        d4 = 0.0
        o4 = 0.0
        if pair is None:
            for size, count in big:
                d4 += count * (v7 - trigamma(size - a))
                o4 += count * (digamma(size - a) - v6)
            return d4, o4
        dig, tri = pair(sizes - a)
        with np.errstate(all="ignore"):
            d_terms = weights * (v7 - tri)
            o_terms = weights * (dig - v6)
        return _sum_from(d4, d_terms), _sum_from(o4, o_terms)

    def evaluate(point: Vector) -> tuple[Vector, Matrix]:
        t, a = point  # Python floats: IEEE arithmetic; divisions by zero go through _div
        v0 = u - 1.0
        ta = _div(t, a)
        v1 = digamma(v0 + ta + 1.0)
        v2 = trigamma(_div(a + t + a * v0, a))
        v3 = trigamma(ta + 1.0)
        v4 = digamma(ta + 1.0)
        a2 = a * a
        d1 = _div(v3 - v2, a2)
        d5 = _div((a * v1 + t * v2) - a * v4 - t * v3, a2 * a)
        d3 = _div(
            ((a2 * v0 - t * t * v2) + t * t * v3 - 2.0 * a * t * v1) + 2.0 * a * t * v4, a2 * a2
        )
        o1 = _div(v1 - v4, a)
        o3 = _div(-t * v1 + a * v0 + t * v4, a2)
        o2 = digamma(n + t) - digamma(t + 1.0)
        d2 = trigamma(t + 1.0) - trigamma(n + t)
        v6 = digamma(1.0 - a)
        v7 = trigamma(1.0 - a)
        d4, o4 = size_sums(a, v6, v7)
        return (o1 - o2, o3 - o4), (d2 - d1, -d5, -d5, -d3 - d4)

    return evaluate


def _sum_from(start: float, values: FloatArray) -> float:
    """``start`` with ``values`` added one after the other, as ``total += value`` in a loop."""
    if not values.size:
        return start
    return float(np.add.accumulate(np.concatenate(([start], values)))[-1])


def _running_sum(values: Array) -> float:
    """``values`` added one after the other from the first, as ARX's loops add them."""
    return float(np.cumsum(values)[-1]) if values.size else 0.0


def _pitman_sums(table: FrequencyTable) -> Callable[[Vector], tuple[Vector, Matrix]]:
    """The Pitman equations and Jacobian as plain sums (ARX's ``getMasterFunctionIterative``).

    Accurate where the digamma forms cancel (e.g. ``alpha`` near 0, where
    ``theta / alpha`` is large). Vectorized over ``i`` and over the class
    sizes, but every term is formed and every sum is added in ARX's order and
    rounding (a running sum, not NumPy's pairwise one), so Newton-Raphson
    takes ARX's path.
    """
    u = table.classes
    n = table.records
    i = np.arange(1, u, dtype=np.float64)
    big = table.sizes != 1
    keys, weights = table.sizes[big], table.counts[big].astype(np.float64)
    longest = int(keys.max()) if keys.size else 1
    j = np.arange(1, longest, dtype=np.float64)
    rest = np.arange(1, n, dtype=np.float64)

    def evaluate(point: Vector) -> tuple[Vector, Matrix]:
        t, a = point
        with np.errstate(all="ignore"):
            v0 = t + i * a
            inv = 1.0 / v0
            inv2 = 1.0 / (v0 * v0)
            i_inv2 = i * inv2
            o1, o3 = _running_sum(inv), _running_sum(i * inv)
            d1, d5, d3 = _running_sum(inv2), _running_sum(i_inv2), _running_sum(i * i_inv2)
            jr = j - a
            k1 = np.concatenate([[0.0], np.cumsum(1.0 / jr)])
            k2 = np.concatenate([[0.0], np.cumsum(1.0 / (jr * jr))])
            o4 = _running_sum(weights * k1[keys - 1])
            d4 = _running_sum(weights * k2[keys - 1])
            tr = t + rest
            o2 = _running_sum(1.0 / tr)
            d2 = _running_sum(1.0 / (tr * tr))
        return (o1 - o2, o3 - o4), (d2 - d1, -d5, -d5, -d3 - d4)

    return evaluate


def _pitman_uniques(t: float, a: float, population: float) -> float:
    """``Gamma(t+1)/Gamma(t+a) * N^a`` computed both ways ARX does; the larger one in ``[0, N]``."""
    if math.isnan(a) or math.isnan(t) or a == 0.0:
        return math.nan
    from scipy import special  # imported only when a population is given

    with np.errstate(all="ignore"):
        power = float(np.power(np.float64(population), a))
        if t + 1.0 > 0.0 and t + a > 0.0:  # Commons Math's logGamma is NaN at x <= 0
            val1 = float(np.exp(special.gammaln(t + 1.0) - special.gammaln(t + a))) * power
        else:
            val1 = math.nan
        val2 = float(np.float64(special.gamma(t + 1.0)) / np.float64(special.gamma(t + a))) * power
    candidates = [v for v in (val1, val2) if not math.isnan(v) and 0.0 <= v <= population]
    return max(candidates) if candidates else math.nan


def pitman(
    table: FrequencyTable, population: float, *, iterations_per_try: int = ITERATIONS_PER_TRY
) -> float:
    """Population uniques under Pitman's model (ARX ``ModelPitman``); NaN when the solve fails."""
    start = pitman_start(table)
    exact = _pitman_sums(table)

    def theta_non_negative(point: Vector) -> bool:
        return point[0] >= 0.0

    equations = _pitman_equations(table, arx_digamma, arx_trigamma, arx_gamma_pair_array)
    result = newton_raphson(
        equations, start, theta_non_negative, iterations_per_try=iterations_per_try
    )
    if math.isnan(result[0]) or math.isnan(result[1]):
        result = newton_raphson(
            exact, start, theta_non_negative, iterations_per_try=iterations_per_try
        )
    else:
        (o1, o2), _ = exact(result)
        if math.isnan(o1) or math.isnan(o2) or abs(o1) > ACCURACY or abs(o2) > ACCURACY:
            result = newton_raphson(
                exact, start, theta_non_negative, iterations_per_try=iterations_per_try
            )
    return _pitman_uniques(result[0], result[1], population)


def hypergeometric_one(population: int, successes: Array, draws: int) -> Array:
    """``h(1; N, K, n)``: probability of exactly one success in ``n`` draws without replacement.

    ``h = (K n / N) prod_{i=0}^{K-2} (1 - (n - 1) / (N - 1 - i))``, summed in
    logarithms with ``log1p`` so that it stays exact to rounding for any ``N``.
    """
    big_n, n = float(population), float(draws)
    k = np.asarray(successes, dtype=np.int64)
    longest = int(k.max()) - 1 if k.size else 0
    with np.errstate(divide="ignore", invalid="ignore"):
        i = np.arange(max(longest, 0), dtype=np.float64)
        steps = np.log1p(-(n - 1.0) / (big_n - 1.0 - i))
        steps = np.where(big_n - 1.0 - i > n - 1.0, steps, -np.inf)
        logs = np.concatenate([[0.0], np.cumsum(steps)])
        return np.asarray(k * n / big_n * np.exp(logs[np.maximum(k - 1, 0)]))


def zayatz(table: FrequencyTable, population: float) -> float:
    """Population uniques under Zayatz's model (ARX ``ModelZayatz``)."""
    big_n = min(int(population), 2**31 - 1)
    n = min(int(table.records), 2**31 - 1)
    u = float(table.classes)
    c1 = float(table.of_size(1))
    terms = (table.counts / u) * hypergeometric_one(big_n, table.sizes, n)
    temp = float(math.fsum(float(x) for x in terms))
    p1 = float(hypergeometric_one(big_n, np.array([1]), n)[0])
    uniqueness = _div((c1 / u) * p1, temp)
    fraction = table.records / population
    return _div(c1 * uniqueness, fraction)


def _snb_classes(table: FrequencyTable, f: float) -> float:
    """ARX's estimate of the number of non-empty population classes for SNB.

    ``K = u + c_1 (v1 / v2) (v3 / v4)^2`` with, over the class sizes ``j``:
    ``v1 = sum j f^2 (1 - f^2)^(j-1) c_j``, ``v2 = sum ((1-f)^j c_j (1+f)^j - 1)``,
    ``v3 = sum (1-f)^j c_j``, ``v4 = sum j f (1-f)^(j-1) c_j`` (ARX's
    ``estimateNonEmptyEquivalenceClasses``, term by term as written there).
    """
    v1 = v2 = v3 = v4 = 0.0
    f2 = f * f
    with np.errstate(all="ignore"):
        for size, count in zip(table.sizes, table.counts, strict=True):
            j, c = float(size), float(count)
            val2 = float(np.power(1.0 - f, j)) * c
            v1 += j * f2 * float(np.power(1.0 - f2, j - 1.0)) * c
            v2 += val2 * float(np.power(1.0 + f, j)) - 1.0
            v3 += val2
            v4 += j * f * float(np.power(1.0 - f, j - 1.0)) * c
    c1 = float(table.of_size(1))
    return float(table.classes) + c1 * _div(v1, v2) * _div(v3, v4) * _div(v3, v4)


def _snb_equations(
    k: float, f: float, c1: float, c2: float
) -> Callable[[Vector], tuple[Vector, Matrix]]:
    """ARX ``ModelSNB``'s equations for ``(alpha, beta)`` and its Jacobian."""

    def evaluate(point: Vector) -> tuple[Vector, Matrix]:
        a, b = point
        with np.errstate(all="ignore"):
            pw = np.power
            d = (1.0 - f) * (1.0 - b)
            e1 = k * f * float(pw(_div(b, 1.0 - d), a)) * (_div(a * d, 1.0 - d) + 1.0) - c1
            e2 = (
                k
                * a
                * float(pw(b, a))
                * (f * f)
                * (1.0 - b)
                / 2.0
                * float(pw(1.0 - d, a + 2.0))
                * (2.0 - (1.0 - a) * d)
                - c2
            )
            v0 = (b - 1.0) * (f - 1.0)
            v1 = v0 - 1.0
            v2 = 1.0 - v0
            v3 = _div(a * v0, v1) - 1.0
            v4 = float(pw(_div(-b, v1), a))
            v6 = f * f
            v7 = float(pw(b, a))
            v8 = v7 * v6 * k
            v9 = a * v8
            v10 = 2.0 * float(pw(v2, a + 2.0))
            v11 = v1 * v1
            v13 = f * k
            v14 = f - 1.0
            v15 = a - 1.0
            v16 = b - 1.0
            v17 = v15 * v0
            v18 = v6 * k
            v19 = v17 + 2.0
            v20 = v18 * v19
            log_nb = float(np.log(_div(-b, v1)))
            x1 = -v13 * log_nb * v3 * v4 - _div(v13 * v4 * v0, v1)
            x2 = a * v13 * (_div(1.0, v1) - _div(b * v14, v11)) * v3 * float(
                pw(_div(-b, v1), v15)
            ) - v13 * v4 * (_div(a * v14, v1) - _div(a * v16 * v14 * v14, v11))
            y1 = (
                _div(v9 * float(np.log(v2)) * v19 * v16, v10)
                - _div(v9 * v16 * v16 * v14, v10)
                - _div(v7 * v20 * v16, v10)
                - _div(a * v7 * v18 * float(np.log(b)) * v19 * v16, v10)
            )
            y2 = (
                -_div(v9 * v19, v10)
                - _div(a * a * float(pw(b, v15)) * v20 * v16, v10)
                - _div(a * v7 * v18 * v17, v10)
                - _div(a * v7 * v20 * (a + 2.0) * v0, 2.0 * float(pw(v2, a + 3.0)))
            )
        return (e1, e2), (x1, x2, y1, y2)

    return evaluate


def snb(
    table: FrequencyTable, population: float, *, iterations_per_try: int = ITERATIONS_PER_TRY
) -> float:
    """Population uniques under the SNB model (ARX ``ModelSNB``): ``K * beta^alpha``."""
    f = table.records / population
    k = _snb_classes(table, f)
    a, b = newton_raphson(
        _snb_equations(k, f, float(table.of_size(1)), float(table.of_size(2))),
        (1.0, 1.0),
        iterations_per_try=iterations_per_try,
    )
    with np.errstate(all="ignore"):
        return k * float(np.power(np.float64(b), a))


def _valid(value: float) -> bool:
    """ARX's ``isValid``: neither NaN nor exactly zero."""
    return not math.isnan(value) and value != 0.0


#: the estimators ARX's population-uniqueness criterion and risk analysis offer
MODELS = ("pitman", "zayatz", "snb", "dankar")


class UniquenessEstimates:
    """The population-uniqueness estimates of one sample, computed lazily and once each.

    ARX's ``RiskModelPopulationUniqueness``: each model is fitted only when
    asked for; with no sample uniques every model gives 0. :meth:`raw`
    returns a model's estimate as the model computes it (NaN or 0 when it
    fails); :meth:`dankar` applies Dankar's decision rule.
    """

    def __init__(
        self,
        distribution: Mapping[int, int],
        population: float,
        *,
        iterations_per_try: int = ITERATIONS_PER_TRY,
    ) -> None:
        self.table = FrequencyTable.from_mapping(distribution)
        if self.table.records and population < self.table.records:
            raise AnonlabError(
                f"population_size {population:g} is smaller than the table's "
                f"{self.table.records} records: give the size of the population the table was "
                "sampled from",
                parameter="population_size",
            )
        self.population = float(population)
        self.iterations_per_try = int(iterations_per_try)
        self._values: dict[str, float] = {}

    @property
    def sample_uniques(self) -> int:
        """``c_1``: classes of size 1 in the sample."""
        return self.table.of_size(1)

    @property
    def sampling_fraction(self) -> float:
        """``f = n / N``."""
        return self.table.records / self.population

    def raw(self, model: str) -> float:
        """The estimate of ``pitman``, ``zayatz`` or ``snb`` (NaN or 0 when the model fails)."""
        if model not in self._values:
            if self.sample_uniques == 0:
                self._values[model] = 0.0
            elif model == "zayatz":
                self._values[model] = zayatz(self.table, self.population)
            elif model == "pitman":
                self._values[model] = pitman(
                    self.table, self.population, iterations_per_try=self.iterations_per_try
                )
            elif model == "snb":
                self._values[model] = snb(
                    self.table, self.population, iterations_per_try=self.iterations_per_try
                )
            else:
                raise ValueError(f"unknown population-uniqueness model {model!r}")
        return self._values[model]

    def value(self, model: str) -> float:
        """ARX's ``getNumUniqueTuples``: the estimate, 0 when the model failed."""
        if model == "dankar":
            return self.dankar()[0]
        estimate = self.raw(model)
        return estimate if _valid(estimate) else 0.0

    def dankar(self, fallback: bool = True) -> tuple[float, str]:
        """Dankar et al.'s rule (ARX ``getNumUniqueTuplesDankar(useZayatzAsFallback)``).

        ``f <= 0.1``: Pitman, or Zayatz if Pitman fails and ``fallback``;
        otherwise the smaller of Zayatz and SNB (Zayatz if SNB fails). Returns
        ``(uniques, model)``; 0 when the chosen estimate failed. Without
        ``fallback`` a failed Pitman leaves ARX's estimate at its initial
        ``-1`` (as ARX's privacy model asks for it), returned here as
        ``(-1.0, "none")``.
        """
        if self.sample_uniques == 0:
            return 0.0, "none"
        if self.sampling_fraction <= 0.1:
            if _valid(self.raw("pitman")):
                chosen = "pitman"
            elif fallback:
                chosen = "zayatz"
            else:
                return -1.0, "none"
        elif _valid(self.raw("snb")):
            chosen = "zayatz" if self.raw("zayatz") < self.raw("snb") else "snb"
        else:
            chosen = "zayatz"
        estimate = self.raw(chosen)
        return (estimate if _valid(estimate) else 0.0), chosen


def population_uniques(
    distribution: Mapping[int, int], population: float
) -> dict[str, float | str | None]:
    """Estimated numbers of population uniques by each model, and the model Dankar's rule picks.

    Returns ``{"pitman", "zayatz", "snb", "dankar": count or None, "dankar_model": name}``.
    ``population`` must be at least the sample's number of records.
    """
    estimates = UniquenessEstimates(distribution, population)
    if estimates.sample_uniques == 0:
        return {"pitman": 0.0, "zayatz": 0.0, "snb": 0.0, "dankar": 0.0, "dankar_model": "none"}
    out: dict[str, float | str | None] = {}
    for name in ("pitman", "zayatz", "snb"):
        value = estimates.raw(name)
        out[name] = value if _valid(value) else None
    _, chosen = estimates.dankar()
    out["dankar"] = out[chosen]
    out["dankar_model"] = chosen
    return out
