"""The array versions of ARX's digamma, trigamma and StrictMath.log against the scalar ones.

The Pitman solve forms its class-size terms with :func:`arx_gamma_pair_array`;
Newton-Raphson stops where a last bit can decide, so every element must be the
scalar function's double exactly (compared as bit patterns, any NaN equal to
any NaN), and the equations must give the scalar loop's doubles at every point
the solver visits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray

from anonlab.risk import population as pop
from anonlab.risk import strictmath

Floats = NDArray[np.float64]
RNG_SEED = 20261124


def same_doubles(got: NDArray[np.float64], expected: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Element-wise: the same bit pattern, or both NaN."""
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    same = got.view(np.int64) == expected.view(np.int64)
    return np.asarray(same | (np.isnan(got) & np.isnan(expected)))


def assert_same_doubles(got: Floats, expected: Floats, args: Floats) -> None:
    same = same_doubles(got, expected)
    assert same.all(), (
        f"{np.count_nonzero(~same)} differ, e.g. f({args[~same][:3]!r}) = "
        f"{got[~same][:3]!r}, scalar {expected[~same][:3]!r}"
    )


def scalar_map(function: Callable[[float], float], values: Floats) -> Floats:
    return np.array([function(float(v)) for v in values], dtype=np.float64)


def around(points: list[float], ulps: int = 3) -> Floats:
    """Each point and its ``ulps`` neighbours on either side."""
    out: list[float] = []
    for p in points:
        below = above = p
        out.append(p)
        for _ in range(ulps):
            below, above = math.nextafter(below, -math.inf), math.nextafter(above, math.inf)
            out.extend((below, above))
    return np.array(out)


SPECIAL = np.array(
    [
        0.0,
        -0.0,
        math.inf,
        -math.inf,
        math.nan,
        5e-324,
        1e-320,
        2.2250738585072014e-308,
        1e-170,
        1e-160,
        1e200,
        1e300,
        1.7976931348623157e308,
    ]
)


def gamma_arguments() -> Floats:
    """Arguments for digamma and trigamma: every branch and every boundary of the scalar code."""
    rng = np.random.default_rng(RNG_SEED)
    integers = np.arange(1, 3001, dtype=np.float64)
    boundaries = [1e-6, 1e-4, 8.0, 12.0, 1.0, 2.0, 16.0, 32.0]
    boundaries += [12.0 - k for k in range(1, 12)] + [8.0 - k for k in range(1, 8)]
    return np.concatenate(
        [
            np.exp(rng.uniform(math.log(1e-8), math.log(1e7), 20000)),  # many magnitudes
            integers,
            integers - rng.uniform(0.0, 1.0, integers.size),  # class sizes minus alpha
            integers[:200] - rng.uniform(0.0, 1e-9, 200),
            around(boundaries, 4),
            rng.uniform(1e-6, 1e-4, 500),
            rng.uniform(0.0, 1e-6, 500),
            np.ldexp(rng.uniform(0.5, 1.0, 300), rng.integers(-1074, -1021, 300)),  # subnormals
            SPECIAL,
            -np.exp(rng.uniform(math.log(1e-8), math.log(1e3), 300)),  # reflection
            -np.arange(0.0, 20.0),
            -np.arange(0.0, 20.0) - 0.5,
        ]
    )


ARGUMENTS = gamma_arguments()


@pytest.mark.parametrize(
    ("array", "scalar"),
    [
        (pop.arx_digamma_array, pop.arx_digamma),
        (pop.arx_trigamma_array, pop.arx_trigamma),
    ],
    ids=["digamma", "trigamma"],
)
def test_gamma_arrays_equal_the_scalar_functions_bit_for_bit(
    array: Callable[[Floats], Floats], scalar: Callable[[float], float]
) -> None:
    assert_same_doubles(array(ARGUMENTS), scalar_map(scalar, ARGUMENTS), ARGUMENTS)


def test_gamma_arrays_keep_shape_and_take_any_order() -> None:
    values = np.random.default_rng(RNG_SEED + 1).permutation(ARGUMENTS[:3000])
    digamma = pop.arx_digamma_array(values)
    assert digamma.shape == values.shape
    assert_same_doubles(digamma, scalar_map(pop.arx_digamma, values), values)
    assert pop.arx_trigamma_array(np.array([])).shape == (0,)


