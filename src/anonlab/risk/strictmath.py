"""Java's ``StrictMath.log``, ``sin`` and ``tan``: the fdlibm 5.3 algorithms, bit for bit.

ARX's digamma and trigamma (``org.deidentifier.arx.risk.Gamma``, the Pitman
model's equations) call ``StrictMath``, which Java specifies as fdlibm's
results. The C library's functions differ from them in the last bit for a few
per cent of arguments, and in Newton-Raphson such a bit can change where the
iteration stops (the root is accepted anywhere within ``1e-6``). The
functions here follow fdlibm's ``e_log.c``, ``k_sin.c``, ``k_cos.c``,
``k_tan.c``, ``s_sin.c``, ``s_tan.c`` and ``e_rem_pio2.c`` step by step;
arguments above ``2^19 pi/2`` are reduced exactly with integer arithmetic
(fdlibm's ``__kernel_rem_pio2`` computes the same remainder to more than
the 106 bits kept).
"""

from __future__ import annotations

import math
import struct
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

_DOUBLE = struct.Struct("<d")
_WORDS = struct.Struct("<Ii")  # (low word; high word, signed) of a little-endian double


def _high(x: float) -> int:
    """fdlibm's ``__HI(x)``: the upper 32 bits as a signed int."""
    return int(_WORDS.unpack(_DOUBLE.pack(x))[1])


def _low(x: float) -> int:
    """fdlibm's ``__LO(x)``: the lower 32 bits."""
    return int(_WORDS.unpack(_DOUBLE.pack(x))[0])


def _from_words(high: int, low: int) -> float:
    """The double with these upper (signed) and lower 32 bits."""
    hi = ((high + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)  # as a signed 32-bit word
    return float(_DOUBLE.unpack(_WORDS.pack(low & 0xFFFFFFFF, hi))[0])


def _below(high: int) -> float:
    """The smallest double whose upper word exceeds ``high``: ``|x| <= that word``
    is ``|x| < _below(word)``, a comparison of floats instead of bit patterns."""
    return _from_words(high + 1, 0)


_PIO4_WORD = _below(0x3FE921FB)  # |x| ~<= pi/4
_THREE_PIO4_WORD = _from_words(0x4002D97C, 0)  # |x| < 3 pi/4
_MEDIUM_WORD = _below(0x413921FB)  # |x| ~<= 2^19 pi/2


# ---------------------------------------------------------------------------
# log

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LG = (
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
)


def log(x: float) -> float:
    """``StrictMath.log``: ``x = 2^k (1 + f)``, ``sqrt(2)/2 < 1 + f < sqrt(2)``,
    ``log(1 + f)`` from ``s = f / (2 + f)`` and a polynomial in ``s``.

    fdlibm reads ``k`` and the top 20 bits of the mantissa (``hx``) from the
    bit pattern; :func:`math.frexp` gives the same numbers exactly (also for
    subnormal ``x``), which is faster in Python.
    """
    if not x > 0.0:
        if x == 0.0:
            return -math.inf
        return math.nan if math.isnan(x) or x < 0.0 else x
    if x == math.inf:
        return x
    mantissa, exponent = math.frexp(x)  # x = mantissa 2^exponent, 0.5 <= mantissa < 1
    m1 = mantissa * 2.0  # in [1, 2), exact
    k = exponent - 1
    hx = int((m1 - 1.0) * 1048576.0)  # the top 20 bits of the mantissa
    if hx >= 0x6A09C:  # fdlibm: (hx + 0x95f64) & 0x100000, normalize to [sqrt(2)/2, 1)
        m1 *= 0.5
        k += 1
    f = m1 - 1.0
    dk = float(k)
    if (0x000FFFFF & (2 + hx)) < 3:  # |f| < 2^-20
        if f == 0.0:
            return 0.0 if k == 0 else dk * _LN2_HI + dk * _LN2_LO
        r = f * f * (0.5 - 0.33333333333333333 * f)
        return f - r if k == 0 else dk * _LN2_HI - ((r - dk * _LN2_LO) - f)
    s = f / (2.0 + f)
    z = s * s
    i = hx - 0x6147A
    w = z * z
    j = 0x6B851 - hx
    t1 = w * (_LG[1] + w * (_LG[3] + w * _LG[5]))
    t2 = z * (_LG[0] + w * (_LG[2] + w * (_LG[4] + w * _LG[6])))
    i |= j
    r = t2 + t1
    if i > 0:
        hfsq = 0.5 * f * f
        if k == 0:
            return f - (hfsq - s * (hfsq + r))
        return dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO)) - f)
    if k == 0:
        return f - s * (f - r)
    return dk * _LN2_HI - ((s * (f - r) - dk * _LN2_LO) - f)


# Constants of the array version as 0-d arrays, which NumPy combines with arrays
# faster than Python floats (the arithmetic is the same).
_ZERO, _ONE, _TWO, _HALF, _HX_SCALE, _INF = (
    np.array(v) for v in (0.0, 1.0, 2.0, 0.5, 1048576.0, math.inf)
)
_LN2_HI_0D, _LN2_LO_0D = np.array(_LN2_HI), np.array(_LN2_LO)
_LG0, _LG1, _LG2, _LG3, _LG4, _LG5, _LG6 = (np.array(v) for v in _LG)
_HX_NORMALIZE, _HX_WIDE_LOW, _HX_WIDE_HIGH, _HX_MASK, _HX_ZERO, _HX_TINY = (
    np.array(v, dtype=np.int64) for v in (0x6A09C, 0x6147A, 0x6B851, 0x000FFFFF, 0, 3)
)


def _log_regular(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`log` of every element of ``x``, all positive and finite, with its IEEE steps.

    Every element takes the scalar function's operations in the same order
    (NumPy's ``+ - * /`` round correctly and never fuse), its branches chosen
    by masks on the same quantities; :func:`numpy.frexp` splits as
    :func:`math.frexp` does. Where the scalar code branches, both sides are
    formed and each element keeps its own.
    """
    mantissa, exponent = np.frexp(x)
    m1 = mantissa * _TWO
    hx = ((m1 - _ONE) * _HX_SCALE).astype(np.int64)  # truncation, as int() of a value >= 0
    high = hx >= _HX_NORMALIZE
    np.multiply(m1, _HALF, out=m1, where=high)
    dk = exponent.astype(np.float64) - _ONE + high  # float(k), k = exponent - 1 (+ 1 if high)
    f = m1 - _ONE
    s = f / (_TWO + f)
    z = s * s
    w = z * z
    t1 = w * (_LG1 + w * (_LG3 + w * _LG5))
    t2 = z * (_LG0 + w * (_LG2 + w * (_LG4 + w * _LG6)))
    r = t2 + t1
    hfsq = _HALF * f * f
    hi, lo = dk * _LN2_HI_0D, dk * _LN2_LO_0D
    wide = ((hx - _HX_WIDE_LOW) | (_HX_WIDE_HIGH - hx)) > _HX_ZERO
    out: NDArray[np.float64] = hi - ((s * (f - r) - lo) - f)
    np.copyto(out, hi - ((hfsq - (s * (hfsq + r) + lo)) - f), where=wide)
    if np.count_nonzero(dk) < dk.size:  # k == 0: the forms without k log 2
        unit = dk == 0.0
        fu, su, ru, hu = f[unit], s[unit], r[unit], hfsq[unit]
        out[unit] = np.where(wide[unit], fu - (hu - su * (hu + ru)), fu - su * (fu - ru))
    tiny = ((hx + 2) & _HX_MASK) < _HX_TINY  # |f| < 2^-20
    if np.count_nonzero(tiny):
        out[tiny] = _log_tiny(f[tiny], dk[tiny])
    return out


def _log_tiny(f: NDArray[np.float64], dk: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`log`'s branch for ``|f| < 2^-20``: ``f - f^2 (1/2 - f/3)`` plus ``k log 2``."""
    r = f * f * (0.5 - 0.33333333333333333 * f)
    exact = np.where(dk == 0.0, 0.0, dk * _LN2_HI + dk * _LN2_LO)
    near = np.where(dk == 0.0, f - r, dk * _LN2_HI - ((r - dk * _LN2_LO) - f))
    result: NDArray[np.float64] = np.where(f == 0.0, exact, near)
    return result


def log_array(x: NDArray[Any]) -> NDArray[np.float64]:
    """:func:`log` element by element, each result bit for bit the scalar function's.

    ``log(0) = -inf``, ``log(inf) = inf``, NaN for NaN and negative arguments.
    """
    values = np.asarray(x, dtype=np.float64)
    regular = (values > _ZERO) & (values < _INF)
    if np.count_nonzero(regular) == values.size:  # positive and finite: no FP exceptions
        return _log_regular(values)
    with np.errstate(all="ignore"):
        out = np.where(values == 0.0, -math.inf, np.where(values == math.inf, math.inf, math.nan))
        out[regular] = _log_regular(values[regular])
    return out


# ---------------------------------------------------------------------------
# argument reduction

_INVPIO2 = 6.36619772367581382433e-01
_PIO2_1 = 1.57079632673412561417e00
_PIO2_1T = 6.07710050650619224932e-11
_PIO2_2 = 6.07710050630396597660e-11
_PIO2_2T = 2.02226624879595063154e-21
_PIO2_3 = 2.02226624871116645580e-21
_PIO2_3T = 8.47842766036889956997e-32
_NPIO2_HW = (
    0x3FF921FB,
    0x400921FB,
    0x4012D97C,
    0x401921FB,
    0x401F6A7A,
    0x4022D97C,
    0x4025FDBB,
    0x402921FB,
    0x402C463A,
    0x402F6A7A,
    0x4031475C,
    0x4032D97C,
    0x40346B9C,
    0x4035FDBB,
    0x40378FDB,
    0x403921FB,
    0x403AB41B,
    0x403C463A,
    0x403DD85A,
    0x403F6A7A,
    0x40407E4C,
    0x4041475C,
    0x4042106C,
    0x4042D97C,
    0x4043A28C,
    0x40446B9C,
    0x404534AC,
    0x4045FDBB,
    0x4046C6CB,
    0x40478FDB,
    0x404858EB,
    0x404921FB,
)


@lru_cache(maxsize=1)
def _pi_scaled(bits: int = 1400) -> int:
    """``floor(pi * 2^bits)`` by Machin's formula in integers."""
    guard = bits + 20
    one = 1 << guard

    def arctan_inverse(n: int) -> int:
        total, term, k, sign = 0, one // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k += 2
            sign = -sign
        return total

    return (4 * (4 * arctan_inverse(5) - arctan_inverse(239))) >> 20


def _reduce_large(x: float) -> tuple[int, float, float]:
    """``x = n pi/2 + (y0 + y1)`` for a huge ``|x|``, the remainder as a rounded double-double.

    Exact rational arithmetic on integers: with ``x = a / b`` and
    ``pi/2 = P / D`` (``D = 2^1401``), ``n = floor(x / (pi/2) + 1/2)`` is
    ``(2 a D + b P) // (2 b P)``, the remainder ``(a D - n P b) / (b D)``; Python
    divides integers with correct rounding, as ``float`` of a fraction does.
    """
    bits = 1400
    scaled = _pi_scaled(bits)
    unit = 1 << (bits + 1)  # pi/2 = scaled / unit
    a, b = x.as_integer_ratio()  # b is a power of two
    n = (2 * a * unit + b * scaled) // (2 * b * scaled)
    rest, below = a * unit - n * scaled * b, b * unit  # the remainder rest / below
    y0 = rest / below
    p, q = y0.as_integer_ratio()  # q is a power of two, as is below
    common = max(below, q)
    y1 = (rest * (common // below) - p * (common // q)) / common
    return n, y0, y1


def rem_pio2(x: float) -> tuple[int, float, float]:
    """fdlibm's ``__ieee754_rem_pio2``: ``(n, y0, y1)`` with ``x = n pi/2 + y0 + y1``."""
    hx = _high(x)
    ix = hx & 0x7FFFFFFF
    if ix <= 0x3FE921FB:
        return 0, x, 0.0
    if ix < 0x4002D97C:  # |x| < 3 pi/4
        if hx > 0:
            z = x - _PIO2_1
            if ix != 0x3FF921FB:
                y0 = z - _PIO2_1T
                return 1, y0, (z - y0) - _PIO2_1T
            z -= _PIO2_2
            y0 = z - _PIO2_2T
            return 1, y0, (z - y0) - _PIO2_2T
        z = x + _PIO2_1
        if ix != 0x3FF921FB:
            y0 = z + _PIO2_1T
            return -1, y0, (z - y0) + _PIO2_1T
        z += _PIO2_2
        y0 = z + _PIO2_2T
        return -1, y0, (z - y0) + _PIO2_2T
    if ix <= 0x413921FB:  # |x| <= 2^19 pi/2
        t = abs(x)
        n = int(t * _INVPIO2 + 0.5)
        fn = float(n)
        r = t - fn * _PIO2_1
        w = fn * _PIO2_1T
        if n < 32 and ix != _NPIO2_HW[n - 1]:
            y0 = r - w
        else:
            j = ix >> 20
            y0 = r - w
            i = j - ((_high(y0) >> 20) & 0x7FF)
            if i > 16:
                t = r
                w = fn * _PIO2_2
                r = t - w
                w = fn * _PIO2_2T - ((t - r) - w)
                y0 = r - w
                i = j - ((_high(y0) >> 20) & 0x7FF)
                if i > 49:
                    t = r
                    w = fn * _PIO2_3
                    r = t - w
                    w = fn * _PIO2_3T - ((t - r) - w)
                    y0 = r - w
        y1 = (r - y0) - w
        if hx < 0:
            return -n, -y0, -y1
        return n, y0, y1
    return _reduce_large(x)


# ---------------------------------------------------------------------------
# kernels

_S = (
    -1.66666666666666324348e-01,
    8.33333333332248946124e-03,
    -1.98412698298579493134e-04,
    2.75573137070700676789e-06,
    -2.50507602534068634195e-08,
    1.58969099521155010221e-10,
)
_C = (
    4.16666666666666019037e-02,
    -1.38888888888741095749e-03,
    2.48015872894767294178e-05,
    -2.75573143513906633035e-07,
    2.08757232129817482790e-09,
    -1.13596475577881948265e-11,
)
_T = (
    3.33333333333334091986e-01,
    1.33333333333201242699e-01,
    5.39682539762260521377e-02,
    2.18694882948595424599e-02,
    8.86323982359930005737e-03,
    3.59207910759131235356e-03,
    1.45620945432529025516e-03,
    5.88041240820264096874e-04,
    2.46463134818469906812e-04,
    7.81794442939557092300e-05,
    7.14072491382608190305e-05,
    -1.85586374855275456654e-05,
    2.59073051863633712884e-05,
)
_PIO4 = 7.85398163397448278999e-01
_PIO4LO = 3.06161699786838301793e-17


def _kernel_sin(x: float, y: float, iy: int) -> float:
    ix = _high(x) & 0x7FFFFFFF
    if ix < 0x3E400000 and int(x) == 0:
        return x
    z = x * x
    v = z * x
    r = _S[1] + z * (_S[2] + z * (_S[3] + z * (_S[4] + z * _S[5])))
    if iy == 0:
        return x + v * (_S[0] + z * r)
    return x - ((z * (0.5 * y - v * r) - y) - v * _S[0])


def _kernel_cos(x: float, y: float) -> float:
    ix = _high(x) & 0x7FFFFFFF
    if ix < 0x3E400000 and int(x) == 0:
        return 1.0
    z = x * x
    r = z * (_C[0] + z * (_C[1] + z * (_C[2] + z * (_C[3] + z * (_C[4] + z * _C[5])))))
    if ix < 0x3FD33333:
        return 1.0 - (0.5 * z - (z * r - x * y))
    qx = 0.28125 if ix > 0x3FE90000 else _from_words(ix - 0x00200000, 0)
    hz = 0.5 * z - qx
    a = 1.0 - qx
    return a - (hz - (z * r - x * y))


def _kernel_tan(x: float, y: float, iy: int) -> float:
    hx = _high(x)
    ix = hx & 0x7FFFFFFF
    if ix < 0x3E300000 and int(x) == 0:  # |x| < 2^-28
        if ((ix | _low(x)) | (iy + 1)) == 0:
            return 1.0 / abs(x)
        if iy == 1:
            return x
        w = x + y
        z = _from_words(_high(w), 0)
        v = y - (z - x)
        a = -1.0 / w
        t = _from_words(_high(a), 0)
        s = 1.0 + t * z
        return t + a * (s + t * v)
    if ix >= 0x3FE59428:  # |x| >= 0.6744
        if hx < 0:
            x = -x
            y = -y
        z = _PIO4 - x
        w = _PIO4LO - y
        x = z + w
        y = 0.0
    z = x * x
    w = z * z
    r = _T[1] + w * (_T[3] + w * (_T[5] + w * (_T[7] + w * (_T[9] + w * _T[11]))))
    v = z * (_T[2] + w * (_T[4] + w * (_T[6] + w * (_T[8] + w * (_T[10] + w * _T[12])))))
    s = z * x
    r = y + z * (s * (r + v) + y)
    r += _T[0] * s
    w = x + r
    if ix >= 0x3FE59428:
        v = float(iy)
        return float(1 - ((hx >> 30) & 2)) * (v - 2.0 * (x - (w * w / (w + v) - r)))
    if iy == 1:
        return w
    z = _from_words(_high(w), 0)
    v = r - (z - x)
    a = -1.0 / w
    t = _from_words(_high(a), 0)
    s = 1.0 + t * z
    return t + a * (s + t * v)


def sin(x: float) -> float:
    """``StrictMath.sin``."""
    if abs(x) < _PIO4_WORD:
        return _kernel_sin(x, 0.0, 0)
    if not abs(x) < math.inf:
        return x - x
    n, y0, y1 = rem_pio2(x)
    quadrant = n & 3
    if quadrant == 0:
        return _kernel_sin(y0, y1, 1)
    if quadrant == 1:
        return _kernel_cos(y0, y1)
    if quadrant == 2:
        return -_kernel_sin(y0, y1, 1)
    return -_kernel_cos(y0, y1)


def tan(x: float) -> float:
    """``StrictMath.tan``."""
    if abs(x) < _PIO4_WORD:
        return _kernel_tan(x, 0.0, 1)
    if not abs(x) < math.inf:
        return x - x
    n, y0, y1 = rem_pio2(x)
    return _kernel_tan(y0, y1, 1 - ((n & 1) << 1))