@pytest.mark.parametrize(
    "values",
    [
        ARGUMENTS,
        np.arange(2, 200, dtype=np.float64) - 0.37,  # what the Pitman solve passes: regular
        np.exp(np.random.default_rng(RNG_SEED + 2).uniform(math.log(2e-4), math.log(1e6), 2000)),
        np.array([13.5]),
        np.array([]),
    ],
    ids=["all", "sizes", "regular", "one", "empty"],
)
def test_the_pair_is_both_functions(values: Floats) -> None:
    digamma, trigamma = pop.arx_gamma_pair_array(values)
    assert_same_doubles(digamma, scalar_map(pop.arx_digamma, values), values)
    assert_same_doubles(trigamma, scalar_map(pop.arx_trigamma, values), values)


def test_trigamma_of_a_tiny_argument_is_infinite_as_in_java() -> None:
    # 1 / (x * x) with x * x = 0: Java gives +inf, not an error
    assert pop.arx_trigamma(1e-170) == math.inf
    assert pop.arx_trigamma_array(np.array([1e-170]))[0] == math.inf


# ---------------------------------------------------------------------------
# log


def log_arguments() -> Floats:
    rng = np.random.default_rng(RNG_SEED + 3)
    half_root = math.sqrt(2.0) / 2.0
    return np.concatenate(
        [
            np.exp(rng.uniform(-744.0, 709.0, 20000)),
            rng.uniform(0.5, 1.5, 5000),  # k = 0 and both sides of the normalization
            1.0 + rng.uniform(-3e-6, 3e-6, 2000),  # |f| < 2^-20
            np.ldexp(1.0 + rng.uniform(-3e-6, 3e-6, 2000), rng.integers(-1000, 1000, 2000)),
            np.ldexp(1.0, np.arange(-1074, 1024)),  # every power of two
            np.ldexp(rng.uniform(0.0, 1.0, 500), -1022),  # subnormals
            around([half_root, math.sqrt(2.0), 2 * half_root, 1.0], 50),
            np.ldexp(around([half_root, math.sqrt(2.0)], 5), 40),
            around([1.2 + k / 64 for k in range(20)], 2),  # the two polynomial branches
            SPECIAL,
            np.array([-1.0, -5e-324, -math.pi]),
        ]
    )


def test_log_array_equals_strict_log_bit_for_bit() -> None:
    values = log_arguments()
    assert_same_doubles(strictmath.log_array(values), scalar_map(strictmath.log, values), values)


def test_log_array_special_values() -> None:
    got = strictmath.log_array(np.array([0.0, -0.0, math.inf, -1.0, math.nan, 1.0]))
    assert got[0] == got[1] == -math.inf and got[2] == math.inf and got[5] == 0.0
    assert np.isnan(got[3]) and np.isnan(got[4])


# ---------------------------------------------------------------------------
# argument reduction (reflection of negative arguments uses sin and tan)


def reduce_by_fractions(x: float) -> tuple[int, float, float]:
    """``x = n pi/2 + y0 + y1`` with rationals: the definition, independent of the integer code."""
    bits = 1400
    half_pi = Fraction(strictmath._pi_scaled(bits), 1 << (bits + 1))
    exact = Fraction(x)
    n = math.floor(exact / half_pi + Fraction(1, 2))
    rest = exact - n * half_pi
    y0 = float(rest)
    return n, y0, float(rest - Fraction(y0))


def test_large_argument_reduction_is_exact() -> None:
    rng = np.random.default_rng(RNG_SEED + 4)
    magnitudes = np.ldexp(rng.uniform(1.0, 2.0, 400), rng.integers(20, 1023, 400))
    signs = rng.choice([-1.0, 1.0], 400)
    for x in [*(magnitudes * signs).tolist(), 1.7976931348623157e308, -(2.0**1023), 1e22]:
        assert strictmath._reduce_large(x) == reduce_by_fractions(x), x


# ---------------------------------------------------------------------------
# the Pitman equations


def running_total(values: list[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    return total


def test_sum_from_adds_left_to_right() -> None:
    values = np.random.default_rng(RNG_SEED + 5).standard_normal(500) * np.logspace(-8, 8, 500)
    assert pop._sum_from(0.0, values) == running_total(values.tolist())
    assert pop._sum_from(0.0, np.array([])) == 0.0
    assert math.copysign(1.0, pop._sum_from(0.0, np.array([-0.0]))) == 1.0  # 0.0 + -0.0


def adult_tables(data_dir: Path) -> list[pop.FrequencyTable]:
    adult = pd.read_csv(data_dir / "adult" / "adult.csv", sep=";", dtype=str, keep_default_na=False)
    tables = []
    for qi in (
        [
            "sex",
            "age",
            "race",
            "marital-status",
            "education",
            "native-country",
            "workclass",
            "occupation",
        ],
        ["age", "education", "sex"],
        ["age", "race"],
    ):
        sizes = adult.groupby(qi).size().to_numpy()
        values, counts = np.unique(sizes, return_counts=True)
        tables.append(
            pop.FrequencyTable.from_mapping(
                dict(zip(values.tolist(), counts.tolist(), strict=True))
            )
        )
    return tables


SMALL_TABLES = [
    {1: 50, 2: 20, 3: 10, 4: 5, 5: 2},
    {1: 100, 2: 40, 3: 20, 5: 10, 10: 3},
    {1: 3, 2: 4, 4: 2},
    {1: 200, 2: 30, 3: 10},
    {1: 59, 2: 10, 3: 13, 4: 2, 5: 7},
    {1: 7, **{s: 1 + s % 3 for s in range(2, 400, 3)}},  # many sizes, below and above 12
]


def solver_points(table: pop.FrequencyTable) -> list[pop.Vector]:
    """Every point the scalar Pitman solve visits, its start, ARX's start values, and
    points where ``size - alpha`` is 0, negative, tiny or near the boundaries."""
    scalar = pop._pitman_equations(table, pop.arx_digamma, pop.arx_trigamma)
    visited: list[pop.Vector] = []

    def recording(point: pop.Vector) -> tuple[pop.Vector, pop.Matrix]:
        visited.append(point)
        return scalar(point)

    pop.newton_raphson(recording, pop.pitman_start(table), lambda p: p[0] >= 0.0)
    rng = np.random.default_rng(RNG_SEED + 6)
    extra = [
        (float(t), float(a))
        for t, a in zip(rng.uniform(0.0, 500.0, 30), rng.uniform(-3.0, 14.0, 30), strict=True)
    ]
    edges = [
        (10.0, a)
        for a in (
            2.0,
            3.0,
            1.0,
            0.0,
            -0.0,
            5.0 - 1e-7,
            2.0 - 1e-5,
            12.5,
            4.0 + 1e-9,
            math.nan,
            1e160,
            -1e160,
        )
    ]
    return [pop.pitman_start(table), *pop.START_VALUES, *visited[:400], *extra, *edges]


def assert_equations_agree(table: pop.FrequencyTable) -> None:
    scalar = pop._pitman_equations(table, pop.arx_digamma, pop.arx_trigamma)
    vector = pop._pitman_equations(
        table, pop.arx_digamma, pop.arx_trigamma, pop.arx_gamma_pair_array
    )
    for point in solver_points(table):
        (f1, f2), jacobian = scalar(point)
        (g1, g2), vector_jacobian = vector(point)
        expected = np.array([f1, f2, *jacobian])
        got = np.array([g1, g2, *vector_jacobian])
        assert same_doubles(got, expected).all(), (point, got, expected)


@pytest.mark.parametrize("distribution", SMALL_TABLES)
def test_vector_equations_equal_the_scalar_loop(distribution: dict[int, int]) -> None:
    assert_equations_agree(pop.FrequencyTable.from_mapping(distribution))


def test_vector_equations_equal_the_scalar_loop_on_adult(data_dir: Path) -> None:
    for table in adult_tables(data_dir):
        assert (table.sizes > 12).sum() > 20  # many terms: a changed summation order shows
        assert_equations_agree(table)


def scalar_pitman(table: pop.FrequencyTable, population: float) -> float:
    """:func:`pop.pitman` with the scalar loop throughout (its code, the equations scalar)."""
    start = pop.pitman_start(table)
    exact = pop._pitman_sums(table)

    def theta_non_negative(point: pop.Vector) -> bool:
        return point[0] >= 0.0

    result = pop.newton_raphson(
        pop._pitman_equations(table, pop.arx_digamma, pop.arx_trigamma), start, theta_non_negative
    )
    if math.isnan(result[0]) or math.isnan(result[1]):
        retry = True
    else:
        (o1, o2), _ = exact(result)
        retry = math.isnan(o1) or math.isnan(o2) or max(abs(o1), abs(o2)) > pop.ACCURACY
    if retry:
        result = pop.newton_raphson(exact, start, theta_non_negative)
    return pop._pitman_uniques(result[0], result[1], population)


def test_pitman_estimates_are_unchanged(data_dir: Path) -> None:
    tables = [pop.FrequencyTable.from_mapping(d) for d in SMALL_TABLES] + adult_tables(data_dir)
    for table in tables:
        for population in (5000.0, 1e5, 10.0 * table.records):
            if population < table.records:
                continue
            expected, got = scalar_pitman(table, population), pop.pitman(table, population)
            assert same_doubles(np.array([got]), np.array([expected])).all(), (got, expected)
